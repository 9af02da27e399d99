//! The KV cache: per sliding layer a ring with explicit `origin_logical`/`origin_physical`
//! metadata (never `position % capacity`), per full-attention layer a growing plane; f16
//! storage as the real engines use, f32 for the oracle. Appends refuse any position that is
//! not exactly the next one; truncation restores ring metadata exactly.
//!
//! Ring metadata describes the attention window of the newest cached position: `origin_logical` is the
//! oldest position in the window, `origin_physical` its slot, `len` the rows in the window.
//! A ring has `window + slack` slots, so the last `slack` positions can be dropped again
//! (speculative rollback) without any row of the restored window having been overwritten.

use half::f16;
use half::slice::HalfFloatSliceExt;

use crate::config::GlimmerConfig;
use crate::error::{Error, Result};

/// Element type of cached K/V rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvDtype {
    F16,
    F32,
}

/// Row storage of one layer's K or V.
#[derive(Debug, Clone)]
pub enum Rows {
    F16(Vec<f16>),
    F32(Vec<f32>),
}

impl Rows {
    fn new(dtype: KvDtype, n: usize) -> Rows {
        match dtype {
            KvDtype::F16 => Rows::F16(vec![f16::ZERO; n]),
            KvDtype::F32 => Rows::F32(vec![0.0; n]),
        }
    }

    fn len(&self) -> usize {
        match self {
            Rows::F16(v) => v.len(),
            Rows::F32(v) => v.len(),
        }
    }

    fn grow(&mut self, n: usize) {
        match self {
            Rows::F16(v) => v.resize(n, f16::ZERO),
            Rows::F32(v) => v.resize(n, 0.0),
        }
    }

    fn store(&mut self, at: usize, src: &[f32]) {
        match self {
            // F16C where the CPU has it; the same rounding as `f16::from_f32`.
            Rows::F16(v) => v[at..at + src.len()].convert_from_f32_slice(src),
            Rows::F32(v) => v[at..at + src.len()].copy_from_slice(src),
        }
    }

    fn bytes(&self) -> usize {
        match self {
            Rows::F16(v) => v.len() * 2,
            Rows::F32(v) => v.len() * 4,
        }
    }
}

/// A borrowed cached row.
#[derive(Debug, Clone, Copy)]
pub enum Row<'a> {
    F16(&'a [f16]),
    F32(&'a [f32]),
}

impl Row<'_> {
    pub fn to_f32(self, out: &mut [f32]) {
        match self {
            Row::F16(r) => out.iter_mut().zip(r).for_each(|(o, v)| *o = v.to_f32()),
            Row::F32(r) => out.copy_from_slice(r),
        }
    }

    pub fn get(self, i: usize) -> f32 {
        match self {
            Row::F16(r) => r[i].to_f32(),
            Row::F32(r) => r[i],
        }
    }
}

/// Placement metadata of a sliding-window ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingMeta {
    pub window: usize,
    pub capacity: usize,
    pub origin_logical: usize,
    pub origin_physical: usize,
    pub len: usize,
}

impl RingMeta {
    /// Slot of logical position `pos`, by explicit-origin arithmetic.
    fn slot(&self, pos: usize) -> usize {
        // `pos` may precede `origin_logical` (truncation looks back), so work modulo capacity.
        let delta = (pos as i64 - self.origin_logical as i64).rem_euclid(self.capacity as i64);
        (self.origin_physical + delta as usize) % self.capacity
    }
}

#[derive(Debug, Clone)]
enum Layout {
    Ring(RingMeta),
    Plane,
}

#[derive(Debug, Clone)]
struct LayerCache {
    layout: Layout,
    k: Rows,
    v: Rows,
    /// Next position to append (= positions appended so far).
    next: usize,
}

/// KV cache of one sequence.
#[derive(Debug, Clone)]
pub struct KvCache {
    layers: Vec<LayerCache>,
    row: usize,
    dtype: KvDtype,
    max_positions: usize,
}

impl KvCache {
    /// `slack`: extra ring slots beyond the window that allow truncating that many positions.
    pub fn new(cfg: &GlimmerConfig, dtype: KvDtype, max_positions: usize, slack: usize) -> KvCache {
        let row = cfg.kv_dim();
        let layers = cfg
            .sliding
            .iter()
            .map(|&sliding| {
                if sliding {
                    let capacity = cfg.sliding_window + slack;
                    LayerCache {
                        layout: Layout::Ring(RingMeta {
                            window: cfg.sliding_window,
                            capacity,
                            origin_logical: 0,
                            origin_physical: 0,
                            len: 0,
                        }),
                        // Allocated zero-filled up front: never reads stale memory.
                        k: Rows::new(dtype, capacity * row),
                        v: Rows::new(dtype, capacity * row),
                        next: 0,
                    }
                } else {
                    LayerCache {
                        layout: Layout::Plane,
                        k: Rows::new(dtype, 0),
                        v: Rows::new(dtype, 0),
                        next: 0,
                    }
                }
            })
            .collect();
        KvCache {
            layers,
            row,
            dtype,
            max_positions,
        }
    }

    pub fn dtype(&self) -> KvDtype {
        self.dtype
    }

    /// Positions cached (the next position to append), taken from layer 0.
    pub fn len(&self) -> usize {
        self.layers.first().map_or(0, |l| l.next)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn max_positions(&self) -> usize {
        self.max_positions
    }

    /// Ring metadata of a sliding layer (`None` for a full layer).
    pub fn ring(&self, layer: usize) -> Option<RingMeta> {
        match self.layers.get(layer)?.layout {
            Layout::Ring(m) => Some(m),
            Layout::Plane => None,
        }
    }

    /// Bytes of K/V storage currently allocated.
    pub fn bytes(&self) -> usize {
        self.layers.iter().map(|l| l.k.bytes() + l.v.bytes()).sum()
    }

    /// Stores the K and V rows of position `pos` for `layer`; `pos` must be the next position.
    pub fn append(&mut self, layer: usize, pos: usize, k: &[f32], v: &[f32]) -> Result<()> {
        let row = self.row;
        let max = self.max_positions;
        let l = self
            .layers
            .get_mut(layer)
            .ok_or_else(|| Error::Invalid(format!("KV cache has no layer {layer}")))?;
        if pos != l.next {
            return Err(Error::CacheDiscontinuity {
                layer,
                expected: l.next,
                got: pos,
            });
        }
        if pos >= max {
            return Err(Error::CacheFull {
                position: pos,
                capacity: max,
            });
        }
        if k.len() != row || v.len() != row {
            return Err(Error::Invalid(format!(
                "KV row of {}/{} values, expected {row}",
                k.len(),
                v.len()
            )));
        }
        let slot = match &mut l.layout {
            Layout::Plane => {
                if l.k.len() < (pos + 1) * row {
                    // Grow geometrically; rows past `next` are never read.
                    let want = ((pos + 1) * 2).min(max).max(pos + 1) * row;
                    l.k.grow(want);
                    l.v.grow(want);
                }
                pos
            }
            Layout::Ring(m) => {
                let slot = m.slot(pos);
                if m.len == m.window {
                    m.origin_logical += 1;
                    m.origin_physical = (m.origin_physical + 1) % m.capacity;
                } else {
                    m.len += 1;
                }
                slot
            }
        };
        l.k.store(slot * row, k);
        l.v.store(slot * row, v);
        l.next = pos + 1;
        Ok(())
    }

    /// Positions a query at `pos` attends to in `layer` (after its own row was appended):
    /// the window for a sliding layer, everything up to `pos` for a full layer.
    pub fn visible(&self, layer: usize, pos: usize) -> std::ops::Range<usize> {
        match &self.layers[layer].layout {
            Layout::Ring(m) => (pos + 1).saturating_sub(m.window)..pos + 1,
            Layout::Plane => 0..pos + 1,
        }
    }

    /// The cached K and V rows of position `pos` (which must be resident).
    pub fn row(&self, layer: usize, pos: usize) -> (Row<'_>, Row<'_>) {
        let l = &self.layers[layer];
        let slot = match &l.layout {
            Layout::Ring(m) => m.slot(pos),
            Layout::Plane => pos,
        };
        let r = slot * self.row..(slot + 1) * self.row;
        match (&l.k, &l.v) {
            (Rows::F16(k), Rows::F16(v)) => (Row::F16(&k[r.clone()]), Row::F16(&v[r])),
            (Rows::F32(k), Rows::F32(v)) => (Row::F32(&k[r.clone()]), Row::F32(&v[r])),
            // Both are created with the same dtype.
            _ => unreachable!("K and V rows share one dtype"),
        }
    }

    /// Drops every position `>= to` in all layers. For rings, the rows of the restored window
    /// must not have been overwritten (at most `slack` positions back once a ring wrapped).
    pub fn truncate(&mut self, to: usize) -> Result<()> {
        let len = self.len();
        if to > len || self.layers.iter().any(|l| l.next != len) {
            return Err(Error::TruncateBeyondEnd { to, len });
        }
        // Check every layer first so a refusal changes nothing.
        let mut new_meta = Vec::with_capacity(self.layers.len());
        for (i, l) in self.layers.iter().enumerate() {
            if let Layout::Ring(m) = l.layout {
                let new_len = to.min(m.window);
                let new_origin = to - new_len;
                let oldest_intact = l.next.saturating_sub(m.capacity);
                if new_origin < oldest_intact {
                    return Err(Error::TruncateTooFar {
                        layer: i,
                        to,
                        oldest: oldest_intact,
                    });
                }
                new_meta.push(Some(RingMeta {
                    origin_logical: new_origin,
                    origin_physical: m.slot(new_origin),
                    len: new_len,
                    ..m
                }));
            } else {
                new_meta.push(None);
            }
        }
        for (l, m) in self.layers.iter_mut().zip(new_meta) {
            if let Some(m) = m {
                l.layout = Layout::Ring(m);
            }
            l.next = to;
        }
        Ok(())
    }

    /// Empties the cache (keeps allocations).
    pub fn clear(&mut self) {
        for l in &mut self.layers {
            if let Layout::Ring(m) = &mut l.layout {
                m.origin_logical = 0;
                m.origin_physical = 0;
                m.len = 0;
            }
            l.next = 0;
        }
    }
}
