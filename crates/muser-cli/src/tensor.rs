//! `muser tensor FILE NAME --out x.npy`: one tensor dequantized to f32.

use std::path::PathBuf;

use anyhow::{Context, Result};
use muser_gguf::GgufFile;

#[derive(clap::Args)]
pub struct Args {
    /// GGUF file.
    file: PathBuf,
    /// Tensor name, e.g. blk.0.attn_q.weight.
    name: String,
    /// Output .npy path.
    #[arg(long)]
    out: PathBuf,
}

pub fn run(args: Args) -> Result<()> {
    let file =
        GgufFile::open(&args.file).with_context(|| format!("opening {}", args.file.display()))?;
    let info = file.tensor_info(&args.name)?;
    let bytes = file.tensor_data(info)?;
    let values = muser_quant::dequantize_tensor(info, bytes)?;
    // numpy's C order lists the slowest axis first: ggml's dims reversed.
    let shape: Vec<u64> = info.dims.iter().rev().copied().collect();
    let shape = if shape.is_empty() { vec![1] } else { shape };
    crate::npy::write_f32(&args.out, &shape, &values)?;
    eprintln!(
        "wrote {} ({} {:?} → f32 {:?})",
        args.out.display(),
        info.ty,
        info.dims,
        shape
    );
    Ok(())
}
