//! ggml block formats (placeholder until the quant crate lands).
