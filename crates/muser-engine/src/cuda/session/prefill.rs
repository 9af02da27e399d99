//! Batched prefill of a `CudaSession`: a prompt's tokens but the last go through the layers
//! in chunks (GEMMs with cuBLAS over weights dequantized on the device, the other ops in
//! `kernels/prefill.cu`), writing their KV rows; the last token then runs as a decode step,
//! which gives the logits. Held to the oracle's bar like the decode step (tested on the
//! device).

use cudarc::driver::{CudaSlice, LaunchConfig};

use super::{kernel, CudaSession};
use crate::cuda::launch::{launch_ex, KArg as Arg};
use crate::error::{Error, Result};

use super::step::ptr;

/// Tokens per chunk at most (each chunk is also at most the shortest cache, so that storing its
/// rows never overwrites a row one of its tokens attends to).
pub const PREFILL_CHUNK: usize = 1024;

/// Fewer tokens than this before the last go one decode step each, where every chunk
/// dequantizes the weights: a chunk then costs about the same whatever its length, measured on
/// the 30B file (H200, `cuda_test pfsmall`, bench/runs/2026-11-30-h200-k final2): ~78 ms a
/// chunk against 5.6 ms a decode step; 16 tokens 78.6 ms batched, 89.3 ms one by one.
pub const MIN_BATCH: usize = 16;

/// The same where the device keeps f16 copies of the weights (`Cuda::keep_prefill_weights`):
/// a short chunk costs ~27 ms there (bench/runs/2026-11-30-h200-l r6: 4 tokens 26.9 ms batched
/// against 22.4 one by one, 8 tokens 27.3 against 45.0).
pub const MIN_BATCH_KEPT: usize = 5;

/// The error for a session whose batched chunk failed part-way.
pub(super) fn poisoned() -> Error {
    Error::Cuda(
        "a batched prefill chunk failed part-way and may have left half-written KV rows: \
         reset the sequence"
            .into(),
    )
}

/// Device buffers of one chunk (`m` tokens at most).
pub(super) struct PrefillScratch {
    m: usize,
    x: CudaSlice<f32>,
    h16: CudaSlice<u16>,
    q: CudaSlice<f32>,
    k: CudaSlice<f32>,
    v: CudaSlice<f32>,
    gate: CudaSlice<f32>,
    kc: CudaSlice<u16>,
    vc: CudaSlice<u16>,
    a16: CudaSlice<u16>,
    o: CudaSlice<f32>,
    g: CudaSlice<f32>,
    u: CudaSlice<f32>,
    s16: CudaSlice<u16>,
    /// pf_swiglu's power-of-two scale per row.
    oscale: CudaSlice<f32>,
    w16: CudaSlice<u16>,
    cs: CudaSlice<f32>,
    slots: CudaSlice<i32>,
}

fn blocks(n: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Tokens per batched chunk for caches whose shortest window is `shortest` (0: token by
/// token): at most `PREFILL_CHUNK`, and never more than a ring holds, so that a chunk's rows
/// never overwrite a row one of its tokens attends to.
fn chunk_len_for(shortest: usize, batched: bool) -> usize {
    if batched {
        PREFILL_CHUNK.min(shortest)
    } else {
        0
    }
}

impl CudaSession<'_> {
    /// Tokens per batched chunk for this session (0: batched prefill unavailable: no cuBLAS,
    /// or a head geometry pf_attend_g does not take).
    fn chunk_len(&self) -> usize {
        let c = &self.model.cfg;
        let shortest = self
            .layers
            .iter()
            .map(|l| l.place.window)
            .min()
            .unwrap_or(0);
        let geometry = matches!(c.head_dim, 64 | 128)
            && c.n_head_kv > 0
            && c.n_head % c.n_head_kv == 0
            && c.n_head / c.n_head_kv <= 32;
        chunk_len_for(shortest, self.cuda.batched_prefill() && geometry)
    }

    /// Runs `tokens` at the next positions and returns the last one's logits: every token but
    /// the last in batched chunks where available and at least `MIN_BATCH` of them
    /// (`MIN_BATCH_KEPT` where the device keeps f16 copies of the weights; else one decode step
    /// each), the last as a decode step.
    pub fn prefill(&mut self, tokens: &[u32]) -> Result<Vec<f32>> {
        let min = if self.cuda.keeps_prefill_weights() {
            MIN_BATCH_KEPT
        } else {
            MIN_BATCH
        };
        self.prefill_with(tokens, min)
    }

    /// `prefill` with another threshold for the batched path (tests and measurements).
    #[doc(hidden)]
    pub fn prefill_with(&mut self, tokens: &[u32], min_batch: usize) -> Result<Vec<f32>> {
        let Some((&last, rest)) = tokens.split_last() else {
            return Err(Error::Invalid("prefill of no tokens".into()));
        };
        if self.poisoned {
            return Err(poisoned());
        }
        let end = self.next + tokens.len();
        if end > self.max_positions {
            return Err(Error::CacheFull {
                position: end - 1,
                capacity: self.max_positions,
            });
        }
        let n_vocab = self.model.cfg.n_vocab;
        if let Some(&id) = tokens.iter().find(|&&t| t as usize >= n_vocab) {
            return Err(Error::TokenOutOfRange { id, n_vocab });
        }
        let chunk = self.chunk_len();
        let mut done = 0;
        if chunk > 0 && rest.len() >= min_batch.max(1) {
            for c in rest.chunks(chunk) {
                // Without room for the scratch, the rest goes token by token.
                let Some(mut p) = self.prefill_scratch(c.len()) else {
                    break;
                };
                let r = self.prefill_chunk_with(c, &mut p);
                self.pf = Some(p);
                r?;
                done += c.len();
            }
        }
        for &t in &rest[done..] {
            self.step(t)?;
        }
        self.step(last)
    }

    /// The scratch for chunks of up to `m` tokens (allocated on first use, kept for the
    /// session); `None` when the device has no room for it.
    fn prefill_scratch(&mut self, m: usize) -> Option<PrefillScratch> {
        if let Some(p) = self.pf.take() {
            if p.m >= m {
                return Some(p);
            }
        }
        self.alloc_scratch(PREFILL_CHUNK.max(m)).ok()
    }

    fn alloc_scratch(&self, m: usize) -> Result<PrefillScratch> {
        let c = &self.model.cfg;
        let st = self.cuda.stream();
        let f = |n: usize| {
            st.alloc_zeros::<f32>(n.max(1))
                .map_err(super::cuda_err("allocating the prefill scratch"))
        };
        let h = |n: usize| {
            st.alloc_zeros::<u16>(n.max(1))
                .map_err(super::cuda_err("allocating the prefill scratch"))
        };
        let w = &self.model.weights;
        let largest = w
            .layers
            .iter()
            .flat_map(crate::weights::LayerWeights::matrices)
            .map(|m| m.n_in * m.n_out)
            .max()
            .unwrap_or(0);
        let wide = c.n_embd.max(c.q_dim());
        Ok(PrefillScratch {
            m,
            x: f(m * c.n_embd)?,
            h16: h(m * wide)?,
            q: f(m * c.q_dim())?,
            k: f(m * c.kv_dim())?,
            v: f(m * c.kv_dim())?,
            gate: f(m * c.q_dim())?,
            kc: h(m * c.kv_dim())?,
            vc: h(m * c.kv_dim())?,
            a16: h(m * c.q_dim())?,
            o: f(m * c.n_embd)?,
            g: f(m * c.n_ff)?,
            u: f(m * c.n_ff)?,
            s16: h(m * c.n_ff)?,
            oscale: f(m)?,
            w16: h(largest)?,
            cs: f(m * c.head_dim)?,
            slots: st
                .alloc_zeros::<i32>((m * c.n_layer).max(1))
                .map_err(super::cuda_err("allocating the prefill scratch"))?,
        })
    }

    /// One chunk of tokens (at most `chunk_len`) through every layer: their KV rows land in
    /// the caches; the placements and the position advance only when all went through (a
    /// failure after the first kernel leaves the session `poisoned`); no logits.
    fn prefill_chunk_with(&mut self, tokens: &[u32], p: &mut PrefillScratch) -> Result<()> {
        let (cuda, model) = (self.cuda, self.model);
        let c = &model.cfg;
        let st = cuda.stream().clone();
        let m = tokens.len();
        let p0 = self.next;
        let (n, hd) = (c.n_embd, c.head_dim);
        if m == 0 || m > p.m || self.layers.iter().any(|l| m > l.place.window) {
            return Err(Error::Invalid(format!(
                "a prefill chunk of {m} tokens: more than a cache window or the scratch holds"
            )));
        }
        let err = super::cuda_err("uploading prefill inputs");
        // The embedding rows (dequantized on the host, as the decode step's fallback) and the
        // RoPE table of the chunk's positions (f64 angles rounded to f32, as `prepare`).
        let mut x = vec![0f32; m * n];
        for (t, &tok) in tokens.iter().enumerate() {
            model.weights.dequantize_row(
                &model.weights.token_embd,
                tok as usize,
                &mut x[t * n..(t + 1) * n],
            )?;
        }
        st.memcpy_htod(&x, &mut p.x).map_err(err)?;
        let mut cs = Vec::with_capacity(m * hd);
        for t in 0..m {
            let pos = (p0 + t) as f64;
            for i in 0..hd / 2 {
                let theta = pos * f64::from(c.rope_freq_base_swa).powf(-2.0 * i as f64 / hd as f64);
                let (s, co) = theta.sin_cos();
                cs.extend([co as f32, s as f32]);
            }
        }
        st.memcpy_htod(&cs, &mut p.cs)
            .map_err(super::cuda_err("uploading prefill inputs"))?;
        // Every layer's placement before the chunk (what its attention reads), then, on a
        // copy, the slots the chunk's rows take (stored after each layer's attention), one
        // upload for the chunk.
        let pre: Vec<_> = self.layers.iter().map(|l| l.place).collect();
        for (layer, place) in pre.iter().enumerate() {
            if place.origin_logical + place.len != p0 {
                return Err(Error::CacheDiscontinuity {
                    layer,
                    expected: place.origin_logical + place.len,
                    got: p0,
                });
            }
        }
        let mut post = pre.clone();
        let mut slots = Vec::with_capacity(m * c.n_layer);
        for place in &mut post {
            slots.extend((0..m).map(|t| place.append(p0 + t) as i32));
        }
        st.memcpy_htod(&slots, &mut p.slots)
            .map_err(super::cuda_err("uploading prefill slots"))?;
        self.poisoned = true;
        // Entry norm (weightless, then layer 0's attn_norm) into h16.
        self.pf_norm(p, m, 1, None, &self.layers[0].norms[0], false)?;
        // The query heads of a KV group share each staged tile (`chunk_len` allows head_dim
        // 64 or 128 and at most 32 heads a group).
        let per_block = c.n_head / c.n_head_kv;
        // The tensor-core kernel where DecodeTuning::prefill_mma and the device allow: 4
        // tokens a block, up to 16 heads of a group (groups of more: several blocks).
        let mma = cuda.decode_tuning().prefill_mma
            && cuda.compute_capability.0 >= 8
            && (per_block <= 16 || per_block % 16 == 0);
        let attend = match (mma, hd) {
            (true, 64) => "pf_attend_mma_64",
            (true, _) => "pf_attend_mma_128",
            (false, 64) => "pf_attend_g_64",
            (false, _) => "pf_attend_g_128",
        };
        let attend_cfg = if mma {
            LaunchConfig {
                grid_dim: (
                    m.div_ceil(4) as u32,
                    (c.n_head_kv * per_block.div_ceil(16)) as u32,
                    1,
                ),
                block_dim: (128, 1, 1),
                shared_mem_bytes: 0,
            }
        } else {
            LaunchConfig {
                grid_dim: (m as u32, (c.n_head / per_block) as u32, 1),
                block_dim: (32 * per_block as u32, 1, 1),
                shared_mem_bytes: 0,
            }
        };
        for (l, &place) in pre.iter().enumerate() {
            let w = &model.weights.layers[l];
            for (mat, y) in [
                (&w.attn_q, &mut p.q),
                (&w.attn_k, &mut p.k),
                (&w.attn_v, &mut p.v),
                (&w.attn_gate, &mut p.gate),
            ] {
                cuda.prefill_product(&model.weights, mat, &p.h16, m, &mut p.w16, y)?;
            }
            let lay = &self.layers[l];
            let args = [
                Arg::P(ptr(&p.q, &st)),
                Arg::P(ptr(&p.k, &st)),
                Arg::P(ptr(&p.v, &st)),
                Arg::P(ptr(&lay.norms[1], &st)),
                Arg::P(ptr(&lay.norms[2], &st)),
                Arg::I(c.n_head as i32),
                Arg::I(c.n_head_kv as i32),
                Arg::I(hd as i32),
                Arg::F(c.rms_eps),
                Arg::P(ptr(&p.cs, &st)),
                Arg::I(i32::from(c.sliding[l])),
                Arg::P(ptr(&p.kc, &st)),
                Arg::P(ptr(&p.vc, &st)),
            ];
            let cfg = LaunchConfig {
                grid_dim: (m as u32, (c.n_head + 2 * c.n_head_kv) as u32, 1),
                block_dim: (64, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: q holds m × q_dim, k and v m × kv_dim values, kc and vc m × kv_dim
            // halves, cs m × head_dim values, the norm weights head_dim values.
            unsafe { launch_ex(&st, kernel(cuda, "pf_qk")?, cfg, &args, 1)? };
            // Attention over the cache's rows before the chunk and the chunk's own (`place`:
            // the layer's placement before the chunk).
            let args = [
                Arg::P(ptr(&p.q, &st)),
                Arg::P(ptr(&lay.k, &st)),
                Arg::P(ptr(&lay.v, &st)),
                Arg::P(ptr(&p.kc, &st)),
                Arg::P(ptr(&p.vc, &st)),
                Arg::P(ptr(&p.gate, &st)),
                Arg::P(ptr(&p.a16, &st)),
                Arg::I(c.n_head as i32),
                Arg::I(c.n_head_kv as i32),
                Arg::I(p0 as i32),
                Arg::I(place.origin_logical as i32),
                Arg::I(place.origin_physical as i32),
                Arg::I(place.capacity as i32),
                Arg::I(place.window as i32),
                Arg::F(c.attn_scale()),
                // The tensor-core kernel's chunk length (the other takes it from its grid).
                Arg::I(m as i32),
            ];
            let n_args = if mma { args.len() } else { args.len() - 1 };
            // SAFETY: q and gate hold m × q_dim values, a16 m × q_dim halves, kc / vc m ×
            // kv_dim; the cache rows read are those of positions [lo, p0), which the placement
            // holds (checked above), at slots below the capacity; a block's heads are its KV
            // group's (per_block = n_head / n_head_kv; the tensor-core kernel's 16-head
            // sub-blocks divide it); the tensor-core kernel's tokens past m do no work.
            unsafe { launch_ex(&st, kernel(cuda, attend)?, attend_cfg, &args[..n_args], 1)? };
            // The chunk's rows into the cache, at the slots the placement gave them.
            let args = [
                Arg::P(ptr(&p.kc, &st)),
                Arg::P(ptr(&p.vc, &st)),
                Arg::P(ptr(&lay.k, &st)),
                Arg::P(ptr(&lay.v, &st)),
                Arg::P(ptr(&p.slots, &st) + (4 * m * l) as u64),
                Arg::I(c.kv_dim() as i32),
            ];
            // SAFETY: m slots below the capacity (from the placement), m rows of kv_dim halves.
            unsafe { launch_ex(&st, kernel(cuda, "pf_store")?, blocks(m), &args, 1)? };
            // The last layer's output and FFN would only feed the hidden states after it,
            // which the chunk does not need (its last token is the decode step's).
            if l + 1 == c.n_layer {
                break;
            }
            // Output projection, post-attention norm tail and the FFN norm.
            cuda.prefill_product(
                &model.weights,
                &w.attn_output,
                &p.a16,
                m,
                &mut p.w16,
                &mut p.o,
            )?;
            self.pf_norm(
                p,
                m,
                2,
                Some(&self.layers[l].norms[3]),
                &self.layers[l].norms[4],
                false,
            )?;
            let wts = &model.weights;
            cuda.prefill_product(wts, &w.ffn_gate, &p.h16, m, &mut p.w16, &mut p.g)?;
            cuda.prefill_product(wts, &w.ffn_up, &p.h16, m, &mut p.w16, &mut p.u)?;
            let args = [
                Arg::P(ptr(&p.g, &st)),
                Arg::P(ptr(&p.u, &st)),
                Arg::P(ptr(&p.s16, &st)),
                Arg::P(ptr(&p.oscale, &st)),
                Arg::I(c.n_ff as i32),
            ];
            // SAFETY: g and u hold m × n_ff values, s16 m × n_ff halves, oscale m values.
            unsafe { launch_ex(&st, kernel(cuda, "pf_swiglu")?, blocks(m), &args, 1)? };
            // SwiGLU's rows went in scaled by powers of two; pf_norm scales the result back.
            cuda.prefill_product(wts, &w.ffn_down, &p.s16, m, &mut p.w16, &mut p.o)?;
            // Post-FFN norm tail and the next layer's attn_norm.
            let (post_w, next) = (&self.layers[l].norms[5], &self.layers[l + 1].norms[0]);
            self.pf_norm(p, m, 2, Some(post_w), next, true)?;
        }
        for (lay, place) in self.layers.iter_mut().zip(post) {
            lay.place = place;
        }
        self.next = p0 + m;
        self.poisoned = false;
        Ok(())
    }

    /// `pf_norm` over the chunk's m rows: mode 1 (entry) or 2 (post-norm tail with weights
    /// `post`; with `scaled`, o times pf_swiglu's row scales), then the norm with weights
    /// `wn`, into h16.
    fn pf_norm(
        &self,
        p: &mut PrefillScratch,
        m: usize,
        mode: i32,
        post: Option<&CudaSlice<f32>>,
        wn: &CudaSlice<f32>,
        scaled: bool,
    ) -> Result<()> {
        let c = &self.model.cfg;
        let st = self.cuda.stream();
        let args = [
            Arg::P(ptr(&p.x, st)),
            Arg::P(ptr(&p.o, st)),
            Arg::P(if scaled { ptr(&p.oscale, st) } else { 0 }),
            Arg::P(post.map_or(0, |w| ptr(w, st))),
            Arg::F(c.post_norm_eps),
            Arg::P(ptr(wn, st)),
            Arg::F(c.rms_eps),
            Arg::P(ptr(&p.h16, st)),
            Arg::I(c.n_embd as i32),
            Arg::I(mode),
        ];
        // SAFETY: x and o hold m × n_embd values, h16 m × n_embd halves, oscale m values, the
        // weights n_embd.
        unsafe { launch_ex(st, kernel(self.cuda, "pf_norm")?, blocks(m), &args, 1) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_fit_the_shortest_ring_and_the_cap() {
        assert_eq!(chunk_len_for(2048, true), PREFILL_CHUNK);
        assert_eq!(chunk_len_for(8, true), 8);
        assert_eq!(chunk_len_for(PREFILL_CHUNK, true), PREFILL_CHUNK);
        assert_eq!(chunk_len_for(2048, false), 0);
        // A prompt of 3,000 tokens (2,999 batched) with 2,048-row rings.
        let n = chunk_len_for(2048, true);
        let lens: Vec<usize> = (0..2999usize)
            .collect::<Vec<_>>()
            .chunks(n)
            .map(<[usize]>::len)
            .collect();
        assert!(lens.iter().all(|&c| c <= 2048));
        assert_eq!(lens.iter().sum::<usize>(), 2999);
    }
}
