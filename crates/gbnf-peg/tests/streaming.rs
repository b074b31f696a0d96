//! Streaming properties on generated tool-call transcripts: every prefix is viable (never
//! `NoMatch`), and feeding any chunking gives, after every chunk, exactly what a fresh partial
//! parse of that prefix gives (outcome, end and AST), and `finish` what a complete parse gives.

use gbnf_peg::{parse_bytes, Arena, Ast, AstId, Builder, NodeId, Options, Outcome, StreamParser};
use proptest::prelude::*;
use serde_json::Value;

#[path = "support/ast_rows.rs"]
mod ast_rows;
use ast_rows::rows;

#[path = "support/tool_call.rs"]
mod tool_call;
use tool_call::tool_call_parser;

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
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
    let content = "[a-z <>/é你\n]{0,40}".prop_filter("no tool call marker", |c: &String| {
        !c.contains("<tool_call>")
    });
    let call = (
        "[a-z_]{1,8}",
        prop::collection::vec(("[a-z]{1,5}", json_value()), 0..4),
        any::<bool>(),
    )
        .prop_map(|(name, args, pretty)| {
            let args = Value::Object(args.into_iter().collect());
            let args = if pretty {
                serde_json::to_string_pretty(&args)
            } else {
                serde_json::to_string(&args)
            };
            let args = args.unwrap_or_default();
            format!("<tool_call>{{\"name\": \"{name}\", \"arguments\": {args}}}</tool_call>")
        });
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

fn check_prefixes(arena: &Arena, text: &str) {
    let bytes = text.as_bytes();
    let partial = Options { partial: true };
    for cut in 0..=bytes.len() {
        let res = parse_bytes(arena, &bytes[..cut], &partial);
        assert_ne!(
            res.outcome,
            Outcome::NoMatch,
            "prefix {:?}",
            String::from_utf8_lossy(&bytes[..cut])
        );
    }
    let res = parse_bytes(arena, bytes, &Options::default());
    assert_eq!(res.outcome, Outcome::Match, "{text:?}");
    assert_eq!(res.end, bytes.len());
}

fn check_stream(arena: &Arena, text: &str, cuts: &[usize]) {
    check_stream_on(&mut StreamParser::new(arena), arena, text, cuts, true);
}

/// `check_stream` on a given stream, which must behave as a new one. Without `reads`, the
/// AST is read only at the end: the stream's follow check then passes whole tool calls
/// without the machine, which reads them at `finish` (also in the middle of the stream).
fn check_stream_on(
    stream: &mut StreamParser,
    arena: &Arena,
    text: &str,
    cuts: &[usize],
    reads: bool,
) {
    let bytes = text.as_bytes();
    let partial = Options { partial: true };
    // Finishing before anything arrived must not stick.
    let empty = parse_bytes(arena, b"", &Options::default());
    let done = stream.finish();
    assert_eq!((done.outcome, done.end), (empty.outcome, empty.end));
    let mut at = 0;
    let mut cuts = cuts.iter().cycle();
    while at < bytes.len() {
        let step = cuts.next().copied().unwrap_or(1).max(1);
        let next = (at + step).min(bytes.len());
        let status = stream.feed(&bytes[at..next]);
        at = next;
        let fresh = parse_bytes(arena, &bytes[..at], &partial);
        assert_eq!(
            (status.outcome, status.end),
            (fresh.outcome, fresh.end),
            "after {at} bytes of {text:?}"
        );
        // The AST is built on demand: ask for it after some feeds only.
        if reads && at % 2 == 0 {
            assert_eq!(
                rows(stream.ast()),
                rows(&fresh.ast),
                "AST after {at} bytes of {text:?}"
            );
        }
        if at % 3 == 0 {
            // Finishing in the middle must not disturb later feeds.
            let done = stream.finish();
            let complete = parse_bytes(arena, &bytes[..at], &Options::default());
            assert_eq!(
                (done.outcome, done.end),
                (complete.outcome, complete.end),
                "finish after {at} bytes"
            );
            if reads {
                assert_eq!(rows(stream.ast()), rows(&complete.ast));
            }
        }
    }
    let done = stream.finish();
    let complete = parse_bytes(arena, bytes, &Options::default());
    assert_eq!((done.outcome, done.end), (complete.outcome, complete.end));
    assert_eq!(rows(stream.ast()), rows(&complete.ast));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_prefix_is_viable(text in transcript()) {
        check_prefixes(&tool_call_parser(), &text);
    }

    #[test]
    fn streaming_equals_reparsing(text in transcript(), cuts in prop::collection::vec(1usize..9, 1..8)) {
        check_stream(&tool_call_parser(), &text, &cuts);
    }

    #[test]
    fn streaming_without_reading_equals_reparsing(
        text in transcript(),
        cuts in prop::collection::vec(1usize..9, 1..8),
    ) {
        let arena = tool_call_parser();
        check_stream_on(&mut StreamParser::new(&arena), &arena, &text, &cuts, false);
    }

    /// A stream reset after another output (cut short anywhere, its AST read or not) parses
    /// the next exactly as a new stream does.
    #[test]
    fn a_reset_stream_is_a_new_stream(
        before in transcript(),
        cut in any::<prop::sample::Index>(),
        read_ast in any::<bool>(),
        text in transcript(),
        cuts in prop::collection::vec(1usize..9, 1..8),
    ) {
        let arena = tool_call_parser();
        let mut stream = StreamParser::new(&arena);
        let before = &before.as_bytes()[..cut.index(before.len() + 1)];
        for chunk in before.chunks(3) {
            stream.feed(chunk);
        }
        if read_ast {
            stream.ast();
        }
        stream.reset();
        prop_assert!(stream.input().is_empty());
        check_stream_on(&mut stream, &arena, &text, &cuts, true);
    }
}

#[test]
fn streaming_byte_by_byte() {
    let text = "Let me check. 你好 <tool_c <tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": [1, 2.5e3, -0.5], \"x\": {\"y\": null, \"z\": true}}}</tool_call>";
    check_stream(&tool_call_parser(), text, &[1]);
    check_prefixes(&tool_call_parser(), text);
}

/// A random parser expression, to check streaming against re-parsing on arbitrary arenas.
#[derive(Clone, Debug)]
enum Expr {
    Leaf(u8),
    Lit(String),
    Chars(&'static str, u32, Option<u32>),
    Until(Vec<String>),
    Seq(Vec<Expr>),
    Choice(Vec<Expr>),
    Repeat(Box<Expr>, u32, Option<u32>),
    Wrap(u8, Box<Expr>),
}

fn expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        (0u8..8).prop_map(Expr::Leaf),
        "[ab<>/]{0,3}".prop_map(Expr::Lit),
        (
            prop::sample::select(vec!["[a-b]", "[^<]", "[0-9.eE+-]", "[\\u00e9-\\u4f60]"]),
            0u32..3,
            prop::option::of(1u32..4)
        )
            .prop_map(|(class, min, max)| Expr::Chars(
                class,
                min,
                max.map(|max| max.max(min))
            )),
        prop::collection::vec("[ab<>/]{1,3}", 0..3).prop_map(Expr::Until),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Expr::Seq),
            prop::collection::vec(inner.clone(), 0..4).prop_map(Expr::Choice),
            (inner.clone(), 0u32..3, prop::option::of(1u32..4)).prop_map(|(e, min, max)| {
                Expr::Repeat(Box::new(e), min, max.map(|max| max.max(min)))
            }),
            (0u8..5, inner).prop_map(|(kind, e)| Expr::Wrap(kind, Box::new(e))),
        ]
    })
}

fn lower(p: &mut Builder, e: &Expr) -> NodeId {
    match e {
        Expr::Leaf(0) => p.eps(),
        Expr::Leaf(1) => p.start(),
        Expr::Leaf(2) => p.end(),
        Expr::Leaf(3) => p.any(),
        Expr::Leaf(4) => p.space(),
        Expr::Leaf(5) => p.json_string_content(),
        Expr::Leaf(6) => p.rest(),
        Expr::Leaf(_) => p.json(),
        Expr::Lit(text) => p.literal(text),
        Expr::Chars(class, min, Some(max)) => p.chars(class, *min..=*max),
        Expr::Chars(class, min, None) => p.chars(class, *min..),
        Expr::Until(delimiters) => p.until_one_of(delimiters.iter().map(String::as_str)),
        Expr::Seq(items) => {
            let items: Vec<NodeId> = items.iter().map(|item| lower(p, item)).collect();
            p.seq(items)
        }
        Expr::Choice(items) => {
            let items: Vec<NodeId> = items.iter().map(|item| lower(p, item)).collect();
            p.choice(items)
        }
        Expr::Repeat(inner, min, max) => {
            let inner = lower(p, inner);
            match max {
                Some(max) => p.repeat(inner, *min..=*max),
                None => p.repeat(inner, *min..),
            }
        }
        Expr::Wrap(kind, inner) => {
            let inner = lower(p, inner);
            match kind {
                0 => p.peek(inner),
                1 => p.negate(inner),
                2 => p.atomic(inner),
                3 => p.tag("t", inner),
                _ => p.rule("r", inner),
            }
        }
    }
}

fn random_input() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop::sample::select(vec![
            b"a".to_vec(),
            b"b".to_vec(),
            b"<".to_vec(),
            b">".to_vec(),
            b"/".to_vec(),
            b"\"".to_vec(),
            b"\\".to_vec(),
            b"1".to_vec(),
            b".".to_vec(),
            b" ".to_vec(),
            b"{".to_vec(),
            b"}".to_vec(),
            b"[".to_vec(),
            b"]".to_vec(),
            b",".to_vec(),
            b":".to_vec(),
            "é".as_bytes().to_vec(),
            "你".as_bytes().to_vec(),
            b"\xff".to_vec(),
        ]),
        0..24,
    )
    .prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8192, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn streaming_equals_reparsing_on_random_parsers(
        e in expr(),
        noise in random_input(),
        seed in any::<u64>(),
        cuts in prop::collection::vec(1usize..4, 1..4),
    ) {
        // Mostly input the expression generates (so parses get far), with some noise.
        let mut rng = seed | 1;
        let mut input = Vec::new();
        sample(&e, &mut rng, &mut input);
        if seed % 4 == 0 {
            let at = (seed as usize / 4) % (input.len() + 1);
            input.splice(at..at, noise.iter().copied().take(3));
        }
        let mut p = Builder::new();
        let root = lower(&mut p, &e);
        let input = &input[..];
        p.set_root(root);
        // Random expressions may be left-recursive through `rule` wrappers; skip those.
        let Ok(arena) = p.build() else { return Ok(()) };
        let partial = Options { partial: true };
        let mut stream = StreamParser::new(&arena);
        let mut at = 0;
        let mut cuts = cuts.iter().cycle();
        // The open lists of the latest read, and how many nodes were fixed then. A third of
        // the streams read the AST only at the end (the follow check then runs longest).
        let reads = seed % 3 != 0;
        let mut read: Option<(Vec<Vec<AstId>>, usize)> = None;
        while at < input.len() {
            let next = (at + cuts.next().copied().unwrap_or(1)).min(input.len());
            let status = stream.feed(&input[at..next]);
            at = next;
            let fresh = parse_bytes(&arena, &input[..at], &partial);
            prop_assert_eq!((status.outcome, status.end), (fresh.outcome, fresh.end), "after {} bytes", at);
            if reads && (seed >> (at % 64)) & 1 == 1 {
                prop_assert_eq!(rows(stream.ast()), rows(&fresh.ast));
                let lists = open_lists(stream.ast());
                if let Some((before, fixed)) = &read {
                    check_vouched(before, *fixed, &lists)?;
                }
                read = Some((lists, stream.fixed_nodes()));
            }
        }
        let done = stream.finish();
        let complete = parse_bytes(&arena, input, &Options::default());
        prop_assert_eq!((done.outcome, done.end), (complete.outcome, complete.end));
        // A complete parse drops the nodes of what failed: it stores only what it reaches.
        prop_assert_eq!(complete.ast.stored_len(), complete.ast.visit().len());
        prop_assert_eq!(rows(stream.ast()), rows(&complete.ast));
    }
}

/// The roots and the child lists of the partial nodes: the lists `StreamParser::fixed_nodes`
/// speaks of.
fn open_lists(ast: &Ast) -> Vec<Vec<AstId>> {
    let mut lists = vec![ast.roots().to_vec()];
    for id in ast.visit() {
        if ast.node(id).is_partial {
            lists.push(ast.children(id).to_vec());
        }
    }
    lists
}

/// A node that was fixed at a read, found at the same index of an open list then and of
/// one now, vouches for the children before it: the two lists agree up to it.
fn check_vouched(
    before: &[Vec<AstId>],
    fixed: usize,
    now: &[Vec<AstId>],
) -> Result<(), TestCaseError> {
    for old in before {
        for new in now {
            let common = old.iter().zip(new).enumerate();
            for (at, _) in common.filter(|&(_, (a, b))| a == b && (a.0 as usize) < fixed) {
                prop_assert_eq!(
                    &old[..=at],
                    &new[..=at],
                    "fixed child {:?} at {}",
                    old[at],
                    at
                );
            }
        }
    }
    Ok(())
}

fn next(rng: &mut u64) -> u64 {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    *rng
}

/// Appends text that `e` likely matches.
fn sample(e: &Expr, rng: &mut u64, out: &mut Vec<u8>) {
    let pick = |rng: &mut u64, n: usize| (next(rng) % n as u64) as usize;
    match e {
        Expr::Leaf(3) => out.extend_from_slice(["a", "é", "你", "<"][pick(rng, 4)].as_bytes()),
        Expr::Leaf(4) => out.extend_from_slice(&b"  \n"[..pick(rng, 4)]),
        Expr::Leaf(5) => {
            out.extend_from_slice(["ab", "a\\n", "\\u00e9x", ""][pick(rng, 4)].as_bytes())
        }
        Expr::Leaf(6) => out.extend_from_slice(b"ab<"),
        Expr::Leaf(7) => out.extend_from_slice(
            ["{\"a\": [1, 2.5e3]}", "\"x\"", "-12", "[true, null]"][pick(rng, 4)].as_bytes(),
        ),
        Expr::Leaf(_) => {}
        Expr::Lit(text) => out.extend_from_slice(text.as_bytes()),
        Expr::Chars(class, min, _) => {
            let pool: &[&str] = match *class {
                "[a-b]" => &["a", "b"],
                "[^<]" => &["a", "é", ">"],
                "[0-9.eE+-]" => &["1", ".", "e", "-"],
                _ => &["é", "ó", "你"],
            };
            for _ in 0..*min + pick(rng, 3) as u32 {
                out.extend_from_slice(pool[pick(rng, pool.len())].as_bytes());
            }
        }
        Expr::Until(delimiters) => {
            out.extend_from_slice(&b"ab/"[..pick(rng, 4)]);
            if let Some(delimiter) = delimiters.first() {
                out.extend_from_slice(delimiter.as_bytes());
            }
        }
        Expr::Seq(items) => items.iter().for_each(|item| sample(item, rng, out)),
        Expr::Choice(items) => {
            if !items.is_empty() {
                sample(&items[pick(rng, items.len())], rng, out);
            }
        }
        Expr::Repeat(inner, min, _) => {
            for _ in 0..*min + pick(rng, 3) as u32 {
                sample(inner, rng, out);
            }
        }
        Expr::Wrap(0 | 1, _) => {}
        Expr::Wrap(_, inner) => sample(inner, rng, out),
    }
}
