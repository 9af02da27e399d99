//! The tiny preset end to end: readable, deterministic across thread counts, real names and
//! shapes, both pattern encodings, optional keys, weight statistics.

use std::path::{Path, PathBuf};

use muser_gguf::{GgmlType, GgufFile};
use muser_synth::{write_model, PatternEncoding, Preset, SynthConfig, TypePlan};

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("muser-synth-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn write_with_threads(cfg: &SynthConfig, path: &Path, threads: usize) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| write_model(cfg, path, &|_, _| {})).unwrap();
}

#[test]
fn tiny_preset_is_deterministic_and_complete() {
    let cfg = SynthConfig::preset(Preset::Tiny);
    let (a, b) = (temp("a.gguf"), temp("b.gguf"));
    write_with_threads(&cfg, &a, 1);
    write_with_threads(&cfg, &b, 3);
    let (ba, bb) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert!(ba == bb, "output depends on the thread count");
    assert!(ba.len() < 8 << 20, "tiny preset is {} bytes", ba.len());

    let f = GgufFile::open(&a).unwrap();
    let h = f.header();
    assert_eq!(h.architecture(), Some("muse-glimmer"));
    assert_eq!(h.get_u64("muse-glimmer.block_count").unwrap(), Some(4));
    assert_eq!(
        h.get_u64("muse-glimmer.attention.sliding_window_pattern")
            .unwrap(),
        Some(4)
    );
    assert_eq!(
        h.get_f32("muse-glimmer.final_logit_softcapping").unwrap(),
        Some(20.0)
    );
    assert_eq!(h.get_str("tokenizer.ggml.model").unwrap(), Some("gpt2"));
    assert_eq!(h.get_str("tokenizer.ggml.pre").unwrap(), Some("llama-bpe"));
    let tokens = h.get_array("tokenizer.ggml.tokens").unwrap().unwrap();
    assert_eq!(tokens.len(), 2000 + 2048);
    assert_eq!(
        h.get_u64("tokenizer.ggml.bos_token_id").unwrap(),
        Some(2000)
    );
    assert_eq!(
        h.get_u64("tokenizer.ggml.eot_token_id").unwrap(),
        Some(2008)
    );
    assert!(h.get("tokenizer.ggml.eom_token_id").is_none());
    assert!(h
        .get_str("tokenizer.chat_template")
        .unwrap()
        .unwrap()
        .contains("<|start|>"));
    // 3 global tensors + 14 per layer.
    assert_eq!(h.tensors.len(), 3 + 4 * 14);
    let q = h.tensor("blk.1.attn_q.weight").unwrap();
    assert_eq!((q.dims.clone(), q.ty), (vec![256, 256], GgmlType::Q4_K));
    let v2 = h.tensor("blk.2.attn_v.weight").unwrap();
    assert_eq!((v2.dims.clone(), v2.ty), (vec![256, 128], GgmlType::Q6_K));
    assert_eq!(h.tensor("blk.0.attn_v.weight").unwrap().ty, GgmlType::Q4_K);
    assert_eq!(h.tensor("output.weight").unwrap().ty, GgmlType::Q6_K);
    assert_eq!(h.tensor("blk.3.attn_q_norm.weight").unwrap().dims, vec![64]);

    // Norm conventions and weight statistics.
    let get = |name: &str| {
        let info = f.tensor_info(name).unwrap();
        muser_quant::dequantize_tensor(info, f.tensor_data(info).unwrap()).unwrap()
    };
    assert!(get("blk.2.attn_q_norm.weight").iter().all(|&v| v == 3.87));
    assert!(get("blk.2.attn_k_norm.weight").iter().all(|&v| v == 1.0));
    let post = get("blk.1.post_ffw_norm.weight");
    assert!(post.iter().all(|&v| v > 0.15 && v < 0.25));
    let wq = get("blk.1.attn_q.weight");
    let std = (wq.iter().map(|v| v * v).sum::<f32>() / wq.len() as f32).sqrt();
    assert!((std - 1.0 / 16.0).abs() < 0.01, "attn_q std {std}");
    let embd = get("token_embd.weight");
    let row_rms = |r: usize| {
        let row = &embd[r * 256..(r + 1) * 256];
        (row.iter().map(|v| v * v).sum::<f32>() / 256.0).sqrt()
    };
    assert!(row_rms(96) < 0.01, "tiny embedding row");
    assert!(row_rms(95) > 0.5);
    std::fs::remove_file(&a).unwrap();
    std::fs::remove_file(&b).unwrap();
}

#[test]
fn overrides_change_keys_and_types() {
    let mut cfg = SynthConfig::preset(Preset::Tiny);
    cfg.pattern = PatternEncoding::BoolArray;
    cfg.n_layer = 5;
    cfg.softcap = None;
    cfg.rope_freq_base_swa = None;
    cfg.chat_template = false;
    cfg.types = TypePlan::uniform(GgmlType::Q8_0);
    cfg.seed = 99;
    let p = temp("c.gguf");
    write_with_threads(&cfg, &p, 2);
    let f = GgufFile::open(&p).unwrap();
    let h = f.header();
    let pattern = h
        .get_array("muse-glimmer.attention.sliding_window_pattern")
        .unwrap()
        .unwrap();
    assert_eq!(
        pattern.as_bools().unwrap(),
        &[true, true, true, false, true]
    );
    assert!(h.get("muse-glimmer.final_logit_softcapping").is_none());
    assert!(h.get("muse-glimmer.rope.freq_base_swa").is_none());
    assert!(h.get("tokenizer.chat_template").is_none());
    assert!(h
        .tensors
        .iter()
        .all(|t| t.ty == GgmlType::Q8_0 || t.ty == GgmlType::F32));
    std::fs::remove_file(&p).unwrap();
}

#[test]
fn invalid_configurations_are_refused_before_writing() {
    let mut cfg = SynthConfig::preset(Preset::Tiny);
    cfg.n_embd = 100;
    let p = temp("d.gguf");
    let err = write_model(&cfg, &p, &|_, _| {}).unwrap_err().to_string();
    assert!(err.contains("hidden = 100"), "{err}");
    assert!(!p.exists());
    let mut cfg = SynthConfig::preset(Preset::Tiny);
    cfg.n_head_kv = 3;
    assert!(write_model(&cfg, &p, &|_, _| {}).is_err());
}

#[test]
fn full_preset_geometry_matches_the_real_model() {
    let cfg = SynthConfig::preset(Preset::Full30b);
    cfg.validate().unwrap();
    let tensors = muser_synth::tensors(&cfg);
    let params: u64 = tensors.iter().map(|t| t.n_elements()).sum();
    // 27.85 B text parameters (muse-glimmer.md).
    assert!((params as f64 / 1e9 - 27.85).abs() < 0.01, "{params}");
    let bytes: u64 = tensors
        .iter()
        .map(|t| t.ty.bytes_for(t.n_elements()).unwrap())
        .sum();
    // Meta's Q4_K_M file holds 16.76 GB; the same llama.cpp type rule lands within 2 %.
    assert!((bytes as f64 / 16.756e9 - 1.0).abs() < 0.02, "{bytes}");
    assert_eq!(cfg.n_vocab(), 202_048);
    let sliding: Vec<u32> = (0..52).filter(|&l| !cfg.is_sliding(l)).collect();
    assert_eq!(sliding, (0..13).map(|i| 4 * i + 3).collect::<Vec<_>>());
}
