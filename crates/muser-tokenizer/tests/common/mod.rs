//! Shared helpers: rebuilding the synthetic vocabularies the fixtures were generated from.

#![allow(dead_code)]

use muser_gguf::{parse_header, GgufBuilder, Header, Value};
use muser_synth::{tokenizer::build_vocab, Preset, SynthConfig};

/// The header of `muser synth` for a preset (metadata only, no tensors), optionally with
/// keys replaced or removed.
pub fn synth_header(preset: Preset, edit: impl FnOnce(&mut Vec<(String, Value)>)) -> Header {
    let cfg = SynthConfig::preset(preset);
    let mut b = GgufBuilder::new();
    muser_synth::metadata(&cfg, &build_vocab(cfg.n_vocab_text), &mut b).expect("metadata");
    let header = parse_header(&b.header_bytes()).expect("parse");
    let mut kvs = header.metadata.clone();
    edit(&mut kvs);
    let mut b = GgufBuilder::new();
    for (k, v) in kvs {
        b.kv(k, v).expect("kv");
    }
    parse_header(&b.header_bytes()).expect("parse")
}

pub fn set(kvs: &mut Vec<(String, Value)>, key: &str, value: Option<Value>) {
    kvs.retain(|(k, _)| k != key);
    if let Some(v) = value {
        kvs.push((key.to_string(), v));
    }
}

pub fn header(preset: Preset) -> Header {
    synth_header(preset, |_| {})
}
