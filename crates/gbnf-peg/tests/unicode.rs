//! llama.cpp's Unicode conformance table for the PEG runtime: `any`, `chars`, `until` and
//! string content on valid, truncated and invalid UTF-8, in both modes.

use gbnf_peg::{parse_bytes, Arena, Builder, NodeId, Options, Outcome};
use serde_json::Value;

const DATA: &str = include_str!("../../../tests/data/peg-runtime/unicode.jsonl");

/// Translates the C++ builder expression of a row into our builder.
fn build(expr: &str) -> Arena {
    let mut p = Builder::new();
    let chars_then_end = |p: &mut Builder, class: &str| -> NodeId {
        let chars = p.chars(class, 1..);
        let end = p.end();
        p.seq([chars, end])
    };
    let root = match expr {
        "p.sequence({p.one_or_more(p.any()), p.end()})" => {
            let any = p.any();
            let many = p.one_or_more(any);
            let end = p.end();
            p.seq([many, end])
        }
        r#"p.sequence({p.chars(R"([\u4E00-\u9FFF])"), p.end()})"# => {
            chars_then_end(&mut p, r"[\u4E00-\u9FFF]")
        }
        r#"p.sequence({p.chars(R"([\U0001F600-\U0001F64F])"), p.end()})"# => {
            chars_then_end(&mut p, r"[\U0001F600-\U0001F64F]")
        }
        r#"p.sequence({p.chars(R"([\u4E00-\u9FFF\U0001F600-\U0001F64F0-9])"), p.end()})"# => {
            chars_then_end(&mut p, r"[\u4E00-\u9FFF\U0001F600-\U0001F64F0-9]")
        }
        r#"p.until("</tag>")"# => p.until("</tag>"),
        r#"p.sequence({p.string_content('"'), p.literal("\"")})"# => {
            let body = p.json_string_content();
            let quote = p.literal("\"");
            p.seq([body, quote])
        }
        r#"p.string_content('"')"# => p.json_string_content(),
        other => panic!("no translation for parser expression {other}"),
    };
    p.set_root(root);
    p.build().unwrap_or_else(|err| panic!("{expr}: {err}"))
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&text[i..i + 2], 16).unwrap_or_else(|err| panic!("{text}: {err}"))
        })
        .collect()
}

fn check(row: &Value) {
    let field = |name: &str| {
        row[name]
            .as_str()
            .unwrap_or_else(|| panic!("row without {name}: {row}"))
    };
    let expr = field("parser");
    let input = hex(field("input_hex"));
    let partial = row["lenient"].as_bool() == Some(true);
    let arena = build(expr);
    let res = parse_bytes(&arena, &input, &Options { partial });
    let expected = match field("expected_result") {
        "success" => Outcome::Match,
        "need_more_input" => Outcome::NeedMore,
        _ => Outcome::NoMatch,
    };
    let what = format!("{} on {}", field("name"), field("input_hex"));
    assert_eq!(res.outcome, expected, "{what}");
    if res.outcome != Outcome::NoMatch {
        let mut end = res.end;
        if expr.contains("p.literal") && res.outcome == Outcome::Match {
            end -= 1;
        }
        assert_eq!(
            &input[..end],
            &hex(field("expected_text_hex"))[..],
            "{what}: matched text"
        );
    }
}

#[test]
fn llama_cpp_unicode_table() {
    let rows: Vec<Value> = DATA
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|err| panic!("{line}: {err}")))
        .collect();
    assert_eq!(rows.len(), 59);
    for row in &rows {
        check(row);
    }
}
