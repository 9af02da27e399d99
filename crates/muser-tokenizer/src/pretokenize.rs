//! The Llama-3 pre-tokenizer split, as llama.cpp applies it.
//!
//! The regex from Meta's tokenizer.json is
//! `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`.
//! llama.cpp does not run it through a regex engine: `unicode_regex_split_custom_llama3`
//! (src/unicode.cpp) is a hand-written scanner, and where the two disagree the scanner is what
//! the model is served with. This is an independent implementation of the scanner's
//! behaviour, with llama.cpp's Unicode classes (`unicode_tables.rs`). Behaviour worth knowing:
//! - `\s*[\r\n]+` takes the whole whitespace run up to its *last* `\r`/`\n`;
//! - `\s+(?!\S)` leaves the last whitespace character of a run for the next piece, except at
//!   the end of the text;
//! - unassigned code points count as "other" (like punctuation), never as letters.

use std::ops::Range;

use crate::unicode_tables::{LETTER, NUMBER};

#[derive(Debug, Clone, Copy, Default)]
struct Flags {
    /// Inside the text (llama.cpp's flags are all zero past the end).
    valid: bool,
    letter: bool,
    number: bool,
    space: bool,
}

fn in_ranges(table: &[(u32, u32)], cp: u32) -> bool {
    table
        .binary_search_by(|&(lo, hi)| {
            if hi < cp {
                std::cmp::Ordering::Less
            } else if lo > cp {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

fn classify(c: char) -> Flags {
    if c.is_ascii() {
        return Flags {
            valid: true,
            letter: c.is_ascii_alphabetic(),
            number: c.is_ascii_digit(),
            // Python's and llama.cpp's \s include \x0b and \x0c; Rust's is_ascii_whitespace
            // lacks \x0b, so use the Unicode White_Space property (the same 25 code points
            // llama.cpp lists).
            space: c.is_whitespace(),
        };
    }
    let cp = c as u32;
    Flags {
        valid: true,
        letter: in_ranges(LETTER, cp),
        number: in_ranges(NUMBER, cp),
        space: c.is_whitespace(),
    }
}

/// Splits `text` into pre-tokens, appending their byte ranges to `out` (contiguous, covering
/// the whole text).
pub(crate) fn split_llama3(text: &str, out: &mut Vec<Range<usize>>) {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let flags: Vec<Flags> = chars.iter().map(|&(_, c)| classify(c)).collect();
    let n = chars.len();
    let byte_at = |i: usize| chars.get(i).map_or(text.len(), |&(b, _)| b);
    let ch = |i: usize| chars.get(i).map(|&(_, c)| c);
    let fl = |i: usize| flags.get(i).copied().unwrap_or_default();
    let is_rn = |c: Option<char>| matches!(c, Some('\r' | '\n'));

    let mut prev = 0usize;
    let mut emit = |end: usize, out: &mut Vec<Range<usize>>| {
        if end > prev {
            out.push(byte_at(prev)..byte_at(end));
        }
        prev = end;
    };

    let mut pos = 0usize;
    while pos < n {
        let c = chars[pos].1;
        let f = flags[pos];

        // (?i:'s|'t|'re|'ve|'m|'ll|'d): only ASCII letters lower-case to these.
        if c == '\'' && pos + 1 < n {
            let next = ch(pos + 1).map(|c| c.to_ascii_lowercase());
            if matches!(next, Some('s' | 't' | 'm' | 'd')) {
                pos += 2;
                emit(pos, out);
                continue;
            }
            if pos + 2 < n {
                let next2 = ch(pos + 2).map(|c| c.to_ascii_lowercase());
                if matches!(
                    (next, next2),
                    (Some('r'), Some('e')) | (Some('v'), Some('e')) | (Some('l'), Some('l'))
                ) {
                    pos += 3;
                    emit(pos, out);
                    continue;
                }
            }
        }

        // [^\r\n\p{L}\p{N}]?\p{L}+
        if !(c == '\r' || c == '\n' || f.number) && (f.letter || fl(pos + 1).letter) {
            pos += 1;
            while fl(pos).letter {
                pos += 1;
            }
            emit(pos, out);
            continue;
        }

        // \p{N}{1,3}
        if f.number {
            let mut start = pos;
            while fl(pos).number {
                pos += 1;
                if pos - start >= 3 {
                    emit(pos, out);
                    start = pos;
                }
            }
            emit(pos, out);
            continue;
        }

        // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
        let other = |g: Flags| !(g.space || g.letter || g.number);
        let mut g = if c == ' ' { fl(pos + 1) } else { f };
        if other(g) && f.valid {
            if c == ' ' {
                pos += 1;
            }
            while other(g) && g.valid {
                pos += 1;
                g = fl(pos);
            }
            while is_rn(ch(pos)) {
                pos += 1;
            }
            emit(pos, out);
            continue;
        }

        let mut n_space = 0usize;
        let mut last_rn_end = None;
        while fl(pos + n_space).space {
            if is_rn(ch(pos + n_space)) {
                last_rn_end = Some(pos + n_space + 1);
            }
            n_space += 1;
        }
        // \s*[\r\n]+
        if let Some(end) = last_rn_end {
            pos = end;
            emit(pos, out);
            continue;
        }
        // \s+(?!\S): all but the last space when something follows.
        if n_space > 1 && pos + n_space < n {
            pos += n_space - 1;
            emit(pos, out);
            continue;
        }
        // \s+
        if n_space > 0 {
            pos += n_space;
            emit(pos, out);
            continue;
        }
        pos += 1;
        emit(pos, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &str) -> Vec<&str> {
        let mut r = Vec::new();
        split_llama3(s, &mut r);
        r.into_iter().map(|r| &s[r]).collect()
    }

    #[test]
    fn splits_like_llama3() {
        assert_eq!(split("Hello world"), ["Hello", " world"]);
        assert_eq!(split("I'LL don't"), ["I", "'LL", " don", "'t"]);
        assert_eq!(split("1234567"), ["123", "456", "7"]);
        assert_eq!(split("a  b"), ["a", " ", " b"]);
        assert_eq!(split("a \n\n b"), ["a", " \n\n", " b"]);
        assert_eq!(split("x!!\n\ny"), ["x", "!!\n\n", "y"]);
        assert_eq!(split("end   "), ["end", "   "]);
        assert_eq!(split("café ñ"), ["café", " ñ"]);
        assert_eq!(split(""), Vec::<&str>::new());
    }

    #[test]
    fn covers_the_text() {
        let s = "  \t\r\n x?! 12\u{3000}日本語 👍🏽\u{200d}x'";
        let mut r = Vec::new();
        split_llama3(s, &mut r);
        assert_eq!(r.iter().map(|r| &s[r.clone()]).collect::<String>(), s);
    }
}
