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
    let hd = shape.head_dim;
    let visible = kv.visible(layer, pos);
    let n = visible.len();
    let round = |x: f32| match kv.dtype() {
        KvDtype::F16 => f16::from_f32(x).to_f32(),
        KvDtype::F32 => x,
    };
    let qr: Vec<Vec<f32>> = qs
        .iter()
        .map(|qh| qh.iter().map(|&x| round(x)).collect())
        .collect();
    let mut buf = vec![0f32; hd];
    let mut scores = vec![vec![0f32; n]; qs.len()];
    for (j, p) in visible.clone().enumerate() {
        head_f32(kv.row(layer, p).0, g, hd, &mut buf);
        for (s, qh) in scores.iter_mut().zip(&qr) {
            s[j] = dot_f64(qh, &buf) * shape.scale;
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
        s.iter_mut().for_each(|x| *x = round(*x * inv));
    }
    let mut acc = vec![vec![0f64; hd]; qs.len()];
    for (j, p) in visible.enumerate() {
        head_f32(kv.row(layer, p).1, g, hd, &mut buf);
        for (a, s) in acc.iter_mut().zip(&scores) {
            let w = f64::from(s[j]);
            for (ai, &v) in a.iter_mut().zip(&buf) {
                *ai += w * f64::from(v);
            }
        }
    }
    acc.into_iter()
        .map(|a| a.into_iter().map(|v| v as f32).collect())
        .collect()
}

/// Dot product accumulated in f64 (ggml's scalar `vec_dot_f16` sums in `ggml_float`, i.e.
/// double), in four fixed partial sums so that it vectorizes; rounded to f32.
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
