//! llama.cpp's own JSON Schema test vectors, run through our compiler and matcher:
//! - `grammar-integration.jsonl` schema rows: every pass string accepted, every fail string not;
//! - `json-schema-to-grammar.jsonl`: our grammar and llama.cpp's expected grammar give the same
//!   verdicts on strings sampled from both grammars (and on mutations of those strings).
//!
//! Every row's outcome is recorded in `tests/data/json-schema/llamacpp-<suite>.tsv`: the
//! options it is compiled with (llama.cpp defaults `additionalProperties` to false, for
//! example) and its category (`agree`, `encoding`, `differ`, `no-compile`); the last two need a
//! written reason. A row whose category changes fails the test, in either direction, so a
//! deliberate difference is never a silent skip. After an intended change:
//! `UPDATE_BASELINE=1 cargo test -p gbnf-json-schema --test llamacpp`, then review the diff
//! and write reasons for new `differ`/`no-compile` rows.

mod support;

use std::collections::BTreeMap;
use std::fs;

use gbnf_json_schema::{compile, Options, Whitespace};
use serde_json::Value;

use support::sampler::{mutate, Rng, Sampler};
use support::{
    accepts, data_path, matcher, read_jsonl, read_tsv, updating_baseline, verdict_label,
};

/// Samples drawn from each grammar, and mutations of each sample set.
const SAMPLES: usize = 40;

#[test]
fn grammar_integration_schema_rows() {
    let rows = read_jsonl("llamacpp/grammar-integration.jsonl");
    let mut table = RowTable::load("integration");
    let mut problems = Vec::new();
    let mut schema_rows = 0;
    for (idx, row) in rows.iter().enumerate() {
        if row["kind"] != "schema" {
            continue;
        }
        schema_rows += 1;
        let name = row["name"].as_str().unwrap_or("");
        let label = format!("row {idx} {name:?}");
        let entry = table.entry(idx, name);
        let schema = schema_of(row);
        let compiled = match compile(&schema, &entry.options()) {
            Ok(compiled) => compiled,
            Err(err) => {
                let detail = err.to_string();
                table.record(idx, Category::NoCompile, &mut problems, &label, || detail);
                continue;
            }
        };
        let matcher = matcher(&compiled.grammar);
        let mut mismatches = Vec::new();
        for (key, want) in [("pass", true), ("fail", false)] {
            for text in row[key].as_array().into_iter().flatten() {
                let Some(text) = text.as_str() else { continue };
                if accepts(&matcher, text) != want {
                    mismatches.push(format!(
                        "  {key} {text:?}: {}",
                        verdict_label(&matcher.verdict(text))
                    ));
                }
            }
        }
        let category = if mismatches.is_empty() {
            Category::Agree
        } else {
            Category::Differ
        };
        table.record(idx, category, &mut problems, &label, || {
            format!(
                "{}\n{}",
                mismatches.join("\n"),
                gbnf::print(&compiled.grammar)
            )
        });
    }
    table.finish(&mut problems);
    assert_eq!(schema_rows, 33);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn json_schema_to_grammar_rows_agree_with_llamacpp() {
    let rows = read_jsonl("llamacpp/json-schema-to-grammar.jsonl");
    let mut table = RowTable::load("to-grammar");
    let mut problems = Vec::new();
    let mut compared = 0;
    for (idx, row) in rows.iter().enumerate() {
        let name = row["name"].as_str().unwrap_or("");
        let label = format!("row {idx} {name:?}");
        let entry = table.entry(idx, name);
        let schema = schema_of(row);
        let ours = compile(&schema, &entry.options());
        if row["expected_status"] == "FAILURE" {
            let category = match ours {
                Ok(_) => Category::Differ,
                Err(_) => Category::Agree,
            };
            table.record(idx, category, &mut problems, &label, String::new);
            continue;
        }
        let expected_text = row["expected_grammar"].as_str().unwrap_or_default();
        let theirs = gbnf::read(expected_text)
            .unwrap_or_else(|err| panic!("{label}: expected grammar does not read: {err}"));
        let ours = match ours {
            Ok(compiled) => compiled.grammar,
            Err(err) => {
                let detail = err.to_string();
                table.record(idx, Category::NoCompile, &mut problems, &label, || detail);
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
        // The JSON types (by first character) llama.cpp's grammar produces: a schema without
        // `type` allows every type in JSON Schema, while llama.cpp assumes one.
        let their_kinds: Vec<char> = samples
            .iter()
            .filter(|text| accepts(&their_matcher, text))
            .filter_map(|text| json_kind(text))
            .collect();
        let mut semantic = Vec::new();
        let mut other_types = 0;
        let mut encoding = 0;
        for text in &samples {
            compared += 1;
            if accepts(&our_matcher, text) == accepts(&their_matcher, text) {
                continue;
            }
            // The same JSON value in the canonical encoding: if the grammars agree on that,
            // they differ only in whitespace, number spelling or string escapes.
            let canonical = canonical_json(text);
            let ours_accepts = accepts(&our_matcher, &canonical);
            if ours_accepts == accepts(&their_matcher, &canonical) {
                encoding += 1;
            } else if ours_accepts
                && json_kind(&canonical).is_some_and(|kind| !their_kinds.contains(&kind))
            {
                other_types += 1;
            } else {
                semantic.push(format!(
                    "  {canonical:?}: ours {}, llama.cpp {}",
                    verdict_label(&our_matcher.verdict(&canonical)),
                    verdict_label(&their_matcher.verdict(&canonical))
                ));
            }
        }
        let category = if !semantic.is_empty() {
            Category::Differ
        } else if other_types > 0 {
            Category::Untyped
        } else if encoding > 0 {
            Category::Encoding
        } else {
            Category::Agree
        };
        table.record(idx, category, &mut problems, &label, || {
            format!(
                "{} of {} samples differ in value, {other_types} in type, {encoding} only in encoding:\n{}\n--- ours\n{}--- llama.cpp\n{}\n",
                semantic.len(),
                samples.len(),
                semantic.iter().take(6).cloned().collect::<Vec<_>>().join("\n"),
                gbnf::print(&ours),
                expected_text
            )
        });
    }
    table.finish(&mut problems);
    assert!(compared > 2000, "only {compared} samples compared");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The JSON type of a text by its first character: `{`, `[`, `"`, `t`/`f` (as `t`), `n`, or
/// `0` for numbers.
fn json_kind(text: &str) -> Option<char> {
    match text.trim_start().chars().next()? {
        '{' => Some('{'),
        '[' => Some('['),
        '"' => Some('"'),
        't' | 'f' => Some('t'),
        'n' => Some('n'),
        '-' | '0'..='9' => Some('0'),
        _ => None,
    }
}

/// `text` in the encoding every JSON grammar should accept, changed only lexically so that it
/// works on any text (lone surrogate escapes, huge numbers): whitespace outside strings
/// removed; numbers without a zero fraction (`1.00` → `1`), without leading zeros in the
/// exponent, and `-0` as `0`; in strings `\/` written `/`, `\u` escapes of printable
/// characters decoded and the others in lowercase, DEL escaped. Digits are otherwise left as
/// written, so llama.cpp's limit of 16 digits still counts as a difference in value.
fn canonical_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(ch) = chars.next() {
        if !in_string {
            match ch {
                ' ' | '\t' | '\n' | '\r' => {}
                '"' => {
                    in_string = true;
                    out.push(ch);
                }
                '-' | '0'..='9' => {
                    let mut number = String::from(ch);
                    while let Some(next) = chars.next_if(|next| "+-.eE0123456789".contains(*next)) {
                        number.push(next);
                    }
                    out.push_str(&canonical_number(&number));
                }
                _ => out.push(ch),
            }
            continue;
        }
        match ch {
            '"' => {
                in_string = false;
                out.push(ch);
            }
            '\u{7f}' => out.push_str("\\u007f"),
            '\\' => match chars.next() {
                Some('/') => out.push('/'),
                Some('u') => {
                    let hex: String = (0..4).filter_map(|_| chars.next()).collect();
                    let decoded = u32::from_str_radix(&hex, 16)
                        .ok()
                        .and_then(char::from_u32)
                        .filter(|ch| !ch.is_control() && *ch != '"' && *ch != '\\');
                    match decoded {
                        Some(ch) => out.push(ch),
                        None => {
                            out.push_str("\\u");
                            out.push_str(&hex.to_ascii_lowercase());
                        }
                    }
                }
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => out.push('\\'),
            },
            _ => out.push(ch),
        }
    }
    out
}

/// A JSON number token spelled canonically (see `canonical_json`); anything that is not a
/// number is returned unchanged.
fn canonical_number(token: &str) -> String {
    let (mantissa, exponent) = match token.find(['e', 'E']) {
        Some(at) => (&token[..at], Some(&token[at + 1..])),
        None => (token, None),
    };
    let mantissa = match mantissa.split_once('.') {
        Some((int, frac))
            if exponent.is_none() && !frac.is_empty() && frac.bytes().all(|b| b == b'0') =>
        {
            int
        }
        _ => mantissa,
    };
    let mantissa = if mantissa == "-0" { "0" } else { mantissa };
    match exponent {
        None => mantissa.to_owned(),
        Some(exponent) => {
            let (sign, digits) = match exponent.strip_prefix(['+', '-']) {
                Some(digits) => (&exponent[..1], digits),
                None => ("", exponent),
            };
            let trimmed = digits.trim_start_matches('0');
            let digits = if trimmed.is_empty() && !digits.is_empty() {
                "0"
            } else {
                trimmed
            };
            format!("{mantissa}e{sign}{digits}")
        }
    }
}

/// The row's schema, parsed from its exact text so that key order is the test's.
fn schema_of(row: &Value) -> Value {
    match row["schema_text"].as_str() {
        Some(text) => serde_json::from_str(text).unwrap_or_else(|_| row["schema"].clone()),
        None => row["schema"].clone(),
    }
}

/// How a row compares with llama.cpp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Category {
    /// Same verdicts everywhere.
    Agree,
    /// Different verdicts only on encodings of the same value (whitespace placement, number
    /// spelling, string escapes); the canonical encoding gets the same verdict.
    Encoding,
    /// We also accept values of JSON types that llama.cpp's grammar never produces, and
    /// agree otherwise: the schema has no `type`, so JSON Schema allows every other type,
    /// while llama.cpp assumes the type its keywords suggest (or an object for `{}`).
    Untyped,
    /// Different verdicts on some value: needs a reason.
    Differ,
    /// We do not compile the schema: needs a reason.
    NoCompile,
}

impl Category {
    fn as_str(self) -> &'static str {
        match self {
            Category::Agree => "agree",
            Category::Encoding => "encoding",
            Category::Untyped => "untyped",
            Category::Differ => "differ",
            Category::NoCompile => "no-compile",
        }
    }

    fn needs_reason(self) -> bool {
        matches!(self, Category::Differ | Category::NoCompile)
    }
}

/// One line of `tests/data/json-schema/llamacpp-<suite>.tsv`: row index, row name, options,
/// category, reason.
#[derive(Clone, Debug, Default)]
struct Entry {
    name: String,
    options_text: String,
    category: String,
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
                other => panic!("unknown option {other:?}"),
            }
        }
        options
    }
}

/// The recorded expectations of one suite, checked row by row, or rewritten (keeping options
/// and reasons) under `UPDATE_BASELINE=1`.
struct RowTable {
    file: String,
    rows: BTreeMap<usize, Entry>,
}

impl RowTable {
    fn load(suite: &str) -> RowTable {
        let file = format!("json-schema/llamacpp-{suite}.tsv");
        let rows = read_tsv(&file)
            .into_iter()
            .filter(|fields| fields[0] != "row")
            .map(|fields| {
                let idx: usize = fields[0].parse().expect("row index");
                let field = |i: usize| fields.get(i).cloned().unwrap_or_default();
                let entry = Entry {
                    name: field(1),
                    options_text: field(2),
                    category: field(3),
                    reason: field(4),
                };
                (idx, entry)
            })
            .collect();
        RowTable { file, rows }
    }

    fn entry(&mut self, idx: usize, name: &str) -> Entry {
        let entry = self.rows.entry(idx).or_default();
        entry.name = name.to_owned();
        entry.clone()
    }

    /// Checks (or, when updating, records) the category of row `idx`.
    fn record(
        &mut self,
        idx: usize,
        category: Category,
        problems: &mut Vec<String>,
        label: &str,
        detail: impl FnOnce() -> String,
    ) {
        let entry = self.rows.entry(idx).or_default();
        if updating_baseline() {
            entry.category = category.as_str().to_owned();
        } else if entry.category != category.as_str() {
            problems.push(format!(
                "{label}: {} (recorded: {:?}, options {:?}) in {}\n{}",
                category.as_str(),
                entry.category,
                entry.options_text,
                self.file,
                detail()
            ));
            return;
        }
        if category.needs_reason() && entry.reason.trim().is_empty() {
            problems.push(format!(
                "{label}: {} needs a reason in {}\n{}",
                category.as_str(),
                self.file,
                detail()
            ));
        }
    }

    fn finish(&self, problems: &mut Vec<String>) {
        if !updating_baseline() {
            return;
        }
        let mut text = String::from(
            "# How each llama.cpp row compares with our compiler (see tests/llamacpp.rs).\n\
             # category: agree | encoding (only whitespace/escape spellings differ) |\n\
             # untyped (no `type` in the schema: we also accept the other JSON types) |\n\
             # differ | no-compile (both need a reason). UPDATE_BASELINE=1 rewrites the\n\
             # category column and keeps options and reasons.\n\
             row\tname\toptions\tcategory\treason\n",
        );
        for (idx, entry) in &self.rows {
            text.push_str(&format!(
                "{idx}\t{}\t{}\t{}\t{}\n",
                entry.name.replace('\t', " "),
                entry.options_text,
                entry.category,
                entry.reason
            ));
        }
        if let Err(err) = fs::write(data_path(&self.file), text) {
            problems.push(format!("{}: {err}", self.file));
        }
    }
}
