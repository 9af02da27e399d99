//! Bounds-checked GGUF parser: header, metadata and tensor infos from a byte slice, no panics.
//!
//! Every count, length, offset and dimension read from the file is checked against what is
//! left of the file before it is used to allocate or index. Errors name the key or tensor and
//! the absolute byte offset where the bad field starts.

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::types::GgmlType;
use crate::value::{Array, Value, ValueType};

pub const GGUF_MAGIC: &[u8; 4] = b"GGUF";
pub const DEFAULT_ALIGNMENT: u64 = 32;
pub const ALIGNMENT_KEY: &str = "general.alignment";
/// ggml's `GGML_MAX_DIMS`.
pub const MAX_DIMS: u32 = 4;
/// Arrays of arrays deeper than this are refused (no real file nests more than 2).
pub const MAX_NESTING: usize = 8;

/// One tensor-info record, validated against the file.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    /// ggml order: `dims[0]` (`ne0`) is the fastest-varying axis.
    pub dims: Vec<u64>,
    pub ty: GgmlType,
    /// Offset relative to the start of the data section.
    pub data_offset: u64,
    /// Absolute file offset of the first data byte.
    pub file_offset: u64,
    pub n_bytes: u64,
    /// Absolute file offset of this tensor-info record (for error messages).
    pub info_offset: u64,
}

impl TensorInfo {
    pub fn n_elements(&self) -> u64 {
        self.dims.iter().product()
    }

    /// Number of rows of `ne0` elements.
    pub fn n_rows(&self) -> u64 {
        self.dims.iter().skip(1).product()
    }
}

/// Everything before the tensor data: version, metadata in file order, tensor infos.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub version: u32,
    pub metadata: Vec<(String, Value)>,
    pub tensors: Vec<TensorInfo>,
    pub alignment: u64,
    /// Absolute offset of the data section.
    pub data_start: u64,
    index: HashMap<String, usize>,
    tensor_index: HashMap<String, usize>,
}

impl Header {
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.index.get(key).map(|&i| &self.metadata[i].1)
    }

    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensor_index.get(name).map(|&i| &self.tensors[i])
    }

    /// A string key, `Ok(None)` if absent, an error if present with another type.
    pub fn get_str(&self, key: &str) -> Result<Option<&str>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.as_str().map(Some).ok_or_else(|| wrong(key, "string", v)),
        }
    }

    /// A non-negative integer key of any width.
    pub fn get_u64(&self, key: &str) -> Result<Option<u64>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| wrong(key, "non-negative integer", v)),
        }
    }

    pub fn get_f32(&self, key: &str) -> Result<Option<f32>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.as_f32().map(Some).ok_or_else(|| wrong(key, "float", v)),
        }
    }

    pub fn get_bool(&self, key: &str) -> Result<Option<bool>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.as_bool().map(Some).ok_or_else(|| wrong(key, "bool", v)),
        }
    }

    pub fn get_array(&self, key: &str) -> Result<Option<&Array>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.as_array().map(Some).ok_or_else(|| wrong(key, "array", v)),
        }
    }

    /// `general.architecture`, if present and a string.
    pub fn architecture(&self) -> Option<&str> {
        self.get("general.architecture").and_then(Value::as_str)
    }
}

fn wrong(key: &str, expected: &str, found: &Value) -> Error {
    Error::WrongType {
        key: key.to_string(),
        expected: expected.to_string(),
        found: found.value_type(),
    }
}

/// A little-endian cursor that never reads past its slice.
struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn remaining(&self) -> u64 {
        (self.data.len() - self.pos) as u64
    }

    fn offset(&self) -> u64 {
        self.pos as u64
    }

    fn take(&mut self, n: u64, what: &dyn Fn() -> String) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(Error::Truncated {
                what: what(),
                offset: self.offset(),
                need: n,
                have: self.remaining(),
            });
        }
        let n = n as usize;
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &dyn Fn() -> String) -> Result<[u8; N]> {
        let s = self.take(N as u64, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    fn u32(&mut self, what: &dyn Fn() -> String) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &dyn Fn() -> String) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A GGUF string: u64 length then UTF-8 bytes.
    fn string(&mut self, what: &dyn Fn() -> String) -> Result<String> {
        let start = self.offset();
        let len = self.u64(what)?;
        let bytes = self.take(len, what)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_string()),
            Err(_) => Err(Error::InvalidUtf8 {
                what: what(),
                offset: start,
            }),
        }
    }

    /// Checks that `count` entries of at least `min_size` bytes can fit in what is left.
    fn check_count(
        &self,
        count: u64,
        min_size: u64,
        at: u64,
        what: &dyn Fn() -> String,
    ) -> Result<usize> {
        let fits = count
            .checked_mul(min_size)
            .is_some_and(|n| n <= self.remaining());
        if !fits {
            return Err(Error::CountTooLarge {
                what: what(),
                offset: at,
                count,
                min_size,
                remaining: self.remaining(),
            });
        }
        // `count * min_size <= remaining <= usize::MAX`, so this cannot truncate.
        Ok(count as usize)
    }
}

/// Parses the header of a GGUF file held in `data` (the whole file, typically an mmap) and
/// validates every tensor's extent against `data.len()`.
pub fn parse_header(data: &[u8]) -> Result<Header> {
    let mut c = Cursor { data, pos: 0 };
    let magic = c.take(4, &|| "magic".into()).map_err(|_| Error::BadMagic {
        found: data[..data.len().min(4)].to_vec(),
    })?;
    if magic != GGUF_MAGIC {
        return Err(Error::BadMagic {
            found: magic.to_vec(),
        });
    }
    let version = c.u32(&|| "version".into())?;
    match version {
        2 | 3 => {}
        v if v.swap_bytes() == 2 || v.swap_bytes() == 3 => {
            return Err(Error::BigEndian {
                version: v.swap_bytes(),
            })
        }
        v => return Err(Error::UnsupportedVersion { version: v }),
    }
    let tensor_count_at = c.offset();
    let tensor_count = c.u64(&|| "tensor count".into())?;
    let kv_count_at = c.offset();
    let kv_count = c.u64(&|| "metadata count".into())?;
    // Smallest KV: 8-byte key length, 4-byte type, 1-byte value.
    let kv_count = c.check_count(kv_count, 13, kv_count_at, &|| "metadata count".into())?;

    let mut metadata = Vec::with_capacity(kv_count);
    let mut index = HashMap::with_capacity(kv_count);
    let mut key_offsets = Vec::with_capacity(kv_count);
    for i in 0..kv_count {
        let key_at = c.offset();
        let key = c.string(&|| format!("metadata key #{i}"))?;
        if index.contains_key(&key) {
            return Err(Error::DuplicateKey {
                key,
                offset: key_at,
            });
        }
        let type_at = c.offset();
        let type_id = c.u32(&|| format!("type of metadata key {key:?}"))?;
        let ty = ValueType::from_id(type_id).ok_or_else(|| Error::UnknownValueType {
            key: key.clone(),
            offset: type_at,
            id: type_id,
        })?;
        let value = read_value(&mut c, ty, &key, 0)?;
        index.insert(key.clone(), metadata.len());
        key_offsets.push(key_at);
        metadata.push((key, value));
    }

    let alignment = match index.get(ALIGNMENT_KEY) {
        None => DEFAULT_ALIGNMENT,
        Some(&i) => {
            let v = &metadata[i].1;
            let a = match v {
                Value::U32(a) => u64::from(*a),
                other => other
                    .as_u64()
                    .ok_or_else(|| wrong(ALIGNMENT_KEY, "u32", other))?,
            };
            if a == 0 || !a.is_power_of_two() || a > (1 << 30) {
                return Err(Error::BadAlignment {
                    value: a,
                    offset: key_offsets[i],
                });
            }
            a
        }
    };

    // Smallest tensor info: 8-byte name length, 4-byte n_dims, 4-byte type, 8-byte offset.
    let tensor_count =
        c.check_count(tensor_count, 24, tensor_count_at, &|| "tensor count".into())?;
    let mut tensors = Vec::with_capacity(tensor_count);
    let mut tensor_index = HashMap::with_capacity(tensor_count);
    for i in 0..tensor_count {
        let info_offset = c.offset();
        let name = c.string(&|| format!("name of tensor #{i}"))?;
        if tensor_index.contains_key(&name) {
            return Err(Error::DuplicateTensor {
                name,
                offset: info_offset,
            });
        }
        let what = || format!("tensor {name:?}");
        let dims_at = c.offset();
        let n_dims = c.u32(&what)?;
        if n_dims > MAX_DIMS {
            return Err(Error::TooManyDims {
                tensor: name,
                offset: dims_at,
                n_dims,
            });
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            dims.push(c.u64(&what)?);
        }
        // ggml keeps element counts in int64_t.
        let n_elements = dims
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
            .filter(|&n| n <= i64::MAX as u64);
        let Some(n_elements) = n_elements else {
            return Err(Error::DimOverflow {
                tensor: name,
                offset: dims_at,
                dims,
            });
        };
        let type_at = c.offset();
        let type_id = c.u32(&what)?;
        let Some(ty) = GgmlType::from_id(type_id) else {
            return Err(Error::UnknownTensorType {
                tensor: name,
                offset: type_at,
                id: type_id,
            });
        };
        let ne0 = dims.first().copied().unwrap_or(1);
        if ne0 % ty.block_size() as u64 != 0 {
            return Err(Error::NotBlockAligned {
                tensor: name,
                offset: type_at,
                ty,
                ne0,
                block: ty.block_size(),
            });
        }
        let n_bytes = ty.bytes_for(n_elements).ok_or_else(|| Error::DimOverflow {
            tensor: name.clone(),
            offset: dims_at,
            dims: dims.clone(),
        })?;
        let data_offset = c.u64(&what)?;
        if data_offset % alignment != 0 {
            return Err(Error::MisalignedTensor {
                tensor: name,
                data_offset,
                alignment,
            });
        }
        tensor_index.insert(name.clone(), tensors.len());
        tensors.push(TensorInfo {
            name,
            dims,
            ty,
            data_offset,
            file_offset: 0,
            n_bytes,
            info_offset,
        });
    }

    let data_start = c.offset().div_ceil(alignment) * alignment;
    let file_len = data.len() as u64;
    for t in &mut tensors {
        let start = data_start.checked_add(t.data_offset);
        let end = start.and_then(|s| s.checked_add(t.n_bytes));
        match (start, end) {
            (Some(start), Some(end)) if end <= file_len => t.file_offset = start,
            _ => {
                return Err(Error::TensorOutOfBounds {
                    tensor: t.name.clone(),
                    start: data_start.saturating_add(t.data_offset),
                    size: t.n_bytes,
                    file_len,
                })
            }
        }
    }
    check_overlaps(&tensors)?;

    Ok(Header {
        version,
        metadata,
        tensors,
        alignment,
        data_start,
        index,
        tensor_index,
    })
}

fn check_overlaps(tensors: &[TensorInfo]) -> Result<()> {
    let mut order: Vec<&TensorInfo> = tensors.iter().filter(|t| t.n_bytes > 0).collect();
    order.sort_by_key(|t| t.file_offset);
    for pair in order.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if a.file_offset + a.n_bytes > b.file_offset {
            return Err(Error::OverlappingTensors {
                first: a.name.clone(),
                second: b.name.clone(),
                offset: b.file_offset,
            });
        }
    }
    Ok(())
}

fn read_value(c: &mut Cursor<'_>, ty: ValueType, key: &str, depth: usize) -> Result<Value> {
    let what = || format!("value of metadata key {key:?}");
    Ok(match ty {
        ValueType::U8 => Value::U8(c.array::<1>(&what)?[0]),
        ValueType::I8 => Value::I8(c.array::<1>(&what)?[0] as i8),
        ValueType::U16 => Value::U16(u16::from_le_bytes(c.array(&what)?)),
        ValueType::I16 => Value::I16(i16::from_le_bytes(c.array(&what)?)),
        ValueType::U32 => Value::U32(c.u32(&what)?),
        ValueType::I32 => Value::I32(i32::from_le_bytes(c.array(&what)?)),
        ValueType::F32 => Value::F32(f32::from_le_bytes(c.array(&what)?)),
        ValueType::U64 => Value::U64(c.u64(&what)?),
        ValueType::I64 => Value::I64(i64::from_le_bytes(c.array(&what)?)),
        ValueType::F64 => Value::F64(f64::from_le_bytes(c.array(&what)?)),
        ValueType::Bool => Value::Bool(c.array::<1>(&what)?[0] != 0),
        ValueType::String => Value::String(c.string(&what)?),
        ValueType::Array => Value::Array(read_array(c, key, depth)?),
    })
}

fn read_array(c: &mut Cursor<'_>, key: &str, depth: usize) -> Result<Array> {
    let at = c.offset();
    if depth >= MAX_NESTING {
        return Err(Error::NestingTooDeep {
            key: key.to_string(),
            offset: at,
            max: MAX_NESTING,
        });
    }
    let what = || format!("array header of metadata key {key:?}");
    let type_id = c.u32(&what)?;
    let ty = ValueType::from_id(type_id).ok_or_else(|| Error::UnknownValueType {
        key: key.to_string(),
        offset: at,
        id: type_id,
    })?;
    let count_at = c.offset();
    let count = c.u64(&what)?;
    let elems = || format!("array of metadata key {key:?}");
    let n = c.check_count(count, ty.min_encoded_size(), count_at, &elems)?;
    macro_rules! fixed {
        ($variant:ident, $t:ty, $size:expr) => {{
            let bytes = c.take(count * $size, &elems)?;
            Array::$variant(
                bytes
                    .chunks_exact($size)
                    .map(|b| <$t>::from_le_bytes(b.try_into().unwrap_or_default()))
                    .collect(),
            )
        }};
    }
    Ok(match ty {
        ValueType::U8 => Array::U8(c.take(count, &elems)?.to_vec()),
        ValueType::I8 => Array::I8(c.take(count, &elems)?.iter().map(|&b| b as i8).collect()),
        ValueType::Bool => Array::Bool(c.take(count, &elems)?.iter().map(|&b| b != 0).collect()),
        ValueType::U16 => fixed!(U16, u16, 2),
        ValueType::I16 => fixed!(I16, i16, 2),
        ValueType::U32 => fixed!(U32, u32, 4),
        ValueType::I32 => fixed!(I32, i32, 4),
        ValueType::F32 => fixed!(F32, f32, 4),
        ValueType::U64 => fixed!(U64, u64, 8),
        ValueType::I64 => fixed!(I64, i64, 8),
        ValueType::F64 => fixed!(F64, f64, 8),
        ValueType::String => {
            let mut v = Vec::with_capacity(n);
            for j in 0..n {
                v.push(c.string(&|| format!("element {j} of metadata key {key:?}"))?);
            }
            Array::String(v)
        }
        ValueType::Array => {
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                v.push(read_array(c, key, depth + 1)?);
            }
            Array::Array(v)
        }
    })
}
