//! The L2 prefetch ranges of the decode step (`DecodeTuning::l2_prefetch`): which bytes of
//! the next matvec's weights the extra blocks of a latency-bound launch (`kernels/
//! prefetch.cu`) fetch, as kernel arguments.

use muser_gguf::GgmlType;

use super::step::ptr;
use super::CudaSession;
use crate::cuda::launch::KArg as Arg;
use crate::cuda::seg::SEG_TYPES;
use crate::error::Result;
use crate::weights::Matrix;

/// Ranges one launch prefetches (`prefetch_ranges`' four).
pub(super) const RANGES: usize = 4;

/// The first `percent` % of `len` bytes, whole 128-byte lines, at most `len`.
fn prefix(len: usize, percent: u8) -> usize {
    (len * usize::from(percent.min(100)) / 100)
        .next_multiple_of(128)
        .min(len)
}

/// The byte range `[start, end)` of `len` bytes between `from` and `to` percent (whole lines
/// from the start of the buffer; empty when `from >= to`).
pub(super) fn span(len: usize, (from, to): (u8, u8)) -> (usize, usize) {
    let start = prefix(len, from);
    (start, prefix(len, to).max(start))
}

impl CudaSession<'_> {
    /// The kernel arguments `(pointer, bytes)` × 4 of the first `percent` % of each of
    /// `mats` (at most four) in the layout the step's kernels read (Q6_K split for the int8
    /// segment kernels); unused ranges are empty. `None` for 0 % or no matrix.
    pub(super) fn prefetch_args(
        &self,
        mats: &[&Matrix],
        percent: u8,
        q8: bool,
    ) -> Result<Option<Vec<Arg>>> {
        self.prefetch_span(mats, (0, percent), q8)
    }

    /// As `prefetch_args`, the bytes from `from` to `to` percent of each matrix (`pct`);
    /// `None` when that is empty.
    pub(super) fn prefetch_span(
        &self,
        mats: &[&Matrix],
        pct: (u8, u8),
        q8: bool,
    ) -> Result<Option<Vec<Arg>>> {
        if pct.0 >= pct.1.min(100) || mats.is_empty() {
            return Ok(None);
        }
        let (cuda, model) = (self.cuda, self.model);
        let st = cuda.stream();
        let mut args = Vec::with_capacity(2 * RANGES);
        // A layer's FFN gate and up matrices as the gate/up launch reads them.
        let gate_up = |m: &Matrix| {
            model.weights.layers.iter().find_map(|l| {
                let up = if l.ffn_gate.name == m.name {
                    false
                } else if l.ffn_up.name == m.name {
                    true
                } else {
                    return None;
                };
                Some(up).filter(|_| cuda.gate_up_streams(&l.ffn_gate, &l.ffn_up))
            })
        };
        for m in mats.iter().take(RANGES) {
            // The buffers live in `Cuda`'s weight caches as long as the session.
            let streams = if q8 { gate_up(m) } else { None };
            let w = if let Some(up) = streams {
                cuda.device_q4k_streams(&model.weights, m, up)?
            } else if q8 && m.ty == GgmlType::Q6_K && SEG_TYPES.contains(&m.ty) {
                // The LM head in its kernel's layout (`Cuda::lm_units`), the others in 1 unit.
                let units = if m.name == model.weights.output.name {
                    cuda.lm_units(m.n_in)
                } else {
                    1
                };
                cuda.device_q6k_split(&model.weights, m, units)?
            } else {
                cuda.device_weights(&model.weights, m)?
            };
            let (start, end) = span(w.len(), pct);
            let bytes = (end - start).min(i32::MAX as usize);
            args.extend([Arg::P(ptr(&*w, st) + start as u64), Arg::I(bytes as i32)]);
        }
        while args.len() < 2 * RANGES {
            args.extend([Arg::P(0), Arg::I(0)]);
        }
        Ok(Some(args))
    }
}

/// `args` (`prefetch_span`'s, or none) with the non-empty ranges `(address, bytes)` of
/// `extra` in its unused slots (those past the four dropped); `None` when nothing is left.
pub(super) fn with_ranges(args: Option<Vec<Arg>>, extra: &[(u64, usize)]) -> Option<Vec<Arg>> {
    let mut ranges: Vec<(u64, i32)> = match &args {
        Some(a) => a
            .chunks(2)
            .filter_map(|r| match r {
                [Arg::P(p), Arg::I(n)] if *n > 0 => Some((*p, *n)),
                _ => None,
            })
            .collect(),
        None => Vec::new(),
    };
    for &(p, n) in extra.iter().filter(|r| r.1 > 0) {
        ranges.push((p, n.min(i32::MAX as usize) as i32));
    }
    if ranges.is_empty() {
        return None;
    }
    ranges.resize(RANGES.max(ranges.len()), (0, 0));
    Some(
        ranges[..RANGES]
            .iter()
            .flat_map(|&(p, n)| [Arg::P(p), Arg::I(n)])
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::{prefix, span, with_ranges, Arg};

    #[test]
    fn prefetch_prefixes_are_whole_lines_within_the_matrix() {
        assert_eq!(prefix(15_335_424, 100), 15_335_424);
        assert_eq!(prefix(1000, 50), 512);
        assert_eq!(prefix(1000, 99), 1000);
        assert_eq!(prefix(1000, 0), 0);
        assert_eq!(prefix(1000, 200), 1000);
    }

    #[test]
    fn prefetch_spans_are_line_aligned_and_empty_when_reversed() {
        assert_eq!(span(12_800, (10, 30)), (1280, 3840));
        assert_eq!(span(1000, (20, 100)), (256, 1000));
        assert_eq!(span(1000, (50, 20)), (512, 512));
        assert_eq!(span(1000, (0, 0)), (0, 0));
    }

    fn ranges(args: &[Arg]) -> Vec<(u64, i32)> {
        args.chunks(2)
            .map(|r| match r {
                [Arg::P(p), Arg::I(n)] => (*p, *n),
                _ => panic!("not a range: {r:?}"),
            })
            .collect()
    }

    #[test]
    fn extra_ranges_fill_the_unused_slots() {
        assert!(with_ranges(None, &[]).is_none());
        assert!(with_ranges(None, &[(64, 0)]).is_none());
        let one = with_ranges(None, &[(4096, 256)]).unwrap();
        assert_eq!(ranges(&one), [(4096, 256), (0, 0), (0, 0), (0, 0)]);
        let base = vec![
            Arg::P(100),
            Arg::I(128),
            Arg::P(0),
            Arg::I(0),
            Arg::P(0),
            Arg::I(0),
            Arg::P(0),
            Arg::I(0),
        ];
        let both = with_ranges(Some(base), &[(200, 512), (300, 0), (400, 640)]).unwrap();
        assert_eq!(ranges(&both), [(100, 128), (200, 512), (400, 640), (0, 0)]);
        let many: Vec<(u64, usize)> = (1..=6).map(|i| (i * 1000, 128)).collect();
        assert_eq!(ranges(&with_ranges(None, &many).unwrap()).len(), 4);
    }
}
