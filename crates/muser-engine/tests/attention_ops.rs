//! Op-level parity of attention, test-backend-ops style: the fast path's numerics (f16 cache,
//! ggml rounding) against the oracle's (f32 cache, f64) over a table of cases — GQA ratios,
//! head sizes, windows that wrap, full planes, positions — with fixed printed seeds and a
//! normalized-error tolerance. Every output element must be written and finite.

use muser_engine::attention::{attend, AttnShape};
use muser_engine::{CpuRef, GlimmerConfig, KvCache, KvDtype, Numerics};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
}

fn cfg(n_head: usize, n_head_kv: usize, hd: usize, window: usize, sliding: bool) -> GlimmerConfig {
    GlimmerConfig {
        n_layer: 1,
        n_embd: n_head * hd,
        n_ff: 8,
        n_head,
        n_head_kv,
        head_dim: hd,
        n_vocab: 8,
        context_length: 4096,
        rms_eps: 1e-5,
        post_norm_eps: 1e-8,
        rope_freq_base: 1e4,
        rope_freq_base_swa: 1e4,
        sliding_window: window,
        sliding: vec![sliding],
        logit_scale: 1.0,
        softcap: 0.0,
    }
}

/// Normalized MSE of `got` against `want`.
fn nmse(got: &[f32], want: &[f32]) -> f64 {
    let err: f64 = got
        .iter()
        .zip(want)
        .map(|(a, b)| f64::from(a - b).powi(2))
        .sum();
    let sig: f64 = want.iter().map(|b| f64::from(*b).powi(2)).sum();
    err / sig.max(1e-30)
}

/// f16 rounding of Q, K, V and the probabilities: measured max NMSE 3.8e-7 over the table.
const TOL_F16: f64 = 2e-6;
/// Same cache type (f32) in both: only summation order and f32 softmax differ; measured max 8.1e-15.
const TOL_F32: f64 = 1e-10;

#[test]
fn attention_table() {
    let backend = CpuRef::default();
    let mut worst = [0f64; 2];
    // (n_head, n_head_kv, head_dim, window, sliding, n_positions)
    let cases = [
        (4, 1, 64, 8, true, 30),      // GQA 4, ring wraps several times
        (16, 1, 128, 16, true, 40),   // GQA 16, head_dim 128
        (8, 2, 64, 5, true, 5),       // window exactly filled, no wrap
        (4, 4, 32, 3, true, 11),      // MHA, tiny window
        (8, 2, 64, 8, false, 37),     // full-attention plane
        (32, 2, 128, 2048, false, 3), // real geometry, short
    ];
    for (ci, &(nh, nkv, hd, window, sliding, n)) in cases.iter().enumerate() {
        let seed = 0x5eed_0000 + ci as u64;
        let c = cfg(nh, nkv, hd, window, sliding);
        let shape = AttnShape {
            n_head: nh,
            n_head_kv: nkv,
            head_dim: hd,
            scale: 1.0 / (hd as f32).sqrt(),
            interleaved_gqa: false,
        };
        for (ti, dtype) in [KvDtype::F16, KvDtype::F32].into_iter().enumerate() {
            let mut rng = Rng(seed);
            let mut exact_kv = KvCache::new(&c, KvDtype::F32, 4096, 0);
            let mut fast_kv = KvCache::new(&c, dtype, 4096, 0);
            for pos in 0..n {
                let k: Vec<f32> = (0..nkv * hd).map(|_| rng.next() * 2.0).collect();
                let v: Vec<f32> = (0..nkv * hd).map(|_| rng.next()).collect();
                let q: Vec<f32> = (0..nh * hd).map(|_| rng.next() * 2.0).collect();
                exact_kv.append(0, pos, &k, &v).unwrap();
                fast_kv.append(0, pos, &k, &v).unwrap();
                let mut want = vec![f32::NAN; nh * hd];
                let mut got = vec![f32::NAN; nh * hd];
                attend(
                    &backend,
                    Numerics::Exact,
                    shape,
                    &exact_kv,
                    0,
                    pos,
                    &q,
                    &mut want,
                );
                attend(
                    &backend,
                    Numerics::Ggml,
                    shape,
                    &fast_kv,
                    0,
                    pos,
                    &q,
                    &mut got,
                );
                assert!(
                    got.iter().chain(&want).all(|v| v.is_finite()),
                    "case {ci} seed {seed:#x} pos {pos}: unwritten or non-finite output"
                );
                let e = nmse(&got, &want);
                let tol = if dtype == KvDtype::F16 {
                    TOL_F16
                } else {
                    TOL_F32
                };
                assert!(
                    e <= tol,
                    "case {ci} {dtype:?} seed {seed:#x} pos {pos}: nmse {e:.3e} > {tol:.1e}"
                );
                worst[ti] = worst[ti].max(e);
            }
        }
    }
    println!(
        "attention nmse max: f16 {:.3e}, f32 {:.3e}",
        worst[0], worst[1]
    );
}
