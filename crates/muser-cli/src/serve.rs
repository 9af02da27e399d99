//! `muser serve`: the OpenAI- and llama-server-compatible HTTP server over the scheduler.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use muser_engine::sched::{Runner, SchedulerConfig};
use muser_engine::Glimmer;

use crate::device::{backend, Device, DevicePlan, Opened, PrefillWeights, Split};

#[derive(clap::Args)]
pub struct Args {
    /// GGUF model (default: $MUSER_MODEL, else a synthetic demo model).
    #[arg(short = 'm', long)]
    model: Option<PathBuf>,
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    #[arg(long, default_value_t = 8080)]
    port: u16,
    #[arg(long, default_value = "auto")]
    device: Device,
    /// Positions per sequence (prompt + completion); capped at the model's context length.
    #[arg(short = 'c', long = "ctx", default_value_t = 8192)]
    ctx: usize,
    /// Sequences running at once (decoded together in one batched step on the host; on a GPU
    /// each its own whole-token session, stepped in turn).
    #[arg(long, default_value_t = 8)]
    parallel: usize,
    /// Requests that may wait for a free sequence slot; more get 503 with Retry-After.
    #[arg(long, default_value_t = 64)]
    queue: usize,
    /// Prompt rows per step when nothing is decoding (and while something is: --prefill-chunk-busy).
    #[arg(long, default_value_t = 512)]
    prefill_chunk: usize,
    /// Default: 64 on the host; on a GPU the --prefill-chunk (a batched chunk there costs
    /// ~78 ms however short, so short ones would only stall the decoders longer).
    #[arg(long)]
    prefill_chunk_busy: Option<usize>,
    /// Name reported by /v1/models (default: the file's general.name, else its file name).
    #[arg(long)]
    alias: Option<String>,
    /// Require `Authorization: Bearer KEY` on every endpoint but /health.
    #[arg(long)]
    api_key: Option<String>,
    /// Do not log each request to stderr.
    #[arg(long)]
    quiet: bool,
    /// CPU threads for the decode team (default: all cores).
    #[arg(short = 't', long)]
    threads: Option<usize>,
    /// CUDA prompts: f16 copies of the weights kept on the GPU where the free memory allows
    /// them beside the KV caches of --parallel sequences of --ctx positions and 8 GiB
    /// (`auto`), or the weights dequantized at every chunk (`per-chunk`: no extra memory).
    #[arg(long, value_enum, default_value_t = PrefillWeights::Auto)]
    prefill_weights: PrefillWeights,
    /// When CPU decode batches of a small model are split across threads.
    #[arg(long, value_enum, default_value_t = Split::Auto)]
    split: Split,
}

pub fn run(args: Args) -> Result<()> {
    let path = crate::model_path::resolve(args.model)?;
    let on_gpu = match args.device {
        Device::Cuda(_) => true,
        Device::Auto => muser_engine::cuda::available(),
        Device::Cpu | Device::CpuRef => false,
    };
    // On a GPU every sequence is a whole-token session (KV cache on the device, one CUDA
    // graph per token), fed one after another; on the host the batched forward runs the graph
    // over every sequence at once.
    let (mut model, runner, device) = if on_gpu {
        let plan = DevicePlan {
            sequences: args.parallel.max(1),
            positions: args.ctx,
            prefill_weights: args.prefill_weights,
        };
        let (model, cuda) = Opened::open(&path, args.device, args.threads, plan)?.into_parts();
        let cuda = cuda.context("the CUDA device was not opened")?;
        let runner = Runner::OneByOne(Box::new(Arc::new(cuda)));
        (model, runner, "cuda".to_string())
    } else {
        let b = backend(args.device, args.threads)?;
        let device = b.name().to_string();
        let model =
            Glimmer::open(&path, b).with_context(|| format!("loading {}", path.display()))?;
        (model, Runner::Batched, device)
    };
    model.set_split_policy(args.split.into());
    let id = args.alias.unwrap_or_else(|| {
        model
            .weights
            .file()
            .header()
            .get_str("general.name")
            .ok()
            .flatten()
            .map(str::to_string)
            .unwrap_or_else(|| {
                path.file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "muser".into())
            })
    });
    let sched = SchedulerConfig {
        context: args.ctx,
        max_sequences: args.parallel,
        queue_size: args.queue,
        prefill_chunk: args.prefill_chunk,
        prefill_chunk_busy: args.prefill_chunk_busy.unwrap_or(if on_gpu {
            args.prefill_chunk
        } else {
            64
        }),
    };
    let mut state = muser_server::AppState::with_runner(
        Arc::new(model),
        id.clone(),
        device.clone(),
        sched,
        runner,
    )?;
    state.api_key = args.api_key;
    let cfg = state.scheduler.config().clone();
    eprintln!(
        "muser serve: {id} on {device}, {} sequences × {} positions, queue {}",
        cfg.max_sequences, cfg.context, cfg.queue_size
    );
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_max_level(if args.quiet {
            tracing::Level::WARN
        } else {
            tracing::Level::INFO
        })
        .init();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(muser_server::serve(
        Arc::new(state),
        SocketAddr::new(args.host, args.port),
    ))?;
    Ok(())
}
