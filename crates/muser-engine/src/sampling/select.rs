//! Passes over a vocabulary-sized logits row for the sampler, each giving the plain loop's
//! result with less work per element: the first index of the largest value, whether every
//! value is finite, and the k best candidates.

use std::cmp::Ordering;

/// Values per lane group: the passes below keep this many independent accumulators, which
/// the compiler turns into vector instructions (one running maximum would be a chain of
/// dependent compares).
const LANES: usize = 16;

/// Values per chunk of `top_k`: a chunk whose maximum is below the running threshold is
/// skipped whole.
const CHUNK: usize = 64;

/// The candidates' total order: the larger logit first, then the lower id (ties never depend
/// on a sort's internals).
pub(crate) fn order(a: &(u32, f32), b: &(u32, f32)) -> Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

/// The largest value that is not NaN (-inf when there is none).
fn max_not_nan(v: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; LANES];
    let mut it = v.chunks_exact(LANES);
    for c in &mut it {
        for (a, &x) in acc.iter_mut().zip(c) {
            // f32::max returns the other argument when one is NaN.
            *a = a.max(x);
        }
    }
    it.remainder()
        .iter()
        .chain(&acc)
        .fold(f32::NEG_INFINITY, |m, &x| m.max(x))
}

/// Index of the largest value (the first one on ties), as the loop
/// `if v[i] > v[best] { best = i }` from `best = 0` gives it: NaN is never chosen, except
/// that a NaN at index 0 stays (nothing compares greater than it); 0 for an empty row.
pub fn argmax(v: &[f32]) -> usize {
    match v.first() {
        None => return 0,
        Some(x) if x.is_nan() => return 0,
        Some(_) => {}
    }
    let m = max_not_nan(v);
    // The first chunk holding m (a vectorizable test per chunk), then its position there.
    v.chunks(CHUNK)
        .enumerate()
        .find(|(_, c)| c.iter().fold(false, |hit, &x| hit | (x == m)))
        .and_then(|(ci, c)| c.iter().position(|&x| x == m).map(|j| ci * CHUNK + j))
        .unwrap_or(0)
}

/// Whether every value is finite (no NaN, no infinity).
pub(crate) fn all_finite(v: &[f32]) -> bool {
    v.chunks(LANES * 4)
        .all(|c| c.iter().fold(true, |ok, x| ok & x.is_finite()))
}

/// The `k` best candidates `(id, logit)` of `l` under `order`, in no particular order, for
/// 0 < k < l.len(): the set that sorting every candidate and keeping the first `k` gives.
/// One pass: candidates collect in a buffer of up to 2k; when it fills, the k best are kept
/// and the k-th one's logit becomes the threshold; a value below it is beaten by k kept ones,
/// so it is never a candidate (a whole chunk below it is skipped); values equal to it are
/// kept, so ties resolve by id in the final selection.
pub(crate) fn top_k(l: &[f32], k: usize) -> Vec<(u32, f32)> {
    debug_assert!(k > 0 && k < l.len());
    let mut buf: Vec<(u32, f32)> = Vec::with_capacity(2 * k + CHUNK);
    let mut thr = f32::NEG_INFINITY;
    let mut full = false;
    for (ci, c) in l.chunks(CHUNK).enumerate() {
        if full && max_not_nan(c) < thr {
            continue;
        }
        let base = ci * CHUNK;
        for (j, &x) in c.iter().enumerate() {
            if !full || x >= thr {
                buf.push(((base + j) as u32, x));
            }
        }
        if buf.len() >= 2 * k {
            buf.select_nth_unstable_by(k - 1, order);
            buf.truncate(k);
            thr = buf.iter().fold(f32::INFINITY, |m, c| m.min(c.1));
            full = true;
        }
    }
    if buf.len() > k {
        buf.select_nth_unstable_by(k - 1, order);
        buf.truncate(k);
    }
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain_argmax(v: &[f32]) -> usize {
        let mut best = 0;
        for (i, &x) in v.iter().enumerate() {
            if x > v[best] {
                best = i;
            }
        }
        best
    }

    fn plain_top_k(l: &[f32], k: usize) -> Vec<(u32, f32)> {
        let mut cand: Vec<(u32, f32)> = l.iter().enumerate().map(|(i, &v)| (i as u32, v)).collect();
        cand.sort_by(order);
        cand.truncate(k);
        cand
    }

    /// Rows of random logits with few distinct values (many ties), runs of -inf, and sizes
    /// around the lane and chunk widths.
    fn rows() -> Vec<Vec<f32>> {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut out = Vec::new();
        for n in [1usize, 2, 15, 16, 17, 63, 64, 65, 1000, 4099, 202_048] {
            for distinct in [3u64, 1 << 20] {
                out.push(
                    (0..n)
                        .map(|_| match next() % 50 {
                            0 => f32::NEG_INFINITY,
                            _ => (next() % distinct) as f32 / 7.0 - 3.0,
                        })
                        .collect(),
                );
            }
        }
        // Increasing and decreasing rows (the threshold moves with every chunk, or never).
        out.push((0..5000).map(|i| i as f32).collect());
        out.push((0..5000).map(|i| -(i as f32)).collect());
        out
    }

    #[test]
    fn argmax_is_the_plain_loops() {
        for v in rows() {
            assert_eq!(argmax(&v), plain_argmax(&v), "n = {}", v.len());
        }
        // NaN: never chosen, except at index 0; an empty row gives 0.
        let nan = f32::NAN;
        for v in [
            vec![1.0, nan, 3.0, nan, 3.0],
            vec![nan, 5.0, 7.0],
            vec![f32::NEG_INFINITY, nan, nan],
            vec![nan; 40],
            vec![],
        ] {
            assert_eq!(argmax(&v), plain_argmax(&v), "{v:?}");
        }
    }

    #[test]
    fn all_finite_finds_any_nan_or_infinity() {
        let mut v = vec![1.0f32; 1000];
        assert!(all_finite(&v));
        for (at, bad) in [
            (0, f32::NAN),
            (999, f32::INFINITY),
            (517, f32::NEG_INFINITY),
        ] {
            v[at] = bad;
            assert!(!all_finite(&v), "{bad} at {at}");
            v[at] = 1.0;
        }
    }

    #[test]
    fn top_k_is_the_sorted_rows_prefix() {
        for v in rows() {
            for k in [1usize, 2, 40, 64, 1000] {
                if k >= v.len() {
                    continue;
                }
                let mut got = top_k(&v, k);
                got.sort_by(order);
                let want = plain_top_k(&v, k);
                assert_eq!(got.len(), k);
                let same = got
                    .iter()
                    .zip(&want)
                    .all(|(a, b)| a.0 == b.0 && a.1.to_bits() == b.1.to_bits());
                assert!(same, "n = {} k = {k}", v.len());
            }
        }
    }
}
