//! Fuzz target for the gbnf-peg runtime and arena loader: arbitrary bytes become either input
//! for a fixed tool-call parser or a JSON arena plus input. Nothing may panic; the byte-level
//! JSON scanner must give exactly what node-by-node parsing gives (outcome, end and AST,
//! complete and partial); and a stream fed in chunks of random sizes (split points drawn from
//! the input) must give, after every chunk, the status and AST of a fresh partial parse of the
//! prefix, and on `finish` those of a complete parse, whichever resume path each feed takes;
//! and once reset, the same stream parses the input again as a new one.

#![no_main]

use gbnf_peg::{parse_bytes, Arena, Ast, Builder, NodeId, Options, StreamParser};
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

/// The reachable AST as comparable rows: (parser, start, end, partial, depth).
fn rows(ast: &Ast) -> Vec<(NodeId, usize, usize, bool, usize)> {
    let mut out = Vec::new();
    let mut stack: Vec<_> = ast.roots().iter().rev().map(|&id| (id, 0)).collect();
    while let Some((id, depth)) = stack.pop() {
        let node = ast.node(id);
        out.push((node.parser, node.start, node.end, node.is_partial, depth));
        stack.extend(
            ast.children(id)
                .iter()
                .rev()
                .map(|&child| (child, depth + 1)),
        );
    }
    out
}

/// Split points and what to ask after each chunk, drawn from a seed (xorshift).
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Inputs up to this long are compared with a fresh parse after every chunk (quadratic).
const EVERY_CHUNK: usize = 1024;

fn check(arena: &Arena, input: &[u8], seed: u64) {
    let partial = Options { partial: true };
    let whole = parse_bytes(arena, input, &partial);
    let complete = parse_bytes(arena, input, &Options::default());
    let slow = arena.without_json_fast_path();
    assert_eq!(parse_bytes(&slow, input, &partial), whole);
    assert_eq!(parse_bytes(&slow, input, &Options::default()), complete);
    let mut draw = Draw(seed | 1);
    let mut stream = StreamParser::new(arena);
    let mut status = stream.finish();
    let mut at = 0;
    while at < input.len() {
        // Mostly token-sized chunks (0 to 8 bytes), sometimes longer ones.
        let roll = draw.next();
        let step = if roll % 8 == 0 {
            (roll >> 8) as usize % 64
        } else {
            (roll >> 8) as usize % 9
        };
        let next = (at + step).min(input.len());
        status = stream.feed(&input[at..next]);
        at = next;
        if input.len() > EVERY_CHUNK {
            continue;
        }
        let fresh = parse_bytes(arena, &input[..at], &partial);
        assert_eq!((status.outcome, status.end), (fresh.outcome, fresh.end));
        // The AST is built on demand: ask for it after some chunks only, so that feeds
        // resume both from unbuilt and from built states; finish now and then.
        match (roll >> 32) % 4 {
            0 => assert_eq!(rows(stream.ast()), rows(&fresh.ast)),
            1 => {
                let done = stream.finish();
                let strict = parse_bytes(arena, &input[..at], &Options::default());
                assert_eq!((done.outcome, done.end), (strict.outcome, strict.end));
                assert_eq!(rows(stream.ast()), rows(&strict.ast));
            }
            _ => {}
        }
    }
    if !input.is_empty() {
        assert_eq!((status.outcome, status.end), (whole.outcome, whole.end));
        // (An empty chunk brings the partial result back after a `finish`.)
        let status = stream.feed(b"");
        assert_eq!((status.outcome, status.end), (whole.outcome, whole.end));
        assert_eq!(rows(stream.ast()), rows(&whole.ast));
    }
    let done = stream.finish();
    assert_eq!((done.outcome, done.end), (complete.outcome, complete.end));
    assert_eq!(rows(stream.ast()), rows(&complete.ast));
    // Reset, the same stream parses the input again as a new one would.
    stream.reset();
    let status = stream.feed(input);
    assert_eq!((status.outcome, status.end), (whole.outcome, whole.end));
    let done = stream.finish();
    assert_eq!((done.outcome, done.end), (complete.outcome, complete.end));
    assert_eq!(rows(stream.ast()), rows(&complete.ast));
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    // The split points' seed: the selector and the input's length and last bytes.
    let tail = rest
        .iter()
        .rev()
        .take(7)
        .fold(0u64, |acc, &b| acc << 8 | u64::from(b));
    let seed = u64::from(selector) << 56 ^ (rest.len() as u64) << 40 ^ tail;
    if selector & 1 == 0 {
        check(&tool_call_parser(), rest, seed);
        return;
    }
    // A JSON arena, then a NUL byte, then the input.
    let split = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(&rest[..split]) else {
        return;
    };
    if let Ok(arena) = Arena::from_json(&value) {
        let input = rest.get(split + 1..).unwrap_or(&[]);
        check(&arena, input, seed);
    }
});
