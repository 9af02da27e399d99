//! Kernel launches through `cuLaunchKernelEx`, optionally with programmatic dependent launch
//! (PDL, sm_90+): the kernel may start while the previous kernel on the stream still runs,
//! and waits for it inside (`pdl_wait` in `common.cuh`), so that launch latency, block
//! scheduling and the next matrix's weight prefetch overlap the previous kernel's tail.
//! Captured into the decode graph as programmatic edges.

use std::ffi::c_void;

use cudarc::driver::{sys, CudaFunction, CudaStream, LaunchConfig};

use super::{SegKernel, SEG_KERNELS};
use crate::error::{Error, Result};

/// A kernel argument (device addresses as `u64`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum KArg {
    P(u64),
    I(i32),
    F(f32),
}

/// How the decode step launches its kernels. Chosen once per session (a captured graph keeps
/// it); settable for A/B measurements through `Cuda::set_decode_tuning`. Every choice gives
/// the same bits (checked by the CUDA parity test).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeTuning {
    /// Programmatic dependent launch between the step's kernels (ignored below sm_90).
    pub pdl: bool,
    /// SwiGLU and its int8 quantization as the epilogue of the FFN gate/up matvec (instead of
    /// the separate `swiglu_q8` kernel).
    pub fuse_swiglu: bool,
    /// Matvec blocks (lowest first: the ones launched early under PDL) that ask L2 for their
    /// first loop iteration's weight lines before waiting for the previous kernel (0: none).
    pub prefetch_blocks: u32,
    /// The Q/K/V/gate and output projections through `mvq_seg_21` (2 Q4_K rows per warp:
    /// twice the warps for these sub-wave grids) instead of the session's segment kernel.
    pub attn_rows2: bool,
    /// The Q/K/V/gate and output projections through `mvq_seg_sk4` (the K range split over
    /// the block's warps); takes precedence over `attn_rows2`.
    pub attn_k_split: bool,
    /// Q4_K FFN down projections through `mvq_seg_sk4` too.
    pub down_k_split: bool,
    /// The segment kernel of launches whose matrices are all Q6_K (the FFN down projection of
    /// the "more bits" layers, the LM head; `None`: the session's).
    pub q6k_kernel: Option<SegKernel>,
    /// Attention kernels ask L2 for each row's V when they load its K.
    pub attn_prefetch_v: bool,
    /// The merge of the split-K partials spread over the block (`attend_merge_gate_q8_v2`).
    pub merge_v2: bool,
    /// The norm tails as a cluster of 8 blocks (`norm_tail_q8_cl`, sm_90; rows of a multiple
    /// of 256 values) instead of one block.
    pub cluster_norm: bool,
    /// Cache rows per split-K attention block (at least `ROWS_PER_SPLIT`, 128: the partials
    /// are sized for that), for the per-head kernel and for the grouped one (long caches:
    /// with K staged through shared memory, two 32-row chunks per warp at 256 rows measured
    /// 148.3 → 152.2 tok/s at depth 32768 with every layer at 256).
    pub split_rows: usize,
    pub split_rows_grouped: usize,
}

impl Default for DecodeTuning {
    /// Measured on the H200 (bench/runs/2026-11-30-h200-e): Q6_K-only launches through
    /// `mvq_seg_44_lb4` (164.4 → 169.2 tok/s), the cluster norm tail (167.9 → 171.8), 256
    /// rows per split for the grouped attention. PDL, the SwiGLU epilogue, the L2
    /// prefetches, `mvq_seg_21` or `mvq_seg_sk4` for the attention projections and the
    /// spread merge did not help.
    fn default() -> Self {
        DecodeTuning {
            pdl: false,
            fuse_swiglu: false,
            prefetch_blocks: 0,
            attn_rows2: false,
            attn_k_split: false,
            down_k_split: false,
            q6k_kernel: SEG_KERNELS
                .iter()
                .find(|k| k.name == "mvq_seg_44_lb4")
                .copied(),
            attn_prefetch_v: false,
            merge_v2: false,
            cluster_norm: true,
            split_rows: 128,
            split_rows_grouped: 256,
        }
    }
}

impl DecodeTuning {
    /// Plain launches, every kernel separate: the step as it ran before.
    pub const PLAIN: DecodeTuning = DecodeTuning {
        pdl: false,
        fuse_swiglu: false,
        prefetch_blocks: 0,
        attn_rows2: false,
        attn_k_split: false,
        down_k_split: false,
        q6k_kernel: None,
        attn_prefetch_v: false,
        merge_v2: false,
        cluster_norm: false,
        split_rows: 128,
        split_rows_grouped: 128,
    };
}

/// Launches `f` on `stream` with `args`, with programmatic stream serialization when `pdl`,
/// in thread-block clusters of `cluster` blocks when above 1 (sm_90).
///
/// # Safety
/// The arguments must match the kernel's parameters and every address must be a live buffer
/// as large as the kernel indexes for the sizes passed with it. With `pdl`, the kernel must
/// call `pdl_wait()` in every block before touching data another kernel writes or reads.
pub(crate) unsafe fn launch_ex(
    stream: &CudaStream,
    f: &CudaFunction,
    cfg: LaunchConfig,
    args: &[KArg],
    pdl: bool,
    cluster: u32,
) -> Result<()> {
    let err = |e: sys::CUresult| Error::Cuda(format!("launching a decode kernel: {e:?}"));
    stream
        .context()
        .bind_to_thread()
        .map_err(|e| Error::Cuda(format!("binding the CUDA context: {e:?}")))?;
    let mut ptrs: Vec<*mut c_void> = args
        .iter()
        .map(|a| match a {
            KArg::P(p) => p as *const u64 as *mut c_void,
            KArg::I(i) => i as *const i32 as *mut c_void,
            KArg::F(x) => x as *const f32 as *mut c_void,
        })
        .collect();
    // SAFETY: an all-zero attribute is a valid value; the fields are set below.
    let mut attrs: [sys::CUlaunchAttribute; 2] = unsafe { std::mem::zeroed() };
    let mut n_attrs = 0;
    if pdl {
        let a = &mut attrs[n_attrs];
        a.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        a.value.programmaticStreamSerializationAllowed = 1;
        n_attrs += 1;
    }
    if cluster > 1 {
        let a = &mut attrs[n_attrs];
        a.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        a.value.clusterDim.x = cluster;
        a.value.clusterDim.y = 1;
        a.value.clusterDim.z = 1;
        n_attrs += 1;
    }
    let lc = sys::CUlaunchConfig {
        gridDimX: cfg.grid_dim.0,
        gridDimY: cfg.grid_dim.1,
        gridDimZ: cfg.grid_dim.2,
        blockDimX: cfg.block_dim.0,
        blockDimY: cfg.block_dim.1,
        blockDimZ: cfg.block_dim.2,
        sharedMemBytes: cfg.shared_mem_bytes,
        hStream: stream.cu_stream(),
        attrs: attrs.as_mut_ptr(),
        numAttrs: n_attrs as u32,
    };
    // SAFETY: `ptrs` points at the values in `args`, alive for the call; the caller's contract
    // covers what the kernel does with them.
    let r = unsafe {
        sys::cuLaunchKernelEx(
            &lc,
            f.cu_function(),
            ptrs.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    };
    match r {
        sys::CUresult::CUDA_SUCCESS => Ok(()),
        e => Err(err(e)),
    }
}
