//! The post-attention norm tail folded into the FFN gate/up launch
//! (`DecodeTuning::norm_gate_up`, `mvq_gu_swiglu_nt_tp` in kernels/mvq1.cu): one launch where
//! the step otherwise runs the cluster norm tail and then the gate/up streams' launch. Every
//! cluster of 8 blocks computes the tail (the same code, so the same bits) into its own copy
//! of the int8 row; the residual goes to the other x buffer.

use cudarc::driver::{DevicePtr, DevicePtrMut, LaunchConfig};

use super::step::{ptr, TAIL_PREFETCH_LABEL};
use super::CudaSession;
use crate::config::GlimmerConfig;
use crate::cuda::launch::{launch_ex, KArg as Arg};
use crate::cuda::seg::{q4k_streams_bytes, SWIGLU_ROWS};
use crate::error::{Error, Result};
use crate::weights::LayerWeights;
use muser_gguf::GgmlType;

/// The folded launch's kernel.
pub(crate) const NORM_GATE_UP_KERNEL: &str = "mvq_gu_swiglu_nt_tp";

/// Blocks per cluster (the kernel's NC_BLOCKS).
const CLUSTER: usize = 8;

/// Values per block of the cluster tail (128 threads, 8 each).
const BLOCK_VALUES: usize = 1024;

/// Clusters of the gate/up launch for `n_ff` rows (`SWIGLU_ROWS` a block), when they are whole.
fn clusters(n_ff: usize) -> Option<usize> {
    let rows = SWIGLU_ROWS * CLUSTER;
    (n_ff > 0 && n_ff % rows == 0).then_some(n_ff / rows)
}

/// The int8 row copies the folded launch needs beside the session's (one per cluster after
/// the first; 0 where it cannot apply).
pub(super) fn copies(c: &GlimmerConfig) -> usize {
    match clusters(c.n_ff) {
        Some(n) if applies_to(c) => n - 1,
        _ => 0,
    }
}

/// Whether the model's dimensions fit the folded launch: n_embd a multiple of 256 that one
/// cluster's threads cover (at most 8 × 1,024), n_ff whole clusters of rows.
fn applies_to(c: &GlimmerConfig) -> bool {
    c.n_embd % 256 == 0 && c.n_embd <= CLUSTER * BLOCK_VALUES && clusters(c.n_ff).is_some()
}

impl CudaSession<'_> {
    /// Layer `l`'s post-attention norm tail (mode 2: `s.o` with its post-attention norm into
    /// the residual, then its FFN norm) and the FFN gate/up products with SwiGLU as one launch, where
    /// `DecodeTuning::norm_gate_up` is set and it applies (sm_90, the one-sum cluster tail,
    /// the gate/up streams); returns whether it ran. The residual is read from `s.x`
    /// (`x2`: from `s.x2`) and written to the other buffer; `pf`: the tail prefetch ranges
    /// (eight arguments) or none.
    pub(super) fn norm_gate_up(
        &mut self,
        w: &LayerWeights,
        l: usize,
        x2: bool,
        pf: Option<&[Arg]>,
    ) -> Result<bool> {
        let (cuda, model) = (self.cuda, self.model);
        let c = &model.cfg;
        let tune = cuda.decode_tuning();
        let (g, u) = (&w.ffn_gate, &w.ffn_up);
        let Some(pf_tiles) = tune.norm_gate_up else {
            return Ok(false);
        };
        let Some(n_cl) = clusters(c.n_ff) else {
            return Ok(false);
        };
        if cuda.compute_capability.0 < 9
            || !tune.cluster_norm
            || !tune.norm_one_sum
            || !applies_to(c)
            || !cuda.gate_up_streams(g, u)
            || g.n_in != c.n_embd
            || g.n_out != c.n_ff
            || g.ty != GgmlType::Q4_K
        {
            return Ok(false);
        }
        let bytes = q4k_streams_bytes(c.n_ff, c.n_embd);
        let wg = cuda.device_q4k_streams(&model.weights, g, false)?;
        let wu = cuda.device_q4k_streams(&model.weights, u, true)?;
        let (act, cl, ff) = (&self.act, &self.act_cl, &mut self.act_ff);
        if wg.len() < bytes
            || wu.len() < bytes
            || act.len() < c.n_embd
            || cl.len() < (n_cl - 1) * c.n_embd
            || ff.len() < c.n_ff
        {
            return Err(Error::Cuda(format!(
                "norm + gate/up: {} / {} of {bytes} weight bytes, {} / {} / {} activations",
                wg.len(),
                wu.len(),
                act.len(),
                cl.len(),
                ff.len()
            )));
        }
        let f = cuda
            .seg
            .get(NORM_GATE_UP_KERNEL)
            .ok_or_else(|| Error::Cuda(format!("kernel {NORM_GATE_UP_KERNEL} not loaded")))?;
        let st = cuda.stream();
        let s = &self.s;
        let (x_in, x_out) = if x2 { (&s.x2, &s.x) } else { (&s.x, &s.x2) };
        // The post-attention norm and the FFN norm of layer l.
        let (wp, wn) = (&self.layers[l].norms[3], &self.layers[l].norms[4]);
        let (qo, _) = ff.qa.device_ptr_mut(st);
        let (dout, _) = ff.da.device_ptr_mut(st);
        let (so, _) = ff.sa.device_ptr_mut(st);
        let (g_out, _) = s.g.device_ptr(st);
        let mut args = vec![
            Arg::P(ptr(&wg, st)),
            Arg::P(ptr(&wu, st)),
            Arg::I(c.n_ff as i32),
            Arg::P(g_out),
            Arg::P(ptr(x_in, st)),
            Arg::P(ptr(x_out, st)),
            Arg::P(ptr(&s.o, st)),
            Arg::P(ptr(wp, st)),
            Arg::F(c.post_norm_eps),
            Arg::P(ptr(wn, st)),
            Arg::F(c.rms_eps),
            Arg::P(ptr(&s.h, st)),
            Arg::P(ptr(&act.qa, st)),
            Arg::P(ptr(&act.da, st)),
            Arg::P(ptr(&act.sa, st)),
            Arg::P(ptr(&cl.qa, st)),
            Arg::P(ptr(&cl.da, st)),
            Arg::P(ptr(&cl.sa, st)),
            Arg::I(pf_tiles.min(i32::MAX as u32) as i32),
            Arg::I(c.n_embd as i32),
            Arg::P(qo),
            Arg::P(dout),
            Arg::P(so),
        ];
        match pf {
            Some(pf) if pf.len() == 8 => args.extend_from_slice(pf),
            _ => args.extend((0..4).flat_map(|_| [Arg::P(0), Arg::I(0)])),
        }
        let cfg = LaunchConfig {
            grid_dim: ((c.n_ff / SWIGLU_ROWS) as u32, 1, 1),
            block_dim: (128, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the weights hold the gate/up streams of n_ff × n_embd Q4_K (checked above);
        // x, x2, o, h and the norm weights n_embd values; cluster 0 writes the session's int8
        // row (n_embd of it) and x_out / h, cluster c > 0 the copy at (c - 1) n_embd of
        // `act_cl` (n_cl - 1 copies checked), every block its 32 rows of g and the SwiGLU
        // row; x_in is another buffer than x_out, read only; the grid is n_cl whole clusters.
        unsafe { launch_ex(st, f, cfg, &args, CLUSTER as u32)? };
        let w_bytes = g.row_bytes() * g.n_out + u.row_bytes() * u.n_out;
        let tp = if pf.is_some() {
            TAIL_PREFETCH_LABEL
        } else {
            ""
        };
        super::mark(cuda, &self.prof, w_bytes, || {
            format!(
                "norm_tail_cl1 mode 2 + mv ffn_gate {} + ffn_up {} (streams) flat + \
                 swiglu_q8{tp}",
                g.ty, u.ty
            )
        })?;
        Ok(true)
    }
}
