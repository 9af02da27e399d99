//! `POST /v1/chat/completions`: messages rendered with the GGUF's chat template, the output's
//! channels split into `reasoning_content`, `tool_calls` and `content`; streaming (SSE chunks)
//! or one response; logprobs; usage.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use muser_engine::sched::{FinishReason, SeqEvent};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::constrain::JsonAnswer;
use crate::error::{parse_json, ApiError};
use crate::gen::{ChatAssembler, Delta, GenParams, Generation};
use crate::params::{new_id, now_secs, Checked, Common};
use crate::{logprob_entry, sse, AppState};

#[derive(Debug, Deserialize)]
pub struct ChatRequest {
    /// Parsed separately from the same body (so that errors name their field).
    #[serde(skip)]
    pub common: Common,
    pub messages: Vec<InMessage>,
    pub logprobs: Option<bool>,
    pub top_logprobs: Option<u32>,
    pub tools: Option<Vec<Value>>,
    pub tool_choice: Option<Value>,
    pub response_format: Option<Value>,
    /// Accepted; calls are returned as the model makes them.
    #[allow(dead_code)]
    pub parallel_tool_calls: Option<bool>,
}

#[derive(Debug, Deserialize)]
pub struct InMessage {
    pub role: String,
    pub content: Option<Content>,
    pub name: Option<String>,
    pub tool_calls: Option<Vec<Value>>,
    pub tool_call_id: Option<String>,
    pub reasoning_content: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<Part>),
}

#[derive(Debug, Deserialize)]
pub struct Part {
    #[serde(rename = "type")]
    pub kind: String,
    pub text: Option<String>,
}

/// The template's view of the conversation: JSON messages, and the tools to offer.
fn template_messages(req: &ChatRequest) -> Result<Vec<Value>, ApiError> {
    let mut out = Vec::new();
    // Tool names by call id, so a `tool` message can say which function answered.
    let mut call_names: Map<String, Value> = Map::new();
    for (i, m) in req.messages.iter().enumerate() {
        let at = |f: &str| format!("messages[{i}].{f}");
        let role = match m.role.as_str() {
            "developer" => "system",
            r @ ("system" | "user" | "assistant" | "tool") => r,
            other => {
                return Err(ApiError::param(
                    &at("role"),
                    format!("unknown role {other:?} (system, developer, user, assistant, tool)"),
                ))
            }
        };
        let content = match &m.content {
            None => String::new(),
            Some(Content::Text(t)) => t.clone(),
            Some(Content::Parts(parts)) => {
                let mut s = String::new();
                for p in parts {
                    match (p.kind.as_str(), &p.text) {
                        ("text", Some(t)) => s.push_str(t),
                        (kind, _) => {
                            return Err(ApiError::unsupported(
                                &at("content"),
                                &format!("content part type {kind:?}"),
                            ))
                        }
                    }
                }
                s
            }
        };
        let mut msg = Map::new();
        msg.insert("role".into(), role.into());
        msg.insert("content".into(), content.into());
        if let Some(r) = &m.reasoning_content {
            msg.insert("reasoning_content".into(), r.clone().into());
        }
        if let Some(calls) = &m.tool_calls {
            let mut fixed = Vec::new();
            for (j, c) in calls.iter().enumerate() {
                let f = c.get("function").unwrap_or(c);
                let Some(name) = f.get("name").and_then(Value::as_str) else {
                    return Err(ApiError::param(
                        &at(&format!("tool_calls[{j}].function.name")),
                        "a tool call needs a function name",
                    ));
                };
                // Templates expect a mapping; OpenAI sends a JSON string.
                let args = match f.get("arguments") {
                    Some(Value::String(s)) => {
                        serde_json::from_str(s).unwrap_or(Value::String(s.clone()))
                    }
                    Some(v) => v.clone(),
                    None => json!({}),
                };
                if let Some(id) = c.get("id").and_then(Value::as_str) {
                    call_names.insert(id.to_string(), name.into());
                }
                fixed.push(json!({"id": c.get("id"), "type": "function",
                    "function": {"name": name, "arguments": args}}));
            }
            msg.insert("tool_calls".into(), fixed.into());
        }
        let name = m.name.clone().map(Value::from).or_else(|| {
            m.tool_call_id
                .as_ref()
                .and_then(|id| call_names.get(id).cloned())
        });
        if let Some(n) = name {
            msg.insert("name".into(), n);
        }
        out.push(Value::Object(msg));
    }
    if out.is_empty() {
        return Err(ApiError::param("messages", "messages must not be empty"));
    }
    Ok(out)
}

/// Checks `tools`, `tool_choice` and `response_format`; the tools the template should see.
fn check_tools(req: &ChatRequest) -> Result<Option<Value>, ApiError> {
    let tools = req.tools.clone().unwrap_or_default();
    for (i, t) in tools.iter().enumerate() {
        let ok = t.get("type").and_then(Value::as_str) == Some("function")
            && t.pointer("/function/name").is_some_and(Value::is_string);
        if !ok {
            return Err(ApiError::param(
                &format!("tools[{i}]"),
                "each tool must be {\"type\": \"function\", \"function\": {\"name\": …}}",
            ));
        }
    }
    let choice_ok = match &req.tool_choice {
        None => true,
        Some(Value::String(s)) => matches!(s.as_str(), "none" | "auto" | "required"),
        Some(v) => {
            v.get("type").and_then(Value::as_str) == Some("function")
                && v.pointer("/function/name").is_some_and(Value::is_string)
        }
    };
    if !choice_ok {
        return Err(ApiError::param(
            "tool_choice",
            "tool_choice must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": …}}",
        ));
    }
    if let Some(rf) = &req.response_format {
        let kind = rf.get("type").and_then(Value::as_str);
        let ok = match kind {
            Some("text" | "json_object") => true,
            Some("json_schema") => rf.get("json_schema").is_some_and(|s| {
                s.get("name").is_some_and(Value::is_string)
                    && s.get("schema").is_none_or(Value::is_object)
            }),
            _ => false,
        };
        if !ok {
            return Err(ApiError::param(
                "response_format",
                "response_format must be {\"type\": \"text\"}, {\"type\": \"json_object\"} or {\"type\": \"json_schema\", \"json_schema\": {\"name\": …, \"schema\": {…}}}",
            ));
        }
    }
    // As OpenAI: JSON mode needs the conversation itself to ask for JSON (the answer channel is
    // then constrained to a JSON object and checked after generation).
    if req
        .response_format
        .as_ref()
        .and_then(|r| r.get("type"))
        .and_then(Value::as_str)
        == Some("json_object")
    {
        let asks = req.messages.iter().any(|m| match &m.content {
            Some(Content::Text(t)) => t.to_lowercase().contains("json"),
            Some(Content::Parts(p)) => p.iter().any(|p| {
                p.text
                    .as_ref()
                    .is_some_and(|t| t.to_lowercase().contains("json"))
            }),
            None => false,
        });
        if !asks {
            return Err(ApiError::param(
                "messages",
                "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'",
            ));
        }
    }
    let none = req.tool_choice.as_ref().and_then(Value::as_str) == Some("none");
    Ok((!tools.is_empty() && !none).then(|| Value::Array(tools)))
}

/// Renders and tokenizes the conversation; returns it with the checked options.
fn prepare(
    state: &AppState,
    req: &ChatRequest,
) -> Result<(Vec<u32>, Checked, Option<usize>), ApiError> {
    let checked = req.common.check()?;
    let logprobs = match (req.logprobs, req.top_logprobs) {
        (Some(true), n) => {
            let n = n.unwrap_or(0);
            if n > 20 {
                return Err(ApiError::param(
                    "top_logprobs",
                    "top_logprobs must be at most 20",
                ));
            }
            Some(n as usize)
        }
        (_, Some(_)) => {
            return Err(ApiError::param(
                "top_logprobs",
                "top_logprobs needs logprobs: true",
            ))
        }
        _ => None,
    };
    let tools = check_tools(req)?;
    let messages = template_messages(req)?;
    let template = state.template.as_ref().ok_or_else(|| {
        ApiError::bad_request("this model file has no chat template; use /v1/completions")
    })?;
    let text = template
        .render(&messages, tools.as_ref(), true)
        .map_err(|e| ApiError::bad_request(format!("the chat template failed: {e}")))?;
    let prompt = state.tokenizer.encode(&text, false, true);
    Ok((prompt, checked, logprobs))
}

pub async fn handle(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    match run(state, &body).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn run(state: Arc<AppState>, body: &[u8]) -> Result<Response, ApiError> {
    let mut req: ChatRequest = parse_json(body)?;
    req.common = parse_json(body)?;
    let (prompt, checked, logprobs) = prepare(&state, &req)?;
    let json_mode = req
        .response_format
        .as_ref()
        .and_then(|r| r.get("type"))
        .and_then(Value::as_str)
        .is_some_and(|t| t.starts_with("json"));
    // JSON mode: the answer channel is constrained to a JSON object (schemas are not enforced).
    let constraint = json_mode.then(|| {
        Box::new(JsonAnswer::new(
            state.tokenizer.clone(),
            state.markers.clone(),
            &state.stop_tokens,
        )) as Box<dyn muser_engine::sched::TokenConstraint>
    });
    let gen = Generation::start(
        &state,
        GenParams {
            prompt,
            sampling: checked.sampling.clone(),
            max_tokens: checked.max_tokens,
            logprobs,
            constraint,
            prompt_field: "messages",
        },
    )?;
    let mut asm = ChatAssembler::new(state.markers.clone(), checked.stops.clone());
    asm.json_mode = json_mode;
    asm.tools = req.tools.clone().map(Value::Array);
    let id = new_id("chatcmpl");
    let model = state.model_id.clone();
    if checked.stream {
        let (tx, sse) = sse::channel();
        tokio::spawn(stream(
            state,
            gen,
            asm,
            tx,
            id,
            model,
            checked.include_usage,
        ));
        return Ok(sse.into_response());
    }
    collect(state, gen, asm, id, model).await
}

fn finish_reason(reason: FinishReason, stopped: bool, tools: usize) -> &'static str {
    match reason {
        _ if stopped => "stop",
        FinishReason::Stop if tools > 0 => "tool_calls",
        FinishReason::Stop => "stop",
        FinishReason::Length | FinishReason::Context => "length",
    }
}

fn tool_json(call: &crate::tools::ToolCall) -> Value {
    json!({
        "id": new_id("call"),
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments.to_string()},
    })
}

async fn collect(
    state: Arc<AppState>,
    mut gen: Generation,
    mut asm: ChatAssembler,
    id: String,
    model: String,
) -> Result<Response, ApiError> {
    let (mut content, mut reasoning, mut calls, mut lps) =
        (String::new(), String::new(), Vec::new(), Vec::new());
    let mut apply = |deltas: Vec<Delta>| {
        for d in deltas {
            match d {
                Delta::Content(t) => content.push_str(&t),
                Delta::Reasoning(t) => reasoning.push_str(&t),
                Delta::Tool(c) => calls.push(tool_json(&c)),
            }
        }
    };
    let mut completion_tokens = 0;
    let reason = loop {
        match gen.next().await {
            Some(SeqEvent::Token { id, logprobs }) => {
                completion_tokens += 1;
                if let Some(lp) = &logprobs {
                    lps.push(logprob_entry(&state.tokenizer, id, lp));
                }
                apply(asm.token(&state.tokenizer, id));
                if asm.is_done() {
                    break FinishReason::Stop;
                }
            }
            Some(SeqEvent::Done { reason, .. }) => break reason,
            Some(SeqEvent::Failed(m)) => return Err(ApiError::internal(m)),
            None => return Err(ApiError::internal("generation ended without a result")),
        }
    };
    apply(asm.finish());
    if asm.json_mode {
        check_json(&state, &content);
    }
    let mut message = json!({"role": "assistant", "content": (!content.is_empty() || calls.is_empty()).then_some(content)});
    if !reasoning.is_empty() {
        message["reasoning_content"] = reasoning.into();
    }
    if !calls.is_empty() {
        message["tool_calls"] = calls.into();
    }
    let prompt_tokens = gen.prompt_tokens;
    Ok(axum::Json(json!({
        "id": id,
        "object": "chat.completion",
        "created": now_secs(),
        "model": model,
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": gen.logprobs.then(|| json!({ "content": lps })),
            "finish_reason": finish_reason(reason, asm.stopped_by.is_some(), asm.tool_calls),
        }],
        "usage": usage(prompt_tokens, completion_tokens),
    }))
    .into_response())
}

/// JSON mode: counts (and reports on stderr) an answer that is not valid JSON.
fn check_json(state: &AppState, content: &str) {
    if serde_json::from_str::<Value>(content).is_err() {
        state
            .metrics
            .response_format_invalid
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        eprintln!(
            "muser serve: a response_format JSON answer is not valid JSON ({} bytes)",
            content.len()
        );
    }
}

pub fn usage(prompt: usize, completion: usize) -> Value {
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion})
}

async fn stream(
    state: Arc<AppState>,
    mut gen: Generation,
    mut asm: ChatAssembler,
    tx: sse::Tx,
    id: String,
    model: String,
    include_usage: bool,
) {
    let created = now_secs();
    let chunk = |delta: Value, lps: Option<Value>, finish: Option<&str>| -> String {
        json!({
            "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [{"index": 0, "delta": delta, "logprobs": lps, "finish_reason": finish}],
        })
        .to_string()
    };
    let wants_lp = gen.logprobs;
    let mut pending_lp: Vec<Value> = Vec::new();
    let mut tool_index = 0;
    let mut to_chunks = |deltas: Vec<Delta>, pending_lp: &mut Vec<Value>| -> Vec<String> {
        deltas
            .into_iter()
            .map(|d| {
                let delta = match d {
                    Delta::Content(t) => json!({ "content": t }),
                    Delta::Reasoning(t) => json!({ "reasoning_content": t }),
                    Delta::Tool(c) => {
                        let mut call = tool_json(&c);
                        call["index"] = tool_index.into();
                        tool_index += 1;
                        json!({ "tool_calls": [call] })
                    }
                };
                let lps = (wants_lp).then(|| json!({"content": std::mem::take(pending_lp)}));
                chunk(delta, lps, None)
            })
            .collect()
    };
    let mut out = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        None,
        None,
    )];
    let mut completion_tokens = 0;
    let mut answer = String::new();
    let reason = loop {
        for data in out.drain(..) {
            if tx.send(data).await.is_err() {
                return;
            }
        }
        let ev = tokio::select! {
            ev = gen.next() => ev,
            _ = tx.closed() => return,
        };
        match ev {
            Some(SeqEvent::Token { id, logprobs }) => {
                completion_tokens += 1;
                if let Some(lp) = &logprobs {
                    pending_lp.push(logprob_entry(&state.tokenizer, id, lp));
                }
                let deltas = asm.token(&state.tokenizer, id);
                if asm.json_mode {
                    for d in &deltas {
                        if let Delta::Content(t) = d {
                            answer.push_str(t);
                        }
                    }
                }
                out = to_chunks(deltas, &mut pending_lp);
                if asm.is_done() {
                    break FinishReason::Stop;
                }
            }
            Some(SeqEvent::Done { reason, .. }) => break reason,
            Some(SeqEvent::Failed(m)) => {
                let _ = tx.send(ApiError::internal(m).body().to_string()).await;
                let _ = tx.send("[DONE]".into()).await;
                return;
            }
            None => return,
        }
    };
    let tail = asm.finish();
    if asm.json_mode {
        for d in &tail {
            if let Delta::Content(t) = d {
                answer.push_str(t);
            }
        }
        check_json(&state, &answer);
    }
    out.extend(to_chunks(tail, &mut pending_lp));
    let lps = wants_lp.then(|| json!({"content": pending_lp}));
    out.push(chunk(
        json!({}),
        lps,
        Some(finish_reason(
            reason,
            asm.stopped_by.is_some(),
            asm.tool_calls,
        )),
    ));
    if include_usage {
        out.push(
            json!({
                "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [], "usage": usage(gen.prompt_tokens, completion_tokens),
            })
            .to_string(),
        );
    }
    out.push("[DONE]".into());
    for data in out {
        if tx.send(data).await.is_err() {
            return;
        }
    }
}
