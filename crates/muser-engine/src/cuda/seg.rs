//! One-token int8-activation matvecs (`kernels/mvq1.cu`): up to four Q4_K/Q6_K matrices that
//! share one quantized activation row in a single launch, so a decode step launches one
//! kernel for the Q, K, V and gate projections and one for the FFN gate and up; and the FFN
//! gate/up launch with SwiGLU and its int8 quantization folded in (`mvq_gu_swiglu`).

use cudarc::driver::{
    CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, LaunchConfig,
    PushKernelArg,
};

use super::launch::{launch_ex, KArg};
use muser_gguf::GgmlType;

use super::{cuda_err, Cuda, WARPS};
use crate::error::{Error, Result};

/// Weight types the segment kernels handle, in the kernel's type numbering (`SEG_Q4_K`, ...).
pub(crate) const SEG_TYPES: [GgmlType; 2] = [GgmlType::Q4_K, GgmlType::Q6_K];

/// A compiled variant of the segment kernel: its name, the rows one warp computes of a
/// Q4_K and of a Q6_K matrix, and the warps per block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegKernel {
    pub name: &'static str,
    pub rows_q4k: usize,
    pub rows_q6k: usize,
    pub warps: usize,
}

const fn sk(name: &'static str, rows_q4k: usize, rows_q6k: usize) -> SegKernel {
    SegKernel {
        name,
        rows_q4k,
        rows_q6k,
        warps: WARPS,
    }
}

/// `mvq_seg_42_lb5` with QK-norm, RoPE and the KV store as a cluster epilogue (`seg_qkv`).
pub(crate) const QKV_KERNEL: &str = "mvq_seg_42_lb5_qkv";

/// The FFN gate/up launch with SwiGLU and its int8 quantization folded in (`mvq1.cu`): 32
/// rows of both matrices per block of 4 warps.
pub(crate) const SWIGLU_KERNEL: &str = "mvq_gu_swiglu";

/// `SWIGLU_KERNEL` with each warp's four 4-row units as one stream of super-block columns
/// (`DecodeTuning::gate_up_flat`; the same bits for an even number of super-blocks per row).
pub(crate) const SWIGLU_FLAT_KERNEL: &str = "mvq_gu_swiglu_flat";

/// `SWIGLU_FLAT_KERNEL` over the gate/up streams (`DecodeTuning::gate_up_streams`,
/// `Cuda::device_q4k_streams`: each loop trip's loads contiguous runs); the same bits.
pub(crate) const SWIGLU_STREAMS_KERNEL: &str = "mvq_gu_swiglu_flat_gs";

/// The one-matrix kernels (`DecodeTuning::one_matrix`): a Q4_K matrix with
/// `mvq_seg_42_lb5`'s work split, a split Q6_K one with `mvq_seg_44_lb4`'s.
pub(crate) const ONE_KERNELS: [(&str, &str); 2] = [
    ("mvq_seg_42_lb5", "mvq_one_q4k_lb5"),
    ("mvq_seg_44_lb4", "mvq_one_q6ks_lb4"),
];

/// The kernels with the tail prefetch (`DecodeTuning::tail_prefetch`): each plain kernel and
/// its `_tp` entry (the same bits, four L2 prefetch ranges after the plain arguments).
pub(crate) const TP_KERNELS: [(&str, &str); 5] = [
    (QKV_KERNEL, "mvq_seg_42_lb5_qkv_tp"),
    (SWIGLU_FLAT_KERNEL, "mvq_gu_swiglu_flat_tp"),
    (SWIGLU_STREAMS_KERNEL, "mvq_gu_swiglu_flat_gs_tp"),
    ("mvq_one_q4k_lb5", "mvq_one_q4k_lb5_tp"),
    ("mvq_one_q6ks_lb4", "mvq_one_q6ks_lb4_tp"),
];

/// Kernel `name`, or its tail-prefetch entry when `pf` (the ranges' 8 arguments) is given and
/// it has one; the arguments to append.
fn with_tail_prefetch<'a>(name: &'a str, pf: Option<&'a [KArg]>) -> (&'a str, &'a [KArg]) {
    match (pf, TP_KERNELS.iter().find(|k| k.0 == name)) {
        (Some(pf), Some(k)) => (k.1, pf),
        _ => (name, &[]),
    }
}

/// Split-Q6_K rows with each warp's four 4-row units as one stream of super-block columns
/// (`DecodeTuning::lm_flat`: the LM head); the same bits as the segment kernels where
/// `flat_applies`.
pub(crate) const LM_FLAT_KERNEL: &str = "mvq_flat_q6ks_lb4";

/// Whether `SWIGLU_FLAT_KERNEL` gives `SWIGLU_KERNEL`'s bits (and `LM_FLAT_KERNEL` the
/// segment kernels') for rows of `n_in` values (a multiple of 256): an even number of
/// super-blocks (a unit's columns then sit on lanes shifted by a multiple of 8, which the
/// butterfly sum adds in the same pairs) and at least 4
/// (a loop trip of 8 columns then touches at most two units, one per accumulator set, and a
/// set is summed before the unit after next starts).
pub(crate) fn flat_applies(n_in: usize) -> bool {
    let nb = n_in / 256;
    nb % 2 == 0 && nb >= 4
}

/// Bytes of an FFN gate or up matrix of n_ff rows over n_in inputs as its half of the gate/up
/// streams (`kernels/common.cuh`'s q4g_bytes): per 8 rows (two 4-row units of a warp's
/// stream) the whole tiles of 4 rows × 8 super-blocks its columns touch, ceil(nb / 4) of them.
pub fn q4k_streams_bytes(n_ff: usize, n_in: usize) -> usize {
    (n_ff / 8) * (n_in / 256).div_ceil(4) * 4608
}

/// Whether an FFN gate/up pair of n_ff rows over n_in inputs can be laid out as the gate/up
/// streams (`kernels/common.cuh`'s q4g_part): whole blocks of 32 rows, rows the flat launch
/// takes (`flat_applies`).
pub(crate) fn streams_apply(n_ff: usize, n_in: usize) -> bool {
    n_ff % SWIGLU_ROWS == 0
        && n_ff > 0
        && n_in % 256 == 0
        && flat_applies(n_in)
        && n_ff * (n_in / 256) < i32::MAX as usize
}

/// Rows of the gate (and of the up) matrix per block of `SWIGLU_KERNEL`: one int8
/// quantization block.
const SWIGLU_ROWS: usize = 32;

/// Every variant compiled (for the launch-shape sweep); `SegKernel::default()` is the one the
/// engine uses.
pub const SEG_KERNELS: &[SegKernel] = &[
    sk("mvq_seg_42", 4, 2),
    sk("mvq_seg_42_lb5", 4, 2),
    sk("mvq_seg_82", 8, 2),
    sk("mvq_seg_44_lb4", 4, 4),
    sk("mvq_seg_41_lb5", 4, 1),
];

impl Default for SegKernel {
    /// `mvq_seg_42_lb5`: the fastest in the r2 sweep (Q4_K 19968 x 6656 3,182 GB/s vs 2,860
    /// without the occupancy bound) and in the 30B session (133-137 vs 132-135 tok/s).
    fn default() -> Self {
        SEG_KERNELS[1]
    }
}

impl SegKernel {
    pub(crate) fn rows_per_block(&self, ty: GgmlType) -> usize {
        match ty {
            GgmlType::Q6_K => self.warps * self.rows_q6k,
            _ => self.warps * self.rows_q4k,
        }
    }
}

/// One quantized activation row (or several): int8 quants `[n]`, and per 32-element block its
/// scale and d·Σq `[n / 32]`.
pub struct Q8Act {
    pub(crate) qa: CudaSlice<i8>,
    pub(crate) da: CudaSlice<f32>,
    pub(crate) sa: CudaSlice<f32>,
}

impl Q8Act {
    /// Buffers for `n` activations (a multiple of 32).
    pub fn new(cuda: &Cuda, n: usize) -> Result<Q8Act> {
        let s = cuda.stream();
        let nb = n.div_ceil(32).max(1);
        let e = cuda_err("allocating activation scratch");
        Ok(Q8Act {
            qa: s.alloc_zeros::<i8>(nb * 32).map_err(e)?,
            da: s
                .alloc_zeros::<f32>(nb)
                .map_err(cuda_err("allocating activation scratch"))?,
            sa: s
                .alloc_zeros::<f32>(nb)
                .map_err(cuda_err("allocating activation scratch"))?,
        })
    }

    /// Activations it can hold.
    pub fn len(&self) -> usize {
        self.qa.len()
    }

    pub fn is_empty(&self) -> bool {
        self.qa.is_empty()
    }
}

/// What `Cuda::matvec1_q8_qkv` folds in: `qk_norm_rope_store`'s arguments, as device
/// addresses. `qw`, `kw`: the Q and K norm weights `[head_dim]`; `cs`: `[head_dim]` (cos,
/// sin) pairs; `kc`, `vc`: the KV cache; `slot`: the cache row (an `i32` below its capacity).
pub(crate) struct QkvFold {
    pub(crate) qw: u64,
    pub(crate) kw: u64,
    pub(crate) head_dim: usize,
    pub(crate) eps: f32,
    pub(crate) cs: u64,
    pub(crate) rope: bool,
    pub(crate) kc: u64,
    pub(crate) vc: u64,
    pub(crate) slot: u64,
}

/// One matrix of a segment launch: `y: [n_out] = W: [n_out, n_in] · x`.
pub struct Seg<'a> {
    pub ty: GgmlType,
    /// Q6_K weights in the split layout of `Cuda::device_q6k_split` in that many units of 4
    /// rows per stream (`None`: the file's layout). Only the flat kernel reads `FLAT_UNITS`
    /// (`Cuda::matvec1_flat_q6ks`); the others read 1.
    pub split: Option<usize>,
    pub w: CudaView<'a, u8>,
    pub y: CudaViewMut<'a, f32>,
    pub n_out: usize,
}

fn type_code(ty: GgmlType, split: Option<usize>) -> Result<i32> {
    match (ty, split) {
        (GgmlType::Q4_K, _) => Ok(0),
        (GgmlType::Q6_K, Some(1)) => Ok(2),
        (GgmlType::Q6_K, None) => Ok(1),
        (GgmlType::Q6_K, Some(u)) => Err(Error::Cuda(format!(
            "segment matvec: Q6_K in the split layout in {u} units is read by the flat kernel only"
        ))),
        (ty, _) => Err(Error::TensorType {
            tensor: "(cuda segment matvec)".into(),
            ty,
            supported: "Q4_K, Q6_K".into(),
        }),
    }
}

/// Units of 4 rows per stream of the split-Q6_K layout the flat kernel reads
/// (`mvq1.cu`'s FLAT_UNITS: a warp's 16 rows).
pub const FLAT_UNITS: usize = 4;

impl Cuda {
    /// Whether the decode step reads FFN gate/up pair `g`, `u` as the gate/up streams
    /// (`DecodeTuning::gate_up_streams` with the folded flat launch, both Q4_K of one shape
    /// that `streams_apply` takes).
    pub(crate) fn gate_up_streams(
        &self,
        g: &crate::weights::Matrix,
        u: &crate::weights::Matrix,
    ) -> bool {
        let t = self.decode_tuning();
        t.gate_up_streams
            && t.gate_up_flat
            && t.fold_swiglu
            && self.one_token_kernel().is_some()
            && g.ty == GgmlType::Q4_K
            && u.ty == GgmlType::Q4_K
            && (g.n_out, g.n_in) == (u.n_out, u.n_in)
            && streams_apply(g.n_out, g.n_in)
    }

    /// An FFN gate (`up` false) or up matrix in its half of the gate/up streams
    /// (`kernels/common.cuh`'s q4g_part), rewritten on the device from the file's layout (the
    /// cached upload when there is one, else a temporary copy) and kept by name.
    pub(crate) fn device_q4k_streams(
        &self,
        weights: &crate::weights::Weights,
        m: &crate::weights::Matrix,
        up: bool,
    ) -> Result<std::sync::Arc<CudaSlice<u8>>> {
        let mut map = self.q4k_streams.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((w, half)) = map.get(&m.name) {
            if *half != up {
                return Err(Error::Cuda(format!(
                    "{}: kept as the other half of the gate/up streams",
                    m.name
                )));
            }
            return Ok(std::sync::Arc::clone(w));
        }
        let raw = self.file_copy(weights, m)?;
        let out =
            std::sync::Arc::new(self.q4k_streams_from(&raw.as_view(), m.n_out, m.n_in, up)?);
        map.insert(m.name.clone(), (std::sync::Arc::clone(&out), up));
        Ok(out)
    }

    /// Matrix `m` on the device in the file's layout, to rewrite into another: the cached
    /// upload when there is one, else a temporary copy (not cached).
    fn file_copy(
        &self,
        weights: &crate::weights::Weights,
        m: &crate::weights::Matrix,
    ) -> Result<std::sync::Arc<CudaSlice<u8>>> {
        let cached = self
            .weights
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&m.name)
            .cloned();
        match cached {
            Some(w) => Ok(w),
            None => Ok(std::sync::Arc::new(
                self.stream
                    .clone_htod(weights.bytes(m))
                    .map_err(cuda_err("uploading weights"))?,
            )),
        }
    }

    /// An n_ff × n_in Q4_K matrix in the file's layout rewritten into its half (`up`) of the
    /// gate/up streams.
    pub fn q4k_streams_from(
        &self,
        raw: &CudaView<'_, u8>,
        n_ff: usize,
        n_in: usize,
        up: bool,
    ) -> Result<CudaSlice<u8>> {
        let bytes = n_ff * (n_in / 256) * 144;
        if !streams_apply(n_ff, n_in) || raw.len() < bytes {
            return Err(Error::Cuda(format!(
                "Q4_K gate/up streams: {} bytes for {n_ff} rows of {n_in} (rows in blocks of \
                 {SWIGLU_ROWS}, an even number of super-blocks, at least 4)",
                raw.len()
            )));
        }
        let mut out = self
            .stream
            .alloc_zeros::<u8>(q4k_streams_bytes(n_ff, n_in))
            .map_err(cuda_err("allocating gate/up streams"))?;
        let f = self
            .seg
            .get("q4k_gu_streams")
            .ok_or_else(|| Error::Cuda("kernel q4k_gu_streams not loaded".into()))?;
        let (rows, nb, half) = (n_ff as i32, (n_in / 256) as i32, i32::from(up));
        let mut b = self.stream.launch_builder(f);
        b.arg(raw).arg(&mut out).arg(&rows).arg(&nb).arg(&half);
        let cfg = LaunchConfig {
            grid_dim: (
                (n_ff * (n_in / 256)).div_ceil(256).clamp(1, 65_535) as u32,
                1,
                1,
            ),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: reads n_ff × nb blocks of 144 bytes of `raw` (checked above) and writes each
        // into its own 144 bytes of `out` (q4g_part, within q4k_streams_bytes).
        unsafe { b.launch(cfg) }.map_err(cuda_err("launching q4k_gu_streams"))?;
        Ok(out)
    }

    /// Units of the split layout the decode step reads an LM head of `n_in` columns in:
    /// `FLAT_UNITS` where it takes the flat kernel (`DecodeTuning::lm_flat`, `flat_applies`),
    /// else 1.
    pub fn lm_units(&self, n_in: usize) -> usize {
        if self.decode_tuning().lm_flat && n_in % 256 == 0 && flat_applies(n_in) {
            FLAT_UNITS
        } else {
            1
        }
    }
}

impl Cuda {
    /// Quantizes `x: [n]` (n a multiple of 32) into `act`.
    pub fn quantize_into(&self, x: &CudaView<'_, f32>, act: &mut Q8Act, n: usize) -> Result<()> {
        if n % 32 != 0 || x.len() < n || act.len() < n {
            return Err(Error::Cuda(format!(
                "int8 activations need a multiple of 32 values within the buffers (got {n})"
            )));
        }
        let nb = (n / 32) as i32;
        let cfg = LaunchConfig {
            grid_dim: ((n / 32).div_ceil(WARPS) as u32, 1, 1),
            block_dim: (32 * WARPS as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = self.stream.launch_builder(&self.quantize);
        b.arg(x)
            .arg(&mut act.qa)
            .arg(&mut act.da)
            .arg(&mut act.sa)
            .arg(&nb);
        // SAFETY: one warp per 32-element block reads `n` values of `x` and writes `n / 32`
        // blocks of the activation buffers, all checked to hold that many above.
        unsafe { b.launch(cfg) }.map_err(cuda_err("launching quantize"))?;
        Ok(())
    }

    /// Up to four one-token products over the same quantized activation row `act` (of
    /// `n_in` values) in one launch. `post`: the LM head's (scale, softcap), applied to every
    /// output.
    pub fn matvec1_q8(
        &self,
        kernel: SegKernel,
        segs: &mut [Seg<'_>],
        act: &Q8Act,
        n_in: usize,
        post: Option<(f32, f32)>,
    ) -> Result<()> {
        let (post_on, scale, cap) = match post {
            Some((s, c)) => (1i32, s, c),
            None => (0, 1.0, 0.0),
        };
        let tail = [KArg::I(post_on), KArg::F(scale), KArg::F(cap)];
        // SAFETY: the tail is the plain segment kernel's (post, scale, cap).
        unsafe { self.seg_launch(kernel, kernel.name, segs, act, n_in, &tail, 1) }
    }

    /// Launches kernel `name` over one matrix: arguments (weights, n_out, output, the int8
    /// activations, n_in) then `tail`, `rows` rows per warp and `warps` warps per block.
    ///
    /// # Safety
    /// `name` must take those arguments, read `rows` rows of `seg` per warp and write only
    /// their outputs (below n_out); `tail` must be what it expects after them.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn rows_launch(
        &self,
        name: &str,
        seg: &mut Seg<'_>,
        act: &Q8Act,
        n_in: usize,
        tail: &[KArg],
        rows: usize,
        warps: u32,
        what: &str,
    ) -> Result<()> {
        if n_in % 256 != 0 || act.len() < n_in {
            return Err(Error::Cuda(format!(
                "{what}: n_in {n_in} (a multiple of 256 within {})",
                act.len()
            )));
        }
        check_seg(seg, n_in, what)?;
        let st = &self.stream;
        let (w, _) = seg.w.device_ptr(st);
        let (y, _) = seg.y.device_ptr_mut(st);
        let mut args = vec![KArg::P(w), KArg::I(seg.n_out as i32), KArg::P(y)];
        args.extend(act_args(act, n_in, st));
        args.extend_from_slice(tail);
        let cfg = LaunchConfig {
            grid_dim: (seg.n_out.div_ceil(rows * warps as usize) as u32, 1, 1),
            block_dim: (32 * warps, 1, 1),
            shared_mem_bytes: 0,
        };
        let f = self
            .seg
            .get(name)
            .ok_or_else(|| Error::Cuda(format!("kernel {name} not loaded")))?;
        // SAFETY: the weights hold n_out rows of n_in elements (check_seg), the output n_out
        // values and the activations n_in (checked above); the caller's contract on `name`.
        unsafe { launch_ex(st, f, cfg, &args, 1) }
    }

    /// One product through its one-matrix kernel (`ONE_KERNELS`: the same bits as `kernel`,
    /// without the segment dispatch): `None` (nothing launched) where none matches `kernel`
    /// and the matrix's type (Q4_K with `mvq_seg_42_lb5`, split Q6_K with `mvq_seg_44_lb4`).
    /// `pf`: L2 prefetch ranges for its blocks to issue once done (`TP_KERNELS`).
    pub(crate) fn matvec1_one(
        &self,
        kernel: SegKernel,
        seg: &mut Seg<'_>,
        act: &Q8Act,
        n_in: usize,
        pf: Option<&[KArg]>,
    ) -> Result<Option<()>> {
        let name = match (seg.ty, seg.split, kernel.name) {
            (GgmlType::Q4_K, _, k) if k == ONE_KERNELS[0].0 => ONE_KERNELS[0].1,
            (GgmlType::Q6_K, Some(1), k) if k == ONE_KERNELS[1].0 => ONE_KERNELS[1].1,
            _ => return Ok(None),
        };
        let (name, pf) = with_tail_prefetch(name, pf);
        // Each warp takes 4 rows (ONE_ENTRY's), whatever the warps per block.
        let warps = self.decode_tuning().one_warps.clamp(1, kernel.warps as u32);
        // SAFETY: ONE_ENTRY's arguments, then a `_tp` kernel's prefetch ranges (`pf`, live
        // weight buffers); each warp reads and writes its own 4 rows.
        unsafe { self.rows_launch(name, seg, act, n_in, pf, 4, warps, "one-matrix matvec")? };
        Ok(Some(()))
    }

    /// One split-Q6_K matrix (in `FLAT_UNITS` units: `Cuda::device_q6k_split`) through
    /// `LM_FLAT_KERNEL`, its outputs through the logit scale and softcap when `post`; `None`
    /// (nothing launched) where that kernel does not apply (another type or layout, or rows
    /// whose super-blocks `flat_applies` rejects). `key`: the device address of two words
    /// (read when the kernel runs) that hold the address of a 64-bit argmax key (0 in both:
    /// none), into which the kernel folds the greedy argmax of its outputs (an atomic max of
    /// their keys: larger values larger, on equal values the lower row; NaN never; decoded by
    /// `argmax_of_key`). 0: no key words.
    ///
    /// # Safety
    /// With `key` non-zero, its two words must be live device memory, holding 0 or the
    /// address of a live, 8-byte aligned device word when the kernel runs.
    pub unsafe fn matvec1_flat_q6ks(
        &self,
        seg: &mut Seg<'_>,
        act: &Q8Act,
        n_in: usize,
        post: Option<(f32, f32)>,
        key: u64,
    ) -> Result<Option<()>> {
        if seg.ty != GgmlType::Q6_K
            || seg.split != Some(FLAT_UNITS)
            || n_in % 256 != 0
            || !flat_applies(n_in)
        {
            return Ok(None);
        }
        let (scale, cap) = post.unwrap_or((1.0, 0.0));
        let tail = [
            KArg::I(i32::from(post.is_some())),
            KArg::F(scale),
            KArg::F(cap),
            KArg::P(key),
        ];
        // SAFETY: the kernel's arguments after the rows' (post, scale, cap, the key words:
        // the caller's contract); each warp reads and writes its own 16 rows (FLAT_UNITS
        // units of 4, clamped to n_out).
        unsafe {
            self.rows_launch(
                LM_FLAT_KERNEL,
                seg,
                act,
                n_in,
                &tail,
                16,
                4,
                "flat Q6_K matvec",
            )?
        };
        Ok(Some(()))
    }

    /// The Q, K, V and gate products (`segs`, in that order) through `QKV_KERNEL`, with
    /// QK-norm, RoPE and the KV store as its cluster epilogue; `None` (nothing launched) where
    /// that kernel does not apply: before sm_90, another segment kernel than
    /// `mvq_seg_42_lb5`, Q or K not Q4_K, a head that is not 2-8 blocks, or a segment that is
    /// not whole clusters. `fold`: the norm weights, head size, eps, RoPE and cache arguments
    /// of `qk_norm_rope_store` (device addresses). `pf`: L2 prefetch ranges for its blocks
    /// to issue once done (`TP_KERNELS`).
    ///
    /// # Safety
    /// `fold`'s addresses must be live buffers as `QkvFold` describes, for a KV cache of
    /// `segs[1].n_out` values per row.
    pub(crate) unsafe fn matvec1_q8_qkv(
        &self,
        kernel: SegKernel,
        segs: &mut [Seg<'_>],
        act: &Q8Act,
        n_in: usize,
        fold: &QkvFold,
        pf: Option<&[KArg]>,
    ) -> Result<Option<()>> {
        let rb = kernel.rows_per_block(GgmlType::Q4_K);
        let cluster = fold.head_dim / rb;
        let ok = self.compute_capability.0 >= 9
            && kernel.name == "mvq_seg_42_lb5"
            && segs.len() == 4
            && segs[..2].iter().all(|s| s.ty == GgmlType::Q4_K)
            && fold.head_dim % rb == 0
            && (2..=8).contains(&cluster)
            && segs[2].n_out == segs[1].n_out
            && segs
                .iter()
                .all(|s| s.n_out.div_ceil(kernel.rows_per_block(s.ty)) % cluster == 0)
            && segs[..2].iter().all(|s| s.n_out % fold.head_dim == 0);
        if !ok {
            return Ok(None);
        }
        let mut tail = vec![
            KArg::P(fold.qw),
            KArg::P(fold.kw),
            KArg::I(fold.head_dim as i32),
            KArg::F(fold.eps),
            KArg::P(fold.cs),
            KArg::I(i32::from(fold.rope)),
            KArg::P(fold.kc),
            KArg::P(fold.vc),
            KArg::P(fold.slot),
        ];
        let (name, pf) = with_tail_prefetch(QKV_KERNEL, pf);
        tail.extend_from_slice(pf);
        // SAFETY: the tail is seg_qkv's (and the prefetch ranges of the `_tp` entry); the
        // caller's contract (`QkvFold`) covers its addresses; every segment's blocks are whole
        // clusters of one head (checked above).
        unsafe { self.seg_launch(kernel, name, segs, act, n_in, &tail, cluster as u32)? };
        Ok(Some(()))
    }

    /// The FFN gate and up products (Q4_K `gate`, `up`: `[n_ff, n_in]` over the int8 row
    /// `act`) with SwiGLU and its quantization folded in (`SWIGLU_KERNEL`): writes
    /// `h = silu(gate · x) · (up · x)` `[n_ff]` and its int8 row into `out`, the same bits as
    /// the segment kernel followed by `swiglu_q8`. `None` (nothing launched) where it does not
    /// apply: a matrix not Q4_K, `n_ff` not a multiple of 32, `n_in` not a multiple of 256.
    /// With `flat` where `flat_applies`, `SWIGLU_FLAT_KERNEL` (the same bits); `Some(true)`
    /// says it ran. `out` must be another buffer than `act` (blocks still
    /// read `act` while others write). `pf`: L2 prefetch ranges (`TP_KERNELS`; the flat
    /// kernel only).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn matvec1_q8_swiglu(
        &self,
        gate: (GgmlType, &CudaView<'_, u8>),
        up: (GgmlType, &CudaView<'_, u8>),
        act: &Q8Act,
        n_in: usize,
        n_ff: usize,
        h: &mut CudaViewMut<'_, f32>,
        out: &mut Q8Act,
        flat: bool,
        streams: bool,
        pf: Option<&[KArg]>,
    ) -> Result<Option<bool>> {
        let applies = gate.0 == GgmlType::Q4_K
            && up.0 == GgmlType::Q4_K
            && n_ff % SWIGLU_ROWS == 0
            && n_ff > 0
            && n_in % 256 == 0;
        if !applies {
            return Ok(None);
        }
        let bytes = if streams {
            q4k_streams_bytes(n_ff, n_in) as u64
        } else {
            (n_ff as u64)
                .checked_mul(n_in as u64)
                .and_then(|n| GgmlType::Q4_K.bytes_for(n))
                .unwrap_or(u64::MAX)
        };
        if (gate.1.len() as u64) < bytes
            || (up.1.len() as u64) < bytes
            || h.len() < n_ff
            || act.len() < n_in
            || out.len() < n_ff
        {
            return Err(Error::Cuda(format!(
                "gate/up + SwiGLU: {} / {} weight bytes, {} outputs, {} / {} activations for \
                 {n_ff} x {n_in}",
                gate.1.len(),
                up.1.len(),
                h.len(),
                act.len(),
                out.len()
            )));
        }
        let flat = flat && flat_applies(n_in);
        if streams && !(flat && streams_apply(n_ff, n_in)) {
            return Err(Error::Cuda(format!(
                "gate/up + SwiGLU: the gate/up streams of {n_ff} x {n_in} are read by the flat \
                 launch only (flat {flat})"
            )));
        }
        let (name, pf) = if streams {
            with_tail_prefetch(SWIGLU_STREAMS_KERNEL, pf)
        } else if flat {
            with_tail_prefetch(SWIGLU_FLAT_KERNEL, pf)
        } else {
            (SWIGLU_KERNEL, &[][..])
        };
        let f = self
            .seg
            .get(name)
            .ok_or_else(|| Error::Cuda(format!("kernel {name} not loaded")))?;
        let st = &self.stream;
        let (wg, _) = gate.1.device_ptr(st);
        let (wu, _) = up.1.device_ptr(st);
        let (hp, _) = h.device_ptr_mut(st);
        let [qa, da, sa, n] = act_args(act, n_in, st);
        let (qo, _) = out.qa.device_ptr_mut(st);
        let (dout, _) = out.da.device_ptr_mut(st);
        let (so, _) = out.sa.device_ptr_mut(st);
        let mut args = vec![
            KArg::P(wg),
            KArg::P(wu),
            KArg::I(n_ff as i32),
            KArg::P(hp),
            qa,
            da,
            sa,
            n,
            KArg::P(qo),
            KArg::P(dout),
            KArg::P(so),
        ];
        args.extend_from_slice(pf);
        let cfg = LaunchConfig {
            grid_dim: ((n_ff / SWIGLU_ROWS) as u32, 1, 1),
            block_dim: (128, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the weights hold n_ff rows of n_in Q4_K elements, h and the output row n_ff
        // values, the input row n_in (all checked above); block b reads rows 32b .. 32b + 31
        // and writes h and the int8 block b of those rows only; `out` is a distinct
        // allocation from `act` (both borrowed here, one mutably). The flat kernel reads and
        // writes the same rows; its `_tp` entry only prefetches `pf`'s ranges besides.
        unsafe { launch_ex(st, f, cfg, &args, 1)? };
        Ok(Some(flat))
    }

    /// Launches segment kernel `name` (with `kernel`'s work split) over `segs`, its own
    /// parameters `tail` after the shared ones.
    ///
    /// # Safety
    /// `tail` must match the kernel's parameters after `n_in`, with live buffers as large as
    /// it indexes; `cluster` must divide every segment's block count.
    #[allow(clippy::too_many_arguments)]
    unsafe fn seg_launch(
        &self,
        kernel: SegKernel,
        name: &str,
        segs: &mut [Seg<'_>],
        act: &Q8Act,
        n_in: usize,
        tail: &[KArg],
        cluster: u32,
    ) -> Result<()> {
        if segs.is_empty() || segs.len() > 4 || n_in % 256 != 0 || act.len() < n_in {
            return Err(Error::Cuda(format!(
                "segment matvec: {} matrices (1-4), n_in {n_in} (a multiple of 256 within {})",
                segs.len(),
                act.len()
            )));
        }
        let f = self
            .seg
            .get(name)
            .ok_or_else(|| Error::Cuda(format!("kernel {name} not loaded")))?;
        let st = &self.stream;
        // (w, type, n_out, y, first block) per segment; unused ones have n_out 0.
        let mut segs_args = [(0u64, 0i32, 0i32, 0u64, 0i32); 4];
        let mut blocks = 0usize;
        for (a, s) in segs_args.iter_mut().zip(segs.iter_mut()) {
            check_seg(s, n_in, "segment matvec")?;
            let (w, _) = s.w.device_ptr(st);
            let (y, _) = s.y.device_ptr_mut(st);
            *a = (
                w,
                type_code(s.ty, s.split)?,
                s.n_out as i32,
                y,
                blocks as i32,
            );
            blocks += s.n_out.div_ceil(kernel.rows_per_block(s.ty));
        }
        let mut args = Vec::with_capacity(23 + tail.len());
        for (i, &(w, t, n, y, b)) in segs_args.iter().enumerate() {
            args.extend([KArg::P(w), KArg::I(t), KArg::I(n), KArg::P(y)]);
            if i > 0 {
                args.push(KArg::I(b));
            }
        }
        args.extend(act_args(act, n_in, st));
        args.extend_from_slice(tail);
        let cfg = LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (32 * kernel.warps as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: every segment's weights hold `n_out` rows of `n_in` elements and its output
        // `n_out` values (checked above); the activation buffers hold `n_in` values; each
        // block reads and writes only within its segment's rows; the tail is the caller's.
        unsafe { launch_ex(st, f, cfg, &args, cluster) }
    }

    /// One token through the segment kernel from f32 activations (quantized into the
    /// backend's scratch first).
    #[allow(clippy::too_many_arguments)]
    pub fn matvec1_q8_f32(
        &self,
        ty: GgmlType,
        w: &CudaView<'_, u8>,
        x: &CudaView<'_, f32>,
        y: &mut CudaViewMut<'_, f32>,
        n_in: usize,
        n_out: usize,
        kernel: SegKernel,
    ) -> Result<()> {
        self.with_quantized(x, n_in, |act| {
            let mut segs = [Seg {
                ty,
                split: None,
                w: w.slice(..),
                y: y.slice_mut(..),
                n_out,
            }];
            self.matvec1_q8(kernel, &mut segs, act, n_in, None)
        })
    }

    /// `f` on the int8 row of `x`'s first `n_in` values, quantized into the backend's
    /// scratch (grown to `n_in` when shorter).
    pub(crate) fn with_quantized<R>(
        &self,
        x: &CudaView<'_, f32>,
        n_in: usize,
        f: impl FnOnce(&Q8Act) -> Result<R>,
    ) -> Result<R> {
        let mut guard = self.q8_scratch.lock().unwrap_or_else(|e| e.into_inner());
        if guard.as_ref().is_none_or(|q| q.len() < n_in) {
            *guard = Some(Q8Act::new(self, n_in)?);
        }
        let act = Option::as_mut(&mut *guard)
            .ok_or_else(|| Error::Cuda("activation scratch missing".into()))?;
        self.quantize_into(x, act, n_in)?;
        f(act)
    }
}

impl Cuda {
    /// A Q6_K matrix on the device in the split layout of `kernels/common.cuh` in `units`
    /// units of 4 rows per stream (each part of a block 16-byte aligned, a warp's loop trip
    /// one run per part; 1 for every kernel but the flat one, `FLAT_UNITS`): the file's bytes
    /// and some padding, loadable 16 bytes at a time. Rewritten on the device from the file's
    /// layout (the cached upload when there is one, else a temporary copy), kept per units.
    pub(crate) fn device_q6k_split(
        &self,
        weights: &crate::weights::Weights,
        m: &crate::weights::Matrix,
        units: usize,
    ) -> Result<std::sync::Arc<CudaSlice<u8>>> {
        if m.ty != GgmlType::Q6_K || m.n_in % 256 != 0 {
            return Err(Error::TensorType {
                tensor: m.name.clone(),
                ty: m.ty,
                supported: "Q6_K rows of whole blocks".into(),
            });
        }
        let mut map = self.q6k_split.lock().unwrap_or_else(|e| e.into_inner());
        let key = (m.name.clone(), units);
        if let Some(w) = map.get(&key) {
            return Ok(std::sync::Arc::clone(w));
        }
        let raw = self.file_copy(weights, m)?;
        let out = self.q6k_split_from(&raw.as_view(), m.n_out, m.n_in, units)?;
        let out = std::sync::Arc::new(out);
        map.insert(key, std::sync::Arc::clone(&out));
        Ok(out)
    }
}

/// Bytes of an n_out × n_in Q6_K matrix in the split layout in `units` units
/// (`kernels/common.cuh`'s q6s_bytes_u): streams of 4 `units` rows (the last padded), each
/// 4 × (208 per block + 16 per loop trip of 8 blocks) over its `units` × n_in / 256 columns.
pub fn q6k_split_bytes(n_out: usize, n_in: usize, units: usize) -> usize {
    let cols = units * (n_in / 256);
    n_out.div_ceil(4 * units) * 4 * (208 * cols + 16 * cols.div_ceil(8))
}

impl Cuda {
    /// An n_out × n_in Q6_K matrix in the file's layout rewritten into the split layout in
    /// `units` units of 4 rows per stream (1 or `FLAT_UNITS`).
    pub fn q6k_split_from(
        &self,
        raw: &CudaView<'_, u8>,
        n_out: usize,
        n_in: usize,
        units: usize,
    ) -> Result<CudaSlice<u8>> {
        let n_blocks = n_out * n_in / 256;
        if units != 1 && units != FLAT_UNITS {
            return Err(Error::Cuda(format!(
                "Q6_K split: {units} units of 4 rows (1 or {FLAT_UNITS})"
            )));
        }
        if n_in % 256 != 0 || raw.len() < n_blocks * 210 || n_out > i32::MAX as usize {
            return Err(Error::Cuda(format!(
                "Q6_K split: {} bytes for {n_out} rows of {n_in}",
                raw.len()
            )));
        }
        let mut out = self
            .stream
            .alloc_zeros::<u8>(q6k_split_bytes(n_out, n_in, units))
            .map_err(cuda_err("allocating split Q6_K weights"))?;
        let f = self
            .seg
            .get("q6k_split")
            .ok_or_else(|| Error::Cuda("kernel q6k_split not loaded".into()))?;
        let (rows, nb, u) = (n_out as i32, (n_in / 256) as i32, units as i32);
        let mut b = self.stream.launch_builder(f);
        b.arg(raw).arg(&mut out).arg(&rows).arg(&nb).arg(&u);
        let cfg = LaunchConfig {
            grid_dim: (n_blocks.div_ceil(256).clamp(1, 65_535) as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: reads n_blocks × 210 bytes of `raw` and writes within the q6k_split_bytes
        // of `out` (both checked above).
        unsafe { b.launch(cfg) }.map_err(cuda_err("launching q6k_split"))?;
        Ok(out)
    }
}

/// Whether `seg`'s weights hold its n_out rows of `n_in` elements and its output n_out values.
fn check_seg(seg: &Seg<'_>, n_in: usize, what: &str) -> Result<()> {
    let bytes = match seg.split {
        Some(units) if seg.ty == GgmlType::Q6_K => q6k_split_bytes(seg.n_out, n_in, units) as u64,
        _ => seg
            .ty
            .bytes_for((seg.n_out * n_in) as u64)
            .unwrap_or(u64::MAX),
    };
    if (seg.w.len() as u64) < bytes || seg.y.len() < seg.n_out {
        return Err(Error::Cuda(format!(
            "{what}: {} weight bytes / {} outputs for {} x {n_in} {}",
            seg.w.len(),
            seg.y.len(),
            seg.n_out,
            seg.ty
        )));
    }
    Ok(())
}

/// The int8 activation row's kernel arguments: values, block scales, block sums, n_in.
fn act_args(act: &Q8Act, n_in: usize, st: &CudaStream) -> [KArg; 4] {
    let (qa, _) = act.qa.device_ptr(st);
    let (da, _) = act.da.device_ptr(st);
    let (sa, _) = act.sa.device_ptr(st);
    [KArg::P(qa), KArg::P(da), KArg::P(sa), KArg::I(n_in as i32)]
}

#[cfg(test)]
mod tests {
    use super::{flat_applies, q4k_streams_bytes, q6k_split_bytes, streams_apply, FLAT_UNITS};

    #[test]
    fn flat_gate_up_only_where_it_gives_the_same_bits() {
        // 30B (n_embd 6656: 26 super-blocks) and the mid parity model (1024: 4) take it.
        assert!(flat_applies(6656));
        assert!(flat_applies(1024));
        assert!(flat_applies(1536));
        // Odd counts shift lanes by 4 (other butterfly pairs); 2 super-blocks put four units
        // in one trip, more than the two accumulator sets.
        assert!(!flat_applies(256));
        assert!(!flat_applies(512));
        assert!(!flat_applies(2304));
    }

    #[test]
    fn split_layout_sizes_follow_the_stream_arithmetic() {
        // The LM head, 202,048 x 6,656 (26 super-blocks a row). 1 unit: 50,512 groups of 4
        // rows, each 4 trips (3 of 8 blocks, 1 of 2): 4 x (208 x 26 + 16 x 4) bytes.
        assert_eq!(q6k_split_bytes(202_048, 6656, 1), 50_512 * 4 * 5472);
        // 4 units: 12,628 streams of 16 rows, each 104 columns in 13 full trips.
        assert_eq!(
            q6k_split_bytes(202_048, 6656, FLAT_UNITS),
            12_628 * 4 * (208 * 104 + 16 * 13)
        );
        // Rows that are not a whole stream are padded to one; never fewer bytes than the
        // blocks' 208 quant and scale bytes.
        for (n_out, n_in) in [
            (1, 256),
            (7, 2048),
            (129, 2560),
            (6656, 19_968),
            (8704, 6656),
        ] {
            for units in [1, FLAT_UNITS] {
                let b = q6k_split_bytes(n_out, n_in, units);
                assert!(b >= n_out * n_in / 256 * 208, "{n_out} x {n_in}, {units}");
                assert_eq!(b % 64, 0, "every part 16-byte aligned");
                assert_eq!(
                    b,
                    q6k_split_bytes(n_out.next_multiple_of(4 * units), n_in, units)
                );
            }
        }
    }

    #[test]
    fn gate_up_streams_sizes_and_shapes() {
        // The 30B FFN (19,968 rows of 26 super-blocks): 2,496 streams of 8 rows a matrix, 7
        // tiles each (the trip that crosses from gate into up padded in both halves).
        assert_eq!(q4k_streams_bytes(19_968, 6656), 2496 * 7 * 4608);
        assert_eq!(q4k_streams_bytes(19_968, 6656), 19_968 * 26 * 144 / 26 * 28);
        // 4 super-blocks (the mid parity model): no padding.
        assert_eq!(q4k_streams_bytes(64, 1024), 64 * 4 * 144);
        assert!(streams_apply(19_968, 6656) && streams_apply(2560, 1536));
        // Rows not in blocks of 32, or rows the flat launch does not take: the file's layout.
        assert!(!streams_apply(19_960, 6656) && !streams_apply(0, 6656));
        assert!(!streams_apply(19_968, 6400) && !streams_apply(19_968, 512));
    }
}
