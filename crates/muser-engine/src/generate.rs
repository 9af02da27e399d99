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

/// One sequence: its KV cache, sampler and the logits of its newest position.
pub struct Generator<'m> {
    model: &'m Glimmer,
    pub kv: KvCache,
    pub sampler: Sampler,
    /// Tokens whose K/V rows are in the cache, in order.
    pub tokens: Vec<u32>,
    logits: Vec<f32>,
    pub stats: GenStats,
}

impl<'m> Generator<'m> {
    pub fn new(model: &'m Glimmer, sampler: Sampler, max_positions: usize) -> Generator<'m> {
        Generator {
            kv: model.new_cache(max_positions, 0),
            model,
            sampler,
            tokens: Vec::new(),
            logits: Vec::new(),
            stats: GenStats::default(),
        }
    }

    /// Feeds prompt tokens in chunks of [`PREFILL_CHUNK`]; keeps the last position's logits.
    pub fn prefill(&mut self, tokens: &[u32]) -> Result<()> {
        let t0 = Instant::now();
        for chunk in tokens.chunks(PREFILL_CHUNK) {
            self.logits = self.model.forward(&mut self.kv, chunk, LogitsFor::Last)?;
            self.tokens.extend_from_slice(chunk);
        }
        self.sampler.observe(tokens);
        self.stats.prompt_tokens += tokens.len();
        self.stats.prompt_time += t0.elapsed();
        Ok(())
    }

    /// Samples the next token from the current logits and runs it through the model.
    pub fn next_token(&mut self) -> Result<u32> {
        let t0 = Instant::now();
        let token = self.sampler.sample(&self.logits)?;
        self.logits = self
            .model
            .forward(&mut self.kv, &[token], LogitsFor::Last)?;
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
        self.kv.max_positions() - self.kv.len()
    }

    /// Rewinds to an empty sequence (keeps the allocations).
    pub fn reset(&mut self) {
        self.kv.clear();
        self.tokens.clear();
        self.logits.clear();
    }
}
