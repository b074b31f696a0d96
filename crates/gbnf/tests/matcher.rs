//! Tests of the matcher: data cases under `tests/data/gbnf-matcher/` (a grammar and its
//! samples, snapshotted with their verdicts), recorded llama.cpp verdicts on random
//! grammars, and the streaming API, errors and scaling cases.
#![allow(clippy::unwrap_used)]

use std::fmt::Write;
use std::path::{Path, PathBuf};

use gbnf::{CharClass, ErrorKind, Expr, Grammar, Matcher, RuleName, Verdict};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn data_dir() -> PathBuf {
    repo_root().join("tests/data/gbnf-matcher")
}

fn matcher_of(text: &str) -> Matcher {
    let grammar = gbnf::read(text).unwrap();
    Matcher::new(&grammar, "root").unwrap()
}

fn verdict_line(verdict: Verdict, sample: &str) -> String {
    let quoted = serde_json::to_string(sample).unwrap();
    format!("{verdict}\t{quoted}")
}

/// Runs one data case: `<name>.gbnf` with samples in `<name>.samples.jsonl` (one JSON
/// string per line), snapshotted as `snapshots/gbnf-matcher/<name>.snap`.
fn check(name: &str) {
    let dir = data_dir();
    let text = std::fs::read_to_string(dir.join(format!("{name}.gbnf"))).unwrap();
    let samples_text = std::fs::read_to_string(dir.join(format!("{name}.samples.jsonl"))).unwrap();
    let grammar = gbnf::read(&text).unwrap();
    let matcher = Matcher::new(&grammar, "root").unwrap();
    // The printed grammar must mean the same: match with it too.
    let printed = gbnf::print(&grammar);
    let reread = Matcher::new(&gbnf::read(&printed).unwrap(), "root").unwrap();
    let mut out = String::new();
    writeln!(out, "--- grammar (root: root) ---").unwrap();
    out.push_str(printed.trim_end());
    out.push('\n');
    writeln!(out, "--- verdicts ---").unwrap();
    for line in samples_text.lines().filter(|line| !line.trim().is_empty()) {
        let sample: String = serde_json::from_str(line).unwrap();
        let verdict = matcher.verdict(&sample);
        // Feeding code points one by one must agree with the one-shot verdict (which
        // takes fast paths through runs of ASCII).
        let mut state = matcher.start();
        let rejected = sample.char_indices().find(|&(_, ch)| !state.advance(ch));
        let streamed = match rejected {
            Some((offset, _)) => Verdict::Reject { offset },
            None if state.is_accepting() => Verdict::Accept,
            None if state.can_continue() => Verdict::Prefix,
            None => Verdict::Reject {
                offset: sample.len(),
            },
        };
        assert_eq!(verdict, streamed, "{name}: {sample:?}");
        assert_eq!(
            verdict,
            reread.verdict(&sample),
            "{name} printed: {sample:?}"
        );
        writeln!(out, "{}", verdict_line(verdict, &sample)).unwrap();
    }
    insta::with_settings!({
        snapshot_path => repo_root().join("snapshots/gbnf-matcher"),
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!(name, out);
    });
}

#[test]
fn every_data_case_has_a_test() {
    let mut names: Vec<String> = std::fs::read_dir(data_dir())
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".gbnf").map(str::to_owned)
        })
        .collect();
    names.sort();
    let source = std::fs::read_to_string(file!()).unwrap_or_default();
    let source = if source.is_empty() {
        std::fs::read_to_string(repo_root().join("crates/gbnf/tests/matcher.rs")).unwrap()
    } else {
        source
    };
    for name in names {
        assert!(
            source.contains(&format!("check(\"{name}\")")),
            "no test for data case {name}"
        );
    }
}

#[test]
fn literal() {
    check("literal");
}
#[test]
fn alternatives_and_empty() {
    check("alternatives-and-empty");
}
#[test]
fn nullable_loops() {
    check("nullable-loops");
}
#[test]
fn bounded_repetition() {
    check("bounded-repetition");
}
#[test]
fn multibyte() {
    check("multibyte");
}
#[test]
fn negated_class_and_any() {
    check("negated-class-and-any");
}
#[test]
fn no_finite_derivation() {
    check("no-finite-derivation");
}
#[test]
fn json() {
    check("json");
}
#[test]
fn right_recursion() {
    check("right-recursion");
}
#[test]
fn center_recursion() {
    check("center-recursion");
}
#[test]
fn left_recursion_gets_the_context_free_answer() {
    // llama.cpp refuses this grammar, so it cannot be a data case checked against it.
    let matcher = matcher_of("root ::= root \"a\" | \"b\"");
    assert_eq!(matcher.verdict(""), Verdict::Prefix);
    assert_eq!(matcher.verdict("b"), Verdict::Accept);
    assert_eq!(matcher.verdict("baaa"), Verdict::Accept);
    assert_eq!(matcher.verdict("ab"), Verdict::Reject { offset: 0 });
    assert_eq!(matcher.verdict("bab"), Verdict::Reject { offset: 2 });
    let matcher = matcher_of("root ::= x \"a\" | \"b\"\nx ::= e root\ne ::= \"\" | \"e\"");
    assert_eq!(matcher.verdict("baa"), Verdict::Accept);
    assert_eq!(matcher.verdict("ebaa"), Verdict::Accept);
    assert_eq!(matcher.verdict("ebae"), Verdict::Reject { offset: 3 });
    assert_eq!(matcher.verdict("eeba"), Verdict::Prefix);
}
#[test]
fn ambiguous_optionals() {
    check("ambiguous-optionals");
}
#[test]
fn nested_repetition() {
    check("nested-repetition");
}

/// llama.cpp's own grammar tests (`tests/data/llamacpp/grammar-integration.jsonl`): every
/// passing string is accepted and no failing string is. Rows with token elements are left
/// out: there, text segments match `!<[id]>` because llama.cpp's test feeds them as
/// tokens, while our matcher takes characters and token ids apart.
#[test]
fn llama_cpp_grammar_integration_vectors() {
    let path = repo_root().join("tests/data/llamacpp/grammar-integration.jsonl");
    let text = std::fs::read_to_string(path).unwrap();
    let mut checked = 0;
    for line in text.lines() {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        if row["kind"] != "grammar" || row["uses_tokens"] == true {
            continue;
        }
        let matcher = matcher_of(row["grammar"].as_str().unwrap());
        for (key, accepted) in [("pass", true), ("fail", false)] {
            for sample in row[key].as_array().unwrap() {
                let sample = sample.as_str().unwrap();
                let verdict = matcher.verdict(sample);
                assert_eq!(
                    verdict == Verdict::Accept,
                    accepted,
                    "{}: {sample:?} gave {verdict:?}",
                    row["name"]
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 90, "only {checked} strings checked");
}

/// Replays llama.cpp's verdicts on random grammars and strings, recorded by
/// `tests/data/gbnf-matcher/random/generate.py`.
#[test]
fn llama_cpp_verdicts_on_random_grammars() {
    let text = std::fs::read_to_string(data_dir().join("random/oracle.jsonl")).unwrap();
    let mut checked = 0;
    let mut disagreements = Vec::new();
    for line in text.lines() {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        let grammar_text = record["grammar"].as_str().unwrap();
        let matcher = matcher_of(grammar_text);
        let strings = record["strings"].as_array().unwrap();
        let verdicts = record["verdicts"].as_array().unwrap();
        for (sample, want) in strings.iter().zip(verdicts) {
            let sample = sample.as_str().unwrap();
            let got = verdict_line(matcher.verdict(sample), sample);
            let want = format!(
                "{}\t{}",
                want.as_str().unwrap(),
                serde_json::to_string(sample).unwrap()
            );
            checked += 1;
            if got != want {
                disagreements.push(format!("{grammar_text}  ours: {got}\n  llama.cpp: {want}"));
            }
        }
    }
    assert!(checked > 1000, "only {checked} recorded verdicts");
    assert!(
        disagreements.is_empty(),
        "{} of {checked} verdicts differ from llama.cpp:\n{}",
        disagreements.len(),
        disagreements[..disagreements.len().min(10)].join("\n")
    );
}

// ---------------------------------------------------------------------------------------
// Errors.

#[test]
fn missing_start_rule_is_an_error() {
    let grammar = gbnf::read("a ::= \"x\"").unwrap();
    let err = Matcher::new(&grammar, "root").unwrap_err();
    assert_eq!(
        err.kind,
        ErrorKind::MissingStartRule {
            name: "root".to_owned()
        }
    );
}

#[test]
fn undefined_rule_is_an_error_even_when_unreachable() {
    let grammar = gbnf::read("root ::= \"x\"\nother ::= missing").unwrap();
    let err = Matcher::new(&grammar, "root").unwrap_err();
    assert_eq!(
        err.kind,
        ErrorKind::UndefinedRule {
            name: "missing".to_owned(),
            rule: "other".to_owned()
        }
    );
}

#[test]
fn custom_start_rule() {
    let grammar = gbnf::read("root ::= \"a\"\nother ::= \"b\"+").unwrap();
    let matcher = Matcher::new(&grammar, "other").unwrap();
    assert_eq!(matcher.verdict("bbb"), Verdict::Accept);
    assert_eq!(matcher.verdict("a"), Verdict::Reject { offset: 0 });
}

#[test]
fn huge_repetition_products_are_refused_not_unrolled() {
    // Nested counts become rules of their own, so this compiles to a few thousand states.
    let nested = Expr::repeat(
        Expr::repeat(
            Expr::repeat(Expr::literal("ab"), 1000, Some(1000)),
            1000,
            Some(1000),
        ),
        1000,
        Some(1000),
    );
    let mut grammar = Grammar::new();
    grammar.insert(RuleName::new("root").unwrap(), nested);
    let matcher = Matcher::new(&grammar, "root").unwrap();
    assert_eq!(matcher.verdict("abab"), Verdict::Prefix);
    assert_eq!(matcher.verdict("aba"), Verdict::Prefix);
    assert_eq!(matcher.verdict("abb"), Verdict::Reject { offset: 2 });

    let mut grammar = Grammar::new();
    let flat = Expr::repeat(
        Expr::class(CharClass::new([('a', 'z')], false)),
        0,
        Some(u32::MAX),
    );
    grammar.insert(RuleName::new("root").unwrap(), flat);
    let err = Matcher::new(&grammar, "root").unwrap_err();
    assert!(
        matches!(err.kind, ErrorKind::RepetitionLimit { .. }),
        "{err}"
    );
}

#[test]
fn empty_alternation_is_not_viable() {
    let mut grammar = Grammar::new();
    grammar.insert(RuleName::new("root").unwrap(), Expr::Alt(Vec::new()));
    let matcher = Matcher::new(&grammar, "root").unwrap();
    assert!(!matcher.start().is_viable());
    assert_eq!(matcher.verdict(""), Verdict::Reject { offset: 0 });
    assert_eq!(matcher.verdict("a"), Verdict::Reject { offset: 0 });
}

// ---------------------------------------------------------------------------------------
// Streaming.

#[test]
fn rejected_advance_leaves_the_state_unchanged() {
    let matcher = matcher_of("root ::= \"ab\" | \"ac\"");
    let mut state = matcher.start();
    assert!(state.advance('a'));
    assert!(!state.advance('x'));
    assert!(!state.is_accepting());
    assert!(state.advance('c'));
    assert!(state.is_accepting());
    assert!(!state.can_continue());
    assert!(!state.advance('c'));
    assert!(state.is_viable());
}

#[test]
fn clones_are_independent() {
    let matcher = matcher_of("root ::= \"a\"+ \"b\"");
    let mut state = matcher.start();
    assert!(state.advance('a'));
    let mut fork = state.clone();
    assert!(fork.advance('b'));
    assert!(fork.is_accepting());
    assert!(!state.is_accepting());
    assert!(state.advance('a'));
    assert!(state.advance('b'));
    assert!(state.is_accepting());
}

#[test]
fn allowed_next_is_the_union_of_what_can_come() {
    let matcher = matcher_of("root ::= [a-c] | \"x\" [0-9] | [^q-z] \"!\"");
    let state = matcher.start();
    let allowed = state.allowed_next();
    assert!(allowed.is_negated(), "{allowed:?}");
    assert_eq!(allowed, CharClass::new([('q', 'w'), ('y', 'z')], true));
    let mut state = matcher.start();
    assert!(state.advance('x'));
    assert_eq!(state.allowed_next(), CharClass::new([('0', '9')], false));
    let mut state = matcher.start();
    assert!(state.advance('a'));
    assert!(state.is_accepting());
    assert_eq!(state.allowed_next(), CharClass::new([('!', '!')], false));
    assert!(state.advance('!'));
    assert_eq!(state.allowed_next(), CharClass::new([], false));
}

#[test]
fn allowed_next_of_any_is_everything() {
    let matcher = matcher_of("root ::= .");
    assert_eq!(matcher.start().allowed_next(), CharClass::new([], true));
}

#[test]
fn tokens_match_ids_not_characters() {
    let matcher = matcher_of("root ::= \"a\" <[10]> !<[11]> \"b\"");
    let mut state = matcher.start();
    assert!(state.advance('a'));
    assert!(!state.advance_token(11));
    assert!(state.allows_token(10));
    assert!(!state.allows_token(11));
    assert!(state.advance_token(10));
    assert_eq!(state.allowed_next(), CharClass::new([], false));
    assert!(state.can_continue());
    assert!(!state.advance_token(11));
    assert!(state.advance_token(12));
    assert!(state.advance('b'));
    assert!(state.is_accepting());
    assert_eq!(matcher.verdict("a"), Verdict::Prefix);
    assert_eq!(matcher.verdict("ab"), Verdict::Reject { offset: 1 });
}

#[test]
fn token_text_matches_no_id() {
    let matcher = matcher_of("root ::= <think> | !<think> | \"x\"");
    let state = matcher.start();
    assert!(state.can_continue());
    assert!((0..100).all(|id| !state.allows_token(id)));
    assert_eq!(matcher.verdict("x"), Verdict::Accept);
}

// ---------------------------------------------------------------------------------------
// Scaling: these would take exponential time or overflow the stack in a naive matcher.

#[test]
fn fifty_ambiguous_optionals() {
    let text = format!("root ::= {}", "\"a\"? ".repeat(50));
    let matcher = matcher_of(&text);
    assert_eq!(matcher.verdict(&"a".repeat(25)), Verdict::Accept);
    assert_eq!(matcher.verdict(&"a".repeat(50)), Verdict::Accept);
    assert_eq!(
        matcher.verdict(&"a".repeat(51)),
        Verdict::Reject { offset: 50 }
    );
}

#[test]
fn fifty_ambiguous_optionals_as_rules() {
    let mut text = String::from("root ::=");
    for i in 0..50 {
        text.push_str(&format!(" o{i}"));
    }
    for i in 0..50 {
        text.push_str(&format!("\no{i} ::= \"a\" | \"\""));
    }
    let matcher = matcher_of(&text);
    assert_eq!(matcher.verdict(&"a".repeat(50)), Verdict::Accept);
    assert_eq!(
        matcher.verdict(&"a".repeat(51)),
        Verdict::Reject { offset: 50 }
    );
}

/// A highly ambiguous grammar, for which Earley matching is cubic: 200 `a`s take about 75M
/// steps, and each doubling about 8× more (hours for a few thousand). The default step
/// limit stops it with `StepLimit` instead; short inputs still get their verdicts.
#[test]
fn cubic_ambiguity_stops_at_the_step_limit() {
    let matcher = matcher_of("root ::= (\"a\" x x x)?\nx ::= (root root){0,3}");
    assert_eq!(matcher.verdict(&"a".repeat(12)), Verdict::Accept);
    assert_eq!(matcher.verdict("aab"), Verdict::Reject { offset: 2 });
    assert_eq!(
        matcher.verdict_within(&"a".repeat(40), u64::MAX),
        Verdict::Accept
    );
    let long = "a".repeat(200);
    match matcher.verdict(&long) {
        Verdict::StepLimit { offset } => assert!((40..200).contains(&offset), "{offset}"),
        other => panic!("expected the step limit, got {other:?}"),
    }
    // Fed piece by piece, the default limit grows with the input taken: it gives up where
    // `verdict` would have for that much input, or soon after (the limit `verdict` applies
    // counts the whole input).
    let mut state = matcher.start();
    let taken = long.chars().take_while(|&ch| state.advance(ch)).count();
    assert!(state.gave_up());
    assert!((40..200).contains(&taken), "{taken}");
    assert!(state.steps() > matcher.default_step_limit(taken));
    assert!(state.steps() < matcher.default_step_limit(200));
    // Past a limit, `advance` refuses as for a code point that cannot come next, `gave_up`
    // tells the difference, and the state stays that of the input before.
    let mut state = matcher.start();
    state.set_step_limit(100_000);
    let taken = long.chars().take_while(|&ch| state.advance(ch)).count();
    assert!(state.gave_up());
    assert!((1..200).contains(&taken), "{taken}");
    assert!(state.is_accepting(), "{taken} `a`s are in the language");
    assert!(!state.advance('a'));
    assert_eq!(
        matcher.verdict_within(&long, 100_000),
        Verdict::StepLimit { offset: taken }
    );
}

/// Grammars that are not ambiguous stay far below the limit: a few steps a byte.
#[test]
fn json_takes_a_few_steps_a_byte() {
    let text = std::fs::read_to_string(repo_root().join("grammars/json.gbnf")).unwrap();
    let matcher = matcher_of(&text);
    let item = r#"{"name": "x\u00e9y", "values": [1, -2.5e3, true, null, {"deep": ["a", "b"]}]}"#;
    let input = format!("[{}]", vec![item; 2_000].join(", "));
    let mut state = matcher.start();
    state.advance_str(&input).unwrap();
    assert!(state.is_accepting());
    let per_byte = state.steps() as f64 / input.len() as f64;
    assert!(per_byte < 16.0, "{per_byte} steps a byte");
    assert!(matcher.default_step_limit(input.len()) > 100 * state.steps());
    assert_eq!(matcher.verdict(&input), Verdict::Accept);
}

#[test]
fn deep_right_recursion() {
    let matcher = matcher_of("root ::= x\nx ::= \"a\" x | \"\"");
    let input = "a".repeat(100_000);
    assert_eq!(matcher.verdict(&input), Verdict::Accept);
    assert_eq!(
        matcher.verdict(&format!("{input}b")),
        Verdict::Reject { offset: 100_000 }
    );
}

#[test]
fn deep_nesting() {
    let matcher = matcher_of("root ::= x\nx ::= \"(\" x \")\" | \"\"");
    let input = format!("{}{}", "(".repeat(50_000), ")".repeat(50_000));
    assert_eq!(matcher.verdict(&input), Verdict::Accept);
    assert_eq!(matcher.verdict(&input[..60_000]), Verdict::Prefix);
    assert_eq!(
        matcher.verdict(&format!("{input})")),
        Verdict::Reject { offset: 100_000 }
    );
}

#[test]
fn deep_expression_nesting_in_the_grammar() {
    const DEPTH: usize = 100_000;
    let mut expr = Expr::literal("a");
    for _ in 0..DEPTH {
        expr = Expr::Alt(vec![
            Expr::Seq(vec![expr, Expr::literal("b")]),
            Expr::literal("c"),
        ]);
    }
    let mut grammar = Grammar::new();
    grammar.insert(RuleName::new("root").unwrap(), expr);
    let matcher = Matcher::new(&grammar, "root").unwrap();
    assert_eq!(matcher.verdict("abbb"), Verdict::Prefix);
    assert_eq!(
        matcher.verdict(&format!("a{}", "b".repeat(DEPTH))),
        Verdict::Accept
    );
    assert_eq!(matcher.verdict("cb"), Verdict::Accept);
    assert_eq!(matcher.verdict("ca"), Verdict::Reject { offset: 1 });
    // Dropping the IR recurses once per level; leak it rather than test the IR's Drop.
    std::mem::forget(grammar);
}

#[test]
fn large_rule_dags_compile_to_linear_size() {
    // Each rule references the next one twice: copying rules into callers must not
    // double the size at every level.
    let n = 20_000;
    let mut grammar = Grammar::new();
    for i in 0..n {
        let next = RuleName::new(&format!("r{}", i + 1)).unwrap();
        let body = if i + 1 == n {
            Expr::literal("a")
        } else {
            Expr::seq([Expr::rule(&next), Expr::optional(Expr::rule(&next))])
        };
        let name = if i == 0 {
            "root".to_owned()
        } else {
            format!("r{i}")
        };
        grammar.insert(RuleName::new(&name).unwrap(), body);
    }
    let matcher = Matcher::new(&grammar, "root").unwrap();
    assert_eq!(matcher.verdict("a"), Verdict::Accept);
    assert_eq!(matcher.verdict("aaaa"), Verdict::Accept);
    assert_eq!(matcher.verdict("b"), Verdict::Reject { offset: 0 });
}

#[test]
fn long_rule_chains() {
    let n = 50_000;
    let mut text = String::new();
    for i in 0..n {
        let name = if i == 0 {
            "root".to_owned()
        } else {
            format!("r{i}")
        };
        if i + 1 == n {
            text.push_str(&format!("{name} ::= \"z\"\n"));
        } else {
            text.push_str(&format!("{name} ::= [a-y] r{}\n", i + 1));
        }
    }
    let matcher = matcher_of(&text);
    let input = format!("{}z", "a".repeat(n - 1));
    assert_eq!(matcher.verdict(&input), Verdict::Accept);
    assert_eq!(matcher.verdict(&input[..1000]), Verdict::Prefix);
}

#[test]
fn clones_share_history_across_many_positions() {
    let matcher = matcher_of("root ::= x\nx ::= \"(\" x \")\" | \"\"");
    let mut state = matcher.start();
    assert_eq!(state.advance_str(&"(".repeat(3000)), Ok(()));
    let mut fork = state.clone();
    assert_eq!(state.advance_str(&")".repeat(3000)), Ok(()));
    assert!(state.is_accepting());
    assert_eq!(fork.advance_str(&"(".repeat(1000)), Ok(()));
    assert_eq!(fork.advance_str(&")".repeat(3999)), Ok(()));
    assert!(!fork.is_accepting());
    let mut fork2 = fork.clone();
    assert!(fork.advance(')'));
    assert!(fork.is_accepting());
    assert!(!fork.advance(')'));
    assert!(!fork2.advance('('));
    assert!(fork2.advance(')'));
    assert!(fork2.is_accepting());
}

#[test]
fn matchers_and_states_can_move_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Matcher>();
    assert_send_sync::<gbnf::MatchState>();
}
