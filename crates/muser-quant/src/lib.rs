//! ggml block formats: scalar reference dequantization and quantization, bit-identical to
//! ggml's C reference (`ggml-quants.c`) and to the `gguf` Python package.
//!
//! * [`blocks`]: `#[repr(C)]`, alignment-1 block structs and zero-copy byte casts.
//! * `*_ref` functions per format (named after ggml's), and a type-dispatched API:
//!   [`dequantize_row`], [`quantize_row`], [`dequantize_tensor`].
//!
//! * CPU matmul: [`matmul`] / [`matmul_with`] quantize activations to the weight type's
//!   [`vec_dot_type`] ([`q8`]) and run ggml's dot products ([`vecdot`], scalar and AVX2).
//!
//! Every function validates lengths and returns [`Error`] instead of panicking.

pub mod api;
pub mod blocks;
mod error;
pub mod float;
pub mod iq4;
pub mod kquant_quantize;
pub mod kquants;
pub mod legacy;
pub mod matmul;
mod matmul_batch;
pub mod q8;
mod qkx2_lanes;
pub mod spin_pool;
pub mod vecdot;

pub use api::{
    can_dequantize, can_quantize, dequantize_row, dequantize_tensor, quantize_row,
    quantize_row_fast, row_size, DEQUANTIZE_TYPES, QUANTIZE_TYPES,
};
pub use blocks::{
    blocks_as_bytes, cast_blocks, cast_blocks_mut, Block, BlockIQ4NL, BlockIQ4XS, BlockQ2K,
    BlockQ3K, BlockQ40, BlockQ41, BlockQ4K, BlockQ50, BlockQ51, BlockQ5K, BlockQ6K, BlockQ80,
    BlockQ81, BlockQ8K, QK32,
};
pub use error::{Error, Result};
pub use float::{
    bf16_to_f32, dequantize_row_bf16_ref, dequantize_row_f16_ref, dequantize_row_f32_ref,
    f16_to_f32, fp32_to_bf16, fp32_to_fp16, quantize_row_bf16_ref, quantize_row_f16_ref,
    quantize_row_f32_ref,
};
pub use iq4::{dequantize_row_iq4nl_ref, dequantize_row_iq4xs_ref, KVALUES_IQ4NL};
pub use kquant_quantize::{
    quantize_row_q4k_fast, quantize_row_q4k_ref, quantize_row_q5k_fast, quantize_row_q5k_ref,
    quantize_row_q6k_fast, quantize_row_q6k_ref, quantize_row_q8k_ref,
};
pub use kquants::{
    dequantize_row_q2k_ref, dequantize_row_q3k_ref, dequantize_row_q4k_ref, dequantize_row_q5k_ref,
    dequantize_row_q6k_ref, dequantize_row_q8k_ref,
};
pub use legacy::{
    dequantize_row_q40_ref, dequantize_row_q41_ref, dequantize_row_q50_ref, dequantize_row_q51_ref,
    dequantize_row_q80_ref, quantize_row_q40_ref, quantize_row_q41_ref, quantize_row_q50_ref,
    quantize_row_q51_ref, quantize_row_q80_ref,
};
pub use matmul::{matmul, matmul_multi, matmul_multi_on, matmul_with, MatvecJob};
pub use matmul_batch::{matmul_batch, matmul_batch_on, MatmulJob, Threads};
pub use muser_gguf::{GgmlType, QK_K};
pub use q8::{
    activation_row_size, quantize_activation, quantize_row_q80_cpu, quantize_row_q81_cpu,
    quantize_row_q81_ref, vec_dot_type, MATMUL_TYPES,
};
pub use spin_pool::SpinPool;
pub use vecdot::{Isa, Kernels};
