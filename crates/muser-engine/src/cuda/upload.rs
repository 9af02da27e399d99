//! Uploading a model's weight matrices once, up front, through a reusable pinned staging
//! buffer: chunks of the mmap are copied (in parallel) into one of two page-locked buffers
//! while the other one's asynchronous copy to the device runs; an event per buffer says when
//! it may be refilled. No host copy is made beyond the mmap and the staging buffers.

use std::time::Instant;

use cudarc::driver::{CudaEvent, CudaSlice, DevicePtrMut, PinnedHostSlice};
use muser_gguf::GgmlType;
use rayon::prelude::*;

use super::{cuda_err, Cuda};
use crate::error::{Error, Result};
use crate::model::Glimmer;
use crate::weights::Matrix;

/// Bytes of each of the two pinned staging buffers.
pub const STAGE_BYTES: usize = 64 << 20;

/// Host copy granularity inside a staging chunk (one rayon task each).
const PIECE_BYTES: usize = 4 << 20;

/// How an upload went, for the report line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UploadReport {
    /// Matrices uploaded by this call (0 when all were already on the device).
    pub matrices: usize,
    /// Bytes uploaded by this call.
    pub bytes: u64,
    pub secs: f64,
    /// Whether the pinned staging path was used (else pageable copies, when pinned memory
    /// could not be allocated).
    pub pinned: bool,
    /// Device memory in use and in total after the upload (all processes).
    pub vram_used: u64,
    pub vram_total: u64,
}

impl UploadReport {
    /// Achieved upload rate in GB/s (0 when nothing was uploaded).
    pub fn gb_per_s(&self) -> f64 {
        if self.secs > 0.0 {
            self.bytes as f64 / self.secs / 1e9
        } else {
            0.0
        }
    }
}

impl std::fmt::Display for UploadReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        write!(
            f,
            "weights {:.2} GB ({} matrices) uploaded in {:.2} s ({:.1} GB/s, {}); VRAM used {:.1} / {:.1} GiB",
            self.bytes as f64 / 1e9,
            self.matrices,
            self.secs,
            self.gb_per_s(),
            if self.pinned { "pinned" } else { "pageable" },
            gib(self.vram_used),
            gib(self.vram_total)
        )
    }
}

/// Where an uploaded matrix goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// The file's bytes as they are.
    File,
    /// Q6_K rewritten into the split layout of the segment kernels, in that many units of 4
    /// rows per stream (`Cuda::device_q6k_split`).
    Q6kSplit(usize),
    /// An FFN gate (false) or up (true) matrix as its half of the gate/up streams
    /// (`Cuda::device_q4k_streams`).
    Q4kStreams(bool),
}

/// The chunks `(offset, len)` a matrix of `len` bytes is staged in.
pub(crate) fn chunks(len: usize, stage: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..len)
        .step_by(stage.max(1))
        .map(move |o| (o, stage.min(len - o)))
}

/// Whether the session keeps Q6_K matrices in the split layout (the segment kernels need
/// rows that are multiples of 256 everywhere and a head_dim of a multiple of 32).
pub(crate) fn fused_dims(c: &crate::GlimmerConfig) -> bool {
    c.n_embd % 256 == 0 && c.q_dim() % 256 == 0 && c.n_ff % 256 == 0 && c.head_dim % 32 == 0
}

/// Two page-locked buffers and the events of their last copies.
struct Staging {
    bufs: [PinnedHostSlice<u8>; 2],
    ptrs: [*mut u8; 2],
    done: [CudaEvent; 2],
    next: usize,
}

impl Staging {
    fn new(cuda: &Cuda, stage_bytes: usize) -> Option<Staging> {
        let ctx = cuda.context();
        // SAFETY: the buffers are written before any read (each chunk is filled, then copied).
        let alloc = || unsafe { ctx.alloc_pinned::<u8>(stage_bytes.max(1)) }.ok();
        let mut bufs = [alloc()?, alloc()?];
        let ptrs = [bufs[0].as_mut_ptr().ok()?, bufs[1].as_mut_ptr().ok()?];
        let ev = || ctx.new_event(None).ok();
        let done = [ev()?, ev()?];
        // Recorded once so that the first wait on each returns at once.
        for e in &done {
            e.record(cuda.stream()).ok()?;
        }
        Some(Staging {
            bufs,
            ptrs,
            done,
            next: 0,
        })
    }

    /// Copies `src` (at most the buffers' size) to device address `dst` through the next buffer.
    fn copy(&mut self, cuda: &Cuda, src: &[u8], dst: u64) -> Result<()> {
        let i = self.next;
        self.next ^= 1;
        self.done[i]
            .synchronize()
            .map_err(cuda_err("waiting for a staging buffer"))?;
        if src.len() > self.bufs[i].len() {
            return Err(Error::Cuda(format!(
                "staging chunk of {} bytes for buffers of {}",
                src.len(),
                self.bufs[i].len()
            )));
        }
        // SAFETY: the buffer holds at least src.len() bytes, and the event above says the
        // device has finished reading its previous contents; nothing else aliases it.
        let stage = unsafe { std::slice::from_raw_parts_mut(self.ptrs[i], src.len()) };
        stage
            .par_chunks_mut(PIECE_BYTES)
            .zip(src.par_chunks(PIECE_BYTES))
            .for_each(|(d, s)| d.copy_from_slice(s));
        // SAFETY: `dst` is a live device allocation with room for `src.len()` bytes (the
        // caller's), and the staging slice stays untouched until the event below completes.
        unsafe { cudarc::driver::result::memcpy_htod_async(dst, stage, cuda.stream().cu_stream()) }
            .map_err(cuda_err("copying weights to the device"))?;
        self.done[i]
            .record(cuda.stream())
            .map_err(cuda_err("recording a staging event"))?;
        Ok(())
    }
}

impl Cuda {
    /// Uploads every matrix a decode session reads (all layers, the LM head and the
    /// embedding table) that is not on the device yet, through pinned staging, calling
    /// `progress(done, total)` in bytes after each chunk. Idempotent: a second call uploads
    /// nothing.
    pub fn upload_model(
        &self,
        model: &Glimmer,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<UploadReport> {
        self.upload_model_staged(model, STAGE_BYTES, progress)
    }

    /// `upload_model` with staging buffers of `stage_bytes` each (tests use small ones so
    /// that every matrix crosses several chunks).
    pub fn upload_model_staged(
        &self,
        model: &Glimmer,
        stage_bytes: usize,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<UploadReport> {
        let w = &model.weights;
        let split = fused_dims(&model.cfg) && self.one_token_kernel().is_some();
        let layout = |m: &Matrix, units: usize| {
            if split && m.ty == GgmlType::Q6_K && m.n_in % 256 == 0 {
                Layout::Q6kSplit(units)
            } else {
                Layout::File
            }
        };
        let mut mats: Vec<(&Matrix, Layout)> = Vec::new();
        for l in &w.layers {
            // The FFN gate and up matrices as the decode step's gate/up launch reads them.
            let streams = split && self.gate_up_streams(&l.ffn_gate, &l.ffn_up);
            for m in l.matrices() {
                let lay = match (streams, m.name == l.ffn_gate.name, m.name == l.ffn_up.name) {
                    (true, true, _) => Layout::Q4kStreams(false),
                    (true, _, true) => Layout::Q4kStreams(true),
                    _ => layout(m, 1),
                };
                mats.push((m, lay));
            }
        }
        // The LM head in the layout its kernel reads (`Cuda::lm_units`).
        mats.push((&w.output, layout(&w.output, self.lm_units(w.output.n_in))));
        // The gather kernel reads the table in the file's layout.
        mats.push((&w.token_embd, Layout::File));
        mats.retain(|&(m, lay)| !self.is_uploaded(m, lay));
        let total: u64 = mats.iter().map(|(m, _)| w.bytes(m).len() as u64).sum();
        let t0 = Instant::now();
        let stage_bytes = stage_bytes.max(1);
        let mut staging = if mats.is_empty() {
            None
        } else {
            Staging::new(self, stage_bytes)
        };
        let pinned = staging.is_some();
        let mut done = 0u64;
        progress(0, total);
        for (m, lay) in &mats {
            let src = w.bytes(m);
            // SAFETY: every byte is written by the copies below before any kernel reads it.
            let mut dev: CudaSlice<u8> = unsafe { self.stream.alloc::<u8>(src.len().max(1)) }
                .map_err(cuda_err("allocating weights"))?;
            match staging.as_mut() {
                Some(st) => {
                    let base = {
                        let (p, _guard) = dev.device_ptr_mut(&self.stream);
                        p
                    };
                    for (off, len) in chunks(src.len(), stage_bytes) {
                        st.copy(self, &src[off..off + len], base + off as u64)?;
                        done += len as u64;
                        progress(done, total);
                    }
                }
                None => {
                    self.stream
                        .memcpy_htod(src, &mut dev)
                        .map_err(cuda_err("uploading weights"))?;
                    done += src.len() as u64;
                    progress(done, total);
                }
            }
            self.insert_uploaded(m, *lay, dev)?;
        }
        self.stream
            .synchronize()
            .map_err(cuda_err("finishing the weight upload"))?;
        let secs = t0.elapsed().as_secs_f64();
        drop(staging);
        let (free, vram_total) = self
            .ctx
            .mem_get_info()
            .map_err(cuda_err("reading device memory"))?;
        Ok(UploadReport {
            matrices: mats.len(),
            bytes: total,
            secs,
            pinned,
            vram_used: (vram_total - free) as u64,
            vram_total: vram_total as u64,
        })
    }

    /// The bytes of `m` as uploaded in the file's layout (`None` when not on the device in
    /// that layout), copied back: for checking uploads.
    pub fn download_weights(&self, m: &Matrix) -> Result<Option<Vec<u8>>> {
        let w = self
            .weights
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&m.name)
            .cloned();
        w.map(|w| {
            self.stream
                .clone_dtoh(&*w)
                .map_err(cuda_err("copying weights back"))
        })
        .transpose()
    }

    fn is_uploaded(&self, m: &Matrix, lay: Layout) -> bool {
        match lay {
            Layout::File => lock(&self.weights).contains_key(&m.name),
            Layout::Q6kSplit(u) => lock(&self.q6k_split).contains_key(&(m.name.clone(), u)),
            Layout::Q4kStreams(up) => lock(&self.q4k_streams)
                .get(&m.name)
                .is_some_and(|(_, h)| *h == up),
        }
    }

    /// Files an uploaded matrix: as it is, or rewritten into the split layout (the file's
    /// copy is then dropped, stream-ordered, once the rewrite has read it).
    fn insert_uploaded(&self, m: &Matrix, lay: Layout, dev: CudaSlice<u8>) -> Result<()> {
        match lay {
            Layout::File => {
                lock(&self.weights).insert(m.name.clone(), std::sync::Arc::new(dev));
            }
            Layout::Q6kSplit(u) => {
                let out = self.q6k_split_from(&dev.as_view(), m.n_out, m.n_in, u)?;
                lock(&self.q6k_split).insert((m.name.clone(), u), std::sync::Arc::new(out));
            }
            Layout::Q4kStreams(up) => {
                let out = self.q4k_streams_from(&dev.as_view(), m.n_out, m.n_in, up)?;
                lock(&self.q4k_streams).insert(m.name.clone(), (std::sync::Arc::new(out), up));
            }
        }
        Ok(())
    }
}

/// The embedding gather kernel's type code (`kernels/gather.cu`), or `None` for a type it
/// does not handle (the session then dequantizes the row on the host).
pub(crate) fn embed_type_code(ty: GgmlType) -> Option<i32> {
    Some(match ty {
        GgmlType::F32 => 0,
        GgmlType::F16 => 1,
        GgmlType::BF16 => 2,
        GgmlType::Q8_0 => 3,
        GgmlType::Q4_K => 4,
        GgmlType::Q5_K => 5,
        GgmlType::Q6_K => 6,
        _ => return None,
    })
}

/// A weight map's lock (a poisoned one is still consistent: inserts are single calls).
fn lock<T>(map: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    map.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_a_matrix_exactly_once() {
        let stage = 64;
        for len in [0usize, 1, 63, 64, 65, 128, 1000] {
            let c: Vec<_> = chunks(len, stage).collect();
            assert_eq!(c.iter().map(|x| x.1).sum::<usize>(), len);
            let mut at = 0;
            for &(o, n) in &c {
                assert_eq!(o, at);
                assert!(n > 0 && n <= stage);
                at += n;
            }
        }
    }

    #[test]
    fn report_line_names_rate_and_memory() {
        let r = UploadReport {
            matrices: 210,
            bytes: 16_160_000_000,
            secs: 3.2,
            pinned: true,
            vram_used: 18 << 30,
            vram_total: 140 << 30,
        };
        let s = r.to_string();
        assert!(s.contains("16.16 GB"), "{s}");
        assert!(s.contains("5.0 GB/s, pinned"), "{s}");
        assert!(s.contains("VRAM used 18.0 / 140.0 GiB"), "{s}");
    }

    #[test]
    fn embed_types_have_distinct_codes() {
        let t = [
            GgmlType::F32,
            GgmlType::F16,
            GgmlType::BF16,
            GgmlType::Q8_0,
            GgmlType::Q4_K,
            GgmlType::Q5_K,
            GgmlType::Q6_K,
        ];
        let codes: Vec<i32> = t.iter().filter_map(|&ty| embed_type_code(ty)).collect();
        assert_eq!(codes, (0..7).collect::<Vec<_>>());
        assert_eq!(embed_type_code(GgmlType::Q2_K), None);
    }
}
