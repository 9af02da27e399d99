//! A GGUF file opened through `mmap`: the parsed header plus zero-copy views of tensor data.

use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::error::{Error, Result};
use crate::reader::{parse_header, Header, TensorInfo};

/// An open GGUF file. Tensor bytes are borrowed straight from the mapping.
pub struct GgufFile {
    path: PathBuf,
    map: Mmap,
    header: Header,
}

impl GgufFile {
    /// Maps `path` read-only and parses and validates its header.
    pub fn open(path: impl AsRef<Path>) -> Result<GgufFile> {
        let path = path.as_ref().to_path_buf();
        let io = |source| Error::Io {
            path: path.clone(),
            source,
        };
        let file = File::open(&path).map_err(io)?;
        // SAFETY: the mapping is read-only. Like every mmap-based model loader we rely on the
        // file not being truncated by another process while it is mapped; all offsets we
        // index with were validated against the length at open time.
        let map = unsafe { Mmap::map(&file) }.map_err(io)?;
        let header = parse_header(&map)?;
        Ok(GgufFile { path, map, header })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn file_len(&self) -> u64 {
        self.map.len() as u64
    }

    pub fn tensor_info(&self, name: &str) -> Result<&TensorInfo> {
        self.header
            .tensor(name)
            .ok_or_else(|| Error::TensorNotFound(name.to_string()))
    }

    /// The raw bytes of a tensor of this file (zero-copy).
    pub fn tensor_data(&self, info: &TensorInfo) -> Result<&[u8]> {
        // Extents were checked against the mapping in `parse_header`; the `get` only guards
        // against an info taken from another file.
        let start = info.file_offset;
        let end = start.saturating_add(info.n_bytes);
        self.map
            .get(start as usize..end as usize)
            .ok_or_else(|| Error::TensorOutOfBounds {
                tensor: info.name.clone(),
                start,
                size: info.n_bytes,
                file_len: self.file_len(),
            })
    }

    /// The raw bytes of the tensor called `name`.
    pub fn tensor_bytes(&self, name: &str) -> Result<&[u8]> {
        self.tensor_data(self.tensor_info(name)?)
    }

    /// The whole mapping (e.g. to upload weights in one piece).
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }
}
