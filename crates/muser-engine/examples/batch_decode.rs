//! Aggregate decode throughput of the scheduler at several stream counts (no HTTP), after a
//! batch-invariance check (4 sequences' logits batched vs solo):
//! `cargo run --release -p muser-engine --example batch_decode -- MODEL.gguf [1,8] [tokens] [threads|cuda]`.
//! Each stream has a 16-token prompt and generates `tokens` tokens; prints the decode rate
//! (tokens generated after every stream has its first token, over that time) per count.

use std::sync::Arc;

use muser_engine::sched::decode_rate;
use muser_engine::{Backend, Cpu, Glimmer, LogitsFor, SamplingParams, Segment};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .expect("usage: batch_decode MODEL [counts] [tokens] [threads]");
    let counts: Vec<usize> = args
        .get(2)
        .map_or("1,2,4,8,16", String::as_str)
        .split(',')
        .map(|s| s.parse().expect("stream count"))
        .collect();
    let tokens: usize = args.get(3).map_or(128, |s| s.parse().expect("tokens"));
    let backend: Box<dyn Backend> = match args.get(4).map(String::as_str) {
        Some("cuda") => Box::new(
            muser_engine::cuda::Cuda::new(&muser_engine::cuda::CudaOptions::default()).unwrap(),
        ),
        other => Box::new(Cpu::new(other.map(|s| s.parse().expect("threads"))).unwrap()),
    };
    let model = Arc::new(Glimmer::open(path, backend).unwrap());
    invariance(&model);
    let mut base = None;
    for &n in &counts {
        let tps = decode_rate(&model, n, tokens, &SamplingParams::default()).unwrap();
        let b = *base.get_or_insert(tps);
        println!(
            "streams {n:3}: {} tokens, decode {tps:9.1} tok/s aggregate ({:.2}x one stream)",
            n * tokens,
            tps / b
        );
    }
}

/// Four sequences (prompts of 3-9 tokens, then one decode token each): batched logits against
/// each sequence run alone.
fn invariance(m: &Glimmer) {
    let prompts: Vec<Vec<u32>> = (0..4)
        .map(|i| {
            (0..3 + 2 * i)
                .map(|t| (i * 37 + t * 11) as u32 % 1000)
                .collect()
        })
        .collect();
    let v = m.cfg.n_vocab;
    let mut solo = Vec::new();
    for p in &prompts {
        let mut kv = m.new_cache(64, 0);
        let a = m.forward(&mut kv, p, LogitsFor::Last).unwrap();
        let b = m.forward(&mut kv, &[7], LogitsFor::Last).unwrap();
        solo.push((a, b));
    }
    let mut caches: Vec<_> = prompts.iter().map(|_| m.new_cache(64, 0)).collect();
    let mut segs: Vec<Segment<'_>> = caches
        .iter_mut()
        .zip(&prompts)
        .map(|(kv, p)| Segment {
            kv,
            tokens: p,
            want: LogitsFor::Last,
        })
        .collect();
    let first = m.forward_batch(&mut segs).unwrap();
    drop(segs);
    let mut segs: Vec<Segment<'_>> = caches
        .iter_mut()
        .map(|kv| Segment {
            kv,
            tokens: &[7],
            want: LogitsFor::Last,
        })
        .collect();
    let second = m.forward_batch(&mut segs).unwrap();
    let (mut max_diff, mut identical) = (0f32, true);
    for (i, (a, b)) in solo.iter().enumerate() {
        for (x, y) in a
            .iter()
            .zip(&first[i * v..(i + 1) * v])
            .chain(b.iter().zip(&second[i * v..(i + 1) * v]))
        {
            identical &= x.to_bits() == y.to_bits();
            max_diff = max_diff.max((x - y).abs());
        }
    }
    println!(
        "batch invariance ({}): batched logits {} solo; max |diff| {max_diff:.3e}",
        m.backend().name(),
        if identical {
            "bit-identical to"
        } else {
            "DIFFER from"
        }
    );
}
