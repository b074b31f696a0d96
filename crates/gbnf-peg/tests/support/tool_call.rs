//! The native tool-call parser that the runtime tests, the streaming properties and the
//! parse benchmark share, so that all three measure and check the same definition.
//! Included with `#[path]` (tests and benches are separate crates).

use gbnf_peg::{Arena, Builder, NodeId};

/// Content up to `<tool_call>`, then tool calls `{"name": "…", "arguments": {…}}`.
pub fn tool_call_parser() -> Arena {
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
    let call = p.seq([
        open, ws[0], lbrace, ws[1], name, ws[2], comma, ws[3], args, ws[4], rbrace, ws[5], close,
    ]);
    let call = p.tag("tool", call);
    let call = p.trigger_rule("tool-call", call);
    let calls = p.zero_or_more(call);
    let end = p.end();
    let root = p.seq([content, calls, end]);
    p.set_root(root);
    p.build().unwrap_or_else(|err| panic!("{err}"))
}
