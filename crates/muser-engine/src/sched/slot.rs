//! One running sequence in the scheduler: its KV cache (host) or sequence (device), sampler and
//! progress, and what happens to the logits of its newest position (sample, report, decide
//! whether it goes on).

use std::sync::atomic::Ordering;

use super::{FinishReason, Request, SchedStats, SeqEvent, TokenLogprobs};
use crate::generate::Sequence;
use crate::kv::KvCache;
use crate::sampling::Sampler;

/// What the scheduler reads of a slot's cache: a host [`KvCache`] (batched runner) or a
/// [`Sequence`] (one-by-one runner: the GPU sessions).
pub(super) trait SlotKv {
    /// Positions cached.
    fn positions(&self) -> usize;
    fn max_positions(&self) -> usize;
    /// Bytes held.
    fn bytes(&self) -> usize;
}

impl SlotKv for KvCache {
    fn positions(&self) -> usize {
        self.len()
    }
    fn max_positions(&self) -> usize {
        KvCache::max_positions(self)
    }
    fn bytes(&self) -> usize {
        KvCache::bytes(self)
    }
}

impl SlotKv for Box<dyn Sequence + '_> {
    fn positions(&self) -> usize {
        self.len()
    }
    fn max_positions(&self) -> usize {
        self.capacity()
    }
    fn bytes(&self) -> usize {
        self.kv_bytes()
    }
}

pub(super) struct Slot<K> {
    pub req: Request,
    pub kv: K,
    sampler: Sampler,
    /// Prompt tokens already in the cache.
    pub prefilled: usize,
    /// A sampled token waiting to be fed (the sequence is decoding).
    pub next: Option<u32>,
    generated: usize,
}

impl<K: SlotKv> Slot<K> {
    /// A slot for `req` over `kv`; the request back if its sampling parameters are invalid.
    pub fn new(kv: K, req: Request) -> Result<Slot<K>, Box<Request>> {
        let Ok(mut sampler) = Sampler::new(req.sampling.clone()) else {
            return Err(Box::new(req));
        };
        sampler.observe(&req.prompt);
        Ok(Slot {
            kv,
            sampler,
            prefilled: 0,
            next: None,
            generated: 0,
            req,
        })
    }

    pub fn is_decoding(&self) -> bool {
        self.next.is_some()
    }

    /// The rows this sequence runs in the next step, at most `budget` prompt rows.
    pub fn plan(&self, budget: usize) -> Vec<u32> {
        match self.next {
            Some(t) => vec![t],
            None => {
                let end = self.req.prompt.len().min(self.prefilled + budget);
                self.req.prompt[self.prefilled..end].to_vec()
            }
        }
    }

    /// Records that `fed` rows ran; `logits` are those of the newest position. Returns false
    /// when the sequence is over (its events are sent).
    pub fn advance(&mut self, fed: usize, logits: &[f32], stats: &SchedStats) -> bool {
        if self.next.take().is_none() {
            self.prefilled += fed;
            stats.prompt_tokens.fetch_add(fed as u64, Ordering::Relaxed);
            if self.prefilled < self.req.prompt.len() {
                return true;
            }
        }
        let sampled = match &self.req.constraint {
            Some(c) => self.sampler.sample_allowed(logits, &|t| c.allows(t)),
            None => self.sampler.sample(logits),
        };
        let token = match sampled {
            Ok(t) => t,
            Err(e) => {
                self.req.sink.send(SeqEvent::Failed(e.to_string()));
                return false;
            }
        };
        if let Some(c) = &mut self.req.constraint {
            c.accept(token);
        }
        if self.req.stop_tokens.contains(&token) {
            return self.finish(FinishReason::Stop);
        }
        let logprobs = self.req.logprobs.map(|n| logprobs_of(logits, token, n));
        self.generated += 1;
        stats.generated_tokens.fetch_add(1, Ordering::Relaxed);
        if !self.req.sink.send(SeqEvent::Token {
            id: token,
            logprobs,
        }) {
            stats.cancelled.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        if self.generated >= self.req.max_tokens {
            return self.finish(FinishReason::Length);
        }
        if self.kv.positions() + 1 > self.kv.max_positions() {
            return self.finish(FinishReason::Context);
        }
        self.next = Some(token);
        true
    }

    pub fn fail(&mut self, msg: String) {
        self.req.sink.send(SeqEvent::Failed(msg));
    }

    fn finish(&mut self, reason: FinishReason) -> bool {
        self.req.sink.send(SeqEvent::Done {
            reason,
            prompt_tokens: self.req.prompt.len(),
            completion_tokens: self.generated,
        });
        false
    }
}

/// Log-softmax (f64 sum) of `logits` at `token`, and the `n` most probable tokens.
pub fn logprobs_of(logits: &[f32], token: u32, n: usize) -> TokenLogprobs {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f64 = logits.iter().map(|&l| f64::from(l - max).exp()).sum();
    let log_z = f64::from(max) + sum.ln();
    let lp = |l: f32| (f64::from(l) - log_z) as f32;
    let mut top: Vec<(u32, f32)> = Vec::new();
    if n > 0 {
        let mut all: Vec<(u32, f32)> = logits
            .iter()
            .enumerate()
            .map(|(i, &l)| (i as u32, l))
            .collect();
        let order = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        let k = n.min(all.len());
        all.select_nth_unstable_by(k - 1, order);
        all.truncate(k);
        all.sort_by(order);
        top = all.into_iter().map(|(i, l)| (i, lp(l))).collect();
    }
    TokenLogprobs {
        logprob: lp(logits[token as usize]),
        top,
    }
}

#[cfg(test)]
mod tests {
    use super::logprobs_of;

    #[test]
    fn logprobs_are_a_normalised_log_softmax() {
        let logits = [1.0f32, 3.0, 2.0, -1.0];
        let lp = logprobs_of(&logits, 2, 2);
        let z: f64 = logits.iter().map(|&l| f64::from(l).exp()).sum();
        assert!((f64::from(lp.logprob) - (2.0 - z.ln())).abs() < 1e-6);
        assert_eq!(lp.top.iter().map(|t| t.0).collect::<Vec<_>>(), vec![1, 2]);
        let total: f64 = logits
            .iter()
            .map(|&l| f64::from(logprobs_of(&logits, 0, 0).logprob - logits[0] + l).exp())
            .sum();
        assert!((total - 1.0).abs() < 1e-6);
    }
}
