//! The per-head attention of a one-split layer and its output projection as one launch
//! (`DecodeTuning::attn_oproj`, kernels/attn_oproj.cu).

use cudarc::driver::LaunchConfig;

use super::step::{launch, ptr};
use super::{kernel, CudaSession};
use crate::cuda::launch::KArg as Arg;
use crate::error::{Error, Result};
use muser_gguf::GgmlType;

/// Threads per block of the fused launch (the attention's block; 4 warps of projection rows).
const BLOCK: u32 = 128;

/// Projection rows per block (4 warps × 4 rows).
const ROWS: usize = 16;

impl CudaSession<'_> {
    /// Layer `l`'s attention (one split: the per-head kernel's `fin` path, `attn` its nine
    /// arguments) and output projection (Q4_K) as one `attn_oproj_HD` launch, each projection
    /// block prefetching `pct` % of its rows first; returns whether it applied (head size 64,
    /// 128 or 256, a Q4_K projection over whole super-blocks, the grid resident at once).
    pub(super) fn attn_oproj(&mut self, l: usize, attn: &[Arg], pct: u8) -> Result<bool> {
        let (cuda, model) = (self.cuda, self.model);
        let c = &model.cfg;
        let w = &model.weights.layers[l].attn_output;
        let name = match c.head_dim {
            64 => "attn_oproj_64",
            128 => "attn_oproj_128",
            256 => "attn_oproj_256",
            _ => return Ok(false),
        };
        if w.ty != GgmlType::Q4_K || w.n_in % 256 != 0 || w.n_in != c.q_dim() {
            return Ok(false);
        }
        let grid = c.n_head + w.n_out.div_ceil(ROWS);
        let f = kernel(cuda, name)?;
        let per_sm = f
            .occupancy_max_active_blocks_per_multiprocessor(BLOCK, 0, None)
            .map_err(|e| Error::Cuda(format!("occupancy of {name}: {e:?}")))?;
        let sms = cuda
            .context()
            .attribute(
                cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )
            .map_err(|e| Error::Cuda(format!("reading the SM count: {e:?}")))?;
        if (per_sm as usize) * (sms.max(0) as usize) < grid {
            return Ok(false);
        }
        let st = cuda.stream();
        let wd = cuda.device_weights(&model.weights, w)?;
        let pf = (w.row_bytes() * ROWS) * pct.min(100) as usize / 100;
        let mut args = attn.to_vec();
        args.extend([
            Arg::P(ptr(&self.s.attn, st)),
            Arg::P(ptr(&self.s.gate, st)),
            Arg::P(ptr(&self.act.qa, st)),
            Arg::P(ptr(&self.act.da, st)),
            Arg::P(ptr(&self.act.sa, st)),
            Arg::P(ptr(&self.s.oproj_sync, st)),
            Arg::P(ptr(&*wd, st)),
            Arg::I(w.n_out as i32),
            Arg::P(ptr(&self.s.o, st)),
            Arg::I(w.n_in as i32),
            Arg::I(pf as i32),
        ]);
        let cfg = LaunchConfig {
            grid_dim: (grid as u32, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the attention's arguments as its per-head launch's (one split: the grid's y
        // is 1); attn and gate hold q_dim values and the int8 row at least q_dim (the
        // projection's n_in); the weights hold n_out Q4_K rows of n_in, o n_out values; the
        // counters ATTN_OPROJ_SYNC words, zero between launches; every block resident at once
        // (checked above), so the waiting blocks never hold a slot a head needs.
        unsafe { launch(cuda, name, cfg, &args)? };
        let bytes = w.row_bytes() * w.n_out;
        super::mark(cuda, &self.prof, bytes, || {
            format!("{name} (attention + mv attn_output)")
        })?;
        Ok(true)
    }
}
