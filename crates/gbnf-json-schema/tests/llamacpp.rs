//! llama.cpp's own JSON Schema test vectors, run through our compiler and matcher:
//! - `grammar-integration.jsonl` schema rows: every pass string accepted, every fail string not;
//! - `json-schema-to-grammar.jsonl`: our grammar and llama.cpp's expected grammar give the same
//!   verdicts on strings sampled from both (and mutations of them).
//!
//! Where we deliberately differ from llama.cpp's converter (it defaults `additionalProperties`
//! to false, reads `{}` as "any object", ignores keywords it does not know…), the row is listed
//! in `tests/data/json-schema/llamacpp-rows.tsv` with the options it needs or the reason it
//! differs; a row that differs without being listed, or is listed as differing but agrees,
//! fails the test.

mod support;

use std::collections::HashMap;

use gbnf_json_schema::{compile, Options, Whitespace};
use serde_json::Value;

use support::sampler::{mutate, Rng, Sampler};
use support::{accepts, matcher, read_jsonl, read_tsv, verdict_label};

/// Samples drawn from each grammar, and mutations of each sample set.
const SAMPLES: usize = 40;

#[test]
fn grammar_integration_schema_rows() {
    let rows = read_jsonl("llamacpp/grammar-integration.jsonl");
    let listed = listed_rows("integration");
    let mut problems = Vec::new();
    let mut checked = 0;
    for (idx, row) in rows.iter().enumerate() {
        if row["kind"] != "schema" {
            continue;
        }
        let entry = listed.get(&idx).cloned().unwrap_or_default();
        let schema = schema_of(row);
        let label = format!("row {idx} {:?}", row["name"].as_str().unwrap_or(""));
        let compiled = match compile(&schema, &entry.options()) {
            Ok(compiled) => compiled,
            Err(err) => {
                problems.push(format!("{label}: does not compile: {err}"));
                continue;
            }
        };
        let matcher = matcher(&compiled.grammar);
        let mut mismatches = Vec::new();
        for (key, want) in [("pass", true), ("fail", false)] {
            for text in row[key].as_array().into_iter().flatten() {
                let Some(text) = text.as_str() else { continue };
                checked += 1;
                if accepts(&matcher, text) != want {
                    mismatches.push(format!(
                        "  {key} {text:?}: {}",
                        verdict_label(&matcher.verdict(text))
                    ));
                }
            }
        }
        match (entry.differs, mismatches.is_empty()) {
            (false, false) => problems.push(format!(
                "{label}: wrong verdicts (options {:?}):\n{}\n{}",
                entry.options_text,
                mismatches.join("\n"),
                gbnf::print(&compiled.grammar)
            )),
            (true, true) => problems.push(format!(
                "{label}: listed as differing ({}) but agrees now: update llamacpp-rows.tsv",
                entry.reason
            )),
            _ => {}
        }
    }
    assert!(checked > 300, "only {checked} strings checked");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn json_schema_to_grammar_rows_agree_with_llamacpp() {
    let rows = read_jsonl("llamacpp/json-schema-to-grammar.jsonl");
    let listed = listed_rows("to-grammar");
    let mut problems = Vec::new();
    let mut compared = 0;
    for (idx, row) in rows.iter().enumerate() {
        let entry = listed.get(&idx).cloned().unwrap_or_default();
        let label = format!("row {idx} {:?}", row["name"].as_str().unwrap_or(""));
        let schema = schema_of(row);
        let ours = compile(&schema, &entry.options());
        if row["expected_status"] == "FAILURE" {
            if let Ok(compiled) = ours {
                problems.push(format!(
                    "{label}: llama.cpp rejects the schema, we compile it:\n{}",
                    gbnf::print(&compiled.grammar)
                ));
            }
            continue;
        }
        let expected_text = row["expected_grammar"].as_str().unwrap_or_default();
        let theirs = gbnf::read(expected_text)
            .unwrap_or_else(|err| panic!("{label}: expected grammar does not read: {err}"));
        let ours = match ours {
            Ok(compiled) => compiled.grammar,
            Err(err) => {
                if !entry.differs {
                    problems.push(format!("{label}: does not compile: {err}"));
                }
                continue;
            }
        };
        let our_matcher = matcher(&ours);
        let their_matcher = matcher(&theirs);
        let mut rng = Rng::new(idx as u64);
        let mut samples = Vec::new();
        for (grammar, own_matcher, whose) in [
            (&ours, &our_matcher, "ours"),
            (&theirs, &their_matcher, "llama.cpp's"),
        ] {
            let sampler = Sampler::new(grammar);
            let drawn: Vec<String> = (0..SAMPLES)
                .filter_map(|_| sampler.sample("root", &mut rng))
                .collect();
            // A derivation of a grammar is in its language: otherwise the sampler or the
            // matcher is wrong, and the comparison below means nothing.
            for text in &drawn {
                if !accepts(own_matcher, text) {
                    problems.push(format!(
                        "{label}: {whose} grammar rejects its own sample {text:?}"
                    ));
                }
            }
            let mutated: Vec<String> = drawn.iter().map(|text| mutate(text, &mut rng)).collect();
            samples.extend(drawn);
            samples.extend(mutated);
        }
        samples.sort();
        samples.dedup();
        let mut mismatches = Vec::new();
        for text in &samples {
            compared += 1;
            let (our_verdict, their_verdict) =
                (our_matcher.verdict(text), their_matcher.verdict(text));
            if accepts(&our_matcher, text) != accepts(&their_matcher, text) {
                mismatches.push(format!(
                    "  {text:?}: ours {}, llama.cpp {}",
                    verdict_label(&our_verdict),
                    verdict_label(&their_verdict)
                ));
            }
        }
        match (entry.differs, mismatches.is_empty()) {
            (false, false) => problems.push(format!(
                "{label}: {} of {} samples differ (options {:?}):\n{}\n--- ours\n{}--- llama.cpp\n{}\n",
                mismatches.len(),
                samples.len(),
                entry.options_text,
                mismatches.iter().take(6).cloned().collect::<Vec<_>>().join("\n"),
                gbnf::print(&ours),
                expected_text
            )),
            (true, true) => problems.push(format!(
                "{label}: listed as differing ({}) but all {} samples agree: update llamacpp-rows.tsv",
                entry.reason,
                samples.len()
            )),
            _ => {}
        }
    }
    assert!(compared > 2000, "only {compared} samples compared");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The row's schema, parsed from its exact text so that key order is the test's.
fn schema_of(row: &Value) -> Value {
    match row["schema_text"].as_str() {
        Some(text) => serde_json::from_str(text).unwrap_or_else(|_| row["schema"].clone()),
        None => row["schema"].clone(),
    }
}

/// One line of `llamacpp-rows.tsv`: suite, row index, options, `agree`/`differ`, reason.
#[derive(Clone, Debug, Default)]
struct Entry {
    options_text: String,
    differs: bool,
    reason: String,
}

impl Entry {
    fn options(&self) -> Options<'static> {
        let mut options = Options::default();
        for option in self.options_text.split(',').map(str::trim) {
            match option {
                "" | "-" => {}
                "additional-properties-default=false" => {
                    options.additional_properties_default = false
                }
                "whitespace=compact" => options.whitespace = Whitespace::Compact,
                "whitespace=flexible" => options.whitespace = Whitespace::Flexible,
                "lenient" => options.lenient = true,
                "dotall" => options.dotall = true,
                other => panic!("llamacpp-rows.tsv: unknown option {other:?}"),
            }
        }
        options
    }
}

fn listed_rows(suite: &str) -> HashMap<usize, Entry> {
    read_tsv("json-schema/llamacpp-rows.tsv")
        .into_iter()
        .filter(|fields| fields[0] == suite)
        .map(|fields| {
            let idx: usize = fields[1].parse().expect("llamacpp-rows.tsv: row index");
            let entry = Entry {
                options_text: fields.get(2).cloned().unwrap_or_default(),
                differs: fields.get(3).is_some_and(|field| field == "differ"),
                reason: fields.get(4).cloned().unwrap_or_default(),
            };
            (idx, entry)
        })
        .collect()
}
