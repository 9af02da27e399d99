//! Synthetic byte-level BPE vocabulary (GPT-2 byte mapping, merges, Glimmer specials) and the
//! Glimmer-format chat template written into synthetic GGUFs.

use std::collections::HashSet;

/// Number of special tokens after the BPE tokens (Glimmer: 2,048, ids 200000..202047).
pub const N_SPECIAL: u32 = 2048;

/// Glimmer's named specials as offsets from the first special id (200000 in the real model).
pub const NAMED_SPECIALS: &[(u32, &str)] = &[
    (0, "<|begin_of_text|>"),
    (1, "<|end_of_text|>"),
    (7, "<|eom|>"),
    (8, "<|eot|>"),
    (18, "<|finetune_right_pad|>"),
    (22, "<|start|>"),
    (23, "<|message|>"),
    (80, "<|image_start|>"),
    (81, "<|image_end|>"),
    (92, "<|patch|>"),
    (1818, "<|mask|>"),
];

pub const OFFSET_BOS: u32 = 0;
pub const OFFSET_EOS: u32 = 1;
pub const OFFSET_EOM: u32 = 7;
pub const OFFSET_EOT: u32 = 8;
pub const OFFSET_PAD: u32 = 18;
pub const OFFSET_MASK: u32 = 1818;

/// ggml token types (`llama_token_type`).
pub const TOKEN_TYPE_NORMAL: i32 = 1;
pub const TOKEN_TYPE_CONTROL: i32 = 3;

/// A complete vocabulary as written to `tokenizer.ggml.*`.
#[derive(Debug, Clone)]
pub struct Vocab {
    pub tokens: Vec<String>,
    pub token_types: Vec<i32>,
    pub merges: Vec<String>,
    /// Id of the first special token (= number of BPE tokens).
    pub first_special: u32,
}

impl Vocab {
    pub fn special(&self, offset: u32) -> u32 {
        self.first_special + offset
    }
}

/// GPT-2's reversible byte → printable-character map (`bytes_to_unicode`).
pub fn byte_to_char(b: u8) -> char {
    let printable = |b: u8| (33..=126).contains(&b) || (161..=172).contains(&b) || b >= 174;
    if printable(b) {
        return char::from(b);
    }
    // Non-printable bytes map to 256, 257, … in byte order.
    let rank = (0..b).filter(|&x| !printable(x)).count() as u32;
    char::from_u32(256 + rank).unwrap_or('?')
}

/// Builds `n_text` BPE tokens (256 byte tokens, then merges) and 2,048 specials.
///
/// Merges are generated deterministically, frequent-looking pieces first: letter pairs (with
/// and without a leading space `Ġ`), digit groups up to three digits (Llama-3's pre-tokenizer
/// splits numbers that way), then longer pieces grown one letter at a time. Every merge joins
/// two existing tokens into a new one, so the vocabulary is a valid BPE for any loader.
pub fn build_vocab(n_text: u32) -> Vocab {
    let n_text = n_text.max(256) as usize;
    let mut tokens: Vec<String> = (0..=255u8).map(|b| byte_to_char(b).to_string()).collect();
    let mut seen: HashSet<String> = tokens.iter().cloned().collect();
    let mut merges = Vec::new();
    let mut add = |a: &str, b: &str, tokens: &mut Vec<String>, merges: &mut Vec<String>| -> bool {
        if tokens.len() >= n_text {
            return false;
        }
        let joined = format!("{a}{b}");
        if !seen.contains(a) || !seen.contains(b) || seen.contains(&joined) {
            return true;
        }
        seen.insert(joined.clone());
        merges.push(format!("{a} {b}"));
        tokens.push(joined);
        true
    };
    let space = byte_to_char(b' ').to_string();
    let newline = byte_to_char(b'\n').to_string();
    // English letters in rough frequency order.
    let letters: Vec<String> = "etaoinshrdlcumwfgypbvkjxqz"
        .chars()
        .map(|c| c.to_string())
        .collect();
    let digits: Vec<String> = (0..10).map(|d| d.to_string()).collect();
    'fill: {
        for l in &letters {
            if !add(&space, l, &mut tokens, &mut merges) {
                break 'fill;
            }
        }
        add(&newline, &newline, &mut tokens, &mut merges);
        add(&space, &space, &mut tokens, &mut merges);
        for a in &letters {
            for b in &letters {
                if !add(a, b, &mut tokens, &mut merges) {
                    break 'fill;
                }
            }
        }
        for a in &digits {
            for b in &digits {
                if !add(a, b, &mut tokens, &mut merges) {
                    break 'fill;
                }
            }
        }
        for a in &digits {
            for b in &digits {
                for c in &digits {
                    if !add(&format!("{a}{b}"), c, &mut tokens, &mut merges) {
                        break 'fill;
                    }
                }
            }
        }
        // Capitalised starts, then grow every multi-letter token by one letter, breadth first.
        for l in &letters {
            let upper = l.to_uppercase();
            if !add(&space, &upper, &mut tokens, &mut merges) {
                break 'fill;
            }
        }
        let mut frontier = 256;
        while tokens.len() < n_text && frontier < tokens.len() {
            let base = tokens[frontier].clone();
            frontier += 1;
            if base.chars().any(|c| c.is_ascii_digit()) {
                continue;
            }
            for l in &letters {
                if !add(&base, l, &mut tokens, &mut merges) {
                    break 'fill;
                }
            }
        }
    }
    // Pad with single-use filler merges only if the letter tree ran out (tiny vocabularies
    // never reach this; it keeps any requested size valid).
    let mut filler = 0u32;
    while tokens.len() < n_text {
        let name = format!("<|filler_{filler}|>");
        filler += 1;
        tokens.push(name);
    }
    let first_special = tokens.len() as u32;
    let mut token_types = vec![TOKEN_TYPE_NORMAL; tokens.len()];
    for k in 0..N_SPECIAL {
        let name = NAMED_SPECIALS
            .iter()
            .find(|(o, _)| *o == k)
            .map(|(_, n)| n.to_string())
            .unwrap_or_else(|| format!("<|reserved_special_token_{k}|>"));
        tokens.push(name);
        token_types.push(TOKEN_TYPE_CONTROL);
    }
    Vocab {
        tokens,
        token_types,
        merges,
        first_special,
    }
}

/// A Glimmer-format chat template: `<|start|>{role header}<|message|>{body}<|eot|>`, the
/// reasoning channel addressed ` to=self` ending in `<|eom|>`, tool calls as
/// `<atem:function_calls>` blocks, the answer addressed ` to=user`, generation prompt
/// `<|start|>assistant`.
pub const CHAT_TEMPLATE: &str = r#"{{- bos_token -}}
{%- if tools -%}
<|start|>system<|message|>You may call these functions:
{{ tools | tojson }}<|eot|>
{%- endif -%}
{%- for message in messages -%}
{%- set role = message['role'] -%}
{%- if role == 'assistant' -%}
{%- if message.get('reasoning_content') -%}
<|start|>assistant to=self<|message|>{{ message['reasoning_content'] }}<|eom|>
{%- endif -%}
{%- if message.get('tool_calls') -%}
{%- for call in message['tool_calls'] -%}
{%- set fn = call['function'] if call['function'] is defined else call -%}
<|start|>assistant to={{ fn['name'] }}<|message|><atem:function_calls><atem:invoke name="{{ fn['name'] }}">
{%- if fn['arguments'] is mapping -%}
{%- for key, value in fn['arguments'] | dictsort -%}
<atem:parameter name="{{ key }}">{{ value }}</atem:parameter>
{%- endfor -%}
{%- else -%}
{{ fn['arguments'] }}
{%- endif -%}
</atem:invoke></atem:function_calls><|eom|>
{%- endfor -%}
{%- endif -%}
{%- if message['content'] -%}
<|start|>assistant to=user<|message|>{{ message['content'] }}<|eot|>
{%- endif -%}
{%- elif role == 'tool' -%}
<|start|>tool{% if message.get('name') %} from={{ message['name'] }}{% endif %}<|message|>{{ message['content'] }}<|eot|>
{%- else -%}
<|start|>{{ role }}<|message|>{{ message['content'] }}<|eot|>
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
<|start|>assistant
{%- endif -%}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_map_is_a_bijection_onto_printables() {
        let chars: HashSet<char> = (0..=255u8).map(byte_to_char).collect();
        assert_eq!(chars.len(), 256);
        assert_eq!(byte_to_char(b' '), 'Ġ');
        assert_eq!(byte_to_char(b'\n'), 'Ċ');
        assert_eq!(byte_to_char(b'A'), 'A');
    }

    #[test]
    fn vocab_has_requested_size_and_valid_merges() {
        for n in [300u32, 2000, 20000] {
            let v = build_vocab(n);
            assert_eq!(v.first_special, n);
            assert_eq!(v.tokens.len() as u32, n + N_SPECIAL);
            let set: HashSet<&String> = v.tokens.iter().collect();
            assert_eq!(set.len(), v.tokens.len(), "tokens are unique");
            for m in &v.merges {
                let (a, b) = m.split_once(' ').unwrap();
                assert!(set.contains(&a.to_string()) && set.contains(&b.to_string()));
                assert!(set.contains(&format!("{a}{b}")));
            }
            assert_eq!(v.tokens[v.special(OFFSET_EOT) as usize], "<|eot|>");
            assert_eq!(v.tokens[v.special(OFFSET_MASK) as usize], "<|mask|>");
        }
    }
}
