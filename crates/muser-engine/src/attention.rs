//! Causal attention of one query row over the cached window, GQA, in both numerics.
//!
//! `Exact`: f64 scores, softmax and weighted sum over the cached rows. `Ggml`: the rounding of
//! llama.cpp's CPU graph without flash attention: Q rounded to the cache type before the K
//! dot product, f32 scores scaled then soft-maxed in f32 with a f64 sum, probabilities rounded
//! to the cache type before the V product. Rows are visited oldest first in both, so the result
//! does not depend on where a ring happens to keep them.

use half::f16;

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

/// `q: [n_head * head_dim]` of the query at `pos` → `out: [n_head * head_dim]`.
pub fn attend(
    num: Numerics,
    shape: AttnShape,
    kv: &KvCache,
    layer: usize,
    pos: usize,
    q: &[f32],
    out: &mut [f32],
) {
    let hd = shape.head_dim;
    let gqa = shape.n_head / shape.n_head_kv;
    let visible = kv.visible(layer, pos);
    let n = visible.len();
    let mut scores = vec![0f64; n];
    let mut probs32 = vec![0f32; n];
    for h in 0..shape.n_head {
        let kvh = if shape.interleaved_gqa {
            h % shape.n_head_kv
        } else {
            h / gqa
        };
        let qh = &q[h * hd..(h + 1) * hd];
        let oh = &mut out[h * hd..(h + 1) * hd];
        let kr = kvh * hd..(kvh + 1) * hd;
        match num {
            Numerics::Exact => {
                for (s, p) in scores.iter_mut().zip(visible.clone()) {
                    let (k, _) = kv.row(layer, p);
                    let mut dot = 0f64;
                    for (i, &qv) in qh.iter().enumerate() {
                        dot += f64::from(qv) * f64::from(k.get(kr.start + i));
                    }
                    *s = dot * f64::from(shape.scale);
                }
                let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let mut sum = 0f64;
                for s in scores.iter_mut() {
                    *s = (*s - max).exp();
                    sum += *s;
                }
                let mut acc = vec![0f64; hd];
                for (s, p) in scores.iter().zip(visible.clone()) {
                    let (_, v) = kv.row(layer, p);
                    let w = s / sum;
                    for (i, a) in acc.iter_mut().enumerate() {
                        *a += w * f64::from(v.get(kr.start + i));
                    }
                }
                for (o, a) in oh.iter_mut().zip(&acc) {
                    *o = *a as f32;
                }
            }
            Numerics::Ggml => {
                let round = |x: f32| match kv.dtype() {
                    KvDtype::F16 => f16::from_f32(x).to_f32(),
                    KvDtype::F32 => x,
                };
                let qr: Vec<f32> = qh.iter().map(|&x| round(x)).collect();
                for (s, p) in probs32.iter_mut().zip(visible.clone()) {
                    let (k, _) = kv.row(layer, p);
                    *s = dot_row(&qr, k, kr.start) * shape.scale;
                }
                let max = probs32.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let mut sum = 0f64;
                for s in probs32.iter_mut() {
                    *s = (*s - max).exp();
                    sum += f64::from(*s);
                }
                let inv = (1.0 / sum) as f32;
                for s in probs32.iter_mut() {
                    *s = round(*s * inv);
                }
                for (i, o) in oh.iter_mut().enumerate() {
                    let mut acc = 0f64;
                    for (&w, p) in probs32.iter().zip(visible.clone()) {
                        let (_, v) = kv.row(layer, p);
                        acc += f64::from(w) * f64::from(v.get(kr.start + i));
                    }
                    *o = acc as f32;
                }
            }
        }
    }
}

fn dot_row(q: &[f32], k: Row<'_>, start: usize) -> f32 {
    let mut acc = 0f64;
    match k {
        Row::F16(r) => {
            for (a, b) in q.iter().zip(&r[start..start + q.len()]) {
                acc += f64::from(*a) * f64::from(b.to_f32());
            }
        }
        Row::F32(r) => {
            for (a, b) in q.iter().zip(&r[start..start + q.len()]) {
                acc += f64::from(*a) * f64::from(*b);
            }
        }
    }
    acc as f32
}
