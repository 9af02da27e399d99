//! `StreamDecoder`: turns generated ids into text one id at a time without ever emitting half
//! a UTF-8 character (byte-level BPE tokens often end mid-character).

use crate::tokenizer::Tokenizer;

/// Incremental detokenizer. Feed ids with `push`; each call returns the newly completed text.
#[derive(Debug)]
pub struct StreamDecoder<'a> {
    tok: &'a Tokenizer,
    skip_special: bool,
    /// Bytes not yet emitted: at most an incomplete character's prefix (≤ 3 bytes).
    pending: Vec<u8>,
}

impl<'a> StreamDecoder<'a> {
    /// `skip_special`: render control tokens as nothing instead of their text.
    pub fn new(tok: &'a Tokenizer, skip_special: bool) -> StreamDecoder<'a> {
        StreamDecoder {
            tok,
            skip_special,
            pending: Vec::new(),
        }
    }

    /// Adds one token; returns the text it completes (possibly empty). Bytes that can never
    /// become valid UTF-8 are emitted as U+FFFD right away; an incomplete character at the end
    /// is held back for the next call.
    pub fn push(&mut self, id: u32) -> String {
        self.pending
            .extend_from_slice(self.tok.token_bytes(id, self.skip_special));
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
