//! The Muse Glimmer model description read from GGUF metadata (`muse-glimmer.*` keys), with
//! the fallbacks llama.cpp applies so that outputs match it.

use muser_gguf::{Header, Value};

use crate::error::{Error, Result};

pub const ARCH: &str = "muse-glimmer";
/// The post-attention / post-FFN norm epsilon: hard-coded in the model, not in GGUF.
pub const POST_NORM_EPS: f32 = 1e-8;
/// llama.cpp's `final_logit_softcapping` when the key is absent.
pub const DEFAULT_SOFTCAP: f32 = 30.0;

/// Every hyperparameter the Glimmer graph needs.
#[derive(Debug, Clone, PartialEq)]
pub struct GlimmerConfig {
    pub n_layer: usize,
    pub n_embd: usize,
    pub n_ff: usize,
    pub n_head: usize,
    pub n_head_kv: usize,
    pub head_dim: usize,
    pub n_vocab: usize,
    pub context_length: usize,
    /// Epsilon of the entry, pre-attention, pre-FFN, QK and output norms.
    pub rms_eps: f32,
    /// Epsilon of the post-attention and post-FFN norms (1e-8).
    pub post_norm_eps: f32,
    /// `rope.freq_base`: used only through the `rope.freq_base_swa` fallback (NoPE full layers).
    pub rope_freq_base: f32,
    /// Rope base of the sliding layers (`rope.freq_base_swa`, else `rope.freq_base`).
    pub rope_freq_base_swa: f32,
    /// Sliding window, including the query token.
    pub sliding_window: usize,
    /// Per layer: true = sliding window with RoPE, false = full attention without RoPE.
    pub sliding: Vec<bool>,
    pub logit_scale: f32,
    /// Softcap applied after the scale; 0 = none.
    pub softcap: f32,
}

fn key(name: &str) -> String {
    format!("{ARCH}.{name}")
}

fn bad(key: &str, expected: &str, found: &Value) -> Error {
    Error::BadKey {
        key: key.to_string(),
        expected: expected.to_string(),
        found: found.summary(60),
    }
}

fn req_usize(h: &Header, name: &str) -> Result<usize> {
    let k = key(name);
    let v = h.get(&k).ok_or_else(|| Error::MissingKey(k.clone()))?;
    let n = v
        .as_u64()
        .ok_or_else(|| bad(&k, "a non-negative integer", v))?;
    usize::try_from(n).map_err(|_| bad(&k, "an integer that fits in memory", v))
}

fn opt_f32(h: &Header, name: &str) -> Result<Option<f32>> {
    let k = key(name);
    match h.get(&k) {
        None => Ok(None),
        Some(v) => match v.as_f32() {
            Some(f) if f.is_finite() => Ok(Some(f)),
            _ => Err(bad(&k, "a finite float", v)),
        },
    }
}

fn req_f32(h: &Header, name: &str) -> Result<f32> {
    opt_f32(h, name)?.ok_or_else(|| Error::MissingKey(key(name)))
}

impl GlimmerConfig {
    pub fn from_header(h: &Header) -> Result<GlimmerConfig> {
        match h.architecture() {
            Some(ARCH) => {}
            other => {
                return Err(Error::WrongArchitecture {
                    found: other.map(str::to_string),
                })
            }
        }
        let n_layer = req_usize(h, "block_count")?;
        let n_embd = req_usize(h, "embedding_length")?;
        let n_ff = req_usize(h, "feed_forward_length")?;
        let n_head = req_usize(h, "attention.head_count")?;
        let n_head_kv = req_usize(h, "attention.head_count_kv")?;
        let context_length = req_usize(h, "context_length")?;
        let sliding_window = req_usize(h, "attention.sliding_window")?;
        let rms_eps = req_f32(h, "attention.layer_norm_rms_epsilon")?;
        let rope_freq_base = req_f32(h, "rope.freq_base")?;
        let rope_freq_base_swa = opt_f32(h, "rope.freq_base_swa")?.unwrap_or(rope_freq_base);
        let logit_scale = req_f32(h, "logit_scale")?;
        let softcap = opt_f32(h, "final_logit_softcapping")?.unwrap_or(DEFAULT_SOFTCAP);

        let positive = |name: &str, v: usize| -> Result<()> {
            if v == 0 {
                let k = key(name);
                return Err(Error::BadKey {
                    found: "0".into(),
                    key: k,
                    expected: "a positive value".into(),
                });
            }
            Ok(())
        };
        positive("block_count", n_layer)?;
        positive("embedding_length", n_embd)?;
        positive("feed_forward_length", n_ff)?;
        positive("attention.head_count", n_head)?;
        positive("attention.head_count_kv", n_head_kv)?;
        positive("attention.sliding_window", sliding_window)?;
        if n_head % n_head_kv != 0 {
            return Err(Error::BadKey {
                key: key("attention.head_count_kv"),
                expected: format!("a divisor of attention.head_count ({n_head})"),
                found: n_head_kv.to_string(),
            });
        }
        let head_dim = match h.get(&key("attention.key_length")) {
            Some(_) => req_usize(h, "attention.key_length")?,
            None => n_embd / n_head,
        };
        let value_length = match h.get(&key("attention.value_length")) {
            Some(_) => req_usize(h, "attention.value_length")?,
            None => head_dim,
        };
        positive("attention.key_length", head_dim)?;
        if value_length != head_dim {
            return Err(Error::BadKey {
                key: key("attention.value_length"),
                expected: format!("equal to attention.key_length ({head_dim})"),
                found: value_length.to_string(),
            });
        }
        if head_dim % 2 != 0 {
            return Err(Error::BadKey {
                key: key("attention.key_length"),
                expected: "an even head size (RoPE rotates pairs)".into(),
                found: head_dim.to_string(),
            });
        }
        let sliding = sliding_pattern(h, n_layer)?;
        let n_vocab = vocab_size(h)?;
        Ok(GlimmerConfig {
            n_layer,
            n_embd,
            n_ff,
            n_head,
            n_head_kv,
            head_dim,
            n_vocab,
            context_length,
            rms_eps,
            post_norm_eps: POST_NORM_EPS,
            rope_freq_base,
            rope_freq_base_swa,
            sliding_window,
            sliding,
            logit_scale,
            softcap,
        })
    }

    /// Query heads per KV head.
    pub fn gqa(&self) -> usize {
        self.n_head / self.n_head_kv
    }

    /// Width of the Q (and gate, attention output) space.
    pub fn q_dim(&self) -> usize {
        self.n_head * self.head_dim
    }

    /// Width of one cached K (or V) row.
    pub fn kv_dim(&self) -> usize {
        self.n_head_kv * self.head_dim
    }

    /// `1 / sqrt(head_dim)`.
    pub fn attn_scale(&self) -> f32 {
        1.0 / (self.head_dim as f32).sqrt()
    }
}

/// Both encodings of `attention.sliding_window_pattern`: a scalar period P (layer i slides iff
/// `i % P < P - 1`; 0 = every layer slides; absent = llama.cpp's default period 4), or one bool
/// per layer (length must equal the layer count).
fn sliding_pattern(h: &Header, n_layer: usize) -> Result<Vec<bool>> {
    let k = key("attention.sliding_window_pattern");
    let Some(v) = h.get(&k) else {
        return Ok((0..n_layer).map(|i| i % 4 < 3).collect());
    };
    if let Some(a) = v.as_array() {
        let Some(b) = a.as_bools() else {
            return Err(bad(&k, "a u32 period or an array of bools", v));
        };
        if b.len() != n_layer {
            return Err(Error::BadKey {
                key: k,
                expected: format!("{n_layer} entries (one per layer)"),
                found: format!("{} entries", b.len()),
            });
        }
        return Ok(b.to_vec());
    }
    let p = v
        .as_u64()
        .ok_or_else(|| bad(&k, "a u32 period or an array of bools", v))?;
    if p == 0 {
        return Ok(vec![true; n_layer]);
    }
    Ok((0..n_layer as u64).map(|i| i % p < p - 1).collect())
}

/// `vocab_size` if present, else the length of `tokenizer.ggml.tokens`.
fn vocab_size(h: &Header) -> Result<usize> {
    if h.get(&key("vocab_size")).is_some() {
        return req_usize(h, "vocab_size");
    }
    match h.get("tokenizer.ggml.tokens").and_then(Value::as_array) {
        Some(a) => Ok(a.len()),
        None => Err(Error::MissingKey(key("vocab_size"))),
    }
}
