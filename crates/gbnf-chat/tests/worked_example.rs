//! The worked example of the README: a tool-call parser written once, used twice.
//!
//! 1. Lowered to a lazy GBNF grammar (what llama.cpp's sampler enforces once the trigger
//!    word `<tool_call>` appears), snapshotted with the grammar's verdicts.
//! 2. Run over a model output streamed in small chunks, snapshotted as the message deltas a
//!    client would receive, ending in the OpenAI-style message.

use gbnf::Matcher;
use gbnf_chat::builders::{content, reasoning, standard_json_tools, JsonToolsOptions, Tool};
use gbnf_chat::{ChatStream, Message};
use gbnf_peg::{lower, Arena, Builder, LowerOptions};
use serde_json::json;

/// The parser: optional `<think>` reasoning, content, then an optional tool call.
fn tool_call_parser() -> Arena {
    let tools = Tool::from_openai(&json!([{
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"enum": ["celsius", "fahrenheit"]}
                },
                "required": ["city"],
                "additionalProperties": false
            }
        }
    }]));
    let mut p = Builder::new();
    let thinking = {
        let open = p.literal("<think>");
        let body = p.until("</think>");
        let body = reasoning(&mut p, body);
        let close = p.literal("</think>");
        let ws = p.space();
        let block = p.seq([open, body, close, ws]);
        p.optional(block)
    };
    let text = p.until("<tool_call>");
    let text = content(&mut p, text);
    let calls = standard_json_tools(&mut p, &tools, &JsonToolsOptions::default());
    let end = p.end();
    let root = p.seq([thinking, text, calls, end]);
    p.set_root(root);
    p.build().unwrap_or_else(|error| panic!("{error}"))
}

fn settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../snapshots/chat"),
    );
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings
}

#[test]
fn the_tool_call_parser_lowers_to_a_lazy_grammar() {
    let arena = tool_call_parser();
    let options = LowerOptions {
        lazy: true,
        ..LowerOptions::default()
    };
    let lowered = lower(&arena, &options).unwrap_or_else(|error| panic!("{error}"));
    let triggers: Vec<&str> = lowered.triggers.iter().map(|name| name.as_str()).collect();
    assert_eq!(triggers, ["tool-call"]);
    gbnf::validate(&lowered.grammar, "root").unwrap_or_else(|error| panic!("{error}"));
    let matcher = Matcher::new(&lowered.grammar, "root").unwrap_or_else(|error| panic!("{error}"));
    let samples = [
        r#"<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>"#,
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"unit\": \"celsius\"}}\n</tool_call>",
        r#"<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "unit": "kelvin"}}</tool_call>"#,
        r#"<tool_call>{"name": "get_time", "arguments": {}}</tool_call>"#,
        r#"<tool_call>{"name": "get_weather", "arguments": {"#,
        "Sure! <tool_call>",
    ];
    let mut snapshot = String::from(
        "The lazy grammar of the tool-call parser: llama.cpp applies it from the trigger word \
         `<tool_call>` on (trigger rule: tool-call).\n",
    );
    snapshot.push_str("--- grammar (root: root) ---\n");
    snapshot.push_str(&gbnf::print(&lowered.grammar));
    snapshot.push_str("--- verdicts ---\n");
    for sample in samples {
        let json = serde_json::Value::String(sample.to_owned()).to_string();
        let line = format!("{}\t{json}", matcher.verdict(sample));
        snapshot.push_str(&line);
        snapshot.push('\n');
    }
    settings().bind(|| insta::assert_snapshot!("worked-example-lazy-grammar", snapshot));
}

#[test]
fn the_tool_call_parser_maps_a_streamed_output() {
    let arena = tool_call_parser();
    let output = "<think>The user wants the weather.</think>\nLet me check. <tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}</tool_call>";
    let mut stream = ChatStream::new(&arena);
    let mut rebuilt = Message::default();
    let mut snapshot = String::from("chunk → delta (content / reasoning / tool calls)\n");
    let bytes = output.as_bytes();
    for chunk in bytes.chunks(7) {
        let chunk = std::str::from_utf8(chunk).unwrap_or_else(|error| panic!("{error}"));
        let update = stream.feed(chunk).unwrap_or_else(|error| panic!("{error}"));
        rebuilt.apply(&update.delta);
        assert_eq!(&rebuilt, update.message);
        snapshot.push_str(&format!("{chunk:?} → {}\n", describe(&update.delta)));
    }
    let last = stream.finish().unwrap_or_else(|error| panic!("{error}"));
    rebuilt.apply(&last.delta);
    assert_eq!(&rebuilt, last.message);
    snapshot.push_str(&format!("(end) → {}\n\nmessage:\n", describe(&last.delta)));
    snapshot.push_str(&serde_json::to_string_pretty(&last.message.to_json()).unwrap_or_default());
    snapshot.push('\n');
    settings().bind(|| insta::assert_snapshot!("worked-example-stream", snapshot));
}

fn describe(delta: &gbnf_chat::MessageDelta) -> String {
    let mut parts = Vec::new();
    if !delta.content.is_empty() {
        parts.push(format!("content {:?}", delta.content));
    }
    if !delta.reasoning_content.is_empty() {
        parts.push(format!("reasoning {:?}", delta.reasoning_content));
    }
    for call in &delta.tool_calls {
        let mut text = format!("call #{}", call.index);
        if let Some(name) = &call.name {
            text.push_str(&format!(" name {name:?}"));
        }
        if !call.arguments.is_empty() {
            text.push_str(&format!(" arguments {:?}", call.arguments));
        }
        parts.push(text);
    }
    if parts.is_empty() {
        "-".to_owned()
    } else {
        parts.join(", ")
    }
}
