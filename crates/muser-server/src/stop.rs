//! Stop strings over streamed text: text is released only once it cannot be the start of a
//! stop string; on a match the text before it is released and generation ends.

#[derive(Debug, Clone, Default)]
pub struct StopMatcher {
    stops: Vec<String>,
    held: String,
}

/// What to release after a push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Released {
    pub text: String,
    /// The stop string that matched (generation must end).
    pub stopped: Option<String>,
}

impl StopMatcher {
    pub fn new(stops: Vec<String>) -> StopMatcher {
        StopMatcher {
            stops: stops.into_iter().filter(|s| !s.is_empty()).collect(),
            held: String::new(),
        }
    }

    pub fn push(&mut self, text: &str) -> Released {
        self.held.push_str(text);
        if self.stops.is_empty() {
            return Released {
                text: std::mem::take(&mut self.held),
                stopped: None,
            };
        }
        // The earliest complete match wins.
        let hit = self
            .stops
            .iter()
            .filter_map(|s| self.held.find(s.as_str()).map(|at| (at, s)))
            .min_by_key(|(at, _)| *at);
        if let Some((at, s)) = hit {
            let stopped = Some(s.clone());
            let text = self.held[..at].to_string();
            self.held.clear();
            return Released { text, stopped };
        }
        // Hold back the longest suffix that is a proper prefix of some stop string.
        let mut keep = 0;
        for s in &self.stops {
            for (i, _) in s.char_indices().skip(1) {
                if i > keep && self.held.ends_with(&s[..i]) {
                    keep = i;
                }
            }
        }
        let cut = self.held.len() - keep;
        let text = self.held[..cut].to_string();
        self.held.drain(..cut);
        Released {
            text,
            stopped: None,
        }
    }

    /// End of generation: whatever is held is released.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_prefixes_and_cuts_at_the_match() {
        let mut m = StopMatcher::new(vec!["END".into(), "\n\n".into()]);
        assert_eq!(m.push("hello E").text, "hello ");
        assert_eq!(m.push("N").text, "");
        let r = m.push("Dless");
        assert_eq!(
            r,
            Released {
                text: "".into(),
                stopped: Some("END".into())
            }
        );
        let mut m = StopMatcher::new(vec!["END".into()]);
        assert_eq!(m.push("EN").text, "");
        assert_eq!(m.push("x").text, "ENx");
        assert_eq!(m.push("é E").text, "é ");
        assert_eq!(m.finish(), "E");
        let mut m = StopMatcher::new(vec!["b".into(), "abc".into()]);
        let r = m.push("xabc");
        assert_eq!(r.text, "x", "the match that starts first wins");
        assert_eq!(r.stopped.as_deref(), Some("abc"));
        let mut none = StopMatcher::new(vec![]);
        assert_eq!(none.push("abc").text, "abc");
    }
}
