//! Typed errors of the GGUF reader and writer: each names the key or tensor and the byte offset.

use std::path::PathBuf;

use crate::types::GgmlType;
use crate::value::ValueType;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("I/O error while writing GGUF: {0}")]
    Write(#[from] std::io::Error),
    #[error("not a GGUF file: magic bytes {found:02x?} at offset 0 (expected \"GGUF\")")]
    BadMagic { found: Vec<u8> },
    #[error("unsupported GGUF version {version} at offset 4 (supported: 2, 3)")]
    UnsupportedVersion { version: u32 },
    #[error("big-endian GGUF (version {version} read byte-swapped at offset 4) is not supported")]
    BigEndian { version: u32 },
    #[error(
        "file truncated while reading {what} at offset {offset}: need {need} bytes, {have} left"
    )]
    Truncated {
        what: String,
        offset: u64,
        need: u64,
        have: u64,
    },
    #[error("{what} at offset {offset} claims {count} entries, but only {remaining} bytes are left (at least {min_size} per entry)")]
    CountTooLarge {
        what: String,
        offset: u64,
        count: u64,
        min_size: u64,
        remaining: u64,
    },
    #[error("{what} at offset {offset} is not valid UTF-8")]
    InvalidUtf8 { what: String, offset: u64 },
    #[error("duplicate metadata key {key:?} at offset {offset}")]
    DuplicateKey { key: String, offset: u64 },
    #[error("metadata key {key:?} at offset {offset}: unknown value type id {id}")]
    UnknownValueType { key: String, offset: u64, id: u32 },
    #[error("metadata key {key:?} at offset {offset}: arrays nested deeper than {max}")]
    NestingTooDeep {
        key: String,
        offset: u64,
        max: usize,
    },
    #[error(
        "general.alignment = {value} (at offset {offset}) is not a power of two between 1 and 2^30"
    )]
    BadAlignment { value: u64, offset: u64 },
    #[error("metadata key {key:?} has type {found}, expected {expected}")]
    WrongType {
        key: String,
        expected: String,
        found: ValueType,
    },
    #[error("duplicate tensor name {name:?} at offset {offset}")]
    DuplicateTensor { name: String, offset: u64 },
    #[error("tensor {tensor:?} at offset {offset}: {n_dims} dimensions (at most 4)")]
    TooManyDims {
        tensor: String,
        offset: u64,
        n_dims: u32,
    },
    #[error(
        "tensor {tensor:?} at offset {offset}: dimensions {dims:?} overflow the element count"
    )]
    DimOverflow {
        tensor: String,
        offset: u64,
        dims: Vec<u64>,
    },
    #[error("tensor {tensor:?} at offset {offset}: unknown tensor type id {id}")]
    UnknownTensorType {
        tensor: String,
        offset: u64,
        id: u32,
    },
    #[error("tensor {tensor:?} at offset {offset}: row length {ne0} is not a multiple of {ty}'s block size {block}")]
    NotBlockAligned {
        tensor: String,
        offset: u64,
        ty: GgmlType,
        ne0: u64,
        block: usize,
    },
    #[error("tensor {tensor:?}: data offset {data_offset} is not a multiple of the alignment {alignment}")]
    MisalignedTensor {
        tensor: String,
        data_offset: u64,
        alignment: u64,
    },
    #[error("tensor {tensor:?}: data [{start}, {start}+{size}) lies past the end of the file ({file_len} bytes)")]
    TensorOutOfBounds {
        tensor: String,
        start: u64,
        size: u64,
        file_len: u64,
    },
    #[error("tensors {first:?} and {second:?} overlap at file offset {offset}")]
    OverlappingTensors {
        first: String,
        second: String,
        offset: u64,
    },
    #[error("no tensor named {0:?}")]
    TensorNotFound(String),
    #[error("missing metadata key {0:?}")]
    MissingKey(String),
    #[error("writer: {0}")]
    Writer(String),
}
