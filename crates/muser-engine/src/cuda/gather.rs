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
    /// elements each. Where `*tok` is negative the token is the argmax folded into the
    /// 64-bit key whose address `kin`'s two words hold (`CudaSession::greedy_fed`; the key 0
    /// or a null address: token 0); `kin` is read only then.
    ///
    /// # Safety
    /// `*tok` must be below the table's rows, or negative with `kin`'s words a null address
    /// or that of a live key written by the LM head of a table of as many rows.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn embed_gather(
        &self,
        ty: GgmlType,
        table: &CudaView<'_, u8>,
        row_bytes: usize,
        tok: &CudaView<'_, i32>,
        kin: &CudaView<'_, i32>,
        x: &mut CudaViewMut<'_, f32>,
        n: usize,
    ) -> Result<()> {
        let code = embed_type_code(ty).ok_or_else(|| Error::TensorType {
            tensor: "token_embd.weight (cuda gather)".into(),
            ty,
            supported: "F32, F16, BF16, Q8_0, Q4_K, Q5_K, Q6_K".into(),
        })?;
        if kin.len() < 2 {
            return Err(Error::Cuda(format!(
                "embedding gather: the key address takes 2 words, not {}",
                kin.len()
            )));
        }
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
        b.arg(table)
            .arg(&rb)
            .arg(&code)
            .arg(tok)
            .arg(kin)
            .arg(x)
            .arg(&n_i);
        let cfg = LaunchConfig {
            grid_dim: (n.div_ceil(256).clamp(1, 1024) as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: reads one row of `row_bytes` bytes at the token (below the table's rows:
        // the caller's contract) and writes `n` ≤ x.len() values.
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

/// A device address as the two 32-bit words (low, high) the kernels read it from: the key
/// words of the step's parameters (`embed_gather`'s `kin`, `matvec1_flat_q6ks`'s `key`).
pub fn address_words(a: u64) -> [i32; 2] {
    [a as u32 as i32, (a >> 32) as u32 as i32]
}

/// The token of a greedy argmax key folded by the LM head (`Cuda::matvec1_flat_q6ks`'s `key`;
/// kernels/common.cuh's `argmax_key`: the value's order-preserving bits over the complement of
/// the index): the index in its low word, or 0 for the key 0 (no number seen), as
/// `argmax_f32_grid` answers for logits that are all NaN.
pub fn argmax_of_key(key: u64) -> u32 {
    if key == 0 {
        0
    } else {
        u32::MAX - key as u32
    }
}

#[cfg(test)]
mod tests {
    use super::{address_words, argmax_of_key};

    #[test]
    fn addresses_split_low_word_first() {
        let w = address_words(0x1234_5678_9abc_def0);
        assert_eq!(w.map(|x| x as u32), [0x9abc_def0, 0x1234_5678]);
    }

    /// kernels/common.cuh's `argmax_key`, written again on the host to check its order.
    fn key(v: f32, i: u32) -> u64 {
        if v.is_nan() {
            return 0;
        }
        let b = if v == 0.0 { 0 } else { v.to_bits() };
        let b = if b & 0x8000_0000 != 0 {
            !b
        } else {
            b | 0x8000_0000
        };
        (u64::from(b) << 32) | u64::from(u32::MAX - i)
    }

    /// The largest key of a row of values is the host's argmax (the larger value, the lower
    /// index on ties, -0 equal to +0, NaN never over a number; all NaN: 0).
    #[test]
    fn key_order_is_the_argmax_order() {
        let rows: [&[f32]; 7] = [
            &[1.0, 3.0, 2.0],
            &[-5.0, -1.0, -1.0, -7.0],
            &[f32::NAN, -3.0, f32::NAN],
            &[f32::NAN, f32::NAN],
            &[-0.0, 0.0, -1.0],
            &[0.0, -0.0],
            &[f32::NEG_INFINITY, -1e30, f32::INFINITY, 30.0, f32::INFINITY],
        ];
        let want = [1, 1, 1, 0, 0, 0, 2];
        for (r, w) in rows.iter().zip(want) {
            let best = r
                .iter()
                .enumerate()
                .map(|(i, &v)| key(v, i as u32))
                .max()
                .unwrap_or(0);
            assert_eq!(argmax_of_key(best), w, "{r:?}");
        }
    }
}
