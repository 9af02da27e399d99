//! Tokenizer and chat template from GGUF metadata: byte-level BPE with llama.cpp's Llama-3
//! pre-tokenizer, special tokens, a streaming detokenizer and minijinja chat templates.
//!
//! The reference is llama.cpp (`llama-vocab.cpp`, `unicode.cpp`); tests compare ids with
//! fixtures it produced (tools/reference/gen_tokenizer_fixtures.py).

mod bpe;
mod bytes;
mod chat;
mod error;
mod pretokenize;
mod stream;
mod tokenizer;
mod unicode_tables;
mod vocab;

pub use chat::{ChatMessage, ChatTemplate, KEY_CHAT_TEMPLATE};
pub use error::{Error, Result};
pub use stream::{StreamDecoder, Utf8Stream};
pub use tokenizer::Tokenizer;
pub use vocab::TokenKind;
