//! An incremental JSON recognizer over bytes: it says whether what it has seen can still be
//! the start of a JSON object (`feed`), and whether the object is complete. Used to constrain
//! sampling in JSON mode.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    Object,
    Array,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Num {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    E,
    ESign,
    Exp,
}

impl Num {
    fn can_end(self) -> bool {
        matches!(self, Num::Zero | Num::Int | Num::Frac | Num::Exp)
    }

    fn next(self, b: u8) -> Option<Num> {
        Some(match (self, b) {
            (Num::Minus, b'0') => Num::Zero,
            (Num::Minus, b'1'..=b'9') => Num::Int,
            (Num::Int, b'0'..=b'9') => Num::Int,
            (Num::Zero | Num::Int, b'.') => Num::Dot,
            (Num::Dot | Num::Frac, b'0'..=b'9') => Num::Frac,
            (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Num::E,
            (Num::E, b'+' | b'-') => Num::ESign,
            (Num::E | Num::ESign | Num::Exp, b'0'..=b'9') => Num::Exp,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// A value is expected (at the top: only an object).
    Value,
    /// Just after `[`: a value or `]`.
    ArrayStart,
    /// Just after `{`: a key or `}`.
    ObjectStart,
    /// After `,` in an object: a key.
    Key,
    Colon,
    /// After a value inside a container.
    CommaOrEnd,
    /// In a string; `hex` digits of a `\u` escape still due (their value so far in `code`),
    /// `escape` after a backslash; `low` while a high surrogate waits for its `\uDC00`-`DFFF`
    /// (1: a backslash is due, 2: a `u`, 3: the hex digits).
    Str {
        key: bool,
        escape: bool,
        hex: u8,
        code: u16,
        low: u8,
    },
    Number(Num),
    Literal {
        rest: &'static [u8],
    },
    /// The top-level object is closed: only whitespace may follow.
    Done,
}

/// Recognizes a prefix of one JSON object.
#[derive(Debug, Clone)]
pub struct JsonPrefix {
    stack: Vec<Frame>,
    state: State,
    /// Whitespace bytes in a row between tokens (capped, so that a constrained sampler cannot
    /// idle in whitespace forever).
    ws_run: u8,
}

/// Deepest nesting (serde_json's default recursion limit).
pub const MAX_DEPTH: usize = 128;

/// Most whitespace bytes in a row between JSON tokens.
pub const MAX_WHITESPACE_RUN: u8 = 20;

impl Default for JsonPrefix {
    fn default() -> Self {
        JsonPrefix {
            stack: Vec::new(),
            state: State::Value,
            ws_run: 0,
        }
    }
}

impl JsonPrefix {
    /// Whether the object is complete.
    pub fn is_complete(&self) -> bool {
        self.state == State::Done
    }

    /// Feeds bytes; false (and the state is then unspecified) when they cannot continue a JSON
    /// object. Call on a clone to test a candidate.
    pub fn feed(&mut self, bytes: &[u8]) -> bool {
        bytes.iter().all(|&b| self.byte(b))
    }

    fn after_value(&mut self) {
        self.state = if self.stack.is_empty() {
            State::Done
        } else {
            State::CommaOrEnd
        };
    }

    fn byte(&mut self, b: u8) -> bool {
        let ws = matches!(b, b' ' | b'\t' | b'\n' | b'\r');
        let in_token = matches!(
            self.state,
            State::Str { .. } | State::Number(_) | State::Literal { .. }
        );
        if !ws || in_token {
            self.ws_run = 0;
        }
        match self.state {
            State::Str {
                key,
                escape,
                hex,
                code,
                low,
            } => {
                let str_state = |escape, hex, code, low| State::Str {
                    key,
                    escape,
                    hex,
                    code,
                    low,
                };
                if hex > 0 {
                    let Some(d) = (b as char).to_digit(16) else {
                        return false;
                    };
                    let code = (code << 4) | d as u16;
                    if hex > 1 {
                        self.state = str_state(false, hex - 1, code, low);
                        return true;
                    }
                    let is_high = (0xD800..0xDC00).contains(&code);
                    let is_low = (0xDC00..0xE000).contains(&code);
                    // A low surrogate only right after a high one; a high one needs a low one.
                    if (low == 3) != is_low {
                        return false;
                    }
                    self.state = str_state(false, 0, 0, if is_high { 1 } else { 0 });
                } else if low == 1 {
                    if b != b'\\' {
                        return false;
                    }
                    self.state = str_state(false, 0, 0, 2);
                } else if low == 2 {
                    if b != b'u' {
                        return false;
                    }
                    self.state = str_state(false, 4, 0, 3);
                } else if escape {
                    match b {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                            self.state = str_state(false, 0, 0, 0)
                        }
                        b'u' => self.state = str_state(false, 4, 0, 0),
                        _ => return false,
                    }
                } else if b == b'"' {
                    if key {
                        self.state = State::Colon;
                    } else {
                        self.after_value();
                    }
                } else if b == b'\\' {
                    self.state = str_state(true, 0, 0, 0);
                } else if b < 0x20 {
                    return false;
                }
                true
            }
            State::Number(n) => match n.next(b) {
                Some(next) => {
                    self.state = State::Number(next);
                    true
                }
                None if n.can_end() => {
                    self.after_value();
                    self.byte(b)
                }
                None => false,
            },
            State::Literal { rest } => {
                if rest.first() != Some(&b) {
                    return false;
                }
                if rest.len() == 1 {
                    self.after_value();
                } else {
                    self.state = State::Literal { rest: &rest[1..] };
                }
                true
            }
            _ if ws => {
                self.ws_run += 1;
                self.ws_run <= MAX_WHITESPACE_RUN
            }
            State::Done => false,
            State::Colon => {
                self.state = State::Value;
                b == b':'
            }
            State::ObjectStart | State::Key => match b {
                b'"' => {
                    self.state = State::Str {
                        key: true,
                        escape: false,
                        hex: 0,
                        code: 0,
                        low: 0,
                    };
                    true
                }
                b'}' if self.state == State::ObjectStart => {
                    self.stack.pop();
                    self.after_value();
                    true
                }
                _ => false,
            },
            State::CommaOrEnd => match (b, self.stack.last()) {
                (b',', Some(Frame::Object)) => {
                    self.state = State::Key;
                    true
                }
                (b',', Some(Frame::Array)) => {
                    self.state = State::Value;
                    true
                }
                (b'}', Some(Frame::Object)) | (b']', Some(Frame::Array)) => {
                    self.stack.pop();
                    self.after_value();
                    true
                }
                _ => false,
            },
            State::ArrayStart if b == b']' => {
                self.stack.pop();
                self.after_value();
                true
            }
            State::Value | State::ArrayStart => {
                if self.stack.is_empty() && b != b'{' {
                    return false;
                }
                if matches!(b, b'{' | b'[') && self.stack.len() >= MAX_DEPTH {
                    return false;
                }
                self.state = match b {
                    b'{' => {
                        self.stack.push(Frame::Object);
                        State::ObjectStart
                    }
                    b'[' => {
                        self.stack.push(Frame::Array);
                        State::ArrayStart
                    }
                    b'"' => State::Str {
                        key: false,
                        escape: false,
                        hex: 0,
                        code: 0,
                        low: 0,
                    },
                    b'-' => State::Number(Num::Minus),
                    b'0' => State::Number(Num::Zero),
                    b'1'..=b'9' => State::Number(Num::Int),
                    b't' => State::Literal { rest: b"rue" },
                    b'f' => State::Literal { rest: b"alse" },
                    b'n' => State::Literal { rest: b"ull" },
                    _ => return false,
                };
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::JsonPrefix;

    fn check(s: &str) -> (bool, bool) {
        let mut j = JsonPrefix::default();
        let ok = j.feed(s.as_bytes());
        (ok, ok && j.is_complete())
    }

    #[test]
    fn accepts_prefixes_and_completes_objects() {
        for s in [
            r#"{"a": [1, -2.5e+3, true, null, {"b": "x\"\u00e9"}], "c": {}}"#,
            "{}",
            " { \"k\" : [ ] } ",
            r#"{"n": 0, "m": [0.5, 10]}"#,
            r#"{"e": "\ud83d\ude00 \u00e9"}"#,
        ] {
            assert_eq!(check(s), (true, true), "{s}");
            assert!(serde_json::from_str::<serde_json::Value>(s).is_ok());
            for cut in 0..s.len() {
                let (ok, _) = check(&s[..cut]);
                assert!(ok, "prefix {:?}", &s[..cut]);
            }
        }
        assert_eq!(check(r#"{"a": 1"#), (true, false));
        assert_eq!(check(r#"{"a": 12"#), (true, false), "a number may go on");
        let pad = " ".repeat(super::MAX_WHITESPACE_RUN as usize);
        assert!(check(&format!("{{{pad}\"a\":{pad}1}}")).1);
        assert!(!check(&format!("{{{pad} ")).0, "whitespace runs are capped");
        assert!(
            check(&format!("{{\"{pad}{pad}\": 1}}")).1,
            "not inside strings"
        );
    }

    #[test]
    fn refuses_what_no_json_object_starts_with() {
        for s in [
            "[1]",
            "1",
            "\"x\"",
            "{a",
            "{\"a\" 1",
            "{\"a\": 01",
            "{\"a\": tru3",
            "{\"a\": 1,}",
            "{\"a\": [1,]",
            "{} x",
            "{\"a\": \"\u{1}\"}",
            "{\"a\": \"\\x\"}",
            "{\"a\": -}",
            "{\"a\": 1.}",
            "{\"a\": [}",
            "{\"a\": 1]",
        ] {
            assert!(!check(s).0, "{s:?} was accepted");
        }
    }

    #[test]
    fn surrogates_pair_up_and_nesting_is_capped() {
        for bad in [
            r#"{"a": "\ud83d"}"#,
            r#"{"a": "\udc00"}"#,
            r#"{"a": "\ud83dx"}"#,
            r#"{"a": "\ud83d\u0041"}"#,
        ] {
            assert!(!check(bad).0, "{bad} was accepted");
            assert!(serde_json::from_str::<serde_json::Value>(bad).is_err());
        }
        let deep = format!("{{\"a\": {}", "[".repeat(super::MAX_DEPTH - 1));
        assert!(check(&deep).0);
        assert!(
            !check(&format!("{deep}[")).0,
            "nesting is capped as serde_json caps it"
        );
    }
}
