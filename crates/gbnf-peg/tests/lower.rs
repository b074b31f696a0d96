//! Lowering cases: each `tests/data/peg-lower/<case>.peg` is lowered and snapshotted with
//! the grammar's verdicts on `<case>.samples.jsonl` and on sampled strings. A first-line
//! comment `# lower: lazy` or `# lower: exact-space` selects options.
//!
//! Every case also checks the lowering's promise: any string the parser matches, the grammar
//! (lowered non-lazy with exact spaces) accepts. A proptest checks the same on random parsers.

mod support;

use std::path::{Path, PathBuf};

use gbnf::{Matcher, Verdict};
use gbnf_peg::{lower, parse, parse_peg, Arena, LowerOptions, Options, Outcome, SpaceStyle};
use proptest::prelude::*;

fn data_dir() -> PathBuf {
    support::repo_root().join("tests/data/peg-lower")
}

/// Checks the promise on `samples` and returns the snapshot.
fn check(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{path:?}: {error}"));
    let arena = parse_peg(&text).unwrap_or_else(|error| panic!("{path:?}: {error}"));
    let header = text.lines().next().unwrap_or_default();
    let options = LowerOptions {
        lazy: header.contains("lazy"),
        space: if header.contains("exact-space") {
            SpaceStyle::Exact
        } else {
            SpaceStyle::Bounded
        },
        ..LowerOptions::default()
    };
    let lowered = lower(&arena, &options).unwrap_or_else(|error| panic!("{path:?}: {error}"));
    if let Err(error) = gbnf::validate(&lowered.grammar, "root") {
        panic!("{path:?}: {error}\n{}", gbnf::print(&lowered.grammar));
    }
    let mut samples: Vec<String> = Vec::new();
    let samples_path = path.with_extension("samples.jsonl");
    if let Ok(lines) = std::fs::read_to_string(&samples_path) {
        for line in lines.lines().filter(|line| !line.trim().is_empty()) {
            let sample: String = serde_json::from_str(line)
                .unwrap_or_else(|error| panic!("{samples_path:?}: {error}"));
            samples.push(sample);
        }
    }
    let generated = support::samples(&[&lowered.grammar], 6, 11);
    let step = generated.len().div_ceil(8).max(1);
    samples.extend(generated.into_iter().step_by(step));
    // `gbnf` and `schema` nodes narrow the grammar on purpose: no superset there.
    if !header.contains("narrower") {
        check_superset(&arena, &samples).unwrap_or_else(|error| panic!("{path:?}: {error}"));
    }

    let mut out = String::new();
    out.push_str(&format!(
        "source: {}\n",
        path.file_name().unwrap_or_default().to_string_lossy()
    ));
    out.push_str(&format!(
        "lazy: {}, space: {:?}\n",
        options.lazy, options.space
    ));
    let triggers: Vec<&str> = lowered.triggers.iter().map(|name| name.as_str()).collect();
    out.push_str(&format!("triggers: {triggers:?}\n"));
    for warning in &lowered.warnings {
        out.push_str(&format!("warning: {warning}\n"));
    }
    out.push_str(&support::grammar_snapshot(&lowered.grammar, &samples));
    out
}

/// Every sample the parser matches is accepted by the exact, non-lazy lowering.
fn check_superset(arena: &Arena, samples: &[String]) -> Result<(), String> {
    let exact = LowerOptions {
        space: SpaceStyle::Exact,
        ..LowerOptions::default()
    };
    let lowered = lower(arena, &exact).map_err(|error| error.to_string())?;
    let matcher = Matcher::new(&lowered.grammar, "root").map_err(|error| error.to_string())?;
    for sample in samples {
        let parsed = parse(arena, sample, &Options::default());
        if parsed.outcome == Outcome::Match && parsed.end == sample.len() {
            let verdict = matcher.verdict(sample);
            if verdict != Verdict::Accept {
                return Err(format!(
                    "the parser matches {sample:?} but the grammar says {verdict:?}:\n{}",
                    gbnf::print(&lowered.grammar)
                ));
            }
        }
    }
    Ok(())
}

#[test]
fn lowering_cases() {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok().map(|entry| entry.path()))
                .collect()
        })
        .unwrap_or_default();
    paths.retain(|path| path.extension().is_some_and(|ext| ext == "peg"));
    paths.sort();
    assert!(paths.len() >= 10, "cases missing in {:?}", data_dir());
    for path in paths {
        let snapshot = check(&path);
        let name = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        insta::with_settings!({
            snapshot_path => support::repo_root().join("snapshots/peg-lower"),
            prepend_module_to_snapshot => false,
            omit_expression => true,
        }, {
            insta::assert_snapshot!(name, snapshot);
        });
    }
}

#[test]
fn lazy_lowering_without_triggers_is_an_error() {
    let arena = parse_peg("root <- \"a\"").unwrap_or_else(|error| panic!("{error}"));
    let options = LowerOptions {
        lazy: true,
        ..LowerOptions::default()
    };
    let error = lower(&arena, &options).err().map(|error| error.to_string());
    assert_eq!(
        error.as_deref(),
        Some("lazy lowering needs at least one trigger rule")
    );
}

#[test]
fn unreadable_gbnf_text_is_an_error_naming_the_rule() {
    let arena =
        parse_peg("root <- x\nx <- gbnf(\"a\", \"[a-\")").unwrap_or_else(|error| panic!("{error}"));
    let error = lower(&arena, &LowerOptions::default())
        .err()
        .map(|error| error.to_string());
    let error = error.unwrap_or_default();
    assert!(error.starts_with("rule 'x': gbnf text: "), "{error}");
}

#[test]
fn deeply_nested_definitions_lower_without_recursion() {
    let mut p = gbnf_peg::Builder::new();
    let mut node = p.literal("x");
    for _ in 0..1_000 {
        let a = p.literal("a");
        let seq = p.seq([a, node]);
        let tagged = p.tag("t", seq);
        node = p.optional(tagged);
    }
    p.set_root(node);
    let arena = p.build().unwrap_or_else(|error| panic!("{error}"));
    let lowered = lower(&arena, &LowerOptions::default()).unwrap_or_else(|error| panic!("{error}"));
    // 2,001 levels: the builder splits them into rules at most `MAX_DEPTH` deep.
    let grammar = &lowered.grammar;
    let max = gbnf::GrammarBuilder::MAX_DEPTH;
    assert!(grammar.rules.values().all(|body| body.depth() <= max));
    assert_eq!(grammar.rules.len(), 2_001_usize.div_ceil(max - 1));
}

/// Random parsers over a three-letter alphabet, written as `.peg` expressions.
fn expression() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("\"a\"".to_owned()),
        Just("\"b\"".to_owned()),
        Just("\"ab\"".to_owned()),
        Just("[a-b]".to_owned()),
        Just("[^a]".to_owned()),
        Just(".".to_owned()),
        Just("until(\"ab\")".to_owned()),
        Just("until(\"aa\", \"c\")".to_owned()),
        Just("space".to_owned()),
        Just("()".to_owned()),
    ];
    leaf.prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} / {b})")),
            inner.clone().prop_map(|a| format!("({a})*")),
            inner.clone().prop_map(|a| format!("({a})?")),
            inner.clone().prop_map(|a| format!("({a}){{1,2}}")),
            inner.clone().prop_map(|a| format!("!({a})")),
            inner.clone().prop_map(|a| format!("&({a})")),
            inner.prop_map(|a| format!("@t({a})")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn whatever_the_parser_matches_the_grammar_accepts(
        expr in expression(),
        inputs in proptest::collection::vec("[abc \n]{0,6}", 24),
    ) {
        let text = format!("root <- {expr}");
        let arena = parse_peg(&text).map_err(|error| TestCaseError::fail(format!("{text}: {error}")))?;
        check_superset(&arena, &inputs).map_err(|error| TestCaseError::fail(format!("{text}: {error}")))?;
    }
}

#[test]
fn an_empty_choice_lowers_to_a_class_of_nothing() {
    let mut p = gbnf_peg::Builder::new();
    let nothing = p.choice([]);
    let a = p.literal("a");
    let root = p.choice([nothing, a]);
    p.set_root(root);
    let arena = p.build().unwrap_or_else(|error| panic!("{error}"));
    let lowered = lower(&arena, &LowerOptions::default()).unwrap_or_else(|error| panic!("{error}"));
    gbnf::validate(&lowered.grammar, "root").unwrap_or_else(|error| panic!("{error}"));
    let matcher = Matcher::new(&lowered.grammar, "root").unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(matcher.verdict("a"), Verdict::Accept);
    assert_eq!(matcher.verdict("b"), Verdict::Reject { offset: 0 });
}
