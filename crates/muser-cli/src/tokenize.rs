//! `muser tokenize`: token ids of a text, comma-separated on one line.

use std::path::PathBuf;

use anyhow::{Context, Result};
use muser_gguf::GgufFile;
use muser_tokenizer::Tokenizer;

#[derive(clap::Args)]
pub struct Args {
    /// GGUF model (default: $MUSER_MODEL, else the synthetic demo model).
    #[arg(long)]
    model: Option<PathBuf>,
    #[arg(long)]
    text: String,
    /// Recognize special-token text such as `<|eot|>`.
    #[arg(long)]
    special: bool,
    /// Do not prepend BOS (by default the GGUF's add_bos_token decides).
    #[arg(long)]
    no_bos: bool,
}

pub fn run(args: Args) -> Result<()> {
    let path = crate::model_path::resolve(args.model)?;
    let file = GgufFile::open(&path).with_context(|| format!("opening {}", path.display()))?;
    let tok = Tokenizer::from_gguf(file.header())?;
    let ids = tok.encode(
        &args.text,
        tok.add_bos_default() && !args.no_bos,
        args.special,
    );
    let line: Vec<String> = ids.iter().map(u32::to_string).collect();
    println!("{}", line.join(","));
    Ok(())
}
