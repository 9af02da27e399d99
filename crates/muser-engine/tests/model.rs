//! Model description from GGUF (keys, fallbacks, refusals) and the oracle's basic invariants
//! on synthetic files.

use std::path::{Path, PathBuf};

use muser_engine::{Backend, Cpu, CpuRef, Error, Glimmer, GlimmerConfig, LogitsFor};
use muser_gguf::{GgmlType, GgufBuilder, GgufFile, Value};
use muser_synth::{PatternEncoding, Preset, SynthConfig, TypePlan};

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("muser-engine-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn small() -> SynthConfig {
    let mut c = SynthConfig::preset(Preset::Tiny);
    c.n_layer = 5;
    c.sliding_window = 5;
    c.n_vocab_text = 300;
    c
}

fn write(cfg: &SynthConfig, name: &str) -> PathBuf {
    let p = temp(name);
    muser_synth::write_model(cfg, &p, &|_, _| {}).unwrap();
    p
}

fn header(path: &Path) -> GlimmerConfig {
    GlimmerConfig::from_header(GgufFile::open(path).unwrap().header()).unwrap()
}

#[test]
fn description_reads_both_patterns_and_fallbacks() {
    let mut c = small();
    let scalar = header(&write(&c, "scalar.gguf"));
    assert_eq!(scalar.sliding, vec![true, true, true, false, true]);
    assert_eq!(scalar.softcap, 20.0);
    assert_eq!(scalar.rope_freq_base_swa, 10000.0);
    assert_eq!(scalar.post_norm_eps, 1e-8);
    assert_eq!(
        (scalar.n_head, scalar.n_head_kv, scalar.head_dim),
        (4, 2, 64)
    );
    assert_eq!(scalar.n_vocab, 300 + 2048);
    c.pattern = PatternEncoding::BoolArray;
    c.softcap = None;
    c.rope_freq_base_swa = None;
    let boolean = header(&write(&c, "bool.gguf"));
    assert_eq!(boolean.sliding, scalar.sliding);
    assert_eq!(boolean.softcap, 30.0, "llama.cpp's fallback");
    assert_eq!(boolean.rope_freq_base_swa, boolean.rope_freq_base);
}

/// Rewrites the metadata of a synthetic file through `edit` (tensors unchanged).
fn edited(src: &Path, name: &str, edit: impl Fn(&str, &Value) -> Option<Value>) -> PathBuf {
    let f = GgufFile::open(src).unwrap();
    let mut b = GgufBuilder::new();
    for (k, v) in &f.header().metadata {
        if let Some(v) = edit(k, v) {
            b.kv(k.clone(), v).unwrap();
        }
    }
    let mut datas = Vec::new();
    for t in &f.header().tensors {
        b.tensor(t.name.clone(), &t.dims, t.ty).unwrap();
        datas.push(f.tensor_data(t).unwrap());
    }
    let p = temp(name);
    std::fs::write(&p, b.write_all(Vec::new(), &datas).unwrap()).unwrap();
    p
}

#[test]
fn bad_descriptions_are_refused_with_the_key() {
    let src = write(&small(), "base.gguf");
    let open = |p: &Path| Glimmer::open(p, Box::new(CpuRef::default())).err().unwrap();
    let p = edited(&src, "nokey.gguf", |k, v| {
        (k != "muse-glimmer.logit_scale").then(|| v.clone())
    });
    assert!(open(&p).to_string().contains("muse-glimmer.logit_scale"));
    let p = edited(&src, "pattern.gguf", |k, v| {
        if k == "muse-glimmer.attention.sliding_window_pattern" {
            Some(Value::Array(muser_gguf::Array::Bool(vec![true; 3])))
        } else {
            Some(v.clone())
        }
    });
    let e = open(&p).to_string();
    assert!(
        e.contains("sliding_window_pattern") && e.contains("5 entries"),
        "{e}"
    );
    let p = edited(&src, "pattern_str.gguf", |k, v| {
        if k == "muse-glimmer.attention.sliding_window_pattern" {
            Some(Value::String("4".into()))
        } else {
            Some(v.clone())
        }
    });
    assert!(open(&p).to_string().contains("sliding_window_pattern"));
    let p = edited(&src, "heads.gguf", |k, v| {
        if k == "muse-glimmer.attention.head_count" {
            Some(Value::U32(8))
        } else {
            Some(v.clone())
        }
    });
    let e = open(&p).to_string();
    assert!(
        e.contains("blk.0.attn_q.weight") && e.contains("expected shape"),
        "{e}"
    );
    let p = edited(&src, "arch.gguf", |k, v| {
        if k == "general.architecture" {
            Some(Value::String("llama".into()))
        } else {
            Some(v.clone())
        }
    });
    assert!(matches!(
        Glimmer::open(&p, Box::new(CpuRef::default())),
        Err(Error::WrongArchitecture { .. })
    ));
}

#[test]
fn unsupported_types_and_fused_qkv_are_refused_by_name() {
    let src = write(&small(), "types.gguf");
    let f = GgufFile::open(&src).unwrap();
    let mut b = GgufBuilder::new();
    for (k, v) in &f.header().metadata {
        b.kv(k.clone(), v.clone()).unwrap();
    }
    let mut datas: Vec<Vec<u8>> = Vec::new();
    for t in &f.header().tensors {
        if t.name == "blk.1.ffn_up.weight" {
            b.tensor(t.name.clone(), &t.dims, GgmlType::IQ2_XXS)
                .unwrap();
            let n = GgmlType::IQ2_XXS.bytes_for(t.n_elements()).unwrap();
            datas.push(vec![0u8; n as usize]);
        } else {
            b.tensor(t.name.clone(), &t.dims, t.ty).unwrap();
            datas.push(f.tensor_data(t).unwrap().to_vec());
        }
    }
    b.tensor("blk.0.attn_qkv.weight", &[256, 512], GgmlType::F32)
        .unwrap();
    datas.push(vec![0u8; 256 * 512 * 4]);
    let refs: Vec<&[u8]> = datas.iter().map(|d| d.as_slice()).collect();
    let p = temp("iq2.gguf");
    std::fs::write(&p, b.clone().write_all(Vec::new(), &refs).unwrap()).unwrap();
    let e = Glimmer::open(&p, Box::new(CpuRef::default()))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("blk.0.attn_qkv.weight"), "{e}");
}

#[test]
fn oracle_prefill_equals_token_by_token_decode() {
    let mut c = small();
    c.types = TypePlan::uniform(GgmlType::Q8_0);
    let p = write(&c, "prefill.gguf");
    prefill_equals_decode(&p, Box::new(CpuRef::default()));
}

/// The fast path is batch-invariant too: a row's logits do not depend on the batch.
#[test]
fn cpu_prefill_equals_token_by_token_decode() {
    let p = write(&small(), "prefill_cpu.gguf");
    prefill_equals_decode(&p, Box::new(Cpu::new(None).unwrap()));
}

fn prefill_equals_decode(p: &Path, backend: Box<dyn Backend>) {
    let m = Glimmer::open(p, backend).unwrap();
    let tokens: Vec<u32> = (0..12).map(|i| (i * 37 + 5) % 2348).collect();
    let mut kv = m.new_cache(64, 0);
    let all = m.forward(&mut kv, &tokens, LogitsFor::All).unwrap();
    let n_vocab = m.cfg.n_vocab;
    assert_eq!(all.len(), 12 * n_vocab);
    assert!(all.iter().all(|v| v.is_finite()));
    let mut kv2 = m.new_cache(64, 0);
    for (t, &tok) in tokens.iter().enumerate() {
        let l = m.forward(&mut kv2, &[tok], LogitsFor::Last).unwrap();
        assert!(
            l == all[t * n_vocab..(t + 1) * n_vocab],
            "position {t}: decode differs from prefill"
        );
    }
    // Logits are spread, bounded by the softcap.
    let last = &all[11 * n_vocab..];
    let max = last.iter().copied().fold(f32::MIN, f32::max);
    let min = last.iter().copied().fold(f32::MAX, f32::min);
    assert!(max - min > 0.5 && max < 20.0 && min > -20.0, "{min} {max}");
    // Chunked prefill (5 + 7) equals one prefill.
    let mut kv3 = m.new_cache(64, 0);
    m.forward(&mut kv3, &tokens[..5], LogitsFor::Last).unwrap();
    let l = m.forward(&mut kv3, &tokens[5..], LogitsFor::All).unwrap();
    assert!(l == all[5 * n_vocab..]);
    // Out-of-range token ids are refused.
    let mut kv4 = m.new_cache(64, 0);
    assert!(matches!(
        m.forward(&mut kv4, &[n_vocab as u32], LogitsFor::Last),
        Err(Error::TokenOutOfRange { .. })
    ));
}
