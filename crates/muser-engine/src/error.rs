//! Typed errors of the engine: model description, weights, KV cache, forward, sampling.

use muser_gguf::GgmlType;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Gguf(#[from] muser_gguf::Error),
    #[error(transparent)]
    Quant(#[from] muser_quant::Error),
    #[error("architecture is {found:?}, expected \"muse-glimmer\"")]
    WrongArchitecture { found: Option<String> },
    #[error("missing required metadata key {0:?}")]
    MissingKey(String),
    #[error("metadata key {key:?}: expected {expected}, found {found}")]
    BadKey {
        key: String,
        expected: String,
        found: String,
    },
    #[error("missing tensor {0:?}")]
    MissingTensor(String),
    #[error("tensor {tensor:?}: expected shape {expected:?}, found {found:?}")]
    TensorShape {
        tensor: String,
        expected: Vec<u64>,
        found: Vec<u64>,
    },
    #[error("tensor {tensor:?}: type {ty} is not supported here (supported: {supported})")]
    TensorType {
        tensor: String,
        ty: GgmlType,
        supported: String,
    },
    #[error("tensor {0:?}: fused QKV projections are not supported by this engine (expected separate attn_q/attn_k/attn_v)")]
    FusedQkv(String),
    #[error("token id {id} is outside the vocabulary ({n_vocab} tokens)")]
    TokenOutOfRange { id: u32, n_vocab: usize },
    #[error(
        "KV cache layer {layer}: append of position {got} but the next position is {expected}"
    )]
    CacheDiscontinuity {
        layer: usize,
        expected: usize,
        got: usize,
    },
    #[error("KV cache: position {position} exceeds the capacity of {capacity} positions")]
    CacheFull { position: usize, capacity: usize },
    #[error("KV cache layer {layer}: cannot truncate to {to}: rows needed for it were overwritten (oldest intact position {oldest})")]
    TruncateTooFar {
        layer: usize,
        to: usize,
        oldest: usize,
    },
    #[error("KV cache: cannot truncate to {to}, only {len} positions are cached")]
    TruncateBeyondEnd { to: usize, len: usize },
    #[error("non-finite logits (first at vocabulary index {index}: {value})")]
    NonFiniteLogits { index: usize, value: f32 },
    #[error("invalid sampling parameter: {0}")]
    BadSampling(String),
    #[error("CUDA: {0}")]
    Cuda(String),
    #[error("{0}")]
    Invalid(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
