//! f16 copies of the layer matrices kept on the device for the batched prefill
//! (`Cuda::keep_prefill_weights`): dequantized once instead of at every chunk, where the
//! device's free memory allows (`CudaOptions::prefill_weights`).
//!
//! Per chunk, the batched prefill otherwise dequantizes every layer matrix into one f16
//! scratch matrix before its GEMM: ~78 ms a chunk on the H200 with the 30B file, however
//! short the chunk (bench/runs/2026-11-30-h200-k). The copies take 2 bytes a weight (50.3 GB
//! for the 30B model's layers) and give the same bits (the same dequantization kernel).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{CudaSlice, DevicePtr};

use super::{cuda_err, Cuda};
use crate::error::Result;
use crate::weights::{Matrix, Weights};

/// Whether the batched prefill keeps f16 copies of the layer matrices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PrefillWeights {
    /// Kept when the device's free memory exceeds their size by [`PREFILL_F16_RESERVE`] bytes
    /// (left for KV caches and scratch), else dequantized at every chunk.
    #[default]
    Auto,
    /// Dequantized at every chunk (no extra memory).
    PerChunk,
}

/// Free device memory `PrefillWeights::Auto` leaves after the f16 copies: 8 GiB.
pub const PREFILL_F16_RESERVE: usize = 8 << 30;

/// What `Cuda::keep_prefill_weights` did.
#[derive(Debug, Clone, PartialEq)]
pub struct PrefillCacheReport {
    /// Bytes of f16 copies on the device (0 when not kept).
    pub bytes: usize,
    pub secs: f64,
    /// Why they are not kept (`None`: they are).
    pub not_kept: Option<String>,
}

impl std::fmt::Display for PrefillCacheReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.not_kept {
            None => write!(
                f,
                "f16 prefill weights kept: {:.2} GB dequantized in {:.2} s",
                self.bytes as f64 / 1e9,
                self.secs
            ),
            Some(why) => write!(f, "f16 prefill weights dequantized per chunk: {why}"),
        }
    }
}

/// The f16 copies by matrix name.
pub(crate) type F16Copies = std::sync::Mutex<HashMap<String, Arc<CudaSlice<u16>>>>;

/// Whether `need` bytes of copies fit in `free` bytes under `policy`; why not.
pub(crate) fn fits(policy: PrefillWeights, need: usize, free: usize) -> Option<String> {
    match policy {
        PrefillWeights::PerChunk => Some("off (PrefillWeights::PerChunk)".into()),
        PrefillWeights::Auto if need + PREFILL_F16_RESERVE > free => Some(format!(
            "{:.2} GB of copies (and the KV caches planned) and a reserve of {:.2} GB do not fit in the {:.2} GB free",
            need as f64 / 1e9,
            PREFILL_F16_RESERVE as f64 / 1e9,
            free as f64 / 1e9
        )),
        PrefillWeights::Auto => None,
    }
}

impl Cuda {
    /// Dequantizes every layer matrix of `weights` to an f16 copy the batched prefill then
    /// uses instead of dequantizing at every chunk, when `CudaOptions::prefill_weights` and
    /// the free memory allow (nothing happens when the copies are already there). An
    /// allocation refused part-way frees what was made and reports it.
    pub fn keep_prefill_weights(&self, weights: &Weights) -> Result<PrefillCacheReport> {
        self.keep_prefill_weights_leaving(weights, 0)
    }

    /// `keep_prefill_weights`, leaving `kv_bytes` free beyond the reserve: the KV caches the
    /// caller will allocate (`CudaSession::kv_bytes_for` for each session it plans).
    pub fn keep_prefill_weights_leaving(
        &self,
        weights: &Weights,
        kv_bytes: usize,
    ) -> Result<PrefillCacheReport> {
        let t0 = Instant::now();
        let mats: Vec<&Matrix> = weights.layers.iter().flat_map(|l| l.matrices()).collect();
        let need: usize = mats.iter().map(|m| m.n_in * m.n_out * 2).sum();
        let mut map = self.f16_copies.lock().unwrap_or_else(|e| e.into_inner());
        if !map.is_empty() {
            let bytes = map.values().map(|c| c.len() * 2).sum();
            return Ok(PrefillCacheReport {
                bytes,
                secs: 0.0,
                not_kept: None,
            });
        }
        let (free, _) = self
            .ctx
            .mem_get_info()
            .map_err(cuda_err("reading free device memory"))?;
        if let Some(why) = fits(self.prefill_weights, need + kv_bytes, free) {
            return Ok(PrefillCacheReport {
                bytes: 0,
                secs: t0.elapsed().as_secs_f64(),
                not_kept: Some(why),
            });
        }
        let st = self.stream();
        // Made aside and installed only when every copy is there: a failure part-way leaves
        // none (the prefill then dequantizes per chunk, with its own threshold).
        let mut made = HashMap::with_capacity(mats.len());
        for m in mats {
            // SAFETY: every half is written by the dequantization below before a GEMM reads it.
            let buf = match unsafe { st.alloc::<u16>(m.n_in * m.n_out) } {
                Ok(b) => b,
                Err(e) => {
                    return Ok(PrefillCacheReport {
                        bytes: 0,
                        secs: t0.elapsed().as_secs_f64(),
                        not_kept: Some(format!("allocating the copy of {}: {e}", m.name)),
                    });
                }
            };
            let (p, _) = buf.device_ptr(st);
            // SAFETY: buf holds n_out × n_in halves.
            unsafe { self.dequant_f16_into(weights, m, p)? };
            made.insert(m.name.clone(), Arc::new(buf));
        }
        st.synchronize()
            .map_err(cuda_err("dequantizing the prefill weights"))?;
        *map = made;
        Ok(PrefillCacheReport {
            bytes: need,
            secs: t0.elapsed().as_secs_f64(),
            not_kept: None,
        })
    }

    /// Frees the f16 copies (the batched prefill dequantizes per chunk again).
    pub fn drop_prefill_weights(&self) {
        self.f16_copies
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// Whether the device keeps the f16 copies (the batched prefill's short-prompt threshold
    /// depends on it).
    pub fn keeps_prefill_weights(&self) -> bool {
        !self
            .f16_copies
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }

    /// The f16 copy of `m`, where the device keeps one.
    pub(crate) fn kept_prefill_weights(&self, m: &Matrix) -> Option<Arc<CudaSlice<u16>>> {
        let map = self.f16_copies.lock().unwrap_or_else(|e| e.into_inner());
        map.get(&m.name)
            .filter(|c| c.len() == m.n_in * m.n_out)
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::{fits, PrefillCacheReport, PrefillWeights, PREFILL_F16_RESERVE};

    #[test]
    fn copies_are_kept_only_with_the_reserve_left() {
        let gb = 1usize << 30;
        // The 30B model's 50.3 GB on an H200 with ~123 GB free: kept.
        assert_eq!(fits(PrefillWeights::Auto, 50_300_000_000, 123 * gb), None);
        // Exactly the reserve left: kept; a byte less: not.
        assert_eq!(
            fits(PrefillWeights::Auto, gb, gb + PREFILL_F16_RESERVE),
            None
        );
        let why = fits(PrefillWeights::Auto, gb + 1, gb + PREFILL_F16_RESERVE).unwrap();
        assert!(why.contains("do not fit"), "{why}");
        // Off: never, whatever is free.
        let why = fits(PrefillWeights::PerChunk, 1, usize::MAX / 2).unwrap();
        assert!(why.contains("PerChunk"), "{why}");
    }

    #[test]
    fn the_report_says_what_happened() {
        let kept = PrefillCacheReport {
            bytes: 50_300_000_000,
            secs: 0.25,
            not_kept: None,
        };
        assert_eq!(
            kept.to_string(),
            "f16 prefill weights kept: 50.30 GB dequantized in 0.25 s"
        );
        let not = PrefillCacheReport {
            bytes: 0,
            secs: 0.0,
            not_kept: Some("off".into()),
        };
        assert_eq!(
            not.to_string(),
            "f16 prefill weights dequantized per chunk: off"
        );
    }
}
