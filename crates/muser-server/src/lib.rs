//! `muser serve`: the HTTP face of the engine. OpenAI's `/v1/chat/completions`,
//! `/v1/completions` and `/v1/models`, llama-server's `/completion`, `/tokenize` and
//! `/detokenize`, `/health` and Prometheus `/metrics`, over the engine's continuous-batching
//! scheduler. The tokenizer and chat template come from the GGUF.

mod chat;
mod completions;
mod constrain;
mod error;
mod gen;
mod json_prefix;
mod metrics;
mod misc;
mod params;
mod sse;
mod stop;
#[cfg(test)]
mod test_support;
mod tools;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use muser_engine::sched::{Runner, Scheduler, SchedulerConfig, TokenLogprobs};
use muser_engine::Glimmer;
use muser_tokenizer::{ChatTemplate, Tokenizer};
use serde_json::{json, Value};

pub use error::ApiError;
pub use metrics::Metrics;

/// Everything the handlers share.
pub struct AppState {
    pub scheduler: Scheduler,
    pub tokenizer: Arc<Tokenizer>,
    /// `None` when the file has no usable chat template (chat requests are refused).
    pub template: Option<ChatTemplate>,
    pub model_id: String,
    pub device: String,
    pub created: u64,
    pub metrics: Metrics,
    /// When set, every endpoint but `/health` needs `Authorization: Bearer <key>`.
    pub api_key: Option<String>,
    markers: muser_engine::channels::Markers,
    stop_tokens: Vec<u32>,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("tokenizer: {0}")]
    Tokenizer(#[from] muser_tokenizer::Error),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl AppState {
    /// Starts the scheduler for `model` and reads the tokenizer and chat template from its file.
    pub fn new(
        model: Arc<Glimmer>,
        model_id: String,
        device: String,
        sched: SchedulerConfig,
    ) -> Result<AppState, ServeError> {
        AppState::with_runner(model, model_id, device, sched, Runner::Batched)
    }

    /// As [`AppState::new`], the scheduler running its sequences with `runner` (one-by-one
    /// whole-token sessions on a GPU).
    pub fn with_runner(
        model: Arc<Glimmer>,
        model_id: String,
        device: String,
        sched: SchedulerConfig,
        runner: Runner,
    ) -> Result<AppState, ServeError> {
        let header = model.weights.file().header();
        let tokenizer = Tokenizer::from_gguf(header)?;
        let template = ChatTemplate::from_gguf(header).ok();
        let markers = gen::markers_of(&tokenizer);
        let stop_tokens = tokenizer.stop_tokens();
        let scheduler = Scheduler::start_with(model, sched, runner)?;
        Ok(AppState {
            scheduler,
            tokenizer: Arc::new(tokenizer),
            template,
            model_id,
            device,
            created: params::now_secs(),
            metrics: Metrics::default(),
            api_key: None,
            markers,
            stop_tokens,
        })
    }
}

/// The routes, with request counting by endpoint and status.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat::handle))
        .route("/v1/completions", post(completions::openai))
        .route("/completion", post(completions::llama))
        .route("/completions", post(completions::llama))
        .route("/v1/models", get(misc::models))
        .route("/models", get(misc::models))
        .route("/health", get(misc::health))
        .route("/metrics", get(misc::metrics))
        .route("/tokenize", post(misc::tokenize))
        .route("/detokenize", post(misc::detokenize))
        .fallback(|req: Request| async move {
            ApiError::not_found(format!(
                "no route for {} {}",
                req.method(),
                req.uri().path()
            ))
        })
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            authorize,
        ))
        .layer(axum::middleware::from_fn_with_state(state.clone(), count))
        .with_state(state)
}

async fn count(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let t0 = std::time::Instant::now();
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let known = [
        "/v1/chat/completions",
        "/v1/completions",
        "/completion",
        "/completions",
        "/v1/models",
        "/models",
        "/health",
        "/metrics",
        "/tokenize",
        "/detokenize",
    ];
    let endpoint = known
        .iter()
        .find(|&&k| k == path)
        .copied()
        .unwrap_or("other");
    let r = next.run(req).await;
    state.metrics.request(endpoint, r.status().as_u16());
    // Streaming responses are logged when their headers go out; the stream follows.
    tracing::info!(
        target: "muser::http",
        "{method} {path} {} {:.1} ms",
        r.status().as_u16(),
        t0.elapsed().as_secs_f64() * 1e3
    );
    r
}

/// With an API key configured, refuses requests without it (401, OpenAI-style body).
async fn authorize(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if let Some(key) = &state.api_key {
        let given = req
            .headers()
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if req.uri().path() != "/health" && given != Some(key.as_str()) {
            return ApiError {
                status: axum::http::StatusCode::UNAUTHORIZED,
                code: Some("invalid_api_key"),
                ..ApiError::bad_request("a valid API key is required (Authorization: Bearer …)")
            }
            .into_response();
        }
    }
    next.run(req).await
}

/// Serves until Ctrl-C (or SIGTERM); prints the address once listening.
pub async fn serve(state: Arc<AppState>, addr: SocketAddr) -> Result<(), ServeError> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    eprintln!(
        "muser serve: listening on http://{}",
        listener.local_addr()?
    );
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown_signal())
        .await?;
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}

/// OpenAI's chat logprob entry for one token.
fn logprob_entry(tok: &Tokenizer, id: u32, lp: &TokenLogprobs) -> Value {
    let piece = |id: u32| {
        let b = tok.token_bytes(id, false);
        (String::from_utf8_lossy(b).into_owned(), b.to_vec())
    };
    let (token, bytes) = piece(id);
    json!({
        "token": token,
        "logprob": lp.logprob,
        "bytes": bytes,
        "top_logprobs": lp.top.iter().map(|&(i, l)| {
            let (t, b) = piece(i);
            json!({"token": t, "logprob": l, "bytes": b})
        }).collect::<Vec<_>>(),
    })
}
