//! `StreamParser::feed` extends the latest result without running the machine when the new
//! bytes only continue what the snapshot's leaf was scanning at the end of input (an `until`,
//! a string body, a literal cut short, a JSON string in the scanner). That shortcut must be
//! invisible: after every chunk, status, AST (asked for after some chunks only, so that both
//! the fresh and the rebuilt states are extended) and `finish` equal a fresh parse of the
//! prefix, on inputs made of exactly what the shortcut extends: prose with `<`, non-ASCII text
//! cut anywhere, JSON strings with escapes, Python strings, long literals. Every AST read
//! also keeps the nodes that the read before called fixed (`StreamParser::fixed_nodes`).

use gbnf_peg::{parse_bytes, Arena, Ast, AstId, Builder, Options, StreamParser};
use proptest::prelude::*;

#[path = "support/ast_rows.rs"]
mod ast_rows;
use ast_rows::rows;

#[path = "support/tool_call.rs"]
mod tool_call;
use tool_call::tool_call_parser;

/// The tool-call parser with and without the JSON scanner (without it, JSON strings are
/// `string_content` leaves), and a parser of quoted strings between long literals.
fn parsers() -> Vec<Arena> {
    let fast = tool_call_parser();
    let slow = fast.without_json_fast_path();
    let mut p = Builder::new();
    let open = p.literal("<<begin-of-a-long-marker>>");
    let quote = p.literal("'");
    let body = p.string_content('\'');
    let body = p.tag("body", body);
    let quote2 = p.literal("'");
    let item = p.seq([quote, body, quote2]);
    let text = p.until_one_of(["<<end>>", "\u{e9}t\u{e9}"]);
    let text = p.tag("text", text);
    let item = p.choice([item, text]);
    let items = p.zero_or_more(item);
    let close = p.literal("<<end>>");
    let end = p.end();
    let root = p.seq([open, items, close, end]);
    p.set_root(root);
    let strings = p.build().unwrap_or_else(|err| panic!("{err}"));
    vec![fast, slow, strings]
}

/// The nodes of `ast` below `fixed` are those of `before`, children and all.
fn check_fixed(before: &Ast, fixed: usize, ast: &Ast, what: &str) {
    for id in (0..fixed as u32).map(AstId) {
        assert_eq!(before.node(id), ast.node(id), "fixed node {id:?} {what}");
        assert_eq!(
            before.children(id),
            ast.children(id),
            "fixed node {id:?} {what}"
        );
    }
}

/// Feeds `bytes` in chunks of the sizes in `cuts` (cycled); `asks[i % len]` says whether to
/// read the AST (1), finish (2) or neither (0) after chunk `i`.
fn check_stream(arena: &Arena, bytes: &[u8], cuts: &[usize], asks: &[u8]) {
    let partial = Options { partial: true };
    let mut stream = StreamParser::new(arena);
    // The AST of the latest read, and how many of its nodes were fixed then.
    let mut read: Option<(Ast, usize)> = None;
    let mut at = 0;
    let mut chunk = 0;
    while at < bytes.len() {
        let step = cuts[chunk % cuts.len()].max(1);
        let next = (at + step).min(bytes.len());
        let status = stream.feed(&bytes[at..next]);
        at = next;
        let fresh = parse_bytes(arena, &bytes[..at], &partial);
        let what = || format!("after {at} bytes of {:?}", String::from_utf8_lossy(bytes));
        assert_eq!(
            (status.outcome, status.end),
            (fresh.outcome, fresh.end),
            "{}",
            what()
        );
        if asks[chunk % asks.len()] != 0 {
            let ast = stream.ast().clone();
            if let Some((before, fixed)) = &read {
                check_fixed(before, *fixed, &ast, &what());
            }
            read = Some((ast, stream.fixed_nodes()));
        }
        match asks[chunk % asks.len()] {
            1 => assert_eq!(rows(stream.ast()), rows(&fresh.ast), "AST {}", what()),
            2 => {
                let done = stream.finish();
                let complete = parse_bytes(arena, &bytes[..at], &Options::default());
                assert_eq!(
                    (done.outcome, done.end),
                    (complete.outcome, complete.end),
                    "finish {}",
                    what()
                );
                assert_eq!(
                    rows(stream.ast()),
                    rows(&complete.ast),
                    "finish AST {}",
                    what()
                );
            }
            _ => {}
        }
        chunk += 1;
    }
    // (An empty chunk: back to partial results after a `finish`.)
    let status = stream.feed(b"");
    let result = stream.result();
    assert_eq!((status.outcome, status.end), (result.outcome, result.end));
    let fresh = parse_bytes(arena, bytes, &partial);
    assert_eq!((result.outcome, result.end), (fresh.outcome, fresh.end));
    assert_eq!(rows(&result.ast), rows(&fresh.ast));
    let done = stream.finish();
    let complete = parse_bytes(arena, bytes, &Options::default());
    assert_eq!((done.outcome, done.end), (complete.outcome, complete.end));
    assert_eq!(rows(stream.ast()), rows(&complete.ast));
}

/// Prose with `<`, non-ASCII and near-delimiters, then tool calls whose JSON strings carry
/// escapes and non-ASCII text; sometimes cut or corrupted (a stray byte, an invalid one).
fn tool_text() -> impl Strategy<Value = Vec<u8>> {
    let prose = "[a-z <>/_é你🚀\n]{0,60}";
    let string = "([a-z é你🚀<>]|\\\\[nt\"\\\\/]|\\\\u00e9){0,16}";
    let call = (string, string, 0u8..4).prop_map(|(a, b, kind)| {
        let data = match kind {
            0 => format!("\"{b}\""),
            1 => format!("[\"{a}\", \"{b}\"]"),
            2 => format!("{{\"k\": \"{b}\", \"n\": -12.5e3}}"),
            _ => format!("[1, \"{a}\", {{}}]"),
        };
        format!(
            "<tool_call>{{\"name\": \"get_weather\", \"arguments\": {{\"city\": \"{a}\", \"data\": {data}}}}}</tool_call>"
        )
    });
    (
        prose,
        prop::collection::vec(call, 0..3),
        prop::option::of((any::<prop::sample::Index>(), any::<u8>())),
    )
        .prop_map(|(prose, calls, corrupt)| {
            let mut bytes = (prose + &calls.concat()).into_bytes();
            if let Some((at, byte)) = corrupt {
                if !bytes.is_empty() {
                    let at = at.index(bytes.len());
                    bytes[at] = byte;
                }
            }
            bytes
        })
}

fn strings_text() -> impl Strategy<Value = Vec<u8>> {
    let item = prop_oneof!["'([a-z <é你]|\\\\[n'\\\\]){0,20}'", "[a-z <>é你t]{1,20}"];
    prop::collection::vec(item, 0..5).prop_map(|items| {
        format!("<<begin-of-a-long-marker>>{}<<end>>", items.concat()).into_bytes()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn extended_feeds_equal_fresh_parses(
        text in tool_text(),
        cuts in prop::collection::vec(1usize..9, 1..8),
        asks in prop::collection::vec(0u8..3, 1..6),
    ) {
        for arena in &parsers()[..2] {
            check_stream(arena, &text, &cuts, &asks);
        }
    }

    #[test]
    fn extended_string_content_and_literals(
        text in strings_text(),
        cuts in prop::collection::vec(1usize..9, 1..8),
        asks in prop::collection::vec(0u8..3, 1..6),
    ) {
        check_stream(&parsers()[2], &text, &cuts, &asks);
    }
}

/// Byte by byte and four bytes at a time, never asking for the AST until the end (every
/// feed in prose and in string bodies then takes the shortcut).
#[test]
fn long_runs_of_extended_feeds() {
    let mut text = String::from("Let me check 你好 a <b> résumé 🚀 x < y; ");
    for _ in 0..8 {
        text.push_str("more prose, é and 你 and <tool_ but not a call; ");
    }
    text.push_str("<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris \\\"centre\\\" \\u00e9 你好 🚀 a long string body\", \"n\": [1, 2]}}</tool_call>");
    for arena in &parsers()[..2] {
        for step in [1, 3, 4] {
            check_stream(arena, text.as_bytes(), &[step], &[0]);
            check_stream(arena, text.as_bytes(), &[step], &[0, 0, 0, 1]);
        }
    }
}

/// One JSON value, tagged `value`, then the end of input.
fn json_value_parser() -> Arena {
    let mut p = Builder::new();
    let json = p.json();
    let json = p.tag("value", json);
    let end = p.end();
    let root = p.seq([json, end]);
    p.set_root(root);
    p.build().unwrap_or_else(|err| panic!("{err}"))
}

/// A JSON value that ends the root parser: while it streams in, the follow check takes it
/// without the scanner, and the feed that closes the outermost container makes the result
/// `Match` (the check follows the root to its end); a scalar, or a second value after it, go
/// back to the scanner and the interpreter. Fed byte by byte and in 2- to 5-byte tokens.
#[test]
fn json_that_ends_the_root() {
    let arena = json_value_parser();
    let texts: [&[u8]; 6] = [
        br#"{"a": [1, 2.5e-3, {"b": null}], "c": "x\"y\u00e9"}"#,
        br#"[[], {}, [true, false], -0]"#,
        br#"{"a": 1} "#,
        br#"{"a": 1}{"b": 2}"#,
        br#"[1, 2] ]"#,
        br#"123"#,
    ];
    for text in texts {
        for step in [1, 2, 3, 5] {
            check_stream(&arena, text, &[step], &[0]);
            check_stream(&arena, text, &[step], &[0, 1]);
        }
    }
}

/// Literals with code points of two to four bytes, cut inside them by every chunk size: a
/// feed that continues the literal is valid UTF-8 only up to the last whole code point.
#[test]
fn literals_cut_inside_code_points() {
    let mut p = Builder::new();
    let open = p.literal("«début-你好-🚀»");
    let text = p.until("«fin»");
    let text = p.tag("text", text);
    let close = p.literal("«fin»");
    let end = p.end();
    let root = p.seq([open, text, close, end]);
    p.set_root(root);
    let arena = p.build().unwrap_or_else(|err| panic!("{err}"));
    let text = "«début-你好-🚀»some é text«fin»";
    let complete = parse_bytes(&arena, text.as_bytes(), &Options::default());
    assert_eq!(
        (complete.outcome, complete.end),
        (gbnf_peg::Outcome::Match, text.len())
    );
    for step in 1..=6 {
        check_stream(&arena, text.as_bytes(), &[step], &[0]);
        check_stream(&arena, text.as_bytes(), &[step, 1, 2], &[0, 1]);
    }
}

/// Open lists longer than a partial node copies (8 children): a partial node then takes its
/// children where the parser keeps them, and writes its inner partial node after them. Read
/// after every chunk (and every other one), each AST must still equal a fresh parse's, and
/// keep the nodes the read before fixed: long arrays inside long arrays (JSON, with and
/// without the scanner), and a recursive list of tags, atomic quoted words and lookaheads,
/// where a long list's node directly wraps another long list's.
#[test]
fn long_open_lists() {
    let json = json_value_parser();
    let lists = {
        let mut p = Builder::new();
        let word = p.chars("[a-z]", 1..);
        let word = p.tag("word", word);
        let quoted = {
            let open = p.literal("'");
            let body = p.chars("[a-z]", 0..);
            let body = p.tag("quoted", body);
            let close = p.literal("'");
            let quoted = p.seq([open, body, close]);
            p.atomic(quoted)
        };
        let group = p.ref_("group");
        let open = p.literal("(");
        let ahead = p.peek(open);
        let inner = p.seq([ahead, group]);
        let inner = p.tag("inner", inner);
        let item = p.choice([inner, quoted, word]);
        let comma = p.literal(",");
        let item = p.seq([item, comma]);
        let items = p.zero_or_more(item);
        let open = p.literal("(");
        let close = p.literal(")");
        let body = p.seq([open, items, close]);
        let group = p.rule("group", body);
        let end = p.end();
        let root = p.seq([group, end]);
        p.set_root(root);
        p.build().unwrap_or_else(|err| panic!("{err}"))
    };
    let numbers = |n: usize| (0..n).map(|i| (i * 7 % 23).to_string()).collect::<Vec<_>>();
    let array = |items: Vec<String>| format!("[{}]", items.join(", "));
    let long = array(numbers(12));
    let nested = array((0..10).map(|_| array(numbers(11))).collect());
    let deep = array((0..9).map(|_| nested.clone()).take(2).collect());
    let object = format!(
        "{{\"a\": {long}, \"b\": {nested}, \"c\": [{{\"d\": {long}}}, \"x\", 1, 2, 3, 4, 5, 6, 7, 8, 9]}}"
    );
    let word_list = |n: usize| {
        (0..n)
            .map(|i| format!("w{},", "abc".repeat(i % 3 + 1)))
            .collect::<String>()
    };
    let group = |inner: &str| format!("({}{inner}{})", word_list(10), word_list(9));
    let groups = group(&format!("{},'quoted',", group(&format!("{},", group("")))));
    for step in [1, 3, 4, 7] {
        for asks in [&[1][..], &[0, 1], &[1, 0, 2]] {
            for text in [&long, &nested, &deep, &object] {
                check_stream(&json, text.as_bytes(), &[step], asks);
                check_stream(
                    &json.without_json_fast_path(),
                    text.as_bytes(),
                    &[step],
                    asks,
                );
            }
            check_stream(&lists, groups.as_bytes(), &[step], asks);
        }
    }
}
