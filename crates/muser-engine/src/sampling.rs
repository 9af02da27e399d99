//! Token sampling: penalties, top-k, top-p, min-p, temperature, greedy; seeded and
//! fail-closed (a non-finite logit is an error and the previous distribution stays installed).

use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::error::{Error, Result};

mod select;
pub use select::argmax;

/// Sampling parameters. Defaults are Glimmer's recommendation: temperature 1.0, top-p 0.95,
/// top-k 64, no penalties.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingParams {
    /// 0 = greedy (argmax).
    pub temperature: f32,
    /// 0 = off.
    pub top_k: usize,
    /// 1 = off.
    pub top_p: f32,
    /// 0 = off: drop tokens whose probability is below `min_p` × the best one's.
    pub min_p: f32,
    /// llama.cpp-style repetition penalty over the last `penalty_last_n` tokens (1 = off).
    pub repeat_penalty: f32,
    /// OpenAI-style: subtracted once from every token seen.
    pub presence_penalty: f32,
    /// OpenAI-style: subtracted per occurrence.
    pub frequency_penalty: f32,
    /// Window of recent tokens the penalties look at (0 = all).
    pub penalty_last_n: usize,
    /// Same seed, same logits → same tokens.
    pub seed: u64,
}

impl Default for SamplingParams {
    fn default() -> Self {
        SamplingParams {
            temperature: 1.0,
            top_k: 64,
            top_p: 0.95,
            min_p: 0.0,
            repeat_penalty: 1.0,
            presence_penalty: 0.0,
            frequency_penalty: 0.0,
            penalty_last_n: 64,
            seed: 0,
        }
    }
}

impl SamplingParams {
    pub fn greedy() -> SamplingParams {
        SamplingParams {
            temperature: 0.0,
            ..Default::default()
        }
    }

    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::BadSampling(m.to_string()));
        if !(self.temperature >= 0.0 && self.temperature.is_finite()) {
            return bad("temperature must be finite and >= 0");
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return bad("top_p must be in (0, 1]");
        }
        if !(0.0..=1.0).contains(&self.min_p) {
            return bad("min_p must be in [0, 1]");
        }
        if !(self.repeat_penalty > 0.0 && self.repeat_penalty.is_finite()) {
            return bad("repeat_penalty must be finite and > 0");
        }
        if !self.presence_penalty.is_finite() || !self.frequency_penalty.is_finite() {
            return bad("penalties must be finite");
        }
        Ok(())
    }
}

/// A sampler with its RNG, the history the penalties see, and the installed distribution.
#[derive(Debug, Clone)]
pub struct Sampler {
    params: SamplingParams,
    rng: Xoshiro256PlusPlus,
    history: Vec<u32>,
    /// `(token, probability)` of the last accepted distribution, most probable first.
    installed: Vec<(u32, f32)>,
}

impl Sampler {
    pub fn new(params: SamplingParams) -> Result<Sampler> {
        params.validate()?;
        Ok(Sampler {
            rng: Xoshiro256PlusPlus::seed_from_u64(params.seed),
            params,
            history: Vec::new(),
            installed: Vec::new(),
        })
    }

    pub fn params(&self) -> &SamplingParams {
        &self.params
    }

    /// Tokens the penalties count (prompt tokens can be added with [`Sampler::observe`]).
    pub fn observe(&mut self, tokens: &[u32]) {
        self.history.extend_from_slice(tokens);
    }

    /// The distribution the last successful `sample` drew from, most probable first.
    pub fn distribution(&self) -> &[(u32, f32)] {
        &self.installed
    }

    /// Draws the next token from `logits` and records it in the history. On non-finite
    /// logits nothing changes: the error is returned and the previous distribution stays.
    pub fn sample(&mut self, logits: &[f32]) -> Result<u32> {
        check_logits(logits)?;
        // The row is copied only when penalties change it.
        let token = if self.penalties_on() {
            let mut l = logits.to_vec();
            self.apply_penalties(&mut l);
            self.draw(&l)
        } else {
            self.draw(logits)
        };
        self.history.push(token);
        Ok(token)
    }

    /// Draws from penalised logits `l` (entries may be -inf, not all), installing the
    /// distribution; does not touch the history.
    fn draw(&mut self, l: &[f32]) -> u32 {
        let p = &self.params;
        let token = if p.temperature == 0.0 {
            let best = argmax(l);
            self.installed = vec![(best as u32, 1.0)];
            best as u32
        } else {
            // A total order (logit, then id) so that ties never depend on sort internals; with
            // top-k, the k best first (one pass over the 202,048-wide row: `select::top_k`)
            // and those sorted.
            let mut cand: Vec<(u32, f32)> = if p.top_k > 0 && p.top_k < l.len() {
                select::top_k(l, p.top_k)
            } else {
                l.iter().enumerate().map(|(i, &v)| (i as u32, v)).collect()
            };
            cand.sort_by(select::order);
            let probs = softmax(&cand, 1.0);
            if p.top_p < 1.0 {
                let mut acc = 0.0;
                let mut keep = cand.len();
                for (i, q) in probs.iter().enumerate() {
                    acc += q;
                    if acc >= f64::from(p.top_p) {
                        keep = i + 1;
                        break;
                    }
                }
                cand.truncate(keep);
            }
            if p.min_p > 0.0 {
                let probs = softmax(&cand, 1.0);
                let floor = probs[0] * f64::from(p.min_p);
                let keep = probs.iter().take_while(|&&q| q >= floor).count().max(1);
                cand.truncate(keep);
            }
            let probs = softmax(&cand, p.temperature);
            let u = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            let mut acc = 0.0;
            let mut chosen = cand[cand.len() - 1].0;
            for (c, q) in cand.iter().zip(&probs) {
                acc += q;
                if u < acc {
                    chosen = c.0;
                    break;
                }
            }
            self.installed = cand
                .iter()
                .zip(&probs)
                .map(|(c, &q)| (c.0, q as f32))
                .collect();
            chosen
        };
        token
    }

    /// `sample`, restricted to tokens `allowed` accepts (constrained decoding): a drawn token
    /// that is not allowed is removed and the draw repeated (up to 16 times, same RNG stream,
    /// so a seed still fixes the tokens); then the most probable allowed token is taken.
    /// An error when no token at all is allowed.
    pub fn sample_allowed(&mut self, logits: &[f32], allowed: &dyn Fn(u32) -> bool) -> Result<u32> {
        check_logits(logits)?;
        let mut l = logits.to_vec();
        self.apply_penalties(&mut l);
        for _ in 0..16 {
            let t = self.draw(&l);
            if allowed(t) {
                self.history.push(t);
                return Ok(t);
            }
            l[t as usize] = f32::NEG_INFINITY;
            if l.iter().all(|v| *v == f32::NEG_INFINITY) {
                break;
            }
        }
        let mut order: Vec<u32> = (0..l.len() as u32).collect();
        order.sort_by(|&a, &b| l[b as usize].total_cmp(&l[a as usize]).then(a.cmp(&b)));
        let t = order
            .into_iter()
            .find(|&t| allowed(t))
            .ok_or_else(|| Error::Invalid("the constraint allows no token".into()))?;
        self.installed = vec![(t, 1.0)];
        self.history.push(t);
        Ok(t)
    }

    /// Whether any penalty is set (else `apply_penalties` changes nothing).
    fn penalties_on(&self) -> bool {
        let p = &self.params;
        p.repeat_penalty != 1.0 || p.presence_penalty != 0.0 || p.frequency_penalty != 0.0
    }

    fn apply_penalties(&self, l: &mut [f32]) {
        let p = &self.params;
        if !self.penalties_on() {
            return;
        }
        let start = if p.penalty_last_n == 0 {
            0
        } else {
            self.history.len().saturating_sub(p.penalty_last_n)
        };
        let mut counts = std::collections::HashMap::<u32, u32>::new();
        for &t in &self.history[start..] {
            *counts.entry(t).or_default() += 1;
        }
        for (&t, &n) in &counts {
            let Some(v) = l.get_mut(t as usize) else {
                continue;
            };
            // llama.cpp's order: repetition penalty, then frequency and presence.
            if *v > 0.0 {
                *v /= p.repeat_penalty;
            } else {
                *v *= p.repeat_penalty;
            }
            *v -= n as f32 * p.frequency_penalty + p.presence_penalty;
        }
    }
}

/// Refuses empty or non-finite logits (nothing is sampled from them).
fn check_logits(logits: &[f32]) -> Result<()> {
    if !select::all_finite(logits) {
        if let Some((index, &value)) = logits.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(Error::NonFiniteLogits { index, value });
        }
    }
    if logits.is_empty() {
        return Err(Error::Invalid("sampling from an empty vocabulary".into()));
    }
    Ok(())
}

fn softmax(cand: &[(u32, f32)], temperature: f32) -> Vec<f64> {
    let t = f64::from(temperature);
    let max = cand
        .iter()
        .map(|c| f64::from(c.1))
        .fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = cand
        .iter()
        .map(|c| ((f64::from(c.1) - max) / t).exp())
        .collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|x| x / s).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logits() -> Vec<f32> {
        (0..100).map(|i| ((i * 37) % 101) as f32 / 10.0).collect()
    }

    #[test]
    fn sample_allowed_never_draws_a_refused_token() {
        let l = logits();
        let best = argmax(&l) as u32;
        let mut g = Sampler::new(SamplingParams::greedy()).unwrap();
        let t = g.sample_allowed(&l, &|t| t != best).unwrap();
        assert_ne!(t, best);
        let mut masked = l.clone();
        masked[best as usize] = f32::MIN;
        assert_eq!(t as usize, argmax(&masked), "greedy: the best allowed one");
        let p = SamplingParams {
            seed: 5,
            top_k: 0,
            top_p: 1.0,
            ..Default::default()
        };
        let draw = || {
            let mut s = Sampler::new(p.clone()).unwrap();
            (0..50)
                .map(|_| s.sample_allowed(&l, &|t| t % 3 == 1).unwrap())
                .collect::<Vec<_>>()
        };
        let a = draw();
        assert!(a.iter().all(|t| t % 3 == 1));
        assert_eq!(a, draw(), "same seed, same tokens");
        assert!(g.sample_allowed(&l, &|_| false).is_err());
    }

    #[test]
    fn greedy_is_argmax() {
        let mut s = Sampler::new(SamplingParams::greedy()).unwrap();
        let l = logits();
        assert_eq!(s.sample(&l).unwrap() as usize, argmax(&l));
    }

    #[test]
    fn same_seed_same_tokens_different_seed_differs() {
        let l = logits();
        let run = |seed| {
            let mut s = Sampler::new(SamplingParams {
                seed,
                top_k: 0,
                top_p: 1.0,
                temperature: 3.0,
                ..Default::default()
            })
            .unwrap();
            (0..50).map(|_| s.sample(&l).unwrap()).collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }

    #[test]
    fn filters_restrict_the_candidates() {
        let l = logits();
        let mut s = Sampler::new(SamplingParams {
            top_k: 3,
            ..Default::default()
        })
        .unwrap();
        for _ in 0..20 {
            s.sample(&l).unwrap();
            assert!(s.distribution().len() <= 3);
        }
        let mut s = Sampler::new(SamplingParams {
            top_k: 0,
            top_p: 0.5,
            ..Default::default()
        })
        .unwrap();
        s.sample(&l).unwrap();
        let mass: f32 = s.distribution().iter().map(|c| c.1).sum();
        assert!((mass - 1.0).abs() < 1e-5);
        let n = s.distribution().len();
        assert!(n > 1 && n < 100, "{n}");
        let mut s = Sampler::new(SamplingParams {
            top_k: 0,
            top_p: 1.0,
            min_p: 0.9,
            ..Default::default()
        })
        .unwrap();
        s.sample(&l).unwrap();
        assert_eq!(
            s.distribution().len(),
            2,
            "only logits within ln(1/0.9) of the best"
        );
    }

    #[test]
    fn top_k_selection_equals_a_full_sort_with_ties() {
        // Many equal logits: the k kept must be the smallest ids among the ties.
        let l: Vec<f32> = (0..1000).map(|i| ((i * 7) % 13) as f32).collect();
        let mut s = Sampler::new(SamplingParams {
            top_k: 20,
            top_p: 1.0,
            ..Default::default()
        })
        .unwrap();
        s.sample(&l).unwrap();
        let mut all: Vec<(u32, f32)> = l.iter().enumerate().map(|(i, &v)| (i as u32, v)).collect();
        all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let kept: Vec<u32> = s.distribution().iter().map(|c| c.0).collect();
        let want: Vec<u32> = all[..20].iter().map(|c| c.0).collect();
        assert_eq!(kept, want);
    }

    #[test]
    fn penalties_discourage_repeats() {
        let mut l = vec![0.0f32; 10];
        l[3] = 5.0;
        l[4] = 4.9;
        let mut s = Sampler::new(SamplingParams {
            temperature: 0.0,
            presence_penalty: 1.0,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(s.sample(&l).unwrap(), 3);
        assert_eq!(s.sample(&l).unwrap(), 4, "3 was penalised");
        let mut s = Sampler::new(SamplingParams {
            temperature: 0.0,
            repeat_penalty: 1.1,
            ..Default::default()
        })
        .unwrap();
        s.observe(&[3]);
        assert_eq!(s.sample(&l).unwrap(), 4);
    }

    #[test]
    fn non_finite_logits_fail_closed() {
        let l = logits();
        let mut s = Sampler::new(SamplingParams::default()).unwrap();
        s.sample(&l).unwrap();
        let before = s.distribution().to_vec();
        let history = s.history.len();
        let mut bad = l.clone();
        bad[17] = f32::NAN;
        assert!(matches!(
            s.sample(&bad),
            Err(Error::NonFiniteLogits { index: 17, .. })
        ));
        bad[17] = f32::INFINITY;
        assert!(s.sample(&bad).is_err());
        assert_eq!(s.distribution(), &before[..]);
        assert_eq!(s.history.len(), history);
    }

    #[test]
    fn invalid_parameters_are_refused() {
        for p in [
            SamplingParams {
                temperature: -1.0,
                ..Default::default()
            },
            SamplingParams {
                top_p: 0.0,
                ..Default::default()
            },
            SamplingParams {
                min_p: 2.0,
                ..Default::default()
            },
        ] {
            assert!(Sampler::new(p).is_err());
        }
    }
}
