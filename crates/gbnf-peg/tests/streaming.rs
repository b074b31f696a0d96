//! Streaming properties on generated tool-call transcripts: every prefix is viable (never
//! `NoMatch`), and feeding any chunking gives, after every chunk, exactly what a fresh partial
//! parse of that prefix gives (outcome, end and AST), and `finish` what a complete parse gives.

use gbnf_peg::{parse_bytes, Arena, Ast, Builder, NodeId, Options, Outcome, StreamParser};
use proptest::prelude::*;
use serde_json::Value;

/// Content up to `<tool_call>`, then tool calls `{"name": "…", "arguments": {…}}`.
fn tool_call_parser() -> Arena {
    let mut p = Builder::new();
    let content = p.until("<tool_call>");
    let content = p.tag("content", content);
    let open = p.literal("<tool_call>");
    let name = {
        let quote = p.literal("\"");
        let name = p.chars("[a-zA-Z0-9_]", 1..);
        let name = p.tag("tool-name", name);
        let name = p.atomic(name);
        let quote2 = p.literal("\"");
        let value = p.seq([quote, name, quote2]);
        p.json_member("name", value)
    };
    let args = {
        let json = p.json();
        let json = p.tag("tool-args", json);
        p.json_member("arguments", json)
    };
    let ws: Vec<NodeId> = (0..6).map(|_| p.space()).collect();
    let lbrace = p.literal("{");
    let comma = p.literal(",");
    let rbrace = p.literal("}");
    let close = p.literal("</tool_call>");
    let call = p.seq([open, ws[0], lbrace, ws[1], name, ws[2], comma, ws[3], args, ws[4], rbrace, ws[5], close]);
    let call = p.tag("tool", call);
    let call = p.trigger_rule("tool-call", call);
    let calls = p.zero_or_more(call);
    let end = p.end();
    let root = p.seq([content, calls, end]);
    p.set_root(root);
    p.build().unwrap_or_else(|err| panic!("{err}"))
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| Value::from(n)),
        (-1e6f64..1e6).prop_map(|x| Value::from(x)),
        "[a-z \"\\\\é你🚀\n]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec(("[a-z_]{1,6}", inner), 0..5)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

fn transcript() -> impl Strategy<Value = String> {
    let content = "[a-z <>/é你\n]{0,40}".prop_filter("no tool call marker", |c: &String| !c.contains("<tool_call>"));
    let call = ("[a-z_]{1,8}", prop::collection::vec(("[a-z]{1,5}", json_value()), 0..4), any::<bool>()).prop_map(
        |(name, args, pretty)| {
            let args = Value::Object(args.into_iter().collect());
            let args = if pretty {
                serde_json::to_string_pretty(&args)
            } else {
                serde_json::to_string(&args)
            };
            let args = args.unwrap_or_default();
            format!("<tool_call>{{\"name\": \"{name}\", \"arguments\": {args}}}</tool_call>")
        },
    );
    (content, prop::collection::vec(call, 0..3)).prop_map(|(mut content, calls)| {
        // As in llama.cpp, `until` stops before a delimiter prefix at the end of input even
        // in complete mode, so complete content must not end with one.
        let marker = "<tool_call>";
        if calls.is_empty() && (1..marker.len()).any(|n| content.ends_with(&marker[..n])) {
            content.push('.');
        }
        content + &calls.concat()
    })
}

/// The reachable AST as comparable rows: (parser, start, end, partial, depth).
fn rows(ast: &Ast) -> Vec<(NodeId, usize, usize, bool, usize)> {
    let mut out = Vec::new();
    let mut stack: Vec<_> = ast.roots().iter().rev().map(|&id| (id, 0)).collect();
    while let Some((id, depth)) = stack.pop() {
        let node = ast.node(id);
        out.push((node.parser, node.start, node.end, node.is_partial, depth));
        stack.extend(ast.children(id).iter().rev().map(|&child| (child, depth + 1)));
    }
    out
}

fn check_prefixes(arena: &Arena, text: &str) {
    let bytes = text.as_bytes();
    let partial = Options { partial: true };
    for cut in 0..=bytes.len() {
        let res = parse_bytes(arena, &bytes[..cut], &partial);
        assert_ne!(res.outcome, Outcome::NoMatch, "prefix {:?}", String::from_utf8_lossy(&bytes[..cut]));
    }
    let res = parse_bytes(arena, bytes, &Options::default());
    assert_eq!(res.outcome, Outcome::Match, "{text:?}");
    assert_eq!(res.end, bytes.len());
}

fn check_stream(arena: &Arena, text: &str, cuts: &[usize]) {
    let bytes = text.as_bytes();
    let partial = Options { partial: true };
    let mut stream = StreamParser::new(arena);
    let mut at = 0;
    let mut cuts = cuts.iter().cycle();
    while at < bytes.len() {
        let step = cuts.next().copied().unwrap_or(1).max(1);
        let next = (at + step).min(bytes.len());
        let status = stream.feed(&bytes[at..next]);
        at = next;
        let fresh = parse_bytes(arena, &bytes[..at], &partial);
        assert_eq!((status.outcome, status.end), (fresh.outcome, fresh.end), "after {at} bytes of {text:?}");
        assert_eq!(rows(stream.ast()), rows(&fresh.ast), "AST after {at} bytes of {text:?}");
        if at % 3 == 0 {
            // Finishing in the middle must not disturb later feeds.
            let done = stream.finish();
            let complete = parse_bytes(arena, &bytes[..at], &Options::default());
            assert_eq!((done.outcome, done.end), (complete.outcome, complete.end), "finish after {at} bytes");
            assert_eq!(rows(stream.ast()), rows(&complete.ast));
        }
    }
    let done = stream.finish();
    let complete = parse_bytes(arena, bytes, &Options::default());
    assert_eq!((done.outcome, done.end), (complete.outcome, complete.end));
    assert_eq!(rows(stream.ast()), rows(&complete.ast));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_prefix_is_viable(text in transcript()) {
        check_prefixes(&tool_call_parser(), &text);
    }

    #[test]
    fn streaming_equals_reparsing(text in transcript(), cuts in prop::collection::vec(1usize..9, 1..8)) {
        check_stream(&tool_call_parser(), &text, &cuts);
    }
}

#[test]
fn streaming_byte_by_byte() {
    let text = "Let me check. 你好 <tool_c <tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": [1, 2.5e3, -0.5], \"x\": {\"y\": null, \"z\": true}}}</tool_call>";
    check_stream(&tool_call_parser(), text, &[1]);
    check_prefixes(&tool_call_parser(), text);
}
