//! Typed errors of the quant crate.

use muser_gguf::GgmlType;

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong when (de)quantizing; no function of this crate panics instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A tensor's type has no dequantizer here.
    #[error(
        "tensor \"{tensor}\": type {ty} is not supported (supported: {})",
        crate::api::supported_dequantize_names()
    )]
    UnsupportedType { tensor: String, ty: GgmlType },

    /// `dequantize_row` / `quantize_row` asked for a type this crate cannot handle.
    #[error("cannot {op} type {ty} (supported: {supported})")]
    UnsupportedOp {
        op: &'static str,
        ty: GgmlType,
        supported: String,
    },

    /// The element count is not a whole number of blocks.
    #[error("{ty}: {n_elements} elements are not a whole number of {block_size}-element blocks")]
    PartialBlock {
        ty: GgmlType,
        n_elements: usize,
        block_size: usize,
    },

    /// A byte or element slice has the wrong length.
    #[error("{what}: expected length {expected}, got {actual}")]
    Length {
        what: &'static str,
        expected: usize,
        actual: usize,
    },

    /// A kernel set was requested for an instruction set this CPU does not support.
    #[error("instruction set {isa} is not available on this CPU")]
    IsaUnavailable { isa: &'static str },

    /// A tensor's data does not match its type and shape.
    #[error("tensor \"{tensor}\": type {ty} with dims {dims:?} needs {} bytes, got {actual}",
        .expected.map_or_else(|| "a whole number of blocks (or fewer elements)".to_string(), |e| e.to_string()))]
    TensorLength {
        tensor: String,
        ty: GgmlType,
        dims: Vec<u64>,
        /// `None` when the shape itself is invalid (partial block, or too large to address).
        expected: Option<u64>,
        actual: usize,
    },
}

/// `Ok(())` if `expected == actual`, else [`Error::Length`].
pub(crate) fn check_len(what: &'static str, expected: usize, actual: usize) -> Result<()> {
    if expected == actual {
        Ok(())
    } else {
        Err(Error::Length {
            what,
            expected,
            actual,
        })
    }
}
