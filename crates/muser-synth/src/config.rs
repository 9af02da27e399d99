//! Synthetic-model configuration: Glimmer geometry, key presence, type mix, weight scales, presets.

use muser_gguf::GgmlType;

use crate::error::{Error, Result};

/// How `attention.sliding_window_pattern` is stored: both are in the wild.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatternEncoding {
    /// Meta's files: a u32 period P (layer i slides iff `i % P < P - 1`).
    Scalar,
    /// HF-converter / Unsloth files: one bool per layer (true = sliding).
    BoolArray,
}

/// Which ggml type each tensor role gets.
#[derive(Debug, Clone, PartialEq)]
pub struct TypePlan {
    /// Most matrices (Q/K/V/gate/O projections, FFN gate/up/down).
    pub default: GgmlType,
    pub token_embd: GgmlType,
    pub output: GgmlType,
    /// `attn_v` and `ffn_down` on llama.cpp's "more bits" layers (its Q4_K_M rule), if any.
    pub more_bits: Option<GgmlType>,
    /// Norm vectors.
    pub norms: GgmlType,
}

impl TypePlan {
    /// llama.cpp's Q4_K_M mix, as in Meta's 17 GB file.
    pub fn q4_k_m() -> TypePlan {
        TypePlan {
            default: GgmlType::Q4_K,
            token_embd: GgmlType::Q4_K,
            output: GgmlType::Q6_K,
            more_bits: Some(GgmlType::Q6_K),
            norms: GgmlType::F32,
        }
    }

    /// Every matrix of one type.
    pub fn uniform(ty: GgmlType) -> TypePlan {
        TypePlan {
            default: ty,
            token_embd: ty,
            output: ty,
            more_bits: None,
            norms: GgmlType::F32,
        }
    }
}

/// llama.cpp's `use_more_bits(i_layer, n_layers)` from its quantizer.
pub fn use_more_bits(i_layer: u32, n_layers: u32) -> bool {
    let (i, n) = (i_layer as i64, n_layers as i64);
    i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2
}

/// Scales of the random weights. Chosen so activations stay finite through any depth and the
/// logits are spread: unit-variance projections, norm weights near one, small post-norm
/// weights (residual branches small against the stream), a moderately scaled output head.
#[derive(Debug, Clone, PartialEq)]
pub struct WeightScales {
    /// Std of projection weights times `sqrt(n_in)` (1 keeps outputs near unit variance).
    pub proj_gain: f32,
    /// Std of the output head times `sqrt(n_embd)`.
    pub output_gain: f32,
    /// Centre of the post-attention / post-FFN norm weights.
    pub post_norm: f32,
    /// Relative spread of norm weights around their centre.
    pub norm_spread: f32,
    /// Every k-th embedding row is scaled by `tiny_row_scale`, so that the entry norm's
    /// epsilon matters for those tokens (0 = none).
    pub tiny_row_every: u32,
    pub tiny_row_scale: f32,
    /// Scale of layer 0's `attn_output` relative to the other projections (< 1 makes the
    /// post-attention norm's 1e-8 epsilon matter).
    pub first_o_proj_scale: f32,
}

impl Default for WeightScales {
    fn default() -> Self {
        WeightScales {
            proj_gain: 1.0,
            output_gain: 4.0,
            post_norm: 0.2,
            norm_spread: 0.1,
            tiny_row_every: 97,
            tiny_row_scale: 1e-3,
            first_o_proj_scale: 1e-4,
        }
    }
}

/// Everything that determines a synthetic Glimmer file (with the seed, byte for byte).
#[derive(Debug, Clone, PartialEq)]
pub struct SynthConfig {
    pub name: String,
    pub seed: u64,
    pub n_layer: u32,
    pub n_embd: u32,
    pub n_head: u32,
    pub n_head_kv: u32,
    pub head_dim: u32,
    pub n_ff: u32,
    /// BPE tokens (256 bytes + merges); 2,048 specials follow.
    pub n_vocab_text: u32,
    pub context_length: u32,
    pub sliding_window: u32,
    /// Pattern period: layer i slides iff `i % period < period - 1`.
    pub swa_period: u32,
    pub pattern: PatternEncoding,
    pub rope_freq_base: f32,
    /// `rope.freq_base_swa`; `None` leaves the key out.
    pub rope_freq_base_swa: Option<f32>,
    /// `final_logit_softcapping`; `None` leaves the key out (llama.cpp then uses 30).
    pub softcap: Option<f32>,
    pub logit_scale: f32,
    pub rms_eps: f32,
    pub types: TypePlan,
    pub scales: WeightScales,
    pub chat_template: bool,
}

/// Named starting points; every field can then be overridden.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// A few MB, for tests: 4 layers, hidden 256, 4 heads of 64, 2 KV heads.
    Tiny,
    /// The full Muse Glimmer 30B geometry with the Q4_K_M type mix (~16.9 GB).
    Full30b,
}

impl Preset {
    pub fn parse(name: &str) -> Option<Preset> {
        match name {
            "tiny" => Some(Preset::Tiny),
            "30b" => Some(Preset::Full30b),
            _ => None,
        }
    }
}

impl SynthConfig {
    pub fn preset(preset: Preset) -> SynthConfig {
        match preset {
            Preset::Tiny => SynthConfig {
                name: "muse-glimmer-synthetic-tiny".into(),
                seed: 0x6d75_7365,
                n_layer: 4,
                n_embd: 256,
                n_head: 4,
                n_head_kv: 2,
                head_dim: 64,
                n_ff: 512,
                n_vocab_text: 2000,
                context_length: 4096,
                sliding_window: 32,
                swa_period: 4,
                pattern: PatternEncoding::Scalar,
                rope_freq_base: 500_000.0,
                rope_freq_base_swa: Some(10_000.0),
                softcap: Some(20.0),
                logit_scale: 0.196_116_14,
                rms_eps: 1e-5,
                types: TypePlan::q4_k_m(),
                scales: WeightScales::default(),
                chat_template: true,
            },
            Preset::Full30b => SynthConfig {
                name: "muse-glimmer-synthetic-30b".into(),
                seed: 0x6d75_7365,
                n_layer: 52,
                n_embd: 6656,
                n_head: 32,
                n_head_kv: 2,
                head_dim: 128,
                n_ff: 19968,
                n_vocab_text: 200_000,
                context_length: 131_072,
                sliding_window: 2048,
                swa_period: 4,
                pattern: PatternEncoding::Scalar,
                rope_freq_base: 500_000.0,
                rope_freq_base_swa: Some(500_000.0),
                softcap: Some(20.0),
                logit_scale: 0.196_116_14,
                rms_eps: 1e-5,
                types: TypePlan::q4_k_m(),
                scales: WeightScales::default(),
                chat_template: true,
            },
        }
    }

    pub fn n_vocab(&self) -> u32 {
        self.n_vocab_text + crate::tokenizer::N_SPECIAL
    }

    /// Layer i slides iff `i % period < period - 1` (llama.cpp's rule for a scalar period).
    pub fn is_sliding(&self, layer: u32) -> bool {
        self.swa_period > 0 && layer % self.swa_period < self.swa_period - 1
    }

    /// Checks geometry and type/shape compatibility before anything is written.
    pub fn validate(&self) -> Result<()> {
        let bad = |msg: String| Err(Error::Config(msg));
        if self.n_layer == 0 || self.n_embd == 0 || self.n_head == 0 || self.head_dim == 0 {
            return bad("layers, hidden, heads and head_dim must be positive".into());
        }
        if self.n_head_kv == 0 || self.n_head % self.n_head_kv != 0 {
            return bad(format!(
                "{} query heads cannot be grouped over {} KV heads",
                self.n_head, self.n_head_kv
            ));
        }
        if self.swa_period == 0 {
            return bad("the sliding-window period must be at least 1".into());
        }
        if self.sliding_window == 0 {
            return bad("the sliding window must be at least 1".into());
        }
        if self.n_vocab_text < 256 {
            return bad("the BPE vocabulary needs at least the 256 byte tokens".into());
        }
        let q_dim = self.n_head * self.head_dim;
        let checks = [
            ("hidden", self.n_embd, self.types.default),
            ("hidden", self.n_embd, self.types.token_embd),
            ("hidden", self.n_embd, self.types.output),
            ("head_count*head_dim", q_dim, self.types.default),
            ("feed_forward_length", self.n_ff, self.types.default),
        ];
        let more = self
            .types
            .more_bits
            .map(|t| ("feed_forward_length", self.n_ff, t));
        for (what, n, ty) in checks.into_iter().chain(more) {
            if n as usize % ty.block_size() != 0 {
                return bad(format!(
                    "{what} = {n} is not a multiple of {ty}'s block size {}",
                    ty.block_size()
                ));
            }
        }
        for ty in [
            self.types.default,
            self.types.token_embd,
            self.types.output,
            self.types.norms,
        ]
        .into_iter()
        .chain(self.types.more_bits)
        {
            if !muser_quant::can_quantize(ty) {
                return bad(format!("cannot generate weights of type {ty}"));
            }
        }
        Ok(())
    }
}
