//! Deterministic synthetic Muse Glimmer GGUFs: real key and tensor names, shapes and norm
//! conventions, seeded random weights, a byte-level BPE tokenizer and a chat template.

mod config;
mod error;
mod generate;
mod plan;
pub mod rng;
pub mod tokenizer;

pub use config::{use_more_bits, PatternEncoding, Preset, SynthConfig, TypePlan, WeightScales};
pub use error::{Error, Result};
pub use generate::{write_model, SynthReport};
pub use plan::{metadata, tensors, Init, TensorPlan, ARCH};
