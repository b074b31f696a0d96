//! One snapshot per keyword case: `tests/data/json-schema/<case>.schema.json` with the JSON texts
//! that must be accepted (`<case>.accept.jsonl`) and rejected (`<case>.reject.jsonl`), one per
//! line, exactly as written (so whitespace can be tested too). An optional `<case>.options`
//! line sets compile options (`whitespace=compact`, `additional-properties-default=false`,
//! `lenient`, `dotall`, `raw-pattern`, `property-order=any`). A `<case>.fixme` file marks a
//! known defect: its text goes into the snapshot, wrong verdicts do not fail the test, and
//! the test fails once every verdict is right (so the note gets removed).
//!
//! The snapshot (`snapshots/json-schema/<case>.snap`) shows the printed grammar and the
//! matcher's verdict on every sample, in the format `cargo xtask llama-compat` replays in
//! llama.cpp; a schema that does not compile snapshots its error instead.

mod support;

use std::fs;

use gbnf_json_schema::{compile, Options, PropertyOrder, Whitespace};

use support::{data_path, matcher, repo_root, verdict_label};

#[test]
fn keyword_cases() {
    let dir = data_path("json-schema");
    let mut cases: Vec<String> = fs::read_dir(&dir)
        .expect("tests/data/json-schema exists")
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".schema.json").map(str::to_owned)
        })
        .collect();
    cases.sort();
    assert!(cases.len() >= 40, "only {} cases", cases.len());
    let mut problems = Vec::new();
    for case in &cases {
        if let Err(problem) = check(case) {
            problems.push(format!("{case}: {problem}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Compiles one case, checks its samples, and compares its snapshot.
fn check(case: &str) -> Result<(), String> {
    let read = |suffix: &str| fs::read_to_string(data_path(&format!("json-schema/{case}{suffix}")));
    let schema_text = read(".schema.json").map_err(|err| err.to_string())?;
    let schema: serde_json::Value =
        serde_json::from_str(&schema_text).map_err(|err| err.to_string())?;
    let options = parse_options(&read(".options").unwrap_or_default());
    let lines = |suffix: &str| -> Vec<String> {
        read(suffix)
            .unwrap_or_default()
            .lines()
            .filter(|line| !line.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let (accept, reject) = (lines(".accept.jsonl"), lines(".reject.jsonl"));
    // A known defect: the snapshot records it, and the test fails once it is fixed so that
    // the note is removed.
    let fixme = read(".fixme").ok();
    let mut snapshot = String::new();
    if let Some(fixme) = &fixme {
        snapshot.push_str(&format!("FIXME: {}\n", fixme.trim()));
    }
    snapshot.push_str(&format!(
        "schema: {}\n",
        schema_text.trim_end().replace('\n', "\n  ")
    ));
    let mut wrong = Vec::new();
    match compile(&schema, &options) {
        Err(err) => {
            snapshot.push_str(&format!("error: {err}\n"));
            if !accept.is_empty() {
                wrong.push(format!("does not compile: {err}"));
            }
        }
        Ok(compiled) => {
            for warning in &compiled.warnings {
                snapshot.push_str(&format!("warning: {warning}\n"));
            }
            let matcher = matcher(&compiled.grammar);
            snapshot.push_str("--- grammar (root: root) ---\n");
            snapshot.push_str(gbnf::print(&compiled.grammar).trim_end());
            snapshot.push_str("\n--- verdicts ---\n");
            for (samples, want) in [(&accept, true), (&reject, false)] {
                for sample in samples {
                    let verdict = matcher.verdict(sample);
                    let accepted = matches!(verdict, gbnf::Verdict::Accept);
                    if accepted != want {
                        wrong.push(format!(
                            "{} {sample}: {}",
                            if want {
                                "should accept"
                            } else {
                                "should reject"
                            },
                            verdict_label(&verdict)
                        ));
                    }
                    let quoted = serde_json::to_string(sample).expect("strings serialise");
                    snapshot.push_str(&format!("{}\t{quoted}\n", verdict_label(&verdict)));
                }
            }
        }
    }
    insta::with_settings!({
        snapshot_path => repo_root().join("snapshots/json-schema"),
        prepend_module_to_snapshot => false,
        omit_expression => true,
    }, {
        insta::assert_snapshot!(case.to_owned(), snapshot);
    });
    match (wrong.is_empty(), fixme.is_some()) {
        (true, false) | (false, true) => Ok(()),
        (true, true) => Err("all samples are right now: delete the .fixme file".to_owned()),
        (false, false) => Err(wrong.join("; ")),
    }
}

fn parse_options(text: &str) -> Options<'static> {
    let mut options = Options::default();
    for option in text.split([',', '\n']).map(str::trim) {
        match option {
            "" => {}
            "whitespace=compact" => options.whitespace = Whitespace::Compact,
            "whitespace=flexible" => options.whitespace = Whitespace::Flexible,
            "additional-properties-default=false" => options.additional_properties_default = false,
            "property-order=any" => options.property_order = PropertyOrder::Any,
            "lenient" => options.lenient = true,
            "dotall" => options.dotall = true,
            "raw-pattern" => options.raw_pattern = true,
            other => panic!("unknown option {other:?}"),
        }
    }
    options
}
