//! A single sequence's generation loop: chunked prefill, one-token decode steps, sampling,
//! and timing, over any backend.

use std::time::{Duration, Instant};

use crate::error::Result;
use crate::kv::KvCache;
use crate::model::{Glimmer, LogitsFor};
use crate::sampling::Sampler;

/// Prompt rows per forward pass during prefill (the seeds' 512-row physical batch).
pub const PREFILL_CHUNK: usize = 512;

/// Time spent and tokens processed, for the speed report.
#[derive(Debug, Clone, Copy, Default)]
pub struct GenStats {
    pub prompt_tokens: usize,
    pub prompt_time: Duration,
    pub generated_tokens: usize,
    pub generation_time: Duration,
}

impl GenStats {
    pub fn prompt_tps(&self) -> f64 {
        self.prompt_tokens as f64 / self.prompt_time.as_secs_f64().max(1e-9)
    }

    pub fn generation_tps(&self) -> f64 {
        self.generated_tokens as f64 / self.generation_time.as_secs_f64().max(1e-9)
    }
}

/// A sequence being decoded on some device: feeds tokens at its next positions.
pub trait Sequence {
    /// Runs `tokens` and returns the logits of the last one (after scale and softcap).
    fn feed(&mut self, tokens: &[u32]) -> Result<Vec<f32>>;
    /// Positions processed so far.
    fn len(&self) -> usize;
    /// Most positions it can hold.
    fn capacity(&self) -> usize;
    /// Back to an empty sequence.
    fn reset(&mut self) -> Result<()>;
    /// Bytes its KV cache holds (allocated, not only the used rows).
    fn kv_bytes(&self) -> usize;
    /// Starts a one-token step at the next position without waiting for it, where the
    /// sequence can (a GPU session: its graph launched, the logits copied back behind it), so
    /// the caller can start other sequences' steps before `finish_step` collects this one's
    /// logits. `Ok(false)`: nothing started, `feed` runs it.
    fn start_step(&mut self, _token: u32) -> Result<bool> {
        Ok(false)
    }
    /// The logits of the step `start_step` started.
    fn finish_step(&mut self) -> Result<Vec<f32>> {
        Err(crate::error::Error::Invalid(
            "finish_step without a started step".into(),
        ))
    }
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A sequence on a host backend (`cpu`, `cpu-ref`): the model graph over a [`KvCache`],
/// prompts in chunks of [`PREFILL_CHUNK`].
pub struct HostSequence<'m> {
    model: &'m Glimmer,
    pub kv: KvCache,
}

impl<'m> HostSequence<'m> {
    pub fn new(model: &'m Glimmer, max_positions: usize) -> HostSequence<'m> {
        HostSequence {
            kv: model.new_cache(max_positions, 0),
            model,
        }
    }
}

impl Sequence for HostSequence<'_> {
    fn feed(&mut self, tokens: &[u32]) -> Result<Vec<f32>> {
        let mut logits = Vec::new();
        for chunk in tokens.chunks(PREFILL_CHUNK) {
            logits = self.model.forward(&mut self.kv, chunk, LogitsFor::Last)?;
        }
        Ok(logits)
    }

    fn len(&self) -> usize {
        self.kv.len()
    }

    fn capacity(&self) -> usize {
        self.kv.max_positions()
    }

    fn reset(&mut self) -> Result<()> {
        self.kv.clear();
        Ok(())
    }

    fn kv_bytes(&self) -> usize {
        self.kv.bytes()
    }
}

/// One sequence: where it runs, its sampler and the logits of its newest position.
pub struct Generator<'m> {
    seq: Box<dyn Sequence + 'm>,
    pub sampler: Sampler,
    /// Tokens whose K/V rows are in the cache, in order.
    pub tokens: Vec<u32>,
    logits: Vec<f32>,
    pub stats: GenStats,
}

impl<'m> Generator<'m> {
    /// A generator on the model's own (host) backend.
    pub fn new(model: &'m Glimmer, sampler: Sampler, max_positions: usize) -> Generator<'m> {
        Generator::on(Box::new(HostSequence::new(model, max_positions)), sampler)
    }

    /// A generator over any sequence (e.g. a whole-token GPU session).
    pub fn on(seq: Box<dyn Sequence + 'm>, sampler: Sampler) -> Generator<'m> {
        Generator {
            seq,
            sampler,
            tokens: Vec::new(),
            logits: Vec::new(),
            stats: GenStats::default(),
        }
    }

    /// Feeds prompt tokens in chunks of [`PREFILL_CHUNK`]; keeps the last position's logits.
    pub fn prefill(&mut self, tokens: &[u32]) -> Result<()> {
        let t0 = Instant::now();
        self.logits = self.seq.feed(tokens)?;
        self.tokens.extend_from_slice(tokens);
        self.sampler.observe(tokens);
        self.stats.prompt_tokens += tokens.len();
        self.stats.prompt_time += t0.elapsed();
        Ok(())
    }

    /// Samples the next token from the current logits and runs it through the model.
    pub fn next_token(&mut self) -> Result<u32> {
        let t0 = Instant::now();
        let token = self.sampler.sample(&self.logits)?;
        self.logits = self.seq.feed(&[token])?;
        self.tokens.push(token);
        self.stats.generated_tokens += 1;
        self.stats.generation_time += t0.elapsed();
        Ok(token)
    }

    /// Samples a token without running it (the caller stops, or feeds it later).
    pub fn sample_only(&mut self) -> Result<u32> {
        self.sampler.sample(&self.logits)
    }

    /// Logits of the newest position.
    pub fn logits(&self) -> &[f32] {
        &self.logits
    }

    /// Room left in the cache.
    pub fn remaining(&self) -> usize {
        self.seq.capacity() - self.seq.len()
    }

    /// Most positions the sequence holds.
    pub fn capacity(&self) -> usize {
        self.seq.capacity()
    }

    /// Rewinds to an empty sequence (keeps the allocations).
    pub fn reset(&mut self) -> Result<()> {
        self.seq.reset()?;
        self.tokens.clear();
        self.logits.clear();
        Ok(())
    }
}
