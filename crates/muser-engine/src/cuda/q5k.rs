//! One-token Q5_K products over int8 activations (`kernels/mvq5.cu`): the decode path for
//! Q5_K matrices (the "dynamic" k-quant files' mix), in the numerics of the Q4_K kernels.

use cudarc::driver::{CudaView, CudaViewMut};
use muser_gguf::GgmlType;

use super::{Cuda, Q8Act, Seg};
use crate::error::{Error, Result};

/// The compiled variants: kernel name and rows per warp.
pub const Q5K_KERNELS: [(&str, usize); 2] = [("mvq_one_q5k_r2", 2), ("mvq_one_q5k_r4", 4)];

/// Rows per warp of the variant the engine launches for an `n_out` x `n_in` matrix: 4 for
/// rows longer than the matrix is tall (fewer warps, each with more loads in flight), else 2.
/// Measured on the H200 (bench/runs/2026-12-03-h200-l l3, the same bits either way):
/// 19,968 x 6,656 3,106 GB/s with 2, 2,940 with 4; 6,656 x 19,968 2,965 with 2, 3,112 with 4.
pub fn q5k_rows(n_in: usize, n_out: usize) -> usize {
    if n_in > n_out {
        4
    } else {
        2
    }
}

/// Warps per block of the Q5_K launches (each warp its own rows: any count gives the same bits).
const Q5K_WARPS: u32 = 4;

impl Cuda {
    /// One Q5_K matrix (the file's layout, rows of whole super-blocks) times the int8 row
    /// `act`, through the variant with `rows` rows per warp (`Q5K_KERNELS`).
    pub(crate) fn matvec1_q5k(
        &self,
        seg: &mut Seg<'_>,
        act: &Q8Act,
        n_in: usize,
        rows: usize,
    ) -> Result<()> {
        let name = Q5K_KERNELS
            .iter()
            .find(|k| k.1 == rows)
            .map(|k| k.0)
            .ok_or_else(|| Error::Cuda(format!("no Q5_K kernel with {rows} rows per warp")))?;
        if seg.ty != GgmlType::Q5_K || seg.split.is_some() {
            return Err(Error::TensorType {
                tensor: "(cuda Q5_K matvec)".into(),
                ty: seg.ty,
                supported: "Q5_K in the file's layout".into(),
            });
        }
        // SAFETY: Q5K_ENTRY's arguments are rows_launch's (no tail); each warp reads `rows`
        // rows of the matrix and writes their outputs below n_out.
        unsafe { self.rows_launch(name, seg, act, n_in, &[], rows, Q5K_WARPS, "Q5_K matvec") }
    }

    /// One token through a Q5_K kernel from f32 activations (quantized into the backend's
    /// scratch first), `rows` rows per warp (`Q5K_KERNELS`).
    #[allow(clippy::too_many_arguments)]
    pub fn matvec1_q5k_f32(
        &self,
        w: &CudaView<'_, u8>,
        x: &CudaView<'_, f32>,
        y: &mut CudaViewMut<'_, f32>,
        n_in: usize,
        n_out: usize,
        rows: usize,
    ) -> Result<()> {
        self.with_quantized(x, n_in, |act| {
            let mut seg = Seg {
                ty: GgmlType::Q5_K,
                split: None,
                w: w.slice(..),
                y: y.slice_mut(..),
                n_out,
            };
            self.matvec1_q5k(&mut seg, act, n_in, rows)
        })
    }
}
