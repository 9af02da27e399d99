//! `muser bench --streams`: aggregate decode throughput of several sequences decoded together
//! by the serving scheduler (continuous batching), like llama.cpp's batched-bench.

use std::path::Path;
use std::sync::{mpsc, Arc};
use std::time::Instant;

use anyhow::{Context, Result};
use muser_engine::sched::{EventSink, Request, Scheduler, SchedulerConfig, SeqEvent};
use muser_engine::{Glimmer, SamplingParams};

use crate::device::{backend, Device};

struct Sink(usize, mpsc::Sender<(usize, SeqEvent)>);

impl EventSink for Sink {
    fn send(&mut self, ev: SeqEvent) -> bool {
        self.1.send((self.0, ev)).is_ok()
    }
    fn is_closed(&self) -> bool {
        false
    }
}

/// A model on the device's batched backend (with CUDA: the host graph with GPU products, as
/// `muser serve` runs it).
pub fn open(path: &Path, device: Device, threads: Option<usize>) -> Result<Arc<Glimmer>> {
    let b = backend(device, threads)?;
    let m = Glimmer::open(path, b).with_context(|| format!("loading {}", path.display()))?;
    Ok(Arc::new(m))
}

/// One run: `streams` sequences with 16-token prompts generate `n` tokens each (greedy); the
/// rate counts the tokens decoded after every stream has its first token, over that time.
pub fn run_once(model: &Arc<Glimmer>, streams: usize, n: usize, seed: u64) -> Result<f64> {
    let cfg = SchedulerConfig {
        context: 16 + n + 1,
        max_sequences: streams,
        queue_size: streams,
        ..SchedulerConfig::default()
    };
    let s = Scheduler::start(model.clone(), cfg).context("starting the scheduler")?;
    let n_vocab = model.cfg.n_vocab as u64;
    let (tx, rx) = mpsc::channel();
    for i in 0..streams {
        let prompt = (0..16)
            .map(|t| ((seed + i as u64 * 7919 + t * 104_729) % n_vocab) as u32)
            .collect();
        s.submit(Request {
            prompt,
            sampling: SamplingParams::greedy(),
            max_tokens: n,
            stop_tokens: vec![],
            logprobs: None,
            constraint: None,
            sink: Box::new(Sink(i, tx.clone())),
        })?;
    }
    let (mut done, mut started, mut after) = (0, vec![false; streams], 0usize);
    let mut t_all = None;
    while done < streams {
        match rx.recv().context("the scheduler stopped")? {
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
            (_, SeqEvent::Failed(m)) => anyhow::bail!("a stream failed: {m}"),
        }
    }
    let secs = t_all.map_or(0.0, |t| t.elapsed().as_secs_f64());
    Ok(after as f64 / secs.max(1e-9))
}
