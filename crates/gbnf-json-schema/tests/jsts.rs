//! The JSON Schema Test Suite (draft 2020-12 and draft 7) as a conformance check of the whole
//! pipeline: for every test group whose schema compiles, each valid instance (serialised
//! compactly) must be accepted by the grammar and each invalid one must not.
//!
//! Objects are compiled with `PropertyOrder::Any`: the suite's instances list properties in
//! any order, and the default (schema order) would reject valid instances by design.
//!
//! Schemas that do not compile are fine (the compiler reports what it cannot express); a wrong
//! verdict on a schema that compiled is a bug. The committed baseline
//! (`tests/data/jsts/baseline.tsv`, per keyword file, and `baseline-wrong.tsv`, every known
//! wrong verdict) makes the test fail when a file's number of correct verdicts drops or a new
//! wrong verdict appears. After an improvement, rewrite the baseline with
//! `UPDATE_BASELINE=1 cargo test -p gbnf-json-schema --test jsts` and commit it.
//!
//! `JSTS_LLAMA=path` also writes every compiled group's grammar with the group's instances and
//! a few derivations of the grammar (and a mutation of each), with our matcher's verdicts, for
//! `cargo xtask llama-compat --cases path` to compare with real llama.cpp's.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::sync::Arc;

use gbnf_json_schema::{compile, Options, PropertyOrder};
use serde_json::Value;

use support::{accepts, data_path, matcher, read_jsonl, read_tsv, updating_baseline};

const DRAFTS: &[(&str, &str)] = &[
    (
        "draft2020-12",
        "https://json-schema.org/draft/2020-12/schema",
    ),
    ("draft7", "http://json-schema.org/draft-07/schema#"),
];
/// Where the suite's remote documents claim to live.
const REMOTE_BASE: &str = "http://localhost:1234/";

#[test]
fn json_schema_test_suite() {
    let remotes = load_remotes();
    let resolver = |uri: &str| -> Option<Arc<Value>> {
        let path = uri.strip_prefix(REMOTE_BASE)?;
        let path = path.split('#').next()?;
        remotes.get(path).cloned()
    };
    let mut counts: BTreeMap<(String, String), Counts> = BTreeMap::new();
    let mut wrong: BTreeSet<WrongVerdict> = BTreeSet::new();
    let llama_path = std::env::var_os("JSTS_LLAMA");
    let mut llama_cases = Vec::new();
    let mut rng = support::sampler::Rng::new(19);
    for (draft, meta) in DRAFTS {
        let rows = read_jsonl(&format!("jsts/{draft}.jsonl"));
        // Rows come grouped: (file, group) in order, one row per test.
        let mut start = 0;
        while start < rows.len() {
            let key = (&rows[start]["file"], &rows[start]["group"]);
            let end = start
                + rows[start..]
                    .iter()
                    .take_while(|row| (&row["file"], &row["group"]) == key)
                    .count();
            let group = &rows[start..end];
            start = end;
            let file = group[0]["file"].as_str().unwrap_or_default().to_owned();
            let counts = counts
                .entry(((*draft).to_owned(), file.clone()))
                .or_default();
            counts.groups += 1;
            counts.tests += group.len();
            let mut schema = group[0]["schema"].clone();
            if let Value::Object(map) = &mut schema {
                if !map.contains_key("$schema") {
                    map.insert("$schema".to_owned(), Value::String((*meta).to_owned()));
                }
            }
            let options = Options {
                resolver: Some(&resolver),
                property_order: PropertyOrder::Any,
                ..Options::default()
            };
            let Ok(compiled) = compile(&schema, &options) else {
                continue;
            };
            counts.compiled += 1;
            let matcher = matcher(&compiled.grammar);
            if llama_path.is_some() {
                let source = format!(
                    "jsts/{draft}/{file}/{}",
                    group[0]["group"].as_u64().unwrap_or(0)
                );
                let instances = group
                    .iter()
                    .map(|row| serde_json::to_string(&row["instance"]).expect("JSON serialises"));
                llama_cases.push(support::llama_case(
                    &source,
                    &compiled.grammar,
                    instances.collect(),
                    usize::MAX,
                    &mut rng,
                ));
            }
            for row in group {
                counts.checked += 1;
                let instance = serde_json::to_string(&row["instance"]).expect("JSON serialises");
                let valid = row["valid"] == Value::Bool(true);
                if accepts(&matcher, &instance) == valid {
                    counts.correct += 1;
                } else {
                    wrong.insert(WrongVerdict {
                        draft: (*draft).to_owned(),
                        file: file.clone(),
                        group: row["group"].as_u64().unwrap_or(0),
                        test: row["test"].as_u64().unwrap_or(0),
                        valid,
                        description: format!(
                            "{} / {}",
                            row["group_description"].as_str().unwrap_or(""),
                            row["description"].as_str().unwrap_or("")
                        ),
                        instance,
                    });
                }
            }
        }
    }

    if let Some(path) = &llama_path {
        fs::write(path, llama_cases.join("")).expect("write the JSTS_LLAMA cases");
    }
    if updating_baseline() {
        write_baseline(&counts, &wrong);
        return;
    }
    let mut problems = Vec::new();
    let baseline: BTreeMap<(String, String), usize> = read_tsv("jsts/baseline.tsv")
        .into_iter()
        .filter(|fields| fields[0] != "draft")
        .map(|fields| {
            (
                (fields[0].clone(), fields[1].clone()),
                fields[6].parse().unwrap_or(0),
            )
        })
        .collect();
    for (key, counts) in &counts {
        let before = baseline.get(key).copied().unwrap_or(0);
        if counts.correct < before {
            problems.push(format!(
                "{}/{}: {} correct verdicts, baseline {before}",
                key.0, key.1, counts.correct
            ));
        }
    }
    let known: BTreeSet<(String, String, u64, u64)> = read_tsv("jsts/baseline-wrong.tsv")
        .into_iter()
        .filter(|fields| fields[0] != "draft")
        .map(|fields| {
            (
                fields[0].clone(),
                fields[1].clone(),
                fields[2].parse().unwrap_or(0),
                fields[3].parse().unwrap_or(0),
            )
        })
        .collect();
    for verdict in &wrong {
        let key = (
            verdict.draft.clone(),
            verdict.file.clone(),
            verdict.group,
            verdict.test,
        );
        if !known.contains(&key) {
            problems.push(format!(
                "new wrong verdict: {}/{} group {} test {} ({}): instance {} should be {}",
                verdict.draft,
                verdict.file,
                verdict.group,
                verdict.test,
                verdict.description,
                verdict.instance,
                if verdict.valid {
                    "accepted"
                } else {
                    "rejected"
                }
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{}\n(after an intended change: UPDATE_BASELINE=1 cargo test -p gbnf-json-schema --test jsts)",
        problems.join("\n")
    );
}

#[derive(Debug, Default)]
struct Counts {
    groups: usize,
    compiled: usize,
    tests: usize,
    /// Instances of compiled groups.
    checked: usize,
    correct: usize,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct WrongVerdict {
    draft: String,
    file: String,
    group: u64,
    test: u64,
    valid: bool,
    description: String,
    instance: String,
}

/// Every remote document, by its path under `http://localhost:1234/`.
fn load_remotes() -> BTreeMap<String, Arc<Value>> {
    let root = data_path("jsts/remotes");
    let mut out = BTreeMap::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("remotes directory").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(text) = fs::read_to_string(&path) {
                if let Ok(value) = serde_json::from_str(&text) {
                    let relative = path.strip_prefix(&root).expect("under root");
                    out.insert(
                        relative.to_string_lossy().replace('\\', "/"),
                        Arc::new(value),
                    );
                }
            }
        }
    }
    out
}

fn write_baseline(counts: &BTreeMap<(String, String), Counts>, wrong: &BTreeSet<WrongVerdict>) {
    let mut text = String::from(
        "# Written by UPDATE_BASELINE=1 cargo test -p gbnf-json-schema --test jsts.\n\
         # groups_compiled: test groups whose schema compiled; checked: their instances;\n\
         # correct: instances with the right verdict (the test fails if this drops).\n\
         draft\tfile\tgroups\tgroups_compiled\ttests\tchecked\tcorrect\twrong\n",
    );
    let mut totals = [0usize; 6];
    for ((draft, file), c) in counts {
        let wrong_here = c.checked - c.correct;
        text.push_str(&format!(
            "{draft}\t{file}\t{}\t{}\t{}\t{}\t{}\t{wrong_here}\n",
            c.groups, c.compiled, c.tests, c.checked, c.correct
        ));
        for (total, value) in totals.iter_mut().zip([
            c.groups, c.compiled, c.tests, c.checked, c.correct, wrong_here,
        ]) {
            *total += value;
        }
    }
    text.push_str(&format!(
        "# TOTAL\tall\t{}\t{}\t{}\t{}\t{}\t{}\n",
        totals[0], totals[1], totals[2], totals[3], totals[4], totals[5]
    ));
    fs::write(data_path("jsts/baseline.tsv"), text).expect("write baseline.tsv");

    let mut text = String::from(
        "# Every wrong verdict on a compiled schema (a bug to fix); written by UPDATE_BASELINE=1.\n\
         draft\tfile\tgroup\ttest\tshould\tdescription\tinstance\n",
    );
    for verdict in wrong {
        text.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
            verdict.draft,
            verdict.file,
            verdict.group,
            verdict.test,
            if verdict.valid { "accept" } else { "reject" },
            verdict.description.replace('\t', " "),
            verdict.instance.replace('\t', "\\t")
        ));
    }
    fs::write(data_path("jsts/baseline-wrong.tsv"), text).expect("write baseline-wrong.tsv");
}
