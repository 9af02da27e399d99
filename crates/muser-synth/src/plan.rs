//! The tensor list and metadata of a synthetic Glimmer GGUF: real key and tensor names,
//! shapes in ggml order, types from the plan, and how each tensor's values are drawn.

use muser_gguf::{Array, GgmlType, GgufBuilder, Value};

use crate::config::{use_more_bits, PatternEncoding, SynthConfig};
use crate::error::Result;
use crate::tokenizer::{self, Vocab};

pub const ARCH: &str = "muse-glimmer";

/// How a tensor's values are drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Init {
    /// Uniform in `[-a, a]` with `a = std * sqrt(3)`.
    Uniform { std: f32 },
    /// Uniform embedding rows with std `std`; every `tiny_every`-th row scaled by `tiny`.
    Embedding {
        std: f32,
        tiny_every: u32,
        tiny: f32,
    },
    /// `centre * (1 + spread * u)`, u uniform in [-1, 1).
    Around { centre: f32, spread: f32 },
    /// Every element equal.
    Constant(f32),
}

#[derive(Debug, Clone, PartialEq)]
pub struct TensorPlan {
    pub name: String,
    /// ggml order: `[ne0 (input / row length), ne1 (rows)]`.
    pub dims: Vec<u64>,
    pub ty: GgmlType,
    pub init: Init,
}

impl TensorPlan {
    pub fn n_elements(&self) -> u64 {
        self.dims.iter().product()
    }
}

/// All tensors in file order.
pub fn tensors(cfg: &SynthConfig) -> Vec<TensorPlan> {
    let e = u64::from(cfg.n_embd);
    let q = u64::from(cfg.n_head * cfg.head_dim);
    let kv = u64::from(cfg.n_head_kv * cfg.head_dim);
    let ff = u64::from(cfg.n_ff);
    let vocab = u64::from(cfg.n_vocab());
    let hd = u64::from(cfg.head_dim);
    let s = &cfg.scales;
    let proj = |n_in: u64| Init::Uniform {
        std: s.proj_gain / (n_in as f32).sqrt(),
    };
    let norm = |centre: f32| Init::Around {
        centre,
        spread: s.norm_spread,
    };
    let t = &cfg.types;
    let mut out = vec![TensorPlan {
        name: "token_embd.weight".into(),
        dims: vec![e, vocab],
        ty: t.token_embd,
        init: Init::Embedding {
            std: 1.0,
            tiny_every: s.tiny_row_every,
            tiny: s.tiny_row_scale,
        },
    }];
    for l in 0..cfg.n_layer {
        let more = use_more_bits(l, cfg.n_layer);
        let rich = |base: GgmlType| match t.more_bits {
            Some(m) if more => m,
            _ => base,
        };
        let o_init = if l == 0 {
            Init::Uniform {
                std: s.proj_gain * s.first_o_proj_scale / (q as f32).sqrt(),
            }
        } else {
            proj(q)
        };
        let layer: [(&str, Vec<u64>, GgmlType, Init); 14] = [
            ("attn_norm", vec![e], t.norms, norm(1.0)),
            ("attn_q", vec![e, q], t.default, proj(e)),
            ("attn_k", vec![e, kv], t.default, proj(e)),
            ("attn_v", vec![e, kv], rich(t.default), proj(e)),
            ("attn_gate", vec![e, q], t.default, proj(e)),
            // The model's qk_scale_factor (3.87) is folded into the Q norm in real files.
            ("attn_q_norm", vec![hd], t.norms, Init::Constant(3.87)),
            ("attn_k_norm", vec![hd], t.norms, Init::Constant(1.0)),
            ("attn_output", vec![q, e], t.default, o_init),
            ("post_attention_norm", vec![e], t.norms, norm(s.post_norm)),
            ("ffn_norm", vec![e], t.norms, norm(1.0)),
            ("ffn_gate", vec![e, ff], t.default, proj(e)),
            ("ffn_up", vec![e, ff], t.default, proj(e)),
            ("ffn_down", vec![ff, e], rich(t.default), proj(ff)),
            ("post_ffw_norm", vec![e], t.norms, norm(s.post_norm)),
        ];
        for (name, dims, ty, init) in layer {
            out.push(TensorPlan {
                name: format!("blk.{l}.{name}.weight"),
                dims,
                ty,
                init,
            });
        }
    }
    out.push(TensorPlan {
        name: "output_norm.weight".into(),
        dims: vec![e],
        ty: t.norms,
        init: norm(1.0),
    });
    out.push(TensorPlan {
        name: "output.weight".into(),
        dims: vec![e, vocab],
        ty: t.output,
        init: Init::Uniform {
            std: s.output_gain / (e as f32).sqrt(),
        },
    });
    out
}

/// llama.cpp's `general.file_type` for the plan (15 = Q4_K_M when the Q4_K_M mix is used).
fn file_type(cfg: &SynthConfig) -> u32 {
    match (cfg.types.default, cfg.types.more_bits) {
        (GgmlType::Q4_K, Some(GgmlType::Q6_K)) => 15,
        (GgmlType::F32, _) => 0,
        (GgmlType::F16, _) => 1,
        (GgmlType::Q4_0, _) => 2,
        (GgmlType::Q4_1, _) => 3,
        (GgmlType::Q8_0, _) => 7,
        (GgmlType::Q5_0, _) => 8,
        (GgmlType::Q5_1, _) => 9,
        (GgmlType::Q2_K, _) => 10,
        (GgmlType::Q4_K, _) => 14,
        (GgmlType::Q5_K, _) => 16,
        (GgmlType::Q6_K, _) => 18,
        (GgmlType::BF16, _) => 32,
        _ => 0,
    }
}

/// Adds every metadata key (architecture, hyperparameters, tokenizer, chat template).
pub fn metadata(cfg: &SynthConfig, vocab: &Vocab, b: &mut GgufBuilder) -> Result<()> {
    let k = |s: &str| format!("{ARCH}.{s}");
    b.kv("general.architecture", Value::String(ARCH.into()))?;
    b.kv("general.name", Value::String(cfg.name.clone()))?;
    b.kv("general.quantization_version", Value::U32(2))?;
    b.kv("general.file_type", Value::U32(file_type(cfg)))?;
    b.kv(k("context_length"), Value::U32(cfg.context_length))?;
    b.kv(k("embedding_length"), Value::U32(cfg.n_embd))?;
    b.kv(k("block_count"), Value::U32(cfg.n_layer))?;
    b.kv(k("feed_forward_length"), Value::U32(cfg.n_ff))?;
    b.kv(k("attention.head_count"), Value::U32(cfg.n_head))?;
    b.kv(k("attention.head_count_kv"), Value::U32(cfg.n_head_kv))?;
    b.kv(k("attention.key_length"), Value::U32(cfg.head_dim))?;
    b.kv(k("attention.value_length"), Value::U32(cfg.head_dim))?;
    b.kv(
        k("attention.layer_norm_rms_epsilon"),
        Value::F32(cfg.rms_eps),
    )?;
    b.kv(k("rope.freq_base"), Value::F32(cfg.rope_freq_base))?;
    if let Some(base) = cfg.rope_freq_base_swa {
        b.kv(k("rope.freq_base_swa"), Value::F32(base))?;
    }
    b.kv(
        k("attention.sliding_window"),
        Value::U32(cfg.sliding_window),
    )?;
    let pattern = match cfg.pattern {
        PatternEncoding::Scalar => Value::U32(cfg.swa_period),
        PatternEncoding::BoolArray => Value::Array(Array::Bool(
            (0..cfg.n_layer).map(|l| cfg.is_sliding(l)).collect(),
        )),
    };
    b.kv(k("attention.sliding_window_pattern"), pattern)?;
    b.kv(k("logit_scale"), Value::F32(cfg.logit_scale))?;
    if let Some(cap) = cfg.softcap {
        b.kv(k("final_logit_softcapping"), Value::F32(cap))?;
    }
    b.kv(k("vocab_size"), Value::U32(cfg.n_vocab()))?;

    b.kv("tokenizer.ggml.model", Value::String("gpt2".into()))?;
    b.kv("tokenizer.ggml.pre", Value::String("llama-bpe".into()))?;
    b.kv(
        "tokenizer.ggml.tokens",
        Value::Array(Array::String(vocab.tokens.clone())),
    )?;
    b.kv(
        "tokenizer.ggml.token_type",
        Value::Array(Array::I32(vocab.token_types.clone())),
    )?;
    b.kv(
        "tokenizer.ggml.merges",
        Value::Array(Array::String(vocab.merges.clone())),
    )?;
    let id = |o| Value::U32(vocab.special(o));
    b.kv("tokenizer.ggml.bos_token_id", id(tokenizer::OFFSET_BOS))?;
    b.kv("tokenizer.ggml.eos_token_id", id(tokenizer::OFFSET_EOS))?;
    // `<|eot|>` ends a turn. `<|eom|>` deliberately gets no eom_token_id key: llama.cpp would
    // treat it as end of generation, which breaks tool calling.
    b.kv("tokenizer.ggml.eot_token_id", id(tokenizer::OFFSET_EOT))?;
    b.kv("tokenizer.ggml.padding_token_id", id(tokenizer::OFFSET_PAD))?;
    b.kv("tokenizer.ggml.add_bos_token", Value::Bool(true))?;
    b.kv("tokenizer.ggml.add_eos_token", Value::Bool(false))?;
    if cfg.chat_template {
        b.kv(
            "tokenizer.chat_template",
            Value::String(tokenizer::CHAT_TEMPLATE.into()),
        )?;
    }
    Ok(())
}
