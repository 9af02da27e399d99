//! Causal attention of one query row over the cached window, GQA, in both numerics.
//!
//! Work is split by KV head (each K/V row is read once for all the query heads that share it)
//! and the KV heads run in parallel. Rows are visited oldest first in both numerics, so the
//! result depends neither on where a ring keeps them nor on the thread count.
//!
//! `Exact`: f64 scores, softmax and weighted sum. `Ggml`: the rounding of llama.cpp's CPU
//! graph without flash attention: Q rounded to the cache type before the K dot product, f32
//! scores scaled then soft-maxed with a f64 sum, probabilities rounded to the cache type before
//! the V product; products accumulated in f64 like ggml's scalar `vec_dot_f16` (measured: f32
//! accumulation moved the GQA-16 Q5_K fixture from KL 1.84e-4 to 2.29e-4 against llama.cpp).

use std::sync::Mutex;

use half::f16;
use half::slice::HalfFloatSliceExt;

use crate::backend::Backend;
use crate::kv::{KvCache, KvDtype, Row};
use crate::ops::Numerics;

/// Geometry of one attention call.
#[derive(Debug, Clone, Copy)]
pub struct AttnShape {
    pub n_head: usize,
    pub n_head_kv: usize,
    pub head_dim: usize,
    pub scale: f32,
    /// Test-only fault: map query head `h` to KV head `h % n_head_kv` instead of
    /// `h / (n_head / n_head_kv)`.
    pub interleaved_gqa: bool,
}

impl AttnShape {
    /// Query heads served by KV head `g`.
    fn heads_of(&self, g: usize) -> Vec<usize> {
        let gqa = self.n_head / self.n_head_kv;
        if self.interleaved_gqa {
            (0..gqa).map(|i| g + i * self.n_head_kv).collect()
        } else {
            (g * gqa..(g + 1) * gqa).collect()
        }
    }
}

/// `q: [n_head * head_dim]` of the query at `pos` → `out: [n_head * head_dim]`; the KV heads
/// run in parallel on the backend's threads.
#[allow(clippy::too_many_arguments)]
pub fn attend(
    backend: &dyn Backend,
    num: Numerics,
    shape: AttnShape,
    kv: &KvCache,
    layer: usize,
    pos: usize,
    q: &[f32],
    out: &mut [f32],
) {
    let hd = shape.head_dim;
    let groups: Vec<Mutex<Vec<Vec<f32>>>> = (0..shape.n_head_kv)
        .map(|_| Mutex::new(Vec::new()))
        .collect();
    backend.for_each(shape.n_head_kv, &|g| {
        let qs: Vec<&[f32]> = shape
            .heads_of(g)
            .iter()
            .map(|&h| &q[h * hd..(h + 1) * hd])
            .collect();
        let outs = match num {
            Numerics::Exact => group_exact(shape, kv, layer, pos, g, &qs),
            Numerics::Ggml => group_ggml(shape, kv, layer, pos, g, &qs),
        };
        *groups[g].lock().unwrap_or_else(|e| e.into_inner()) = outs;
    });
    for (g, outs) in groups.into_iter().enumerate() {
        let outs = outs.into_inner().unwrap_or_else(|e| e.into_inner());
        for (h, o) in shape.heads_of(g).into_iter().zip(outs) {
            out[h * hd..(h + 1) * hd].copy_from_slice(&o);
        }
    }
}

/// One query row of [`attend_many`]: its cache, layer and position, and the query.
pub struct AttnJob<'a> {
    pub kv: &'a KvCache,
    pub layer: usize,
    pub pos: usize,
    pub q: &'a [f32],
}

/// [`attend`] for several query rows (of different sequences: each row's K/V must already be
/// stored) in one parallel dispatch over every (row, KV head) pair. Each output equals
/// [`attend`]'s for that row.
pub fn attend_many(
    backend: &dyn Backend,
    num: Numerics,
    shape: AttnShape,
    jobs: &[AttnJob<'_>],
    outs: &mut [&mut [f32]],
) {
    let hd = shape.head_dim;
    let g_n = shape.n_head_kv;
    let results: Vec<Mutex<Vec<Vec<f32>>>> = (0..jobs.len() * g_n)
        .map(|_| Mutex::new(Vec::new()))
        .collect();
    backend.for_each(jobs.len() * g_n, &|i| {
        let (j, g) = (i / g_n, i % g_n);
        let job = &jobs[j];
        let qs: Vec<&[f32]> = shape
            .heads_of(g)
            .iter()
            .map(|&h| &job.q[h * hd..(h + 1) * hd])
            .collect();
        let outs = match num {
            Numerics::Exact => group_exact(shape, job.kv, job.layer, job.pos, g, &qs),
            Numerics::Ggml => group_ggml(shape, job.kv, job.layer, job.pos, g, &qs),
        };
        *results[i].lock().unwrap_or_else(|e| e.into_inner()) = outs;
    });
    for (i, r) in results.into_iter().enumerate() {
        let (j, g) = (i / g_n, i % g_n);
        let r = r.into_inner().unwrap_or_else(|e| e.into_inner());
        for (h, o) in shape.heads_of(g).into_iter().zip(r) {
            outs[j][h * hd..(h + 1) * hd].copy_from_slice(&o);
        }
    }
}

/// K or V slice of KV head `g` as f32.
#[inline(always)]
fn head_f32(row: Row<'_>, g: usize, hd: usize, buf: &mut [f32]) {
    match row {
        Row::F16(r) => r[g * hd..(g + 1) * hd].convert_to_f32_slice(buf),
        Row::F32(r) => buf.copy_from_slice(&r[g * hd..(g + 1) * hd]),
    }
}

fn group_exact(
    shape: AttnShape,
    kv: &KvCache,
    layer: usize,
    pos: usize,
    g: usize,
    qs: &[&[f32]],
) -> Vec<Vec<f32>> {
    let hd = shape.head_dim;
    let visible = kv.visible(layer, pos);
    let n = visible.len();
    let mut buf = vec![0f32; hd];
    let mut scores = vec![vec![0f64; n]; qs.len()];
    for (j, p) in visible.clone().enumerate() {
        head_f32(kv.row(layer, p).0, g, hd, &mut buf);
        for (s, qh) in scores.iter_mut().zip(qs) {
            let dot: f64 = qh
                .iter()
                .zip(&buf)
                .map(|(&a, &b)| f64::from(a) * f64::from(b))
                .sum();
            s[j] = dot * f64::from(shape.scale);
        }
    }
    for s in scores.iter_mut() {
        let max = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = s
            .iter_mut()
            .map(|x| {
                *x = (*x - max).exp();
                *x
            })
            .sum();
        s.iter_mut().for_each(|x| *x /= sum);
    }
    let mut acc = vec![vec![0f64; hd]; qs.len()];
    for (j, p) in visible.enumerate() {
        head_f32(kv.row(layer, p).1, g, hd, &mut buf);
        for (a, s) in acc.iter_mut().zip(&scores) {
            for (ai, &v) in a.iter_mut().zip(&buf) {
                *ai += s[j] * f64::from(v);
            }
        }
    }
    acc.into_iter()
        .map(|a| a.into_iter().map(|v| v as f32).collect())
        .collect()
}

fn group_ggml(
    shape: AttnShape,
    kv: &KvCache,
    layer: usize,
    pos: usize,
    g: usize,
    qs: &[&[f32]],
) -> Vec<Vec<f32>> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("f16c") {
        // SAFETY: the CPU has the features the function is compiled for.
        return unsafe { group_ggml_avx2(shape, kv, layer, pos, g, qs) };
    }
    group_ggml_body(shape, kv, layer, pos, g, qs, head_f32)
}

/// [`group_ggml_body`] compiled for AVX2 and F16C. The arithmetic is the same operations in
/// the same order (Rust never fuses or reassociates float operations), only wider.
///
/// # Safety
/// The CPU must support AVX2 and F16C.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c")]
unsafe fn group_ggml_avx2(
    shape: AttnShape,
    kv: &KvCache,
    layer: usize,
    pos: usize,
    g: usize,
    qs: &[&[f32]],
) -> Vec<Vec<f32>> {
    group_ggml_body(shape, kv, layer, pos, g, qs, |row, g, hd, buf| match row {
        // SAFETY: this function runs only where the CPU has F16C and AVX2.
        Row::F16(r) => unsafe { f16_to_f32_f16c(&r[g * hd..(g + 1) * hd], buf) },
        Row::F32(r) => buf.copy_from_slice(&r[g * hd..(g + 1) * hd]),
    })
}

/// `dst = src` as f32 with F16C, 8 at a time (exact, like every f16 → f32 conversion).
///
/// # Safety
/// The CPU must support AVX2 and F16C.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c")]
#[inline]
unsafe fn f16_to_f32_f16c(src: &[f16], dst: &mut [f32]) {
    use std::arch::x86_64::{_mm256_cvtph_ps, _mm256_storeu_ps, _mm_loadu_si128};
    let n = src.len().min(dst.len());
    let whole = n - n % 8;
    for i in (0..whole).step_by(8) {
        // SAFETY: i + 8 <= n elements of both slices.
        unsafe {
            let h = _mm_loadu_si128(src.as_ptr().add(i).cast());
            _mm256_storeu_ps(dst.as_mut_ptr().add(i), _mm256_cvtph_ps(h));
        }
    }
    for i in whole..n {
        dst[i] = src[i].to_f32();
    }
}

/// Rounds `x` to the cache type and back, in place (F16C where the CPU has it).
#[inline(always)]
fn round_to_cache(dtype: KvDtype, x: &mut [f32], tmp: &mut Vec<f16>) {
    if dtype == KvDtype::F16 {
        tmp.clear();
        tmp.resize(x.len(), f16::ZERO);
        tmp.convert_from_f32_slice(x);
        tmp.convert_to_f32_slice(x);
    }
}

#[inline(always)]
fn group_ggml_body(
    shape: AttnShape,
    kv: &KvCache,
    layer: usize,
    pos: usize,
    g: usize,
    qs: &[&[f32]],
    head_f32: impl Fn(Row<'_>, usize, usize, &mut [f32]),
) -> Vec<Vec<f32>> {
    let hd = shape.head_dim;
    let visible = kv.visible(layer, pos);
    let n = visible.len();
    let mut tmp = Vec::new();
    let qr: Vec<Vec<f32>> = qs
        .iter()
        .map(|qh| {
            let mut r = qh.to_vec();
            round_to_cache(kv.dtype(), &mut r, &mut tmp);
            r
        })
        .collect();
    // Scores, BLOCK positions at a time: their dot products are independent chains, each
    // computed exactly as `dot_f64` does.
    let mut bufs = vec![0f32; BLOCK * hd];
    let mut scores = vec![vec![0f32; n]; qs.len()];
    let positions: Vec<usize> = visible.clone().collect();
    for (b, ps) in positions.chunks(BLOCK).enumerate() {
        for (buf, &p) in bufs.chunks_exact_mut(hd).zip(ps) {
            head_f32(kv.row(layer, p).0, g, hd, buf);
        }
        for (s, qh) in scores.iter_mut().zip(&qr) {
            if ps.len() == BLOCK {
                let d = dot_f64_block(qh, &bufs);
                for (i, v) in d.into_iter().enumerate() {
                    s[b * BLOCK + i] = v * shape.scale;
                }
            } else {
                for (i, buf) in bufs.chunks_exact(hd).take(ps.len()).enumerate() {
                    s[b * BLOCK + i] = dot_f64(qh, buf) * shape.scale;
                }
            }
        }
    }
    for s in scores.iter_mut() {
        let max = s.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let mut sum = 0f64;
        for x in s.iter_mut() {
            *x = (*x - max).exp();
            sum += f64::from(*x);
        }
        let inv = (1.0 / sum) as f32;
        s.iter_mut().for_each(|x| *x *= inv);
        round_to_cache(kv.dtype(), s, &mut tmp);
    }
    // Weighted V sum, BLOCK positions per pass over the accumulator (each element still adds
    // the positions in order).
    let mut acc = vec![vec![0f64; hd]; qs.len()];
    for (b, ps) in positions.chunks(BLOCK).enumerate() {
        for (buf, &p) in bufs.chunks_exact_mut(hd).zip(ps) {
            head_f32(kv.row(layer, p).1, g, hd, buf);
        }
        for (a, s) in acc.iter_mut().zip(&scores) {
            let w = &s[b * BLOCK..b * BLOCK + ps.len()];
            if ps.len() == BLOCK {
                axpy_f64_block(a, w, &bufs);
            } else {
                for (&wj, buf) in w.iter().zip(bufs.chunks_exact(hd)) {
                    let wj = f64::from(wj);
                    for (ai, &v) in a.iter_mut().zip(buf) {
                        *ai += wj * f64::from(v);
                    }
                }
            }
        }
    }
    acc.into_iter()
        .map(|a| a.into_iter().map(|v| v as f32).collect())
        .collect()
}

/// Positions whose K dot products (and V updates) [`group_ggml_body`] interleaves.
const BLOCK: usize = 4;

/// [`dot_f64`] of `q` with each of the BLOCK `hd`-wide rows of `ks`, interleaved: every
/// result has `dot_f64`'s partial sums, order and rounding.
#[inline(always)]
fn dot_f64_block(q: &[f32], ks: &[f32]) -> [f32; BLOCK] {
    let hd = q.len();
    let mut acc = [[0f64; 4]; BLOCK];
    let whole = hd - hd % 4;
    for i in (0..whole).step_by(4) {
        for (b, a) in acc.iter_mut().enumerate() {
            let k = &ks[b * hd + i..b * hd + i + 4];
            for l in 0..4 {
                a[l] += f64::from(q[i + l]) * f64::from(k[l]);
            }
        }
    }
    let mut out = [0f32; BLOCK];
    for (b, a) in acc.iter().enumerate() {
        let mut s = (a[0] + a[2]) + (a[1] + a[3]);
        for i in whole..hd {
            s += f64::from(q[i]) * f64::from(ks[b * hd + i]);
        }
        out[b] = s as f32;
    }
    out
}

/// `a += w[j] * vs[j]` for the BLOCK rows of `vs` in order, element by element in f64.
#[inline(always)]
fn axpy_f64_block(a: &mut [f64], w: &[f32], vs: &[f32]) {
    let hd = a.len();
    let w: [f64; BLOCK] = std::array::from_fn(|j| f64::from(w[j]));
    for (i, ai) in a.iter_mut().enumerate() {
        let mut x = *ai;
        for (j, &wj) in w.iter().enumerate() {
            x += wj * f64::from(vs[j * hd + i]);
        }
        *ai = x;
    }
}

/// Dot product accumulated in f64 (ggml's scalar `vec_dot_f16` sums in `ggml_float`, i.e.
/// double), in four fixed partial sums so that it vectorizes; rounded to f32.
#[inline(always)]
fn dot_f64(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f64; 4];
    let (ca, cb) = (a.chunks_exact(4), b.chunks_exact(4));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..4 {
            acc[i] += f64::from(x[i]) * f64::from(y[i]);
        }
    }
    let mut s = (acc[0] + acc[2]) + (acc[1] + acc[3]);
    for (x, y) in ra.iter().zip(rb) {
        s += f64::from(*x) * f64::from(*y);
    }
    s as f32
}
