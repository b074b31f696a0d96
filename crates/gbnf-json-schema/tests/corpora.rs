//! Real-world corpora as a regression check: a fixed sample of SchemaStore (schemas and their
//! labelled instances) and of BFCL tool schemas must compile at least as often, and our
//! verdicts must agree with the instance labels at least as often, as the committed baselines
//! (`tests/data/schemastore/baseline.tsv`, `tests/data/bfcl/baseline.tsv`).
//!
//! The sample keeps `cargo test` quick; the full corpora, with timings, are measured by
//! `cargo bench -p gbnf-json-schema --bench corpora`. After an improvement, rewrite the
//! baselines with `UPDATE_BASELINE=1 cargo test -p gbnf-json-schema --test corpora`.

mod support;

use std::collections::{BTreeMap, HashMap};
use std::fs;

use support::corpus::{compile_entry, error_kind, load_bfcl, load_schemastore, order_like_schema};
use support::{accepts, data_path, matcher, read_tsv, updating_baseline};

/// Every `STRIDE`-th schema is in the sample.
const STRIDE: usize = 8;
/// Longer instances are left to the bench report (the matcher is slow in debug builds).
const MAX_INSTANCE_CHARS: usize = 20_000;

#[test]
fn schemastore_sample() {
    let store = load_schemastore();
    let resolve = |uri: &str| store.resolve(uri);
    let instances_of = store.instances_by_schema();
    let mut metrics: BTreeMap<&str, usize> = BTreeMap::new();
    let mut errors: BTreeMap<String, usize> = BTreeMap::new();
    let mut disagreements = Vec::new();
    for entry in store.schemas.iter().step_by(STRIDE) {
        *metrics.entry("schemas").or_default() += 1;
        let compiled = compile_entry(&entry.schema, &resolve, false);
        let Some(grammar) = compiled.grammar else {
            *errors
                .entry(error_kind(&compiled.error.unwrap_or_default()))
                .or_default() += 1;
            continue;
        };
        *metrics.entry("compiled").or_default() += 1;
        let matcher = matcher(&grammar);
        for instance in instances_of.get(entry.name.as_str()).into_iter().flatten() {
            if instance.text.len() > MAX_INSTANCE_CHARS {
                continue;
            }
            *metrics.entry("instances").or_default() += 1;
            if accepts(&matcher, &instance.text) == instance.valid {
                *metrics.entry("agree").or_default() += 1;
            }
            // The same instance with its keys in schema order: the grammar's property order
            // is a design choice, everything else should agree.
            let ordered = order_like_schema(&instance.value, &entry.schema, &entry.schema);
            let ordered = serde_json::to_string(&ordered).unwrap_or_default();
            if accepts(&matcher, &ordered) == instance.valid {
                *metrics.entry("agree_in_schema_order").or_default() += 1;
            } else {
                let metric = if instance.valid {
                    "valid_rejected"
                } else {
                    "invalid_accepted"
                };
                *metrics.entry(metric).or_default() += 1;
                disagreements.push(format!("{} ({metric})", entry.name));
            }
        }
    }
    check_baseline(
        "schemastore/baseline.tsv",
        &metrics,
        &["compiled", "agree", "agree_in_schema_order"],
        &errors,
        &disagreements,
    );
}

#[test]
fn bfcl_sample() {
    let tools = load_bfcl();
    let resolve = |_: &str| None;
    let mut metrics: BTreeMap<&str, usize> = BTreeMap::new();
    let mut errors: BTreeMap<String, usize> = BTreeMap::new();
    for entry in tools.iter().step_by(STRIDE) {
        *metrics.entry("schemas").or_default() += 1;
        let compiled = compile_entry(&entry.schema, &resolve, false);
        match compiled.grammar {
            Some(grammar) => {
                *metrics.entry("compiled").or_default() += 1;
                // Every compiled grammar must be usable by the matcher.
                let _ = matcher(&grammar);
            }
            None => {
                *errors
                    .entry(error_kind(&compiled.error.unwrap_or_default()))
                    .or_default() += 1
            }
        }
    }
    check_baseline("bfcl/baseline.tsv", &metrics, &["compiled"], &errors, &[]);
}

/// Compares `metrics` with the baseline file (or rewrites it under `UPDATE_BASELINE=1`); the
/// `guarded` metrics must not drop.
fn check_baseline(
    relative: &str,
    metrics: &BTreeMap<&str, usize>,
    guarded: &[&str],
    errors: &BTreeMap<String, usize>,
    disagreements: &[String],
) {
    if updating_baseline() {
        let mut text = format!(
            "# Sample: every {STRIDE}th schema, instances up to {MAX_INSTANCE_CHARS} characters.\n\
             # Written by UPDATE_BASELINE=1 cargo test -p gbnf-json-schema --test corpora;\n\
             # the test fails if {} drop.\nmetric\tvalue\n",
            guarded.join(" or ")
        );
        for (metric, value) in metrics {
            text.push_str(&format!("{metric}\t{value}\n"));
        }
        let mut by_count: Vec<(&String, &usize)> = errors.iter().collect();
        by_count.sort_by(|a, b| b.1.cmp(a.1));
        for (kind, count) in by_count.iter().take(15) {
            text.push_str(&format!("# error\t{count}\t{kind}\n"));
        }
        for line in disagreements {
            text.push_str(&format!("# disagrees\t{line}\n"));
        }
        fs::write(data_path(relative), text).expect("write baseline");
        return;
    }
    let baseline: HashMap<String, usize> = read_tsv(relative)
        .into_iter()
        .filter(|fields| fields.len() == 2)
        .filter_map(|fields| Some((fields[0].clone(), fields[1].parse().ok()?)))
        .collect();
    let mut problems = Vec::new();
    for metric in guarded {
        let now = metrics.get(metric).copied().unwrap_or(0);
        let before = baseline.get(*metric).copied().unwrap_or(0);
        if now < before {
            problems.push(format!(
                "{relative}: {metric} dropped from {before} to {now}"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{}\nnow: {metrics:?}\n(after an intended change: UPDATE_BASELINE=1 cargo test -p gbnf-json-schema --test corpora)",
        problems.join("\n")
    );
}
