//! `StreamDecoder`: turns generated ids into text one id at a time without ever emitting half
//! a UTF-8 character (byte-level BPE tokens often end mid-character); `Utf8Stream` is the same
//! over bytes, owning no tokenizer (for decoders that live in async tasks).

use crate::tokenizer::Tokenizer;

/// Incremental detokenizer. Feed ids with `push`; each call returns the newly completed text.
#[derive(Debug)]
pub struct StreamDecoder<'a> {
    tok: &'a Tokenizer,
    skip_special: bool,
    bytes: Utf8Stream,
}

/// Bytes in, complete UTF-8 text out.
#[derive(Debug, Default, Clone)]
pub struct Utf8Stream {
    /// Bytes not yet emitted: at most an incomplete character's prefix (≤ 3 bytes).
    pending: Vec<u8>,
}

impl<'a> StreamDecoder<'a> {
    /// `skip_special`: render control tokens as nothing instead of their text.
    pub fn new(tok: &'a Tokenizer, skip_special: bool) -> StreamDecoder<'a> {
        StreamDecoder {
            tok,
            skip_special,
            bytes: Utf8Stream::default(),
        }
    }

    /// Adds one token; returns the text it completes (possibly empty).
    pub fn push(&mut self, id: u32) -> String {
        self.bytes.push(self.tok.token_bytes(id, self.skip_special))
    }

    /// Whether bytes are held back waiting for the rest of a character.
    pub fn has_pending(&self) -> bool {
        self.bytes.has_pending()
    }

    /// Flushes what is held back (an incomplete character becomes U+FFFD).
    pub fn finish(&mut self) -> String {
        self.bytes.finish()
    }
}

impl Utf8Stream {
    /// Adds bytes; returns the text they complete (possibly empty). Bytes that can never
    /// become valid UTF-8 are emitted as U+FFFD right away; an incomplete character at the end
    /// is held back for the next call.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        let mut rest: &[u8] = &self.pending;
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    out.push_str(s);
                    rest = &[];
                    break;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    // `valid_up_to` guarantees this prefix is valid UTF-8.
                    out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    match e.error_len() {
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            rest = &after[bad..];
                        }
                        None => {
                            rest = after;
                            break;
                        }
                    }
                }
            }
        }
        let keep = rest.len();
        let start = self.pending.len() - keep;
        self.pending.drain(..start);
        out
    }

    /// Whether bytes are held back waiting for the rest of a character.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Flushes what is held back (an incomplete character becomes U+FFFD).
    pub fn finish(&mut self) -> String {
        let out = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        out
    }
}
