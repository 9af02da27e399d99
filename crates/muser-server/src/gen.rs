//! One request's generation as the HTTP side sees it: submitted to the scheduler, events
//! received over a channel (dropping the `Generation` tells the scheduler the client left),
//! time to first token and inter-token latency recorded; and the token-to-text assemblers for
//! plain completions and for Glimmer's chat channels.

use std::sync::Arc;
use std::time::Instant;

use muser_engine::channels::{Channel, ChannelParser, Event, Markers};
use muser_engine::sched::{EventSink, Request, SeqEvent, SubmitError};
use muser_engine::SamplingParams;
use muser_tokenizer::{Tokenizer, Utf8Stream};
use tokio::sync::mpsc;

use crate::error::ApiError;
use crate::stop::StopMatcher;
use crate::tools::{parse_calls, ToolCall};
use crate::AppState;

struct ChannelSink(mpsc::UnboundedSender<SeqEvent>);

impl EventSink for ChannelSink {
    fn send(&mut self, ev: SeqEvent) -> bool {
        self.0.send(ev).is_ok()
    }

    fn is_closed(&self) -> bool {
        self.0.is_closed()
    }
}

/// What to generate.
pub struct GenParams {
    pub prompt: Vec<u32>,
    pub sampling: SamplingParams,
    /// `None`: until the context is full.
    pub max_tokens: Option<usize>,
    pub logprobs: Option<usize>,
    pub constraint: Option<Box<dyn muser_engine::sched::TokenConstraint>>,
    /// The request field errors about the prompt name (`messages` or `prompt`).
    pub prompt_field: &'static str,
}

/// A submitted request's event stream.
pub struct Generation {
    rx: mpsc::UnboundedReceiver<SeqEvent>,
    state: Arc<AppState>,
    t0: Instant,
    last: Option<Instant>,
    pub prompt_tokens: usize,
    /// Whether each token carries log-probabilities.
    pub logprobs: bool,
    ended: bool,
}

impl Generation {
    /// Queues the request; refusals become 400 (bad request) or 503 (queue full).
    pub fn start(state: &Arc<AppState>, p: GenParams) -> Result<Generation, ApiError> {
        let (tx, rx) = mpsc::unbounded_channel();
        let field = p.prompt_field;
        let ctx = state.scheduler.config().context;
        let prompt_tokens = p.prompt.len();
        let logprobs = p.logprobs.is_some();
        let req = Request {
            max_tokens: p
                .max_tokens
                .unwrap_or(usize::MAX)
                .min(ctx.saturating_sub(prompt_tokens).max(1)),
            prompt: p.prompt,
            sampling: p.sampling,
            stop_tokens: state.stop_tokens.clone(),
            logprobs: p.logprobs,
            constraint: p.constraint,
            sink: Box::new(ChannelSink(tx)),
        };
        state.scheduler.submit(req).map_err(|e| match e {
            SubmitError::QueueFull(_) | SubmitError::Stopped => {
                ApiError::overloaded(format!("{e}; retry later"))
            }
            SubmitError::PromptTooLong { .. } => ApiError {
                code: Some("context_length_exceeded"),
                ..ApiError::param(field, e.to_string())
            },
            SubmitError::EmptyPrompt | SubmitError::TokenOutOfRange { .. } => {
                ApiError::param(field, e.to_string())
            }
            SubmitError::Sampling(m) => ApiError::bad_request(m),
        })?;
        Ok(Generation {
            rx,
            state: state.clone(),
            t0: Instant::now(),
            last: None,
            prompt_tokens,
            logprobs,
            ended: false,
        })
    }

    /// The next event; after `Done`/`Failed`, `None`.
    pub async fn next(&mut self) -> Option<SeqEvent> {
        if self.ended {
            return None;
        }
        let ev = self
            .rx
            .recv()
            .await
            .unwrap_or_else(|| SeqEvent::Failed("the scheduler stopped".into()));
        let now = Instant::now();
        match &ev {
            SeqEvent::Token { .. } => {
                let m = &self.state.metrics;
                match self.last {
                    None => m.ttft.observe((now - self.t0).as_secs_f64()),
                    Some(t) => m.itl.observe((now - t).as_secs_f64()),
                }
                self.last = Some(now);
            }
            SeqEvent::Done { .. } | SeqEvent::Failed(_) => {
                self.ended = true;
                self.state
                    .metrics
                    .duration
                    .observe((now - self.t0).as_secs_f64());
            }
        }
        Some(ev)
    }
}

/// Plain text completions: tokens to text (control tokens skipped), stop strings applied.
pub struct TextAssembler {
    utf8: Utf8Stream,
    stop: StopMatcher,
    pub stopped_by: Option<String>,
}

impl TextAssembler {
    pub fn new(stops: Vec<String>) -> TextAssembler {
        TextAssembler {
            utf8: Utf8Stream::default(),
            stop: StopMatcher::new(stops),
            stopped_by: None,
        }
    }

    /// Text released by this token; `stopped_by` is set when a stop string matched.
    pub fn token(&mut self, tok: &Tokenizer, id: u32) -> String {
        let t = self.utf8.push(tok.token_bytes(id, true));
        let r = self.stop.push(&t);
        if r.stopped.is_some() {
            self.stopped_by = r.stopped;
        }
        r.text
    }

    pub fn finish(&mut self) -> String {
        if self.stopped_by.is_some() {
            return String::new();
        }
        let t = self.utf8.finish();
        let mut r = self.stop.push(&t);
        if r.stopped.is_some() {
            self.stopped_by = r.stopped;
            return r.text;
        }
        r.text.push_str(&self.stop.finish());
        r.text
    }
}

/// The chat format's structural tokens in this vocabulary (EOT/EOS are left to the
/// scheduler, which stops on them).
pub fn markers_of(tok: &Tokenizer) -> Markers {
    Markers {
        start: tok.token_id("<|start|>"),
        message: tok.token_id("<|message|>"),
        eom: tok.eom(),
        end_of_turn: Vec::new(),
    }
}

/// A piece of an assistant message.
#[derive(Debug, Clone, PartialEq)]
pub enum Delta {
    Content(String),
    Reasoning(String),
    Tool(ToolCall),
}

/// Chat output: channels parsed (reasoning, answer, tool calls), stop strings applied to the
/// answer text.
pub struct ChatAssembler {
    markers: Markers,
    utf8: Utf8Stream,
    parser: ChannelParser,
    stop: StopMatcher,
    tool_body: String,
    pub stopped_by: Option<String>,
    /// The model started a message of another role: the assistant's turn is over.
    pub turn_over: bool,
    pub tool_calls: usize,
    /// `response_format` asked for JSON: the answer is checked when it ends.
    pub json_mode: bool,
    /// The request's tools: their schemas decide the types of call arguments.
    pub tools: Option<serde_json::Value>,
}

impl ChatAssembler {
    pub fn new(markers: Markers, stops: Vec<String>) -> ChatAssembler {
        ChatAssembler {
            markers,
            utf8: Utf8Stream::default(),
            parser: ChannelParser::default(),
            stop: StopMatcher::new(stops),
            tool_body: String::new(),
            stopped_by: None,
            turn_over: false,
            tool_calls: 0,
            json_mode: false,
            tools: None,
        }
    }

    /// Whether generation should end here (a stop string, or the turn is over).
    pub fn is_done(&self) -> bool {
        self.stopped_by.is_some() || self.turn_over
    }

    pub fn token(&mut self, tok: &Tokenizer, id: u32) -> Vec<Delta> {
        let events = match self.markers.of(id) {
            Some(m) => {
                let mut ev = self.parser.text(&self.utf8.finish());
                ev.extend(self.parser.marker(m));
                ev
            }
            None => {
                let t = self.utf8.push(tok.token_bytes(id, true));
                self.parser.text(&t)
            }
        };
        let out = self.handle(events);
        if matches!(self.parser.body_channel(), Some(Channel::Foreign(_))) {
            self.turn_over = true;
        }
        out
    }

    pub fn finish(&mut self) -> Vec<Delta> {
        let mut ev = self.parser.text(&self.utf8.finish());
        ev.extend(self.parser.finish());
        let mut out = self.handle(ev);
        if self.stopped_by.is_none() {
            push_content(&mut out, self.stop.finish());
        }
        out
    }

    fn handle(&mut self, events: Vec<Event>) -> Vec<Delta> {
        let mut out = Vec::new();
        for ev in events {
            if self.is_done() {
                break;
            }
            match ev {
                Event::Text {
                    channel: Channel::Answer,
                    text,
                } => {
                    let r = self.stop.push(&text);
                    push_content(&mut out, r.text);
                    self.stopped_by = r.stopped;
                }
                Event::Text {
                    channel: Channel::Reasoning,
                    text,
                } => out.push(Delta::Reasoning(text)),
                Event::Text {
                    channel: Channel::Tool(_),
                    text,
                } => self.tool_body.push_str(&text),
                Event::MessageEnd {
                    channel: Channel::Tool(name),
                } => {
                    let body = std::mem::take(&mut self.tool_body);
                    for call in parse_calls(&body, &name, self.tools.as_ref()) {
                        self.tool_calls += 1;
                        out.push(Delta::Tool(call));
                    }
                }
                Event::MessageEnd {
                    channel: Channel::Answer,
                } => push_content(&mut out, self.stop.finish()),
                Event::Text {
                    channel: Channel::Foreign(_),
                    ..
                } => self.turn_over = true,
                Event::MessageEnd { .. } => {}
            }
        }
        out
    }
}

fn push_content(out: &mut Vec<Delta>, text: String) {
    if !text.is_empty() {
        out.push(Delta::Content(text));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::tokenizer;

    #[test]
    fn channels_tool_calls_and_stops_token_by_token() {
        let tok = tokenizer();
        let out = concat!(
            " to=self<|message|>Let me think about Paris<|eom|>",
            "<|start|>assistant to=get_weather<|message|><atem:function_calls>",
            "<atem:invoke name=\"get_weather\"><atem:parameter name=\"city\">Paris</atem:parameter>",
            "<atem:parameter name=\"days\">2</atem:parameter></atem:invoke></atem:function_calls><|eom|>",
            "<|start|>assistant to=user<|message|>It is sunny, 21°C. END and more",
        );
        let ids = tok.encode(out, false, true);
        let mut asm = ChatAssembler::new(markers_of(&tok), vec!["END".into()]);
        let mut deltas = Vec::new();
        for &id in &ids {
            deltas.extend(asm.token(&tok, id));
            if asm.stopped_by.is_some() {
                break;
            }
        }
        deltas.extend(asm.finish());
        let text = |f: fn(&Delta) -> Option<&String>| -> String {
            deltas.iter().filter_map(f).map(String::as_str).collect()
        };
        let reasoning = text(|d| match d {
            Delta::Reasoning(t) => Some(t),
            _ => None,
        });
        let content = text(|d| match d {
            Delta::Content(t) => Some(t),
            _ => None,
        });
        assert_eq!(reasoning, "Let me think about Paris");
        assert_eq!(content, "It is sunny, 21°C. ");
        let calls: Vec<&ToolCall> = deltas
            .iter()
            .filter_map(|d| match d {
                Delta::Tool(c) => Some(c),
                _ => None,
            })
            .collect();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "get_weather");
        assert_eq!(
            calls[0].arguments,
            serde_json::json!({"city": "Paris", "days": 2})
        );
        assert_eq!(asm.stopped_by.as_deref(), Some("END"));
        assert_eq!(asm.tool_calls, 1);
        // Several deltas arrived for the reasoning: it streamed, it was not buffered to the end.
        assert!(
            deltas
                .iter()
                .filter(|d| matches!(d, Delta::Reasoning(_)))
                .count()
                > 1
        );
    }

    #[test]
    fn a_message_of_another_role_ends_the_turn_after_a_tool_call() {
        let tok = tokenizer();
        let out = concat!(
            " to=get_weather<|message|><atem:function_calls><atem:invoke name=\"get_weather\">",
            "<atem:parameter name=\"city\">Paris</atem:parameter></atem:invoke>",
            "</atem:function_calls><|eom|><|start|>tool from=get_weather<|message|>{\"temp\": 21}",
        );
        let mut asm = ChatAssembler::new(markers_of(&tok), vec![]);
        let mut deltas = Vec::new();
        for &id in &tok.encode(out, false, true) {
            deltas.extend(asm.token(&tok, id));
            if asm.is_done() {
                break;
            }
        }
        deltas.extend(asm.finish());
        assert!(asm.turn_over && asm.tool_calls == 1);
        assert_eq!(
            deltas.len(),
            1,
            "only the call, no invented tool result: {deltas:?}"
        );
        assert!(matches!(&deltas[0], Delta::Tool(c) if c.name == "get_weather"));
    }

    #[test]
    fn text_assembler_never_splits_characters_and_applies_stops() {
        let tok = tokenizer();
        let ids = tok.encode("naïve café STOP tail", false, false);
        let mut asm = TextAssembler::new(vec!["STOP".into()]);
        let mut text = String::new();
        for &id in &ids {
            text.push_str(&asm.token(&tok, id));
            if asm.stopped_by.is_some() {
                break;
            }
        }
        text.push_str(&asm.finish());
        assert_eq!(text, "naïve café ");
        let mut asm = TextAssembler::new(vec![]);
        let all: String = ids
            .iter()
            .map(|&id| asm.token(&tok, id))
            .collect::<String>()
            + &asm.finish();
        assert_eq!(all, "naïve café STOP tail");
    }
}
