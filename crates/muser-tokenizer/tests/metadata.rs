//! Loading from metadata: accessors on the synthetic Glimmer vocabulary, and typed errors (no
//! panics) for every kind of bad `tokenizer.ggml.*` metadata.

mod common;

use common::{set, synth_header};
use muser_gguf::{Array, Value};
use muser_synth::Preset;
use muser_tokenizer::{Error, TokenKind, Tokenizer};

fn load_with(edit: impl FnOnce(&mut Vec<(String, Value)>)) -> Result<Tokenizer, Error> {
    Tokenizer::from_gguf(&synth_header(Preset::Tiny, edit))
}

fn strings(v: &[&str]) -> Value {
    Value::Array(Array::String(v.iter().map(|s| s.to_string()).collect()))
}

#[test]
fn glimmer_specials_at_their_real_ids() {
    let tok = Tokenizer::from_gguf(&common::header(Preset::Full30b)).unwrap();
    assert_eq!(tok.vocab_size(), 202_048);
    assert_eq!(tok.bos(), Some(200_000));
    assert_eq!(tok.eos(), Some(200_001));
    assert_eq!(tok.eom(), Some(200_007));
    assert_eq!(tok.eot(), Some(200_008));
    assert_eq!(tok.token_id("<|start|>"), Some(200_022));
    assert_eq!(tok.token_id("<|message|>"), Some(200_023));
    assert_eq!(tok.token_id("<|mask|>"), Some(201_818));
    assert_eq!(tok.stop_tokens(), vec![200_001, 200_008]);
    assert!(
        !tok.stop_tokens().contains(&200_007),
        "<|eom|> must not stop generation"
    );
    assert!(tok.is_control(200_008) && !tok.is_control(300));
    assert_eq!(tok.token_kind(200_022), Some(TokenKind::Control));
    assert_eq!(tok.token_text(200_008), Some("<|eot|>"));
    assert_eq!(tok.token_text(999_999), None);
    assert!(tok.add_bos_default());
    assert_eq!(tok.encode("", true, false), vec![200_000]);
    assert!(tok.encode("", false, true).is_empty());
    assert_eq!(tok.decode_with(&[200_008, 999_999], false), b"<|eot|>");
    assert_eq!(tok.decode_with(&[200_008], true), b"");
    fn shareable<T: Send + Sync>() {}
    shareable::<Tokenizer>();
}

#[test]
fn eot_falls_back_to_the_token_text_and_add_bos_to_true() {
    let tok = load_with(|kv| {
        set(kv, "tokenizer.ggml.eot_token_id", None);
        set(kv, "tokenizer.ggml.add_bos_token", None);
    })
    .unwrap();
    assert_eq!(tok.eot(), tok.token_id("<|eot|>"));
    assert!(tok.add_bos_default());
    let tok = load_with(|kv| set(kv, "tokenizer.ggml.add_bos_token", Some(Value::Bool(false))));
    assert!(!tok.unwrap().add_bos_default());
}

#[test]
fn accepted_pre_tokenizer_names() {
    for name in ["llama-bpe", "llama3", "llama-v3"] {
        let pre = Some(Value::String(name.into()));
        assert!(load_with(|kv| set(kv, "tokenizer.ggml.pre", pre)).is_ok());
    }
}

#[test]
fn bad_metadata_gives_typed_errors() {
    type Edit = Box<dyn FnOnce(&mut Vec<(String, Value)>)>;
    type Case = (&'static str, Edit, fn(&Error) -> bool);
    let cases: Vec<Case> = vec![
        (
            "model missing",
            Box::new(|kv| set(kv, "tokenizer.ggml.model", None)),
            |e| matches!(e, Error::MissingKey { key } if *key == "tokenizer.ggml.model"),
        ),
        (
            "model llama (SPM)",
            Box::new(|kv| {
                set(
                    kv,
                    "tokenizer.ggml.model",
                    Some(Value::String("llama".into())),
                )
            }),
            |e| matches!(e, Error::Unsupported { key, value, .. } if *key == "tokenizer.ggml.model" && value == "llama"),
        ),
        (
            // llama.cpp maps `llama4` to its GPT-4o split, a different regex.
            "pre llama4",
            Box::new(|kv| {
                set(
                    kv,
                    "tokenizer.ggml.pre",
                    Some(Value::String("llama4".into())),
                )
            }),
            |e| matches!(e, Error::Unsupported { key, value, .. } if *key == "tokenizer.ggml.pre" && value == "llama4"),
        ),
        (
            "pre missing",
            Box::new(|kv| set(kv, "tokenizer.ggml.pre", None)),
            |e| matches!(e, Error::MissingKey { .. }),
        ),
        (
            "pre not a string",
            Box::new(|kv| set(kv, "tokenizer.ggml.pre", Some(Value::U8(1)))),
            |e| matches!(e, Error::Gguf(_)),
        ),
        (
            "tokens missing",
            Box::new(|kv| set(kv, "tokenizer.ggml.tokens", None)),
            |e| matches!(e, Error::MissingKey { .. }),
        ),
        (
            "tokens not strings",
            Box::new(|kv| {
                set(
                    kv,
                    "tokenizer.ggml.tokens",
                    Some(Value::Array(Array::U32(vec![1, 2]))),
                )
            }),
            |e| matches!(e, Error::WrongType { .. }),
        ),
        (
            "duplicate token",
            Box::new(|kv| set(kv, "tokenizer.ggml.tokens", Some(strings(&["a", "b", "a"])))),
            |e| {
                matches!(
                    e,
                    Error::DuplicateToken {
                        first: 0,
                        second: 2,
                        ..
                    }
                )
            },
        ),
        (
            "token types short",
            Box::new(|kv| {
                set(
                    kv,
                    "tokenizer.ggml.token_type",
                    Some(Value::Array(Array::I32(vec![1; 3]))),
                )
            }),
            |e| matches!(e, Error::TooShort { .. }),
        ),
        (
            "token types not integers",
            Box::new(|kv| set(kv, "tokenizer.ggml.token_type", Some(strings(&["x"])))),
            |e| matches!(e, Error::WrongType { .. }),
        ),
        (
            "merges missing",
            Box::new(|kv| set(kv, "tokenizer.ggml.merges", None)),
            |e| matches!(e, Error::MissingKey { .. }),
        ),
        (
            "merge names an unknown token",
            Box::new(|kv| {
                set(
                    kv,
                    "tokenizer.ggml.merges",
                    Some(strings(&["Ġ e", "Ġ nope"])),
                )
            }),
            |e| matches!(e, Error::BadMerge { index: 1, .. }),
        ),
        (
            "merge without a space",
            Box::new(|kv| set(kv, "tokenizer.ggml.merges", Some(strings(&["ab"])))),
            |e| matches!(e, Error::BadMerge { index: 0, .. }),
        ),
        (
            "merge with a leading space only",
            Box::new(|kv| set(kv, "tokenizer.ggml.merges", Some(strings(&[" a"])))),
            |e| matches!(e, Error::BadMerge { index: 0, .. }),
        ),
        (
            "bos out of range",
            Box::new(|kv| set(kv, "tokenizer.ggml.bos_token_id", Some(Value::U32(4048)))),
            |e| {
                matches!(
                    e,
                    Error::IdOutOfRange {
                        id: 4048,
                        n_vocab: 4048,
                        ..
                    }
                )
            },
        ),
        (
            "eot negative",
            Box::new(|kv| set(kv, "tokenizer.ggml.eot_token_id", Some(Value::I32(-1)))),
            |e| matches!(e, Error::Gguf(_)),
        ),
        (
            "add_bos not a bool",
            Box::new(|kv| set(kv, "tokenizer.ggml.add_bos_token", Some(Value::U8(1)))),
            |e| matches!(e, Error::Gguf(_)),
        ),
    ];
    for (name, edit, expected) in cases {
        match load_with(edit) {
            Ok(_) => panic!("{name}: loaded"),
            Err(e) => assert!(expected(&e), "{name}: unexpected error {e:?}"),
        }
    }
}

#[test]
fn odd_but_valid_vocabularies_do_not_panic() {
    // No byte tokens at all, unknown token types, empty token text, a merge result that is
    // not a token: everything still encodes (llama.cpp's fallbacks) and decodes.
    let tok = load_with(|kv| {
        set(
            kv,
            "tokenizer.ggml.tokens",
            Some(strings(&["", "a", "b", "<|x|>"])),
        );
        set(
            kv,
            "tokenizer.ggml.token_type",
            Some(Value::Array(Array::I32(vec![0, 1, 9, 4]))),
        );
        set(kv, "tokenizer.ggml.merges", Some(strings(&["a b", "ab a"])));
        for k in ["bos", "eos", "eot", "padding"] {
            set(kv, &format!("tokenizer.ggml.{k}_token_id"), None);
        }
    })
    .unwrap();
    assert_eq!(tok.token_text(0), Some("[EMPTY_0]"));
    assert_eq!(tok.bos(), None);
    assert_eq!(tok.stop_tokens(), Vec::<u32>::new());
    // "aba" merges to the non-token "aba": llama.cpp falls back to one-byte tokens.
    assert_eq!(tok.encode("aba", true, false), vec![1, 2, 1]);
    // User-defined tokens are matched even without parse_special.
    assert_eq!(tok.encode("a<|x|>", false, false), vec![1, 3]);
    assert_eq!(tok.encode("é z", false, false), Vec::<u32>::new());
    assert_eq!(tok.decode(&[0, 1, 2, 3]), b"a<|x|>");
}
