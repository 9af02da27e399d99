//! The one-by-one runner: each running sequence is a [`Sequence`] of its own (the whole-token
//! GPU sessions, which keep their KV cache on the device and replay one CUDA graph per
//! token), fed in turn within a step: every decoder's token first (all started before any is
//! collected, so the GPU runs the next sequence's graph while the host samples), then prompt
//! chunks in admission order within the step's row budget. A sequence that fails ends alone.
//! Ended sequences are reset and kept for the next requests (up to `max_sequences`): a GPU
//! session keeps its buffers and captured graph.

use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::run::run_loop;
use super::slot::Slot;
use super::{SchedulerConfig, Shared};
use crate::cuda::{Cuda, CudaSession};
use crate::error::Result;
use crate::generate::{HostSequence, Sequence};
use crate::model::Glimmer;

/// Opens the sequences of the one-by-one runner.
pub trait SequenceSource: Send {
    /// A new empty sequence of `model` holding up to `max_positions` positions.
    fn open<'a>(
        &'a self,
        model: &'a Glimmer,
        max_positions: usize,
    ) -> Result<Box<dyn Sequence + 'a>>;
}

/// Host sequences over the model's backend ([`HostSequence`]).
pub struct HostSequences;

impl SequenceSource for HostSequences {
    fn open<'a>(
        &'a self,
        model: &'a Glimmer,
        max_positions: usize,
    ) -> Result<Box<dyn Sequence + 'a>> {
        Ok(Box::new(HostSequence::new(model, max_positions)))
    }
}

/// Whole-token sessions on a CUDA device whose weights are uploaded ([`CudaSession`]).
impl SequenceSource for Arc<Cuda> {
    fn open<'a>(
        &'a self,
        model: &'a Glimmer,
        max_positions: usize,
    ) -> Result<Box<dyn Sequence + 'a>> {
        Ok(Box::new(CudaSession::new(self, model, max_positions)?))
    }
}

pub(super) fn run(
    model: &Glimmer,
    source: &dyn SequenceSource,
    cfg: &SchedulerConfig,
    shared: &Shared,
) {
    let pool: RefCell<Vec<Box<dyn Sequence + '_>>> = RefCell::new(Vec::new());
    run_loop(
        cfg,
        shared,
        || match pool.borrow_mut().pop() {
            Some(seq) => Ok(seq),
            None => source.open(model, cfg.context).map_err(|e| e.to_string()),
        },
        |slots| {
            for mut seq in step(cfg, slots, shared) {
                let mut pool = pool.borrow_mut();
                if pool.len() < cfg.max_sequences && seq.reset().is_ok() {
                    pool.push(seq);
                }
            }
        },
    );
}

/// Feeds every sequence that has rows to run, decoders first; removes the sequences that
/// ended and returns those that ended without an error (for reuse).
fn step<'a>(
    cfg: &SchedulerConfig,
    slots: &mut Vec<Slot<Box<dyn Sequence + 'a>>>,
    shared: &Shared,
) -> Vec<Box<dyn Sequence + 'a>> {
    let stats = &shared.stats;
    let mut budget = if slots.iter().any(Slot::is_decoding) {
        cfg.prefill_chunk_busy
    } else {
        cfg.prefill_chunk
    };
    // None: still running; Some(true): ended; Some(false): failed.
    let mut ended: Vec<Option<bool>> = vec![None; slots.len()];
    let mut rows = 0;
    // Every decoder's step started before any is collected.
    let mut started = vec![false; slots.len()];
    for (i, s) in slots.iter_mut().enumerate() {
        if let Some(t) = s.next {
            match s.kv.start_step(t) {
                Ok(on) => started[i] = on,
                Err(e) => {
                    s.fail(format!("forward pass failed: {e}"));
                    ended[i] = Some(false);
                }
            }
        }
    }
    let decoders = (0..slots.len()).filter(|&i| slots[i].is_decoding());
    let prompts = (0..slots.len()).filter(|&i| !slots[i].is_decoding());
    let order: Vec<usize> = decoders.chain(prompts).collect();
    for i in order {
        if ended[i].is_some() {
            continue;
        }
        let s = &mut slots[i];
        let plan = s.plan(budget);
        if plan.is_empty() {
            continue;
        }
        if !s.is_decoding() {
            budget -= plan.len();
        }
        rows += plan.len();
        let logits = if started[i] {
            s.kv.finish_step()
        } else {
            s.kv.feed(&plan)
        };
        match logits {
            Ok(logits) => {
                if !s.advance(plan.len(), &logits, stats) {
                    stats.finished.fetch_add(1, Ordering::Relaxed);
                    ended[i] = Some(true);
                }
            }
            Err(e) => {
                s.fail(format!("forward pass failed: {e}"));
                ended[i] = Some(false);
            }
        }
    }
    stats.steps.fetch_add(1, Ordering::Relaxed);
    stats.step_rows.fetch_add(rows as u64, Ordering::Relaxed);
    let mut reusable = Vec::new();
    let mut kept = Vec::with_capacity(slots.len());
    for (s, e) in slots.drain(..).zip(ended) {
        match e {
            None => kept.push(s),
            Some(true) => reusable.push(s.kv),
            Some(false) => {}
        }
    }
    *slots = kept;
    reusable
}
