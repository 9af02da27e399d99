//! Launches of `kernels/gather.cu`: the embedding row of a token read from device memory,
//! dequantized from the table's own type (bit-identical to the `_ref` dequantizers), and the
//! greedy argmax of the logits, so that benchmarks need not copy the logits back.

use cudarc::driver::{CudaSlice, CudaView, CudaViewMut, LaunchConfig, PushKernelArg};
use muser_gguf::GgmlType;

use super::upload::embed_type_code;
use super::{cuda_err, Cuda};
use crate::error::{Error, Result};

impl Cuda {
    /// Whether the embedding gather handles tables of type `ty`.
    pub fn embed_supported(ty: GgmlType) -> bool {
        embed_type_code(ty).is_some()
    }

    /// `x: [n] = dequantize(table[*tok])`, with `tok` a device value (so that a captured
    /// graph reads each step's token). `table`: rows of `row_bytes` bytes of type `ty`, `n`
    /// elements each.
    pub fn embed_gather(
        &self,
        ty: GgmlType,
        table: &CudaView<'_, u8>,
        row_bytes: usize,
        tok: &CudaView<'_, i32>,
        x: &mut CudaViewMut<'_, f32>,
        n: usize,
    ) -> Result<()> {
        let code = embed_type_code(ty).ok_or_else(|| Error::TensorType {
            tensor: "token_embd.weight (cuda gather)".into(),
            ty,
            supported: "F32, F16, BF16, Q8_0, Q4_K, Q5_K, Q6_K".into(),
        })?;
        if x.len() < n || ty.bytes_for(n as u64) != Some(row_bytes as u64) {
            return Err(Error::Cuda(format!(
                "embedding gather: {n} elements of {ty} in rows of {row_bytes} bytes into {}",
                x.len()
            )));
        }
        let f = self
            .decode
            .get("embed_gather")
            .ok_or_else(|| Error::Cuda("kernel embed_gather not loaded".into()))?;
        let (rb, n_i) = (row_bytes as u64, n as i32);
        let mut b = self.stream.launch_builder(f);
        b.arg(table).arg(&rb).arg(&code).arg(tok).arg(x).arg(&n_i);
        let cfg = LaunchConfig {
            grid_dim: (n.div_ceil(256).clamp(1, 1024) as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: reads one row of `row_bytes` bytes at `*tok` (the caller keeps the token
        // below the table's rows) and writes `n` ≤ x.len() values.
        unsafe { b.launch(cfg) }.map_err(cuda_err("launching embed_gather"))?;
        Ok(())
    }

    /// `ws[0] = argmax(v[..n])` (the first index on ties), on the device, through
    /// `argmax_f32_grid` over `ARGMAX_BLOCKS` blocks; `ws` is its scratch of `ARGMAX_WORDS`
    /// values, allocated zeroed (the kernel leaves its counter at 0 again).
    pub fn argmax_into(
        &self,
        v: &CudaView<'_, f32>,
        n: usize,
        ws: &mut CudaSlice<u32>,
    ) -> Result<()> {
        // SAFETY: no extra outputs.
        unsafe { self.argmax_also(v, n, ws, [0, 0]) }
    }

    /// `argmax_into`, the result also written to the device words at `also` (0: none).
    ///
    /// # Safety
    /// Each nonzero address of `also` must be a live device word (u32) that nothing else
    /// reads or writes while the stream runs the launch.
    pub(crate) unsafe fn argmax_also(
        &self,
        v: &CudaView<'_, f32>,
        n: usize,
        ws: &mut CudaSlice<u32>,
        also: [u64; 2],
    ) -> Result<()> {
        if v.len() < n || ws.len() < ARGMAX_WORDS || n > i32::MAX as usize {
            return Err(Error::Cuda(format!(
                "argmax of {n} values from a buffer of {} with {} scratch words ({ARGMAX_WORDS})",
                v.len(),
                ws.len()
            )));
        }
        let f = self
            .decode
            .get("argmax_f32_grid")
            .ok_or_else(|| Error::Cuda("kernel argmax_f32_grid not loaded".into()))?;
        let n_i = n as i32;
        let mut b = self.stream.launch_builder(f);
        b.arg(v).arg(&n_i).arg(ws).arg(&also[0]).arg(&also[1]);
        let cfg = LaunchConfig {
            grid_dim: (ARGMAX_BLOCKS as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: reads `n` ≤ v.len() values; writes ws[0 .. 2 + 2 · ARGMAX_BLOCKS) ⊆ ws and
        // the words at `also` (the caller's contract).
        unsafe { b.launch(cfg) }.map_err(cuda_err("launching argmax"))?;
        Ok(())
    }
}

/// Blocks of the argmax launch (`argmax_f32_grid`).
pub const ARGMAX_BLOCKS: usize = 256;

/// Scratch words of `Cuda::argmax_into`: the result, the arrival counter, each block's value
/// and index.
pub const ARGMAX_WORDS: usize = 2 + 2 * ARGMAX_BLOCKS;
