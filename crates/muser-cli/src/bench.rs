//! `muser bench`: llama-bench-style throughput: `pp<N>` (prompt processing) and `tg<N>`
//! (generation, optionally at a depth), repetitions after a warm-up, median and spread, bytes
//! read per generated token and the achieved bandwidth. On CUDA, tg is greedy with the argmax
//! taken on the GPU (the logits stay on the device) unless `--host-logits`, and the cache at a
//! depth can be filled with synthetic KV rows instead of a prefill (`--depth-fill`).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use muser_engine::cuda::{Cuda, CudaSession};
use muser_engine::Sequence;

use crate::device::{Device, DevicePlan, Opened, Split};

/// How the KV cache is filled before the tg tests at a depth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DepthFill {
    /// Run the depth's tokens through the model (on CUDA: the batched prefill).
    Prefill,
    /// Write deterministic random KV rows straight into the cache (CUDA only): the same
    /// bytes are read per token as after a prefill, without minutes of prefill at 32k.
    Synthetic,
}

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
    /// `--streams` on the CPU: when decode batches of a small model are split across threads.
    #[arg(long, value_enum, default_value_t = Split::Auto)]
    split: Split,
    #[arg(long, default_value = "auto")]
    device: Device,
    /// Memory bandwidth to compare decode against, GB/s (e.g. a measured copy bandwidth).
    #[arg(long)]
    bandwidth: Option<f64>,
    /// How the cache is filled before tg at a depth.
    #[arg(long, value_enum, default_value_t = DepthFill::Prefill)]
    depth_fill: DepthFill,
    /// CUDA tg: copy the logits back every token and take the argmax on the host (default:
    /// the argmax runs on the GPU and only the token comes back).
    #[arg(long)]
    host_logits: bool,
    /// CUDA tg: wait for each token on the host before queueing the next step (default: the
    /// argmax feeds the next step on the device, `CudaSession::greedy_fed`, and the host
    /// queues the steps without waiting; the same tokens).
    #[arg(long)]
    step_sync: bool,
    /// Also decode this many sequences together through the serving scheduler (e.g. 1,8) and
    /// report the aggregate rate (`tg<N> xS`).
    #[arg(long, value_delimiter = ',')]
    streams: Vec<usize>,
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
    // The longest session a test holds (one at a time).
    let longest = args
        .n_prompt
        .iter()
        .copied()
        .chain(
            args.depth
                .iter()
                .flat_map(|d| args.n_gen.iter().map(move |n| d + n)),
        )
        .max()
        .unwrap_or(1);
    let opened = Opened::open(&path, args.device, Some(threads), DevicePlan::one(longest))?;
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
    anyhow::ensure!(
        args.depth_fill == DepthFill::Prefill || opened.cuda().is_some(),
        "--depth-fill synthetic needs --device cuda (the host KV cache has no synthetic fill)"
    );
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
    if let Some(cuda) = opened.cuda() {
        let pp = match cuda.batched_prefill_missing() {
            None => "batched prefill (chunks of cuBLAS GEMMs), the last token as a decode step"
                .to_string(),
            Some(why) => format!("token by token ({why})"),
        };
        println!(
            "pp: {}; tg: greedy, {}; depth: cache filled by {}; GB/token = weights + KV rows read",
            pp,
            if args.host_logits {
                "logits copied back, argmax on the host"
            } else if args.step_sync {
                "argmax on the GPU, each token back on the host before the next step"
            } else {
                "argmax on the GPU feeding the next step there (the host queues the steps)"
            },
            match args.depth_fill {
                DepthFill::Prefill => "prefill",
                DepthFill::Synthetic => "synthetic KV rows (CudaSession::fill_synthetic)",
            }
        );
    }
    println!(
        "| {:>14} | {:>12} | {:>10} | {:>9} | {:>10} | {:>9} |",
        "test", "t/s", "± sd", "GB/token", "GB/s", "of peak"
    );
    println!(
        "|{:-<16}|{:-<14}|{:-<12}|{:-<11}|{:-<12}|{:-<11}|",
        "", "", "", "", "", ""
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
            "| {:>14} | {med:>12.2} | {sd:>10.2} | {:>9} | {:>10} | {:>9} |",
            format!("pp{n}"),
            "",
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
            let prefix = tokens(depth, n_vocab, 99);
            let (rates, bytes) = match opened.cuda() {
                Some(dev) => tg_cuda(dev, &opened.model, args, depth, n, &prefix)?,
                None => (
                    tg_host(&opened, depth, n, reps, &prefix)?,
                    bytes_per_token as f64,
                ),
            };
            let (med, sd) = median_and_spread(rates);
            let gbs = med * bytes / 1e9;
            let peak = args
                .bandwidth
                .map(|b| format!("{:.1} %", 100.0 * gbs / b))
                .unwrap_or_default();
            let name = if depth > 0 {
                format!("tg{n} @ d{depth}")
            } else {
                format!("tg{n}")
            };
            println!(
                "| {name:>14} | {med:>12.2} | {sd:>10.2} | {:>9.3} | {gbs:>10.2} | {peak:>9} |",
                bytes / 1e9
            );
        }
    }
    if !args.streams.is_empty() {
        // The scheduler's batched graph (with CUDA: host graph, GPU products).
        let batched = crate::bench_batch::open(&path, args.device, Some(threads), args.split)?;
        for &n in args.n_gen.iter().filter(|&&n| n > 0) {
            for &s in args.streams.iter().filter(|&&s| s > 0) {
                let rates = (0..=reps)
                    .map(|rep| crate::bench_batch::run_once(&batched, s, n, rep as u64))
                    .collect::<Result<Vec<_>>>()?;
                let (med, sd) = median_and_spread(rates[1..].to_vec());
                // Each step reads the weights once for all the streams.
                let gbs = med / s as f64 * bytes_per_token as f64 / 1e9;
                println!(
                    "| {:>14} | {med:>12.2} | {sd:>10.2} | {:>9.3} | {gbs:>10.2} | {:>9} |",
                    format!("tg{n} x{s}"),
                    bytes_per_token as f64 / 1e9,
                    ""
                );
            }
        }
    }
    Ok(())
}

/// tg rates on a host backend: random tokens after `prefix`, one `feed` each.
fn tg_host(
    opened: &Opened,
    depth: usize,
    n: usize,
    reps: usize,
    prefix: &[u32],
) -> Result<Vec<f64>> {
    let n_vocab = opened.model.cfg.n_vocab;
    let mut seq = opened.sequence(depth + n)?;
    let mut rates = Vec::new();
    for rep in 0..=reps {
        // Every repetition starts from the same `depth` cached positions.
        seq.reset()?;
        if depth > 0 {
            seq.feed(prefix)?;
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
    Ok(rates)
}

/// tg rates on CUDA, greedy from one start token, and the mean bytes read per token (weights
/// plus the KV rows attention reads, which grow with the depth).
fn tg_cuda(
    dev: &Cuda,
    model: &muser_engine::Glimmer,
    args: &Args,
    depth: usize,
    n: usize,
    prefix: &[u32],
) -> Result<(Vec<f64>, f64)> {
    let n_vocab = model.cfg.n_vocab;
    let weights = model.weights.decode_bytes() as f64;
    let mut sess = CudaSession::new(dev, model, depth + n)?;
    let (mut rates, mut bytes) = (Vec::new(), weights);
    for rep in 0..=args.reps.max(1) {
        sess.reset()?;
        if depth > 0 {
            match args.depth_fill {
                DepthFill::Synthetic => sess.fill_synthetic(depth, 0x5eed + rep as u32)?,
                DepthFill::Prefill => {
                    sess.feed(prefix)?;
                }
            }
        }
        let kv0 = sess.kv_read_bytes();
        let mut t = tokens(1, n_vocab, 1000 + rep as u64)[0];
        let t0 = Instant::now();
        if args.host_logits || args.step_sync {
            for _ in 0..n {
                t = if args.host_logits {
                    muser_engine::sampling::argmax(&sess.step(t)?) as u32
                } else {
                    sess.step_argmax(t)?
                };
            }
        } else {
            sess.greedy_fed(t, n)?;
        }
        let secs = t0.elapsed().as_secs_f64();
        bytes = weights + (kv0 + sess.kv_read_bytes()) as f64 / 2.0;
        if rep > 0 {
            rates.push(n as f64 / secs);
        }
    }
    Ok((rates, bytes))
}

#[cfg(test)]
mod tests {
    use super::{Args, DepthFill};
    use clap::Parser;

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        args: Args,
    }

    #[test]
    fn parses_the_depth_bench_command() {
        let c = Cmd::try_parse_from([
            "bench",
            "-m",
            "F",
            "--device",
            "cuda",
            "-p",
            "512",
            "-n",
            "128",
            "-d",
            "0,4096,32768",
            "-r",
            "5",
            "--depth-fill",
            "synthetic",
            "--bandwidth",
            "4280",
        ])
        .unwrap();
        assert_eq!(c.args.depth_fill, DepthFill::Synthetic);
        assert_eq!(c.args.depth, vec![0, 4096, 32768]);
        assert!(!c.args.host_logits);
        assert!(!c.args.step_sync, "tg fed on the device by default");
        assert!(
            Cmd::try_parse_from(["bench", "--step-sync"])
                .unwrap()
                .args
                .step_sync
        );
        let c = Cmd::try_parse_from(["bench", "--host-logits"]).unwrap();
        assert_eq!(c.args.depth_fill, DepthFill::Prefill);
        assert!(c.args.host_logits);
        assert!(Cmd::try_parse_from(["bench", "--depth-fill", "zeros"]).is_err());
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(super::median_and_spread(vec![3.0, 1.0, 2.0]).0, 2.0);
        assert_eq!(super::median_and_spread(vec![4.0, 1.0, 3.0, 2.0]).0, 3.0);
    }
}
