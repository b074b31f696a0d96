//! The runtime's semantics, case by case (llama.cpp notes §1.2–1.4), plus `build` errors,
//! deep nesting and JSON serialisation.

use gbnf_peg::{parse, Arena, Ast, AstId, Builder, ErrorKind, Label, NodeId, Options, Outcome};
use serde_json::json;

#[path = "support/tool_call.rs"]
mod tool_call;
use tool_call::tool_call_parser;

/// Builds `root`, parses `input` (partial mode when `partial`) and renders the result as
/// `outcome end` followed by the AST as `label[start..end]` (`~` marks partial nodes).
fn check(root: impl FnOnce(&mut Builder) -> NodeId, input: &str, partial: bool, expected: &str) {
    let mut p = Builder::new();
    let root = root(&mut p);
    p.set_root(root);
    let arena = p.build().unwrap_or_else(|err| panic!("{err}"));
    let res = parse(&arena, input, &Options { partial });
    let outcome = match res.outcome {
        Outcome::Match => "match",
        Outcome::NeedMore => "need_more",
        Outcome::NoMatch => "no_match",
        Outcome::StepLimit => "step_limit",
    };
    let mut text = format!("{outcome} {}", res.end);
    for &id in res.ast.roots() {
        text.push(' ');
        render(&arena, &res.ast, id, &mut text);
    }
    assert_eq!(text, expected, "on {input:?} (partial: {partial})");
}

fn render(arena: &Arena, ast: &Ast, id: AstId, out: &mut String) {
    let node = ast.node(id);
    let name = match ast.label(arena, id) {
        Label::Rule(name) | Label::Tag(name) => name,
    };
    let partial = if node.is_partial { "~" } else { "" };
    out.push_str(&format!("{name}{partial}[{}..{}]", node.start, node.end));
    if !ast.children(id).is_empty() {
        out.push('(');
        for (i, &child) in ast.children(id).iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            render(arena, ast, child, out);
        }
        out.push(')');
    }
}

fn until_then_close(p: &mut Builder) -> NodeId {
    let body = p.until("</tag>");
    let body = p.tag("body", body);
    let close = p.literal("</tag>");
    p.seq([body, close])
}

#[test]
fn until_stops_before_a_partial_delimiter_in_both_modes() {
    check(|p| p.until("</tag>"), "abc</ta", true, "match 3");
    check(|p| p.until("</tag>"), "abc</ta", false, "match 3");
}

#[test]
fn literal_after_until_needs_more_or_fails() {
    check(until_then_close, "abc</ta", true, "need_more 7 body[0..3]");
    check(until_then_close, "abc</ta", false, "no_match 3");
    check(until_then_close, "abc</tag>", false, "match 9 body[0..3]");
}

#[test]
fn until_without_delimiter() {
    check(|p| p.until("</tag>"), "abc", true, "need_more 3");
    check(|p| p.until("</tag>"), "abc", false, "match 3");
    check(|p| p.until("</tag>"), "", true, "need_more 0");
}

#[test]
fn until_one_of_stops_at_the_shortest_delimiter() {
    check(|p| p.until_one_of(["<ab", "<a"]), "x<ab", false, "match 1");
    check(
        |p| p.until_one_of(["</a>", "</b>"]),
        "xy</b>",
        false,
        "match 2",
    );
    check(|p| p.until_one_of(["ｘｙ"]), "aｘｙ", false, "match 1");
}

#[test]
fn rest_needs_more_while_streaming() {
    check(
        |p| {
            let r = p.rest();
            p.tag("content", r)
        },
        "abc",
        true,
        "need_more 3 content~[0..3]",
    );
    check(
        |p| {
            let r = p.rest();
            p.tag("content", r)
        },
        "abc",
        false,
        "match 3 content[0..3]",
    );
}

#[test]
fn json_number_lookahead_holds_back_a_streamed_number() {
    check(
        |p| p.json_number(),
        "3",
        true,
        "need_more 1 json-number~[0..1]",
    );
    check(|p| p.json_number(), "3", false, "match 1 json-number[0..1]");
    check(
        |p| p.json_number(),
        "3.14",
        false,
        "match 4 json-number[0..4]",
    );
    check(|p| p.json_number(), "3 ", true, "match 1 json-number[0..1]");
    check(
        |p| p.json_number(),
        "-0.5e+3",
        false,
        "match 7 json-number[0..7]",
    );
    check(|p| p.json_number(), "01", false, "no_match 1");
    check(
        |p| p.json_number(),
        "-",
        true,
        "need_more 1 json-number~[0..1]",
    );
}

#[test]
fn choice_commits_to_an_alternative_that_needs_more() {
    let choice = |p: &mut Builder| {
        let a = p.literal("abc");
        let b = p.literal("ab");
        p.choice([a, b])
    };
    check(choice, "ab", true, "need_more 2");
    check(choice, "ab", false, "match 2");
}

#[test]
fn repetition_stops_at_the_end_and_on_empty_iterations() {
    let digits = |p: &mut Builder| {
        let d = p.chars("[0-9]", 1);
        p.repeat(d, 2..=3)
    };
    check(digits, "1", true, "need_more 1");
    check(digits, "1", false, "no_match 1");
    check(digits, "1234", false, "match 3");
    check(
        |p| {
            let e = p.eps();
            p.zero_or_more(e)
        },
        "ab",
        false,
        "match 0",
    );
    check(
        |p| {
            let s = p.space();
            p.one_or_more(s)
        },
        "ab",
        false,
        "no_match 0",
    );
}

#[test]
fn atomic_drops_partial_nodes() {
    let name = |p: &mut Builder| {
        let name = p.literal("get_weather");
        p.tag("tool-name", name)
    };
    check(name, "get_w", true, "need_more 5 tool-name~[0..5]");
    check(
        |p| {
            let n = name(p);
            p.atomic(n)
        },
        "get_w",
        true,
        "need_more 5",
    );
    check(
        |p| {
            let n = name(p);
            p.atomic(n)
        },
        "get_weather",
        true,
        "match 11 tool-name[0..11]",
    );
}

#[test]
fn rules_and_tags_nest() {
    let call = |p: &mut Builder| {
        let open = p.literal("<");
        let name = p.chars("[a-z]", 1..);
        let name = p.tag("name", name);
        let close = p.literal(">");
        let body = p.seq([open, name, close]);
        p.rule("call site", body)
    };
    check(call, "<ab>", false, "match 4 call-site[0..4](name[1..3])");
    check(
        call,
        "<ab",
        true,
        "need_more 3 call-site~[0..3](name[1..3])",
    );
    check(call, "<ab!", true, "no_match 3");
}

#[test]
fn lookahead() {
    let peek = |p: &mut Builder| {
        let a = p.literal("ab");
        let a = p.tag("t", a);
        p.peek(a)
    };
    check(peek, "ab", false, "match 0");
    check(peek, "a", true, "need_more 0");
    let not = |p: &mut Builder| {
        let a = p.literal("ab");
        let not = p.negate(a);
        let any = p.any();
        p.seq([not, any])
    };
    check(not, "ax", false, "match 1");
    check(not, "ab", false, "no_match 0");
    check(not, "a", true, "need_more 1");
}

#[test]
fn anchors_and_any() {
    check(
        |p| {
            let s = p.start();
            let e = p.end();
            p.seq([s, e])
        },
        "",
        false,
        "match 0",
    );
    check(
        |p| {
            let a = p.any();
            let s = p.start();
            p.seq([a, s])
        },
        "x",
        false,
        "no_match 1",
    );
    check(|p| p.end(), "x", true, "no_match 0");
    check(|p| p.any(), "", true, "need_more 0");
    check(|p| p.any(), "", false, "no_match 0");
}

#[test]
fn space_is_c_isspace() {
    check(|p| p.space(), " \t\n\r\u{b}\u{c}x", false, "match 6");
}

#[test]
fn string_content_escapes() {
    check(
        |p| p.json_string(),
        r#""a\"b\\\/\b\f\n\r\t\u00e9""#,
        false,
        "match 26 json-string[0..26]",
    );
    check(|p| p.json_string(), r#""a\x""#, false, "no_match 1");
    check(
        |p| p.json_string(),
        r#""a\u12"#,
        true,
        "need_more 6 json-string~[0..6]",
    );
    check(
        |p| p.json_string(),
        r#""a\"#,
        true,
        "need_more 3 json-string~[0..3]",
    );
    check(
        |p| p.json_string(),
        "\"raw\ncontrol\"",
        false,
        "match 13 json-string[0..13]",
    );
    check(|p| p.string_content('\''), r#"a\'b'"#, false, "match 4");
}

#[test]
fn chars_bounds() {
    check(|p| p.chars("[a-c]", 2..=3), "abcd", false, "match 3");
    check(|p| p.chars("[a-c]", 2..=3), "ad", false, "no_match 1");
    check(|p| p.chars("[^a-c]", 0..), "xyza", false, "match 3");
    check(|p| p.chars("[a-c]", 2..), "a", true, "need_more 1");
}

#[test]
fn json_values() {
    let doc = r#"{"a": [1, -2.5e3, true, false, null, "x"], "b" : {}, "c":[ ]}"#;
    let end = doc.len();
    let res = format!("match {end} json-value[0..{end}]");
    let mut p = Builder::new();
    let root = p.json();
    p.set_root(root);
    let arena = p.build().unwrap_or_else(|err| panic!("{err}"));
    let parsed = parse(&arena, doc, &Options::default());
    assert_eq!(
        format!("match {} json-value[0..{}]", parsed.end, parsed.end),
        res
    );
    assert_eq!(parsed.outcome, Outcome::Match);
    check(|p| p.json(), "[1, 2", true, "need_more 5 json-value~[0..5](json-array~[0..5](json-value[1..2](json-number[1..2]) json-value~[4..5](json-number~[4..5])))");
    check(|p| p.json(), "{\"a\" 1}", false, "no_match 0");
}

#[test]
fn json_member() {
    check(
        |p| {
            let v = p.json();
            p.json_member("name", v)
        },
        r#""name" : null"#,
        false,
        "match 13 json-value[9..13](json-null[9..13])",
    );
}

#[test]
fn python_values() {
    check(|p| p.python_value(), "{'a': [True, None], \"b\": 'x'} ", false,
        "match 30 python-value[0..30](python-dict[0..30](python-string[1..4] python-value[6..18](python-array[6..18](python-value[7..11](python-bool[7..11]) python-value[13..17](python-none[13..17]))) python-string[20..23] python-value[25..28](python-string[25..28])))");
}

#[test]
fn marker() {
    check(|p| p.marker(), "<|end|>", false, "match 7");
    check(|p| p.marker(), "[TOOL_CALLS]", false, "match 12");
}

#[test]
fn deep_nesting_does_not_overflow() {
    let mut p = Builder::new();
    let root = p.json();
    p.set_root(root);
    let arena = p.build().unwrap_or_else(|err| panic!("{err}"));
    let depth = 100_000;
    let open = "[".repeat(depth);
    assert_eq!(
        parse(&arena, &open, &Options { partial: true }).outcome,
        Outcome::NeedMore
    );
    assert_eq!(
        parse(&arena, &open, &Options::default()).outcome,
        Outcome::NoMatch
    );
    let full = open + &"]".repeat(depth);
    let res = parse(&arena, &full, &Options::default());
    assert_eq!((res.outcome, res.end), (Outcome::Match, 2 * depth));
    assert_eq!(res.ast.visit().len(), 2 * depth);
    // Streamed in chunks, too.
    let mut stream = gbnf_peg::StreamParser::new(&arena);
    for chunk in full.as_bytes().chunks(997) {
        let status = stream.feed(chunk);
        assert_ne!(status.outcome, Outcome::NoMatch);
    }
    let done = stream.finish();
    assert_eq!((done.outcome, done.end), (Outcome::Match, 2 * depth));
    assert_eq!(stream.ast().visit().len(), 2 * depth);
}

fn build_error(define: impl FnOnce(&mut Builder) -> NodeId) -> (ErrorKind, Option<String>, String) {
    let mut p = Builder::new();
    let root = define(&mut p);
    p.set_root(root);
    let err = p
        .build()
        .err()
        .unwrap_or_else(|| panic!("expected an error"));
    let text = err.to_string();
    (err.kind, err.rule, text)
}

#[test]
fn undefined_reference() {
    let (kind, rule, text) = build_error(|p| p.ref_("missing rule"));
    assert_eq!(
        kind,
        ErrorKind::UndefinedRule {
            name: "missing-rule".into()
        }
    );
    assert_eq!(rule.as_deref(), Some("missing-rule"));
    assert_eq!(text, "rule 'missing-rule': undefined rule 'missing-rule'");
}

#[test]
fn left_recursion_is_rejected() {
    let (kind, _, text) = build_error(|p| {
        let me = p.ref_("expr");
        let plus = p.literal("+");
        let body = p.seq([me, plus]);
        p.rule("expr", body)
    });
    assert_eq!(
        kind,
        ErrorKind::LeftRecursion {
            cycle: vec!["expr".into(), "expr".into()]
        }
    );
    assert_eq!(text, "rule 'expr': left recursion: expr -> expr");
    // Through a nullable prefix and a second rule.
    let (kind, _, _) = build_error(|p| {
        let x = p.literal("x");
        let opt = p.optional(x);
        let b = p.ref_("b");
        let a_body = p.seq([opt, b]);
        let a = p.rule("a", a_body);
        let ws = p.space();
        let again = p.ref_("a");
        let b_body = p.seq([ws, again]);
        p.rule("b", b_body);
        a
    });
    assert_eq!(
        kind,
        ErrorKind::LeftRecursion {
            cycle: vec!["b".into(), "a".into(), "b".into()]
        }
    );
}

#[test]
fn right_recursion_is_fine() {
    check(
        |p| {
            let open = p.literal("(");
            let me = p.ref_("nest");
            let opt = p.optional(me);
            let close = p.literal(")");
            let body = p.seq([open, opt, close]);
            p.rule("nest", body)
        },
        "(())",
        false,
        "match 4 nest[0..4](nest[1..3])",
    );
}

#[test]
fn missing_root() {
    assert_eq!(
        Builder::new().build().err().map(|err| err.kind),
        Some(ErrorKind::NoRoot)
    );
}

fn everything() -> Arena {
    let mut p = Builder::new();
    let mut items = vec![
        p.eps(),
        p.start(),
        p.end(),
        p.literal("x\"\n"),
        p.any(),
        p.space(),
    ];
    items.push(p.chars("[^a-z\\u00e9]", 2..=5));
    items.push(p.chars("[0-9]", 1..));
    items.push(p.until("</x>"));
    items.push(p.until_one_of(["a", "b"]));
    items.push(p.rest());
    items.push(p.json());
    items.push(p.python_value());
    let v = p.json();
    items.push(p.json_member("k", v));
    let s = p.json_string();
    items.push(p.schema(s, "arg", json!({"type": "string", "enum": ["a"]}), true));
    let e = p.eps();
    items.push(p.gbnf(e, "[a-z]+"));
    let e = p.eps();
    items.push(p.ac(e, ["</x>"]));
    let lit = p.literal("y");
    let t = p.tag("t", lit);
    items.push(p.atomic(t));
    items.push(p.marker());
    let lit = p.literal("z");
    items.push(p.trigger_rule("trig", lit));
    let peek = p.peek(v);
    let not = p.negate(v);
    let rep = p.repeat(v, 3);
    items.extend([peek, not, rep]);
    let choice = p.choice(items.clone());
    let root = p.seq([choice, items[3]]);
    p.set_root(root);
    p.build().unwrap_or_else(|err| panic!("{err}"))
}

#[test]
fn json_round_trip() {
    let arena = everything();
    let value = arena.to_json();
    let back = Arena::from_json(&value).unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(back, arena);
    assert_eq!(back.to_json(), value);
    // Through text, as chat parameters store it.
    let text = value.to_string();
    let reparsed: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(
        Arena::from_json(&reparsed).map(|a| a.to_json()).ok(),
        Some(value)
    );
}

#[test]
fn hostile_json_is_an_error() {
    let cases = [
        json!(null),
        json!({"parsers": 3, "root": 0}),
        json!({"parsers": [], "root": 0}),
        json!({"parsers": [{"type": "literal"}], "root": 0}),
        json!({"parsers": [{"type": "sequence", "children": [5]}], "root": 0}),
        json!({"parsers": [{"type": "sequence", "children": [0]}], "root": 0}),
        json!({"parsers": [{"type": "repetition", "child": 0, "min_count": 0, "max_count": -1}], "root": 0}),
        json!({"parsers": [{"type": "ref", "name": "x"}], "root": 0}),
        json!({"parsers": [{"type": "epsilon"}], "rules": {"x": 0}, "root": 0}),
        json!({"parsers": [{"type": "rule", "name": "y", "child": 0}], "rules": {"x": 0}, "root": 0}),
        json!({"parsers": [{"type": "chars", "pattern": "a", "min_count": -2, "max_count": 1}], "root": 0}),
        json!({"parsers": [{"type": "string", "delimiter": "é"}], "root": 0}),
        json!({"parsers": [{"type": "bogus"}], "root": 0}),
        json!({"parsers": [{"type": "epsilon"}], "root": -1}),
        json!({"parsers": [{"type": "epsilon"}], "root": 4294967296u64}),
    ];
    for case in cases {
        assert!(Arena::from_json(&case).is_err(), "{case}");
    }
}

/// The AST as an indented tree with each node's text; JSON values below `tool-args` are
/// left out to keep snapshots short.
fn render_tree(arena: &Arena, ast: &Ast, input: &str) -> String {
    let mut out = String::new();
    let mut stack: Vec<(AstId, usize)> = ast.roots().iter().rev().map(|&id| (id, 0)).collect();
    while let Some((id, depth)) = stack.pop() {
        let node = ast.node(id);
        let (kind, name) = match ast.label(arena, id) {
            Label::Rule(name) => ("rule", name),
            Label::Tag(name) => ("tag", name),
        };
        let partial = if node.is_partial { " (partial)" } else { "" };
        let text = &input[node.start..node.end];
        out.push_str(&format!(
            "{}{kind} {name}{partial}: {text:?}\n",
            "  ".repeat(depth)
        ));
        if name != "tool-args" {
            stack.extend(
                ast.children(id)
                    .iter()
                    .rev()
                    .map(|&child| (child, depth + 1)),
            );
        }
    }
    out
}

#[test]
fn transcripts() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/peg-runtime/transcripts"
    );
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|err| panic!("{dir}: {err}"))
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .collect();
    paths.sort();
    assert!(!paths.is_empty());
    let arena = tool_call_parser();
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{path:?}: {err}"));
        let partial = Options { partial: true };
        for cut in (0..=text.len()).filter(|&cut| text.is_char_boundary(cut)) {
            let res = parse(&arena, &text[..cut], &partial);
            assert_ne!(
                res.outcome,
                Outcome::NoMatch,
                "{path:?} prefix {:?}",
                &text[..cut]
            );
        }
        let res = parse(&arena, &text, &Options::default());
        let name = path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .unwrap_or("transcript");
        let report = format!(
            "{text}\n--- outcome ---\n{:?} {}\n--- ast ---\n{}",
            res.outcome,
            res.end,
            render_tree(&arena, &res.ast, &text)
        );
        insta::with_settings!({
            snapshot_path => "../../../snapshots/peg-runtime",
            prepend_module_to_snapshot => false,
        }, {
            insta::assert_snapshot!(name, report);
        });
    }
}
