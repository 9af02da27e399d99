//! Matvec benchmark (n_tokens = 1) of a 4096 × 4096 weight per type (or `N_IN N_OUT` from the
//! command line, e.g. `8192 32768` for a matrix far larger than the caches), 1 and 2 threads,
//! scalar and SIMD kernels; prints the best-of-N time and GB/s of weight bytes read. Run in
//! release: `cargo run -p muser-quant --release --example matmul_bench [-- N_IN N_OUT]`.

#[path = "../tests/matmul_util/mod.rs"]
mod matmul_util;

use std::time::Instant;

use matmul_util::{random_activations, random_weights, Rng};
use muser_quant::{matmul_with, GgmlType, Isa, Kernels};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arg = |i: usize, default: usize| {
        std::env::args()
            .nth(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or(default)
    };
    let (n_in, n_out) = (arg(1, 4096), arg(2, 4096));
    let simd = Isa::detect();
    println!("matvec {n_out}x{n_in}, SIMD = {}", simd.name());
    println!("type  kernels  threads   ms/call   GB/s (weights)");
    for ty in [
        GgmlType::Q4_K,
        GgmlType::Q6_K,
        GgmlType::Q8_0,
        GgmlType::F16,
        GgmlType::Q5_K,
        GgmlType::BF16,
        GgmlType::F32,
    ] {
        let mut rng = Rng::new(0xbe9c_4000 ^ ty as u64);
        let w = random_weights(ty, n_in, n_out, &mut rng);
        let x = random_activations(n_in, &mut rng);
        let mut out = vec![0.0f32; n_out];
        for isa in [Isa::Scalar, simd] {
            let k = Kernels::new(ty, isa)?;
            for threads in [1, 2] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()?;
                let mut run = || pool.install(|| matmul_with(&k, &w, n_in, n_out, &x, 1, &mut out));
                run()?; // warm up
                        // Best of N: the machine may be shared, the minimum is the least disturbed.
                let iters = if isa == Isa::Scalar { 3 } else { 30 };
                let mut secs = f64::INFINITY;
                for _ in 0..iters {
                    let t = Instant::now();
                    run()?;
                    secs = secs.min(t.elapsed().as_secs_f64());
                }
                println!(
                    "{:<5} {:<8} {threads:>7}  {:>8.2}   {:>6.2}",
                    ty.name(),
                    k.isa().name(),
                    secs * 1e3,
                    w.len() as f64 / secs / 1e9
                );
            }
            if simd == Isa::Scalar {
                break;
            }
        }
    }
    Ok(())
}
