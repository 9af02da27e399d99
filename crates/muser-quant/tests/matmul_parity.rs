//! Matmul parity table in the style of llama.cpp's `test-backend-ops`: every matmul weight
//! type × shapes that hit each code path, random valid data from a printed xorshift seed.
//!
//! Per case: (a) the AVX2 kernels against the scalar ones (same quantized activations, so
//! only the f32 summation order differs), (b) both against an f64 oracle on the
//! *unquantized* activations (so the error is the activation rounding; NMSE as
//! test-backend-ops), plus guard values around `out`, every element written, no NaN.
//! Also batch / thread-count invariance, typed errors, and (c) the scalar kernels against a
//! literal port of ggml's generic C for Q4_K × Q8_K and Q8_0 × Q8_0.
//!
//! `cargo test -p muser-quant --test matmul_parity -- --nocapture` prints the measured
//! errors per weight type.

mod matmul_util;

use matmul_util::{random_activations, random_weights, Rng};
use muser_quant::vecdot::{kquants, legacy};
use muser_quant::{
    activation_row_size, cast_blocks, dequantize_row, matmul, matmul_with, quantize_activation,
    quantize_row_q8k_ref, row_size, BlockQ4K, BlockQ80, BlockQ8K, Error, GgmlType, Isa, Kernels,
    MATMUL_TYPES,
};

/// Max |simd − scalar| relative to the output's Σ|w|·|x| (measured max 1.7e-7, Q5_1; the
/// k-quants ≤ 6.6e-8).
const SIMD_REL_TOL: f64 = 1e-6;

/// NMSE tolerance against the f64 oracle on unquantized activations, per activation type.
fn nmse_tol(act: GgmlType) -> f64 {
    match act {
        GgmlType::Q8_K => 1e-4, // measured max 5.6e-5 (Q2_K), Q4_K 5.3e-5, Q6_K 2.0e-5
        GgmlType::Q8_0 => 1e-4, // measured max 5.1e-5 (IQ4_NL), Q8_0 3.6e-5
        GgmlType::Q8_1 => 1e-4, // measured max 3.2e-5 (Q4_1)
        GgmlType::F16 => 1e-6,  // measured max 8.0e-8
        GgmlType::BF16 => 1e-4, // measured max 4.8e-6
        GgmlType::F32 => 1e-10, // measured max 3.3e-14 (avx2; scalar 1.4e-15)
        other => panic!("no tolerance for activation type {other}"),
    }
}

/// A NaN with a payload no computation produces.
const SENTINEL: u32 = 0x7fa5_a5a5;
const GUARD: usize = 8;

fn n_in_cases(ty: GgmlType) -> &'static [usize] {
    match ty.block_size() {
        256 => &[256, 768, 2048],
        32 => &[32, 96, 256, 768, 2048],
        // Plain float rows: also lengths that are not a multiple of the 32-wide SIMD step.
        _ => &[32, 100, 256, 777, 2048],
    }
}
const N_OUT: [usize; 4] = [1, 7, 64, 129];
const N_TOKENS: [usize; 3] = [1, 3, 17];

/// Runs `matmul_with` into a guarded buffer; checks guards, full coverage and no NaN.
fn guarded_matmul(
    k: &Kernels,
    w: &[u8],
    n_in: usize,
    n_out: usize,
    x: &[f32],
    n_tokens: usize,
    what: &str,
) -> Vec<f32> {
    let len = n_out * n_tokens;
    let mut buf = vec![f32::from_bits(SENTINEL); len + 2 * GUARD];
    matmul_with(k, w, n_in, n_out, x, n_tokens, &mut buf[GUARD..GUARD + len])
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    for (i, v) in buf[..GUARD].iter().chain(&buf[GUARD + len..]).enumerate() {
        assert_eq!(v.to_bits(), SENTINEL, "{what}: guard value {i} overwritten");
    }
    let out = buf[GUARD..GUARD + len].to_vec();
    for (i, v) in out.iter().enumerate() {
        assert!(v.to_bits() != SENTINEL, "{what}: output {i} never written");
        assert!(v.is_finite(), "{what}: output {i} is {v}");
    }
    out
}

#[derive(Default)]
struct Stats {
    cases: usize,
    nmse_scalar: f64,
    nmse_simd: f64,
    simd_rel: f64,
    simd_isa: Option<Isa>,
}

/// Σ(got − want)² / Σ max(want², floor): test-backend-ops' NMSE, with each reference value's
/// square floored at `floor = Σ_k (w_k·x_k)²`, its typical size for random signs, so that an
/// output which happens to cancel to ~0 (a 1×1 case) cannot blow the ratio up.
fn nmse(got: &[f32], want: &[f64], floor: &[f64]) -> f64 {
    let err: f64 = got
        .iter()
        .zip(want)
        .map(|(g, w)| (f64::from(*g) - w).powi(2))
        .sum();
    let sig: f64 = want.iter().zip(floor).map(|(w, f)| (w * w).max(*f)).sum();
    err / sig
}

#[test]
fn parity_table() {
    let simd = Isa::detect();
    println!("SIMD kernels: {}", simd.name());
    println!(
        "type   act    cases  max NMSE scalar  max NMSE {:<6}  max |simd-scalar|/Σ|w||x|",
        simd.name()
    );
    let mut case = 0u64;
    for &ty in MATMUL_TYPES {
        let scalar = Kernels::new(ty, Isa::Scalar).unwrap();
        let fast = Kernels::new(ty, simd).unwrap();
        let act = scalar.act_type();
        let tol = nmse_tol(act);
        let mut st = Stats {
            simd_isa: Some(fast.isa()),
            ..Stats::default()
        };
        for &n_in in n_in_cases(ty) {
            for n_out in N_OUT {
                for n_tokens in N_TOKENS {
                    case += 1;
                    let seed = 0x5eed_0000_0000_0000 ^ (case * 0x9E37_79B9);
                    let what = format!(
                        "{ty} n_in={n_in} n_out={n_out} n_tokens={n_tokens} seed={seed:#018x}"
                    );
                    let mut rng = Rng::new(seed);
                    let w = random_weights(ty, n_in, n_out, &mut rng);
                    let x = random_activations(n_in * n_tokens, &mut rng);

                    // Oracle: dequantized weights · unquantized activations, in f64.
                    let w_row = row_size(ty, n_in).unwrap();
                    let mut wf = vec![0.0f32; n_in * n_out];
                    for (src, dst) in w.chunks_exact(w_row).zip(wf.chunks_exact_mut(n_in)) {
                        dequantize_row(ty, src, dst).unwrap();
                    }
                    let mut want = vec![0.0f64; n_tokens * n_out];
                    let mut scale = vec![0.0f64; n_tokens * n_out];
                    let mut floor = vec![0.0f64; n_tokens * n_out];
                    for t in 0..n_tokens {
                        let xt = &x[t * n_in..(t + 1) * n_in];
                        for r in 0..n_out {
                            let wr = &wf[r * n_in..(r + 1) * n_in];
                            let (mut s, mut a, mut v) = (0.0f64, 0.0f64, 0.0f64);
                            for (p, q) in wr.iter().zip(xt) {
                                let pq = f64::from(*p) * f64::from(*q);
                                s += pq;
                                a += pq.abs();
                                v += pq * pq;
                            }
                            want[t * n_out + r] = s;
                            scale[t * n_out + r] = a;
                            floor[t * n_out + r] = v;
                        }
                    }

                    let got_s = guarded_matmul(&scalar, &w, n_in, n_out, &x, n_tokens, &what);
                    let got_f = guarded_matmul(&fast, &w, n_in, n_out, &x, n_tokens, &what);
                    let (ns, nf) = (nmse(&got_s, &want, &floor), nmse(&got_f, &want, &floor));
                    assert!(ns <= tol, "{what}: scalar NMSE {ns:e} > {tol:e}");
                    assert!(
                        nf <= tol,
                        "{what}: {} NMSE {nf:e} > {tol:e}",
                        fast.isa().name()
                    );
                    for i in 0..got_s.len() {
                        let rel = f64::from(got_f[i] - got_s[i]).abs() / scale[i];
                        assert!(
                            rel <= SIMD_REL_TOL,
                            "{what}: output {i}: simd {} vs scalar {} (rel {rel:e})",
                            got_f[i],
                            got_s[i]
                        );
                        st.simd_rel = st.simd_rel.max(rel);
                    }
                    st.nmse_scalar = st.nmse_scalar.max(ns);
                    st.nmse_simd = st.nmse_simd.max(nf);
                    st.cases += 1;
                }
            }
        }
        println!(
            "{:<6} {:<6} {:>5}  {:>15.2e}  {:>13.2e} ({})  {:.2e}",
            ty.name(),
            act.name(),
            st.cases,
            st.nmse_scalar,
            st.nmse_simd,
            st.simd_isa.map_or("-", |i| i.name()),
            st.simd_rel
        );
    }
}

fn small_shape(ty: GgmlType) -> usize {
    match ty.block_size() {
        256 => 512,
        32 => 96,
        _ => 100,
    }
}

#[test]
fn batch_and_thread_invariance() {
    for &ty in MATMUL_TYPES {
        for isa in [Isa::Scalar, Isa::detect()] {
            let k = Kernels::new(ty, isa).unwrap();
            let (n_in, n_out, n_tokens) = (small_shape(ty), 70, 17);
            let seed = 0xba7c_0000 ^ ty as u64;
            let what = format!("{ty} {} seed={seed:#x}", k.isa().name());
            let mut rng = Rng::new(seed);
            let w = random_weights(ty, n_in, n_out, &mut rng);
            let x = random_activations(n_in * n_tokens, &mut rng);
            let batch = guarded_matmul(&k, &w, n_in, n_out, &x, n_tokens, &what);
            for t in 0..n_tokens {
                let alone =
                    guarded_matmul(&k, &w, n_in, n_out, &x[t * n_in..(t + 1) * n_in], 1, &what);
                let row = &batch[t * n_out..(t + 1) * n_out];
                for (r, (a, b)) in alone.iter().zip(row).enumerate() {
                    assert_eq!(
                        a.to_bits(),
                        b.to_bits(),
                        "{what}: token {t} row {r}: alone {a} vs batch {b}"
                    );
                }
            }
            for threads in [1, 3] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let other =
                    pool.install(|| guarded_matmul(&k, &w, n_in, n_out, &x, n_tokens, &what));
                for (i, (a, b)) in other.iter().zip(&batch).enumerate() {
                    assert_eq!(
                        a.to_bits(),
                        b.to_bits(),
                        "{what}: {threads} threads, output {i}"
                    );
                }
            }
        }
    }
}

#[test]
fn large_matmul_is_also_batch_invariant() {
    // Big enough to run in parallel (several rayon tasks per call).
    let ty = GgmlType::Q4_K;
    let (n_in, n_out, n_tokens) = (1024, 300, 5);
    let mut rng = Rng::new(0x1a59e);
    let w = random_weights(ty, n_in, n_out, &mut rng);
    let x = random_activations(n_in * n_tokens, &mut rng);
    let mut batch = vec![0.0; n_out * n_tokens];
    matmul(ty, &w, n_in, n_out, &x, n_tokens, &mut batch).unwrap();
    for t in 0..n_tokens {
        let mut alone = vec![0.0; n_out];
        matmul(
            ty,
            &w,
            n_in,
            n_out,
            &x[t * n_in..(t + 1) * n_in],
            1,
            &mut alone,
        )
        .unwrap();
        let row = &batch[t * n_out..(t + 1) * n_out];
        assert!(
            alone
                .iter()
                .zip(row)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "token {t}"
        );
    }
}

#[test]
fn length_and_type_errors() {
    let ty = GgmlType::Q4_K;
    let mut rng = Rng::new(7);
    let w = random_weights(ty, 256, 4, &mut rng);
    let x = random_activations(512, &mut rng);
    let mut out = vec![0.0; 8];
    assert!(matmul(ty, &w, 256, 4, &x, 2, &mut out).is_ok());
    let is_len = |r: Result<(), Error>| matches!(r, Err(Error::Length { .. }));
    assert!(is_len(matmul(ty, &w[1..], 256, 4, &x, 2, &mut out)));
    assert!(is_len(matmul(ty, &w, 256, 4, &x[1..], 2, &mut out)));
    assert!(is_len(matmul(ty, &w, 256, 4, &x, 2, &mut out[1..])));
    assert!(is_len(matmul(ty, &w, 256, 5, &x, 2, &mut out)));
    assert!(is_len(matmul(ty, &w, 256, usize::MAX, &x, 2, &mut out)));
    assert!(matches!(
        matmul(ty, &w, 200, 4, &x[..400], 2, &mut out),
        Err(Error::PartialBlock { .. })
    ));
    for bad in [GgmlType::Q8_K, GgmlType::I8, GgmlType::Q8_1] {
        assert!(matches!(
            matmul(bad, &w, 256, 4, &x, 2, &mut out),
            Err(Error::UnsupportedOp { .. })
        ));
        assert!(Kernels::detect(bad).is_err());
    }
    let k = Kernels::detect(ty).unwrap();
    let mut a = Vec::new();
    quantize_activation(ty, &x[..256], &mut a).unwrap();
    assert_eq!(a.len(), activation_row_size(GgmlType::Q8_K, 256).unwrap());
    assert!(k.vec_dot(256, &w[..144], &a).is_ok());
    assert!(k.vec_dot(256, &w[..143], &a).is_err());
    assert!(k.vec_dot(256, &w[..144], &a[1..]).is_err());
    assert!(k.vec_dot(250, &w[..144], &a).is_err());
    // Empty shapes are fine and write nothing.
    assert!(matmul(ty, &[], 256, 0, &x, 2, &mut []).is_ok());
    assert!(matmul(ty, &w, 256, 4, &[], 0, &mut []).is_ok());
}

/// Literal port of ggml's `ggml_vec_dot_q4_K_q8_K_generic` (aux8 / aux16 / aux32 / utmp).
#[allow(clippy::needless_range_loop)] // index loops kept as in the C
fn ggml_generic_q4k(x: &[BlockQ4K], y: &[BlockQ8K]) -> f32 {
    const KMASK1: u32 = 0x3f3f3f3f;
    const KMASK2: u32 = 0x0f0f0f0f;
    const KMASK3: u32 = 0x03030303;
    let mut sums = [0.0f32; 8];
    let mut sumf = 0.0f32;
    for (xi, yi) in x.iter().zip(y) {
        let mut aux8 = [0i8; 256];
        for j in 0..4 {
            for l in 0..32 {
                aux8[64 * j + l] = (xi.qs[32 * j + l] & 0xF) as i8;
                aux8[64 * j + 32 + l] = (xi.qs[32 * j + l] >> 4) as i8;
            }
        }
        let mut utmp = [0u32; 4];
        for k in 0..3 {
            utmp[k] = u32::from_le_bytes(xi.scales[4 * k..4 * k + 4].try_into().unwrap());
        }
        utmp[3] = ((utmp[2] >> 4) & KMASK2) | (((utmp[1] >> 6) & KMASK3) << 4);
        let uaux = utmp[1] & KMASK1;
        utmp[1] = (utmp[2] & KMASK2) | (((utmp[0] >> 6) & KMASK3) << 4);
        utmp[2] = uaux;
        utmp[0] &= KMASK1;
        let bytes: Vec<u8> = utmp.iter().flat_map(|u| u.to_le_bytes()).collect();
        let (scales, mins) = (&bytes[0..8], &bytes[8..16]);
        let mut sumi = 0i32;
        for j in 0..16 {
            sumi += i32::from(yi.bsum(j).unwrap()) * i32::from(mins[j / 2]);
        }
        let mut aux32 = [0i32; 8];
        let (mut a, mut q8) = (0usize, 0usize);
        for scale in scales.iter().map(|&s| i32::from(s)) {
            for _ in 0..4 {
                let mut aux16 = [0i16; 8];
                for l in 0..8 {
                    aux16[l] = i16::from(yi.qs[q8 + l]) * i16::from(aux8[a + l]);
                }
                for l in 0..8 {
                    aux32[l] += scale * i32::from(aux16[l]);
                }
                q8 += 8;
                a += 8;
            }
        }
        let d = xi.d_f32() * yi.d_f32();
        for l in 0..8 {
            sums[l] += d * aux32[l] as f32;
        }
        let dmin = muser_quant::f16_to_f32(u16::from_le_bytes(xi.dmin)) * yi.d_f32();
        sumf -= dmin * sumi as f32;
    }
    for s in sums {
        sumf += s;
    }
    sumf
}

/// Literal port of ggml's `ggml_vec_dot_q8_0_q8_0_generic`.
#[allow(clippy::needless_range_loop)] // index loops kept as in the C
fn ggml_generic_q80(x: &[BlockQ80], y: &[BlockQ80]) -> f32 {
    let mut sumf = 0.0f32;
    for (xi, yi) in x.iter().zip(y) {
        let mut sumi = 0i32;
        for j in 0..32 {
            sumi += i32::from(xi.qs[j]) * i32::from(yi.qs[j]);
        }
        sumf += sumi as f32 * (xi.d_f32() * yi.d_f32());
    }
    sumf
}

#[test]
fn scalar_kernels_match_ggml_generic_literally() {
    for seed in 1..=20u64 {
        let mut rng = Rng::new(seed * 0x51ed);
        let n = 256 * (1 + seed as usize % 4);
        let w = random_weights(GgmlType::Q4_K, n, 1, &mut rng);
        let x = random_activations(n, &mut rng);
        let mut y = vec![<BlockQ8K as muser_quant::Block>::ZERO; n / 256];
        quantize_row_q8k_ref(&x, &mut y).unwrap();
        let wb = cast_blocks::<BlockQ4K>(&w).unwrap();
        let (ours, theirs) = (
            kquants::vec_dot_q4k_q8k_ref(wb, &y),
            ggml_generic_q4k(wb, &y),
        );
        assert_eq!(
            ours.to_bits(),
            theirs.to_bits(),
            "Q4_K seed {seed}: {ours} vs {theirs}"
        );

        let w = random_weights(GgmlType::Q8_0, n, 1, &mut rng);
        let mut a = Vec::new();
        quantize_activation(GgmlType::Q8_0, &x, &mut a).unwrap();
        let (wb, ab) = (
            cast_blocks::<BlockQ80>(&w).unwrap(),
            cast_blocks::<BlockQ80>(&a).unwrap(),
        );
        let (ours, theirs) = (
            legacy::vec_dot_q80_q80_ref(wb, ab),
            ggml_generic_q80(wb, ab),
        );
        assert_eq!(
            ours.to_bits(),
            theirs.to_bits(),
            "Q8_0 seed {seed}: {ours} vs {theirs}"
        );
    }
}

/// The fused multi-matrix path gives exactly `matmul`'s bits for every job, including jobs
/// whose weight types need different activation rounding.
#[test]
fn matmul_multi_equals_separate_matmuls() {
    let n_in = 768;
    let specs = [
        (GgmlType::Q4_K, 300),
        (GgmlType::Q6_K, 17),
        (GgmlType::Q8_0, 40),
        (GgmlType::F16, 5),
    ];
    let mut rng = Rng::new(0x6d75);
    let x = random_activations(n_in, &mut rng);
    let ws: Vec<Vec<u8>> = specs
        .iter()
        .map(|&(ty, n_out)| random_weights(ty, n_in, n_out, &mut rng))
        .collect();
    let kernels: Vec<muser_quant::Kernels> = specs
        .iter()
        .map(|&(ty, _)| muser_quant::Kernels::detect(ty).unwrap())
        .collect();
    let mut outs: Vec<Vec<f32>> = specs.iter().map(|&(_, n)| vec![f32::NAN; n]).collect();
    {
        let mut jobs: Vec<muser_quant::MatvecJob<'_>> = kernels
            .iter()
            .zip(&ws)
            .zip(outs.iter_mut())
            .map(|((k, w), out)| muser_quant::MatvecJob { kernels: k, w, out })
            .collect();
        muser_quant::matmul_multi(&mut jobs, &x).unwrap();
    }
    for (((ty, n_out), w), got) in specs.iter().zip(&ws).zip(&outs) {
        let mut want = vec![0.0; *n_out];
        matmul(*ty, w, n_in, *n_out, &x, 1, &mut want).unwrap();
        assert!(
            got.iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "{ty}"
        );
    }
    // A short weight buffer is an error, not a panic.
    let mut out = vec![0.0; 300];
    let mut jobs = vec![muser_quant::MatvecJob {
        kernels: &kernels[0],
        w: &ws[0][..100],
        out: &mut out,
    }];
    assert!(muser_quant::matmul_multi(&mut jobs, &x).is_err());
}

/// The multi-token, multi-matrix path (batched decode, prefill) gives, for every job and token,
/// exactly the bits of a one-token `matmul` of that token's row, on rayon and on a spin team.
#[test]
fn matmul_batch_equals_one_token_matmuls() {
    let n_in = 512;
    let n_tokens = 7;
    let specs = [
        (GgmlType::Q4_K, 130),
        (GgmlType::Q6_K, 65),
        (GgmlType::Q8_0, 9),
        (GgmlType::BF16, 3),
    ];
    let mut rng = Rng::new(0x6261);
    let x: Vec<f32> = (0..n_tokens)
        .flat_map(|_| random_activations(n_in, &mut rng))
        .collect();
    let ws: Vec<Vec<u8>> = specs
        .iter()
        .map(|&(ty, n_out)| random_weights(ty, n_in, n_out, &mut rng))
        .collect();
    let kernels: Vec<Kernels> = specs
        .iter()
        .map(|&(ty, _)| Kernels::detect(ty).unwrap())
        .collect();
    let pool = muser_quant::SpinPool::new(3).unwrap();
    use muser_quant::Threads;
    for threads in [Threads::Rayon, Threads::Team(&pool), Threads::Calling] {
        let name = match threads {
            Threads::Rayon => "rayon",
            Threads::Team(_) => "team",
            Threads::Calling => "calling thread",
        };
        let mut outs: Vec<Vec<f32>> = specs
            .iter()
            .map(|&(_, n)| vec![f32::NAN; n * n_tokens])
            .collect();
        {
            let mut jobs: Vec<muser_quant::MatmulJob<'_>> = kernels
                .iter()
                .zip(&ws)
                .zip(outs.iter_mut())
                .zip(&specs)
                .map(|(((k, w), out), &(_, n_out))| muser_quant::MatmulJob {
                    kernels: k,
                    w,
                    n_out,
                    out,
                })
                .collect();
            muser_quant::matmul_batch_on(threads, &mut jobs, &x, n_tokens).unwrap();
        }
        for (((ty, n_out), w), got) in specs.iter().zip(&ws).zip(&outs) {
            for t in 0..n_tokens {
                let mut want = vec![0.0; *n_out];
                let row = &x[t * n_in..(t + 1) * n_in];
                matmul(*ty, w, n_in, *n_out, row, 1, &mut want).unwrap();
                let got = &got[t * n_out..(t + 1) * n_out];
                assert!(
                    got.iter()
                        .zip(&want)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{ty} token {t} on {name}"
                );
            }
        }
    }
    // A job whose output is too short is an error, not a panic.
    let mut short = vec![0.0; 10];
    let mut jobs = vec![muser_quant::MatmulJob {
        kernels: &kernels[0],
        w: &ws[0],
        n_out: 130,
        out: &mut short,
    }];
    assert!(muser_quant::matmul_batch(None, &mut jobs, &x, n_tokens).is_err());
}
