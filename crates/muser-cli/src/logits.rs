//! `muser logits`: float32 logits (after scale and softcap) for a token sequence, as `.npy`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use muser_engine::{Glimmer, LogitsFor};

use crate::device::{backend, Device};

#[derive(clap::Args)]
pub struct Args {
    /// GGUF model file.
    #[arg(long)]
    model: PathBuf,
    /// Token ids, comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    tokens: Vec<u32>,
    /// Output .npy: shape [vocab] (last position) or [n_tokens, vocab].
    #[arg(long)]
    out: PathBuf,
    /// Logits for every position instead of the last one.
    #[arg(long)]
    all_positions: bool,
    #[arg(long, default_value = "auto")]
    device: Device,
}

pub fn run(args: Args) -> Result<()> {
    let model = Glimmer::open(&args.model, backend(args.device, None)?)
        .with_context(|| format!("loading {}", args.model.display()))?;
    let mut kv = model.new_cache(args.tokens.len(), 0);
    let want = if args.all_positions {
        LogitsFor::All
    } else {
        LogitsFor::Last
    };
    let logits = model.forward(&mut kv, &args.tokens, want)?;
    let v = model.cfg.n_vocab as u64;
    let shape = if args.all_positions {
        vec![args.tokens.len() as u64, v]
    } else {
        vec![v]
    };
    crate::npy::write_f32(&args.out, &shape, &logits)?;
    eprintln!(
        "wrote {} {:?} ({} backend)",
        args.out.display(),
        shape,
        model.backend().name()
    );
    Ok(())
}
