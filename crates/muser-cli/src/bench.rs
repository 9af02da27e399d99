//! `muser bench`: llama-bench-style throughput: `pp<N>` (prompt processing) and `tg<N>`
//! (generation, optionally at a depth), repetitions after a warm-up, median and spread, bytes
//! read per generated token and the achieved bandwidth.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::device::{Device, Opened};

#[derive(clap::Args)]
pub struct Args {
    /// GGUF model (default: $MUSER_MODEL, else the synthetic demo model).
    #[arg(long, short)]
    model: Option<PathBuf>,
    /// Prompt lengths to test (0 to skip).
    #[arg(
        short = 'p',
        long = "n-prompt",
        value_delimiter = ',',
        default_value = "512"
    )]
    n_prompt: Vec<usize>,
    /// Generation lengths to test (0 to skip).
    #[arg(
        short = 'n',
        long = "n-gen",
        value_delimiter = ',',
        default_value = "128"
    )]
    n_gen: Vec<usize>,
    /// Context depths at which to run the generation tests.
    #[arg(
        short = 'd',
        long = "depth",
        value_delimiter = ',',
        default_value = "0"
    )]
    depth: Vec<usize>,
    /// Repetitions (after one warm-up run).
    #[arg(short = 'r', long, default_value_t = 5)]
    reps: usize,
    /// Worker threads (default: all cores).
    #[arg(short = 't', long)]
    threads: Option<usize>,
    #[arg(long, default_value = "auto")]
    device: Device,
    /// Memory bandwidth to compare decode against, GB/s (e.g. a measured copy bandwidth).
    #[arg(long)]
    bandwidth: Option<f64>,
}

/// Deterministic token ids (xorshift) below `n_vocab`.
fn tokens(n: usize, n_vocab: usize, seed: u64) -> Vec<u32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % n_vocab as u64) as u32
        })
        .collect()
}

fn median_and_spread(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    let med = v[v.len() / 2];
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64).sqrt();
    (med, sd)
}

pub fn run(args: Args) -> Result<()> {
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(t) = args.threads {
        pool = pool.num_threads(t);
    }
    let pool = pool.build().context("starting worker threads")?;
    pool.install(|| bench(&args, pool.current_num_threads()))
}

fn bench(args: &Args, threads: usize) -> Result<()> {
    let path = crate::model_path::resolve(args.model.clone())?;
    let opened = Opened::open(&path, args.device, Some(threads))?;
    let model = &opened.model;
    let n_vocab = model.cfg.n_vocab;
    let size = model.weights.file().file_len();
    let params: u64 = model
        .weights
        .file()
        .header()
        .tensors
        .iter()
        .map(|t| t.n_elements())
        .sum();
    let bytes_per_token = model.weights.decode_bytes();
    let max_ctx = model.cfg.context_length;
    let reps = args.reps.max(1);
    println!(
        "model {} ({:.2} GiB, {:.2} B params), backend {}, threads {threads}, {} bytes read per token",
        path.display(),
        size as f64 / (1u64 << 30) as f64,
        params as f64 / 1e9,
        opened.device_name(),
        bytes_per_token
    );
    println!(
        "| {:>14} | {:>12} | {:>10} | {:>10} | {:>9} |",
        "test", "t/s", "± sd", "GB/s", "of peak"
    );
    println!(
        "|{:-<16}|{:-<14}|{:-<12}|{:-<12}|{:-<11}|",
        "", "", "", "", ""
    );
    for &n in args.n_prompt.iter().filter(|&&n| n > 0) {
        anyhow::ensure!(n <= max_ctx, "pp{n} exceeds the context of {max_ctx}");
        let mut rates = Vec::new();
        for rep in 0..=reps {
            let toks = tokens(n, n_vocab, 1 + rep as u64);
            let mut seq = opened.sequence(n)?;
            let t0 = Instant::now();
            seq.feed(&toks)?;
            if rep > 0 {
                rates.push(n as f64 / t0.elapsed().as_secs_f64());
            }
        }
        let (med, sd) = median_and_spread(rates);
        println!(
            "| {:>14} | {med:>12.2} | {sd:>10.2} | {:>10} | {:>9} |",
            format!("pp{n}"),
            "",
            ""
        );
    }
    for &depth in &args.depth {
        for &n in args.n_gen.iter().filter(|&&n| n > 0) {
            anyhow::ensure!(
                depth + n <= max_ctx,
                "tg{n} @ d{depth} exceeds the context of {max_ctx}"
            );
            let mut seq = opened.sequence(depth + n)?;
            let prefix = tokens(depth, n_vocab, 99);
            let mut rates = Vec::new();
            for rep in 0..=reps {
                // Every repetition starts from the same `depth` cached positions.
                seq.reset()?;
                if depth > 0 {
                    seq.feed(&prefix)?;
                }
                let toks = tokens(n, n_vocab, 1000 + rep as u64);
                let t0 = Instant::now();
                for &t in &toks {
                    seq.feed(&[t])?;
                }
                if rep > 0 {
                    rates.push(n as f64 / t0.elapsed().as_secs_f64());
                }
            }
            let (med, sd) = median_and_spread(rates);
            let gbs = med * bytes_per_token as f64 / 1e9;
            let peak = args
                .bandwidth
                .map(|b| format!("{:.1} %", 100.0 * gbs / b))
                .unwrap_or_default();
            let name = if depth > 0 {
                format!("tg{n} @ d{depth}")
            } else {
                format!("tg{n}")
            };
            println!("| {name:>14} | {med:>12.2} | {sd:>10.2} | {gbs:>10.2} | {peak:>9} |");
        }
    }
    Ok(())
}
