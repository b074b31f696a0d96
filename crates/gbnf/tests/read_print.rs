//! Data-driven tests of the reader and printer: each `tests/data/gbnf-text/read/*.gbnf` is
//! read and printed (snapshot of the printed grammar), or refused (snapshot of the
//! located error). Printing must also be a fixed point and round-trip through the reader.

use std::path::PathBuf;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether `expr` has a `<text>` token, which needs a vocabulary to load.
fn has_token_text(expr: &gbnf::Expr) -> bool {
    match expr {
        gbnf::Expr::Token(token) => matches!(token.kind, gbnf::TokenKind::Text(_)),
        gbnf::Expr::Seq(items) | gbnf::Expr::Alt(items) => items.iter().any(has_token_text),
        gbnf::Expr::Repeat { expr, .. } => has_token_text(expr),
        _ => false,
    }
}

/// The matcher's verdicts on the samples in `path` (one JSON string per line), if any,
/// in the snapshot format that `cargo xtask llama-compat` replays.
fn verdicts(grammar: &gbnf::Grammar, path: &std::path::Path) -> String {
    let Ok(samples) = std::fs::read_to_string(path) else {
        return String::new();
    };
    let matcher = gbnf::Matcher::new(grammar, "root").expect("the grammar compiles");
    let mut out = String::new();
    for line in samples.lines().filter(|line| !line.trim().is_empty()) {
        let sample: String = serde_json::from_str(line).expect("a JSON string per line");
        let verdict = matcher.verdict(&sample).to_string();
        out.push_str(&format!("{verdict}\t{line}\n"));
    }
    out
}

fn check(name: &str) {
    let path = repo_root().join(format!("tests/data/gbnf-text/read/{name}.gbnf"));
    let text = std::fs::read_to_string(&path).expect("test data is readable");
    let snapshot = match gbnf::read(&text) {
        Ok(grammar) => {
            let printed = gbnf::print(&grammar);
            let reread = gbnf::read(&printed).expect("printed grammars read back");
            assert_eq!(reread, grammar, "read(print(g)) == g for {name}");
            assert_eq!(
                gbnf::print(&reread),
                printed,
                "printing is a fixed point for {name}"
            );
            if !grammar.rules.values().any(has_token_text) {
                let verdicts = verdicts(
                    &reread,
                    &repo_root().join(format!("tests/data/gbnf-text/read/{name}.samples.jsonl")),
                );
                format!("--- grammar (root: root) ---\n{printed}--- verdicts ---\n{verdicts}")
            } else {
                // `<text>` tokens need a vocabulary to load: not for llama-compat replay.
                format!("printed (token texts need a vocabulary):\n{printed}")
            }
        }
        Err(error) => format!("error: {error}\n"),
    };
    insta::with_settings!({
        snapshot_path => repo_root().join("snapshots/gbnf-text/read"),
        prepend_module_to_snapshot => false,
        input_file => path,
    }, {
        insta::assert_snapshot!(name, snapshot);
    });
}

#[test]
fn basic() {
    check("basic")
}
#[test]
fn class_edges() {
    check("class-edges")
}
#[test]
fn comments_and_newlines() {
    check("comments-and-newlines")
}
#[test]
fn duplicate_rule() {
    check("duplicate-rule")
}
#[test]
fn empty_alternatives() {
    check("empty-alternatives")
}
#[test]
fn err_bar_continues() {
    check("err-bar-continues")
}
#[test]
fn err_brace_no_min() {
    check("err-brace-no-min")
}
#[test]
fn err_max_below_min() {
    check("err-max-below-min")
}
#[test]
fn err_repeat_nothing() {
    check("err-repeat-nothing")
}
#[test]
fn err_short_hex() {
    check("err-short-hex")
}
#[test]
fn err_stray_paren() {
    check("err-stray-paren")
}
#[test]
fn err_token_id() {
    check("err-token-id")
}
#[test]
fn err_unclosed_group() {
    check("err-unclosed-group")
}
#[test]
fn err_underscore() {
    check("err-underscore")
}
#[test]
fn err_unknown_escape() {
    check("err-unknown-escape")
}
#[test]
fn err_unterminated_class() {
    check("err-unterminated-class")
}
#[test]
fn err_unterminated_literal() {
    check("err-unterminated-literal")
}
#[test]
fn groups_and_order() {
    check("groups-and-order")
}
#[test]
fn literal_escapes() {
    check("literal-escapes")
}
#[test]
fn nested_repetitions() {
    check("nested-repetitions")
}
#[test]
fn non_scalar_escapes() {
    check("non-scalar-escapes")
}
#[test]
fn repetition_forms() {
    check("repetition-forms")
}
#[test]
fn tokens() {
    check("tokens")
}

/// Reads, prints, re-reads and checks a generated text; returns the printed text.
fn stress(text: &str) -> String {
    let grammar = gbnf::read(text).expect("stress input reads");
    let printed = gbnf::print(&grammar);
    assert_eq!(gbnf::read(&printed).as_ref(), Ok(&grammar));
    gbnf::check(text, "root").expect("stress input checks");
    gbnf::validate(&grammar, "root").expect("stress grammar validates");
    printed
}

#[test]
fn stress_nested_parentheses() {
    let depth = 10_000;
    let text = format!("root ::= {}\"a\"{}\n", "(".repeat(depth), ")".repeat(depth));
    let printed = stress(&text);
    assert!(
        printed.lines().count() > depth / 100,
        "deep groups are hoisted into rules"
    );
}

#[test]
fn stress_long_literal() {
    let text = format!("root ::= \"{}\"\n", "ab\\n".repeat(25_000));
    stress(&text);
}

#[test]
fn stress_many_rules() {
    let n_rules = 50_000;
    let mut text = String::from("root ::= r0\n");
    for i in (0..n_rules).rev() {
        text.push_str(&format!("r{i} ::= \"a\" r{} | \"b\"\n", i + 1));
    }
    text.push_str(&format!("r{n_rules} ::= \"end\"\n"));
    stress(&text);
}

#[test]
fn stress_long_left_recursive_cycle() {
    let n_rules = 50_000;
    let mut text = String::from("root ::= r0\n");
    for i in 0..n_rules {
        text.push_str(&format!("r{i} ::= r{} \"x\"\n", (i + 1) % n_rules));
    }
    let error = gbnf::check(&text, "root").expect_err("the cycle is left recursion");
    assert!(error.to_string().contains("left recursion"), "{error}");
}

#[test]
fn stress_stacked_optionals() {
    let text = format!("root ::= \"a\"{}\n", "?".repeat(10_000));
    stress(&text);
}

/// IR repetitions over llama.cpp's limits print as equivalent legal grammars: the
/// snapshot carries the verdicts the repetition's definition implies for `a^n z`, which
/// `cargo xtask llama-compat` replays in llama.cpp.
#[test]
fn legalized_bounds() {
    let path = repo_root().join("tests/data/gbnf-text/legalize-bounds.txt");
    let cases = std::fs::read_to_string(&path).expect("test data is readable");
    for line in cases
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
    {
        let mut fields = line.split_whitespace();
        let min: u32 = fields.next().and_then(|f| f.parse().ok()).expect("min");
        let max: Option<u32> = fields.next().and_then(|f| f.parse().ok());
        let mut grammar = gbnf::Grammar::new();
        let body = gbnf::Expr::seq([
            gbnf::Expr::repeat(gbnf::Expr::literal("a"), min, max),
            gbnf::Expr::literal("z"),
        ]);
        grammar.insert(gbnf::RuleName::new("root").expect("valid name"), body);
        let printed = gbnf::print(&grammar);
        gbnf::check(&printed, "root").expect("the legalized grammar loads");
        let mut lengths = vec![0, min.saturating_sub(1), min, min + 1];
        lengths.extend(max.map_or(vec![min + 1000], |max| vec![max - 1, max, max + 1]));
        lengths.dedup();
        let mut snapshot = format!("--- grammar (root: root) ---\n{printed}--- verdicts ---\n");
        for n in lengths {
            let sample = format!("{}z", "a".repeat(n as usize));
            let verdict = if n < min {
                format!("REJECT {n}")
            } else if max.is_some_and(|max| n > max) {
                format!("REJECT {}", max.unwrap_or(0))
            } else {
                "ACCEPT".to_owned()
            };
            snapshot.push_str(&format!(
                "{verdict}\t{}\n",
                serde_json::to_string(&sample).expect("json")
            ));
        }
        let name = format!(
            "legalize-{min}-{}",
            max.map_or("inf".to_owned(), |max| max.to_string())
        );
        insta::with_settings!({
            snapshot_path => repo_root().join("snapshots/gbnf-text/legalize"),
            prepend_module_to_snapshot => false,
            input_file => path.clone(),
        }, {
            insta::assert_snapshot!(name, snapshot);
        });
    }
}
#[test]
fn token_texts() {
    check("token-texts")
}

/// Only the rules over the limits are rewritten; the others print as they are, and a helper
/// rule never takes the name of a rule that was not rewritten.
#[test]
fn legalizing_one_rule_leaves_the_others_alone() {
    let name = |text: &str| gbnf::RuleName::new(text).expect("valid name");
    let mut grammar = gbnf::Grammar::new();
    grammar.insert(
        name("root"),
        gbnf::Expr::seq([
            gbnf::Expr::repeat(gbnf::Expr::literal("a"), 0, Some(5000)),
            gbnf::Expr::rule(&name("root-rep-1")),
        ]),
    );
    // The name the first helper of `root` would take, already a (legal) rule.
    grammar.insert(
        name("root-rep-1"),
        gbnf::Expr::seq([
            gbnf::Expr::literal("z"),
            gbnf::Expr::optional(gbnf::Expr::literal("!")),
        ]),
    );
    let printed = gbnf::print(&grammar);
    let (legal, _) = gbnf::check(&printed, "root").expect("the legalized grammar loads");
    assert!(
        printed.contains("root-rep-1 ::= \"z\" \"!\"?\n"),
        "the legal rule is kept as it was:\n{printed}"
    );
    assert!(
        legal.rules.len() > 2,
        "root was rewritten with helpers:\n{printed}"
    );
    let matcher = gbnf::Matcher::new(&legal, "root").expect("matcher");
    for (n, tail, accept) in [
        (0, "z", true),
        (5000, "z!", true),
        (5001, "z", false),
        (7, "", false),
    ] {
        let text = format!("{}{tail}", "a".repeat(n));
        assert_eq!(
            matches!(matcher.verdict(&text), gbnf::Verdict::Accept),
            accept,
            "{n} a's then {tail:?}:\n{printed}"
        );
    }
}

/// Each `tests/data/gbnf-text/fixed-point/*.gbnf` prints to text that prints to itself once
/// read (these need legalising, so the read grammar itself does not come back).
#[test]
fn legalized_prints_are_fixed_points() {
    let dir = repo_root().join("tests/data/gbnf-text/fixed-point");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("test data is readable")
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "gbnf"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for path in files {
        let text = std::fs::read_to_string(&path).expect("test data is readable");
        let grammar = gbnf::read(&text).expect("the test grammar reads");
        let printed = gbnf::print(&grammar);
        let reread = gbnf::read(&printed).expect("printed grammars read back");
        assert_eq!(
            gbnf::print(&reread),
            printed,
            "printing is not a fixed point for {}",
            path.display()
        );
    }
}
