//! Host cost of one `Sampler::sample` over a vocabulary-sized row (202,048 logits), for
//! greedy, the default (temperature 1, top-k 64, top-p 0.95) and top-k off; and of a copy and
//! an `argmax` of the row. `cargo run --release -p muser-engine --example sample_cost`
//! (bench/runs/2026-12-01-sampling).
use muser_engine::sampling::{Sampler, SamplingParams};
use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::time::Instant;

fn main() {
    let n = 202_048;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let logits: Vec<f32> = (0..n)
        .map(|_| ((rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32) * 20.0 - 10.0)
        .collect();
    for (name, p) in [
        (
            "greedy",
            SamplingParams {
                temperature: 0.0,
                ..SamplingParams::default()
            },
        ),
        (
            "default (t 1, top-k 64, top-p 0.95)",
            SamplingParams::default(),
        ),
        (
            "t 0.8, top-k 0",
            SamplingParams {
                temperature: 0.8,
                top_k: 0,
                ..SamplingParams::default()
            },
        ),
    ] {
        let mut s = Sampler::new(p).unwrap();
        for _ in 0..5 {
            s.sample(&logits).unwrap();
        }
        let reps = 50;
        let t = Instant::now();
        for _ in 0..reps {
            std::hint::black_box(s.sample(std::hint::black_box(&logits)).unwrap());
        }
        println!(
            "{name}: {:.1} µs per sample",
            t.elapsed().as_secs_f64() * 1e6 / reps as f64
        );
    }
    let t = Instant::now();
    for _ in 0..50 {
        std::hint::black_box(logits.to_vec());
    }
    println!("to_vec: {:.1} µs", t.elapsed().as_secs_f64() * 1e6 / 50.0);
    let t = Instant::now();
    for _ in 0..50 {
        std::hint::black_box(muser_engine::sampling::argmax(std::hint::black_box(
            &logits,
        )));
    }
    println!("argmax: {:.1} µs", t.elapsed().as_secs_f64() * 1e6 / 50.0);
}
