//! Fuzz target for the gbnf-peg runtime and arena loader: arbitrary bytes become either input
//! for a fixed tool-call parser or a JSON arena plus input. Nothing may panic, and streaming the
//! input in chunks must agree with parsing it whole, and the byte-level JSON scanner must give
//! exactly what node-by-node parsing gives (outcome, end and AST, complete and partial).

#![no_main]

use gbnf_peg::{parse_bytes, Arena, Builder, Options, StreamParser};
use libfuzzer_sys::fuzz_target;

fn tool_call_parser() -> Arena {
    let mut p = Builder::new();
    let content = p.until("<tool_call>");
    let content = p.tag("content", content);
    let open = p.literal("<tool_call>");
    let args = p.json();
    let args = p.tag("tool-args", args);
    let close = p.literal("</tool_call>");
    let py = p.python_value();
    let body = p.choice([args, py]);
    let call = p.seq([open, body, close]);
    let call = p.trigger_rule("tool-call", call);
    let calls = p.zero_or_more(call);
    let end = p.end();
    let root = p.seq([content, calls, end]);
    p.set_root(root);
    match p.build() {
        Ok(arena) => arena,
        Err(err) => panic!("the fixed parser must build: {err}"),
    }
}

fn check(arena: &Arena, input: &[u8], chunk: usize) {
    let partial = Options { partial: true };
    let whole = parse_bytes(arena, input, &partial);
    let complete = parse_bytes(arena, input, &Options::default());
    let slow = arena.without_json_fast_path();
    assert_eq!(parse_bytes(&slow, input, &partial), whole);
    assert_eq!(parse_bytes(&slow, input, &Options::default()), complete);
    let mut stream = StreamParser::new(arena);
    let mut status = stream.finish();
    for piece in input.chunks(chunk.max(1)) {
        status = stream.feed(piece);
    }
    if !input.is_empty() {
        assert_eq!((status.outcome, status.end), (whole.outcome, whole.end));
    }
    let done = stream.finish();
    assert_eq!((done.outcome, done.end), (complete.outcome, complete.end));
    let _ = stream.ast().visit();
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let chunk = (selector >> 1) as usize % 7 + 1;
    if selector & 1 == 0 {
        check(&tool_call_parser(), rest, chunk);
        return;
    }
    // A JSON arena, then a NUL byte, then the input.
    let split = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(&rest[..split]) else {
        return;
    };
    if let Ok(arena) = Arena::from_json(&value) {
        let input = rest.get(split + 1..).unwrap_or(&[]);
        check(&arena, input, chunk);
    }
});
