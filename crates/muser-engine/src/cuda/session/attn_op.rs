//! One attention op on its own (split-K kernel + `attend_merge_gate_q8` or its wide variants,
//! `attend_merge_gate_q8_w` / `_wv`) over a caller's f16
//! KV ring, for the op-level parity checks of the CUDA test (each kernel choice against an f64
//! reference, wrapped and unwrapped rings, long NoPE planes). The decode step launches the
//! same kernels with the same arguments (`step.rs`).

use cudarc::driver::LaunchConfig;

use super::step::{launch, ptr};
use super::{attn_group_kernel, attn_mma_kernel, folded_attention, merge_launch, splits_of};
use crate::cuda::launch::KArg as Arg;
use crate::cuda::{cuda_err, Cuda, MmaAttn};
use crate::error::{Error, Result};

/// Which split-K attention kernel `Cuda::attend_op` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttnKernel {
    /// `attend_split_*`: one query head per block.
    PerHead,
    /// `attend_group_*`: this many query heads of one KV group per block.
    Grouped(usize),
    /// `attend_mma_*`: the tensor-core kernel (rows per split: the shape's `split_rows`).
    Mma(MmaAttn),
}

/// The geometry and ring window of one `Cuda::attend_op` call.
#[derive(Debug, Clone, Copy)]
pub struct AttnShape {
    pub n_head: usize,
    pub n_head_kv: usize,
    pub head_dim: usize,
    /// Ring rows; row j of the window (oldest first) is slot (first + j) % capacity.
    pub capacity: usize,
    pub first: usize,
    pub n: usize,
    /// Cache rows per split-K block (at least 64).
    pub split_rows: usize,
    /// The merge: the wide merge (`DecodeTuning::wide_merge`, `merge_launch` picks the
    /// kernel), or `None` for `attend_merge_gate_q8`.
    pub wide_merge: Option<crate::cuda::WideMerge>,
    /// The merge folded into the per-head or grouped attention launch (their `_m` variants,
    /// `DecodeTuning::fold_merge`) instead of a merge launch; ignored by the tensor-core one.
    pub fold_merge: bool,
}

impl Cuda {
    /// `sigmoid(gate) * softmax(q · K^T / sqrt(hd)) · V` per query head, as the decode step
    /// computes it with `kernel`: q, gate: [n_head × hd]; k, v: f16 bits [capacity × n_head_kv
    /// × hd]. Returns [n_head × hd], or `Ok(None)` when `kernel` does not apply here.
    pub fn attend_op(
        &self,
        kernel: AttnKernel,
        sh: &AttnShape,
        q: &[f32],
        k: &[u16],
        v: &[u16],
        gate: &[f32],
    ) -> Result<Option<Vec<f32>>> {
        let (nh, nkv, hd, cap) = (sh.n_head, sh.n_head_kv, sh.head_dim, sh.capacity);
        let q_dim = nh * hd;
        let plane = cap * nkv * hd;
        if ![64, 128, 256].contains(&hd)
            || q.len() != q_dim
            || gate.len() != q_dim
            || k.len() != plane
            || v.len() != plane
            || sh.n > cap
            || sh.first >= cap
        {
            return Err(Error::Cuda(format!("attend_op: inconsistent sizes {sh:?}")));
        }
        let (name, blocks, smem) = match kernel {
            AttnKernel::PerHead => match hd {
                64 => ("attend_split_64", nh, 0),
                128 => ("attend_split_128", nh, 0),
                _ => ("attend_split_256", nh, 0),
            },
            AttnKernel::Grouped(gt) => match attn_group_kernel(Some(gt), nh, nkv, hd) {
                Some((name, gt)) => (name, nh / gt, 0),
                _ => return Ok(None),
            },
            AttnKernel::Mma(m) => match attn_mma_kernel(
                &m,
                nh,
                nkv,
                hd,
                self.compute_capability,
                self.max_smem_optin,
            ) {
                Some(k) => k,
                None => return Ok(None),
            },
        };
        let n_split = splits_of(cap, sh.split_rows);
        let st = self.stream();
        let up32 = |x: &[f32]| st.clone_htod(x).map_err(cuda_err("attend_op upload"));
        let up16 = |x: &[u16]| st.clone_htod(x).map_err(cuda_err("attend_op upload"));
        let (qd, gd, kd, vd) = (up32(q)?, up32(gate)?, up16(k)?, up16(v)?);
        let meta = st
            .clone_htod(&[sh.first as i32, sh.n as i32])
            .map_err(cuda_err("attend_op upload"))?;
        let part = st
            .alloc_zeros::<f32>(nh * n_split * (hd + 2))
            .map_err(cuda_err("attend_op alloc"))?;
        let out = st
            .alloc_zeros::<f32>(q_dim)
            .map_err(cuda_err("attend_op alloc"))?;
        let args = [
            Arg::P(ptr(&qd, st)),
            Arg::P(ptr(&kd, st)),
            Arg::P(ptr(&vd, st)),
            Arg::P(ptr(&part, st)),
            Arg::I(nh as i32),
            Arg::I(nkv as i32),
            Arg::P(ptr(&meta, st)),
            Arg::I(cap as i32),
            Arg::F(1.0 / (hd as f32).sqrt()),
        ];
        let cfg = LaunchConfig {
            grid_dim: (blocks as u32, n_split as u32, 1),
            block_dim: (128, 1, 1),
            shared_mem_bytes: smem as u32,
        };
        if let Some(fname) = folded_attention(name).filter(|_| sh.fold_merge) {
            let count = st
                .alloc_zeros::<u32>(nh)
                .map_err(cuda_err("attend_op alloc"))?;
            let mut fargs = args.to_vec();
            fargs.extend([
                Arg::P(ptr(&out, st)),
                Arg::P(ptr(&gd, st)),
                Arg::P(0),
                Arg::P(0),
                Arg::P(0),
                Arg::P(ptr(&count, st)),
            ]);
            // SAFETY: as below, plus out and gate (q_dim values), no int8 row, and one
            // arrival counter per block column (blocks ≤ n_head).
            unsafe { launch(self, fname, cfg, &fargs)? };
            let got = st
                .clone_dtoh(&out)
                .map_err(cuda_err("attend_op download"))?;
            let left = st
                .clone_dtoh(&count)
                .map_err(cuda_err("attend_op download"))?;
            // The last block of each column sets its counter back to zero.
            if left.iter().any(|&c| c != 0) {
                return Err(Error::Cuda(format!(
                    "attend_op: {fname} left arrival counters {left:?}"
                )));
            }
            return Ok(Some(got));
        }
        // SAFETY: the buffers above are sized for these arguments (partials: n_head ×
        // n_split × (hd + 2)); the window lies within the ring (checked above).
        unsafe { launch(self, name, cfg, &args)? };
        let args = [
            Arg::P(ptr(&part, st)),
            Arg::P(ptr(&out, st)),
            Arg::P(ptr(&gd, st)),
            Arg::P(0),
            Arg::P(0),
            Arg::P(0),
            Arg::I(hd as i32),
            Arg::I(n_split as i32),
        ];
        let (merge, cfg) = merge_launch(sh.wide_merge, nh, hd, n_split);
        // SAFETY: out and gate hold q_dim values; no int8 row (null).
        unsafe { launch(self, merge, cfg, &args)? };
        let got = st
            .clone_dtoh(&out)
            .map_err(cuda_err("attend_op download"))?;
        Ok(Some(got))
    }
}
