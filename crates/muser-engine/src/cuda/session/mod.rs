//! A single sequence decoded entirely on the GPU: the token id goes up (in the step's
//! parameters, read by the embedding gather), the logits (or only their argmax) come down,
//! and every op of the Glimmer token in between runs as kernels on one stream, with the
//! KV cache in device memory (f16 rings with explicit origins for sliding layers, f16 planes
//! for full layers: 1,024 bytes per cached row of a layer in the real model). Held to the same parity bar as the matmul-only stage.

use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};

use super::{cuda_err, Cuda};

mod attn;
mod attn_op;
mod prefetch;
mod prefill;
mod step;
mod token;
use crate::error::{Error, Result};
use crate::model::Glimmer;
use crate::weights::Matrix;
pub use attn::AttnChoice;
pub(crate) use attn::{
    attn_group_kernel, attn_mma_kernel, attn_mma_smem, folded_attention, merge_launch,
    ATTN_MMA_KERNELS,
};
pub use attn_op::{AttnKernel, AttnShape};
pub use prefill::{MIN_BATCH as PREFILL_MIN_BATCH, PREFILL_CHUNK};
pub use step::TAIL_PREFETCH_LABEL;

/// Kernels of `decode.cu` that the session launches.
pub(crate) const DECODE_KERNELS: &[&str] = &[
    "norm_tail_q8",
    "norm_tail_q8_cl",
    "norm_tail_q8_cl1",
    "norm_tail_q8_cl_pf",
    "norm_tail_q8_cl1_pf",
    "attend_split_64_mp",
    "attend_split_128_mp",
    "attend_split_256_mp",
    "attend_split_64_mpl",
    "attend_split_128_mpl",
    "attend_split_256_mpl",
    "qk_norm_rope_store",
    "attend_split_64",
    "attend_split_128",
    "attend_split_256",
    "attend_merge_gate_q8",
    "swiglu_q8",
    "scale_softcap",
    "fill_random_f16",
    "spin_ns",
    "embed_gather",
    "argmax_f32_grid",
    "attend_group_64_4",
    "attend_group_64_8",
    "attend_group_128_4",
    "attend_group_128_8",
    "attend_group_256_4",
    // The same with the split-K merge folded in (attn::FOLDED_ATTENTION).
    "attend_split_64_m",
    "attend_split_128_m",
    "attend_split_256_m",
    "attend_group_64_4_m",
    "attend_group_64_8_m",
    "attend_group_128_4_m",
    "attend_group_128_8_m",
    "attend_group_256_4_m",
    // Tensor-core attention (attend_mma.cu; attn::ATTN_MMA_KERNELS).
    "attend_mma_64_c16s2",
    "attend_mma_64_c16s4",
    "attend_mma_128_c16s2",
    "attend_mma_128_c16s4",
    "attend_mma_128_c32s2",
    "attend_mma_64_c16s2_h",
    "attend_mma_128_c16s2_h",
    // The wide split-K merge (attend_merge.cu; DecodeTuning::wide_merge).
    "attend_merge_gate_q8_w",
    "attend_merge_gate_q8_wv",
    // Batched prefill (prefill.cu; session/prefill.rs).
    "dequant_f16",
    "dequant_f16_v",
    "pf_norm",
    "pf_qk",
    "pf_attend_g_64",
    "pf_attend_g_128",
    "pf_attend_mma_64",
    "pf_attend_mma_128",
    "pf_store",
    "pf_swiglu",
];

/// Explicit-origin placement of one layer's cached rows (as `kv::RingMeta`).
#[derive(Debug, Clone, Copy)]
struct Placement {
    capacity: usize,
    /// Window (sliding) or capacity (full).
    window: usize,
    origin_logical: usize,
    origin_physical: usize,
    len: usize,
}

impl Placement {
    fn slot(&self, pos: usize) -> usize {
        (self.origin_physical + (pos - self.origin_logical)) % self.capacity
    }

    /// Stores `pos` (the next position) and returns its slot.
    fn append(&mut self, pos: usize) -> usize {
        let slot = self.slot(pos);
        if self.len == self.window {
            self.origin_logical += 1;
            self.origin_physical = (self.origin_physical + 1) % self.capacity;
        } else {
            self.len += 1;
        }
        slot
    }
}

struct LayerState {
    norms: [CudaSlice<f32>; 6],
    /// f16 bits.
    k: CudaSlice<u16>,
    v: CudaSlice<u16>,
    place: Placement,
}

/// Device buffers of one decode step.
struct Scratch {
    x: CudaSlice<f32>,
    h: CudaSlice<f32>,
    q: CudaSlice<f32>,
    k: CudaSlice<f32>,
    v: CudaSlice<f32>,
    gate: CudaSlice<f32>,
    attn: CudaSlice<f32>,
    o: CudaSlice<f32>,
    g: CudaSlice<f32>,
    u: CudaSlice<f32>,
    logits: CudaSlice<f32>,
    /// Split-K attention partials: `[n_head][max splits][head_dim + 2]`.
    partials: CudaSlice<f32>,
    /// Arrival counters of the folded merge (`DecodeTuning::fold_merge`), one per block
    /// column of an attention launch (at most n_head); zero between launches.
    merge_count: CudaSlice<u32>,
}

/// Rows of the window per split-K attention block: more blocks and a longer merge against
/// shorter serial walks per block. Measured on the H200 (30B synthetic, decode tok/s at
/// depth 4,096 / 32,768 / 131,072): 512 rows 49.1 / 43.7 / 29.1, 128 rows 71.1 / 55.1 / 30.4.
/// The fewest rows a split takes (the partials are sized for that): 64, for the tensor-core
/// kernel on the sliding rings (`MmaAttn::split_rows_short`).
const ROWS_PER_SPLIT: usize = 64;

/// The shortest span of the step's attention (`span_graphs`).
const MIN_SPAN: usize = 128;

/// The span a step's attention is laid out for when `used` rows are in the caches: a power of
/// two from MIN_SPAN up (`span_graphs`), else the most positions (the caches' capacity).
fn span_of(used: usize, span_graphs: bool, max_positions: usize) -> usize {
    if span_graphs {
        used.max(MIN_SPAN).next_power_of_two()
    } else {
        max_positions.max(1)
    }
}

/// Split-K blocks per head for a cache of `capacity` rows (at most the kernels' MAX_SPLITS).
fn splits(capacity: usize) -> usize {
    splits_of(capacity, ROWS_PER_SPLIT)
}

/// Split-K blocks per head for `capacity` rows at `rows` rows per block (at least
/// ROWS_PER_SPLIT, so never more blocks than the partials hold).
fn splits_of(capacity: usize, rows: usize) -> usize {
    capacity.div_ceil(rows.max(ROWS_PER_SPLIT)).clamp(1, 1024)
}

/// Kernels a timing experiment leaves out of every layer of the step
/// (`CudaSession::set_omit`). The logits are then wrong: this only measures what each kernel
/// costs inside the graph (its run time plus its boundary), the most a fold could save.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Omit {
    /// The two norm tails of each layer (the entry norm and the final one stay).
    pub norm_tails: bool,
    /// The split-K attention kernel.
    pub attention: bool,
    /// The split-K merge.
    pub merge: bool,
    /// The Q/K/V/gate launch (with its folded QK-norm, RoPE and KV store).
    pub qkvg: bool,
    /// Only the QK-norm, RoPE and KV store: the Q/K/V/gate launch runs as a plain segment
    /// launch (no clusters, no epilogue) and nothing normalizes Q and K (the most that moving
    /// the QK-norm into the attention could save).
    pub qk_norm: bool,
    /// The output projection.
    pub o_proj: bool,
}

/// One sequence on the GPU.
pub struct CudaSession<'m> {
    cuda: &'m Cuda,
    model: &'m Glimmer,
    layers: Vec<LayerState>,
    output_norm: CudaSlice<f32>,
    s: Scratch,
    /// Per-step values the kernels read from device memory:
    /// `[pos, (slot, first, n) per layer, token, (cos, sin) per RoPE pair as f32 bits, key in,
    /// key out]`: the last two the addresses (low and high words) of `greedy_fed`'s argmax keys,
    /// the previous step's (read by the embedding gather where the token is negative) and the
    /// step's (folded into by the LM head), 0 outside it (`key_words`, `link`).
    params: CudaSlice<i32>,
    /// The key addresses (in, out) the next `prepare` writes into the parameters (and then
    /// clears): set by `greedy_fed` for each of its steps; with a key in, the token is the
    /// previous step's argmax.
    link: [u64; 2],
    /// Whether the session's LM head runs the flat kernel, which folds the argmax into the
    /// step's key out (set by every `enqueue`).
    lm_argmax: bool,
    /// The embedding table on the device, when the gather kernel handles its type (else the
    /// row is dequantized on the host and uploaded each step).
    embed: Option<std::sync::Arc<CudaSlice<u8>>>,
    /// The greedy token of the last `step_argmax` (first word) and the argmax's scratch.
    argmax: CudaSlice<u32>,
    /// `greedy_fed`'s tokens on the device (grown to the longest run), where the argmax
    /// kernel writes them.
    fed: Option<CudaSlice<u32>>,
    /// `greedy_fed`'s argmax keys on the device (grown to the longest run), where the LM head
    /// folds them (`lm_argmax`).
    fed_keys: Option<CudaSlice<u64>>,
    /// The step's kernels captured once (after a warm-up step) and replayed every token.
    /// Captured step graphs by span (`DecodeTuning::span_graphs`): the attention's split
    /// counts follow the rows in use, rounded up to a power of two, so a long cache holding few
    /// rows decodes as a short one; one graph per span met, captured on first use.
    graphs: Vec<(usize, cudarc::driver::CudaGraph)>,
    /// The span the next `enqueue` is for (set by `prepare`).
    span: usize,
    steps: usize,
    next: usize,
    max_positions: usize,
    /// During `profile_step`: an event recorded after each kernel, with its label.
    prof: Prof,
    /// Int8 activation row shared by the fused producers and the segment matvecs.
    act: super::Q8Act,
    /// The int8 SwiGLU row for the down projection when SwiGLU is folded into the gate/up
    /// launch (`DecodeTuning::fold_swiglu`): that launch still reads `act` while it writes.
    act_ff: super::Q8Act,
    /// Whether the dimensions allow fused int8 producers (multiples of 256; head_dim of 32).
    fused: bool,
    /// Kernels left out for a timing experiment (`set_omit`; normally none).
    omit: Omit,
    /// The batched prefill's buffers (`prefill.rs`), allocated by the first chunk.
    pf: Option<prefill::PrefillScratch>,
    /// Set while a batched chunk runs and left set if it failed part-way (its KV rows may be
    /// half written): every later step is refused until `reset`.
    poisoned: bool,
    /// Pinned host copy of the logits for `start_step` (allocated at its first call; `None`
    /// before, or where pinned memory was refused), and whether a started step awaits
    /// `finish_step`.
    host_logits: Option<cudarc::driver::PinnedHostSlice<f32>>,
    started: bool,
    /// Recorded behind the copy into `host_logits`: `finish_step` waits on it.
    logits_ready: Option<cudarc::driver::CudaEvent>,
}

fn elems(n: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(256) as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}

fn one_block(threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

impl Drop for CudaSession<'_> {
    /// A copy into the pinned logits may still be in flight (a step started and never
    /// finished): it must land before the buffer is freed (the pinned slice's own event is
    /// never recorded, event tracking being off).
    fn drop(&mut self) {
        if self.host_logits.is_some() {
            let _ = self.cuda.stream().synchronize();
        }
    }
}

/// The first of the step's parameters' four key words (`CudaSession::params`), after the
/// position, the layers' ring words, the token and the RoPE values.
fn key_words(c: &crate::config::GlimmerConfig) -> usize {
    2 + 3 * c.n_layer + c.head_dim
}

impl<'m> CudaSession<'m> {
    /// Uploads the model's weights (if not yet on the device) and allocates the KV cache for
    /// `max_positions` positions.
    pub fn new(cuda: &'m Cuda, model: &'m Glimmer, max_positions: usize) -> Result<Self> {
        let c = &model.cfg;
        if ![64, 128, 256].contains(&c.head_dim) {
            return Err(Error::Cuda(format!(
                "head_dim {}: the attention kernel is compiled for 64, 128 and 256",
                c.head_dim
            )));
        }
        let st = cuda.stream();
        let up = |v: &[f32]| st.clone_htod(v).map_err(cuda_err("uploading norms"));
        let zeros = |n: usize| {
            st.alloc_zeros::<f32>(n.max(1))
                .map_err(cuda_err("allocating"))
        };
        let zeros16 = |n: usize| {
            st.alloc_zeros::<u16>(n.max(1))
                .map_err(cuda_err("allocating the KV cache"))
        };
        // Every matrix in the layout its kernel reads (Q6_K split for the segment kernels),
        // through pinned staging; nothing when `Cuda::upload_model` already ran.
        let fused = super::upload::fused_dims(c);
        cuda.upload_model(model, &mut |_, _| {})?;
        let te = &model.weights.token_embd;
        let embed = if Cuda::embed_supported(te.ty) {
            Some(cuda.device_weights(&model.weights, te)?)
        } else {
            None
        };
        let mut layers = Vec::with_capacity(c.n_layer);
        for (l, w) in model.weights.layers.iter().enumerate() {
            let cap = if c.sliding[l] {
                c.sliding_window.min(max_positions)
            } else {
                max_positions
            };
            layers.push(LayerState {
                norms: [
                    up(&w.attn_norm)?,
                    up(&w.attn_q_norm)?,
                    up(&w.attn_k_norm)?,
                    up(&w.post_attn_norm)?,
                    up(&w.ffn_norm)?,
                    up(&w.post_ffw_norm)?,
                ],
                k: zeros16(cap * c.kv_dim())?,
                v: zeros16(cap * c.kv_dim())?,
                place: Placement {
                    capacity: cap.max(1),
                    window: cap.max(1),
                    origin_logical: 0,
                    origin_physical: 0,
                    len: 0,
                },
            });
        }
        let s = Scratch {
            x: zeros(c.n_embd)?,
            h: zeros(c.n_embd)?,
            q: zeros(c.q_dim())?,
            k: zeros(c.kv_dim())?,
            v: zeros(c.kv_dim())?,
            gate: zeros(c.q_dim())?,
            attn: zeros(c.q_dim())?,
            o: zeros(c.n_embd)?,
            g: zeros(c.n_ff)?,
            u: zeros(c.n_ff)?,
            logits: zeros(c.n_vocab)?,
            partials: zeros(c.n_head * splits(max_positions) * (c.head_dim + 2))?,
            merge_count: st
                .alloc_zeros::<u32>(c.n_head.max(1))
                .map_err(cuda_err("allocating"))?,
        };
        let params = st
            .alloc_zeros::<i32>(key_words(c) + 4)
            .map_err(cuda_err("allocating"))?;
        Ok(CudaSession {
            cuda,
            model,
            layers,
            output_norm: up(&model.weights.output_norm)?,
            s,
            params,
            link: [0; 2],
            lm_argmax: false,
            embed,
            argmax: st
                .alloc_zeros::<u32>(crate::cuda::ARGMAX_WORDS)
                .map_err(cuda_err("allocating"))?,
            fed: None,
            fed_keys: None,
            graphs: Vec::new(),
            span: MIN_SPAN,
            steps: 0,
            next: 0,
            max_positions,
            prof: std::cell::RefCell::new(None),
            act: super::Q8Act::new(cuda, c.n_embd.max(c.q_dim()).max(c.n_ff))?,
            act_ff: super::Q8Act::new(cuda, c.n_ff)?,
            fused,
            omit: Omit::default(),
            pf: None,
            poisoned: false,
            host_logits: None,
            started: false,
            logits_ready: None,
        })
    }

    /// The first of the step's parameters' four key words (`params`).
    fn key_words(&self) -> usize {
        key_words(&self.model.cfg)
    }

    /// Leaves `omit`'s kernels out of every later step (the graph is captured again). For
    /// timing experiments only: with anything left out the logits are wrong.
    #[doc(hidden)]
    pub fn set_omit(&mut self, omit: Omit) {
        self.omit = omit;
        self.graphs.clear();
    }

    /// Bytes of device memory a session of `max_positions` positions holds in its KV cache
    /// (`kv_bytes`), before it is made: f16 K and V rows of every layer, sliding layers at most
    /// their window.
    pub fn kv_bytes_for(c: &crate::config::GlimmerConfig, max_positions: usize) -> usize {
        (0..c.n_layer)
            .map(|l| {
                let cap = if c.sliding.get(l).copied().unwrap_or(false) {
                    c.sliding_window.min(max_positions)
                } else {
                    max_positions
                };
                2 * 2 * cap * c.kv_dim()
            })
            .sum()
    }

    /// Bytes of device memory held by the KV cache.
    pub fn kv_bytes(&self) -> usize {
        self.layers
            .iter()
            .map(|l| 2 * (l.k.len() + l.v.len()))
            .sum()
    }

    /// Pretends `depth` positions were processed: every layer's cache rows are filled with
    /// deterministic random values and the ring metadata is set exactly as appending `depth`
    /// positions would leave it. For long-context benchmarks, where stepping through the
    /// prefill would take minutes.
    pub fn fill_synthetic(&mut self, depth: usize, seed: u32) -> Result<()> {
        if depth >= self.max_positions {
            return Err(Error::CacheFull {
                position: depth,
                capacity: self.max_positions,
            });
        }
        let st = self.cuda.stream().clone();
        let f = kernel(self.cuda, "fill_random_f16")?;
        let cfg = LaunchConfig {
            grid_dim: (4096, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        for (l, lay) in self.layers.iter_mut().enumerate() {
            for (i, buf) in [&mut lay.k, &mut lay.v].into_iter().enumerate() {
                let n = buf.len() as u64;
                let sd = seed ^ ((l as u32) << 8) ^ i as u32;
                let mut b = st.launch_builder(f);
                b.arg(buf).arg(&n).arg(&sd);
                // SAFETY: writes exactly `n` halves of `buf`.
                unsafe { b.launch(cfg) }.map_err(launch_err)?;
            }
            let len = depth.min(lay.place.window);
            lay.place.origin_logical = depth - len;
            lay.place.origin_physical = (depth - len) % lay.place.capacity;
            lay.place.len = len;
        }
        self.next = depth;
        Ok(())
    }

    /// Bytes of KV cache the next step's attention reads (K and V rows of every layer's
    /// window, f16), for bandwidth reports at depth.
    pub fn kv_read_bytes(&self) -> usize {
        let kv_dim = self.model.cfg.kv_dim();
        self.layers
            .iter()
            .map(|l| 2 * 2 * kv_dim * (l.place.len + 1).min(l.place.window))
            .sum()
    }

    /// Positions processed so far.
    pub fn len(&self) -> usize {
        self.next
    }

    pub fn is_empty(&self) -> bool {
        self.next == 0
    }
}

/// Events recorded after each kernel during `profile_step`, with their labels.
type Prof = std::cell::RefCell<Option<Vec<(String, usize, cudarc::driver::CudaEvent)>>>;

/// Records an event labelled `label` after the last queued kernel when profiling, with the
/// weight bytes the kernel read.
fn mark(cuda: &Cuda, prof: &Prof, bytes: usize, label: impl FnOnce() -> String) -> Result<()> {
    if let Some(p) = prof.borrow_mut().as_mut() {
        let e = cuda
            .stream()
            .record_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(cuda_err("recording an event"))?;
        p.push((label(), bytes, e));
    }
    Ok(())
}

fn launch_err(e: cudarc::driver::DriverError) -> Error {
    Error::Cuda(format!("launching a decode kernel: {e:?}"))
}

fn matvec(
    cuda: &Cuda,
    model: &Glimmer,
    m: &Matrix,
    x: &CudaSlice<f32>,
    y: &mut CudaSlice<f32>,
) -> Result<()> {
    let w = cuda.device_weights(&model.weights, m)?;
    cuda.matvec_device(
        m.ty,
        &w.as_view(),
        &x.as_view(),
        &mut y.as_view_mut(),
        m.n_in,
        m.n_out,
        1,
    )
}

fn kernel<'a>(cuda: &'a Cuda, name: &str) -> Result<&'a cudarc::driver::CudaFunction> {
    cuda.decode
        .get(name)
        .ok_or_else(|| Error::Cuda(format!("kernel {name} not loaded")))
}

#[cfg(test)]
mod tests {
    use super::{span_of, splits_of, CudaSession};

    #[test]
    fn planned_kv_bytes_follow_the_arithmetic() {
        // The real geometry: 52 layers, [SWA, SWA, SWA, FULL], window 2048, 2 KV heads of 128.
        let c = crate::config::GlimmerConfig {
            n_layer: 52,
            n_embd: 6656,
            n_ff: 19968,
            n_head: 32,
            n_head_kv: 2,
            head_dim: 128,
            n_vocab: 202_048,
            context_length: 131_072,
            rms_eps: 1e-5,
            post_norm_eps: 1e-8,
            rope_freq_base: 500_000.0,
            rope_freq_base_swa: 500_000.0,
            sliding_window: 2048,
            sliding: (0..52).map(|i| i % 4 < 3).collect(),
            logit_scale: 1.0,
            softcap: 20.0,
        };
        // muse-glimmer.md: (39 × min(C, 2048) + 13 × C) × 1,024 bytes.
        let want = |cap: usize| (39 * cap.min(2048) + 13 * cap) * 1024;
        for cap in [1, 128, 2048, 4096, 131_136] {
            assert_eq!(CudaSession::kv_bytes_for(&c, cap), want(cap), "{cap}");
        }
        // What the device run measured for the 131,136-position session.
        assert_eq!(CudaSession::kv_bytes_for(&c, 131_136), 1_827_471_360);
    }

    #[test]
    fn spans_are_powers_of_two_from_one_split_up() {
        // By span: at least 128 rows (one split), then the next power of two.
        assert_eq!(span_of(0, true, 8192), 128);
        assert_eq!(span_of(128, true, 8192), 128);
        assert_eq!(span_of(129, true, 8192), 256);
        assert_eq!(span_of(3000, true, 8192), 4096);
        // By capacity: always the most positions.
        assert_eq!(span_of(5, false, 8192), 8192);
        // The split counts a step of 100 rows gets in a session of 8,192 positions.
        assert_eq!(splits_of(8192.min(span_of(100, true, 8192)), 128), 1);
        assert_eq!(splits_of(8192.min(span_of(100, false, 8192)), 128), 64);
    }
}
