//! The kernels of one decode step, in order, on the session's stream (what the CUDA graph
//! captures). Eight launches per layer: the norm tail (residual + post-norm, next norm, int8
//! quantization) as one kernel, Q/K/V/gate as one segment matvec with QK-norm + RoPE + KV
//! store as its cluster epilogue (a separate kernel where that does not apply), split-K
//! attention (grouped: the query heads of a KV group share each row load) and its
//! merge (+ sigmoid gate + quantization), the output projection, the next norm tail, FFN
//! gate/up with SwiGLU (+ quantization) folded in (the segment matvec and a separate SwiGLU
//! kernel where that does not apply), down.
//! Matrices of other types than Q4_K/Q6_K take the f32-activation kernels instead. The norm
//! tails and the short-cache attention carry extra blocks that prefetch part of the next
//! matvec's weights into L2 (`prefetch.rs`, `DecodeTuning::l2_prefetch`).

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, LaunchConfig};

use super::{elems, kernel, one_block, splits_of, CudaSession};
use crate::cuda::launch::{launch_ex, KArg as Arg};
use crate::cuda::seg::{QkvFold, SEG_TYPES};
use crate::cuda::{Cuda, Q8Act, Seg, SegKernel};
use crate::error::Result;
use crate::model::Glimmer;
use crate::weights::{LayerWeights, Matrix};
use muser_gguf::GgmlType;

/// A device buffer's address as a kernel argument (0 for none). Event tracking is off for
/// the session's context, so the guard cudarc returns records nothing.
pub(super) fn ptr<T>(s: &CudaSlice<T>, st: &CudaStream) -> u64 {
    let (p, _guard) = s.device_ptr(st);
    p
}

/// Launches decode kernel `name` with `args`.
///
/// # Safety
/// The arguments must match the kernel's parameters, and every address must be a live
/// buffer as large as the kernel indexes for the sizes passed with it.
pub(super) unsafe fn launch(
    cuda: &Cuda,
    name: &str,
    cfg: LaunchConfig,
    args: &[Arg],
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { launch_ex(cuda.stream(), kernel(cuda, name)?, cfg, args, 1) }
}

/// Blocks of the cluster norm tail (`norm_cluster.cu`'s NC_BLOCKS; 8 is the portable cluster
/// size limit).
const NORM_CLUSTER: u32 = 8;

/// The end of a profile label whose matvec launch took its tail-prefetch kernel
/// (`DecodeTuning::tail_prefetch`).
pub const TAIL_PREFETCH_LABEL: &str = " + tail prefetch";

/// A segment-kernel product: the weights on the device, the matrix, the output.
type SegJob<'a> = (Arc<CudaSlice<u8>>, &'a Matrix, &'a mut CudaSlice<f32>);

/// The LM head's epilogue in `project`: the logit scale and softcap, and the device address
/// of the step's argmax key words (`Cuda::matvec1_flat_q6ks`'s `key`; 0: none).
#[derive(Clone, Copy)]
struct Post {
    scale: f32,
    cap: f32,
    key: u64,
}

/// Products of one activation row: Q4_K/Q6_K matrices as one segment launch over the int8
/// row `act` (when given), the others through the f32-activation kernels. With `fold` (the
/// Q, K, V and gate projections), through `Cuda::matvec1_q8_qkv` where it applies; returns
/// whether it did (then QK-norm, RoPE and the KV store are done). `fold`'s addresses must be
/// live buffers as `QkvFold` describes. With `post` (the LM head), returns whether the flat
/// kernel ran, which also folds the greedy argmax into `post.key`'s key; its words must be
/// live (the step's parameters). `pf`: L2 prefetch ranges (`prefetch_span`'s) for the
/// launch's blocks to issue once done, where its kernel has a tail-prefetch entry.
#[allow(clippy::too_many_arguments)]
fn project(
    cuda: &Cuda,
    model: &Glimmer,
    prof: &super::Prof,
    mats: Vec<(&Matrix, &mut CudaSlice<f32>)>,
    x: &CudaSlice<f32>,
    act: Option<(&Q8Act, SegKernel)>,
    post: Option<Post>,
    fold: Option<&QkvFold>,
    pf: Option<&[Arg]>,
) -> Result<bool> {
    let mut seg_w: Vec<SegJob<'_>> = Vec::new();
    for (m, y) in mats {
        if act.is_some() && SEG_TYPES.contains(&m.ty) {
            let w = if m.ty == GgmlType::Q6_K {
                cuda.device_q6k_split(&model.weights, m, q6_units(cuda, m, post))?
            } else {
                cuda.device_weights(&model.weights, m)?
            };
            seg_w.push((w, m, y));
        } else if let (Some((a, _)), GgmlType::Q5_K) = (act, m.ty) {
            // Q5_K over the same int8 row, one launch of its own (`Cuda::matvec1_q5k`).
            let w = cuda.device_weights(&model.weights, m)?;
            let mut seg = Seg {
                ty: m.ty,
                split: None,
                w: w.as_view(),
                y: y.as_view_mut(),
                n_out: m.n_out,
            };
            let rows = crate::cuda::q5k_rows(m.n_in, m.n_out);
            cuda.matvec1_q5k(&mut seg, a, m.n_in, rows)?;
            let bytes = m.row_bytes() * m.n_out;
            super::mark(cuda, prof, bytes, || {
                format!("mv {} {} (q5k)", short(&m.name), m.ty)
            })?;
        } else {
            super::matvec(cuda, model, m, x, y)?;
            let bytes = m.row_bytes() * m.n_out;
            super::mark(cuda, prof, bytes, || {
                format!("mv {} {}", short(&m.name), m.ty)
            })?;
        }
    }
    if let (Some((act, kern)), false) = (act, seg_w.is_empty()) {
        let n_in = seg_w[0].1.n_in;
        let label: Vec<String> = seg_w
            .iter()
            .map(|(_, m, _)| format!("{} {}", short(&m.name), m.ty))
            .collect();
        let mut segs: Vec<Seg<'_>> = seg_w
            .iter_mut()
            .map(|(w, m, y)| Seg {
                ty: m.ty,
                split: (m.ty == GgmlType::Q6_K).then(|| q6_units(cuda, m, post)),
                w: w.as_view(),
                y: y.as_view_mut(),
                n_out: m.n_out,
            })
            .collect();
        let folded = match fold {
            // SAFETY: the caller's contract on `fold`.
            Some(f) => unsafe { cuda.matvec1_q8_qkv(kern, &mut segs, act, n_in, f, pf)? }.is_some(),
            None => false,
        };
        // The LM head as flat warps (DecodeTuning::lm_flat), where it applies.
        let flat = match post {
            // SAFETY: the key words are live (the caller's contract).
            Some(p) if !folded && cuda.decode_tuning().lm_flat && segs.len() == 1 => unsafe {
                cuda.matvec1_flat_q6ks(&mut segs[0], act, n_in, Some((p.scale, p.cap)), p.key)?
                    .is_some()
            },
            _ => false,
        };
        // One matrix without the segment dispatch (DecodeTuning::one_matrix), where it applies.
        let one = !folded
            && !flat
            && post.is_none()
            && cuda.decode_tuning().one_matrix
            && segs.len() == 1
            && cuda
                .matvec1_one(kern, &mut segs[0], act, n_in, pf)?
                .is_some();
        if !folded && !one && !flat {
            cuda.matvec1_q8(kern, &mut segs, act, n_in, post.map(|p| (p.scale, p.cap)))?;
        }
        let bytes = seg_w.iter().map(|(_, m, _)| m.row_bytes() * m.n_out).sum();
        super::mark(cuda, prof, bytes, || {
            let fold = if folded { " + qk_norm_rope_store" } else { "" };
            let tp = if pf.is_some() && (folded || one) {
                TAIL_PREFETCH_LABEL
            } else {
                ""
            };
            let one = if one { " (one)" } else { "" };
            let flat = if flat { " (flat)" } else { "" };
            format!("mv {}{fold}{one}{flat}{tp}", label.join(" + "))
        })?;
        return Ok(folded || flat);
    }
    Ok(false)
}

/// Units of the split layout `project` reads Q6_K matrix `m` in: the LM head's (`post` set)
/// per `Cuda::lm_units`, else 1.
fn q6_units(cuda: &Cuda, m: &Matrix, post: Option<Post>) -> usize {
    match post {
        Some(_) => cuda.lm_units(m.n_in),
        None => 1,
    }
}

/// `blk.12.attn_q.weight` → `attn_q`.
fn short(name: &str) -> &str {
    let s = name.strip_suffix(".weight").unwrap_or(name);
    s.rsplit('.').next().unwrap_or(s)
}

impl CudaSession<'_> {
    /// The int8 activation row's addresses, or nulls when the products take f32 activations.
    fn q8_args(&self, q8: bool) -> [Arg; 3] {
        let st = self.cuda.stream();
        if q8 {
            [
                Arg::P(ptr(&self.act.qa, st)),
                Arg::P(ptr(&self.act.da, st)),
                Arg::P(ptr(&self.act.sa, st)),
            ]
        } else {
            [Arg::P(0); 3]
        }
    }

    /// `mode` as the kernel's: 0 plain norm, 1 weightless entry norm first, 2 post-norm tail
    /// (`o` with weights `wp`) first. Writes `h` and, when `q8`, its int8 row.
    /// `pf`: the L2 prefetch ranges of the next matvec (`prefetch_args`), fetched by extra
    /// clusters of the cluster launch (`DecodeTuning::l2_prefetch`).
    fn norm_tail(
        &self,
        mode: i32,
        wp: Option<&CudaSlice<f32>>,
        wn: &CudaSlice<f32>,
        q8: bool,
        pf: Option<Vec<Arg>>,
    ) -> Result<()> {
        let c = &self.model.cfg;
        let st = self.cuda.stream();
        let s = &self.s;
        let [qa, da, sa] = self.q8_args(q8);
        let args = [
            Arg::P(ptr(&s.x, st)),
            Arg::P(ptr(&s.o, st)),
            Arg::P(wp.map_or(0, |w| ptr(w, st))),
            Arg::F(c.post_norm_eps),
            Arg::P(ptr(wn, st)),
            Arg::F(c.rms_eps),
            Arg::P(ptr(&s.h, st)),
            qa,
            da,
            sa,
            Arg::I(c.n_embd as i32),
            Arg::I(mode),
        ];
        let n = c.n_embd;
        let tune = self.cuda.decode_tuning();
        if tune.cluster_norm && self.cuda.compute_capability.0 >= 9 && n % 256 == 0 && n <= 65_536 {
            // Eight blocks of n / 64 threads (rounded up to whole warps), 8 values each, and
            // the prefetching clusters after them.
            let extra = match (&pf, tune.l2_prefetch) {
                (Some(_), Some(p)) => p.blocks.next_multiple_of(NORM_CLUSTER),
                _ => 0,
            };
            let with_pf = extra > 0;
            let cfg = LaunchConfig {
                grid_dim: (NORM_CLUSTER + extra, 1, 1),
                block_dim: ((n / 64).div_ceil(32) as u32 * 32, 1, 1),
                shared_mem_bytes: 0,
            };
            // Post-norm tails with both row sums from one cluster exchange when chosen.
            let one = tune.norm_one_sum && mode == 2;
            let name = match (one, with_pf) {
                (true, false) => "norm_tail_q8_cl1",
                (false, false) => "norm_tail_q8_cl",
                (true, true) => "norm_tail_q8_cl1_pf",
                (false, true) => "norm_tail_q8_cl_pf",
            };
            let f = kernel(self.cuda, name)?;
            let mut args = args.to_vec();
            if with_pf {
                args.extend(pf.into_iter().flatten());
            }
            // SAFETY: as below; block b < NC_BLOCKS touches values [b n / 8, (b + 1) n / 8)
            // only, and those blocks are the first cluster of NORM_CLUSTER blocks (the
            // kernel's NC_BLOCKS); the `_pf` kernels' other clusters only prefetch the ranges
            // of `prefetch_args` (live weight buffers, the bytes within them). The kernels of
            // each pair take the same arguments.
            unsafe { launch_ex(self.cuda.stream(), f, cfg, &args, NORM_CLUSTER)? };
            let tag = if one { "cl1" } else { "cl" };
            let pf = if with_pf { " + prefetch" } else { "" };
            return self.mark(|| format!("norm_tail_{tag} mode {mode}{pf}"));
        }
        // SAFETY: x, o, h and the norm weights hold n_embd values; the int8 row (when set)
        // holds at least n_embd (the session sized it for the largest activation row).
        unsafe { launch(self.cuda, "norm_tail_q8", one_block(1024), &args)? };
        self.mark(|| format!("norm_tail mode {mode}"))
    }

    /// The FFN gate and up products with SwiGLU and its quantization folded in
    /// (`Cuda::matvec1_q8_swiglu`: `g` gets SwiGLU's output, `act_ff` its int8 row), from the
    /// int8 row in `act`, as one stream of columns per warp with `flat`
    /// (`DecodeTuning::gate_up_flat`), over the gate/up streams where `Cuda::gate_up_streams`
    /// says; returns whether it applied (both matrices Q4_K of one shape). `pf`: L2 prefetch
    /// ranges for the flat launch's blocks to issue once done.
    fn gate_up_swiglu(&mut self, w: &LayerWeights, flat: bool, pf: Option<&[Arg]>) -> Result<bool> {
        let (cuda, model) = (self.cuda, self.model);
        let (g, u) = (&w.ffn_gate, &w.ffn_up);
        if g.n_out != u.n_out || g.n_in != u.n_in {
            return Ok(false);
        }
        let streams = cuda.gate_up_streams(g, u);
        let (wg, wu) = if streams {
            (
                cuda.device_q4k_streams(&model.weights, g, false)?,
                cuda.device_q4k_streams(&model.weights, u, true)?,
            )
        } else {
            (
                cuda.device_weights(&model.weights, g)?,
                cuda.device_weights(&model.weights, u)?,
            )
        };
        let ran = cuda.matvec1_q8_swiglu(
            (g.ty, &wg.as_view()),
            (u.ty, &wu.as_view()),
            &self.act,
            g.n_in,
            g.n_out,
            &mut self.s.g.as_view_mut(),
            &mut self.act_ff,
            flat,
            streams,
            pf,
        )?;
        if let Some(flat) = ran {
            let bytes = g.row_bytes() * g.n_out + u.row_bytes() * u.n_out;
            let how = match (streams, flat) {
                (true, _) => " (streams) flat",
                (false, true) => " flat",
                (false, false) => "",
            };
            let tp = if flat && pf.is_some() {
                TAIL_PREFETCH_LABEL
            } else {
                ""
            };
            super::mark(cuda, &self.prof, bytes, || {
                format!(
                    "mv ffn_gate {} + ffn_up {}{how} + swiglu_q8{tp}",
                    g.ty, u.ty
                )
            })?;
        }
        Ok(ran.is_some())
    }

    /// Every kernel of one token, in order, on the session's stream (no host work, no
    /// allocation, no value that changes between steps except through device memory).
    pub(super) fn enqueue(&mut self) -> Result<()> {
        let (cuda, model) = (self.cuda, self.model);
        let c = &model.cfg;
        let st = cuda.stream().clone();
        let kern = cuda.one_token_kernel().filter(|_| self.fused);
        let q8 = kern.is_some();
        let (nh, nkv, hd) = (c.n_head as i32, c.n_head_kv as i32, c.head_dim as i32);
        let n_layer = c.n_layer;
        let attn = cuda.attention();
        let tune = cuda.decode_tuning();
        if let Some(table) = &self.embed {
            // The token id and the fed step's key words are in the step's parameters.
            let tok = self.params.slice(1 + 3 * n_layer..);
            let kin = self.params.slice(self.key_words()..self.key_words() + 2);
            let te = &model.weights.token_embd;
            // SAFETY: `prepare` keeps the token below the table's rows, or makes it negative
            // with the key words null or a key of `greedy_fed`'s live buffer that the LM head
            // (of n_vocab rows, the table's) wrote.
            unsafe {
                cuda.embed_gather(
                    te.ty,
                    &table.as_view(),
                    te.row_bytes(),
                    &tok,
                    &kin,
                    &mut self.s.x.as_view_mut(),
                    c.n_embd,
                )?
            };
            self.mark(|| "embed_gather".into())?;
        }
        // L2 prefetches (DecodeTuning::l2_prefetch) beside the latency-bound launches: the
        // Q/K/V/gate matrices beside the norm tail before them, the output projection beside
        // the short-cache attention, FFN gate/up beside the post-attention tail.
        let pre = tune.l2_prefetch.filter(|_| q8);
        // Tail prefetches (DecodeTuning::tail_prefetch): each matvec launch's blocks, once done,
        // prefetch a span of the next matvec's weights.
        let tp = tune.tail_prefetch.filter(|_| q8);
        let qkvg_of = |l: usize| {
            let w = &model.weights.layers[l];
            [&w.attn_q, &w.attn_k, &w.attn_v, &w.attn_gate]
        };
        let pf = match pre {
            Some(p) => self.prefetch_args(&qkvg_of(0), p.qkvg, q8)?,
            None => None,
        };
        // The first kernel after the embedding (or the host's row upload).
        self.norm_tail(1, None, &self.layers[0].norms[0], q8, pf)?;
        for l in 0..n_layer {
            let w = &model.weights.layers[l];
            let lay = &self.layers[l];
            let pos_p = ptr(&self.params, &st);
            let slot_p = pos_p + 4 * (1 + 3 * l as u64);
            let meta_p = pos_p + 4 * (2 + 3 * l as u64);
            let cs_p = pos_p + 4 * (2 + 3 * n_layer as u64);
            let fold = QkvFold {
                qw: ptr(&lay.norms[1], &st),
                kw: ptr(&lay.norms[2], &st),
                head_dim: c.head_dim,
                eps: c.rms_eps,
                cs: cs_p,
                rope: c.sliding[l],
                kc: ptr(&lay.k, &st),
                vc: ptr(&lay.v, &st),
                slot: slot_p,
            };
            // `fold` holds the layer's norm weights (head_dim values each), the step's RoPE
            // table (head_dim values), its KV cache (capacity × kv_dim halves each) and the
            // address of its cache slot (below the capacity), as `project` requires.
            let omit = self.omit;
            let tp_o = match tp {
                Some(t) => {
                    // The cache rows this step's attention reads (`cap` below), K and V.
                    let rows = lay.place.capacity.min(self.span);
                    let kv = if c.sliding[l] {
                        t.kv_sliding
                    } else {
                        t.kv_full
                    };
                    let bytes = rows * c.n_head_kv * c.head_dim * 2;
                    let (from, to) = super::prefetch::span(bytes, kv);
                    let kv =
                        [(fold.kc, from), (fold.vc, from)].map(|(p, f)| (p + f as u64, to - f));
                    let o = self.prefetch_span(&[&w.attn_output], t.o_proj, q8)?;
                    super::prefetch::with_ranges(o, &kv)
                }
                None => None,
            };
            let folded = omit.qkvg || {
                let s = &mut self.s;
                project(
                    cuda,
                    model,
                    &self.prof,
                    vec![
                        (&w.attn_q, &mut s.q),
                        (&w.attn_k, &mut s.k),
                        (&w.attn_v, &mut s.v),
                        (&w.attn_gate, &mut s.gate),
                    ],
                    &s.h,
                    kern.map(|k| (&self.act, k)),
                    None,
                    (tune.fold_qk && !omit.qk_norm).then_some(&fold),
                    tp_o.as_deref(),
                )?
            };
            if !folded && !omit.qk_norm {
                let args = [
                    Arg::P(ptr(&self.s.q, &st)),
                    Arg::P(ptr(&self.s.k, &st)),
                    Arg::P(ptr(&self.s.v, &st)),
                    Arg::P(fold.qw),
                    Arg::P(fold.kw),
                    Arg::I(nh),
                    Arg::I(nkv),
                    Arg::I(hd),
                    Arg::F(c.rms_eps),
                    Arg::P(cs_p),
                    Arg::I(i32::from(c.sliding[l])),
                    Arg::P(fold.kc),
                    Arg::P(fold.vc),
                    Arg::P(slot_p),
                ];
                let cfg = LaunchConfig {
                    grid_dim: ((c.n_head + 2 * c.n_head_kv) as u32, 1, 1),
                    block_dim: (64, 1, 1),
                    shared_mem_bytes: 0,
                };
                // SAFETY: q, k, v hold q_dim / kv_dim values; the cache holds capacity ×
                // kv_dim halves and the slot read from `params` is below the capacity.
                unsafe { launch(cuda, "qk_norm_rope_store", cfg, &args)? };
                self.mark(|| "qk_norm_rope_store".into())?;
            }
            // Tensor-core attention where DecodeTuning::attn_mma covers the layer, else grouped
            // (GT query heads of a KV group per block) or one head per block.
            // The ring's rows (slot arithmetic) and the rows the attention is laid out for:
            // the step's span where it is shorter (DecodeTuning::span_graphs).
            let ring = lay.place.capacity;
            let cap = ring.min(self.span);
            let long = cap >= attn.min_capacity && attn.heads_per_block.is_some();
            let mma = tune
                .attn_mma
                .filter(|m| cap >= m.min_capacity)
                .and_then(|m| {
                    let k = super::attn_mma_kernel(
                        &m,
                        c.n_head,
                        c.n_head_kv,
                        c.head_dim,
                        cuda.compute_capability,
                        cuda.max_smem_optin,
                    )?;
                    Some((
                        k,
                        if long {
                            m.long_rows(cap)
                        } else {
                            m.split_rows_short
                        },
                    ))
                });
            let group =
                super::attn_group_kernel(attn.for_capacity(cap), c.n_head, c.n_head_kv, c.head_dim);
            let rows = match (mma, group) {
                (Some((_, r)), _) => r,
                (None, Some(_)) => tune.split_rows_grouped,
                (None, None) => tune.split_rows,
            };
            let n_split = splits_of(cap, rows);
            let args = [
                Arg::P(ptr(&self.s.q, &st)),
                Arg::P(ptr(&lay.k, &st)),
                Arg::P(ptr(&lay.v, &st)),
                Arg::P(ptr(&self.s.partials, &st)),
                Arg::I(nh),
                Arg::I(nkv),
                Arg::P(meta_p),
                Arg::I(ring as i32),
                Arg::F(c.attn_scale()),
            ];
            let (name, blocks, smem) = match (mma, group) {
                (Some(((name, blocks, smem), _)), _) => (name, blocks, smem),
                (None, Some((name, gt))) => (name, c.n_head / gt, 0),
                (None, None) => match c.head_dim {
                    64 => ("attend_split_64", c.n_head, 0),
                    128 => ("attend_split_128", c.n_head, 0),
                    _ => ("attend_split_256", c.n_head, 0),
                },
            };
            let cfg = LaunchConfig {
                grid_dim: (blocks as u32, n_split as u32, 1),
                block_dim: (128, 1, 1),
                shared_mem_bytes: smem as u32,
            };
            let [qa, da, sa] = self.q8_args(q8);
            let merge_args = [
                Arg::P(ptr(&self.s.partials, &st)),
                Arg::P(ptr(&self.s.attn, &st)),
                Arg::P(ptr(&self.s.gate, &st)),
                qa,
                da,
                sa,
                Arg::I(hd),
                Arg::I(n_split as i32),
            ];
            // The merge folded into the attention launch where DecodeTuning::fold_merge covers
            // the layer (per-head and grouped kernels, few splits, nothing left out).
            let folded = tune
                .fold_merge
                .filter(|&m| n_split <= m && !omit.attention && !omit.merge)
                .and_then(|_| super::folded_attention(name));
            if let Some(fname) = folded {
                let mut fargs = args.to_vec();
                fargs.extend_from_slice(&merge_args[1..6]);
                fargs.push(Arg::P(ptr(&self.s.merge_count, &st)));
                // The per-head kernel's prefetching variant (`_mp`: extra block columns past
                // n_head prefetch the output projection) where chosen.
                let pf = match pre.filter(|p| p.blocks > 0 && fname.starts_with("attend_split_")) {
                    Some(p) => self.prefetch_args(&[&w.attn_output], p.o_proj, q8)?,
                    None => None,
                };
                let mut cfg = cfg;
                let name = match (pf, pre) {
                    (Some(pa), Some(p)) => {
                        fargs.extend(pa);
                        cfg.grid_dim.0 += p.blocks;
                        let l1 = if tune.attn_l1_prefetch { "l" } else { "" };
                        format!("{fname}p{l1}")
                    }
                    _ => fname.to_string(),
                };
                // SAFETY: as for the attention and merge launches below (the same buffers);
                // the arrival counters hold one value per block column (at most n_head); the
                // `_mp` kernels' columns past n_head only prefetch `prefetch_args`' ranges.
                unsafe { launch(cuda, &name, cfg, &fargs)? };
                self.mark(|| name.clone())?;
            } else {
                // SAFETY: the partials hold n_head × splits(capacity) × (head_dim + 2)
                // values; the window read from `params` lies within the cache; a grouped
                // block's heads h0..h0 + gt lie within the KV group (gt divides n_head /
                // n_head_kv); a tensor-core block's heads are min(16, group) of one group,
                // its shared memory opted in at load.
                if !omit.attention {
                    // SAFETY: as above.
                    unsafe { launch(cuda, name, cfg, &args)? };
                    self.mark(|| name.into())?;
                }
                let (merge, cfg) =
                    super::merge_launch(tune.wide_merge, c.n_head, c.head_dim, n_split);
                // SAFETY: attn and gate hold q_dim values, the int8 row at least q_dim; the
                // partials n_head × n_split × (head_dim + 2), n_split ≤ MAX_SPLITS.
                if !omit.merge {
                    // SAFETY: as above.
                    unsafe { launch(cuda, merge, cfg, &merge_args)? };
                    self.mark(|| merge.into())?;
                }
            }
            if !omit.o_proj {
                let pf = match tp {
                    Some(t) => self.prefetch_span(&[&w.ffn_gate, &w.ffn_up], t.gate_up, q8)?,
                    None => None,
                };
                let s = &mut self.s;
                project(
                    cuda,
                    model,
                    &self.prof,
                    vec![(&w.attn_output, &mut s.o)],
                    &s.attn,
                    kern.map(|k| (&self.act, k)),
                    None,
                    None,
                    pf.as_deref(),
                )?;
            }
            if !omit.norm_tails {
                let pf = match pre {
                    Some(p) => self.prefetch_args(&[&w.ffn_gate, &w.ffn_up], p.gate_up, q8)?,
                    None => None,
                };
                self.norm_tail(
                    2,
                    Some(&self.layers[l].norms[3]),
                    &self.layers[l].norms[4],
                    q8,
                    pf,
                )?;
            }
            // SwiGLU folded into the gate/up launch where it applies (its int8 row then in
            // `act_ff`), else the segment kernel and swiglu_q8.
            let pf = match tp {
                Some(t) => self.prefetch_span(&[&w.ffn_down], t.down, q8)?,
                None => None,
            };
            let swiglu_folded = tune.fold_swiglu
                && q8
                && self.gate_up_swiglu(w, tune.gate_up_flat, pf.as_deref())?;
            if !swiglu_folded {
                let s = &mut self.s;
                project(
                    cuda,
                    model,
                    &self.prof,
                    vec![(&w.ffn_gate, &mut s.g), (&w.ffn_up, &mut s.u)],
                    &s.h,
                    kern.map(|k| (&self.act, k)),
                    None,
                    None,
                    None,
                )?;
                let [qa, da, sa] = self.q8_args(q8);
                let args = [
                    Arg::P(ptr(&self.s.g, &st)),
                    Arg::P(ptr(&self.s.u, &st)),
                    qa,
                    da,
                    sa,
                    Arg::I(c.n_ff as i32),
                ];
                // SAFETY: g and u hold n_ff values, the int8 row at least n_ff.
                unsafe { launch(cuda, "swiglu_q8", elems(c.n_ff), &args)? };
                self.mark(|| "swiglu_q8".into())?;
            }
            {
                let pf = match (tp, l + 1 < n_layer) {
                    (Some(t), true) => self.prefetch_span(&qkvg_of(l + 1), t.qkvg, q8)?,
                    (Some(t), false) => {
                        self.prefetch_span(&[&model.weights.output], t.lm_head, q8)?
                    }
                    _ => None,
                };
                let s = &mut self.s;
                project(
                    cuda,
                    model,
                    &self.prof,
                    vec![(&w.ffn_down, &mut s.o)],
                    &s.g,
                    kern.map(|k| {
                        let k6 = tune.q6k_kernel.filter(|_| w.ffn_down.ty == GgmlType::Q6_K);
                        let act = if swiglu_folded {
                            &self.act_ff
                        } else {
                            &self.act
                        };
                        (act, k6.unwrap_or(k))
                    }),
                    None,
                    None,
                    pf.as_deref(),
                )?;
            }
            let pf = match (pre, l + 1 < n_layer) {
                (Some(p), true) => self.prefetch_args(&qkvg_of(l + 1), p.qkvg, q8)?,
                _ => None,
            };
            let next_norm = if l + 1 < n_layer {
                &self.layers[l + 1].norms[0]
            } else {
                &self.output_norm
            };
            if !omit.norm_tails || l + 1 == n_layer {
                self.norm_tail(2, Some(&self.layers[l].norms[5]), next_norm, q8, pf)?;
            }
        }
        // The LM head, with the logit scale and softcap folded into the segment kernel (and,
        // through the flat kernel, the fed steps' argmax: the key words of the parameters).
        let out = &model.weights.output;
        let key = ptr(&self.params, &st) + 4 * (self.key_words() as u64 + 2);
        self.lm_argmax = {
            let s = &mut self.s;
            project(
                cuda,
                model,
                &self.prof,
                vec![(out, &mut s.logits)],
                &s.h,
                kern.map(|k| {
                    let k6 = tune.q6k_kernel.filter(|_| out.ty == GgmlType::Q6_K);
                    (&self.act, k6.unwrap_or(k))
                }),
                Some(Post {
                    scale: c.logit_scale,
                    cap: c.softcap,
                    key,
                }),
                None,
                None,
            )?
        };
        if !(q8 && SEG_TYPES.contains(&out.ty)) {
            let args = [
                Arg::P(ptr(&self.s.logits, &st)),
                Arg::I(c.n_vocab as i32),
                Arg::F(c.logit_scale),
                Arg::F(c.softcap),
            ];
            // SAFETY: logits hold n_vocab values.
            unsafe { launch(cuda, "scale_softcap", elems(c.n_vocab), &args)? };
            self.mark(|| "scale_softcap".into())?;
        }
        Ok(())
    }
}
