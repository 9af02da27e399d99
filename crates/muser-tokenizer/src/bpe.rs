//! Byte-level BPE of one pre-token, as llama.cpp's `llm_tokenizer_bpe_session` does it:
//! the whole pre-token is taken as one token if the vocabulary has it (`ignore_merges`, set for
//! the Llama-3 pre-tokenizer), otherwise adjacent symbols are merged lowest rank first, ties to
//! the leftmost pair, until no adjacent pair has a merge.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::bytes::{encode_bytes_into, BYTE_TO_CHAR};
use crate::vocab::Vocab;

/// No token: a byte whose mapped character is not in the vocabulary.
const NONE: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
struct Symbol {
    id: u32,
    /// The byte this symbol started as (for the fallback of `NONE`).
    byte: u8,
    prev: usize,
    next: usize,
    alive: bool,
}

const END: usize = usize::MAX;

/// Reusable buffers (one per encode call).
#[derive(Default)]
pub(crate) struct Scratch {
    mapped: String,
    symbols: Vec<Symbol>,
    heap: BinaryHeap<Reverse<(u32, usize, u32, u32)>>,
}

/// Appends the tokens of one pre-token (raw bytes) to `out`.
pub(crate) fn encode_word(v: &Vocab, word: &[u8], s: &mut Scratch, out: &mut Vec<u32>) {
    s.mapped.clear();
    encode_bytes_into(word, &mut s.mapped);
    if let Some(&id) = v.by_text.get(s.mapped.as_str()) {
        out.push(id);
        return;
    }

    s.symbols.clear();
    s.heap.clear();
    let n = word.len();
    s.symbols
        .extend(word.iter().enumerate().map(|(i, &b)| Symbol {
            id: v.byte_tokens[b as usize].unwrap_or(NONE),
            byte: b,
            prev: if i == 0 { END } else { i - 1 },
            next: if i + 1 == n { END } else { i + 1 },
            alive: true,
        }));
    let push = |syms: &[Symbol], heap: &mut BinaryHeap<_>, left: usize, right: usize| {
        if left == END || right == END {
            return;
        }
        let (a, b) = (syms[left].id, syms[right].id);
        if let Some(&(rank, _)) = v.merges.table.get(&(a, b)) {
            heap.push(Reverse((rank, left, a, b)));
        }
    };
    for i in 1..n {
        push(&s.symbols, &mut s.heap, i - 1, i);
    }
    while let Some(Reverse((_, left, a, b))) = s.heap.pop() {
        let right = s.symbols[left].next;
        // Stale if either side changed since the pair was queued.
        if !s.symbols[left].alive
            || right == END
            || s.symbols[left].id != a
            || s.symbols[right].id != b
        {
            continue;
        }
        let Some(&(_, merged)) = v.merges.table.get(&(a, b)) else {
            continue;
        };
        let after = s.symbols[right].next;
        s.symbols[right].alive = false;
        s.symbols[left].id = merged;
        s.symbols[left].next = after;
        if after != END {
            s.symbols[after].prev = left;
        }
        let before = s.symbols[left].prev;
        push(&s.symbols, &mut s.heap, before, left);
        push(&s.symbols, &mut s.heap, left, after);
    }

    let n_vocab = v.texts.len();
    let mut i = if n == 0 { END } else { 0 };
    while i != END {
        let sym = s.symbols[i];
        i = sym.next;
        if (sym.id as usize) < n_vocab {
            out.push(sym.id);
            continue;
        }
        // No such token: llama.cpp looks up each byte of the mapped text as a one-byte token
        // text, which only ASCII bytes can match.
        let mut one = [0u8; 4];
        let text: &str = if sym.id == NONE {
            BYTE_TO_CHAR[sym.byte as usize].encode_utf8(&mut one)
        } else {
            &v.merges.virtual_texts[sym.id as usize - n_vocab]
        };
        for &b in text.as_bytes() {
            if b.is_ascii() {
                if let Some(&id) = v
                    .by_text
                    .get(char::from(b).encode_utf8(&mut [0; 4]) as &str)
                {
                    out.push(id);
                }
            }
        }
    }
}
