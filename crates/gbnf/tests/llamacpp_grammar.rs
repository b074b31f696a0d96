//! llama.cpp's own grammar tests (`tests/data/llamacpp/grammar-integration.jsonl`, rows of
//! kind `grammar` and `grammar_build`) run through our reader, validator and matcher: every
//! verdict must be llama.cpp's.
//!
//! `grammar` rows list strings llama.cpp accepts in full (`pass`) and strings it does not
//! (`fail`); two of them mix text with token ids, which are fed with
//! `MatchState::advance_token` (see [`TEXT_TOKEN`] for their text). Each text-only row is snapshotted in the standard grammar
//! format in `snapshots/llamacpp-grammar/`, so `cargo xtask llama-compat` replays it in
//! llama.cpp with our exact verdicts (PREFIX or REJECT offset included). `grammar_build` rows
//! say whether llama.cpp loads the grammar; our outcomes are snapshotted in
//! `snapshots/llamacpp-grammar/grammar-build.snap`.

use std::path::{Path, PathBuf};

use gbnf::{Matcher, Verdict};
use serde_json::Value;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rows(kind: &str) -> Vec<(usize, Value)> {
    let path = repo_root().join("tests/data/llamacpp/grammar-integration.jsonl");
    let text = std::fs::read_to_string(path).expect("the llama.cpp vectors are readable");
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| {
            (
                index + 1,
                serde_json::from_str::<Value>(line).expect("each line is JSON"),
            )
        })
        .filter(|(_, row)| row["kind"] == kind)
        .collect()
}

/// A file-name-friendly version of a row's name, prefixed with its line for uniqueness.
fn slug(line: usize, name: &str) -> String {
    let name = name
        .replace('*', "star")
        .replace('+', "plus")
        .replace('?', "optional");
    let words: Vec<String> = name
        .split(|ch: char| !ch.is_ascii_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect();
    format!("{line:02}-{}", words.join("-"))
}

fn verdict_text(verdict: &Verdict) -> String {
    verdict.to_string()
}

fn snapshot(name: &str, text: &str) {
    insta::with_settings!({
        snapshot_path => repo_root().join("snapshots/llamacpp-grammar"),
        prepend_module_to_snapshot => false,
        omit_expression => true,
    }, {
        insta::assert_snapshot!(name.to_owned(), text);
    });
}

/// Runs one `grammar` row; returns the disagreements with llama.cpp.
fn check_grammar_row(line: usize, row: &Value) -> Vec<String> {
    let name = row["name"].as_str().expect("a name");
    let grammar_text = row["grammar"].as_str().expect("a grammar");
    let (grammar, _warnings) = match gbnf::check(grammar_text, "root") {
        Ok(checked) => checked,
        Err(error) => {
            return vec![format!(
                "line {line} ({name}): llama.cpp loads the grammar, we refuse it: {error}"
            )]
        }
    };
    let matcher = match Matcher::new(&grammar, "root") {
        Ok(matcher) => matcher,
        Err(error) => {
            return vec![format!(
                "line {line} ({name}): the matcher refuses the grammar: {error}"
            )]
        }
    };
    let uses_tokens = row["uses_tokens"].as_bool() == Some(true);
    let mut problems = Vec::new();
    let mut verdicts = String::new();
    for (list, must_accept) in [("pass", true), ("fail", false)] {
        for sample in row[list].as_array().expect("a sample list") {
            let (shown, verdict) = if uses_tokens {
                token_verdict(&matcher, sample)
            } else {
                let text = sample.as_str().expect("a text sample");
                (Value::from(text).to_string(), matcher.verdict(text))
            };
            if matches!(verdict, Verdict::Accept) != must_accept {
                problems.push(format!(
                    "line {line} ({name}): {shown} is {}, llama.cpp says it {} match",
                    verdict_text(&verdict),
                    if must_accept { "does" } else { "does not" }
                ));
            }
            verdicts.push_str(&format!("{}\t{shown}\n", verdict_text(&verdict)));
        }
    }
    let printed = gbnf::print(&grammar);
    // Token rows use a different header: the xtask's llama.cpp replay cannot feed tokens.
    let header = if uses_tokens {
        "--- token grammar (root: root) ---"
    } else {
        "--- grammar (root: root) ---"
    };
    let text = format!(
        "{name}\n{header}\n{}\n--- verdicts ---\n{verdicts}",
        printed.trim_end()
    );
    snapshot(&slug(line, name), &text);
    problems
}

/// The id given to the tokens of text segments.
///
/// llama.cpp's test tokenizes each text segment with a real vocabulary, and in both token
/// grammars text only ever stands where a negated token element (`!<[11]>`) is expected,
/// which any token but the named one matches. Our matcher consumes token elements only with
/// `advance_token`, so a text segment is fed as one token per code point with an id that no
/// grammar names.
const TEXT_TOKEN: u32 = u32::MAX;

/// Feeds a sequence of text segments and `{"token": id}` items; the printed form writes
/// tokens as `<[id]>` between JSON strings. `REJECT n` here means the token at index n was
/// refused (each character of a text segment counts as one token).
fn token_verdict(matcher: &Matcher, sample: &Value) -> (String, Verdict) {
    let mut state = matcher.start();
    let mut shown = Vec::new();
    let mut offset = 0;
    let mut rejected = None;
    for segment in sample.as_array().expect("a segment list") {
        if let Some(text) = segment.as_str() {
            shown.push(Value::from(text).to_string());
            for _ in text.chars() {
                if rejected.is_none() && !state.advance_token(TEXT_TOKEN) {
                    rejected = Some(offset);
                }
                offset += 1;
            }
        } else {
            let token = segment["token"].as_u64().expect("a token id");
            shown.push(format!("<[{token}]>"));
            let token = u32::try_from(token).expect("a small token id");
            if rejected.is_none() && !state.advance_token(token) {
                rejected = Some(offset);
            }
            offset += 1;
        }
    }
    let verdict = match rejected {
        Some(offset) => Verdict::Reject { offset },
        None if state.is_accepting() => Verdict::Accept,
        None => Verdict::Prefix,
    };
    (shown.join(" "), verdict)
}

#[test]
fn grammar_rows() {
    let rows = rows("grammar");
    assert_eq!(rows.len(), 14, "the vectors have 14 grammar rows");
    let problems: Vec<String> = rows
        .iter()
        .flat_map(|(line, row)| check_grammar_row(*line, row))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn grammar_build_rows() {
    let rows = rows("grammar_build");
    assert_eq!(rows.len(), 9, "the vectors have 9 grammar_build rows");
    let mut problems = Vec::new();
    let mut outcomes = String::new();
    for (line, row) in &rows {
        let name = row["name"].as_str().expect("a name");
        let grammar_text = row["grammar"].as_str().expect("a grammar");
        let root = row["root"].as_str().expect("a root");
        let expect = row["expect"].as_str().expect("an expectation");
        let read = gbnf::read(grammar_text);
        let checked = gbnf::check(grammar_text, root);
        let agrees = match expect {
            "build_ok" => checked.is_ok(),
            "build_fails" | "parse_error" => checked.is_err(),
            // llama.cpp parses the rules, then finds no start rule.
            "parse_ok_no_root_symbol" => {
                read.is_ok()
                    && matches!(&checked, Err(error) if matches!(error.kind, gbnf::ErrorKind::MissingStartRule { .. }))
            }
            other => panic!("line {line}: unknown expectation {other:?}"),
        };
        let ours = match &checked {
            Ok(_) => "ok".to_owned(),
            Err(error) => format!("error: {error}"),
        };
        if !agrees {
            problems.push(format!(
                "line {line} ({name}): llama.cpp: {expect}, ours: {ours}"
            ));
        }
        outcomes.push_str(&format!(
            "{name} (root: {root}; llama.cpp: {expect})\n  {ours}\n"
        ));
    }
    snapshot("grammar-build", &outcomes);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
