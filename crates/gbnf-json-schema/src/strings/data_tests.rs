//! Data-driven leaf cases: each `tests/data/schema-leaf/*.json` names string or number
//! constraints and samples (JSON texts) to accept and reject; the snapshot in
//! `snapshots/schema-leaf/` shows the printed grammar and the matcher's verdict on every sample,
//! in the format `cargo xtask llama-compat` replays in llama.cpp.

#![allow(clippy::unwrap_used)] // Tests fail loudly on purpose.

use std::path::{Path, PathBuf};

use gbnf::GrammarBuilder;
use serde_json::Value;

use crate::numbers::{lower_number, Decimal, NumberConstraints};
use crate::pattern::testutil::Lowered;
use crate::strings::{lower_string, CharRules, Escapes, LeafOptions, StringConstraints};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn leaf_cases() {
    let dir = repo_root().join("tests/data/schema-leaf");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty());
    for path in paths {
        check(&path);
    }
}

/// Lowers one case, checks its expectations, and snapshots grammar and verdicts.
fn check(path: &Path) {
    let name = path.file_stem().unwrap().to_string_lossy().into_owned();
    let case: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut builder = GrammarBuilder::new();
    let (description, expr) = if let Some(spec) = case.get("string") {
        let constraints = StringConstraints {
            min_length: spec.get("minLength").and_then(Value::as_u64).unwrap_or(0),
            max_length: spec.get("maxLength").and_then(Value::as_u64),
            patterns: strings(spec.get("patterns")),
            format: spec
                .get("format")
                .and_then(Value::as_str)
                .map(str::to_owned),
            not_patterns: strings(spec.get("notPatterns")),
            not_formats: strings(spec.get("notFormats")),
        };
        let options = LeafOptions {
            dotall: false,
            raw_pattern: spec.get("raw_pattern") == Some(&Value::Bool(true)),
            escapes: match spec.get("escapes").and_then(Value::as_str) {
                Some("required") => Escapes::Required,
                _ => Escapes::All,
            },
        };
        let expr = lower_string(
            &mut builder,
            &mut CharRules::default(),
            "s",
            &constraints,
            &options,
        )
        .unwrap_or_else(|err| panic!("{name}: {err}"));
        (format!("string {spec}"), expr)
    } else {
        let spec = &case["number"];
        let decimal = |key: &str| {
            spec.get(key)
                .and_then(Value::as_str)
                .map(|t| Decimal::parse(t).unwrap())
        };
        let constraints = NumberConstraints {
            integer: spec.get("integer") == Some(&Value::Bool(true)),
            minimum: decimal("minimum"),
            maximum: decimal("maximum"),
            exclusive_minimum: decimal("exclusiveMinimum"),
            exclusive_maximum: decimal("exclusiveMaximum"),
            multiple_of: strings(spec.get("multipleOf"))
                .iter()
                .map(|t| Decimal::parse(t).unwrap())
                .collect(),
            not_multiple_of: strings(spec.get("notMultipleOf"))
                .iter()
                .map(|t| Decimal::parse(t).unwrap())
                .collect(),
        };
        let expr = lower_number(&mut builder, "n", &constraints)
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        (format!("number {spec}"), expr)
    };
    let lowered = Lowered::new(builder, expr);
    let mut out = format!(
        "{description}\n--- grammar (root: root) ---\n{}",
        lowered.text
    );
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("--- verdicts ---\n");
    for (list, expected) in [("accept", true), ("reject", false)] {
        for sample in strings(case.get(list)) {
            assert_eq!(
                lowered.accepts(&sample),
                expected,
                "{name}: {list} {sample}"
            );
            let matcher = gbnf::Matcher::new(&lowered.grammar, "root").unwrap();
            let verdict = matcher.verdict(&sample).to_string();
            out.push_str(&format!("{verdict}\t{}\n", Value::String(sample)));
        }
    }
    insta::with_settings!({
        snapshot_path => repo_root().join("snapshots/schema-leaf"),
        prepend_module_to_snapshot => false,
        omit_expression => true,
    }, {
        insta::assert_snapshot!(name, out);
    });
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}
