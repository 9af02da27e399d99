//! The Muse Glimmer graph (muse-glimmer.md's op order), run over any backend: entry norm,
//! 52 sandwich-norm blocks with NoPE/SWA attention, QK-norm, sigmoid gate, SwiGLU, and the
//! logit scale followed by the softcap.

use std::path::Path;
use std::sync::Arc;

use muser_gguf::GgufFile;

use crate::attention::{attend, attend_many, AttnJob, AttnShape};
use crate::backend::Backend;
use crate::config::GlimmerConfig;
use crate::error::{Error, Result};
use crate::kv::KvCache;
use crate::ops::{self, Numerics};
use crate::split::SplitPolicy;
use crate::weights::Weights;

/// Which positions' logits a forward pass returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogitsFor {
    Last,
    All,
}

/// Deliberate graph mutations, used only by tests that prove the parity tests can fail.
#[doc(hidden)]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GraphFaults {
    pub softcap_before_scale: bool,
    pub skip_entry_norm: bool,
    /// Apply the sigmoid gate after `attn_output` instead of before (needs q_dim == n_embd).
    pub gate_after_output: bool,
    /// Rotate half-split pairs (i, i + d/2) instead of adjacent pairs (2i, 2i + 1).
    pub half_split_rope: bool,
    pub interleaved_gqa: bool,
    /// Nudge every embedding value by one ulp (measures the network's noise amplification).
    pub perturb_embedding_ulp: bool,
}

/// One sequence's part of a batched forward: its cache, the tokens to run at the cache's next
/// positions, and which of their logits to return.
pub struct Segment<'a> {
    pub kv: &'a mut KvCache,
    pub tokens: &'a [u32],
    pub want: LogitsFor,
}

/// Runs `f(row index, row)` over the `width`-wide rows of `buf`: on the backend's threads when
/// there are several rows, inline for one. Each row's result is the same either way.
fn per_row(b: &dyn Backend, buf: &mut [f32], width: usize, f: &(dyn Fn(usize, &mut [f32]) + Sync)) {
    if buf.len() <= width {
        if !buf.is_empty() {
            f(0, buf);
        }
        return;
    }
    let rows: Vec<std::sync::Mutex<&mut [f32]>> =
        buf.chunks_mut(width).map(std::sync::Mutex::new).collect();
    b.for_each(rows.len(), &|i| {
        let mut r = rows[i].lock().unwrap_or_else(|e| e.into_inner());
        f(i, &mut r);
    });
}

/// A loaded Glimmer model bound to a backend.
pub struct Glimmer {
    pub cfg: GlimmerConfig,
    pub weights: Weights,
    backend: Box<dyn Backend>,
    faults: GraphFaults,
    split: SplitPolicy,
}

impl Glimmer {
    /// Opens a GGUF, reads the model description and validates every tensor.
    pub fn open(path: impl AsRef<Path>, backend: Box<dyn Backend>) -> Result<Glimmer> {
        let file = Arc::new(GgufFile::open(path)?);
        let cfg = GlimmerConfig::from_header(file.header())?;
        Glimmer::from_parts(file, cfg, backend)
    }

    /// Builds a model from an open file and a (possibly edited) description.
    pub fn from_parts(
        file: Arc<GgufFile>,
        cfg: GlimmerConfig,
        backend: Box<dyn Backend>,
    ) -> Result<Glimmer> {
        let weights = Weights::load(file, &cfg)?;
        Ok(Glimmer {
            cfg,
            weights,
            backend,
            faults: GraphFaults::default(),
            split: SplitPolicy::default(),
        })
    }

    /// Chooses when decode batches are split across threads (results are the same bits
    /// either way; only the speed differs).
    pub fn set_split_policy(&mut self, policy: SplitPolicy) {
        self.split = policy;
    }

    /// When decode batches are split across threads.
    pub fn split_policy(&self) -> SplitPolicy {
        self.split
    }

    #[doc(hidden)]
    pub fn set_faults(&mut self, faults: GraphFaults) {
        self.faults = faults;
    }

    pub fn backend(&self) -> &dyn Backend {
        self.backend.as_ref()
    }

    /// A KV cache for this model and backend holding up to `max_positions` positions, with
    /// `slack` extra ring rows so that many positions can be rolled back.
    pub fn new_cache(&self, max_positions: usize, slack: usize) -> KvCache {
        let max = max_positions.min(self.cfg.context_length.max(1));
        KvCache::new(&self.cfg, self.backend.kv_dtype(), max, slack)
    }

    /// Runs `tokens` at positions `kv.len()..` and returns logits (after scale and softcap):
    /// `[n_vocab]` for `Last`, `[tokens.len(), n_vocab]` for `All`.
    pub fn forward(&self, kv: &mut KvCache, tokens: &[u32], want: LogitsFor) -> Result<Vec<f32>> {
        self.forward_batch(&mut [Segment { kv, tokens, want }])
    }

    /// One forward pass over several sequences: every segment's tokens run at its cache's
    /// next positions, all rows through each projection together (one matmul over the batch).
    /// Returns the wanted logits rows in segment order. Each row is computed exactly as it
    /// would be alone (the backends' products are per-row), so batching changes no bit.
    ///
    /// Every segment is checked (token ids, cache room) before any cache is touched.
    pub fn forward_batch(&self, segs: &mut [Segment<'_>]) -> Result<Vec<f32>> {
        let rows = self.check_segments(segs)?;
        if let Some(logits) = self.forward_split(segs) {
            return logits;
        }
        self.forward_rows(self.backend.as_ref(), segs, &rows)
    }

    /// The (segment, position) of every row, after checking that every segment can run
    /// (token ids, cache room): a refusal changes nothing.
    pub(crate) fn check_segments(&self, segs: &[Segment<'_>]) -> Result<Vec<(usize, usize)>> {
        let c = &self.cfg;
        if segs.is_empty() || segs.iter().any(|s| s.tokens.is_empty()) {
            return Err(Error::Invalid("forward of zero tokens".into()));
        }
        // (segment, position) of every row, checked up front so a refusal changes nothing.
        let mut rows = Vec::new();
        for (si, s) in segs.iter().enumerate() {
            let p0 = s.kv.len();
            let n = s.tokens.len();
            if p0 + n > s.kv.max_positions() {
                return Err(Error::CacheFull {
                    position: p0 + n - 1,
                    capacity: s.kv.max_positions(),
                });
            }
            if let Some(&id) = s.tokens.iter().find(|&&id| id as usize >= c.n_vocab) {
                return Err(Error::TokenOutOfRange {
                    id,
                    n_vocab: c.n_vocab,
                });
            }
            rows.extend((0..n).map(|t| (si, p0 + t)));
        }
        Ok(rows)
    }

    /// [`Glimmer::forward_batch`] on backend `b`, for checked segments with rows `rows`.
    pub(crate) fn forward_rows(
        &self,
        b: &dyn Backend,
        segs: &mut [Segment<'_>],
        rows: &[(usize, usize)],
    ) -> Result<Vec<f32>> {
        let c = &self.cfg;
        let num = b.numerics();
        let e = c.n_embd;
        let n = rows.len();

        // Embedding rows, then the weightless entry norm.
        let mut x = vec![0f32; n * e];
        let tokens = segs.iter().flat_map(|s| s.tokens.iter());
        for (row, &id) in x.chunks_mut(e).zip(tokens) {
            self.weights
                .dequantize_row(&self.weights.token_embd, id as usize, row)?;
            if self.faults.perturb_embedding_ulp {
                for v in row.iter_mut() {
                    *v = f32::from_bits(v.to_bits() + 1);
                }
            }
            if !self.faults.skip_entry_norm {
                ops::rms_norm(num, row, None, c.rms_eps);
            }
        }

        for layer in 0..c.n_layer {
            self.layer(b, layer, segs, rows, &mut x)?;
        }

        let mut wanted = Vec::new();
        let mut first = 0;
        for s in segs.iter() {
            let len = s.tokens.len();
            match s.want {
                LogitsFor::Last => wanted.push(first + len - 1),
                LogitsFor::All => wanted.extend(first..first + len),
            }
            first += len;
        }
        let mut h = Vec::with_capacity(wanted.len() * e);
        for &t in &wanted {
            let mut r = x[t * e..(t + 1) * e].to_vec();
            ops::rms_norm(num, &mut r, Some(&self.weights.output_norm), c.rms_eps);
            h.extend_from_slice(&r);
        }
        let mut logits = vec![0f32; wanted.len() * c.n_vocab];
        b.matmul(
            &self.weights,
            &self.weights.output,
            &h,
            wanted.len(),
            &mut logits,
        )?;
        let before = self.faults.softcap_before_scale;
        per_row(b, &mut logits, c.n_vocab, &|_, row| {
            if before {
                ops::scale_softcap(num, row, 1.0, c.softcap);
                ops::scale_softcap(num, row, c.logit_scale, 0.0);
            } else {
                ops::scale_softcap(num, row, c.logit_scale, c.softcap);
            }
        });
        Ok(logits)
    }

    /// One block for all rows of `x`; `rows[t]` is row t's (segment, position).
    fn layer(
        &self,
        b: &dyn Backend,
        layer: usize,
        segs: &mut [Segment<'_>],
        rows: &[(usize, usize)],
        x: &mut [f32],
    ) -> Result<()> {
        let c = &self.cfg;
        let w = &self.weights.layers[layer];
        let num = b.numerics();
        let (e, hd, qd, kvd, ff) = (c.n_embd, c.head_dim, c.q_dim(), c.kv_dim(), c.n_ff);
        let n = x.len() / e;
        let sliding = c.sliding[layer];

        // Pre-attention norm and the four projections.
        let mut h = x.to_vec();
        per_row(b, &mut h, e, &|_, r| {
            ops::rms_norm(num, r, Some(&w.attn_norm), c.rms_eps)
        });
        let mut q = vec![0f32; n * qd];
        let mut k = vec![0f32; n * kvd];
        let mut v = vec![0f32; n * kvd];
        let mut gate = vec![0f32; n * qd];
        b.matmul_many(
            &self.weights,
            &[&w.attn_q, &w.attn_k, &w.attn_v, &w.attn_gate],
            &h,
            n,
            &mut [&mut q, &mut k, &mut v, &mut gate],
        )?;

        // Per-head QK-norm, then RoPE on sliding layers only (full layers are NoPE).
        for (buf, width, norm) in [(&mut q, qd, &w.attn_q_norm), (&mut k, kvd, &w.attn_k_norm)] {
            per_row(b, buf, width, &|t, row| {
                for head in row.chunks_mut(hd) {
                    ops::rms_norm(num, head, Some(norm), c.rms_eps);
                    if sliding {
                        self.rope(num, head, rows[t].1);
                    }
                }
            });
        }

        // Store each row, then let that row attend: a ring never loses a row a later query
        // of the same chunk still needs.
        let shape = AttnShape {
            n_head: c.n_head,
            n_head_kv: c.n_head_kv,
            head_dim: hd,
            scale: c.attn_scale(),
            interleaved_gqa: self.faults.interleaved_gqa,
        };
        let mut attn = vec![0f32; n * qd];
        // Rows of multi-row segments: store, then attend, one row at a time (a ring never
        // loses a row a later query of the same chunk still needs).
        let seg_len: Vec<usize> = segs.iter().map(|s| s.tokens.len()).collect();
        let single = |si: usize| seg_len[si] == 1;
        for (t, &(si, pos)) in rows.iter().enumerate() {
            let kv = &mut *segs[si].kv;
            kv.append(
                layer,
                pos,
                &k[t * kvd..(t + 1) * kvd],
                &v[t * kvd..(t + 1) * kvd],
            )?;
            if !single(si) {
                attend(
                    b,
                    num,
                    shape,
                    kv,
                    layer,
                    pos,
                    &q[t * qd..(t + 1) * qd],
                    &mut attn[t * qd..(t + 1) * qd],
                );
            }
        }
        // One-row segments (decode steps, each its own sequence): all in one dispatch.
        let singles: Vec<usize> = (0..n).filter(|&t| single(rows[t].0)).collect();
        if !singles.is_empty() {
            let jobs: Vec<AttnJob<'_>> = singles
                .iter()
                .map(|&t| AttnJob {
                    kv: &*segs[rows[t].0].kv,
                    layer,
                    pos: rows[t].1,
                    q: &q[t * qd..(t + 1) * qd],
                })
                .collect();
            let mut outs: Vec<&mut [f32]> = attn
                .chunks_mut(qd)
                .enumerate()
                .filter(|(t, _)| single(rows[*t].0))
                .map(|(_, o)| o)
                .collect();
            attend_many(b, num, shape, &jobs, &mut outs);
        }

        // Sigmoid gate, output projection, post-attention norm (eps 1e-8), residual.
        let mut o = vec![0f32; n * e];
        if self.faults.gate_after_output {
            if qd != e {
                return Err(Error::Invalid(
                    "gate_after_output fault needs q_dim == n_embd".into(),
                ));
            }
            b.matmul(&self.weights, &w.attn_output, &attn, n, &mut o)?;
            for (a, g) in o.iter_mut().zip(&gate) {
                *a *= ops::sigmoid(num, *g);
            }
        } else {
            for (a, g) in attn.iter_mut().zip(&gate) {
                *a *= ops::sigmoid(num, *g);
            }
            b.matmul(&self.weights, &w.attn_output, &attn, n, &mut o)?;
        }
        for (xr, or) in x.chunks_mut(e).zip(o.chunks_mut(e)) {
            ops::rms_norm(num, or, Some(&w.post_attn_norm), c.post_norm_eps);
            for (a, b) in xr.iter_mut().zip(or.iter()) {
                *a += *b;
            }
        }

        // Pre-FFN norm, SwiGLU, post-FFN norm (eps 1e-8), residual.
        let mut h = x.to_vec();
        per_row(b, &mut h, e, &|_, r| {
            ops::rms_norm(num, r, Some(&w.ffn_norm), c.rms_eps)
        });
        let mut g = vec![0f32; n * ff];
        let mut u = vec![0f32; n * ff];
        b.matmul_many(
            &self.weights,
            &[&w.ffn_gate, &w.ffn_up],
            &h,
            n,
            &mut [&mut g, &mut u],
        )?;
        // Element-wise, but n_ff wide with an exp each: spread over the backend's threads.
        const CHUNK: usize = 2048;
        let n_chunks = g.len().div_ceil(CHUNK);
        let parts: Vec<std::sync::Mutex<&mut [f32]>> =
            g.chunks_mut(CHUNK).map(std::sync::Mutex::new).collect();
        b.for_each(n_chunks, &|c| {
            let mut gc = parts[c].lock().unwrap_or_else(|e| e.into_inner());
            let uc = &u[c * CHUNK..];
            for (gi, ui) in gc.iter_mut().zip(uc) {
                *gi = ops::swiglu(num, *gi, *ui);
            }
        });
        drop(parts);
        let mut f = vec![0f32; n * e];
        b.matmul(&self.weights, &w.ffn_down, &g, n, &mut f)?;
        for (xr, fr) in x.chunks_mut(e).zip(f.chunks_mut(e)) {
            ops::rms_norm(num, fr, Some(&w.post_ffw_norm), c.post_norm_eps);
            for (a, b) in xr.iter_mut().zip(fr.iter()) {
                *a += *b;
            }
        }
        Ok(())
    }

    fn rope(&self, num: Numerics, head: &mut [f32], pos: usize) {
        let base = self.cfg.rope_freq_base_swa;
        if self.faults.half_split_rope {
            // Gather (i, i + d/2) pairs into adjacent order, rotate, scatter back.
            let d = head.len();
            let mut tmp: Vec<f32> = (0..d / 2)
                .flat_map(|i| [head[i], head[i + d / 2]])
                .collect();
            ops::rope_adjacent(num, &mut tmp, pos, base);
            for i in 0..d / 2 {
                head[i] = tmp[2 * i];
                head[i + d / 2] = tmp[2 * i + 1];
            }
        } else {
            ops::rope_adjacent(num, head, pos, base);
        }
    }
}
