//! Typed errors of the tokenizer and chat template loaders: each names the metadata key.

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Gguf(#[from] muser_gguf::Error),
    #[error("metadata key {key:?} is missing")]
    MissingKey { key: &'static str },
    #[error("metadata key {key:?} has an unexpected type: expected {expected}")]
    WrongType {
        key: &'static str,
        expected: &'static str,
    },
    #[error("unsupported {key} = {value:?} (supported: {supported})")]
    Unsupported {
        key: &'static str,
        value: String,
        supported: &'static str,
    },
    #[error("{key} has {found} entries, fewer than the {expected} tokens")]
    TooShort {
        key: &'static str,
        found: usize,
        expected: usize,
    },
    #[error("tokenizer.ggml.tokens has the token {text:?} twice (ids {first} and {second})")]
    DuplicateToken {
        text: String,
        first: u32,
        second: u32,
    },
    #[error("tokenizer.ggml.tokens has {count} tokens, more than ids can address")]
    TooManyTokens { count: usize },
    #[error("tokenizer.ggml.merges[{index}] = {merge:?}: {reason}")]
    BadMerge {
        index: usize,
        merge: String,
        reason: &'static str,
    },
    #[error("{key} = {id} is outside the vocabulary of {n_vocab} tokens")]
    IdOutOfRange {
        key: &'static str,
        id: u64,
        n_vocab: usize,
    },
    #[error("chat template: {0}")]
    Template(#[from] minijinja::Error),
    #[error("chat message {index}: {reason}")]
    BadMessage { index: usize, reason: String },
}
