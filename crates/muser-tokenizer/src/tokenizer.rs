//! `Tokenizer`: GGUF byte-level BPE with the Llama-3 pre-tokenizer and special tokens, encoding
//! as llama.cpp's `llama_tokenize` does (one documented exception, see `encode`).

use std::collections::HashMap;
use std::ops::Range;

use muser_gguf::Header;

use crate::bpe::{encode_word, Scratch};
use crate::error::Result;
use crate::pretokenize::split_llama3;
use crate::vocab::{token_piece, TokenKind, Vocab};

/// A loaded tokenizer. Cheap to share: `Send + Sync`, all methods take `&self`.
#[derive(Debug)]
pub struct Tokenizer {
    v: Vocab,
    /// Decoded bytes of every token.
    pieces: Vec<Box<[u8]>>,
    /// Tokens matched in raw text before BPE (control, unknown, user-defined), longest first
    /// (ties by id), the order in which llama.cpp's `tokenizer_st_partition` applies them.
    specials: Vec<u32>,
    /// First byte → indices into `specials` starting with it (a prefilter for long texts).
    specials_by_first: HashMap<u8, Vec<usize>>,
}

/// Part of the text after special-token partitioning.
#[derive(Debug, Clone)]
enum Fragment {
    Text(Range<usize>),
    Token(u32),
}

impl Tokenizer {
    /// Reads `tokenizer.ggml.*` from a GGUF header.
    pub fn from_gguf(header: &Header) -> Result<Tokenizer> {
        let v = Vocab::from_gguf(header)?;
        let pieces = v
            .texts
            .iter()
            .zip(&v.kinds)
            .map(|(t, &k)| token_piece(t, k).into_boxed_slice())
            .collect();
        let mut specials: Vec<u32> = (0..v.texts.len() as u32)
            .filter(|&id| {
                matches!(
                    v.kinds[id as usize],
                    TokenKind::Control | TokenKind::Unknown | TokenKind::UserDefined
                )
            })
            .collect();
        specials.sort_by_key(|&id| (std::cmp::Reverse(v.texts[id as usize].len()), id));
        let mut specials_by_first: HashMap<u8, Vec<usize>> = HashMap::new();
        for (i, &id) in specials.iter().enumerate() {
            let first = v.texts[id as usize].as_bytes()[0];
            specials_by_first.entry(first).or_default().push(i);
        }
        Ok(Tokenizer {
            v,
            pieces,
            specials,
            specials_by_first,
        })
    }

    /// Tokens, BOS first when `add_bos` (and the vocabulary has one).
    ///
    /// Special tokens (control and unknown) are recognised in `text` only when
    /// `parse_special`; user-defined tokens always are. Unlike llama.cpp, `<|start|>` and
    /// `<|message|>` are *not* force-parsed when `parse_special` is off (llama.cpp retypes them
    /// as user-defined, a workaround for another model family).
    pub fn encode(&self, text: &str, add_bos: bool, parse_special: bool) -> Vec<u32> {
        let mut out = Vec::with_capacity(text.len() / 3 + 2);
        if add_bos {
            out.extend(self.v.bos);
        }
        let mut scratch = Scratch::default();
        let mut words = Vec::new();
        for frag in self.partition(text, parse_special) {
            match frag {
                Fragment::Token(id) => out.push(id),
                Fragment::Text(r) => {
                    let part = &text[r];
                    words.clear();
                    split_llama3(part, &mut words);
                    for w in &words {
                        encode_word(&self.v, &part.as_bytes()[w.clone()], &mut scratch, &mut out);
                    }
                }
            }
        }
        out
    }

    /// Splits out special tokens as llama.cpp does: each special in turn (longest first) cuts
    /// every remaining text fragment at each of its non-overlapping occurrences.
    fn partition(&self, text: &str, parse_special: bool) -> Vec<Fragment> {
        if text.is_empty() {
            return Vec::new();
        }
        let mut frags = vec![Fragment::Text(0..text.len())];
        for id in self.specials_present(text) {
            let kind = self.v.kinds[id as usize];
            if !parse_special && kind.is_special() {
                continue;
            }
            let pat = self.v.texts[id as usize].as_str();
            let mut next = Vec::with_capacity(frags.len() + 2);
            for f in frags {
                let Fragment::Text(r) = f else {
                    next.push(f);
                    continue;
                };
                let mut start = r.start;
                while let Some(p) = text[start..r.end].find(pat) {
                    let at = start + p;
                    if at > start {
                        next.push(Fragment::Text(start..at));
                    }
                    next.push(Fragment::Token(id));
                    start = at + pat.len();
                }
                if start < r.end {
                    next.push(Fragment::Text(start..r.end));
                }
            }
            frags = next;
        }
        frags
    }

    /// Specials that occur somewhere in `text`, in partition order.
    fn specials_present(&self, text: &str) -> Vec<u32> {
        let mut present = vec![false; self.specials.len()];
        let bytes = text.as_bytes();
        for (pos, b) in bytes.iter().enumerate() {
            if let Some(cands) = self.specials_by_first.get(b) {
                for &i in cands {
                    let pat = self.v.texts[self.specials[i] as usize].as_bytes();
                    if !present[i] && bytes[pos..].starts_with(pat) {
                        present[i] = true;
                    }
                }
            }
        }
        (0..self.specials.len())
            .filter(|&i| present[i])
            .map(|i| self.specials[i])
            .collect()
    }

    /// Whether callers should prepend BOS (`tokenizer.ggml.add_bos_token`, default true for
    /// the Llama-3 pre-tokenizer as in llama.cpp).
    pub fn add_bos_default(&self) -> bool {
        self.v.add_bos
    }

    /// Number of tokens (the embedding rows the vocabulary addresses).
    pub fn vocab_size(&self) -> usize {
        self.v.texts.len()
    }

    /// `tokenizer.ggml.bos_token_id`.
    pub fn bos(&self) -> Option<u32> {
        self.v.bos
    }

    /// `tokenizer.ggml.eos_token_id`.
    pub fn eos(&self) -> Option<u32> {
        self.v.eos
    }

    /// End of turn: `tokenizer.ggml.eot_token_id`, else the token `<|eot|>`.
    pub fn eot(&self) -> Option<u32> {
        self.v.eot
    }

    /// End of message (`tokenizer.ggml.eom_token_id`, else `<|eom|>`): more messages of the
    /// same turn follow, so this is *not* a stop token.
    pub fn eom(&self) -> Option<u32> {
        self.v.eom
    }

    /// Tokens that end generation: EOS and EOT (never EOM).
    pub fn stop_tokens(&self) -> Vec<u32> {
        let mut stops: Vec<u32> = self.v.eos.into_iter().chain(self.v.eot).collect();
        stops.dedup();
        stops
    }

    /// The token's role; `None` past the vocabulary.
    pub fn token_kind(&self, id: u32) -> Option<TokenKind> {
        self.v.kinds.get(id as usize).copied()
    }

    /// Control (or unknown) token: skipped by `decode_with(.., skip_special = true)`.
    pub fn is_control(&self, id: u32) -> bool {
        self.token_kind(id).is_some_and(TokenKind::is_special)
    }

    /// The token's text as stored in the GGUF (byte-mapped for normal tokens).
    pub fn token_text(&self, id: u32) -> Option<&str> {
        self.v.texts.get(id as usize).map(String::as_str)
    }

    /// The id of the token with exactly this stored text.
    pub fn token_id(&self, text: &str) -> Option<u32> {
        self.v.by_text.get(text).copied()
    }

    /// The bytes one token decodes to (empty for special tokens when `skip_special`, and for
    /// ids past the vocabulary).
    pub fn token_bytes(&self, id: u32, skip_special: bool) -> &[u8] {
        match self.pieces.get(id as usize) {
            Some(_) if skip_special && self.is_control(id) => &[],
            Some(p) => p,
            None => &[],
        }
    }

    /// Decodes with special tokens rendered as their text.
    pub fn decode(&self, ids: &[u32]) -> Vec<u8> {
        self.decode_with(ids, false)
    }

    /// Decodes, rendering control tokens as their text unless `skip_special`.
    pub fn decode_with(&self, ids: &[u32], skip_special: bool) -> Vec<u8> {
        let mut out = Vec::new();
        for &id in ids {
            out.extend_from_slice(self.token_bytes(id, skip_special));
        }
        out
    }

    /// `decode`, with invalid UTF-8 replaced by U+FFFD.
    pub fn decode_lossy(&self, ids: &[u32]) -> String {
        String::from_utf8_lossy(&self.decode(ids)).into_owned()
    }
}
