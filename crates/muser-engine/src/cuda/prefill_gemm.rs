//! The batched prefill's products: weights dequantized to f16 on the device
//! (`dequant_f16[_v]`) and multiplied by f16 activation rows with cuBLAS (`cublasGemmEx`, f32
//! accumulation).

use std::ffi::{c_int, c_void};

use cudarc::cublas::sys as blas;
use cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig};
use muser_gguf::GgmlType;

use super::launch::{launch_ex, KArg};
use super::Cuda;
use crate::error::{Error, Result};
use crate::weights::{Matrix, Weights};

impl Cuda {
    /// Whether prompts can run in batched chunks (cuBLAS is there).
    pub fn batched_prefill(&self) -> bool {
        self.blas.is_ok()
    }

    /// Why prompts go token by token on this device (`None`: they do not).
    pub fn batched_prefill_missing(&self) -> Option<&str> {
        self.blas.as_ref().err().map(String::as_str)
    }

    /// The `dequant_f16` type code of matrix `m` as the device holds it, and its weights:
    /// Q6_K in the split layout and FFN gate/up matrices as the gate/up streams where the
    /// session keeps those copies, else as in the file.
    pub(crate) fn dequant_source(
        &self,
        weights: &Weights,
        m: &Matrix,
    ) -> Result<(i32, std::sync::Arc<CudaSlice<u8>>)> {
        // The embedding gather's type codes; 7: Q6_K in the split layout.
        let split = {
            let map = self.q6k_split.lock().unwrap_or_else(|e| e.into_inner());
            // (The layer matrices: the 1-unit layout.)
            map.get(&(m.name.clone(), 1)).cloned()
        };
        if let Some(w) = split.filter(|_| m.ty == GgmlType::Q6_K) {
            return Ok((7, w));
        }
        // 8 and 9: an FFN gate or up matrix in its half of the gate/up streams (while the
        // decode step reads those: `DecodeTuning::gate_up_streams`).
        let streams = {
            let map = self.q4k_streams.lock().unwrap_or_else(|e| e.into_inner());
            map.get(&m.name).cloned()
        };
        let on = m.ty == GgmlType::Q4_K && self.decode_tuning().gate_up_streams;
        if let Some((w, up)) = streams.filter(|_| on) {
            return Ok((if up { 9 } else { 8 }, w));
        }
        let code = match (m.ty, super::upload::embed_type_code(m.ty)) {
            (_, Some(code)) => code,
            (ty, None) => {
                return Err(Error::TensorType {
                    tensor: m.name.clone(),
                    ty,
                    supported: "F32, F16, BF16, Q8_0, Q4_K, Q5_K, Q6_K for the batched prefill"
                        .into(),
                })
            }
        };
        Ok((code, self.device_weights(weights, m)?))
    }

    /// Matrix `m` dequantized to f16 into the device buffer at `dst` (n_out × n_in halves,
    /// row-major).
    ///
    /// # Safety
    /// `dst` must be a live device buffer of at least n_out × n_in halves.
    pub(crate) unsafe fn dequant_f16_into(
        &self,
        weights: &Weights,
        m: &Matrix,
        dst: u64,
    ) -> Result<()> {
        let (n_in, n_out) = (m.n_in, m.n_out);
        let (code, w) = self.dequant_source(weights, m)?;
        let st = self.stream();
        // Q4_K (also as gate/up streams) and Q6_K (split) 32 elements a thread, the others one.
        let vec = matches!(code, 4 | 7 | 8 | 9);
        let name = if vec { "dequant_f16_v" } else { "dequant_f16" };
        let f = self
            .decode
            .get(name)
            .ok_or_else(|| Error::Cuda(format!("kernel {name} not loaded")))?;
        let (wp, _) = w.device_ptr(st);
        let args = [
            KArg::P(wp),
            KArg::P(m.row_bytes() as u64),
            KArg::I(code),
            KArg::P(dst),
            KArg::I(n_out as i32),
            KArg::I(n_in as i32),
        ];
        let per = if vec { 32 } else { 1 };
        let cfg = LaunchConfig {
            grid_dim: (
                (n_out * n_in / per).div_ceil(256).min(65_535 * 16) as u32,
                1,
                1,
            ),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the weights hold n_out rows of `row_bytes` (the split layout: its
        // q6k_split_bytes; the gate/up streams: q4k_streams_bytes); `dst` n_out × n_in halves
        // (the caller's contract).
        unsafe { launch_ex(st, f, cfg, &args, 1) }
    }

    /// `y: [n_tok, n_out] (f32) = x: [n_tok, n_in] (f16) · Wᵀ` for matrix `m`: W from the
    /// f16 copies the device keeps (`Cuda::keep_prefill_weights`), else dequantized into `w16`
    /// (at least n_out × n_in halves) first; then one GEMM.
    pub(crate) fn prefill_product(
        &self,
        weights: &Weights,
        m: &Matrix,
        x16: &CudaSlice<u16>,
        n_tok: usize,
        w16: &mut CudaSlice<u16>,
        y: &mut CudaSlice<f32>,
    ) -> Result<()> {
        let blas_h = self
            .blas
            .as_ref()
            .map_err(|why| Error::Cuda(format!("batched prefill: {why}")))?;
        let (n_in, n_out) = (m.n_in, m.n_out);
        let kept = self.kept_prefill_weights(m);
        let w16_short = kept.is_none() && w16.len() < n_in * n_out;
        if w16_short || x16.len() < n_tok * n_in || y.len() < n_tok * n_out {
            return Err(Error::Cuda(format!(
                "prefill product {}: {} / {} / {} values for {n_tok} x {n_in} -> {n_out}",
                m.name,
                w16.len(),
                x16.len(),
                y.len()
            )));
        }
        let st = self.stream();
        let w16p = match &kept {
            Some(k) => k.device_ptr(st).0,
            None => {
                let (p, _) = w16.device_ptr(st);
                // SAFETY: w16 holds n_out × n_in halves (checked above).
                unsafe { self.dequant_f16_into(weights, m, p)? };
                p
            }
        };
        let (xp, _) = x16.device_ptr(st);
        let (yp, _) = y.device_ptr(st);
        let (alpha, beta) = (1.0f32, 0.0f32);
        let ty = blas::cudaDataType::CUDA_R_16F;
        // Row-major Y [n_tok, n_out] is column-major Yᵀ [n_out, n_tok] = W · Xᵀ, with W
        // row-major [n_out, n_in] read as column-major [n_in, n_out] transposed.
        // SAFETY: the pointers are live device buffers of the sizes checked above; alpha and
        // beta are host values (the handle's default pointer mode).
        unsafe {
            cudarc::cublas::result::gemm_ex(
                *blas_h.handle(),
                blas::cublasOperation_t::CUBLAS_OP_T,
                blas::cublasOperation_t::CUBLAS_OP_N,
                n_out as c_int,
                n_tok as c_int,
                n_in as c_int,
                &alpha as *const f32 as *const c_void,
                w16p as *const c_void,
                ty,
                n_in as c_int,
                xp as *const c_void,
                ty,
                n_in as c_int,
                &beta as *const f32 as *const c_void,
                yp as *mut c_void,
                blas::cudaDataType::CUDA_R_32F,
                n_out as c_int,
                blas::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                blas::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }
        .map_err(|e| Error::Cuda(format!("cuBLAS GEMM for {}: {e:?}", m.name)))?;
        Ok(())
    }
}
