//! The byte-level JSON fast path must be invisible: on generated JSON, truncated and
//! corrupted JSON, and JSON inside lookaheads, atomics and tags, parsing with it gives exactly
//! the `ParseResult` (outcome, end, every AST node) of parsing node by node, complete and
//! partial, and streaming with it gives what a fresh node-by-node parse gives after every
//! chunk. Deep nesting runs on explicit stacks.

use gbnf_peg::{parse, parse_bytes, Arena, Builder, Options, Outcome, ParseResult, StreamParser};
use proptest::prelude::*;
use serde_json::Value;

#[path = "support/ast_rows.rs"]
mod ast_rows;
use ast_rows::rows;

#[path = "support/tool_call.rs"]
mod tool_call;
use tool_call::tool_call_parser;

/// Parsers that use `json()` in different places, with and without the fast path.
fn parsers() -> Vec<(Arena, Arena)> {
    let mut arenas = vec![tool_call_parser()];
    // A value alone.
    let mut p = Builder::new();
    let ws = p.space();
    let json = p.json();
    let ws2 = p.space();
    let end = p.end();
    let root = p.seq([ws, json, ws2, end]);
    p.set_root(root);
    arenas.push(p.build().unwrap_or_else(|err| panic!("{err}")));
    // Values in a loop, under a tag, an atomic and lookaheads, then whatever is left.
    let mut p = Builder::new();
    let json = p.json();
    let peek = p.peek(json);
    let tagged = p.tag("value", json);
    let atomic = p.atomic(tagged);
    let comma = p.literal(";");
    let stop = p.negate(comma);
    let ws = p.space();
    let item = p.seq([ws, peek, atomic, stop]);
    let items = p.zero_or_more(item);
    let rest = p.rest();
    let rest = p.tag("rest", rest);
    let root = p.seq([items, rest]);
    p.set_root(root);
    arenas.push(p.build().unwrap_or_else(|err| panic!("{err}")));
    // JSON or Python values (they share the number rule), then the end.
    let mut p = Builder::new();
    let json = p.json();
    let py = p.python_value();
    let value = p.choice([json, py]);
    let value = p.tag("v", value);
    let end = p.end();
    let root = p.seq([value, end]);
    p.set_root(root);
    arenas.push(p.build().unwrap_or_else(|err| panic!("{err}")));
    arenas
        .into_iter()
        .map(|arena| {
            assert_eq!(arena.json_fast_paths(), 1, "json() must be recognised");
            let slow = arena.without_json_fast_path();
            assert_eq!(slow.json_fast_paths(), 0);
            (arena, slow)
        })
        .collect()
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |x| x.is_finite())
            .prop_map(Value::from),
        "[a-z \"\\\\/é你🚀\n\t\u{1}]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 40, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec(("[a-z_\"]{0,4}", inner), 0..5)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// Bytes that break JSON in interesting ways.
const NASTY: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"\"",
    b"\\",
    b"\\u",
    b"\\u00",
    b"-",
    b"0",
    b"7",
    b".",
    b"e",
    b"E",
    b"+",
    b" ",
    b"\n",
    b"\x0b",
    b"\x0c",
    b"t",
    b"tru",
    b"n",
    b"nul",
    b"f",
    b"x",
    b";",
    b"\xc3\xa9",
    b"\xc3",
    b"\xff",
    b"\xe4\xbd",
    b"\xf0\x9f\x9a\x80",
    b"'",
    b"True",
];

/// JSON with random white space around its tokens, then some edits.
fn text() -> impl Strategy<Value = Vec<u8>> {
    let edits = prop::collection::vec((0usize..10_000, 0usize..NASTY.len(), 0u8..4), 0..3);
    (
        json_value(),
        any::<bool>(),
        prop::collection::vec(0usize..6, 1..8),
        edits,
        0usize..10_000,
        0u8..4,
    )
        .prop_map(|(value, pretty, spaces, edits, cut, cut_kind)| {
            let text = if pretty {
                serde_json::to_string_pretty(&value)
            } else {
                serde_json::to_string(&value)
            };
            let mut out = Vec::new();
            let mut spaces = spaces.iter().cycle();
            for byte in text.unwrap_or_default().bytes() {
                if matches!(byte, b',' | b']' | b'}') {
                    let n = spaces.next().copied().unwrap_or(0);
                    out.extend(std::iter::repeat(b" \t\n\r\x0b\x0c"[n % 6]).take(n % 2));
                }
                out.push(byte);
                if matches!(byte, b',' | b':' | b'[' | b'{') {
                    let n = spaces.next().copied().unwrap_or(0);
                    out.extend(std::iter::repeat(b" \t\n\r\x0b\x0c"[n % 6]).take(n % 3));
                }
            }
            for (at, what, kind) in edits {
                let at = at % (out.len() + 1);
                match kind {
                    0 => {
                        out.splice(at..at, NASTY[what].iter().copied());
                    }
                    1 if at < out.len() => {
                        out.splice(at..at + 1, NASTY[what].iter().copied());
                    }
                    2 if at < out.len() => {
                        out.remove(at);
                    }
                    _ => {}
                }
            }
            if cut_kind == 0 {
                out.truncate(cut % (out.len() + 1));
            }
            out
        })
}

/// The same text in the tool-call transcript, and with separators for the value loop.
fn inputs(json: &[u8]) -> Vec<Vec<u8>> {
    let mut call = b"hi <tool_call>{\"name\": \"f\", \"arguments\": ".to_vec();
    call.extend_from_slice(json);
    call.extend_from_slice(b"}</tool_call>");
    let mut many = json.to_vec();
    many.extend_from_slice(b" ");
    many.extend_from_slice(json);
    many.extend_from_slice(b";");
    vec![json.to_vec(), call, many]
}

fn same(fast: &ParseResult, slow: &ParseResult, what: &str, input: &[u8]) {
    assert_eq!(
        fast,
        slow,
        "{what} of {:?}: the fast path changed the result",
        String::from_utf8_lossy(input)
    );
}

fn check_whole(fast: &Arena, slow: &Arena, input: &[u8]) {
    for partial in [false, true] {
        let options = Options { partial };
        let what = if partial { "partial parse" } else { "parse" };
        same(
            &parse_bytes(fast, input, &options),
            &parse_bytes(slow, input, &options),
            what,
            input,
        );
    }
}

fn check_stream(fast: &Arena, slow: &Arena, input: &[u8], cuts: &[usize]) {
    let partial = Options { partial: true };
    let mut stream = StreamParser::new(fast);
    let mut at = 0;
    let mut cuts = cuts.iter().cycle();
    while at < input.len() {
        let step = cuts.next().copied().unwrap_or(1).max(1);
        let next = (at + step).min(input.len());
        let status = stream.feed(&input[at..next]);
        at = next;
        let fresh = parse_bytes(slow, &input[..at], &partial);
        let shown = String::from_utf8_lossy(&input[..at]);
        assert_eq!(
            (status.outcome, status.end),
            (fresh.outcome, fresh.end),
            "after {at} bytes of {shown:?}"
        );
        if at % 2 == 0 {
            assert_eq!(rows(stream.ast()), rows(&fresh.ast), "AST after {shown:?}");
        }
        if at % 3 == 0 {
            let done = stream.finish();
            let complete = parse_bytes(slow, &input[..at], &Options::default());
            assert_eq!(
                (done.outcome, done.end),
                (complete.outcome, complete.end),
                "finish after {shown:?}"
            );
            assert_eq!(rows(stream.ast()), rows(&complete.ast));
        }
    }
    let done = stream.finish();
    let complete = parse_bytes(slow, input, &Options::default());
    assert_eq!((done.outcome, done.end), (complete.outcome, complete.end));
    assert_eq!(rows(stream.ast()), rows(&complete.ast));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn fast_path_gives_the_same_results(json in text()) {
        for (fast, slow) in parsers() {
            for input in inputs(&json) {
                check_whole(&fast, &slow, &input);
                for cut in 0..input.len() {
                    check_whole(&fast, &slow, &input[..cut]);
                }
            }
        }
    }

    #[test]
    fn fast_path_streams_the_same(json in text(), cuts in prop::collection::vec(1usize..9, 1..8)) {
        for (fast, slow) in parsers() {
            for input in inputs(&json) {
                check_stream(&fast, &slow, &input, &cuts);
            }
        }
    }
}

#[test]
fn valid_json_takes_the_fast_path_and_matches() {
    let (fast, slow) = parsers().swap_remove(1);
    let text = "{\"a\": [1, -2.5e+3, 0, true, false, null, \"x\\u00e9\\n\"], \"b\": {}, \"c\": []}";
    let res = parse(&fast, text, &Options::default());
    assert_eq!(res.outcome, Outcome::Match);
    assert_eq!(res.end, text.len());
    same(
        &res,
        &parse(&slow, text, &Options::default()),
        "parse",
        text.as_bytes(),
    );
    // The value and its object, 3 keys, 3 member values with their rules, 7 items with theirs.
    assert_eq!(rows(&res.ast).len(), 2 + 3 + 3 * 2 + 7 * 2);
}

#[test]
fn white_space_before_commas_and_closers() {
    // Both ways (the interpreter once skipped `(space "," value)*` when it started with a
    // space: its FIRST set left out the space).
    for (fast, slow) in parsers().into_iter().skip(1).take(1) {
        for text in ["[1 , 2 ]", "{\"a\": 1 , \"b\": [2 ,\n3 ] }", "[ {} , [] ]"] {
            let res = parse(&fast, text, &Options::default());
            assert_eq!(
                (res.outcome, res.end),
                (Outcome::Match, text.len()),
                "{text}"
            );
            same(
                &res,
                &parse(&slow, text, &Options::default()),
                "parse",
                text.as_bytes(),
            );
        }
    }
}

#[test]
fn deep_nesting_runs_on_explicit_stacks() {
    const DEPTH: usize = 100_000;
    for (open, close) in [("[", "]"), ("{\"k\":", "}")] {
        let mut text = open.repeat(DEPTH);
        text.push('1');
        text.push_str(&close.repeat(DEPTH));
        let (fast, slow) = parsers().swap_remove(1);
        for input in [&text[..], &text[..text.len() / 2], &text[..DEPTH]] {
            for partial in [false, true] {
                let options = Options { partial };
                let res = parse(&fast, input, &options);
                let expected = if input.len() == text.len() {
                    Outcome::Match
                } else if partial {
                    Outcome::NeedMore
                } else {
                    Outcome::NoMatch
                };
                assert_eq!(res.outcome, expected);
                same(&res, &parse(&slow, input, &options), "parse", b"deep");
            }
        }
        let mut stream = StreamParser::new(&fast);
        for chunk in text.as_bytes().chunks(4096) {
            assert_ne!(stream.feed(chunk).outcome, Outcome::NoMatch);
        }
        assert_eq!(stream.finish().outcome, Outcome::Match);
    }
}

#[test]
fn recognised_by_structure_not_by_name() {
    // Through JSON and the `.peg` format, the same sub-graph is recognised.
    let arena = tool_call_parser();
    let loaded = Arena::from_json(&arena.to_json()).unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(loaded.json_fast_paths(), 1);
    let text = "root <- json_object\n";
    let from_text = gbnf_peg::parse_peg(text).unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(from_text.json_fast_paths(), 1);
    // A rule named like the builder's but with another body is not.
    let mut p = Builder::new();
    let digits = p.chars("[0-9]", 1..);
    let value = p.rule("json-value", digits);
    let end = p.end();
    let root = p.seq([value, end]);
    p.set_root(root);
    let arena = p.build().unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(arena.json_fast_paths(), 0);
    // One element off (a number rule without its lookahead) is not either.
    let mut p = Builder::new();
    let json = p.json();
    p.set_root(json);
    let mut nodes = p.build().unwrap_or_else(|err| panic!("{err}")).to_json();
    let text = nodes.to_string().replace("[0-9.eE+-]", "[0-9.eE+]");
    nodes = serde_json::from_str(&text).unwrap_or_else(|err| panic!("{err}"));
    let arena = Arena::from_json(&nodes).unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(arena.json_fast_paths(), 0);
}

#[test]
fn nesting_around_the_scanner_snapshot_limit() {
    // Past some depth the scanner leaves the stream's snapshot to the interpreter, and
    // past a deeper one (64 containers) the stream's follow check (`json::Ahead`) is unsure
    // and leaves the input to it.
    for (fast, slow) in parsers() {
        for depth in [16, 31, 32, 33, 48, 96] {
            let mut text = String::new();
            for level in 0..depth {
                text.push_str(if level % 2 == 0 { "{\"k\": [" } else { "[1, " });
            }
            text.push_str("\"s\"");
            for level in (0..depth).rev() {
                text.push_str(if level % 2 == 0 { "]}" } else { "]" });
            }
            for input in inputs(text.as_bytes()) {
                check_stream(&fast, &slow, &input, &[3, 1, 7]);
            }
        }
    }
}
