//! The CUDA backend (cudarc with dynamic loading: the binary builds and runs without a CUDA
//! toolkit; a machine without a GPU gets a clear error). Kernels are `.cu` sources compiled at
//! run time with NVRTC for the device's architecture and cached on disk by source hash,
//! architecture and NVRTC version. Weights are uploaded once, in their quantized form, through
//! pinned staging (`upload.rs`).
//!
//! This first stage runs the matrix products on the GPU (every decode and short-batch matmul
//! of the graph) with f32 activations, so it is held to the exact oracle; the element-wise ops
//! and attention still run on the CPU.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, CudaView, CudaViewMut, LaunchConfig,
    PushKernelArg,
};
use muser_gguf::GgmlType;

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::kv::KvDtype;
use crate::ops::Numerics;
use crate::weights::{Matrix, Weights};

// `kernels/common.cuh` holds helpers shared by the matvec sources; NVRTC gets no include
// path, so it is prepended to each.
const MATVEC_SRC: &str = concat!(
    include_str!("kernels/common.cuh"),
    include_str!("kernels/matvec.cu")
);
const Q8ACT_SRC: &str = concat!(
    include_str!("kernels/common.cuh"),
    include_str!("kernels/q8act.cu")
);
const MVQ1_SRC: &str = concat!(
    include_str!("kernels/common.cuh"),
    include_str!("kernels/mvq1.cu"),
    include_str!("kernels/mvq5.cu")
);
const DECODE_SRC: &str = concat!(
    include_str!("kernels/common.cuh"),
    include_str!("kernels/decode.cu"),
    include_str!("kernels/gather.cu"),
    include_str!("kernels/prefill.cu"),
    include_str!("kernels/attend_group.cu"),
    include_str!("kernels/attend_mma.cu"),
    include_str!("kernels/prefill_mma.cu"),
    include_str!("kernels/attend_merge.cu"),
    include_str!("kernels/norm_cluster.cu"),
    include_str!("kernels/prefetch.cu")
);

mod gather;
mod launch;
mod prefill_cache;
mod prefill_gemm;
mod q5k;
mod seg;
mod session;
mod upload;
pub use gather::{address_words, argmax_of_key, ARGMAX_BLOCKS, ARGMAX_WORDS};
pub use launch::{
    DecodeTuning, L2Prefetch, MmaAttn, TailPrefetch, WideMerge, FOLD_MERGE_MAX_SPLITS,
};
pub use prefill_cache::{PrefillCacheReport, PrefillWeights, PREFILL_F16_RESERVE};
pub use q5k::{q5k_rows, Q5K_KERNELS};
pub use seg::{Q8Act, Seg, SegKernel, SEG_KERNELS};
use seg::{
    LM_FLAT_KERNEL, ONE_KERNELS, QKV_KERNEL, SWIGLU_FLAT_KERNEL, SWIGLU_KERNEL,
    SWIGLU_STREAMS_KERNEL, TP_KERNELS,
};
pub use session::{
    AttnChoice, AttnKernel, AttnShape, CudaSession, Omit, PREFILL_CHUNK, PREFILL_MIN_BATCH,
    TAIL_PREFETCH_LABEL,
};
pub use upload::{UploadReport, STAGE_BYTES};
/// Tokens per launch (the kernel's `MAX_TOK`).
const MAX_TOK: usize = 8;
/// Warps per thread block (the kernel's `WARPS`).
const WARPS: usize = 4;

/// Weight types with a kernel: the kernel's name and the rows one warp computes in it and in
/// its one-token entry `_t1` (the kernel's `R` for the multi-row kernels, else 1). Q4_K and
/// Q6_K use the int8-activation dp4a kernels of `q8act.cu` (f32 activations made them
/// arithmetic-bound at 1.4-1.9 TB/s); one-token Q8_0 takes 4 rows a warp (`mv_q8_0_staged`).
const KERNELS: &[(GgmlType, &str, usize, usize)] = &[
    (GgmlType::Q4_K, "mvq_q4_k", 4, 4),
    (GgmlType::Q5_K, "mv_q5_k", 1, 1),
    (GgmlType::Q6_K, "mvq_q6_k", 4, 4),
    (GgmlType::Q8_0, "mv_q8_0", 1, 4),
    (GgmlType::F16, "mv_f16", 1, 1),
    (GgmlType::BF16, "mv_bf16", 1, 1),
    (GgmlType::F32, "mv_f32", 1, 1),
];

/// A type's kernels: up to `MAX_TOK` tokens, one token, and the rows per thread block of each.
struct TypeKernels {
    many: CudaFunction,
    one: CudaFunction,
    rows_many: usize,
    rows_one: usize,
}

fn cuda_err(what: &str) -> impl FnOnce(cudarc::driver::DriverError) -> Error + '_ {
    move |e| Error::Cuda(format!("{what}: {e:?}"))
}

/// Whether a CUDA driver with at least one device can be used (never panics).
pub fn available() -> bool {
    // SAFETY: only checks whether the shared library can be opened.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return false;
    }
    CudaContext::device_count().is_ok_and(|n| n > 0)
}

/// Options of the CUDA backend.
#[derive(Debug, Clone, Default)]
pub struct CudaOptions {
    pub ordinal: usize,
    /// Where compiled kernels are cached (`None`: compile every time).
    pub cache_dir: Option<PathBuf>,
    /// Whether the batched prefill keeps f16 copies of the layer matrices
    /// (`Cuda::keep_prefill_weights`).
    pub prefill_weights: PrefillWeights,
}

/// A split-layout Q6_K copy's key: the tensor's name and the layout's units of 4 rows
/// per stream (`Cuda::device_q6k_split`).
type SplitKey = (String, usize);

/// An FFN gate or up matrix as its half of the gate/up streams, and which (true: up).
type StreamsHalf = (Arc<CudaSlice<u8>>, bool);

/// A CUDA device with the Muser kernels loaded.
pub struct Cuda {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// Kernels (up to `MAX_TOK` tokens, one token) and rows per thread block, by weight type.
    funcs: HashMap<GgmlType, TypeKernels>,
    /// f32 activations → int8 blocks of 32 with scale and sum (for the dp4a kernels).
    quantize: CudaFunction,
    /// The one-token segment kernels of `mvq1.cu`, by name.
    seg: HashMap<&'static str, CudaFunction>,
    /// The segment kernel one-token Q4_K/Q6_K products use (`None`: the older per-matrix
    /// kernels of `q8act.cu`, kept for comparison).
    one_token: Mutex<Option<SegKernel>>,
    /// Which attention kernel each layer gets (grouped `attend_group_*` or per-head
    /// `attend_split_*`), settable for A/B measurements.
    attn: Mutex<AttnChoice>,
    /// How the decode step launches its kernels (`DecodeTuning`), settable for A/B.
    tuning: Mutex<DecodeTuning>,
    /// The decode-step kernels of `decode.cu`, by name.
    decode: HashMap<&'static str, CudaFunction>,
    /// Reused int8-activation buffers (quants, scales, sums), grown on demand: allocating
    /// them per product cost more than the product (stream order makes reuse safe).
    q8_scratch: Mutex<Option<Q8Act>>,
    /// Uploaded weight matrices by tensor name.
    weights: Mutex<HashMap<String, Arc<CudaSlice<u8>>>>,
    /// Q6_K matrices in the split layout (`device_q6k_split`), by tensor name and units.
    q6k_split: Mutex<HashMap<SplitKey, Arc<CudaSlice<u8>>>>,
    /// FFN gate/up matrices in their half of the gate/up streams (`device_q4k_streams`), by
    /// tensor name, with the half (true: up).
    q4k_streams: Mutex<HashMap<String, StreamsHalf>>,
    /// The batched prefill's f16 copies of the layer matrices (`prefill_cache.rs`), and
    /// whether they may be made.
    f16_copies: prefill_cache::F16Copies,
    prefill_weights: PrefillWeights,
    pub device_name: String,
    pub compute_capability: (i32, i32),
    /// Shared memory one block may opt in to (bytes).
    pub max_smem_optin: usize,
    /// cuBLAS on the session's stream, for the batched prefill's GEMMs, or why not (library
    /// not installed, handle not created): prompts then go token by token.
    blas: std::result::Result<cudarc::cublas::CudaBlas, String>,
}

impl Cuda {
    pub fn new(opts: &CudaOptions) -> Result<Cuda> {
        // SAFETY: only checks whether the shared libraries can be opened (cudarc panics on
        // first use of a missing library, so this must come first).
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(Error::Cuda(
                "no CUDA driver (libcuda.so) on this machine: install the NVIDIA driver, or use --device cpu".into(),
            ));
        }
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return Err(Error::Cuda(
                "the CUDA driver is present but NVRTC (libnvrtc.so) is not: install the CUDA runtime compiler library".into(),
            ));
        }
        let n = CudaContext::device_count().map_err(cuda_err("counting CUDA devices"))?;
        if opts.ordinal >= n.max(0) as usize {
            return Err(Error::Cuda(format!(
                "CUDA device {} requested, {n} present",
                opts.ordinal
            )));
        }
        let ctx = CudaContext::new(opts.ordinal).map_err(cuda_err("creating a CUDA context"))?;
        let cc = ctx
            .compute_capability()
            .map_err(cuda_err("reading the compute capability"))?;
        let device_name = ctx.name().map_err(cuda_err("reading the device name"))?;
        let mut modules = Vec::new();
        for (tag, src) in [
            ("matvec", MATVEC_SRC),
            ("q8act", Q8ACT_SRC),
            ("decode", DECODE_SRC),
            ("mvq1", MVQ1_SRC),
        ] {
            let ptx = compile_cached(tag, src, cc, opts.cache_dir.as_deref())?;
            modules.push(
                ctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx))
                    .map_err(cuda_err("loading a kernel module"))?,
            );
        }
        let quantize = modules[1]
            .load_function("quantize_q8_32")
            .map_err(cuda_err("loading a kernel"))?;
        let mut decode = HashMap::new();
        for name in session::DECODE_KERNELS {
            decode.insert(
                *name,
                modules[2]
                    .load_function(name)
                    .map_err(cuda_err("loading a kernel"))?,
            );
        }
        // The tensor-core attention blocks take more than the default 48 KiB of shared memory:
        // opt in, for the variants the device can hold (`attn_mma_kernel` checks the same).
        let max_smem = ctx
            .attribute(
                cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )
            .map_err(cuda_err("reading the shared memory per block"))?
            .max(0) as usize;
        if cc.0 >= 8 {
            for k in session::ATTN_MMA_KERNELS {
                let (name, smem) = (
                    k.name,
                    session::attn_mma_smem(k.head_dim, k.chunk, k.stages),
                );
                if smem <= max_smem {
                    decode
                        .get(name)
                        .ok_or_else(|| {
                            Error::Cuda(format!("tensor-core attention kernel {name} not compiled"))
                        })?
                        .set_attribute(
                            cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                            smem as i32,
                        )
                        .map_err(cuda_err("setting a kernel's shared memory"))?;
                }
            }
        }
        let mut seg = HashMap::new();
        for name in SEG_KERNELS
            .iter()
            .map(|k| k.name)
            .chain([
                "q6k_split",
                "q4k_gu_streams",
                QKV_KERNEL,
                SWIGLU_KERNEL,
                SWIGLU_FLAT_KERNEL,
                SWIGLU_STREAMS_KERNEL,
                LM_FLAT_KERNEL,
            ])
            .chain(ONE_KERNELS.iter().map(|k| k.1))
            .chain(TP_KERNELS.iter().map(|k| k.1))
            .chain(Q5K_KERNELS.iter().map(|k| k.0))
        {
            seg.insert(
                name,
                modules[3]
                    .load_function(name)
                    .map_err(cuda_err("loading a kernel"))?,
            );
        }
        let mut funcs = HashMap::new();
        for &(ty, name, rows_many, rows_one) in KERNELS {
            let module = if name.starts_with("mvq_") {
                &modules[1]
            } else {
                &modules[0]
            };
            let load = |n: &str| {
                module
                    .load_function(n)
                    .map_err(cuda_err("loading a kernel"))
            };
            let (many, one) = (load(name)?, load(&format!("{name}_t1"))?);
            funcs.insert(
                ty,
                TypeKernels {
                    many,
                    one,
                    rows_many: WARPS * rows_many,
                    rows_one: WARPS * rows_one,
                },
            );
        }
        // One created stream does all the work (a CUDA graph cannot be captured on the legacy
        // default stream), so stream order alone orders every use of a buffer.
        // SAFETY: no buffer is shared with another stream, which is what event tracking
        // would otherwise synchronise.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(cuda_err("creating a stream"))?;
        // SAFETY: only checks whether libcublas can be opened (cudarc panics on first use of a
        // missing library).
        let blas = if unsafe { cudarc::cublas::sys::is_culib_present() } {
            cudarc::cublas::CudaBlas::new(stream.clone())
                .map_err(|e| format!("creating a cuBLAS handle: {e:?}"))
        } else {
            Err("libcublas is not installed".to_string())
        };
        Ok(Cuda {
            blas,
            ctx,
            stream,
            funcs,
            quantize,
            seg,
            one_token: Mutex::new(Some(SegKernel::default())),
            attn: Mutex::new(AttnChoice::default()),
            tuning: Mutex::new(DecodeTuning::default()),
            decode,
            q8_scratch: Mutex::new(None),
            weights: Mutex::new(HashMap::new()),
            q6k_split: Mutex::new(HashMap::new()),
            q4k_streams: Mutex::new(HashMap::new()),
            f16_copies: Mutex::new(HashMap::new()),
            prefill_weights: opts.prefill_weights,
            device_name,
            compute_capability: cc,
            max_smem_optin: max_smem,
        })
    }

    /// The weight matrix on the device, uploaded on first use.
    pub(crate) fn device_weights(
        &self,
        weights: &Weights,
        m: &Matrix,
    ) -> Result<Arc<CudaSlice<u8>>> {
        let mut map = self.weights.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(w) = map.get(&m.name) {
            return Ok(Arc::clone(w));
        }
        let w = Arc::new(
            self.stream
                .clone_htod(weights.bytes(m))
                .map_err(cuda_err("uploading weights"))?,
        );
        map.insert(m.name.clone(), Arc::clone(&w));
        Ok(w)
    }

    /// Bytes of weights on the device (both layouts of Q6_K matrices when both are there).
    pub fn weight_bytes(&self) -> usize {
        let map = self.weights.lock().unwrap_or_else(|e| e.into_inner());
        let split = self.q6k_split.lock().unwrap_or_else(|e| e.into_inner());
        let streams = self.q4k_streams.lock().unwrap_or_else(|e| e.into_inner());
        map.values()
            .chain(split.values())
            .chain(streams.values().map(|(w, _)| w))
            .map(|w| w.len())
            .sum()
    }

    /// `y: [n_tok, n_out] = x: [n_tok, n_in] · Wᵀ` with device buffers (for benchmarks).
    #[allow(clippy::too_many_arguments)]
    pub fn matvec_device(
        &self,
        ty: GgmlType,
        w: &CudaView<'_, u8>,
        x: &CudaView<'_, f32>,
        y: &mut CudaViewMut<'_, f32>,
        n_in: usize,
        n_out: usize,
        n_tok: usize,
    ) -> Result<()> {
        let tk = self.funcs.get(&ty).ok_or_else(|| Error::TensorType {
            tensor: "(cuda matvec)".into(),
            ty,
            supported: KERNELS
                .iter()
                .map(|k| k.0.name())
                .collect::<Vec<_>>()
                .join(", "),
        })?;
        let (f, rows_per_block) = if n_tok == 1 {
            (&tk.one, tk.rows_one)
        } else {
            (&tk.many, tk.rows_many)
        };
        let cfg = LaunchConfig {
            grid_dim: (n_out.div_ceil(rows_per_block) as u32, 1, 1),
            block_dim: (32 * WARPS as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        let (n_in_i, n_out_i) = (n_in as i32, n_out as i32);
        if n_tok == 1 && seg::SEG_TYPES.contains(&ty) {
            if let Some(k) = self.one_token_kernel() {
                return self.matvec1_q8_f32(ty, w, x, y, n_in, n_out, k);
            }
        }
        if matches!(ty, GgmlType::Q4_K | GgmlType::Q6_K) {
            return self.matvec_q8(f, cfg, w, x, y, n_in, n_out, n_tok);
        }
        // One Q5_K token over int8 activations (`q5k.rs`); short batches keep f32.
        if n_tok == 1 && ty == GgmlType::Q5_K {
            return self.matvec1_q5k_f32(w, x, y, n_in, n_out, q5k_rows(n_in, n_out));
        }
        for t0 in (0..n_tok).step_by(MAX_TOK) {
            let nt = (n_tok - t0).min(MAX_TOK) as i32;
            let xv = x.slice(t0 * n_in..);
            let mut yv = y.slice_mut(t0 * n_out..);
            let mut b = self.stream.launch_builder(f);
            b.arg(w)
                .arg(&xv)
                .arg(&mut yv)
                .arg(&n_in_i)
                .arg(&n_out_i)
                .arg(&nt);
            // SAFETY: the kernel reads `n_out` rows of `n_in` elements of `w` (the caller's
            // matrix has exactly that size), `nt` rows of `x` from `t0` and writes `nt` rows
            // of `y` from `t0`; both views hold at least that many.
            unsafe { b.launch(cfg) }.map_err(cuda_err("launching matvec"))?;
        }
        Ok(())
    }

    /// The dp4a path: quantize the activations on the device, then run the int8 kernel.
    #[allow(clippy::too_many_arguments)]
    fn matvec_q8(
        &self,
        f: &CudaFunction,
        cfg: LaunchConfig,
        w: &CudaView<'_, u8>,
        x: &CudaView<'_, f32>,
        y: &mut CudaViewMut<'_, f32>,
        n_in: usize,
        n_out: usize,
        n_tok: usize,
    ) -> Result<()> {
        if n_in % 32 != 0 || x.len() < n_tok * n_in {
            return Err(Error::Cuda(format!(
                "int8 activations need rows of a multiple of 32 (got {n_in})"
            )));
        }
        let n_blocks = n_tok * n_in / 32;
        let s = &self.stream;
        let mut guard = self.q8_scratch.lock().unwrap_or_else(|e| e.into_inner());
        if guard.as_ref().is_none_or(|q| q.da.len() < n_blocks) {
            *guard = Some(Q8Act::new(self, n_blocks * 32)?);
        }
        let q8: &mut Q8Act = Option::as_mut(&mut *guard)
            .ok_or_else(|| Error::Cuda("activation scratch missing".into()))?;
        let (qa, da, sa) = (&mut q8.qa, &mut q8.da, &mut q8.sa);
        let nb_i = n_blocks as i32;
        let qcfg = LaunchConfig {
            grid_dim: (n_blocks.div_ceil(WARPS) as u32, 1, 1),
            block_dim: (32 * WARPS as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = s.launch_builder(&self.quantize);
        b.arg(x)
            .arg(&mut *qa)
            .arg(&mut *da)
            .arg(&mut *sa)
            .arg(&nb_i);
        // SAFETY: one warp per 32-element block reads `n_blocks * 32` values of `x` (checked
        // above) and writes one block of `qa`, `da` and `sa` each, all sized `n_blocks`.
        unsafe { b.launch(qcfg) }.map_err(cuda_err("launching quantize"))?;
        let (n_in_i, n_out_i) = (n_in as i32, n_out as i32);
        let n_sub = n_in / 32;
        for t0 in (0..n_tok).step_by(MAX_TOK) {
            let nt = (n_tok - t0).min(MAX_TOK) as i32;
            let qv = qa.slice(t0 * n_in..);
            let dv = da.slice(t0 * n_sub..);
            let sv = sa.slice(t0 * n_sub..);
            let mut yv = y.slice_mut(t0 * n_out..);
            let mut b = s.launch_builder(f);
            b.arg(w)
                .arg(&qv)
                .arg(&dv)
                .arg(&sv)
                .arg(&mut yv)
                .arg(&n_in_i)
                .arg(&n_out_i)
                .arg(&nt);
            // SAFETY: as in `matvec_device`, with the int8 activations, scales and sums of
            // tokens `t0..t0 + nt` (each view starts at token `t0` and holds them).
            unsafe { b.launch(cfg) }.map_err(cuda_err("launching int8 matvec"))?;
        }
        Ok(())
    }

    /// The kernel one-token Q4_K/Q6_K products use (`None`: the older per-matrix kernels).
    pub fn one_token_kernel(&self) -> Option<SegKernel> {
        *self.one_token.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Chooses the one-token kernel (for A/B measurements).
    pub fn set_one_token_kernel(&self, k: Option<SegKernel>) {
        *self.one_token.lock().unwrap_or_else(|e| e.into_inner()) = k;
    }

    /// Which attention kernel each layer gets.
    pub fn attention(&self) -> AttnChoice {
        *self.attn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Chooses the attention kernels (for A/B measurements). Read when a session queues its
    /// kernels (its first two steps: a captured graph keeps the choice).
    pub fn set_attention(&self, a: AttnChoice) {
        *self.attn.lock().unwrap_or_else(|e| e.into_inner()) = a;
    }

    /// How the decode step launches its kernels.
    pub fn decode_tuning(&self) -> DecodeTuning {
        *self.tuning.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Chooses how the decode step launches its kernels (for A/B measurements). Read when a
    /// session queues its kernels (its first two steps: a captured graph keeps the choice).
    pub fn set_decode_tuning(&self, t: DecodeTuning) {
        *self.tuning.lock().unwrap_or_else(|e| e.into_inner()) = t;
    }

    /// Queues a kernel that keeps the GPU busy for `ns` nanoseconds, so that the launches
    /// queued behind it are timed without the host's launch gaps (benchmarks).
    pub fn spin(&self, ns: u64) -> Result<()> {
        let f = self
            .decode
            .get("spin_ns")
            .ok_or_else(|| Error::Cuda("kernel spin_ns not loaded".into()))?;
        let mut b = self.stream.launch_builder(f);
        b.arg(&ns);
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (32, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: no pointer arguments.
        unsafe { b.launch(cfg) }.map_err(cuda_err("launching spin"))?;
        Ok(())
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }
}

impl Backend for Cuda {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn numerics(&self) -> Numerics {
        Numerics::Exact
    }

    fn kv_dtype(&self) -> KvDtype {
        KvDtype::F32
    }

    fn matmul(
        &self,
        weights: &Weights,
        m: &Matrix,
        x: &[f32],
        n_tokens: usize,
        out: &mut [f32],
    ) -> Result<()> {
        if !self.funcs.contains_key(&m.ty) {
            return Err(Error::TensorType {
                tensor: m.name.clone(),
                ty: m.ty,
                supported: KERNELS
                    .iter()
                    .map(|k| k.0.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        let w = self.device_weights(weights, m)?;
        let xd = self
            .stream
            .clone_htod(x)
            .map_err(cuda_err("copying activations"))?;
        let mut yd = self
            .stream
            .alloc_zeros::<f32>(n_tokens * m.n_out)
            .map_err(cuda_err("allocating outputs"))?;
        self.matvec_device(
            m.ty,
            &w.as_view(),
            &xd.as_view(),
            &mut yd.as_view_mut(),
            m.n_in,
            m.n_out,
            n_tokens,
        )?;
        self.stream
            .memcpy_dtoh(&yd, out)
            .map_err(cuda_err("copying outputs back"))?;
        Ok(())
    }
}

/// NVRTC-compiled PTX for `cc`, from the disk cache when present.
fn compile_cached(
    tag: &str,
    src: &str,
    cc: (i32, i32),
    cache: Option<&std::path::Path>,
) -> Result<String> {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: plain out-parameters; the library's presence was checked by the caller.
    unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (src, cc, major, minor).hash(&mut h);
    let key = format!(
        "{tag}-{:016x}-sm{}{}-nvrtc{}.{}.ptx",
        h.finish(),
        cc.0,
        cc.1,
        major,
        minor
    );
    if let Some(dir) = cache {
        if let Ok(ptx) = std::fs::read_to_string(dir.join(&key)) {
            return Ok(ptx);
        }
    }
    let arch: &'static str = Box::leak(format!("compute_{}{}", cc.0, cc.1).into_boxed_str());
    let opts = cudarc::nvrtc::CompileOptions {
        arch: Some(arch),
        ..Default::default()
    };
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(src, opts)
        .map_err(|e| Error::Cuda(format!("NVRTC failed to compile the kernels: {e:?}")))?
        .to_src();
    if let Some(dir) = cache {
        // A cache that cannot be written only costs a recompile next time.
        let _ = std::fs::create_dir_all(dir);
        let _ = std::fs::write(dir.join(&key), &ptx);
    }
    Ok(ptx)
}

/// Compiles the kernels for `cc` without a GPU (NVRTC only), to check the sources.
pub fn compile_check(cc: (i32, i32)) -> Result<usize> {
    Ok(compile_all(cc)?.iter().map(|(_, p)| p.len()).sum())
}

/// Every kernel module's PTX for `cc` (NVRTC only, no GPU), by module name: for checking the
/// sources and, with `ptxas -v`, register use.
pub fn compile_all(cc: (i32, i32)) -> Result<Vec<(&'static str, String)>> {
    // SAFETY: only checks whether the shared library can be opened.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(Error::Cuda("NVRTC (libnvrtc.so) not found".into()));
    }
    [
        ("matvec", MATVEC_SRC),
        ("q8act", Q8ACT_SRC),
        ("decode", DECODE_SRC),
        ("mvq1", MVQ1_SRC),
    ]
    .into_iter()
    .map(|(tag, src)| Ok((tag, compile_cached(tag, src, cc, None)?)))
    .collect()
}
