//! In-process handler tests: every endpoint through the router on a small synthetic model,
//! streaming and not, seeds, stop strings, logprobs, usage, and OpenAI-style error bodies.

use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use muser_engine::sched::SchedulerConfig;
use muser_engine::{Cpu, Glimmer};
use muser_server::{router, AppState};
use serde_json::{json, Value};
use tower::ServiceExt;

fn model_path() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("muser-server-api-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("tiny.gguf");
    if !p.exists() {
        let mut c = muser_synth::SynthConfig::preset(muser_synth::Preset::Tiny);
        c.n_layer = 2;
        let tmp = dir.join(format!("{:?}.tmp", std::thread::current().id()));
        muser_synth::write_model(&c, &tmp, &|_, _| {}).unwrap();
        std::fs::rename(&tmp, &p).unwrap();
    }
    p
}

fn state(sched: SchedulerConfig) -> Arc<AppState> {
    let m = Glimmer::open(model_path(), Box::new(Cpu::new(Some(1)).unwrap())).unwrap();
    Arc::new(AppState::new(Arc::new(m), "tiny".into(), "cpu".into(), sched).unwrap())
}

fn small() -> SchedulerConfig {
    SchedulerConfig {
        context: 256,
        max_sequences: 4,
        queue_size: 8,
        ..SchedulerConfig::default()
    }
}

async fn call(
    s: &Arc<AppState>,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Vec<u8>, Option<String>) {
    let req = Request::builder().method(method).uri(path);
    let req = match body {
        Some(b) => req
            .header("content-type", "application/json")
            .body(Body::from(b.to_string())),
        None => req.body(Body::empty()),
    }
    .unwrap();
    let r = router(s.clone()).oneshot(req).await.unwrap();
    let status = r.status();
    let retry = r
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    let bytes = r.into_body().collect().await.unwrap().to_bytes().to_vec();
    (status, bytes, retry)
}

async fn post(s: &Arc<AppState>, path: &str, body: Value) -> (StatusCode, Value) {
    let (st, b, _) = call(s, "POST", path, Some(body)).await;
    (st, serde_json::from_slice(&b).unwrap_or(Value::Null))
}

/// The `data:` payloads of an SSE body.
fn sse(bytes: &[u8]) -> Vec<String> {
    String::from_utf8(bytes.to_vec())
        .unwrap()
        .split("\n\n")
        .filter_map(|e| e.trim().strip_prefix("data: ").map(str::to_string))
        .collect()
}

fn chat(extra: Value) -> Value {
    let mut b = json!({"messages": [{"role": "system", "content": "Be brief."},
                                    {"role": "user", "content": "Hello there"}],
                       "max_tokens": 8, "seed": 7});
    for (k, v) in extra.as_object().unwrap() {
        b[k] = v.clone();
    }
    b
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_non_streaming_and_streaming_agree() {
    let s = state(small());
    let (st, a) = post(&s, "/v1/chat/completions", chat(json!({}))).await;
    assert_eq!(st, StatusCode::OK, "{a}");
    assert_eq!(a["object"], "chat.completion");
    assert_eq!(a["choices"][0]["message"]["role"], "assistant");
    assert_eq!(a["choices"][0]["finish_reason"], "length");
    let u = &a["usage"];
    assert_eq!(u["completion_tokens"], 8);
    assert_eq!(
        u["total_tokens"].as_u64().unwrap(),
        u["prompt_tokens"].as_u64().unwrap() + 8
    );
    // Same seed, same answer; streamed, the deltas add up to it.
    let (_, b) = post(&s, "/v1/chat/completions", chat(json!({}))).await;
    assert_eq!(a["choices"][0]["message"], b["choices"][0]["message"]);
    let (st, body, _) = call(
        &s,
        "POST",
        "/v1/chat/completions",
        Some(chat(
            json!({"stream": true, "stream_options": {"include_usage": true}}),
        )),
    )
    .await;
    assert_eq!(st, StatusCode::OK);
    let events = sse(&body);
    assert_eq!(events.last().unwrap(), "[DONE]");
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    let msg = &a["choices"][0]["message"];
    let whole = msg["content"].as_str().unwrap_or("").to_string()
        + msg["reasoning_content"].as_str().unwrap_or("");
    assert_eq!(
        text,
        msg["content"].as_str().unwrap_or(""),
        "whole: {whole}"
    );
    let usage = chunks.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"], a["usage"]);
    let fin = &chunks[chunks.len() - 2];
    assert_eq!(fin["choices"][0]["finish_reason"], "length");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logprobs_in_chat_and_completions() {
    let s = state(small());
    let (st, a) = post(
        &s,
        "/v1/chat/completions",
        chat(json!({"logprobs": true, "top_logprobs": 3})),
    )
    .await;
    assert_eq!(st, StatusCode::OK);
    let content = a["choices"][0]["logprobs"]["content"].as_array().unwrap();
    assert_eq!(content.len(), 8);
    for e in content {
        let lp = e["logprob"].as_f64().unwrap();
        assert!(lp <= 0.0);
        let top = e["top_logprobs"].as_array().unwrap();
        assert_eq!(top.len(), 3);
        assert!(top[0]["logprob"].as_f64().unwrap() >= lp - 1e-6);
        assert!(top[0]["logprob"].as_f64().unwrap() >= top[2]["logprob"].as_f64().unwrap());
        assert!(e["bytes"].is_array());
    }
    let (st, c) = post(
        &s,
        "/v1/completions",
        json!({"prompt": "Once upon", "max_tokens": 5, "logprobs": 2, "seed": 1}),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{c}");
    let lp = &c["choices"][0]["logprobs"];
    assert_eq!(lp["tokens"].as_array().unwrap().len(), 5);
    assert_eq!(lp["token_logprobs"].as_array().unwrap().len(), 5);
    assert_eq!(lp["top_logprobs"][0].as_object().unwrap().len(), 2);
    // top_logprobs without logprobs is refused.
    let (st, e) = post(&s, "/v1/chat/completions", chat(json!({"top_logprobs": 2}))).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert_eq!(e["error"]["param"], "top_logprobs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_stop_strings_and_llama_endpoints() {
    let s = state(small());
    let base = json!({"prompt": "The quick brown fox", "max_tokens": 40, "temperature": 0.0});
    let (st, full) = post(&s, "/v1/completions", base.clone()).await;
    assert_eq!(st, StatusCode::OK, "{full}");
    let text = full["choices"][0]["text"].as_str().unwrap().to_string();
    assert!(text.chars().count() > 6, "greedy text too short: {text:?}");
    // Stop at a piece from the middle of the greedy text: the output ends right before it.
    let chars: Vec<char> = text.chars().collect();
    let stop: String = chars[chars.len() / 2..chars.len() / 2 + 2].iter().collect();
    let cut = &text[..text.find(&stop).unwrap()];
    let mut with_stop = base.clone();
    with_stop["stop"] = json!([stop]);
    let (_, c) = post(&s, "/v1/completions", with_stop.clone()).await;
    assert_eq!(c["choices"][0]["text"], cut);
    assert_eq!(c["choices"][0]["finish_reason"], "stop");
    // Streamed with the stop string: the same text.
    with_stop["stream"] = json!(true);
    let (_, body, _) = call(&s, "POST", "/v1/completions", Some(with_stop)).await;
    let ev = sse(&body);
    assert_eq!(ev.last().unwrap(), "[DONE]");
    let streamed: String = ev[..ev.len() - 1]
        .iter()
        .map(|e| serde_json::from_str::<Value>(e).unwrap())
        .filter_map(|c| c["choices"][0]["text"].as_str().map(str::to_string))
        .collect();
    assert_eq!(streamed, cut);
    // llama-server's /completion, with the same greedy settings.
    let (st, l) = post(
        &s,
        "/completion",
        json!({"prompt": "The quick brown fox", "n_predict": 40, "temperature": 0.0}),
    )
    .await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(l["content"], text.as_str());
    assert_eq!(l["tokens_predicted"], 40);
    assert_eq!(l["stop_type"], "limit");
    let (_, body, _) = call(
        &s,
        "POST",
        "/completion",
        Some(json!({"prompt": "The quick brown fox", "n_predict": 4, "temperature": 0.0, "stream": true})),
    )
    .await;
    let ev: Vec<Value> = sse(&body)
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    assert_eq!(ev.last().unwrap()["stop"], true);
    assert_eq!(ev.iter().filter(|e| e["stop"] == false).count(), 4);
    // tokenize / detokenize round trip.
    let (_, t) = post(
        &s,
        "/tokenize",
        json!({"content": "Hello world", "with_pieces": true}),
    )
    .await;
    let ids: Vec<u32> = t["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_u64().unwrap() as u32)
        .collect();
    let (_, d) = post(&s, "/detokenize", json!({ "tokens": ids })).await;
    assert_eq!(d["content"], "Hello world");
    let (st, e) = post(&s, "/detokenize", json!({"tokens": [99999999]})).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert!(e["error"]["message"].as_str().unwrap().contains("99999999"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_openai_error_bodies() {
    let s = state(small());
    let cases = [
        ("/v1/chat/completions", json!("not an object"), None),
        (
            "/v1/chat/completions",
            chat(json!({"max_tokens": "many"})),
            Some("max_tokens"),
        ),
        (
            "/v1/chat/completions",
            chat(json!({"temperature": 7})),
            Some("temperature"),
        ),
        ("/v1/chat/completions", chat(json!({"n": 3})), Some("n")),
        (
            "/v1/chat/completions",
            chat(json!({"messages": []})),
            Some("messages"),
        ),
        (
            "/v1/chat/completions",
            chat(json!({"messages": [{"role": "wizard", "content": "x"}]})),
            Some("messages[0].role"),
        ),
        (
            "/v1/chat/completions",
            chat(json!({"messages": [{"role": "user", "content": 5}]})),
            Some("messages[0].content"),
        ),
        (
            "/v1/chat/completions",
            chat(json!({"tools": [{"type": "retrieval"}]})),
            Some("tools[0]"),
        ),
        (
            "/v1/chat/completions",
            chat(json!({"tool_choice": "sometimes"})),
            Some("tool_choice"),
        ),
        (
            "/v1/chat/completions",
            chat(json!({"response_format": {"type": "yaml"}})),
            Some("response_format"),
        ),
        (
            "/v1/chat/completions",
            chat(json!({"logit_bias": {"5": 1.0}})),
            Some("logit_bias"),
        ),
        (
            "/v1/chat/completions",
            chat(json!({"stream_options": {"include_usage": true}})),
            Some("stream_options"),
        ),
        (
            "/v1/completions",
            json!({"prompt": "x", "echo": true}),
            Some("echo"),
        ),
        (
            "/v1/completions",
            json!({"prompt": ["a", "b"]}),
            Some("prompt"),
        ),
        (
            "/v1/completions",
            json!({"prompt": [1, 2, 999999]}),
            Some("prompt"),
        ),
        ("/v1/completions", json!({"max_tokens": 3}), None),
        (
            "/completion",
            json!({"prompt": "x", "n_predict": -5}),
            Some("n_predict"),
        ),
    ];
    for (path, body, param) in cases {
        let (st, e) = post(&s, path, body.clone()).await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{path} {body}: {e}");
        assert_eq!(e["error"]["type"], "invalid_request_error", "{e}");
        assert!(e["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()));
        if let Some(p) = param {
            assert_eq!(e["error"]["param"], p, "{body}: {e}");
        }
    }
    // Malformed JSON.
    let req = Request::builder()
        .method("POST")
        .uri("/v1/chat/completions")
        .body(Body::from("{\"messages\": [}"))
        .unwrap();
    let r = router(s.clone()).oneshot(req).await.unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let b: Value =
        serde_json::from_slice(&r.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert!(b["error"]["message"]
        .as_str()
        .unwrap()
        .contains("not valid JSON"));
    // A prompt longer than the context.
    let long = "word ".repeat(400);
    let (st, e) = post(&s, "/v1/completions", json!({ "prompt": long })).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert_eq!(e["error"]["code"], "context_length_exceeded");
    // Unknown route.
    let (st, b, _) = call(&s, "GET", "/v2/nothing", None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    assert!(String::from_utf8(b).unwrap().contains("no route"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_is_503_with_retry_after_and_metrics_count_it() {
    let s = state(SchedulerConfig {
        context: 512,
        max_sequences: 1,
        queue_size: 1,
        ..SchedulerConfig::default()
    });
    let body = json!({"prompt": "Count slowly", "max_tokens": 300, "temperature": 0.0});
    let calls: Vec<_> = (0..6)
        .map(|_| {
            let s = s.clone();
            let b = body.clone();
            tokio::spawn(async move { call(&s, "POST", "/v1/completions", Some(b)).await })
        })
        .collect();
    let mut ok = 0;
    let mut refused = 0;
    for c in calls {
        let (st, b, retry) = c.await.unwrap();
        match st {
            StatusCode::OK => ok += 1,
            StatusCode::SERVICE_UNAVAILABLE => {
                refused += 1;
                assert_eq!(retry.as_deref(), Some("1"));
                let e: Value = serde_json::from_slice(&b).unwrap();
                assert!(e["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("queue is full"));
            }
            other => panic!("{other}"),
        }
    }
    assert!(ok >= 1 && refused >= 1, "ok {ok} refused {refused}");
    // The scheduler updates its gauges after the step that ended the last sequence.
    let mut m = String::new();
    for _ in 0..200 {
        let (st, body, _) = call(&s, "GET", "/metrics", None).await;
        assert_eq!(st, StatusCode::OK);
        m = String::from_utf8(body).unwrap();
        if m.contains("muser_kv_positions 0\n") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(
        m.contains(&format!(
            "muser_requests_total{{endpoint=\"/v1/completions\",status=\"503\"}} {refused}"
        )),
        "{m}"
    );
    assert!(m.contains(&format!("muser_time_to_first_token_seconds_count {ok}")));
    assert!(m.contains("muser_kv_positions 0\n"));
    assert!(m.contains("muser_inter_token_latency_seconds_bucket{le=\"+Inf\"}"));
    // JSON mode: the conversation must ask for JSON; an answer that is not JSON is counted.
    let (st, e) = post(
        &s,
        "/v1/chat/completions",
        chat(json!({"response_format": {"type": "json_object"}})),
    )
    .await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert_eq!(e["error"]["param"], "messages");
    let ask = json!({"messages": [{"role": "user", "content": "Answer in JSON"}], "max_tokens": 3,
                     "response_format": {"type": "json_object"}});
    let (st, a) = post(&s, "/v1/chat/completions", ask).await;
    assert_eq!(st, StatusCode::OK);
    // The random model's answer is rarely JSON (a bare number is): count what it was.
    let content = a["choices"][0]["message"]["content"].as_str().unwrap_or("");
    let invalid = u32::from(serde_json::from_str::<Value>(content).is_err());
    let (_, m, _) = call(&s, "GET", "/metrics", None).await;
    let m = String::from_utf8(m).unwrap();
    assert!(
        m.contains(&format!("muser_response_format_invalid_total {invalid}\n")),
        "{content:?} {m}"
    );
    let (_, h, _) = call(&s, "GET", "/health", None).await;
    assert_eq!(serde_json::from_slice::<Value>(&h).unwrap()["status"], "ok");
    let (_, models, _) = call(&s, "GET", "/v1/models", None).await;
    let models: Value = serde_json::from_slice(&models).unwrap();
    assert_eq!(models["data"][0]["id"], "tiny");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_bodies_never_get_a_server_error() {
    let s = state(small());
    let bodies = [
        json!({}),
        json!(null),
        json!([1, 2, 3]),
        json!({"prompt": []}),
        json!({"prompt": ""}),
        json!({"prompt": "x", "max_tokens": -1}),
        json!({"prompt": "x", "max_tokens": 1e30}),
        json!({"prompt": "x", "seed": 1e30}),
        json!({"prompt": "x", "top_k": -4}),
        json!({"prompt": "x", "stop": [1, 2]}),
        json!({"prompt": "x", "stop": ""}),
        json!({"prompt": "x", "stream": "yes"}),
        json!({"prompt": "\u{0}\u{ffff}😀", "max_tokens": 2}),
        json!({"messages": [{"role": "user"}], "max_tokens": 2}),
        json!({"messages": [{"role": "user", "content": null}], "max_tokens": 2}),
        json!({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}),
        json!({"messages": [{"role": "assistant", "tool_calls": [{"function": {}}]}]}),
        json!({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{bad"}}]}], "max_tokens": 2}),
        json!({"messages": "hello"}),
        json!({"messages": [{"role": "user", "content": "x"}], "tools": "all"}),
        json!({"content": 5}),
        json!({"tokens": [-1]}),
    ];
    for path in [
        "/v1/chat/completions",
        "/v1/completions",
        "/completion",
        "/tokenize",
        "/detokenize",
    ] {
        for b in &bodies {
            let (st, body, _) = call(&s, "POST", path, Some(b.clone())).await;
            assert!(
                st.as_u16() < 500,
                "{path} {b}: {st} {}",
                String::from_utf8_lossy(&body)
            );
            if !st.is_success() {
                let e: Value = serde_json::from_slice(&body).unwrap();
                assert!(e["error"]["message"].is_string(), "{path} {b}: {e}");
            }
        }
    }
    let deep = "[".repeat(100_000);
    let req = Request::builder()
        .method("POST")
        .uri("/v1/completions")
        .body(Body::from(deep))
        .unwrap();
    let r = router(s.clone()).oneshot(req).await.unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_key_is_required_when_configured() {
    let m = Glimmer::open(model_path(), Box::new(Cpu::new(Some(1)).unwrap())).unwrap();
    let mut st = AppState::new(Arc::new(m), "tiny".into(), "cpu".into(), small()).unwrap();
    st.api_key = Some("sesame".into());
    let s = Arc::new(st);
    let (status, body, _) = call(&s, "GET", "/v1/models", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let e: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(e["error"]["code"], "invalid_api_key");
    let (status, _, _) = call(&s, "GET", "/health", None).await;
    assert_eq!(status, StatusCode::OK);
    let req = Request::builder()
        .uri("/v1/models")
        .header("authorization", "Bearer sesame")
        .body(Body::empty())
        .unwrap();
    let r = router(s.clone()).oneshot(req).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
}
