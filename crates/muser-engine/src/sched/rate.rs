//! Aggregate decode rate of several sequences decoded together by the scheduler (what
//! `muser bench --streams` and the `batch_decode` example report).

use std::sync::{mpsc, Arc};
use std::time::Instant;

use super::{Request, Scheduler, SchedulerConfig, SeqEvent, TaggedSink};
use crate::error::{Error, Result};
use crate::model::Glimmer;
use crate::sampling::SamplingParams;

/// `streams` sequences with 16-token prompts each generate `n` tokens (`sampling`, seeded per
/// stream from `sampling.seed`); returns the tokens decoded after every stream has its first
/// token, per second of that time (prefill excluded).
pub fn decode_rate(
    model: &Arc<Glimmer>,
    streams: usize,
    n: usize,
    sampling: &SamplingParams,
) -> Result<f64> {
    let cfg = SchedulerConfig {
        context: 16 + n + 1,
        max_sequences: streams,
        queue_size: streams.max(1),
        ..SchedulerConfig::default()
    };
    let s = Scheduler::start(model.clone(), cfg)
        .map_err(|e| Error::Invalid(format!("starting the scheduler: {e}")))?;
    let n_vocab = model.cfg.n_vocab as u64;
    let (tx, rx) = mpsc::channel();
    for i in 0..streams {
        let seed = sampling.seed.wrapping_add(i as u64);
        let prompt = (0..16u64)
            .map(|t| ((seed.wrapping_mul(7919) + t * 104_729) % n_vocab) as u32)
            .collect();
        s.submit(Request {
            prompt,
            sampling: SamplingParams {
                seed,
                ..sampling.clone()
            },
            max_tokens: n,
            stop_tokens: vec![],
            logprobs: None,
            constraint: None,
            sink: Box::new(TaggedSink {
                tag: i,
                tx: tx.clone(),
            }),
        })
        .map_err(|e| Error::Invalid(e.to_string()))?;
    }
    let (mut done, mut started, mut after) = (0, vec![false; streams], 0usize);
    let mut t_all = None;
    while done < streams {
        let ev = rx
            .recv()
            .map_err(|_| Error::Invalid("the scheduler stopped".into()))?;
        match ev {
            (i, SeqEvent::Token { .. }) => match t_all {
                Some(_) => after += 1,
                None => {
                    started[i] = true;
                    if started.iter().all(|&x| x) {
                        t_all = Some(Instant::now());
                    }
                }
            },
            (_, SeqEvent::Done { .. }) => done += 1,
            (_, SeqEvent::Failed(m)) => {
                return Err(Error::Invalid(format!("a stream failed: {m}")))
            }
        }
    }
    let secs = t_all.map_or(0.0, |t| t.elapsed().as_secs_f64());
    Ok(after as f64 / secs.max(1e-9))
}
