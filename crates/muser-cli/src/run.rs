//! `muser run`: stream a completion of a prompt to stdout, speeds to stderr.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use muser_engine::{Generator, Sampler, SamplingParams};
use muser_tokenizer::{StreamDecoder, Tokenizer};

use crate::device::{Device, DevicePlan, Opened};

/// Sampling flags shared by `run` and `chat`.
#[derive(clap::Args, Debug, Clone)]
pub struct SamplingArgs {
    /// Temperature (0 = greedy).
    #[arg(long = "temp", default_value_t = 1.0)]
    pub temperature: f32,
    #[arg(long, default_value_t = 64)]
    pub top_k: usize,
    #[arg(long, default_value_t = 0.95)]
    pub top_p: f32,
    #[arg(long, default_value_t = 0.0)]
    pub min_p: f32,
    #[arg(long, default_value_t = 1.0)]
    pub repeat_penalty: f32,
    #[arg(long, default_value_t = 0.0)]
    pub presence_penalty: f32,
    #[arg(long, default_value_t = 0.0)]
    pub frequency_penalty: f32,
    /// RNG seed (default: from the clock). The same seed gives the same tokens.
    #[arg(long)]
    pub seed: Option<u64>,
}

impl SamplingArgs {
    pub fn params(&self) -> SamplingParams {
        let seed = self.seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0)
        });
        SamplingParams {
            temperature: self.temperature,
            top_k: self.top_k,
            top_p: self.top_p,
            min_p: self.min_p,
            repeat_penalty: self.repeat_penalty,
            presence_penalty: self.presence_penalty,
            frequency_penalty: self.frequency_penalty,
            seed,
            ..SamplingParams::default()
        }
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// GGUF model (default: $MUSER_MODEL, else a synthetic demo model).
    #[arg(long)]
    model: Option<PathBuf>,
    /// Text to continue.
    #[arg(long, short, default_value = "Once upon a time")]
    prompt: String,
    /// Tokens to generate.
    #[arg(short = 'n', long = "n-predict", default_value_t = 64)]
    n_predict: usize,
    /// Context size (positions).
    #[arg(long, default_value_t = 4096)]
    ctx: usize,
    /// Recognize special-token text (e.g. `<|start|>`) in the prompt.
    #[arg(long)]
    special: bool,
    #[arg(long, default_value = "auto")]
    device: Device,
    #[command(flatten)]
    sampling: SamplingArgs,
}

pub fn run(args: Args) -> Result<()> {
    let path = crate::model_path::resolve(args.model)?;
    let opened = Opened::open(&path, args.device, None, DevicePlan::one(args.ctx))?;
    let model = &opened.model;
    let tok = Tokenizer::from_gguf(model.weights.file().header())
        .with_context(|| format!("reading the tokenizer of {}", path.display()))?;
    let prompt = tok.encode(&args.prompt, tok.add_bos_default(), args.special);
    anyhow::ensure!(!prompt.is_empty(), "the prompt is empty");
    let sampler = Sampler::new(args.sampling.params())?;
    let ctx = args.ctx.min(model.cfg.context_length);
    anyhow::ensure!(
        prompt.len() < ctx,
        "the prompt has {} tokens; the context holds {ctx}",
        prompt.len()
    );
    let mut g = Generator::on(opened.sequence(ctx)?, sampler);
    g.prefill(&prompt)?;
    let stops = tok.stop_tokens();
    let mut dec = StreamDecoder::new(&tok, true);
    let mut out = std::io::stdout().lock();
    let mut n = 0;
    while n < args.n_predict && g.remaining() > 0 {
        let t = g.next_token()?;
        n += 1;
        if stops.contains(&t) {
            break;
        }
        write!(out, "{}", dec.push(t))?;
        out.flush()?;
    }
    writeln!(out, "{}", dec.finish())?;
    let s = g.stats;
    eprintln!(
        "prompt: {} tokens in {:.3} s ({:.2} tok/s) | generation: {} tokens in {:.3} s ({:.2} tok/s) | {} on {}",
        s.prompt_tokens,
        s.prompt_time.as_secs_f64(),
        s.prompt_tps(),
        s.generated_tokens,
        s.generation_time.as_secs_f64(),
        s.generation_tps(),
        path.display(),
        opened.device_name()
    );
    Ok(())
}
