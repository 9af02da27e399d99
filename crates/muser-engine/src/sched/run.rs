//! The scheduler thread's loop: admit queued requests into free slots, drop sequences whose
//! client left, then one step. The batched runner's step is one forward: every decoding
//! sequence's next token plus prompt chunks (512 rows when nothing decodes, 64 while something
//! does) in admission order; the one-by-one runner's is in `each.rs`.

use std::sync::atomic::Ordering;

use super::slot::{Slot, SlotKv};
use super::{SchedulerConfig, SeqEvent, Shared};
use crate::model::{Glimmer, LogitsFor, Segment};

/// The batched runner: host KV caches, one batched forward per step.
pub(super) fn run(model: &Glimmer, cfg: &SchedulerConfig, shared: &Shared) {
    run_loop(
        cfg,
        shared,
        || Ok(model.new_cache(cfg.context, 0)),
        |slots| step(model, cfg, slots, shared),
    );
}

/// The loop every runner shares: `new_kv` makes an admitted sequence's cache (its error is
/// sent to that client), `step` runs one step over the slots and removes those that ended.
pub(super) fn run_loop<K: SlotKv>(
    cfg: &SchedulerConfig,
    shared: &Shared,
    mut new_kv: impl FnMut() -> Result<K, String>,
    mut step: impl FnMut(&mut Vec<Slot<K>>),
) {
    let stats = &shared.stats;
    let mut slots: Vec<Slot<K>> = Vec::new();
    let mut admitted = Vec::new();
    loop {
        {
            let mut q = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
            while slots.is_empty() && q.is_empty() && !shared.stop.load(Ordering::Acquire) {
                q = shared.wake.wait(q).unwrap_or_else(|e| e.into_inner());
            }
            if shared.stop.load(Ordering::Acquire) {
                for mut req in q.drain(..) {
                    req.sink
                        .send(SeqEvent::Failed("the scheduler is shutting down".into()));
                }
                for s in &mut slots {
                    s.fail("the scheduler is shutting down".into());
                }
                break;
            }
            q.retain(|r| !r.sink.is_closed());
            let free = cfg.max_sequences.saturating_sub(slots.len());
            let n = free.min(q.len());
            admitted.extend(q.drain(..n));
            stats.queue_depth.store(q.len() as u64, Ordering::Relaxed);
        }
        // KV caches are allocated outside the queue's lock (handlers take it to submit).
        for mut req in admitted.drain(..) {
            let kv = match new_kv() {
                Ok(kv) => kv,
                Err(e) => {
                    req.sink.send(SeqEvent::Failed(format!(
                        "no room for the sequence's KV cache: {e}"
                    )));
                    continue;
                }
            };
            match Slot::new(kv, req) {
                Ok(s) => slots.push(s),
                Err(mut req) => {
                    req.sink
                        .send(SeqEvent::Failed("invalid sampling parameters".into()));
                }
            }
        }
        let before = slots.len();
        slots.retain(|s| !s.req.sink.is_closed());
        stats
            .cancelled
            .fetch_add((before - slots.len()) as u64, Ordering::Relaxed);
        if !slots.is_empty() {
            step(&mut slots);
        }
        stats.running.store(slots.len() as u64, Ordering::Relaxed);
        stats.kv_positions.store(
            slots.iter().map(|s| s.kv.positions() as u64).sum(),
            Ordering::Relaxed,
        );
        stats.kv_bytes.store(
            slots.iter().map(|s| s.kv.bytes() as u64).sum(),
            Ordering::Relaxed,
        );
    }
    stats.running.store(0, Ordering::Relaxed);
}

/// One batched forward over every sequence that has rows to run; ended sequences are removed.
fn step(
    model: &Glimmer,
    cfg: &SchedulerConfig,
    slots: &mut Vec<Slot<crate::kv::KvCache>>,
    shared: &Shared,
) {
    let stats = &shared.stats;
    let mut budget = if slots.iter().any(Slot::is_decoding) {
        cfg.prefill_chunk_busy
    } else {
        cfg.prefill_chunk
    };
    let plans: Vec<Vec<u32>> = slots
        .iter()
        .map(|s| {
            let p = s.plan(budget);
            if !s.is_decoding() {
                budget -= p.len();
            }
            p
        })
        .collect();
    let mut segs: Vec<Segment<'_>> = slots
        .iter_mut()
        .zip(&plans)
        .filter(|(_, p)| !p.is_empty())
        .map(|(s, p)| Segment {
            kv: &mut s.kv,
            tokens: p,
            want: LogitsFor::Last,
        })
        .collect();
    let rows: usize = segs.iter().map(|s| s.tokens.len()).sum();
    let result = model.forward_batch(&mut segs);
    drop(segs);
    stats.steps.fetch_add(1, Ordering::Relaxed);
    stats.step_rows.fetch_add(rows as u64, Ordering::Relaxed);
    let logits = match result {
        Ok(l) => l,
        Err(e) => {
            for (s, p) in slots.iter_mut().zip(&plans) {
                if !p.is_empty() {
                    s.fail(format!("forward pass failed: {e}"));
                }
            }
            let mut i = 0;
            slots.retain(|_| {
                i += 1;
                plans[i - 1].is_empty()
            });
            return;
        }
    };
    // Sample every sequence that ran (in parallel on the backend's threads: with a 202k
    // vocabulary a draw is a few hundred microseconds). Each sequence samples only from its
    // own logits with its own RNG, so the order does not matter.
    let vocab = model.cfg.n_vocab;
    let mut jobs = Vec::new();
    let mut row = 0;
    for (i, p) in plans.iter().enumerate() {
        if !p.is_empty() {
            jobs.push((i, row));
            row += 1;
        }
    }
    let cells: Vec<std::sync::Mutex<(&mut Slot<crate::kv::KvCache>, bool)>> = slots
        .iter_mut()
        .map(|s| std::sync::Mutex::new((s, true)))
        .collect();
    model.backend().for_each(jobs.len(), &|j| {
        let (i, row) = jobs[j];
        let mut cell = cells[i].lock().unwrap_or_else(|e| e.into_inner());
        let on = cell.0.advance(
            plans[i].len(),
            &logits[row * vocab..(row + 1) * vocab],
            stats,
        );
        if !on {
            stats.finished.fetch_add(1, Ordering::Relaxed);
        }
        cell.1 = on;
    });
    let alive: Vec<bool> = cells
        .into_iter()
        .map(|c| c.into_inner().unwrap_or_else(|e| e.into_inner()).1)
        .collect();
    let mut i = 0;
    slots.retain(|_| {
        i += 1;
        alive[i - 1]
    });
}
