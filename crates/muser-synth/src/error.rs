//! Errors of the synthetic-model generator.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid synthetic model configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Gguf(#[from] muser_gguf::Error),
    #[error("quantizing tensor {tensor:?}: {source}")]
    Quant {
        tensor: String,
        #[source]
        source: muser_quant::Error,
    },
    #[error("writing {path}: {source}")]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
