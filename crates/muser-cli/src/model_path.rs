//! Which GGUF to run: `--model`, else `MUSER_MODEL`, else a synthetic demo model generated once
//! into the cache directory (a fresh machine still runs something real).

use std::path::PathBuf;

use anyhow::{Context, Result};
use muser_synth::{Preset, SynthConfig};

/// Environment variable naming the default model file.
pub const MODEL_ENV: &str = "MUSER_MODEL";
/// File name of the synthetic demo model in the cache directory (bump when the generator's
/// output changes).
const DEMO_FILE: &str = "muse-glimmer-synthetic-tiny-v1.gguf";

/// Where the demo model is cached: `$MUSER_CACHE_DIR`, `$XDG_CACHE_HOME/muser`,
/// `$HOME/.cache/muser`, else the system temp directory.
pub fn cache_dir() -> PathBuf {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    env("MUSER_CACHE_DIR")
        .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("muser")))
        .or_else(|| env("HOME").map(|d| d.join(".cache").join("muser")))
        .unwrap_or_else(|| std::env::temp_dir().join("muser"))
}

/// Resolves the model to run, generating the synthetic demo if nothing was configured.
pub fn resolve(model: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(m) = model {
        return Ok(m);
    }
    if let Some(m) = std::env::var_os(MODEL_ENV).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(m));
    }
    let dir = cache_dir();
    let path = dir.join(DEMO_FILE);
    eprintln!(
        "note: no model given: running the SYNTHETIC demo model {} (random weights: the text is\n      \
         gibberish). Point Muser at the real Muse Glimmer GGUF with --model PATH or {MODEL_ENV}=PATH.",
        path.display()
    );
    if !path.exists() {
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("creating the cache directory {}", dir.display()))?;
        let cfg = SynthConfig::preset(Preset::Tiny);
        muser_synth::write_model(&cfg, &path, &|_, _| {})
            .with_context(|| format!("generating the demo model {}", path.display()))?;
        eprintln!(
            "note: generated the demo model once ({} bytes)",
            std::fs::metadata(&path)?.len()
        );
    }
    Ok(path)
}
