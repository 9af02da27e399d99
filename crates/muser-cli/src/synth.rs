//! `muser synth`: a deterministic synthetic Muse Glimmer GGUF, with a progress bar and rate.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use muser_gguf::GgmlType;
use muser_synth::{PatternEncoding, Preset, SynthConfig};

#[derive(clap::Args)]
pub struct Args {
    /// Starting point: `tiny` (a few MB, for tests) or `30b` (full geometry, Q4_K_M mix).
    #[arg(long, default_value = "tiny")]
    preset: String,
    /// Output file.
    #[arg(long, short)]
    out: PathBuf,
    #[arg(long)]
    seed: Option<u64>,
    #[arg(long)]
    layers: Option<u32>,
    #[arg(long)]
    hidden: Option<u32>,
    #[arg(long)]
    heads: Option<u32>,
    #[arg(long)]
    kv_heads: Option<u32>,
    #[arg(long)]
    head_dim: Option<u32>,
    #[arg(long)]
    ffn: Option<u32>,
    /// Sliding window (rows, including the query token).
    #[arg(long)]
    window: Option<u32>,
    /// Sliding pattern period P: layer i slides iff i % P < P - 1.
    #[arg(long)]
    period: Option<u32>,
    /// How the pattern is stored: `scalar` (Meta) or `bool` (per-layer array).
    #[arg(long)]
    pattern: Option<String>,
    /// BPE tokens (bytes + merges); 2,048 specials follow.
    #[arg(long)]
    vocab: Option<u32>,
    #[arg(long)]
    context: Option<u32>,
    /// Type of most matrices (e.g. Q4_K, Q5_K, Q6_K, Q8_0, F16, BF16, F32).
    #[arg(long = "type")]
    ty: Option<String>,
    #[arg(long)]
    embd_type: Option<String>,
    #[arg(long)]
    output_type: Option<String>,
    /// Type of attn_v/ffn_down on llama.cpp's "more bits" layers, or `none`.
    #[arg(long)]
    more_bits_type: Option<String>,
    #[arg(long)]
    rope_base: Option<f32>,
    #[arg(long)]
    rope_base_swa: Option<f32>,
    /// Leave `rope.freq_base_swa` out of the file.
    #[arg(long)]
    no_rope_base_swa: bool,
    #[arg(long)]
    softcap: Option<f32>,
    /// Leave `final_logit_softcapping` out of the file (llama.cpp then uses 30).
    #[arg(long)]
    no_softcap: bool,
    #[arg(long)]
    logit_scale: Option<f32>,
    /// Centre of the post-attention / post-FFN norm weights.
    #[arg(long)]
    post_norm: Option<f32>,
    /// Std of the output head times sqrt(hidden).
    #[arg(long)]
    output_gain: Option<f32>,
    /// Leave `tokenizer.chat_template` out.
    #[arg(long)]
    no_chat_template: bool,
    /// Worker threads (default: all cores). The output does not depend on it.
    #[arg(long)]
    threads: Option<usize>,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

fn parse_type(s: &str) -> Result<GgmlType> {
    GgmlType::from_name(s).with_context(|| format!("unknown tensor type {s:?}"))
}

fn config(a: &Args) -> Result<SynthConfig> {
    let Some(preset) = Preset::parse(&a.preset) else {
        bail!("unknown preset {:?} (known: tiny, 30b)", a.preset);
    };
    let mut c = SynthConfig::preset(preset);
    macro_rules! set {
        ($field:ident, $arg:ident) => {
            if let Some(v) = a.$arg {
                c.$field = v;
            }
        };
    }
    set!(seed, seed);
    set!(n_layer, layers);
    set!(n_embd, hidden);
    set!(n_head, heads);
    set!(n_head_kv, kv_heads);
    set!(head_dim, head_dim);
    set!(n_ff, ffn);
    set!(sliding_window, window);
    set!(swa_period, period);
    set!(n_vocab_text, vocab);
    set!(context_length, context);
    set!(rope_freq_base, rope_base);
    set!(logit_scale, logit_scale);
    if let Some(p) = &a.pattern {
        c.pattern = match p.as_str() {
            "scalar" => PatternEncoding::Scalar,
            "bool" => PatternEncoding::BoolArray,
            other => bail!("unknown pattern encoding {other:?} (scalar or bool)"),
        };
    }
    if let Some(t) = &a.ty {
        let t = parse_type(t)?;
        c.types = muser_synth::TypePlan::uniform(t);
    }
    if let Some(t) = &a.embd_type {
        c.types.token_embd = parse_type(t)?;
    }
    if let Some(t) = &a.output_type {
        c.types.output = parse_type(t)?;
    }
    if let Some(t) = &a.more_bits_type {
        c.types.more_bits = match t.as_str() {
            "none" => None,
            t => Some(parse_type(t)?),
        };
    }
    if a.rope_base_swa.is_some() {
        c.rope_freq_base_swa = a.rope_base_swa;
    }
    if a.no_rope_base_swa {
        c.rope_freq_base_swa = None;
    }
    if a.softcap.is_some() {
        c.softcap = a.softcap;
    }
    if a.no_softcap {
        c.softcap = None;
    }
    if let Some(v) = a.post_norm {
        c.scales.post_norm = v;
    }
    if let Some(v) = a.output_gain {
        c.scales.output_gain = v;
    }
    if a.no_chat_template {
        c.chat_template = false;
    }
    Ok(c)
}

pub fn run(args: Args) -> Result<()> {
    let cfg = config(&args)?;
    cfg.validate()?;
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(n) = args.threads {
        pool = pool.num_threads(n);
    }
    let pool = pool.build().context("starting worker threads")?;
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(0)
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let start = Instant::now();
    let progress = |done: u64, total: u64| {
        bar.set_length(total);
        bar.set_position(done);
    };
    let report = pool
        .install(|| muser_synth::write_model(&cfg, &args.out, &progress))
        .with_context(|| format!("writing {}", args.out.display()))?;
    bar.finish_and_clear();
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "wrote {}: {} tensors, {:.3} B parameters, {} bytes in {:.1} s ({:.1} MB/s, {} threads)",
        report.path.display(),
        report.n_tensors,
        report.n_params as f64 / 1e9,
        report.file_len,
        secs,
        report.file_len as f64 / 1e6 / secs.max(1e-9),
        pool.current_num_threads()
    );
    Ok(())
}
