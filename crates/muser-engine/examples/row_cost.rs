//! CPU time per decode row on one thread, for batches of 1, 2, 4 and 8 one-token sequences:
//! `cargo run --release -p muser-engine --example row_cost -- MODEL.gguf [depth] [steps] [1,2,4,8]`.
//! Shows what batching saves per row when the weights sit in cache (the split decode path
//! runs each thread's share this way; its one-row groups take the batch product, while
//! batch 1 here takes the one-token matvec path).

use std::time::Instant;

use muser_engine::{Cpu, Glimmer, LogitsFor, Segment};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .expect("usage: row_cost MODEL [depth] [steps] [batches]");
    let depth: usize = args.get(2).map_or(64, |s| s.parse().expect("depth"));
    let steps: usize = args.get(3).map_or(200, |s| s.parse().expect("steps"));
    let batches: Vec<usize> = args
        .get(4)
        .map_or("1,2,4,8", String::as_str)
        .split(',')
        .map(|s| s.parse().expect("batch size"))
        .collect();
    assert!(
        depth > 0 && batches.iter().all(|&n| n > 0),
        "depth and batch sizes must be > 0"
    );
    let model = Glimmer::open(path, Box::new(Cpu::new(Some(1)).unwrap())).unwrap();
    let vocab = model.cfg.n_vocab;
    let prompt: Vec<u32> = (0..depth).map(|t| ((t * 7 + 3) % vocab) as u32).collect();
    for n in batches {
        let mut caches: Vec<_> = (0..n)
            .map(|_| {
                let mut kv = model.new_cache(depth + steps + 8, 0);
                model.forward(&mut kv, &prompt, LogitsFor::Last).unwrap();
                kv
            })
            .collect();
        let t = Instant::now();
        for s in 0..steps {
            let toks: Vec<[u32; 1]> = (0..n).map(|i| [((s * 13 + i) % vocab) as u32]).collect();
            let mut segs: Vec<Segment<'_>> = caches
                .iter_mut()
                .zip(&toks)
                .map(|(kv, t)| Segment {
                    kv,
                    tokens: t,
                    want: LogitsFor::Last,
                })
                .collect();
            model.forward_batch(&mut segs).unwrap();
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / (steps * n) as f64;
        println!(
            "batch {n}: {us:7.1} us per row (depth {depth}..{})",
            depth + steps
        );
    }
}
