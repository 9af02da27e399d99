//! Glimmer's tool-call bodies (`<atem:function_calls><atem:invoke name=…><atem:parameter
//! name=…>value</atem:parameter>…`) to OpenAI `tool_calls` with JSON arguments.

use serde_json::{Map, Value};

/// One parsed call: the function name and its arguments object.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub name: String,
    pub arguments: Value,
}

/// Parses every `<atem:invoke>` of a tool message body. A parameter's value is JSON when it
/// parses as JSON (numbers, booleans, objects), else the string. A body without any invoke
/// block becomes one call to `recipient` whose arguments are the body as JSON if it is JSON,
/// else `{}`; `None` when there is nothing callable at all.
///
/// `tools` (the request's OpenAI tool list) wins over the guess: a parameter its schema types
/// as `"string"` stays the text as written (a ZIP code `01234` is not a number).
pub fn parse_calls(body: &str, recipient: &str, tools: Option<&Value>) -> Vec<ToolCall> {
    let mut calls = Vec::new();
    let mut rest = body;
    while let Some(at) = rest.find("<atem:invoke") {
        rest = &rest[at + "<atem:invoke".len()..];
        let Some(close) = rest.find('>') else { break };
        let name = attr(&rest[..close], "name")
            .unwrap_or(recipient)
            .to_string();
        rest = &rest[close + 1..];
        let end = rest.find("</atem:invoke>").unwrap_or(rest.len());
        let mut args = Map::new();
        let mut inner = &rest[..end];
        while let Some(p) = inner.find("<atem:parameter") {
            inner = &inner[p + "<atem:parameter".len()..];
            let Some(close) = inner.find('>') else { break };
            let key = attr(&inner[..close], "name").unwrap_or("").to_string();
            inner = &inner[close + 1..];
            let vend = inner.find("</atem:parameter>").unwrap_or(inner.len());
            let raw = &inner[..vend];
            let value = if declared_string(tools, &name, &key) {
                Value::String(raw.to_string())
            } else {
                serde_json::from_str::<Value>(raw.trim())
                    .ok()
                    .filter(|v| !v.is_string() || raw.trim().starts_with('"'))
                    .unwrap_or_else(|| Value::String(raw.to_string()))
            };
            args.insert(key, value);
            inner = &inner[vend..];
        }
        calls.push(ToolCall {
            name,
            arguments: Value::Object(args),
        });
        rest = &rest[end..];
    }
    if calls.is_empty() && !recipient.is_empty() {
        let arguments = serde_json::from_str::<Value>(body.trim())
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| Value::Object(Map::new()));
        calls.push(ToolCall {
            name: recipient.to_string(),
            arguments,
        });
    }
    calls
}

/// Whether the tool list declares `function`'s parameter `key` as a string.
fn declared_string(tools: Option<&Value>, function: &str, key: &str) -> bool {
    tools
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|t| t.pointer("/function/name").and_then(Value::as_str) == Some(function))
        .filter_map(|t| t.pointer("/function/parameters/properties")?.get(key))
        .any(|p| p.get("type").and_then(Value::as_str) == Some("string"))
}

/// `name="value"` (or single quotes) inside a tag.
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let at = tag.find(&format!("{name}="))? + name.len() + 1;
    let rest = &tag[at..];
    let q = rest.chars().next()?;
    if q != '"' && q != '\'' {
        return rest.split_whitespace().next();
    }
    let end = rest[1..].find(q)?;
    Some(&rest[1..1 + end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn invoke_blocks_become_calls_with_json_arguments() {
        let body = r#"<atem:function_calls><atem:invoke name="get_weather"><atem:parameter name="city">Paris</atem:parameter><atem:parameter name="days">3</atem:parameter><atem:parameter name="opts">{"unit": "C"}</atem:parameter></atem:invoke><atem:invoke name='now'></atem:invoke></atem:function_calls>"#;
        let calls = parse_calls(body, "get_weather", None);
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].name, "get_weather");
        assert_eq!(
            calls[0].arguments,
            json!({"city": "Paris", "days": 3, "opts": {"unit": "C"}})
        );
        assert_eq!(
            calls[1],
            ToolCall {
                name: "now".into(),
                arguments: json!({})
            }
        );
    }

    #[test]
    fn the_tool_schema_keeps_string_parameters_strings() {
        let body = r#"<atem:invoke name="ship"><atem:parameter name="zip">01234</atem:parameter><atem:parameter name="n">3</atem:parameter><atem:parameter name="ok">true</atem:parameter></atem:invoke>"#;
        let tools = json!([{"type": "function", "function": {"name": "ship", "parameters": {
            "type": "object",
            "properties": {"zip": {"type": "string"}, "n": {"type": "integer"}, "ok": {"type": "string"}}}}}]);
        assert_eq!(
            parse_calls(body, "ship", Some(&tools))[0].arguments,
            json!({"zip": "01234", "n": 3, "ok": "true"})
        );
        assert_eq!(
            parse_calls(body, "ship", None)[0].arguments,
            json!({"zip": "01234", "n": 3, "ok": true}),
            "without a schema: JSON when it parses (01234 does not)"
        );
    }

    #[test]
    fn bodies_without_invoke_and_truncated_bodies() {
        assert_eq!(
            parse_calls(r#"{"q": 1}"#, "search", None)[0].arguments,
            json!({"q": 1})
        );
        assert_eq!(
            parse_calls("garbage", "search", None)[0].arguments,
            json!({})
        );
        let cut = r#"<atem:function_calls><atem:invoke name="f"><atem:parameter name="a">x"#;
        assert_eq!(parse_calls(cut, "f", None)[0].arguments, json!({"a": "x"}));
        assert!(parse_calls("", "", None).is_empty());
    }
}
