//! Loading a byte-level BPE vocabulary from GGUF `tokenizer.ggml.*` metadata, with the checks
//! llama.cpp makes (and a few it skips: unknown merge parts and special ids out of range are
//! errors here, not warnings).

use std::collections::HashMap;

use muser_gguf::Header;

use crate::bytes::{char_to_byte, BYTE_TO_CHAR};
use crate::error::{Error, Result};

pub(crate) const KEY_MODEL: &str = "tokenizer.ggml.model";
pub(crate) const KEY_PRE: &str = "tokenizer.ggml.pre";
pub(crate) const KEY_TOKENS: &str = "tokenizer.ggml.tokens";
pub(crate) const KEY_TYPES: &str = "tokenizer.ggml.token_type";
pub(crate) const KEY_MERGES: &str = "tokenizer.ggml.merges";
pub(crate) const KEY_BOS: &str = "tokenizer.ggml.bos_token_id";
pub(crate) const KEY_EOS: &str = "tokenizer.ggml.eos_token_id";
pub(crate) const KEY_EOT: &str = "tokenizer.ggml.eot_token_id";
pub(crate) const KEY_EOM: &str = "tokenizer.ggml.eom_token_id";
pub(crate) const KEY_ADD_BOS: &str = "tokenizer.ggml.add_bos_token";

/// `tokenizer.ggml.pre` values that select the Llama-3 split (the names llama.cpp maps to
/// `LLAMA_VOCAB_PRE_TYPE_LLAMA3` that are plausible for a Meta model).
pub(crate) const LLAMA3_PRE_NAMES: &[&str] = &["llama-bpe", "llama3", "llama-v3"];
const SUPPORTED_PRE: &str = "llama-bpe, llama3, llama-v3";

/// A token's role, from `tokenizer.ggml.token_type` (ggml's `llama_token_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// 0, or any value outside 0..=6: decodes to nothing.
    Undefined,
    /// 1: ordinary BPE token.
    Normal,
    /// 2: unknown-token placeholder (treated like a control token).
    Unknown,
    /// 3: control token (BOS, EOS, `<|eot|>`, …): matched in text only with `parse_special`.
    Control,
    /// 4: user-defined token: always matched in text, always rendered.
    UserDefined,
    /// 5: unused slot: decodes to nothing.
    Unused,
    /// 6: a `<0xXX>` byte token.
    Byte,
}

impl TokenKind {
    fn from_type(t: i64) -> TokenKind {
        match t {
            1 => TokenKind::Normal,
            2 => TokenKind::Unknown,
            3 => TokenKind::Control,
            4 => TokenKind::UserDefined,
            5 => TokenKind::Unused,
            6 => TokenKind::Byte,
            _ => TokenKind::Undefined,
        }
    }

    /// Control and unknown tokens: matched only with `parse_special`, skippable in output.
    pub fn is_special(self) -> bool {
        matches!(self, TokenKind::Control | TokenKind::Unknown)
    }
}

/// Merge table keyed by token ids. Merge results that are not tokens get "virtual" ids past
/// the vocabulary so that, as in llama.cpp's string-keyed table, they can still take part in
/// later merges; if one survives to the end it falls back to single-byte tokens.
#[derive(Debug, Default)]
pub(crate) struct Merges {
    /// (left, right) → (rank, result).
    pub(crate) table: HashMap<(u32, u32), (u32, u32)>,
    /// Texts of virtual ids `n_vocab..`.
    pub(crate) virtual_texts: Vec<String>,
}

/// Everything read from the header, checked.
#[derive(Debug)]
pub(crate) struct Vocab {
    pub(crate) texts: Vec<String>,
    pub(crate) kinds: Vec<TokenKind>,
    pub(crate) by_text: HashMap<String, u32>,
    pub(crate) merges: Merges,
    /// Token of each byte's mapped character (`None` if the vocabulary lacks it).
    pub(crate) byte_tokens: [Option<u32>; 256],
    pub(crate) bos: Option<u32>,
    pub(crate) eos: Option<u32>,
    pub(crate) eot: Option<u32>,
    pub(crate) eom: Option<u32>,
    pub(crate) add_bos: bool,
}

fn required_str<'a>(h: &'a Header, key: &'static str) -> Result<&'a str> {
    h.get_str(key)?.ok_or(Error::MissingKey { key })
}

fn strings<'a>(h: &'a Header, key: &'static str) -> Result<&'a [String]> {
    h.get_array(key)?
        .ok_or(Error::MissingKey { key })?
        .as_strings()
        .ok_or(Error::WrongType {
            key,
            expected: "array of strings",
        })
}

fn special_id(h: &Header, key: &'static str, n_vocab: usize) -> Result<Option<u32>> {
    match h.get_u64(key)? {
        None => Ok(None),
        Some(id) if id < n_vocab as u64 => Ok(Some(id as u32)),
        Some(id) => Err(Error::IdOutOfRange { key, id, n_vocab }),
    }
}

impl Vocab {
    pub(crate) fn from_gguf(h: &Header) -> Result<Vocab> {
        let model = required_str(h, KEY_MODEL)?;
        if model != "gpt2" {
            return Err(Error::Unsupported {
                key: KEY_MODEL,
                value: model.to_string(),
                supported: "gpt2 (byte-level BPE)",
            });
        }
        let pre = required_str(h, KEY_PRE)?;
        if !LLAMA3_PRE_NAMES.contains(&pre) {
            return Err(Error::Unsupported {
                key: KEY_PRE,
                value: pre.to_string(),
                supported: SUPPORTED_PRE,
            });
        }

        let raw = strings(h, KEY_TOKENS)?;
        let n = raw.len();
        if n >= u32::MAX as usize / 2 {
            return Err(Error::TooManyTokens { count: n });
        }
        let mut texts = Vec::with_capacity(n);
        let mut by_text = HashMap::with_capacity(n);
        for (i, t) in raw.iter().enumerate() {
            // llama.cpp renames empty tokens so that every text is unique and non-empty.
            let text = if t.is_empty() {
                format!("[EMPTY_{i}]")
            } else {
                t.clone()
            };
            if let Some(&first) = by_text.get(&text) {
                return Err(Error::DuplicateToken {
                    text,
                    first,
                    second: i as u32,
                });
            }
            by_text.insert(text.clone(), i as u32);
            texts.push(text);
        }

        let kinds = match h.get_array(KEY_TYPES)? {
            None => vec![TokenKind::Normal; n],
            Some(a) => {
                let types = a.to_i64_vec().ok_or(Error::WrongType {
                    key: KEY_TYPES,
                    expected: "array of integers",
                })?;
                if types.len() < n {
                    return Err(Error::TooShort {
                        key: KEY_TYPES,
                        found: types.len(),
                        expected: n,
                    });
                }
                types[..n]
                    .iter()
                    .map(|&t| TokenKind::from_type(t))
                    .collect()
            }
        };

        let merges = build_merges(strings(h, KEY_MERGES)?, &by_text, n)?;

        let mut byte_tokens = [None; 256];
        for (b, slot) in byte_tokens.iter_mut().enumerate() {
            *slot = by_text.get(BYTE_TO_CHAR[b].to_string().as_str()).copied();
        }

        let by_name = |name: &str| by_text.get(name).copied();
        let eot = special_id(h, KEY_EOT, n)?.or_else(|| by_name("<|eot|>"));
        let eom = special_id(h, KEY_EOM, n)?.or_else(|| by_name("<|eom|>"));
        Ok(Vocab {
            bos: special_id(h, KEY_BOS, n)?,
            eos: special_id(h, KEY_EOS, n)?,
            eot,
            eom,
            // llama.cpp: the Llama-3 pre-tokenizer implies add_bos unless the key says otherwise.
            add_bos: h.get_bool(KEY_ADD_BOS)?.unwrap_or(true),
            texts,
            kinds,
            by_text,
            merges,
            byte_tokens,
        })
    }
}

fn build_merges(lines: &[String], by_text: &HashMap<String, u32>, n: usize) -> Result<Merges> {
    let mut m = Merges::default();
    let mut virtual_ids: HashMap<String, u32> = HashMap::new();
    m.table.reserve(lines.len());
    for (index, line) in lines.iter().enumerate() {
        let bad = |reason| Error::BadMerge {
            index,
            merge: line.clone(),
            reason,
        };
        // llama.cpp splits at the first space after the first byte.
        let split = line
            .bytes()
            .skip(1)
            .position(|b| b == b' ')
            .map(|p| p + 1)
            .ok_or_else(|| bad("no space separating two parts"))?;
        let (left, right) = (&line[..split], &line[split + 1..]);
        let lookup = |s: &str| by_text.get(s).or_else(|| virtual_ids.get(s)).copied();
        let l = lookup(left).ok_or_else(|| bad("left part is not a token"))?;
        let r = lookup(right).ok_or_else(|| bad("right part is not a token"))?;
        let joined = format!("{left}{right}");
        let result = match lookup(&joined) {
            Some(id) => id,
            None => {
                let id = (n + m.virtual_texts.len()) as u32;
                virtual_ids.insert(joined.clone(), id);
                m.virtual_texts.push(joined);
                id
            }
        };
        // The first occurrence of a pair keeps its rank (llama.cpp's `emplace`).
        m.table.entry((l, r)).or_insert((index as u32, result));
    }
    Ok(m)
}

/// Bytes a token renders as: byte-decoded text for normal tokens, the literal text for
/// control, unknown and user-defined tokens, the byte of a `<0xXX>` token, nothing otherwise.
pub(crate) fn token_piece(text: &str, kind: TokenKind) -> Vec<u8> {
    match kind {
        TokenKind::Normal => {
            let mut out = Vec::with_capacity(text.len());
            for c in text.chars() {
                match char_to_byte(c) {
                    Some(b) => out.push(b),
                    // Not a mapped character: llama.cpp writes an "[UNK_BYTE_…]" marker; the
                    // character itself is the more useful rendering.
                    None => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
                }
            }
            out
        }
        TokenKind::Control | TokenKind::Unknown | TokenKind::UserDefined => text.as_bytes().into(),
        TokenKind::Byte => text
            .strip_prefix("<0x")
            .and_then(|s| s.strip_suffix('>'))
            .and_then(|hex| u8::from_str_radix(hex, 16).ok())
            .map(|b| vec![b])
            .unwrap_or_default(),
        TokenKind::Unused | TokenKind::Undefined => Vec::new(),
    }
}
