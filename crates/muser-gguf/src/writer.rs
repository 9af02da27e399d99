//! GGUF writer: metadata and tensor infos up front, then tensor data streamed in order.
//!
//! The header (with every tensor's offset) is computed from declared shapes and types, so a
//! multi-gigabyte file is written without ever holding more than the caller's chunk.

use std::collections::HashSet;
use std::io::Write;

use crate::error::{Error, Result};
use crate::reader::{ALIGNMENT_KEY, DEFAULT_ALIGNMENT, GGUF_MAGIC, MAX_DIMS};
use crate::types::GgmlType;
use crate::value::{Array, Value};

/// A tensor declared in a [`GgufBuilder`].
#[derive(Debug, Clone, PartialEq)]
pub struct TensorSpec {
    pub name: String,
    /// ggml order (`dims[0]` fastest).
    pub dims: Vec<u64>,
    pub ty: GgmlType,
    pub n_bytes: u64,
    /// Offset within the data section.
    pub data_offset: u64,
}

/// Collects metadata and tensor declarations, then writes the file.
#[derive(Debug, Clone)]
pub struct GgufBuilder {
    version: u32,
    alignment: u64,
    metadata: Vec<(String, Value)>,
    keys: HashSet<String>,
    tensors: Vec<TensorSpec>,
    names: HashSet<String>,
    data_len: u64,
}

impl Default for GgufBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl GgufBuilder {
    /// A version-3 file with ggml's default alignment of 32.
    pub fn new() -> GgufBuilder {
        GgufBuilder {
            version: 3,
            alignment: DEFAULT_ALIGNMENT,
            metadata: Vec::new(),
            keys: HashSet::new(),
            tensors: Vec::new(),
            names: HashSet::new(),
            data_len: 0,
        }
    }

    /// Writes version 2 instead of 3 (identical layout for little-endian files).
    pub fn version(mut self, version: u32) -> Result<GgufBuilder> {
        if version != 2 && version != 3 {
            return Err(Error::Writer(format!(
                "cannot write GGUF version {version}"
            )));
        }
        self.version = version;
        Ok(self)
    }

    /// Sets `general.alignment` (must be set before any tensor is declared).
    pub fn alignment(&mut self, alignment: u32) -> Result<()> {
        self.kv(ALIGNMENT_KEY, Value::U32(alignment))
    }

    /// Adds a metadata key; duplicate keys are refused.
    pub fn kv(&mut self, key: impl Into<String>, value: Value) -> Result<()> {
        let key = key.into();
        if key == ALIGNMENT_KEY {
            let a = match value {
                Value::U32(a) if a.is_power_of_two() => a,
                _ => {
                    return Err(Error::Writer(format!(
                        "{ALIGNMENT_KEY} must be a u32 power of two, got {value:?}"
                    )))
                }
            };
            if !self.tensors.is_empty() {
                return Err(Error::Writer(format!(
                    "{ALIGNMENT_KEY} must be set before tensors are declared"
                )));
            }
            self.alignment = u64::from(a);
        }
        if !self.keys.insert(key.clone()) {
            return Err(Error::Writer(format!("duplicate metadata key {key:?}")));
        }
        self.metadata.push((key, value));
        Ok(())
    }

    /// Declares a tensor; its data must later be written in declaration order.
    pub fn tensor(&mut self, name: impl Into<String>, dims: &[u64], ty: GgmlType) -> Result<()> {
        let name = name.into();
        if dims.len() > MAX_DIMS as usize {
            return Err(Error::Writer(format!(
                "tensor {name:?}: too many dimensions"
            )));
        }
        let n = dims
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d))
            .ok_or_else(|| Error::Writer(format!("tensor {name:?}: element count overflows")))?;
        let ne0 = dims.first().copied().unwrap_or(1);
        if ne0 % ty.block_size() as u64 != 0 {
            return Err(Error::Writer(format!(
                "tensor {name:?}: row length {ne0} is not a multiple of {ty}'s block size {}",
                ty.block_size()
            )));
        }
        let n_bytes = ty
            .bytes_for(n)
            .ok_or_else(|| Error::Writer(format!("tensor {name:?}: size overflows")))?;
        if !self.names.insert(name.clone()) {
            return Err(Error::Writer(format!("duplicate tensor {name:?}")));
        }
        let data_offset = self.data_len;
        self.data_len = (data_offset + n_bytes).div_ceil(self.alignment) * self.alignment;
        self.tensors.push(TensorSpec {
            name,
            dims: dims.to_vec(),
            ty,
            n_bytes,
            data_offset,
        });
        Ok(())
    }

    pub fn tensors(&self) -> &[TensorSpec] {
        &self.tensors
    }

    /// The header bytes, padded to the alignment (the data section starts right after).
    pub fn header_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(GGUF_MAGIC);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&(self.tensors.len() as u64).to_le_bytes());
        out.extend_from_slice(&(self.metadata.len() as u64).to_le_bytes());
        for (key, value) in &self.metadata {
            put_str(&mut out, key);
            out.extend_from_slice(&(value.value_type() as u32).to_le_bytes());
            put_value(&mut out, value);
        }
        for t in &self.tensors {
            put_str(&mut out, &t.name);
            out.extend_from_slice(&(t.dims.len() as u32).to_le_bytes());
            for d in &t.dims {
                out.extend_from_slice(&d.to_le_bytes());
            }
            out.extend_from_slice(&t.ty.id().to_le_bytes());
            out.extend_from_slice(&t.data_offset.to_le_bytes());
        }
        let padded = (out.len() as u64).div_ceil(self.alignment) * self.alignment;
        out.resize(padded as usize, 0);
        out
    }

    /// Total file size once every tensor is written.
    pub fn file_len(&self) -> u64 {
        self.header_bytes().len() as u64 + self.data_len
    }

    /// Writes the header and returns a writer that accepts the tensor data in order.
    pub fn start<W: Write>(self, mut w: W) -> Result<TensorDataWriter<W>> {
        w.write_all(&self.header_bytes())?;
        Ok(TensorDataWriter {
            w,
            alignment: self.alignment,
            tensors: self.tensors,
            current: 0,
            written: 0,
        })
    }

    /// Writes a whole file whose tensor data is in memory (tests, small files).
    pub fn write_all<W: Write>(self, w: W, data: &[&[u8]]) -> Result<W> {
        let mut tw = self.start(w)?;
        for d in data {
            tw.write(d)?;
        }
        tw.finish()
    }
}

/// Receives tensor bytes in declaration order, in chunks of any size, and pads between
/// tensors.
pub struct TensorDataWriter<W: Write> {
    w: W,
    alignment: u64,
    tensors: Vec<TensorSpec>,
    current: usize,
    written: u64,
}

impl<W: Write> TensorDataWriter<W> {
    /// The tensor the next bytes belong to, if any is left.
    pub fn current(&self) -> Option<&TensorSpec> {
        self.tensors.get(self.current)
    }

    /// Appends bytes to the current tensor, moving on to the next one when it is full.
    pub fn write(&mut self, mut bytes: &[u8]) -> Result<()> {
        while !bytes.is_empty() {
            let Some(t) = self.tensors.get(self.current) else {
                return Err(Error::Writer(format!(
                    "{} bytes written past the last tensor",
                    bytes.len()
                )));
            };
            let room = (t.n_bytes - self.written).min(bytes.len() as u64) as usize;
            self.w.write_all(&bytes[..room])?;
            self.written += room as u64;
            bytes = &bytes[room..];
            self.advance_if_full()?;
        }
        Ok(())
    }

    fn advance_if_full(&mut self) -> Result<()> {
        while let Some(t) = self.tensors.get(self.current) {
            if self.written < t.n_bytes {
                break;
            }
            let end = t.data_offset + t.n_bytes;
            let pad = end.div_ceil(self.alignment) * self.alignment - end;
            if self.current + 1 < self.tensors.len() {
                self.w.write_all(&vec![0u8; pad as usize])?;
            }
            self.current += 1;
            self.written = 0;
        }
        Ok(())
    }

    /// Checks that every declared tensor was written in full and returns the sink.
    pub fn finish(mut self) -> Result<W> {
        self.advance_if_full()?;
        if let Some(t) = self.tensors.get(self.current) {
            return Err(Error::Writer(format!(
                "tensor {:?} incomplete: {} of {} bytes written",
                t.name, self.written, t.n_bytes
            )));
        }
        self.w.flush()?;
        Ok(self.w)
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::U8(x) => out.push(*x),
        Value::I8(x) => out.push(*x as u8),
        Value::U16(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I16(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::U32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::F32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::U64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::F64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::Bool(x) => out.push(u8::from(*x)),
        Value::String(s) => put_str(out, s),
        Value::Array(a) => put_array(out, a),
    }
}

fn put_array(out: &mut Vec<u8>, a: &Array) {
    out.extend_from_slice(&(a.element_type() as u32).to_le_bytes());
    out.extend_from_slice(&(a.len() as u64).to_le_bytes());
    macro_rules! each {
        ($v:expr) => {
            for x in $v {
                out.extend_from_slice(&x.to_le_bytes());
            }
        };
    }
    match a {
        Array::U8(v) => out.extend_from_slice(v),
        Array::I8(v) => out.extend(v.iter().map(|&x| x as u8)),
        Array::Bool(v) => out.extend(v.iter().map(|&x| u8::from(x))),
        Array::U16(v) => each!(v),
        Array::I16(v) => each!(v),
        Array::U32(v) => each!(v),
        Array::I32(v) => each!(v),
        Array::F32(v) => each!(v),
        Array::U64(v) => each!(v),
        Array::I64(v) => each!(v),
        Array::F64(v) => each!(v),
        Array::String(v) => v.iter().for_each(|s| put_str(out, s)),
        Array::Array(v) => v.iter().for_each(|inner| put_array(out, inner)),
    }
}
