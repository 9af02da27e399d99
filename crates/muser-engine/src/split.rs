//! Decode batches of a small model split across threads: each thread runs its own share of
//! the sequences through the whole graph on the backend's serial twin, with no
//! synchronisation between the ops of a step.
//!
//! A small model's weights sit in cache, so a decode step is not bandwidth-bound: what the
//! usual op-by-op parallelism costs is the synchronisation after every op (about 15 per
//! layer), which dominated batched decode of the `tiny` preset on the 2-core dev VM
//! (bench/runs/2026-11-30-serve). For a large model, each thread would read every weight once
//! per step, so the split is only taken below [`SPLIT_MAX_WEIGHT_BYTES`].
//!
//! Every row's result is the same as in the op-by-op path: the serial twin runs the same
//! kernels, and every kernel computes a row alone (batch invariance).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::model::{Glimmer, Segment};

/// Largest decode weight set (bytes read per token) whose batches are split across threads:
/// well inside a server CPU's last-level cache.
pub const SPLIT_MAX_WEIGHT_BYTES: u64 = 16 << 20;

/// When decode batches are split across threads (see [`Glimmer::splits_batch`]).
///
/// Measured on a 16-core host (bench/runs/2026-11-30-serve-c): with the `tiny` preset
/// (2.4 MB per token) the split beat the op-by-op path at every batch of 2 or more sequences
/// and every team size from 2 to 16, also with fewer sequences than threads (16 threads:
/// 8 sequences 9,713 against 5,454 tok/s; 2 sequences 2,843 against 2,090); with a 13.5 MB
/// model it was as fast or faster at 2, 4, 8 and 16 sequences (8: 2,308 against 2,215).
/// Spreading each op of a small model over many threads costs more in synchronisation than
/// the idle threads would add.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SplitPolicy {
    /// Split every batch of two or more one-token sequences of a model of at most
    /// [`SPLIT_MAX_WEIGHT_BYTES`] per token.
    #[default]
    Auto,
    /// Never split: every op of the step spread over the whole team.
    Never,
}

/// Most rows a thread takes at a time (the four-token kernels' width).
const SPLIT_GROUP: usize = 4;

impl Glimmer {
    /// Whether [`Glimmer::forward_batch`] runs these segments split across threads: two or
    /// more one-token segments (a decode step), a model of at most [`SPLIT_MAX_WEIGHT_BYTES`],
    /// a backend with a serial twin and 2+ threads, and a [`SplitPolicy`] that allows it.
    pub fn splits_batch(&self, segs: &[Segment<'_>]) -> bool {
        let backend = self.backend();
        let threads = backend.threads();
        self.split_policy() == SplitPolicy::Auto
            && segs.len() >= 2
            && backend.serial().is_some()
            && threads >= 2
            && segs.iter().all(|s| s.tokens.len() == 1)
            && self.weights.decode_bytes() <= SPLIT_MAX_WEIGHT_BYTES
    }

    /// [`Glimmer::forward_batch`] of checked segments split across threads, or `None` when the
    /// batch does not qualify (see [`Glimmer::splits_batch`]: not all one-token segments, fewer
    /// than two, a large model, a backend without a serial twin or with one thread, or
    /// [`SplitPolicy::Never`]).
    pub(crate) fn forward_split(&self, segs: &mut [Segment<'_>]) -> Option<Result<Vec<f32>>> {
        if !self.splits_batch(segs) {
            return None;
        }
        let backend = self.backend();
        let serial = backend.serial()?;
        let threads = backend.threads();
        let n = segs.len();
        // Contiguous groups of at most SPLIT_GROUP rows (a group per thread, or per row when
        // rows are fewer), the first `n % groups` one row longer, claimed by whichever thread
        // is free: a thread that the OS takes away for a while delays only the group it holds.
        let groups = threads.max(n.div_ceil(SPLIT_GROUP)).min(n);
        type Share<'s, 'a> = Mutex<(&'s mut [Segment<'a>], Option<Result<Vec<f32>>>)>;
        let mut shares: Vec<Share<'_, '_>> = Vec::with_capacity(groups);
        let mut rest = segs;
        for i in 0..groups {
            let take = n / groups + usize::from(i < n % groups);
            let (head, tail) = rest.split_at_mut(take);
            shares.push(Mutex::new((head, None)));
            rest = tail;
        }
        let next = AtomicUsize::new(0);
        backend.for_each(threads, &|_| loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(share) = shares.get(i) else { break };
            let mut share = share.lock().unwrap_or_else(|e| e.into_inner());
            let segs = &mut *share.0;
            let result = self
                .check_segments(segs)
                .and_then(|rows| self.forward_rows(serial, segs, &rows));
            share.1 = Some(result);
        });
        let mut logits = Vec::new();
        for share in shares {
            let (_, result) = share.into_inner().unwrap_or_else(|e| e.into_inner());
            match result {
                Some(Ok(part)) => logits.extend(part),
                Some(Err(e)) => return Some(Err(e)),
                None => return Some(Err(Error::Invalid("a batch share did not run".into()))),
            }
        }
        Some(Ok(logits))
    }
}
