//! Conformance with llama.cpp's GBNF generation: the 29 `test-gbnf-generation` rows of
//! `tests/data/llamacpp/peg-parser.jsonl`, each C++ builder body translated into our builder.
//!
//! Grammars are compared by what they accept, not by text: both the expected grammar and
//! ours are read into the IR and matched on strings sampled from both (derivations and
//! their mutations). The snapshots show our grammar with those verdicts.

mod support;

use gbnf::Matcher;
use gbnf_peg::{lower, Builder, LowerOptions, NodeId, SpaceStyle};
use serde_json::Value;

/// The C++ test bodies, translated. Returns the root parser.
fn translate(name: &str, p: &mut Builder) -> Option<NodeId> {
    let root = match name {
        "literal grammar generation" => p.literal("hello"),
        "char class grammar" => p.chars("[a-z]", 1),
        "sequence grammar" => {
            let items = [p.literal("hello"), p.literal(" "), p.literal("world")];
            p.seq(items)
        }
        "choice grammar" => {
            let items = [p.literal("cat"), p.literal("dog")];
            p.choice(items)
        }
        "one_or_more grammar" => {
            let a = p.literal("a");
            p.one_or_more(a)
        }
        "zero_or_more grammar" => {
            let a = p.literal("a");
            p.zero_or_more(a)
        }
        "optional grammar" => {
            let hello = p.literal("hello");
            let world = p.literal(" world");
            let world = p.optional(world);
            p.seq([hello, world])
        }
        "until grammar" => p.until("</tag>"),
        "until grammar overlapping delimiter" => p.until("\n</parameter>\n"),
        "until grammar unicode delimiter" => p.until("<\u{FF5C}DSML\u{FF5C}"),
        "until grammar multiple delimiters" => p.until_one_of(["ab", "cd", "ef"]),
        "ac grammar" => {
            let until = p.until("</tag>");
            let close = p.literal("</tag>");
            let body = p.seq([until, close]);
            p.ac(body, ["</tag>"])
        }
        "ac grammar terminates at first delimiter" => {
            let delimiter = "\n</parameter>\n";
            let until = p.until(delimiter);
            let close = p.literal(delimiter);
            let body = p.seq([until, close]);
            p.ac(body, [delimiter])
        }
        "ac grammar multiple delimiters" => {
            let eps = p.eps();
            p.ac(eps, ["ab", "cd", "ef"])
        }
        "complex expressions with parentheses" => {
            let items = [p.literal("a"), p.literal("b")];
            let choice = p.choice(items);
            p.one_or_more(choice)
        }
        "rule references" => {
            let digit = p.chars("[0-9]", 1);
            let digit = p.rule("digit", digit);
            p.one_or_more(digit)
        }
        "escaping in literals" => p.literal("hello\nworld\n!"),
        "operator<< (whitespace insertion)" => {
            let items = [p.literal("hello"), p.space(), p.literal("world")];
            p.seq(items)
        }
        "emit only reachable rules" => {
            let orphan = p.literal("orphan");
            p.rule("orphan", orphan);
            let hello = p.literal("hello");
            let world = p.literal(" world");
            let child = p.rule("child", world);
            p.seq([hello, child])
        }
        "tagged choice inside sequence gets parenthesized" => {
            let a = p.literal("a");
            let items = [p.literal("b"), p.literal("c")];
            let choice = p.choice(items);
            let tagged = p.tag("t", choice);
            p.seq([a, tagged])
        }
        "tagged sequence inside choice gets parenthesized" => {
            let items = [p.literal("a"), p.literal("b")];
            let seq = p.seq(items);
            let tagged = p.tag("t", seq);
            let c = p.literal("c");
            p.choice([tagged, c])
        }
        "atomic choice inside repetition gets parenthesized" => {
            let items = [p.literal("a"), p.literal("b")];
            let choice = p.choice(items);
            let atomic = p.atomic(choice);
            p.one_or_more(atomic)
        }
        "silent parser emits nothing in gbnf" => {
            let hello = p.literal("hello");
            let world = p.literal("world");
            let silent = p.gbnf(world, "");
            p.seq([hello, silent])
        }
        "silent choice inside sequence emits nothing" => {
            let a = p.literal("a");
            let items = [p.literal("b"), p.literal("c")];
            let choice = p.choice(items);
            let silent = p.gbnf(choice, "");
            let d = p.literal("d");
            p.seq([a, silent, d])
        }
        "silent wrapped in tag emits nothing" => {
            let a = p.literal("a");
            let b = p.literal("b");
            let silent = p.gbnf(b, "");
            let tagged = p.tag("t", silent);
            p.seq([a, tagged])
        }
        "gbnf parser emits custom grammar" => {
            let a = p.literal("a");
            let b = p.literal("b");
            let custom = p.gbnf(b, "[a-z]+");
            p.seq([a, custom])
        }
        "nested transparent wrappers get parenthesized" => {
            let x = p.literal("x");
            let items = [p.literal("a"), p.literal("b")];
            let choice = p.choice(items);
            let atomic = p.atomic(choice);
            let tagged = p.tag("outer", atomic);
            p.seq([x, tagged])
        }
        "emit only trigger rules (and references)"
        | "emit only trigger rules (and references) (lazy)" => {
            let body = {
                let a = p.literal("a");
                let r2 = p.ref_("rule-2");
                p.seq([a, r2])
            };
            let rule1 = p.rule("rule-1", body);
            let body = {
                let b = p.literal("b");
                let r3 = p.ref_("rule-3");
                p.seq([b, r3])
            };
            p.trigger_rule("rule-2", body);
            let body = {
                let c = p.literal("c");
                let r4 = p.ref_("rule-4");
                p.seq([c, r4])
            };
            p.rule("rule-3", body);
            let d = p.literal("d");
            p.trigger_rule("rule-4", d);
            rule1
        }
        _ => return None,
    };
    Some(root)
}

fn slug(name: &str) -> String {
    let mut out = String::new();
    for ch in name.chars() {
        if ch.is_ascii_alphanumeric() {
            out.push(ch.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_owned()
}

fn rows() -> Vec<Value> {
    let path = support::repo_root().join("tests/data/llamacpp/peg-parser.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path:?}: {error}"));
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|row| row["suite"] == "test-gbnf-generation")
        .collect()
}

/// Lowers the translated row and compares it with the expected grammar on samples.
fn check(row: &Value) -> Result<String, String> {
    let name = row["name"].as_str().unwrap_or_default();
    let mut p = Builder::new();
    let root = translate(name, &mut p).ok_or_else(|| format!("{name}: no translation"))?;
    p.set_root(root);
    let arena = p
        .build()
        .map_err(|error| format!("{name}: build: {error}"))?;
    let options = LowerOptions {
        lazy: row["lazy"].as_bool().unwrap_or(false),
        space: SpaceStyle::Bounded,
        ..LowerOptions::default()
    };
    let lowered = lower(&arena, &options).map_err(|error| format!("{name}: lower: {error}"))?;
    gbnf::validate(&lowered.grammar, "root")
        .map_err(|error| format!("{name}: validate: {error}"))?;
    let expected_text = row["expected_grammar"].as_str().unwrap_or_default();
    let expected =
        gbnf::read(expected_text).map_err(|error| format!("{name}: expected: {error}"))?;
    let ours =
        Matcher::new(&lowered.grammar, "root").map_err(|error| format!("{name}: {error}"))?;
    let theirs = Matcher::new(&expected, "root").map_err(|error| format!("{name}: {error}"))?;
    let samples = support::samples(&[&lowered.grammar, &expected], 60, 7);
    for sample in &samples {
        let (a, b) = (ours.verdict(sample), theirs.verdict(sample));
        if a != b {
            return Err(format!(
                "{name}: {sample:?}: ours {a:?}, llama.cpp's {b:?}\nours:\n{}",
                gbnf::print(&lowered.grammar)
            ));
        }
    }
    // Keep snapshots short: a spread of the samples.
    let step = samples.len().div_ceil(16).max(1);
    let shown: Vec<String> = samples.iter().step_by(step).cloned().collect();
    let parser = row["parser"].as_str().unwrap_or_default();
    Ok(format!(
        "row: {name}\nllama.cpp builder: {parser}\n{}",
        support::grammar_snapshot(&lowered.grammar, &shown)
    ))
}

#[test]
fn all_gbnf_generation_rows_accept_what_llama_cpp_accepts() {
    let rows = rows();
    assert_eq!(rows.len(), 29);
    let mut failures = Vec::new();
    for row in &rows {
        match check(row) {
            Ok(snapshot) => {
                let name = slug(row["name"].as_str().unwrap_or_default());
                insta::with_settings!({
                    snapshot_path => support::repo_root().join("snapshots/peg-lower/gbnf-generation"),
                    prepend_module_to_snapshot => false,
                    omit_expression => true,
                }, {
                    insta::assert_snapshot!(name, snapshot);
                });
            }
            Err(error) => failures.push(error),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of 29 rows differ:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
