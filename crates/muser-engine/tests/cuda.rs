//! CUDA parity and bandwidth, run on a GPU machine (`harness = false`): without a GPU it
//! reports "skipped: no GPU" instead of passing.
//!
//! 1. Op parity (test-backend-ops style): every kernel type × shapes × token counts against
//!    the oracle (`_ref`-dequantized weights, f64 dot products), printed seeds, guard values
//!    around the output, every element written, NaN never passes.
//! 2. Whole model: CUDA logits against `cpu-ref` on synthetic Glimmer files, sequences longer
//!    than the window, including the real head geometry (head_dim 128, 32 heads, 2 KV heads).
//! 3. The embedding gather (bit-identical to the `_ref` dequantizers), the GPU argmax, and
//!    the pinned-staging upload (every matrix byte-identical to the file).
//! 4. Bandwidth of each kernel on large matrices (timed, not asserted).
//! 5. Attention ops (split-K kernel + merge) against an f64 reference on f16 rings, wrapped
//!    and not, up to 131,072-row NoPE planes; the tensor-core kernel's A/B at depth
//!    (`cuda_test att PATH D...`).

use std::time::Instant;

use muser_engine::cuda::{
    address_words, available, AttnChoice, Cuda, CudaOptions, CudaSession, DecodeTuning, L2Prefetch,
    MmaAttn, Q8Act, Seg, SegKernel, TailPrefetch, WideMerge, ARGMAX_WORDS, Q5K_KERNELS,
    TAIL_PREFETCH_LABEL,
};
use muser_engine::{Cpu, CpuRef, Glimmer, LogitsFor};
use muser_gguf::GgmlType;
use muser_synth::{Preset, SynthConfig, TypePlan};

/// The tail prefetch over the whole of every next matvec (the parity checks': the same bits
/// as without).
const TAIL_ALL: TailPrefetch = TailPrefetch {
    o_proj: (0, 100),
    gate_up: (0, 100),
    down: (0, 100),
    qkvg: (0, 100),
    lm_head: (0, 100),
    kv_sliding: (0, 100),
    kv_full: (0, 100),
};

#[path = "cuda/argmax.rs"]
mod argmax;
#[path = "cuda/attn.rs"]
mod attn;
#[path = "cuda/modes.rs"]
mod modes;
#[path = "cuda/prefill.rs"]
mod prefill;
#[path = "cuda/speed.rs"]
mod speed;

use attn::*;
use speed::*;

struct Rng(u64);

impl Rng {
    fn f(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
}

const TYPES: [GgmlType; 7] = [
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
    GgmlType::Q8_0,
    GgmlType::F16,
    GgmlType::BF16,
    GgmlType::F32,
];

/// Against the f64 oracle with unrounded activations, for `n_tok` tokens. f32-activation
/// kernels: f32 accumulation only (measured 9.1e-13). Q4_K/Q6_K, and Q5_K for one token,
/// round activations to int8 in blocks of 32 (dp4a): measured max NMSE is printed by each
/// run; the CPU path's Q8_K rounding measured up to 5.6e-5 against the same kind of oracle.
fn op_tol(ty: GgmlType, n_tok: usize) -> f64 {
    match ty {
        GgmlType::Q4_K | GgmlType::Q6_K => 1e-4,
        GgmlType::Q5_K if n_tok == 1 => 1e-4,
        _ => 1e-9,
    }
}

fn weights(ty: GgmlType, n_in: usize, n_out: usize, rng: &mut Rng) -> (Vec<u8>, Vec<f32>) {
    let vals: Vec<f32> = (0..n_in * n_out).map(|_| rng.f() * 0.5).collect();
    let mut bytes = vec![0u8; ty.bytes_for((n_in * n_out) as u64).unwrap() as usize];
    muser_quant::quantize_row_fast(ty, &vals, &mut bytes).unwrap();
    let mut deq = vec![0f32; n_in * n_out];
    muser_quant::dequantize_row(ty, &bytes, &mut deq).unwrap();
    (bytes, deq)
}

/// A guarded output buffer back from the device: the values between `guard` guard values on
/// each side, and whether every guard still holds -12345 (nothing written out of bounds).
fn read_guarded(
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    yd: &cudarc::driver::CudaSlice<f32>,
    guard: usize,
) -> (Vec<f32>, bool) {
    let got = stream.clone_dtoh(yd).unwrap();
    let n = got.len() - 2 * guard;
    let guards_ok = got[..guard]
        .iter()
        .chain(&got[guard + n..])
        .all(|&v| v == -12345.0);
    (got[guard..guard + n].to_vec(), guards_ok)
}

fn op_parity(cuda: &Cuda) -> (usize, usize) {
    let (mut pass, mut fail) = (0, 0);
    let mut worst = 0f64;
    let mut worst_by_type = [0f64; TYPES.len()];
    let mut worst_split = 0f64;
    let mut worst_seg4 = 0f64;
    let mut worst_q5_one = 0f64;
    let mut flat_cases = 0;
    let stream = cuda.stream();
    for (ti, &ty) in TYPES.iter().enumerate() {
        let ins: &[usize] = match ty.block_size() {
            // 512, 2560, 6656: 2 blocks over whole loop trips of the segment kernel (8 blocks each).
            256 => &[256, 512, 2048, 2560, 6656],
            32 => &[32, 96, 2048, 6656],
            // 100: rows that are not 16-byte aligned take the scalar path.
            _ => &[32, 100, 2048, 6656],
        };
        for &n_in in ins {
            for &n_out in &[1usize, 7, 64, 129] {
                for &n_tok in &[1usize, 3, 8, 17] {
                    let seed = 0xc0da_0000
                        ^ ((ti as u64) << 24)
                        ^ ((n_in as u64) << 8)
                        ^ (n_out as u64 * 31 + n_tok as u64);
                    let mut rng = Rng(seed | 1);
                    let (w, deq) = weights(ty, n_in, n_out, &mut rng);
                    let x: Vec<f32> = (0..n_tok * n_in).map(|_| rng.f()).collect();
                    // Exact outputs, and per output the sum of squared products: a floor for
                    // the error normalisation, so an output that cancels to near zero cannot
                    // blow up the ratio (as in the CPU parity table).
                    let (want, floor): (Vec<f64>, Vec<f64>) = (0..n_tok * n_out)
                        .map(|i| {
                            let (t, o) = (i / n_out, i % n_out);
                            (0..n_in).fold((0.0, 0.0), |(s, f), k| {
                                let p = f64::from(deq[o * n_in + k]) * f64::from(x[t * n_in + k]);
                                (s + p, f + p * p)
                            })
                        })
                        .unzip();
                    // Guard values on both sides of the output.
                    const GUARD: usize = 64;
                    let n_y = n_tok * n_out;
                    let host_y = vec![-12345.0f32; n_y + 2 * GUARD];
                    let wd = stream.clone_htod(&w).unwrap();
                    let xd = stream.clone_htod(&x).unwrap();
                    let mut yd = stream.clone_htod(&host_y).unwrap();
                    // The kernel writes straight into the middle of the guarded buffer.
                    cuda.matvec_device(
                        ty,
                        &wd.as_view(),
                        &xd.as_view(),
                        &mut yd.slice_mut(GUARD..GUARD + n_y),
                        n_in,
                        n_out,
                        n_tok,
                    )
                    .unwrap();
                    let (got, guards_ok) = read_guarded(stream, &yd, GUARD);
                    let y = &got[..];
                    let finite = y.iter().all(|v| v.is_finite());
                    let err: f64 = y
                        .iter()
                        .zip(&want)
                        .map(|(a, b)| (f64::from(*a) - b).powi(2))
                        .sum();
                    let sig: f64 = want
                        .iter()
                        .zip(&floor)
                        .map(|(b, f)| (b * b).max(*f))
                        .sum::<f64>()
                        .max(1e-30);
                    let nmse = err / sig;
                    worst = worst.max(nmse);
                    if ty == GgmlType::Q5_K && n_tok == 1 {
                        worst_q5_one = worst_q5_one.max(nmse);
                    } else {
                        worst_by_type[ti] = worst_by_type[ti].max(nmse);
                    }
                    if guards_ok && finite && nmse <= op_tol(ty, n_tok) {
                        pass += 1;
                    } else {
                        fail += 1;
                        println!("FAIL mv {ty} n_in={n_in} n_out={n_out} n_tok={n_tok} seed={seed:#x}: nmse {nmse:.3e} finite {finite} guards {guards_ok}");
                    }
                    // One-token Q5_K through every compiled variant: the same bits as the
                    // engine's (each row's sums in the same order whatever the rows per warp).
                    if ty == GgmlType::Q5_K && n_tok == 1 && n_in % 256 == 0 {
                        for &(name, rows) in &Q5K_KERNELS {
                            let mut yd = stream.clone_htod(&host_y).unwrap();
                            cuda.matvec1_q5k_f32(
                                &wd.as_view(),
                                &xd.as_view(),
                                &mut yd.slice_mut(GUARD..GUARD + n_y),
                                n_in,
                                n_out,
                                rows,
                            )
                            .unwrap();
                            let (got, guards_ok) = read_guarded(stream, &yd, GUARD);
                            let differ = got
                                .iter()
                                .zip(y)
                                .filter(|(a, b)| a.to_bits() != b.to_bits())
                                .count();
                            if guards_ok && differ == 0 {
                                pass += 1;
                            } else {
                                fail += 1;
                                println!("FAIL mv Q5_K ({name}) n_in={n_in} n_out={n_out} seed={seed:#x}: {differ} of {n_y} differ from the engine's variant, guards {guards_ok}");
                            }
                        }
                    }
                    // One-token Q4_K and Q6_K also through the segment kernel the decode
                    // session uses, Q6_K in its split layout.
                    if matches!(ty, GgmlType::Q4_K | GgmlType::Q6_K) && n_tok == 1 {
                        let q6 = ty == GgmlType::Q6_K;
                        let split = if q6 {
                            cuda.q6k_split_from(&wd.as_view(), n_out, n_in, 1).unwrap()
                        } else {
                            wd.clone()
                        };
                        let mut act = Q8Act::new(cuda, n_in).unwrap();
                        cuda.quantize_into(&xd.as_view(), &mut act, n_in).unwrap();
                        let mut yd = stream.clone_htod(&host_y).unwrap();
                        let mut segs = [Seg {
                            ty,
                            split: q6.then_some(1),
                            w: split.as_view(),
                            y: yd.slice_mut(GUARD..GUARD + n_y),
                            n_out,
                        }];
                        cuda.matvec1_q8(SegKernel::default(), &mut segs, &act, n_in, None)
                            .unwrap();
                        let (got, guards_ok) = read_guarded(stream, &yd, GUARD);
                        let y = &got[..];
                        let finite = y.iter().all(|v| v.is_finite());
                        let err: f64 = y
                            .iter()
                            .zip(&want)
                            .map(|(a, b)| (f64::from(*a) - b).powi(2))
                            .sum();
                        let nmse = err / sig;
                        if q6 {
                            worst_split = worst_split.max(nmse);
                        } else {
                            worst_seg4 = worst_seg4.max(nmse);
                        }
                        if guards_ok && finite && nmse <= op_tol(ty, 1) {
                            pass += 1;
                        } else {
                            fail += 1;
                            println!("FAIL mv {ty} (segment kernel) n_in={n_in} n_out={n_out} seed={seed:#x}: nmse {nmse:.3e} finite {finite} guards {guards_ok}");
                        }
                        // Q6_K also through the flat kernel (the LM head's) on the layout in
                        // FLAT_UNITS units, where it applies: the segment kernel's bits.
                        if q6 {
                            let seg_y = y.to_vec();
                            let w4 = cuda.q6k_split_from(&wd.as_view(), n_out, n_in, 4).unwrap();
                            let mut yd = stream.clone_htod(&host_y).unwrap();
                            let mut seg = Seg {
                                ty,
                                split: Some(4),
                                w: w4.as_view(),
                                y: yd.slice_mut(GUARD..GUARD + n_y),
                                n_out,
                            };
                            // SAFETY: no key words.
                            let ran =
                                unsafe { cuda.matvec1_flat_q6ks(&mut seg, &act, n_in, None, 0) }
                                    .unwrap();
                            if ran.is_some() {
                                let (got, guards_ok) = read_guarded(stream, &yd, GUARD);
                                let y = &got[..];
                                let differ = y
                                    .iter()
                                    .zip(&seg_y)
                                    .filter(|(a, b)| a.to_bits() != b.to_bits())
                                    .count();
                                let finite = y.iter().all(|v| v.is_finite());
                                if guards_ok && finite && differ == 0 {
                                    pass += 1;
                                    flat_cases += 1;
                                } else {
                                    fail += 1;
                                    println!("FAIL mv Q6_K (flat, 4 units) n_in={n_in} n_out={n_out} seed={seed:#x}: {differ} of {n_y} differ from the segment kernel, finite {finite} guards {guards_ok}");
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    for (ty, w) in TYPES.iter().zip(worst_by_type) {
        println!(
            "op parity {ty}: worst NMSE {w:.3e} (tolerance {:.0e})",
            op_tol(*ty, 2)
        );
    }
    println!(
        "op parity Q5_K one token (int8 activations): worst NMSE {worst_q5_one:.3e} (tolerance {:.0e})",
        op_tol(GgmlType::Q5_K, 1)
    );
    println!(
        "op parity Q6_K one token, split layout: worst NMSE {worst_split:.3e} (tolerance {:.0e})",
        op_tol(GgmlType::Q6_K, 1)
    );
    println!(
        "op parity Q4_K one token, segment kernel: worst NMSE {worst_seg4:.3e} (tolerance {:.0e})",
        op_tol(GgmlType::Q4_K, 1)
    );
    println!(
        "op parity Q6_K one token, flat kernel on the 4-unit layout: {flat_cases} cases give the segment kernel's bits"
    );
    println!("op parity: {pass} cases pass, {fail} fail, worst NMSE {worst:.3e}");
    (pass, fail)
}

/// Embedding gather against the `_ref` dequantizer, bit for bit: every table type, rows of
/// several widths, first / middle / last rows, guard values around the output.
fn embed_parity(cuda: &Cuda) -> (usize, usize) {
    let (mut pass, mut fail) = (0, 0);
    let stream = cuda.stream();
    let types = [
        GgmlType::Q4_K,
        GgmlType::Q5_K,
        GgmlType::Q6_K,
        GgmlType::Q8_0,
        GgmlType::F16,
        GgmlType::BF16,
        GgmlType::F32,
    ];
    const GUARD: usize = 64;
    for (ti, &ty) in types.iter().enumerate() {
        let widths: &[usize] = match ty.block_size() {
            256 => &[256, 2048, 6656],
            _ => &[32, 96, 2048, 6656],
        };
        for &n in widths {
            let n_rows = 37;
            let seed = 0xe3bd_0000 ^ ((ti as u64) << 20) ^ n as u64;
            let mut rng = Rng(seed | 1);
            let (table, _) = weights(ty, n, n_rows, &mut rng);
            let rb = table.len() / n_rows;
            let td = stream.clone_htod(&table).unwrap();
            // The token given, or (fed) decoded from a folded argmax key.
            for (tok, fed) in [
                (0usize, false),
                (17, false),
                (n_rows - 1, false),
                (17, true),
            ] {
                let mut want = vec![0f32; n];
                muser_quant::dequantize_row(ty, &table[tok * rb..(tok + 1) * rb], &mut want)
                    .unwrap();
                let tokd = stream
                    .clone_htod(&[if fed { -1 } else { tok as i32 }])
                    .unwrap();
                // The key of value 1.5 at index `tok` (kernels/common.cuh's argmax_key).
                let key = (u64::from(1.5f32.to_bits() | 0x8000_0000) << 32)
                    | u64::from(u32::MAX - tok as u32);
                let kd = stream.clone_htod(&[key]).unwrap();
                let ka = if fed {
                    cudarc::driver::DevicePtr::device_ptr(&kd, stream).0
                } else {
                    0
                };
                let kin = stream.clone_htod(&address_words(ka)).unwrap();
                let mut xd = stream
                    .clone_htod(&vec![-12345.0f32; n + 2 * GUARD])
                    .unwrap();
                // SAFETY: the token is below the table's rows, or decoded from a live key of
                // a row below them.
                unsafe {
                    cuda.embed_gather(
                        ty,
                        &td.as_view(),
                        rb,
                        &tokd.as_view(),
                        &kin.as_view(),
                        &mut xd.slice_mut(GUARD..GUARD + n),
                        n,
                    )
                }
                .unwrap();
                let got = stream.clone_dtoh(&xd).unwrap();
                let guards_ok = got[..GUARD]
                    .iter()
                    .chain(&got[GUARD + n..])
                    .all(|&v| v == -12345.0);
                let diff = got[GUARD..GUARD + n]
                    .iter()
                    .zip(&want)
                    .filter(|(a, b)| a.to_bits() != b.to_bits())
                    .count();
                if guards_ok && diff == 0 {
                    pass += 1;
                } else {
                    fail += 1;
                    println!("FAIL embed_gather {ty} n={n} row={tok} fed {fed} seed={seed:#x}: {diff} values differ, guards {guards_ok}");
                }
            }
        }
    }
    // Argmax (over the grid's blocks): planted maxima, ties (the first index wins), a
    // vocabulary-sized row, NaN in the row (never chosen over a number), launched twice on
    // one scratch (its counter must come back to 0).
    for (case, n) in [
        (0u64, 1usize),
        (1, 1000),
        (2, 202_048),
        (3, 262_144),
        (4, 70_001),
        (5, 202_048),
    ] {
        let mut rng = Rng(0xa59a_0000 ^ case | 1);
        let mut v: Vec<f32> = (0..n).map(|_| rng.f()).collect();
        if n > 100 {
            let at = n / 3;
            v[at] = 7.0;
            v[n - 5] = 7.0;
        }
        if case == 4 {
            for x in v.iter_mut().skip(3).step_by(7) {
                *x = f32::NAN;
            }
        }
        if case == 5 {
            // The maximum in the last block's share, then only ties of it.
            v[n - 1] = 9.0;
            v[n - 2] = 9.0;
        }
        let want = muser_engine::sampling::argmax(&v);
        let vd = stream.clone_htod(&v).unwrap();
        let mut out = stream.alloc_zeros::<u32>(ARGMAX_WORDS).unwrap();
        let mut got = Vec::new();
        for _ in 0..2 {
            cuda.argmax_into(&vd.as_view(), n, &mut out).unwrap();
            let back = stream.clone_dtoh(&out).unwrap();
            // The arrival counter is back at 0 for the next launch.
            got.push(if back[1] == 0 {
                back[0] as usize
            } else {
                usize::MAX
            });
        }
        let got = if got[0] == got[1] { got[0] } else { usize::MAX };
        if got == want {
            pass += 1;
        } else {
            fail += 1;
            println!("FAIL argmax n={n}: {got} != {want}");
        }
    }
    println!("embed gather (bit-exact vs _ref) and argmax: {pass} pass, {fail} fail");
    (pass, fail)
}

/// The pinned-staging upload of a whole model with small staging buffers (every matrix
/// crosses several chunks, both buffers alternate): every file-layout matrix byte-identical.
fn upload_check(opts: &CudaOptions, model: &Glimmer) -> (usize, usize) {
    let dev = Cuda::new(opts).unwrap();
    let mut seen = Vec::new();
    let stage = (1 << 20) + 12_345;
    let rep = dev
        .upload_model_staged(model, stage, &mut |d, t| seen.push((d, t)))
        .unwrap();
    let monotonic = seen.windows(2).all(|w| w[0].0 <= w[1].0)
        && seen.last().is_some_and(|&(d, t)| d == t && t == rep.bytes);
    let w = &model.weights;
    let mut mats = vec![&w.token_embd];
    for l in &w.layers {
        mats.extend([&l.attn_q, &l.attn_k, &l.attn_v, &l.ffn_up]);
    }
    let (mut same, mut checked) = (0, 0);
    for m in mats {
        if let Some(b) = dev.download_weights(m).unwrap() {
            checked += 1;
            if b == w.bytes(m) {
                same += 1;
            } else {
                println!("FAIL upload {}: bytes differ", m.name);
            }
        }
    }
    let again = dev.upload_model(model, &mut |_, _| {}).unwrap();
    let ok = monotonic && checked > 0 && same == checked && again.matrices == 0;
    println!(
        "upload (staging {stage} B): {rep}; {same}/{checked} matrices byte-identical, progress monotonic {monotonic}, second call uploads {} {}",
        again.matrices,
        if ok { "ok" } else { "FAIL" }
    );
    (usize::from(ok), usize::from(!ok))
}

/// A fresh session with the device's current settings, stepped through `tokens`: the session
/// and the steps' logits, concatenated.
fn run_session<'m>(dev: &'m Cuda, gpu: &'m Glimmer, tokens: &[u32]) -> (CudaSession<'m>, Vec<f32>) {
    let mut s = CudaSession::new(dev, gpu, 64).unwrap();
    let mut got = Vec::new();
    for &t in tokens {
        got.extend(s.step(t).unwrap());
    }
    (s, got)
}

/// Logits whose bits differ (a difference in length counts as that many).
fn bits_differ(a: &[f32], b: &[f32]) -> usize {
    a.iter()
        .zip(b)
        .filter(|(x, y)| x.to_bits() != y.to_bits())
        .count()
        + a.len().abs_diff(b.len())
}

/// The oracle's bar for a whole-token session: nothing non-finite, KL and max |Δ log p| against
/// cpu-ref no worse than the CPU fast path's, no top-1 change at clear margins. Returns
/// (ok, KL, max |Δ log p|, top-1 changes).
fn oracle_bar(
    want: &[f32],
    got: &[f32],
    v: usize,
    kl_cpu: f64,
    d_cpu: f64,
) -> (bool, f64, f64, usize) {
    let (kl, d, miss) = distance(want, got, v);
    let ok = got.iter().all(|x| x.is_finite())
        && kl <= kl_cpu.max(1e-9)
        && d <= d_cpu.max(1e-4)
        && miss == 0;
    (ok, kl, d, miss)
}

/// One parity model's session inputs, with the CPU fast path's distances to cpu-ref (the
/// oracle's bar for a session option).
#[derive(Clone, Copy)]
pub(crate) struct OracleCase<'a> {
    pub name: &'a str,
    pub gpu: &'a Glimmer,
    pub tokens: &'a [u32],
    /// cpu-ref's logits for every step.
    pub want: &'a [f32],
    /// Vocabulary size (logits per step).
    pub v: usize,
    pub kl_cpu: f64,
    pub d_cpu: f64,
}

/// Adds a check's outcome to the tallies.
fn tally(ok: bool, pass: &mut usize, fail: &mut usize) {
    if ok {
        *pass += 1;
    } else {
        *fail += 1;
    }
}

fn log_softmax(x: &[f32]) -> Vec<f64> {
    let m = x.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let lse = x.iter().map(|&v| (v as f64 - m).exp()).sum::<f64>().ln() + m;
    x.iter().map(|&v| v as f64 - lse).collect()
}

/// KL(want ‖ got) max, max |Δ log p| and top-1 changes where `want`'s margin exceeds 0.05.
fn distance(want: &[f32], got: &[f32], v: usize) -> (f64, f64, usize) {
    let (mut kl_max, mut d_max, mut miss) = (0f64, 0f64, 0);
    for (r, o) in want.chunks(v).zip(got.chunks(v)) {
        let (lr, lo) = (log_softmax(r), log_softmax(o));
        let kl: f64 = lr.iter().zip(&lo).map(|(a, b)| a.exp() * (a - b)).sum();
        let d = lr
            .iter()
            .zip(&lo)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        kl_max = kl_max.max(kl);
        d_max = d_max.max(d);
        let top = |x: &[f32]| (0..x.len()).fold(0, |b, i| if x[i] > x[b] { i } else { b });
        let mut s = r.to_vec();
        s.sort_by(|a, b| b.total_cmp(a));
        if s[0] - s[1] > 0.05 && top(r) != top(o) {
            miss += 1;
        }
    }
    (kl_max, d_max, miss)
}

/// Whether the step takes the int8 path on a model of these dimensions (upload.rs's
/// `fused_dims`: multiples of 256, head_dim a multiple of 32).
fn int8_path(c: &muser_engine::GlimmerConfig) -> bool {
    c.n_embd % 256 == 0 && c.q_dim() % 256 == 0 && c.n_ff % 256 == 0 && c.head_dim % 32 == 0
}

/// Whether the LM head takes the flat kernel (`DecodeTuning::lm_flat`: the int8 path, whose
/// rows are whole super-blocks, a Q6_K head, an even number of super-blocks per row, at least
/// 4).
fn lm_head_flat(gpu: &Glimmer, tuned: DecodeTuning) -> bool {
    let nb = gpu.cfg.n_embd / 256;
    tuned.lm_flat
        && int8_path(&gpu.cfg)
        && gpu.weights.output.ty == GgmlType::Q6_K
        && nb % 2 == 0
        && nb >= 4
}

fn model_parity(cuda_opts: &CudaOptions) -> (usize, usize) {
    let (mut pass, mut fail) = (0, 0);
    let dir = std::env::temp_dir().join(format!("muser-cuda-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut cases: Vec<(&str, SynthConfig)> = Vec::new();
    for (name, ty, heads, kv, hd) in [
        ("q4km_hd64_gqa4", None, 4, 1, 64),
        ("q5k_hd128_gqa16", Some(GgmlType::Q5_K), 16, 1, 128),
        ("q6k_hd64_gqa4", Some(GgmlType::Q6_K), 8, 2, 64),
        ("q8_0_hd128", Some(GgmlType::Q8_0), 16, 1, 128),
        ("f16_hd64", Some(GgmlType::F16), 4, 1, 64),
        ("bf16_hd64", Some(GgmlType::BF16), 4, 1, 64),
    ] {
        let mut c = SynthConfig::preset(Preset::Tiny);
        c.n_vocab_text = 256;
        c.sliding_window = 8;
        c.n_head = heads;
        c.n_head_kv = kv;
        c.head_dim = hd;
        if let Some(t) = ty {
            c.types = TypePlan::uniform(t);
        }
        cases.push((name, c));
    }
    // Rows of 6 super-blocks (n_embd 1536): the flat gate/up launch with every lane shift (0,
    // 24, 16, 8) and its tightest accumulator reuse.
    let mut e6 = SynthConfig::preset(Preset::Tiny);
    e6.n_vocab_text = 256;
    e6.sliding_window = 8;
    e6.n_embd = 1536;
    cases.push(("q4km_e1536", e6));
    // The real head geometry on a mid-size model.
    let mut mid = SynthConfig::preset(Preset::Full30b);
    mid.n_layer = 8;
    mid.n_embd = 1024;
    mid.n_ff = 2048;
    mid.n_vocab_text = 4000;
    mid.sliding_window = 16;
    cases.push(("mid_hd128_h32_kv2", mid));
    for (name, cfg) in cases {
        let path = dir.join(format!("{name}.gguf"));
        muser_synth::write_model(&cfg, &path, &|_, _| {}).unwrap();
        let tokens: Vec<u32> = (0..40u32).map(|i| (i * 7919 + 13) % 2300).collect();
        let oracle = Glimmer::open(&path, Box::new(CpuRef::default())).unwrap();
        let mut kv = oracle.new_cache(64, 0);
        let want = oracle.forward(&mut kv, &tokens, LogitsFor::All).unwrap();
        let gpu = Glimmer::open(&path, Box::new(Cuda::new(cuda_opts).unwrap())).unwrap();
        if name.starts_with("mid") || name.starts_with("q6k") {
            let (p, f) = upload_check(cuda_opts, &gpu);
            pass += p;
            fail += f;
        }
        let mut kv = gpu.new_cache(64, 0);
        let t0 = Instant::now();
        let got = gpu.forward(&mut kv, &tokens, LogitsFor::All).unwrap();
        let secs = t0.elapsed().as_secs_f64();
        let v = oracle.cfg.n_vocab;
        let cpu = Glimmer::open(&path, Box::new(Cpu::new(None).unwrap())).unwrap();
        let mut kv = cpu.new_cache(64, 0);
        let fast = cpu.forward(&mut kv, &tokens, LogitsFor::All).unwrap();
        let (kl, d, miss) = distance(&want, &got, v);
        let (kl_cpu, d_cpu, _) = distance(&want, &fast, v);
        // The whole token on the GPU (device KV cache, every op a kernel).
        let dev = Cuda::new(cuda_opts).unwrap();
        // (cuda-att) The bit-identity checks below compare kernels that claim the same bits:
        // the tensor-core attention, held to the oracle's bar instead (mma_session_checks),
        // is off for them.
        // (cuda-att2) So is the wide merge (wide_merge_session_checks).
        dev.set_decode_tuning(DecodeTuning {
            attn_mma: None,
            wide_merge: None,
            ..dev.decode_tuning()
        });
        let mut sess = CudaSession::new(&dev, &gpu, 64).unwrap();
        let mut whole = Vec::with_capacity(got.len());
        let t1 = Instant::now();
        for &t in &tokens {
            whole.extend(sess.step(t).unwrap());
        }
        let secs_whole = t1.elapsed().as_secs_f64();
        // Steps started on two sessions before either is collected (the server's one-by-one
        // runner: the GPU runs one session's graph while the host samples another's logits):
        // the logits of `step`, bit for bit, and not the previous step's.
        {
            let mut a = CudaSession::new(&dev, &gpu, 64).unwrap();
            let mut b = CudaSession::new(&dev, &gpu, 64).unwrap();
            let (mut ga, mut gb) = (Vec::new(), Vec::new());
            let mut started = true;
            for &t in &tokens {
                started &= a.start_step(t).unwrap() && b.start_step(t).unwrap();
                if !started {
                    break;
                }
                ga.extend(a.finish_step().unwrap());
                gb.extend(b.finish_step().unwrap());
            }
            let diff = bits_differ(&ga, &whole) + bits_differ(&gb, &whole);
            let ok = started && diff == 0;
            println!(
                "model {name:20} steps started on two sessions before collecting: started {started}, {diff} logits differ from step's {}",
                if ok { "ok" } else { "FAIL" }
            );
            tally(ok, &mut pass, &mut fail);
        }
        // (round b) Greedy decode fed on the device (`greedy_fed`: the argmax writes the next
        // step's token into its parameters, the host queues every step) against `step_argmax`
        // fed its own output: the same tokens, in two runs (the second continuing the first's
        // sequence, across the span graphs' captures), and the same next logits after them.
        // With the argmax folded into the LM head (DecodeTuning::fold_argmax, where its flat
        // kernel runs) and without.
        let tuned = dev.decode_tuning();
        for fold in [tuned.fold_argmax, !tuned.fold_argmax] {
            dev.set_decode_tuning(DecodeTuning {
                fold_argmax: fold,
                ..tuned
            });
            let mut a = CudaSession::new(&dev, &gpu, 64).unwrap();
            let mut b = CudaSession::new(&dev, &gpu, 64).unwrap();
            let mut t = tokens[0];
            let want: Vec<u32> = (0..40)
                .map(|_| {
                    t = a.step_argmax(t).unwrap();
                    t
                })
                .collect();
            let mut got = b.greedy_fed(tokens[0], 25).unwrap();
            got.extend(b.greedy_fed(got[24], 15).unwrap());
            let same = got.iter().zip(&want).filter(|(x, y)| x == y).count();
            let diff = bits_differ(&a.step(7).unwrap(), &b.step(7).unwrap());
            // The fold ran wherever the LM head takes the flat kernel (as the profile test
            // below expects it).
            let flat = lm_head_flat(&gpu, tuned);
            let folded = b.folds_argmax();
            let ok = got == want && diff == 0 && folded == flat;
            println!(
                "model {name:20} greedy fed on the device (fold_argmax {fold}; LM head folds the argmax: {folded}, expected {flat}): {same} of {} tokens as step_argmax's, next logits {diff} differ {}",
                want.len(),
                if ok { "ok" } else { "FAIL" }
            );
            tally(ok, &mut pass, &mut fail);
        }
        dev.set_decode_tuning(tuned);
        // The grouped attention kernels against the per-head one: the same bits.
        let chosen = dev.attention();
        for other in [
            AttnChoice::PER_HEAD,
            AttnChoice::grouped(4),
            AttnChoice::grouped(8),
        ] {
            dev.set_attention(other);
            let diff = bits_differ(&run_session(&dev, &gpu, &tokens).1, &whole);
            println!(
                "model {name:20} attention {chosen:?} vs {other:?}: {diff} logits differ {}",
                if diff == 0 { "ok" } else { "FAIL" }
            );
            tally(diff == 0, &mut pass, &mut fail);
        }
        dev.set_attention(chosen);
        // Plain launches, and the default with the QK-norm fold or the SwiGLU fold flipped:
        // the same bits.
        let tuned = dev.decode_tuning();
        let plain = DecodeTuning {
            cluster_norm: tuned.cluster_norm,
            norm_one_sum: tuned.norm_one_sum,
            ..DecodeTuning::PLAIN
        };
        let flip_fold = DecodeTuning {
            fold_qk: !tuned.fold_qk,
            ..tuned
        };
        // SwiGLU folded into the gate/up launch vs separate (where it does not apply, gate/up
        // not Q4_K, both fall back to the separate kernels).
        let flip_swiglu = DecodeTuning {
            fold_swiglu: !tuned.fold_swiglu,
            ..tuned
        };
        // The gate/up launch's units as one stream of columns per warp: the same bits.
        let flip_flat = DecodeTuning {
            gate_up_flat: !tuned.gate_up_flat,
            ..tuned
        };
        // L2 prefetches by extra blocks of the norm tails and the attention: the same bits.
        let flip_prefetch = DecodeTuning {
            l2_prefetch: match tuned.l2_prefetch {
                Some(_) => None,
                None => Some(L2Prefetch {
                    blocks: 16,
                    qkvg: 100,
                    o_proj: 100,
                    gate_up: 100,
                }),
            },
            ..tuned
        };
        // The attention's lanes asking L1 for their rows first: the same bits.
        let flip_l1 = DecodeTuning {
            l2_prefetch: Some(tuned.l2_prefetch.unwrap_or_default()),
            attn_l1_prefetch: !tuned.attn_l1_prefetch,
            ..tuned
        };
        // One-matrix launches without the segment dispatch: the same bits.
        let flip_one = DecodeTuning {
            one_matrix: !tuned.one_matrix,
            ..tuned
        };
        // (round s) Four warps per block in the one-matrix launches instead of the default's
        // one: the same bits.
        let four_warps = DecodeTuning {
            one_warps: if tuned.one_warps == 4 { 1 } else { 4 },
            ..tuned
        };
        // (round y) The LM head as flat warps (four 4-row units as one stream of columns):
        // the same bits.
        let flip_lm_flat = DecodeTuning {
            lm_flat: !tuned.lm_flat,
            ..tuned
        };
        // (round z) The FFN gate/up launch over the gate/up streams: the same bits.
        let flip_streams = DecodeTuning {
            gate_up_streams: !tuned.gate_up_streams,
            ..tuned
        };
        // (round x) The matvec launches' blocks prefetching the next matvec's weights once
        // done: the same bits.
        let flip_tail = DecodeTuning {
            tail_prefetch: match tuned.tail_prefetch {
                Some(_) => None,
                None => Some(TAIL_ALL),
            },
            ..tuned
        };
        for other in [
            plain,
            flip_fold,
            flip_swiglu,
            flip_flat,
            flip_prefetch,
            flip_l1,
            flip_one,
            four_warps,
            flip_tail,
            flip_lm_flat,
            flip_streams,
        ] {
            dev.set_decode_tuning(other);
            let diff = bits_differ(&run_session(&dev, &gpu, &tokens).1, &whole);
            println!(
                "model {name:20} launches {tuned:?} vs {other:?}: {diff} logits differ {}",
                if diff == 0 { "ok" } else { "FAIL" }
            );
            tally(diff == 0, &mut pass, &mut fail);
        }
        // With the prefetch on (sm_90 cluster tails): every layer's two norm tails and, in a
        // short session, its attention take the prefetching kernels.
        if dev.compute_capability.0 >= 9 {
            dev.set_decode_tuning(DecodeTuning {
                l2_prefetch: Some(L2Prefetch {
                    blocks: 16,
                    qkvg: 100,
                    o_proj: 100,
                    gate_up: 100,
                }),
                ..tuned
            });
            let mut s2 = CudaSession::new(&dev, &gpu, 64).unwrap();
            let labels = s2.profile_step(tokens[0]).unwrap();
            let tails = labels
                .iter()
                .filter(|(l, _, _)| l.ends_with("+ prefetch"))
                .count();
            let attn = labels
                .iter()
                .filter(|(l, _, _)| l.ends_with("_mp") || l.ends_with("_mpl"))
                .count();
            let (c, n_layer) = (&gpu.cfg, gpu.cfg.n_layer);
            // The entry norm and every layer's post-attention tail and next-layer tail (the
            // last layer's final norm has no next matvec to prefetch), where the step takes
            // the int8 path (upload.rs's fused_dims) and so the cluster tails.
            let int8 = int8_path(c);
            let want = if int8 { (2 * n_layer, n_layer) } else { (0, 0) };
            let ok_p = (tails, attn) == want;
            println!(
                "model {name:20} L2 prefetch on {tails} norm tails and {attn} attention launches of {n_layer} layers {}",
                if ok_p { "ok" } else { "FAIL" }
            );
            tally(ok_p, &mut pass, &mut fail);
        }
        dev.set_decode_tuning(tuned);
        // The split-K merge folded into the attention launch: the same bits.
        {
            let (p, f) = attn::fold_merge_session_checks(&dev, &gpu, &tokens, name);
            pass += p;
            fail += f;
        }
        // The default step's profile labels: which kernels each layer took.
        dev.set_decode_tuning(tuned);
        let labels = CudaSession::new(&dev, &gpu, 64)
            .unwrap()
            .profile_step(tokens[0])
            .unwrap();
        // (The tail-prefetch kernels' mark at the end of a label, counted below, left out.)
        let count = |f: &dyn Fn(&str) -> bool| {
            labels
                .iter()
                .filter(|(l, _, _)| f(l.strip_suffix(TAIL_PREFETCH_LABEL).unwrap_or(l)))
                .count()
        };
        // Where the default folds SwiGLU into the gate/up launch (Q4_K gate and up: the
        // Q4_K_M models), the profile's labels say so, on every layer.
        {
            let folded = count(&|l| l.ends_with("+ swiglu_q8"));
            let separate = count(&|l| l == "swiglu_q8");
            let flat = count(&|l| l.ends_with(" flat + swiglu_q8"));
            let n_layer = gpu.cfg.n_layer;
            let expect = if tuned.fold_swiglu {
                let q4k = |m: &muser_engine::weights::Matrix| m.ty == GgmlType::Q4_K;
                let layers = &gpu.weights.layers;
                layers
                    .iter()
                    .filter(|w| q4k(&w.ffn_gate) && q4k(&w.ffn_up))
                    .count()
            } else {
                0
            };
            // On the Q4_K_M models it must apply to every layer.
            let q4km = name.starts_with("mid") || name.starts_with("q4km");
            // The flat gate/up launch wherever it folds and a row has an even number of
            // super-blocks, at least 4 (seg.rs `flat_applies`).
            let nb = gpu.cfg.n_embd / 256;
            let want_flat = if tuned.gate_up_flat && nb % 2 == 0 && nb >= 4 {
                expect
            } else {
                0
            };
            // (round z) Over the gate/up streams wherever it is flat (rows in blocks of 32).
            let streams = count(&|l| l.ends_with(" (streams) flat + swiglu_q8"));
            let want_streams = if tuned.gate_up_streams && gpu.cfg.n_ff % 32 == 0 {
                want_flat
            } else {
                0
            };
            let ok_f = folded == expect
                && flat == want_flat
                && streams == want_streams
                && separate == n_layer - expect
                && (!q4km || !tuned.fold_swiglu || expect == n_layer);
            println!(
                "model {name:20} SwiGLU folded into the gate/up launch in {folded} of {} layers ({flat} flat, {streams} over the gate/up streams) {}",
                gpu.cfg.n_layer,
                if ok_f { "ok" } else { "FAIL" }
            );
            tally(ok_f, &mut pass, &mut fail);
        }
        // Where the default folds QK-norm into the Q/K/V/gate launch (sm_90, Q4_K Q and K):
        // the profile's labels say so. On the real head geometry it must apply to every layer.
        {
            let folded = count(&|l| l.ends_with("+ qk_norm_rope_store"));
            let must = tuned.fold_qk && name.starts_with("mid") && dev.compute_capability.0 >= 9;
            let ok_f = !must || folded == gpu.cfg.n_layer;
            println!(
                "model {name:20} QK-norm folded into the Q/K/V/gate launch in {folded} of {} layers {}",
                gpu.cfg.n_layer,
                if ok_f { "ok" } else { "FAIL" }
            );
            tally(ok_f, &mut pass, &mut fail);
        }
        // Where the one-matrix kernels apply (the int8 path; Q4_K output projections, Q4_K or
        // Q6_K down projections), the profile's labels say so: on the Q4_K_M models, both
        // launches of every layer.
        {
            let one = count(&|l| l.ends_with("(one)"));
            let n_layer = gpu.cfg.n_layer;
            let q4km = name.starts_with("mid") || name.starts_with("q4km");
            let ok_o = if tuned.one_matrix && q4km && int8_path(&gpu.cfg) {
                one == 2 * n_layer
            } else {
                one <= 2 * n_layer
            };
            println!(
                "model {name:20} one-matrix launches: {one} for {n_layer} layers {}",
                if ok_o { "ok" } else { "FAIL" }
            );
            tally(ok_o, &mut pass, &mut fail);
        }
        // (round y) The LM head takes the flat kernel wherever it applies (the int8 path, a
        // Q6_K head, an even number of super-blocks per row, at least 4), nowhere else.
        {
            let flat = count(&|l| l.ends_with("(flat)"));
            let want = usize::from(lm_head_flat(&gpu, tuned));
            let ok_l = flat == want;
            println!(
                "model {name:20} LM head flat launches: {flat} (expected {want}) {}",
                if ok_l { "ok" } else { "FAIL" }
            );
            tally(ok_l, &mut pass, &mut fail);
        }
        // (round x) With the tail prefetch on, the profile marks it on every matvec launch whose
        // kernel has a tail-prefetch entry (the folded Q/K/V/gate launch, the one-matrix
        // launches, the flat gate/up launch; the last layer's down projection prefetches the
        // LM head): on the real geometry's Q4_K_M model, 4 per layer.
        {
            dev.set_decode_tuning(DecodeTuning {
                tail_prefetch: Some(TAIL_ALL),
                ..tuned
            });
            let labels = CudaSession::new(&dev, &gpu, 64)
                .unwrap()
                .profile_step(tokens[0])
                .unwrap();
            let base = |l: &str| l.strip_suffix(TAIL_PREFETCH_LABEL).map(str::to_owned);
            let marked: Vec<String> = labels.iter().filter_map(|(l, _, _)| base(l)).collect();
            let all: Vec<&str> = labels.iter().map(|(l, _, _)| l.as_str()).collect();
            let takes = |l: &str| {
                l.ends_with("+ qk_norm_rope_store")
                    || l.ends_with("(one)")
                    || l.ends_with(" flat + swiglu_q8")
            };
            let eligible = all
                .iter()
                .map(|l| l.strip_suffix(TAIL_PREFETCH_LABEL).unwrap_or(l))
                .filter(|l| takes(l))
                .count();
            let want = eligible;
            let n_layer = gpu.cfg.n_layer;
            // The real head geometry's model takes every kernel that has the entry (the
            // smaller ones' rows or heads may not suit the flat or folded launches).
            let full =
                name.starts_with("mid") && int8_path(&gpu.cfg) && dev.compute_capability.0 >= 9;
            let ok_t = marked.len() == want
                && marked.iter().all(|l| takes(l))
                && (!full || want == 4 * n_layer);
            println!(
                "model {name:20} tail prefetch on {} matvec launches ({want} expected) of {n_layer} layers {}",
                marked.len(),
                if ok_t { "ok" } else { "FAIL" }
            );
            tally(ok_t, &mut pass, &mut fail);
            dev.set_decode_tuning(tuned);
        }
        // The options that change a summation order (the cluster norm tail, its one-exchange
        // post-norm), each flipped: held to the oracle's bar.
        for other in [
            DecodeTuning {
                cluster_norm: !tuned.cluster_norm,
                ..tuned
            },
            DecodeTuning {
                norm_one_sum: !tuned.norm_one_sum,
                ..tuned
            },
        ] {
            dev.set_decode_tuning(other);
            let got2 = run_session(&dev, &gpu, &tokens).1;
            let (ok_o, kl_o, d_o, miss_o) = oracle_bar(&want, &got2, v, kl_cpu, d_cpu);
            println!(
                "model {name:20} vs cpu-ref: cuda session cluster_norm {} norm_one_sum {} KL {kl_o:.3e} max|Δ| {d_o:.3e} top1-miss {miss_o} {}",
                other.cluster_norm,
                other.norm_one_sum,
                if ok_o { "ok" } else { "FAIL" }
            );
            tally(ok_o, &mut pass, &mut fail);
        }
        dev.set_decode_tuning(tuned);
        let case = OracleCase {
            name,
            gpu: &gpu,
            tokens: &tokens,
            want: &want,
            v,
            kl_cpu,
            d_cpu,
        };
        // The attention laid out by span: at the oracle's bar, a graph per span.
        let (p_s, f_s) = attn::span_session_checks(&dev, &case);
        pass += p_s;
        fail += f_s;
        // The batched prefill: at the oracle's bar, and applied.
        let (p_m, f_m) = prefill::prefill_checks(&dev, &case, &fast);
        pass += p_m;
        fail += f_m;
        // Tensor-core attention (cuda-att): at the oracle's bar, and applied.
        let (p_m, f_m) = mma_session_checks(&dev, &case);
        pass += p_m;
        fail += f_m;
        // The wide merge (cuda-att2): at the oracle's bar, and applied.
        let (p_m, f_m) = wide_merge_session_checks(&dev, &case);
        pass += p_m;
        fail += f_m;
        let (ok_w, kl_w, d_w, miss_w) = oracle_bar(&want, &whole, v, kl_cpu, d_cpu);
        println!(
            "model {name:20} vs cpu-ref: cuda session KL {kl_w:.3e} max|Δ| {d_w:.3e} top1-miss {miss_w} ({secs_whole:.2} s) {}",
            if ok_w { "ok" } else { "FAIL" }
        );
        tally(ok_w, &mut pass, &mut fail);
        let finite = got.iter().all(|x| x.is_finite());
        // At least as close to the oracle as the CPU fast path (ggml's rounding), no top-1
        // change at clear margins, nothing non-finite.
        let ok = finite && kl <= kl_cpu.max(1e-9) && d <= d_cpu.max(1e-4) && miss == 0;
        println!(
            "model {name:20} vs cpu-ref: cuda KL {kl:.3e} max|Δ| {d:.3e} top1-miss {miss} | cpu KL {kl_cpu:.3e} max|Δ| {d_cpu:.3e} ({} positions, {secs:.2} s) {}",
            tokens.len(),
            if ok { "ok" } else { "FAIL" }
        );
        tally(ok, &mut pass, &mut fail);
    }
    let _ = std::fs::remove_dir_all(&dir);
    (pass, fail)
}

fn main() {
    let arg = std::env::args().nth(1);
    if modes::measure(arg.as_deref()) {
        return;
    }
    if !available() {
        println!("cuda: skipped: no GPU");
        println!("cuda: 0 passed, 0 failed, 1 skipped");
        return;
    }
    let opts = CudaOptions::default();
    let cuda = Cuda::new(&opts).unwrap();
    println!(
        "device {} (sm_{}{})",
        cuda.device_name, cuda.compute_capability.0, cuda.compute_capability.1
    );
    let (p1, f1) = op_parity(&cuda);
    let (p3, f3) = embed_parity(&cuda);
    let (p5, f5) = argmax::folded_argmax_parity(&cuda);
    let (p3, f3) = (p3 + p5, f3 + f5);
    let (p2, f2) = model_parity(&opts);
    let (p4, f4) = attn_op_parity(&cuda);
    let (p2, f2) = (p2 + p4, f2 + f4);
    if arg.as_deref() != Some("parity") {
        bandwidth(&cuda);
        seg_sweep(&cuda, false);
    }
    println!("cuda: {} passed, {} failed", p1 + p2 + p3, f1 + f2 + f3);
    if f1 + f2 + f3 > 0 {
        std::process::exit(1);
    }
}
