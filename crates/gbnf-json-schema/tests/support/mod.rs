//! Shared helpers of the data-driven JSON Schema test suites: where the data lives, reading
//! JSONL and TSV files, running a grammar on a string, the grammar sampler, and the cases that
//! `cargo xtask llama-compat --cases` replays through llama.cpp.

#![allow(dead_code)] // Each test binary uses a different subset.

pub mod corpus;
pub mod sampler;

use std::fs;
use std::path::{Path, PathBuf};

use gbnf::{Grammar, Matcher, Verdict};
use serde_json::Value;

/// The repository root (two levels above this crate).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root exists")
}

/// A file under `tests/data/`.
pub fn data_path(relative: &str) -> PathBuf {
    repo_root().join("tests/data").join(relative)
}

/// Every line of a JSONL file under `tests/data/`, parsed (key order preserved).
pub fn read_jsonl(relative: &str) -> Vec<Value> {
    let path = data_path(relative);
    let text = fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .enumerate()
        .map(|(idx, line)| {
            serde_json::from_str(line)
                .unwrap_or_else(|err| panic!("{}:{}: {err}", path.display(), idx + 1))
        })
        .collect()
}

/// The non-comment lines of a TSV file under `tests/data/`, split on tabs; a missing file
/// reads as empty (so a first `UPDATE_BASELINE=1` run can create it).
pub fn read_tsv(relative: &str) -> Vec<Vec<String>> {
    let path = data_path(relative);
    let Ok(text) = fs::read_to_string(&path) else {
        return Vec::new();
    };
    text.lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .map(|line| line.split('\t').map(str::to_owned).collect())
        .collect()
}

/// Whether `UPDATE_BASELINE=1` asks the test to rewrite its baseline instead of checking it.
pub fn updating_baseline() -> bool {
    std::env::var_os("UPDATE_BASELINE").is_some_and(|value| value == "1")
}

/// A matcher for `grammar` from rule `root`, panicking with the printed grammar on failure
/// (a compiled grammar the matcher refuses is a bug in the compiler).
pub fn matcher(grammar: &Grammar) -> Matcher {
    Matcher::new(grammar, "root").unwrap_or_else(|err| {
        panic!(
            "matcher refused the grammar: {err}\n{}",
            gbnf::print(grammar)
        )
    })
}

/// Whether the matcher accepts the whole of `text`.
pub fn accepts(matcher: &Matcher, text: &str) -> bool {
    matches!(matcher.verdict(text), Verdict::Accept)
}

/// A verdict as the snapshot format writes it: `ACCEPT`, `PREFIX` or `REJECT <offset>`.
pub fn verdict_label(verdict: &Verdict) -> String {
    verdict.to_string()
}

/// Derivations of each grammar added to its llama.cpp case, each also mutated once.
pub const LLAMA_DERIVATIONS: usize = 4;

/// One line of a `cargo xtask llama-compat --cases` file: the grammar, `texts` and
/// [`LLAMA_DERIVATIONS`] derivations of the grammar with a mutation of each (those up to
/// `max_len` bytes), and our verdicts on them, without a step limit (the comparison needs
/// answers).
pub fn llama_case(
    source: &str,
    grammar: &Grammar,
    mut texts: Vec<String>,
    max_len: usize,
    rng: &mut sampler::Rng,
) -> String {
    let sampler = sampler::Sampler::new(grammar);
    for _ in 0..LLAMA_DERIVATIONS {
        if let Some(text) = sampler.sample("root", rng) {
            texts.push(sampler::mutate(&text, rng));
            texts.push(text);
        }
    }
    texts.retain(|text| text.len() <= max_len);
    let matcher = matcher(grammar);
    let samples: Vec<(String, String)> = texts
        .into_iter()
        .map(|text| {
            let verdict = verdict_label(&matcher.verdict_within(&text, u64::MAX));
            (text, verdict)
        })
        .collect();
    let line = serde_json::json!({
        "source": source,
        "root": "root",
        "grammar": gbnf::print(grammar),
        "samples": samples,
    });
    format!("{line}\n")
}
