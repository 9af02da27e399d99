//! Request fields shared by the OpenAI endpoints and llama-server's `/completion`, checked and
//! turned into sampling parameters; unsupported options are refused by name.

use std::collections::HashMap;

use muser_engine::SamplingParams;
use serde::Deserialize;

use crate::error::ApiError;

/// A string or a list of strings (`stop`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    pub fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: Option<bool>,
}

/// Sampling and limit fields common to chat and completions.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Common {
    /// Accepted (and type-checked) but not used: one model is served.
    #[allow(dead_code)]
    pub model: Option<String>,
    pub max_tokens: Option<u64>,
    pub max_completion_tokens: Option<u64>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub top_k: Option<u32>,
    pub min_p: Option<f32>,
    pub seed: Option<i64>,
    pub stop: Option<OneOrMany>,
    pub presence_penalty: Option<f32>,
    pub frequency_penalty: Option<f32>,
    pub repeat_penalty: Option<f32>,
    pub n: Option<u32>,
    pub stream: Option<bool>,
    pub stream_options: Option<StreamOptions>,
    pub logit_bias: Option<HashMap<String, f32>>,
    #[allow(dead_code)]
    pub user: Option<String>,
}

/// Checked options of one request.
#[derive(Debug, Clone)]
pub struct Checked {
    pub sampling: SamplingParams,
    pub max_tokens: Option<usize>,
    pub stops: Vec<String>,
    pub stream: bool,
    pub include_usage: bool,
}

/// A seed for requests without one (different every call, as OpenAI's are).
fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish()
}

impl Common {
    pub fn check(&self) -> Result<Checked, ApiError> {
        if let Some(n) = self.n {
            if n != 1 {
                return Err(ApiError::unsupported("n", &format!("n = {n} (only 1)")));
            }
        }
        if self.logit_bias.as_ref().is_some_and(|b| !b.is_empty()) {
            return Err(ApiError::unsupported("logit_bias", "logit_bias"));
        }
        let range = |name: &str, v: Option<f32>, lo: f32, hi: f32| -> Result<(), ApiError> {
            match v {
                Some(x) if !(x.is_finite() && (lo..=hi).contains(&x)) => Err(ApiError::param(
                    name,
                    format!("{name} must be between {lo} and {hi}, got {x}"),
                )),
                _ => Ok(()),
            }
        };
        range("temperature", self.temperature, 0.0, 2.0)?;
        range("top_p", self.top_p, 0.0, 1.0)?;
        range("min_p", self.min_p, 0.0, 1.0)?;
        range("presence_penalty", self.presence_penalty, -2.0, 2.0)?;
        range("frequency_penalty", self.frequency_penalty, -2.0, 2.0)?;
        // Tiny penalties would push logits to infinity.
        range("repeat_penalty", self.repeat_penalty, 0.01, 10.0)?;
        let d = SamplingParams::default();
        let sampling = SamplingParams {
            temperature: self.temperature.unwrap_or(d.temperature),
            top_k: self.top_k.map_or(d.top_k, |k| k as usize),
            // top_p = 0 keeps only the most probable token, like a tiny nucleus.
            top_p: self.top_p.map_or(d.top_p, |p| p.max(1e-6)),
            min_p: self.min_p.unwrap_or(d.min_p),
            repeat_penalty: self.repeat_penalty.unwrap_or(d.repeat_penalty),
            presence_penalty: self.presence_penalty.unwrap_or(0.0),
            frequency_penalty: self.frequency_penalty.unwrap_or(0.0),
            penalty_last_n: d.penalty_last_n,
            seed: self.seed.map_or_else(fresh_seed, |s| s as u64),
        };
        let max_tokens = match (self.max_completion_tokens, self.max_tokens) {
            (Some(0), _) | (None, Some(0)) => {
                return Err(ApiError::param(
                    "max_tokens",
                    "max_tokens must be at least 1",
                ))
            }
            (Some(m), _) | (None, Some(m)) => Some(m.min(usize::MAX as u64) as usize),
            (None, None) => None,
        };
        let stops = self
            .stop
            .clone()
            .map(OneOrMany::into_vec)
            .unwrap_or_default();
        if stops.len() > 16 {
            return Err(ApiError::param("stop", "at most 16 stop strings"));
        }
        let stream = self.stream.unwrap_or(false);
        if self.stream_options.is_some() && !stream {
            return Err(ApiError::param(
                "stream_options",
                "stream_options is only allowed with stream: true",
            ));
        }
        Ok(Checked {
            sampling,
            max_tokens,
            stops,
            stream,
            include_usage: self
                .stream_options
                .as_ref()
                .and_then(|o| o.include_usage)
                .unwrap_or(false),
        })
    }
}

/// Seconds since the Unix epoch.
pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A fresh id such as `chatcmpl-1a2b…`.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}-{:016x}", fresh_seed())
}
