//! Tokenizer and chat template from GGUF metadata.
