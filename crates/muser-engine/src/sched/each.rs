//! The one-by-one runner: each running sequence is a [`Sequence`] of its own (the whole-token
//! GPU sessions, which keep their KV cache on the device and replay one CUDA graph per
//! token), fed in turn within a step: every decoder's token first, then prompt chunks in
//! admission order within the step's row budget. A sequence that fails ends alone.

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
    run_loop(
        cfg,
        shared,
        || source.open(model, cfg.context).map_err(|e| e.to_string()),
        |slots| step(cfg, slots, shared),
    );
}

/// Feeds every sequence that has rows to run, decoders first; ended sequences are removed.
fn step(cfg: &SchedulerConfig, slots: &mut Vec<Slot<Box<dyn Sequence + '_>>>, shared: &Shared) {
    let stats = &shared.stats;
    let mut budget = if slots.iter().any(Slot::is_decoding) {
        cfg.prefill_chunk_busy
    } else {
        cfg.prefill_chunk
    };
    let decoders = (0..slots.len()).filter(|&i| slots[i].is_decoding());
    let prompts = (0..slots.len()).filter(|&i| !slots[i].is_decoding());
    let order: Vec<usize> = decoders.chain(prompts).collect();
    let mut alive = vec![true; slots.len()];
    let mut rows = 0;
    for i in order {
        let s = &mut slots[i];
        let plan = s.plan(budget);
        if plan.is_empty() {
            continue;
        }
        if !s.is_decoding() {
            budget -= plan.len();
        }
        rows += plan.len();
        match s.kv.feed(&plan) {
            Ok(logits) => {
                if !s.advance(plan.len(), &logits, stats) {
                    stats.finished.fetch_add(1, Ordering::Relaxed);
                    alive[i] = false;
                }
            }
            Err(e) => {
                s.fail(format!("forward pass failed: {e}"));
                alive[i] = false;
            }
        }
    }
    stats.steps.fetch_add(1, Ordering::Relaxed);
    stats.step_rows.fetch_add(rows as u64, Ordering::Relaxed);
    let mut i = 0;
    slots.retain(|_| {
        i += 1;
        alive[i - 1]
    });
}
