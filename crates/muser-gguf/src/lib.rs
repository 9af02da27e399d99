//! GGUF container: a bounds-checked, zero-copy reader over mmap and a streaming writer.
//!
//! No math lives here: element types are described (`GgmlType`), never decoded.

mod error;
mod file;
mod reader;
mod types;
mod value;
mod writer;

pub use error::{Error, Result};
pub use file::GgufFile;
pub use reader::{
    parse_header, Header, TensorInfo, ALIGNMENT_KEY, DEFAULT_ALIGNMENT, GGUF_MAGIC, MAX_DIMS,
    MAX_NESTING,
};
pub use types::{GgmlType, QK_K};
pub use value::{Array, Value, ValueType};
pub use writer::{GgufBuilder, TensorDataWriter, TensorSpec};
