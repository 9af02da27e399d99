//! JSON mode as constrained decoding: inside the answer channel of a chat reply, only tokens
//! that keep the answer a prefix of a JSON object may be sampled, and the turn may end only
//! once the object is complete. Reasoning and tool messages are left free.

use std::sync::Arc;

use muser_engine::channels::{Channel, ChannelParser};
use muser_engine::sched::TokenConstraint;
use muser_tokenizer::Tokenizer;

use crate::json_prefix::JsonPrefix;
use muser_engine::channels::Markers;

pub struct JsonAnswer {
    tok: Arc<Tokenizer>,
    markers: Markers,
    /// EOS/EOT. (Not EOM: it does not end the turn, and after it the model could open
    /// another answer message that only an ender could continue.)
    enders: Vec<u32>,
    parser: ChannelParser,
    json: JsonPrefix,
}

impl JsonAnswer {
    pub fn new(tok: Arc<Tokenizer>, markers: Markers, stops: &[u32]) -> JsonAnswer {
        let enders = stops.to_vec();
        JsonAnswer {
            tok,
            markers,
            enders,
            parser: ChannelParser::default(),
            json: JsonPrefix::default(),
        }
    }

    fn in_answer(&self) -> bool {
        self.parser.body_channel() == Some(&Channel::Answer)
    }
}

impl TokenConstraint for JsonAnswer {
    fn allows(&self, token: u32) -> bool {
        if !self.in_answer() {
            return true;
        }
        if self.enders.contains(&token) {
            return self.json.is_complete();
        }
        if self.json.is_complete() || self.markers.of(token).is_some() || self.tok.is_control(token)
        {
            return false;
        }
        let bytes = self.tok.token_bytes(token, false);
        !bytes.is_empty() && self.json.clone().feed(bytes)
    }

    fn accept(&mut self, token: u32) {
        match self.markers.of(token) {
            Some(m) => {
                self.parser.marker(m);
            }
            None => {
                let bytes = self.tok.token_bytes(token, true);
                if self.in_answer() {
                    self.json.feed(bytes);
                }
                self.parser.text(&String::from_utf8_lossy(bytes));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokenizer() -> Arc<Tokenizer> {
        Arc::new(crate::test_support::tokenizer())
    }

    #[test]
    fn only_the_answer_channel_is_held_to_a_json_object() {
        let tok = tokenizer();
        let stops = tok.stop_tokens();
        let eot = tok.eot().unwrap();
        let mut c = JsonAnswer::new(tok.clone(), crate::gen::markers_of(&tok), &stops);
        let ids = |s: &str| tok.encode(s, false, true);
        let one = |s: &str| {
            let v = ids(s);
            assert_eq!(v.len(), 1, "{s:?} is {v:?}");
            v[0]
        };
        // Reasoning is free, and may end the turn.
        for t in ids(" to=self<|message|>Thinking about it") {
            assert!(c.allows(t));
            c.accept(t);
        }
        assert!(c.allows(one("x")));
        for t in ids("<|eom|><|start|>assistant to=user<|message|>") {
            assert!(c.allows(t));
            c.accept(t);
        }
        // The answer: an object, and the turn ends only when it is closed.
        assert!(!c.allows(one("x")));
        assert!(!c.allows(eot));
        assert!(c.allows(one("{")));
        for t in ids("{\"a\": [1, \"b\"]") {
            assert!(c.allows(t), "{:?}", tok.token_text(t));
            c.accept(t);
        }
        assert!(!c.allows(eot));
        assert!(!c.allows(one("]")));
        assert!(c.allows(one("}")));
        c.accept(one("}"));
        assert!(c.allows(eot));
        assert!(
            !c.allows(one(" ")),
            "after the object only the end may follow"
        );
    }
}
