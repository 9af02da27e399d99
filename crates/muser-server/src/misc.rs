//! The small endpoints: `GET /v1/models`, `GET /health`, `GET /metrics`, and llama-server's
//! `POST /tokenize` and `POST /detokenize`.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use crate::error::{parse_json, ApiError};
use crate::AppState;

pub async fn models(State(state): State<Arc<AppState>>) -> Response {
    axum::Json(json!({
        "object": "list",
        "data": [{
            "id": state.model_id,
            "object": "model",
            "created": state.created,
            "owned_by": "muser",
            "meta": {
                "n_ctx": state.scheduler.config().context,
                "n_vocab": state.tokenizer.vocab_size(),
                "device": state.device,
            },
        }],
    }))
    .into_response()
}

pub async fn health(State(state): State<Arc<AppState>>) -> Response {
    let s = state.scheduler.stats();
    let g = muser_engine::sched::SchedStats::get;
    let running = state.scheduler.is_running();
    let body = axum::Json(json!({
        "status": if running { "ok" } else { "error" },
        "slots_running": g(&s.running),
        "queue_depth": g(&s.queue_depth),
    }));
    if running {
        body.into_response()
    } else {
        (axum::http::StatusCode::SERVICE_UNAVAILABLE, body).into_response()
    }
}

pub async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    let cfg = state.scheduler.config();
    let text = state.metrics.render(
        state.scheduler.stats(),
        (cfg.context * cfg.max_sequences) as u64,
    );
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

#[derive(Debug, Deserialize)]
pub struct TokenizeRequest {
    pub content: String,
    #[serde(default)]
    pub add_special: bool,
    #[serde(default)]
    pub parse_special: Option<bool>,
    #[serde(default)]
    pub with_pieces: bool,
}

pub async fn tokenize(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    let run = || -> Result<Response, ApiError> {
        let req: TokenizeRequest = parse_json(&body)?;
        let tok = &state.tokenizer;
        let ids = tok.encode(
            &req.content,
            req.add_special,
            req.parse_special.unwrap_or(true),
        );
        let tokens: Vec<serde_json::Value> = if req.with_pieces {
            ids.iter()
                .map(|&id| {
                    let bytes = tok.token_bytes(id, false);
                    match std::str::from_utf8(bytes) {
                        Ok(s) => json!({"id": id, "piece": s}),
                        Err(_) => json!({"id": id, "piece": bytes}),
                    }
                })
                .collect()
        } else {
            ids.iter().map(|&id| json!(id)).collect()
        };
        Ok(axum::Json(json!({ "tokens": tokens })).into_response())
    };
    run().unwrap_or_else(IntoResponse::into_response)
}

#[derive(Debug, Deserialize)]
pub struct DetokenizeRequest {
    pub tokens: Vec<u32>,
}

pub async fn detokenize(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    let run = || -> Result<Response, ApiError> {
        let req: DetokenizeRequest = parse_json(&body)?;
        let n = state.tokenizer.vocab_size();
        if let Some(bad) = req.tokens.iter().find(|&&i| i as usize >= n) {
            return Err(ApiError::param(
                "tokens",
                format!("token id {bad} is outside the vocabulary ({n} tokens)"),
            ));
        }
        let content = String::from_utf8_lossy(&state.tokenizer.decode(&req.tokens)).into_owned();
        Ok(axum::Json(json!({ "content": content })).into_response())
    };
    run().unwrap_or_else(IntoResponse::into_response)
}
