//! Chat templates: the GGUF's `tokenizer.chat_template` (Jinja) rendered with minijinja in an
//! environment configured like Hugging Face's `apply_chat_template` (trim_blocks,
//! lstrip_blocks, loop controls, `raise_exception`, Python-style `tojson`, Python string and
//! dict methods via minijinja-contrib's pycompat).

use minijinja::value::{Kwargs, Serde};
use minijinja::{context, Environment, ErrorKind, Value};
use muser_gguf::Header;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::vocab::{KEY_BOS, KEY_EOS, KEY_TOKENS};

pub const KEY_CHAT_TEMPLATE: &str = "tokenizer.chat_template";
const NAME: &str = "chat_template";

/// One chat message as templates expect it (OpenAI / Hugging Face field names).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
    /// The model's reasoning (Glimmer's ` to=self` channel), for assistant messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// `[{"type": "function", "function": {"name": .., "arguments": ..}}]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<serde_json::Value>>,
    /// Tool name, for `tool` messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl ChatMessage {
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: role.into(),
            content: content.into(),
            ..ChatMessage::default()
        }
    }
}

/// A compiled chat template with the BOS/EOS texts it may refer to.
#[derive(Debug)]
pub struct ChatTemplate {
    env: Environment<'static>,
    bos_token: String,
    eos_token: String,
}

impl ChatTemplate {
    /// Reads `tokenizer.chat_template` and the BOS/EOS token texts.
    pub fn from_gguf(header: &Header) -> Result<ChatTemplate> {
        let source = header
            .get_str(KEY_CHAT_TEMPLATE)?
            .ok_or(Error::MissingKey {
                key: KEY_CHAT_TEMPLATE,
            })?;
        let tokens = header.get_array(KEY_TOKENS)?.and_then(|a| a.as_strings());
        let text_of = |key: &'static str| -> Result<String> {
            let Some(id) = header.get_u64(key)? else {
                return Ok(String::new());
            };
            let tokens = tokens.ok_or(Error::MissingKey { key: KEY_TOKENS })?;
            usize::try_from(id)
                .ok()
                .and_then(|i| tokens.get(i))
                .cloned()
                .ok_or(Error::IdOutOfRange {
                    key,
                    id,
                    n_vocab: tokens.len(),
                })
        };
        ChatTemplate::new(source, &text_of(KEY_BOS)?, &text_of(KEY_EOS)?)
    }

    /// A template from source, with the texts `bos_token` and `eos_token` render as.
    pub fn new(source: &str, bos_token: &str, eos_token: &str) -> Result<ChatTemplate> {
        let mut env = Environment::new();
        env.set_syntax(
            minijinja::syntax::SyntaxConfig::builder()
                .trim_blocks(true)
                .lstrip_blocks(true)
                .build()?,
        );
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", raise_exception);
        env.add_filter("tojson", tojson);
        env.add_template_owned(NAME, source.to_string())?;
        Ok(ChatTemplate {
            env,
            bos_token: bos_token.to_string(),
            eos_token: eos_token.to_string(),
        })
    }

    /// Renders `messages` (JSON objects with `role`, `content`, optional `reasoning_content`,
    /// `tool_calls`, `name`), the optional `tools` list, and the generation prompt.
    pub fn render(
        &self,
        messages: &[serde_json::Value],
        tools: Option<&serde_json::Value>,
        add_generation_prompt: bool,
    ) -> Result<String> {
        for (index, m) in messages.iter().enumerate() {
            if !m.get("role").is_some_and(serde_json::Value::is_string) {
                return Err(Error::BadMessage {
                    index,
                    reason: "not an object with a string \"role\"".into(),
                });
            }
        }
        let tmpl = self.env.get_template(NAME)?;
        let ctx = context! {
            messages => Value::from(Serde(messages)),
            tools => tools.map(|t| Value::from(Serde(t))),
            add_generation_prompt => add_generation_prompt,
            bos_token => self.bos_token.as_str(),
            eos_token => self.eos_token.as_str(),
        };
        Ok(tmpl.render(ctx)?)
    }

    /// `render` for typed messages.
    pub fn render_messages(
        &self,
        messages: &[ChatMessage],
        tools: Option<&serde_json::Value>,
        add_generation_prompt: bool,
    ) -> Result<String> {
        let values = messages
            .iter()
            .enumerate()
            .map(|(index, m)| {
                serde_json::to_value(m).map_err(|e| Error::BadMessage {
                    index,
                    reason: e.to_string(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        self.render(&values, tools, add_generation_prompt)
    }
}

fn raise_exception(msg: String) -> std::result::Result<Value, minijinja::Error> {
    Err(minijinja::Error::new(ErrorKind::InvalidOperation, msg))
}

/// Hugging Face's `tojson`: `json.dumps(x, ensure_ascii=False, indent=indent,
/// sort_keys=sort_keys)`, i.e. `", "`/`": "` separators, key order kept, non-ASCII unescaped.
/// (minijinja's built-in is compact and HTML-escapes `<>&'`, which would change the prompt.)
fn tojson(value: Value, kwargs: Kwargs) -> std::result::Result<Value, minijinja::Error> {
    let indent: Option<usize> = kwargs.get("indent")?;
    let sort_keys: Option<bool> = kwargs.get("sort_keys")?;
    let _: Option<bool> = kwargs.get("ensure_ascii")?;
    kwargs.assert_all_used()?;
    let json = serde_json::to_value(&value)
        .map_err(|e| minijinja::Error::new(ErrorKind::InvalidOperation, format!("tojson: {e}")))?;
    let mut out = String::new();
    write_py_json(&json, indent, sort_keys.unwrap_or(false), 0, &mut out);
    Ok(Value::from_safe_string(out))
}

fn write_py_json(
    v: &serde_json::Value,
    indent: Option<usize>,
    sort: bool,
    depth: usize,
    out: &mut String,
) {
    use serde_json::Value as J;
    let newline = |out: &mut String, depth: usize| {
        if let Some(n) = indent {
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', n * depth));
        }
    };
    let item_sep = if indent.is_some() { "," } else { ", " };
    match v {
        J::Array(items) if !items.is_empty() => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(item_sep);
                }
                newline(out, depth + 1);
                write_py_json(item, indent, sort, depth + 1, out);
            }
            newline(out, depth);
            out.push(']');
        }
        J::Object(map) if !map.is_empty() => {
            let mut entries: Vec<_> = map.iter().collect();
            if sort {
                entries.sort_by(|a, b| a.0.cmp(b.0));
            }
            out.push('{');
            for (i, (k, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(item_sep);
                }
                newline(out, depth + 1);
                out.push_str(&serde_json::Value::String(k.clone()).to_string());
                out.push_str(": ");
                write_py_json(item, indent, sort, depth + 1, out);
            }
            newline(out, depth);
            out.push('}');
        }
        J::Number(n) if n.is_f64() => out.push_str(&py_float(n.as_f64().unwrap_or(f64::NAN))),
        // Strings, integers, bools, null, empty containers: serde_json agrees with Python.
        other => out.push_str(&other.to_string()),
    }
}

/// Python's `repr(float)`: shortest round-trip digits, scientific notation outside
/// 1e-4 <= |x| < 1e16, exponent with a sign and at least two digits.
fn py_float(x: f64) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            "NaN"
        } else if x > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        }
        .into();
    }
    if x == 0.0 || (1e-4..1e16).contains(&x.abs()) {
        let s = format!("{x}");
        return if s.contains('.') { s } else { format!("{s}.0") };
    }
    let s = format!("{x:e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_json_formatting() {
        let v: serde_json::Value =
            serde_json::from_str(r#"{"b": [1, 2.5, "é\n"], "a": {}, "c": 1e20, "d": 0.0001}"#)
                .unwrap();
        let mut s = String::new();
        write_py_json(&v, None, false, 0, &mut s);
        assert_eq!(
            s,
            r#"{"b": [1, 2.5, "é\n"], "a": {}, "c": 1e+20, "d": 0.0001}"#
        );
        s.clear();
        write_py_json(&serde_json::json!({"k": [1]}), Some(2), false, 0, &mut s);
        assert_eq!(s, "{\n  \"k\": [\n    1\n  ]\n}");
        assert_eq!(py_float(1.0), "1.0");
        assert_eq!(py_float(1.5e-7), "1.5e-07");
    }
}
