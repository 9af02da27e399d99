//! Muse Glimmer engine: model description from GGUF, weights, KV cache, the graph over a
//! backend boundary (`cpu-ref` oracle, `cpu` fast path).

pub mod attention;
pub mod backend;
pub mod channels;
pub mod config;
pub mod cuda;
mod error;
pub mod generate;
pub mod kv;
pub mod model;
pub mod ops;
pub mod sampling;
pub mod sched;
mod split;
pub mod weights;

pub use backend::{Backend, Cpu, CpuRef};
pub use config::GlimmerConfig;
pub use error::{Error, Result};
pub use generate::{GenStats, Generator, HostSequence, Sequence, PREFILL_CHUNK};
pub use kv::{KvCache, KvDtype, RingMeta};
pub use model::{Glimmer, GraphFaults, LogitsFor, Segment};
pub use ops::Numerics;
pub use sampling::{Sampler, SamplingParams};
pub use split::{SplitPolicy, SPLIT_MAX_WEIGHT_BYTES};
pub use weights::{Matrix, TensorName, Weights};
