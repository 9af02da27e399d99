//! `muser inspect FILE [--json]`: architecture, hyperparameters, tokenizer summary, tensor
//! table, totals per type, parameters and bits per weight. Works on any GGUF.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result};
use muser_gguf::{GgmlType, GgufFile, Header, Value};
use serde_json::{json, Value as Json};

#[derive(clap::Args)]
pub struct Args {
    /// GGUF file.
    file: PathBuf,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
    /// Omit the per-tensor table (totals are still printed).
    #[arg(long)]
    no_tensors: bool,
}

/// Metadata arrays too long to print in full; summarised instead.
const BULK_KEYS: &[&str] = &[
    "tokenizer.ggml.tokens",
    "tokenizer.ggml.token_type",
    "tokenizer.ggml.merges",
    "tokenizer.ggml.scores",
    "tokenizer.chat_template",
];

const SPECIAL_KEYS: &[(&str, &str)] = &[
    ("bos", "tokenizer.ggml.bos_token_id"),
    ("eos", "tokenizer.ggml.eos_token_id"),
    ("eot", "tokenizer.ggml.eot_token_id"),
    ("eom", "tokenizer.ggml.eom_token_id"),
    ("unk", "tokenizer.ggml.unknown_token_id"),
    ("pad", "tokenizer.ggml.padding_token_id"),
    ("sep", "tokenizer.ggml.seperator_token_id"),
    ("mask", "tokenizer.ggml.mask_token_id"),
];

struct TypeTotal {
    count: usize,
    params: u64,
    bytes: u64,
}

pub fn run(args: Args) -> Result<()> {
    let file =
        GgufFile::open(&args.file).with_context(|| format!("opening {}", args.file.display()))?;
    let report = build(&file);
    let text = if args.json {
        serde_json::to_string_pretty(&report)? + "\n"
    } else {
        render_text(&file, &report, !args.no_tensors)
    };
    {
        let mut out = std::io::stdout().lock();
        // A closed pipe (`muser inspect F | head`) is not an error worth reporting.
        match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            other => other?,
        }
    }
    Ok(())
}

fn tokenizer_summary(h: &Header) -> Json {
    let tokens = h
        .get("tokenizer.ggml.tokens")
        .and_then(Value::as_array)
        .and_then(|a| a.as_strings());
    let n_merges = h
        .get("tokenizer.ggml.merges")
        .and_then(Value::as_array)
        .map(|a| a.len());
    let mut specials = serde_json::Map::new();
    for (label, key) in SPECIAL_KEYS {
        if let Some(id) = h.get(key).and_then(Value::as_u64) {
            let text = tokens.and_then(|t| t.get(id as usize)).cloned();
            specials.insert(label.to_string(), json!({ "id": id, "text": text }));
        }
    }
    json!({
        "model": h.get("tokenizer.ggml.model").and_then(Value::as_str),
        "pre": h.get("tokenizer.ggml.pre").and_then(Value::as_str),
        "vocab_size": tokens.map(|t| t.len()),
        "merges": n_merges,
        "add_bos_token": h.get("tokenizer.ggml.add_bos_token").and_then(Value::as_bool),
        "special": specials,
        "chat_template_bytes": h.get("tokenizer.chat_template").and_then(Value::as_str).map(str::len),
    })
}

fn value_json(v: &Value) -> Json {
    match v {
        Value::String(s) => json!(s),
        Value::Bool(b) => json!(b),
        // Through the shortest decimal form, so 1e-5f32 prints as 0.00001.
        Value::F32(f) => f
            .to_string()
            .parse::<f64>()
            .map(|v| json!(v))
            .unwrap_or(Json::Null),
        Value::F64(f) => json!(f),
        Value::Array(a) => {
            if a.len() <= 64 {
                if let Some(ints) = a.to_i64_vec() {
                    return json!(ints);
                }
                if let Some(b) = a.as_bools() {
                    return json!(b);
                }
                if let Some(f) = a.as_f32s() {
                    return Json::Array(f.iter().map(|&x| value_json(&Value::F32(x))).collect());
                }
                if let Some(s) = a.as_strings() {
                    return json!(s);
                }
            }
            json!({ "array": a.element_type().name(), "len": a.len() })
        }
        other => other
            .as_i64()
            .map(|i| json!(i))
            .or_else(|| other.as_u64().map(|u| json!(u)))
            .unwrap_or(Json::Null),
    }
}

fn build(file: &GgufFile) -> Json {
    let h = file.header();
    let arch = h.architecture().unwrap_or("");
    let prefix = format!("{arch}.");
    let mut hparams = serde_json::Map::new();
    let mut other = serde_json::Map::new();
    for (k, v) in &h.metadata {
        if !arch.is_empty() && k.starts_with(&prefix) {
            hparams.insert(k[prefix.len()..].to_string(), value_json(v));
        } else if !BULK_KEYS.contains(&k.as_str()) && !k.starts_with("tokenizer.ggml.") {
            other.insert(k.clone(), value_json(v));
        }
    }
    let mut totals: BTreeMap<GgmlType, TypeTotal> = BTreeMap::new();
    let mut tensors = Vec::with_capacity(h.tensors.len());
    for t in &h.tensors {
        let e = totals.entry(t.ty).or_insert(TypeTotal {
            count: 0,
            params: 0,
            bytes: 0,
        });
        e.count += 1;
        e.params += t.n_elements();
        e.bytes += t.n_bytes;
        tensors.push(json!({
            "name": t.name, "type": t.ty.name(), "shape": t.dims,
            "bytes": t.n_bytes, "offset": t.file_offset,
        }));
    }
    let params: u64 = totals.values().map(|t| t.params).sum();
    let bytes: u64 = totals.values().map(|t| t.bytes).sum();
    let per_type: Vec<Json> = totals
        .iter()
        .map(|(ty, t)| {
            json!({ "type": ty.name(), "tensors": t.count, "params": t.params, "bytes": t.bytes,
                    "bits_per_weight": bpw(t.bytes, t.params) })
        })
        .collect();
    json!({
        "file": file.path().display().to_string(),
        "file_bytes": file.file_len(),
        "version": h.version,
        "alignment": h.alignment,
        "data_offset": h.data_start,
        "architecture": arch,
        "name": h.get("general.name").and_then(Value::as_str),
        "hyperparameters": hparams,
        "tokenizer": tokenizer_summary(h),
        "metadata": other,
        "tensors": tensors,
        "totals": {
            "tensors": h.tensors.len(), "params": params, "bytes": bytes,
            "bits_per_weight": bpw(bytes, params), "per_type": per_type,
        },
    })
}

fn bpw(bytes: u64, params: u64) -> f64 {
    if params == 0 {
        0.0
    } else {
        bytes as f64 * 8.0 / params as f64
    }
}

fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.2} {}", UNITS[u])
    }
}

fn render_text(file: &GgufFile, r: &Json, with_tensors: bool) -> String {
    let mut s = String::new();
    macro_rules! println {
        ($($t:tt)*) => {{
            let _ = writeln!(s, $($t)*);
        }};
    }
    let h = file.header();
    println!(
        "{}: GGUF v{}, {} ({} bytes), alignment {}, {} tensors, {} metadata keys",
        file.path().display(),
        h.version,
        human(file.file_len()),
        file.file_len(),
        h.alignment,
        h.tensors.len(),
        h.metadata.len()
    );
    println!(
        "architecture: {}{}",
        if r["architecture"] == "" {
            "(none)"
        } else {
            r["architecture"].as_str().unwrap_or("")
        },
        r["name"]
            .as_str()
            .map(|n| format!("   name: {n}"))
            .unwrap_or_default()
    );
    if let Some(hp) = r["hyperparameters"].as_object().filter(|m| !m.is_empty()) {
        println!("\nhyperparameters:");
        for (k, v) in hp {
            println!("  {k:<40} {v}");
        }
    }
    let tok = &r["tokenizer"];
    if !tok["model"].is_null() || !tok["vocab_size"].is_null() {
        println!("\ntokenizer:");
        println!(
            "  model {}   pre {}   vocab {}   merges {}   add_bos {}",
            tok["model"], tok["pre"], tok["vocab_size"], tok["merges"], tok["add_bos_token"]
        );
        if let Some(sp) = tok["special"].as_object() {
            let list: Vec<String> = sp
                .iter()
                .map(|(k, v)| format!("{k} {} {}", v["id"], v["text"]))
                .collect();
            println!("  special: {}", list.join(", "));
        }
        match tok["chat_template_bytes"].as_u64() {
            Some(n) => println!("  chat template: {n} bytes"),
            None => println!("  chat template: none"),
        }
    }
    if let Some(md) = r["metadata"].as_object().filter(|m| !m.is_empty()) {
        println!("\nother metadata:");
        for (k, v) in md {
            let s = v.to_string();
            let s = if s.chars().count() > 100 {
                format!("{}…", s.chars().take(99).collect::<String>())
            } else {
                s
            };
            println!("  {k:<40} {s}");
        }
    }
    if with_tensors {
        println!(
            "\n{:<40} {:<8} {:<22} {:>14} {:>14}",
            "tensor", "type", "shape", "bytes", "offset"
        );
        for t in &h.tensors {
            let shape: Vec<String> = t.dims.iter().map(u64::to_string).collect();
            println!(
                "{:<40} {:<8} {:<22} {:>14} {:>14}",
                t.name,
                t.ty.name(),
                format!("[{}]", shape.join(", ")),
                t.n_bytes,
                t.file_offset
            );
        }
    }
    println!("\ntotals per type:");
    println!(
        "  {:<8} {:>8} {:>16} {:>16} {:>8}",
        "type", "tensors", "params", "bytes", "bpw"
    );
    let totals = &r["totals"];
    for t in totals["per_type"].as_array().into_iter().flatten() {
        println!(
            "  {:<8} {:>8} {:>16} {:>16} {:>8.3}",
            t["type"].as_str().unwrap_or(""),
            t["tensors"].as_u64().unwrap_or(0),
            t["params"].as_u64().unwrap_or(0),
            t["bytes"].as_u64().unwrap_or(0),
            t["bits_per_weight"].as_f64().unwrap_or(0.0)
        );
    }
    let params = totals["params"].as_u64().unwrap_or(0);
    println!(
        "  {:<8} {:>8} {:>16} {:>16} {:>8.3}",
        "all",
        totals["tensors"].as_u64().unwrap_or(0),
        params,
        totals["bytes"].as_u64().unwrap_or(0),
        totals["bits_per_weight"].as_f64().unwrap_or(0.0)
    );
    println!(
        "\nparameters: {:.3} B ({params}), tensor data {}, {:.3} bits per weight",
        params as f64 / 1e9,
        human(totals["bytes"].as_u64().unwrap_or(0)),
        totals["bits_per_weight"].as_f64().unwrap_or(0.0)
    );
    s
}
