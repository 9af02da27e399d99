//! Chat template rendering against Jinja2 in Hugging Face's configuration (fixtures from
//! tools/reference/gen_tokenizer_fixtures.py) on the synthetic Glimmer template.

mod common;

use muser_gguf::Value;
use muser_synth::Preset;
use muser_tokenizer::{ChatMessage, ChatTemplate, Error, Tokenizer};

fn fixture() -> serde_json::Value {
    let path = format!("{}/tests/fixtures/chat.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("json")
}

#[test]
fn renders_like_hugging_face() {
    let tmpl = ChatTemplate::from_gguf(&common::header(Preset::Tiny)).expect("template");
    let fx = fixture();
    assert_eq!(
        fx["template_len"].as_u64(),
        Some(muser_synth::tokenizer::CHAT_TEMPLATE.len() as u64)
    );
    for case in fx["cases"].as_array().unwrap() {
        let messages = case["messages"].as_array().unwrap();
        let tools = (!case["tools"].is_null()).then_some(&case["tools"]);
        let gen = case["add_generation_prompt"].as_bool().unwrap();
        let got = tmpl.render(messages, tools, gen).expect("render");
        assert_eq!(got, case["rendered"].as_str().unwrap(), "{}", case["name"]);
    }
}

#[test]
fn typed_messages_and_generation_prompt() {
    let h = common::header(Preset::Tiny);
    let tmpl = ChatTemplate::from_gguf(&h).unwrap();
    let msgs = [
        ChatMessage::new("user", "Hi"),
        ChatMessage {
            reasoning_content: Some("greet".into()),
            ..ChatMessage::new("assistant", "Hello")
        },
        ChatMessage::new("user", "Bye"),
    ];
    let s = tmpl.render_messages(&msgs, None, true).unwrap();
    assert_eq!(
        s,
        "<|begin_of_text|><|start|>user<|message|>Hi<|eot|>\
         <|start|>assistant to=self<|message|>greet<|eom|>\
         <|start|>assistant to=user<|message|>Hello<|eot|>\
         <|start|>user<|message|>Bye<|eot|><|start|>assistant"
    );
    // The prompt tokenizes with the template's specials as single tokens (BOS is in the text).
    let tok = Tokenizer::from_gguf(&h).unwrap();
    let ids = tok.encode(&s, false, true);
    assert_eq!(ids[0], tok.bos().unwrap());
    assert_eq!(ids[1], tok.token_id("<|start|>").unwrap());
    assert_eq!(tok.decode(&ids), s.as_bytes());
}

#[test]
fn raise_exception_and_errors() {
    let t = ChatTemplate::new("{{ raise_exception('no system role') }}", "", "").unwrap();
    let err = t.render(&[], None, false).unwrap_err();
    assert!(matches!(err, Error::Template(_)), "{err}");
    assert!(err.to_string().contains("no system role"), "{err}");
    assert!(matches!(
        ChatTemplate::new("{% if %}", "", ""),
        Err(Error::Template(_))
    ));
    let t = ChatTemplate::new("{{ messages[0].role }}", "", "").unwrap();
    assert!(matches!(
        t.render(&[serde_json::json!("x")], None, false),
        Err(Error::BadMessage { index: 0, .. })
    ));
    let h = common::synth_header(Preset::Tiny, |kv| {
        common::set(kv, "tokenizer.chat_template", None)
    });
    assert!(matches!(
        ChatTemplate::from_gguf(&h),
        Err(Error::MissingKey { .. })
    ));
    let h = common::synth_header(Preset::Tiny, |kv| {
        common::set(kv, "tokenizer.chat_template", Some(Value::U32(3)))
    });
    assert!(ChatTemplate::from_gguf(&h).is_err());
}

#[test]
fn pycompat_methods_and_tojson() {
    let t = ChatTemplate::new(
        "{% for k, v in messages[0].items() %}{{ k }}={{ v | tojson }};{% endfor %}\
         {{ messages[0].get('missing', 'dflt') }} {{ messages[0].content.upper() }}\
         {{ tools | tojson(indent=1) }}",
        "",
        "",
    )
    .unwrap();
    let msg = serde_json::json!({"role": "user", "content": "é<b>&'"});
    let tools = serde_json::json!([{"z": 1, "a": [true, null, 0.5]}]);
    let s = t.render(&[msg], Some(&tools), false).unwrap();
    assert_eq!(
        s,
        "role=\"user\";content=\"é<b>&'\";dflt É<B>&'[\n {\n  \"z\": 1,\n  \"a\": [\n   true,\n   \
         null,\n   0.5\n  ]\n }\n]"
    );
}
