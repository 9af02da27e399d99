//! Text completions: OpenAI's `POST /v1/completions` and llama-server's `POST /completion`
//! (prompt as text or token ids; streaming or not; logprobs; usage / llama-server timings).

use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use muser_engine::sched::{FinishReason, SeqEvent, TokenLogprobs};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::chat::usage;
use crate::error::{parse_json, ApiError};
use crate::gen::{GenParams, Generation, TextAssembler};
use crate::params::{new_id, now_secs, Common, OneOrMany};
use crate::{sse, AppState};

/// A prompt: text, one-element list of text, or token ids.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Prompt {
    Text(String),
    Ids(Vec<u32>),
    Many(Vec<String>),
}

#[derive(Debug, Deserialize)]
pub struct CompletionRequest {
    /// Parsed separately from the same body (so that errors name their field).
    #[serde(skip)]
    pub common: Common,
    pub prompt: Prompt,
    pub logprobs: Option<u32>,
    pub echo: Option<bool>,
    pub best_of: Option<u32>,
    pub suffix: Option<String>,
}

fn prompt_ids(state: &AppState, p: &Prompt) -> Result<Vec<u32>, ApiError> {
    let text = match p {
        Prompt::Text(t) => t.as_str(),
        Prompt::Many(v) if v.len() == 1 => v[0].as_str(),
        Prompt::Many(v) => {
            return Err(ApiError::unsupported(
                "prompt",
                &format!("a batch of {} prompts (send one)", v.len()),
            ))
        }
        Prompt::Ids(ids) => {
            let n = state.tokenizer.vocab_size();
            if let Some(bad) = ids.iter().find(|&&i| i as usize >= n) {
                return Err(ApiError::param(
                    "prompt",
                    format!("token id {bad} is outside the vocabulary ({n} tokens)"),
                ));
            }
            return Ok(ids.clone());
        }
    };
    let tok = &state.tokenizer;
    Ok(tok.encode(text, tok.add_bos_default(), true))
}

/// OpenAI's legacy logprobs object for the generated tokens.
fn legacy_logprobs(state: &AppState, toks: &[(u32, TokenLogprobs, usize)]) -> Value {
    let text =
        |id: u32| String::from_utf8_lossy(state.tokenizer.token_bytes(id, false)).into_owned();
    json!({
        "tokens": toks.iter().map(|t| text(t.0)).collect::<Vec<_>>(),
        "token_logprobs": toks.iter().map(|t| t.1.logprob).collect::<Vec<_>>(),
        "top_logprobs": toks.iter().map(|t| t.1.top.iter().map(|&(i, l)| (text(i), json!(l))).collect::<serde_json::Map<_, _>>()).collect::<Vec<_>>(),
        "text_offset": toks.iter().map(|t| t.2).collect::<Vec<_>>(),
    })
}

/// One generated piece of a text completion.
enum Piece {
    Text {
        text: String,
        /// The token, its log-probabilities and the text offset it starts at.
        lp: Option<(u32, TokenLogprobs, usize)>,
        id: Option<u32>,
    },
    End {
        /// OpenAI's `finish_reason`.
        finish: &'static str,
        /// llama-server's `stop_type`: `eos`, `limit` or `word`.
        stop_type: &'static str,
        stopping_word: String,
    },
    Failed(String),
}

/// A text completion in progress: tokens to text with stop strings.
struct TextRun {
    gen: Generation,
    asm: TextAssembler,
    offset: usize,
    completion_tokens: usize,
    queue: std::collections::VecDeque<Piece>,
    finished: bool,
}

impl TextRun {
    fn new(gen: Generation, stops: Vec<String>) -> TextRun {
        TextRun {
            gen,
            asm: TextAssembler::new(stops),
            offset: 0,
            completion_tokens: 0,
            queue: Default::default(),
            finished: false,
        }
    }

    async fn next(&mut self, state: &AppState) -> Option<Piece> {
        loop {
            if let Some(p) = self.queue.pop_front() {
                return Some(p);
            }
            if self.finished {
                return None;
            }
            match self.gen.next().await {
                Some(SeqEvent::Token { id, logprobs }) => {
                    self.completion_tokens += 1;
                    let text = self.asm.token(&state.tokenizer, id);
                    let lp = logprobs.map(|l| (id, l, self.offset));
                    self.offset += text.chars().count();
                    self.queue.push_back(Piece::Text {
                        text,
                        lp,
                        id: Some(id),
                    });
                    if self.asm.stopped_by.is_some() {
                        self.end(FinishReason::Stop);
                    }
                }
                Some(SeqEvent::Done { reason, .. }) => self.end(reason),
                Some(SeqEvent::Failed(m)) => {
                    self.finished = true;
                    self.queue.push_back(Piece::Failed(m));
                }
                None => self.finished = true,
            }
        }
    }

    fn end(&mut self, reason: FinishReason) {
        self.finished = true;
        if self.asm.stopped_by.is_none() {
            let tail = self.asm.finish();
            if !tail.is_empty() {
                self.offset += tail.chars().count();
                self.queue.push_back(Piece::Text {
                    text: tail,
                    lp: None,
                    id: None,
                });
            }
        }
        let (finish, stop_type) = match (&self.asm.stopped_by, reason) {
            (Some(_), _) => ("stop", "word"),
            (None, FinishReason::Stop) => ("stop", "eos"),
            (None, _) => ("length", "limit"),
        };
        self.queue.push_back(Piece::End {
            finish,
            stop_type,
            stopping_word: self.asm.stopped_by.clone().unwrap_or_default(),
        });
    }
}

pub async fn openai(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    match openai_run(state, &body).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn openai_run(state: Arc<AppState>, body: &[u8]) -> Result<Response, ApiError> {
    let mut req: CompletionRequest = parse_json(body)?;
    req.common = parse_json(body)?;
    let checked = req.common.check()?;
    if req.echo == Some(true) {
        return Err(ApiError::unsupported("echo", "echo"));
    }
    if req.best_of.is_some_and(|b| b != 1) {
        return Err(ApiError::unsupported("best_of", "best_of > 1"));
    }
    if req.suffix.as_ref().is_some_and(|s| !s.is_empty()) {
        return Err(ApiError::unsupported("suffix", "suffix (insertion)"));
    }
    if req.logprobs.is_some_and(|n| n > 20) {
        return Err(ApiError::param("logprobs", "logprobs must be at most 20"));
    }
    let prompt = prompt_ids(&state, &req.prompt)?;
    let gen = Generation::start(
        &state,
        GenParams {
            prompt,
            sampling: checked.sampling.clone(),
            // OpenAI's default for this endpoint.
            max_tokens: Some(checked.max_tokens.unwrap_or(16)),
            logprobs: req.logprobs.map(|n| n as usize),
            constraint: None,
            prompt_field: "prompt",
        },
    )?;
    let prompt_tokens = gen.prompt_tokens;
    let mut run = TextRun::new(gen, checked.stops.clone());
    let id = new_id("cmpl");
    let created = now_secs();
    let model = state.model_id.clone();
    let want_lp = req.logprobs.is_some();
    let chunk = move |text: &str, lps: Value, finish: Option<&str>| {
        json!({
            "id": id, "object": "text_completion", "created": created, "model": model,
            "choices": [{"index": 0, "text": text, "logprobs": lps, "finish_reason": finish}],
        })
    };
    if !checked.stream {
        let (mut text, mut lps, mut finish) = (String::new(), Vec::new(), "length");
        while let Some(p) = run.next(&state).await {
            match p {
                Piece::Text { text: t, lp, .. } => {
                    text.push_str(&t);
                    lps.extend(lp);
                }
                Piece::End { finish: f, .. } => finish = f,
                Piece::Failed(m) => return Err(ApiError::internal(m)),
            }
        }
        let lps = if want_lp {
            legacy_logprobs(&state, &lps)
        } else {
            Value::Null
        };
        let mut v = chunk(&text, lps, Some(finish));
        v["usage"] = usage(prompt_tokens, run.completion_tokens);
        return Ok(axum::Json(v).into_response());
    }
    let (tx, sse) = sse::channel();
    let include_usage = checked.include_usage;
    tokio::spawn(async move {
        loop {
            let p = tokio::select! {
                p = run.next(&state) => p,
                _ = tx.closed() => return,
            };
            let data = match p {
                Some(Piece::Text { text, lp, .. }) => {
                    if text.is_empty() && lp.is_none() {
                        continue;
                    }
                    let lps = match lp {
                        Some(t) if want_lp => legacy_logprobs(&state, std::slice::from_ref(&t)),
                        _ => Value::Null,
                    };
                    chunk(&text, lps, None)
                }
                Some(Piece::End { finish, .. }) => chunk("", Value::Null, Some(finish)),
                Some(Piece::Failed(m)) => ApiError::internal(m).body(),
                None => break,
            };
            if tx.send(data.to_string()).await.is_err() {
                return;
            }
        }
        if include_usage {
            let mut v = chunk("", Value::Null, None);
            v["choices"] = json!([]);
            v["usage"] = usage(prompt_tokens, run.completion_tokens);
            let _ = tx.send(v.to_string()).await;
        }
        let _ = tx.send("[DONE]".into()).await;
    });
    Ok(sse.into_response())
}

/// llama-server's `/completion` request.
#[derive(Debug, Deserialize)]
pub struct LlamaRequest {
    pub prompt: Prompt,
    pub n_predict: Option<i64>,
    pub temperature: Option<f32>,
    pub top_k: Option<u32>,
    pub top_p: Option<f32>,
    pub min_p: Option<f32>,
    pub seed: Option<i64>,
    pub stop: Option<OneOrMany>,
    pub stream: Option<bool>,
    pub repeat_penalty: Option<f32>,
    pub presence_penalty: Option<f32>,
    pub frequency_penalty: Option<f32>,
    pub n_probs: Option<u32>,
}

pub async fn llama(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    match llama_run(state, &body).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn llama_run(state: Arc<AppState>, body: &[u8]) -> Result<Response, ApiError> {
    let req: LlamaRequest = parse_json(body)?;
    let common = Common {
        temperature: req.temperature,
        top_k: req.top_k,
        top_p: req.top_p,
        min_p: req.min_p,
        // llama-server's -1 means a random seed.
        seed: req.seed.filter(|&s| s >= 0),
        stop: req.stop.clone(),
        repeat_penalty: req.repeat_penalty,
        presence_penalty: req.presence_penalty,
        frequency_penalty: req.frequency_penalty,
        ..Common::default()
    };
    let checked = common.check()?;
    let max_tokens = match req.n_predict {
        None | Some(-1) => None,
        Some(n) if n >= 1 => Some(n as usize),
        Some(n) => {
            return Err(ApiError::param(
                "n_predict",
                format!("n_predict must be -1 or at least 1, got {n}"),
            ))
        }
    };
    let prompt = prompt_ids(&state, &req.prompt)?;
    let n_probs = req.n_probs.unwrap_or(0).min(20) as usize;
    let t0 = Instant::now();
    let gen = Generation::start(
        &state,
        GenParams {
            prompt,
            sampling: checked.sampling,
            max_tokens,
            logprobs: (n_probs > 0).then_some(n_probs),
            constraint: None,
            prompt_field: "prompt",
        },
    )?;
    let prompt_tokens = gen.prompt_tokens;
    let mut run = TextRun::new(gen, checked.stops);
    let model = state.model_id.clone();
    let probs = move |st: &AppState, lp: &Option<(u32, TokenLogprobs, usize)>| -> Value {
        match lp {
            Some((id, l, _)) => json!([{
                "id": id,
                "token": String::from_utf8_lossy(st.tokenizer.token_bytes(*id, false)),
                "logprob": l.logprob,
                "top_logprobs": l.top.iter().map(|&(i, p)| json!({
                    "id": i,
                    "token": String::from_utf8_lossy(st.tokenizer.token_bytes(i, false)),
                    "logprob": p,
                })).collect::<Vec<_>>(),
            }]),
            None => json!([]),
        }
    };
    let summary = move |content: &str, tokens: &[u32], n: usize, stop_type: &str, word: &str| {
        let secs = t0.elapsed().as_secs_f64();
        json!({
            "content": content, "tokens": tokens, "stop": true, "model": model,
            "tokens_predicted": n, "tokens_evaluated": prompt_tokens,
            "stop_type": stop_type, "stopping_word": word,
            "stopped_eos": stop_type == "eos", "stopped_limit": stop_type == "limit",
            "stopped_word": stop_type == "word",
            "timings": {"prompt_n": prompt_tokens, "predicted_n": n,
                        "predicted_per_second": n as f64 / secs.max(1e-9)},
        })
    };
    if !req.stream.unwrap_or(false) {
        let (mut text, mut ids, mut end) = (String::new(), Vec::new(), ("limit", String::new()));
        let mut all_probs = Vec::new();
        while let Some(p) = run.next(&state).await {
            match p {
                Piece::Text { text: t, lp, id } => {
                    text.push_str(&t);
                    ids.extend(id);
                    if n_probs > 0 {
                        if let Value::Array(a) = probs(&state, &lp) {
                            all_probs.extend(a);
                        }
                    }
                }
                Piece::End {
                    stop_type,
                    stopping_word,
                    ..
                } => end = (stop_type, stopping_word),
                Piece::Failed(m) => return Err(ApiError::internal(m)),
            }
        }
        let mut v = summary(&text, &ids, run.completion_tokens, end.0, &end.1);
        if n_probs > 0 {
            v["completion_probabilities"] = all_probs.into();
        }
        return Ok(axum::Json(v).into_response());
    }
    let (tx, sse) = sse::channel();
    tokio::spawn(async move {
        loop {
            let p = tokio::select! {
                p = run.next(&state) => p,
                _ = tx.closed() => return,
            };
            let data = match p {
                Some(Piece::Text { text, lp, id }) => {
                    let mut v = json!({"content": text, "tokens": id.into_iter().collect::<Vec<_>>(), "stop": false});
                    if n_probs > 0 {
                        v["completion_probabilities"] = probs(&state, &lp);
                    }
                    v
                }
                Some(Piece::End {
                    stop_type,
                    stopping_word,
                    ..
                }) => summary("", &[], run.completion_tokens, stop_type, &stopping_word),
                Some(Piece::Failed(m)) => ApiError::internal(m).body(),
                None => return,
            };
            if tx.send(data.to_string()).await.is_err() {
                return;
            }
        }
    });
    Ok(sse.into_response())
}
