//! Glimmer's message channels in generated text: `<|start|>{header}<|message|>{body}` ended by
//! `<|eom|>` (more follows in this turn) or `<|eot|>`/EOS (turn over). The header's ` to=`
//! recipient says where the body goes: `self` is reasoning, `user` (or none) is the answer,
//! anything else is a tool call.

/// Where a message body goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Channel {
    Reasoning,
    Answer,
    /// A tool call addressed to this function.
    Tool(String),
    /// A message of another role (`tool`, `user`, `system`): the assistant's turn is over and
    /// the model is imagining what comes next.
    Foreign(String),
}

impl Channel {
    /// The recipient of a header such as `" to=self"` or `"assistant to=functions.get"`.
    pub fn from_header(header: &str) -> Channel {
        // The generation prompt ends in `<|start|>assistant`, so the first header has no role;
        // later ones start with theirs.
        if let Some(role) = header.split_whitespace().next() {
            if role != "assistant" && !role.starts_with("to=") {
                return Channel::Foreign(role.to_string());
            }
        }
        let recipient = header
            .split_whitespace()
            .find_map(|w| w.strip_prefix("to="))
            .unwrap_or("");
        match recipient {
            "self" => Channel::Reasoning,
            "" | "user" | "all" => Channel::Answer,
            other => Channel::Tool(other.to_string()),
        }
    }
}

/// A structural token of the chat format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    Start,
    Message,
    /// `<|eom|>`: end of one message, the turn goes on.
    EndOfMessage,
    /// `<|eot|>` or EOS: end of the turn.
    EndOfTurn,
}

/// The token ids of the format's structural tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Markers {
    /// `<|start|>`.
    pub start: Option<u32>,
    /// `<|message|>`.
    pub message: Option<u32>,
    /// `<|eom|>`.
    pub eom: Option<u32>,
    /// Tokens read as end of turn (EOT/EOS); empty where the scheduler stops on them itself.
    pub end_of_turn: Vec<u32>,
}

impl Markers {
    /// The marker a token id stands for, if any.
    pub fn of(&self, id: u32) -> Option<Marker> {
        if Some(id) == self.start {
            Some(Marker::Start)
        } else if Some(id) == self.message {
            Some(Marker::Message)
        } else if Some(id) == self.eom {
            Some(Marker::EndOfMessage)
        } else if self.end_of_turn.contains(&id) {
            Some(Marker::EndOfTurn)
        } else {
            None
        }
    }
}

/// What the parser found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Text { channel: Channel, text: String },
    MessageEnd { channel: Channel },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Header(String),
    Body(Channel),
}

/// Longest header kept waiting for `<|message|>`: past it the output is taken to ignore the
/// format and is streamed as answer text (real headers are a few words).
pub const MAX_HEADER_BYTES: usize = 128;

/// Incremental parser over generated pieces (text and markers) that starts right after a
/// generation prompt ending in `<|start|>assistant`.
#[derive(Debug, Clone)]
pub struct ChannelParser {
    state: State,
}

impl Default for ChannelParser {
    fn default() -> Self {
        ChannelParser {
            state: State::Header(String::new()),
        }
    }
}

impl ChannelParser {
    /// The channel of the message body being generated, if in a body (not a header).
    pub fn body_channel(&self) -> Option<&Channel> {
        match &self.state {
            State::Body(c) => Some(c),
            State::Header(_) => None,
        }
    }

    /// Generated text (not a marker).
    pub fn text(&mut self, text: &str) -> Vec<Event> {
        match &mut self.state {
            State::Header(h) => {
                h.push_str(text);
                if h.len() <= MAX_HEADER_BYTES {
                    return Vec::new();
                }
                let text = std::mem::take(h);
                self.state = State::Body(Channel::Answer);
                vec![Event::Text {
                    channel: Channel::Answer,
                    text,
                }]
            }
            State::Body(c) => vec![Event::Text {
                channel: c.clone(),
                text: text.to_string(),
            }],
        }
    }

    pub fn marker(&mut self, m: Marker) -> Vec<Event> {
        let mut out = Vec::new();
        match (m, &self.state) {
            (Marker::Message, State::Header(h)) => {
                self.state = State::Body(Channel::from_header(h));
            }
            (Marker::Start, _) => {
                out.extend(self.close());
                self.state = State::Header(String::new());
            }
            (Marker::EndOfMessage | Marker::EndOfTurn, _) => {
                out.extend(self.close());
                self.state = State::Header(String::new());
            }
            // `<|message|>` inside a body is treated as text-free structure: ignore it.
            (Marker::Message, State::Body(_)) => {}
        }
        out
    }

    /// Ends the stream: an open body is closed; header text that never got a `<|message|>`
    /// (a model that ignores the format) is surfaced as answer text rather than dropped.
    pub fn finish(&mut self) -> Vec<Event> {
        self.close()
    }

    fn close(&mut self) -> Vec<Event> {
        match std::mem::replace(&mut self.state, State::Header(String::new())) {
            State::Body(channel) => vec![Event::MessageEnd { channel }],
            State::Header(h) if !h.trim().is_empty() => vec![
                Event::Text {
                    channel: Channel::Answer,
                    text: h,
                },
                Event::MessageEnd {
                    channel: Channel::Answer,
                },
            ],
            State::Header(_) => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(p: &mut ChannelParser, pieces: &[Result<&str, Marker>]) -> Vec<Event> {
        let mut out = Vec::new();
        for piece in pieces {
            out.extend(match piece {
                Ok(t) => p.text(t),
                Err(m) => p.marker(*m),
            });
        }
        out.extend(p.finish());
        out
    }

    #[test]
    fn reasoning_then_answer_in_chunks() {
        let mut p = ChannelParser::default();
        let ev = feed(
            &mut p,
            &[
                Ok(" to="),
                Ok("self"),
                Err(Marker::Message),
                Ok("think"),
                Ok("ing"),
                Err(Marker::EndOfMessage),
                Err(Marker::Start),
                Ok("assistant to=user"),
                Err(Marker::Message),
                Ok("Hi!"),
                Err(Marker::EndOfTurn),
            ],
        );
        let text = |c: Channel| -> String {
            ev.iter()
                .filter_map(|e| match e {
                    Event::Text { channel, text } if *channel == c => Some(text.as_str()),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(text(Channel::Reasoning), "thinking");
        assert_eq!(text(Channel::Answer), "Hi!");
    }

    #[test]
    fn a_long_header_without_message_streams_as_answer() {
        let mut p = ChannelParser::default();
        let long = "x".repeat(MAX_HEADER_BYTES);
        assert!(p.text(&long).is_empty(), "still a possible header");
        let ev = p.text("y");
        assert_eq!(
            ev,
            vec![Event::Text {
                channel: Channel::Answer,
                text: format!("{long}y")
            }]
        );
        assert_eq!(
            p.text("z"),
            vec![Event::Text {
                channel: Channel::Answer,
                text: "z".into()
            }]
        );
    }

    #[test]
    fn tool_calls_and_unformatted_output() {
        assert_eq!(
            Channel::from_header(" to=get_weather"),
            Channel::Tool("get_weather".into())
        );
        assert_eq!(Channel::from_header(""), Channel::Answer);
        assert_eq!(
            Channel::from_header("tool from=get_weather"),
            Channel::Foreign("tool".into())
        );
        assert_eq!(Channel::from_header("assistant to=user"), Channel::Answer);
        let mut p = ChannelParser::default();
        let ev = feed(&mut p, &[Ok("no format at all")]);
        assert_eq!(
            ev[0],
            Event::Text {
                channel: Channel::Answer,
                text: "no format at all".into()
            }
        );
    }
}
