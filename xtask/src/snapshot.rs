//! Reads the grammar sections of snapshot files, in the standard format every test that
//! shows a grammar uses, so that `cargo xtask llama-compat` can replay them in llama.cpp:
//!
//! ```text
//! --- grammar (root: root) ---
//! <the printed GBNF>
//! --- verdicts ---
//! ACCEPT<TAB>"json-encoded sample"
//! REJECT 3<TAB>"json-encoded sample"
//! ```
//!
//! (`<TAB>` is one tab character.) Text before the first `--- grammar` line (insta's header, notes) is free; after
//! `--- verdicts ---` only verdict lines, blank lines and further grammar sections may follow.

use std::fmt;

/// A matcher's verdict on one sample, as snapshots and the node harness write it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Accept,
    Prefix,
    /// The byte offset of the first code point that cannot be accepted.
    Reject(usize),
}

impl Verdict {
    /// Parses `ACCEPT`, `PREFIX` or `REJECT <offset>`.
    pub fn parse(text: &str) -> Option<Verdict> {
        match text {
            "ACCEPT" => Some(Verdict::Accept),
            "PREFIX" => Some(Verdict::Prefix),
            _ => {
                let offset = text.strip_prefix("REJECT ")?;
                offset.parse().ok().map(Verdict::Reject)
            }
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Accept => f.write_str("ACCEPT"),
            Verdict::Prefix => f.write_str("PREFIX"),
            Verdict::Reject(offset) => write!(f, "REJECT {offset}"),
        }
    }
}

/// One grammar section of a snapshot: the grammar and its samples with our verdicts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotGrammar {
    /// The 1-based line of the `--- grammar` header.
    pub line: usize,
    pub root: String,
    pub grammar: String,
    pub samples: Vec<(Verdict, String)>,
}

/// A line of a snapshot that breaks the format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.line, self.message)
    }
}

/// Every grammar section of `text`, in order; a file without one gives an empty list.
pub fn parse(text: &str) -> Result<Vec<SnapshotGrammar>, FormatError> {
    enum Section {
        Free,
        Grammar,
        Verdicts,
    }
    let mut sections: Vec<SnapshotGrammar> = Vec::new();
    let mut section = Section::Free;
    for (index, line) in text.lines().enumerate() {
        let line_number = index + 1;
        let error = |message: String| FormatError {
            line: line_number,
            message,
        };
        if let Some(root) = grammar_header(line) {
            if matches!(section, Section::Grammar) {
                return Err(error(
                    "a grammar section starts before the previous one has verdicts".into(),
                ));
            }
            sections.push(SnapshotGrammar {
                line: line_number,
                root: root.to_owned(),
                grammar: String::new(),
                samples: Vec::new(),
            });
            section = Section::Grammar;
            continue;
        }
        let Some(current) = sections.last_mut() else {
            continue;
        };
        match section {
            Section::Free => {}
            Section::Grammar if line == "--- verdicts ---" => section = Section::Verdicts,
            Section::Grammar => {
                current.grammar.push_str(line);
                current.grammar.push('\n');
            }
            Section::Verdicts if line.trim().is_empty() => {}
            Section::Verdicts => {
                let Some((verdict, sample)) = line.split_once('\t') else {
                    return Err(error(format!(
                        "expected `VERDICT<TAB>\"sample\"`, found {line:?}"
                    )));
                };
                let Some(verdict) = Verdict::parse(verdict) else {
                    return Err(error(format!("unknown verdict {verdict:?}")));
                };
                let sample: String = serde_json::from_str(sample).map_err(|json_error| {
                    error(format!("the sample is not a JSON string: {json_error}"))
                })?;
                current.samples.push((verdict, sample));
            }
        }
    }
    if matches!(section, Section::Grammar) {
        let line = sections.last().map_or(0, |last| last.line);
        return Err(FormatError {
            line,
            message: "the grammar section has no `--- verdicts ---` line".into(),
        });
    }
    Ok(sections)
}

/// The root of a `--- grammar (root: NAME) ---` line.
fn grammar_header(line: &str) -> Option<&str> {
    line.strip_prefix("--- grammar (root: ")?
        .strip_suffix(") ---")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_sections_after_an_insta_header() {
        let text = "---\nsource: x.rs\n---\nnotes\n--- grammar (root: start) ---\nstart ::= \"a\"\n\n--- verdicts ---\nACCEPT\t\"a\"\nREJECT 0\t\"\\u00e9\"\n\nPREFIX\t\"\"\n";
        let sections = parse(text).expect("valid");
        assert_eq!(
            sections,
            [SnapshotGrammar {
                line: 5,
                root: "start".into(),
                grammar: "start ::= \"a\"\n\n".into(),
                samples: vec![
                    (Verdict::Accept, "a".into()),
                    (Verdict::Reject(0), "é".into()),
                    (Verdict::Prefix, String::new()),
                ],
            }]
        );
    }

    #[test]
    fn rejects_stray_lines_after_verdicts() {
        let text = "--- grammar (root: root) ---\nroot ::= \"a\"\n--- verdicts ---\nACCEPT\t\"a\"\nsomething else\n";
        assert_eq!(parse(text).map_err(|e| e.line), Err(5));
    }

    #[test]
    fn rejects_a_grammar_without_verdicts() {
        assert!(parse("--- grammar (root: root) ---\nroot ::= \"a\"\n").is_err());
    }

    #[test]
    fn ignores_files_without_grammar() {
        assert_eq!(parse("---\nsource: x\n---\n{}\n"), Ok(Vec::new()));
    }

    #[test]
    fn verdicts_round_trip() {
        for verdict in [Verdict::Accept, Verdict::Prefix, Verdict::Reject(17)] {
            assert_eq!(Verdict::parse(&verdict.to_string()), Some(verdict));
        }
        assert_eq!(Verdict::parse("REJECT"), None);
        assert_eq!(Verdict::parse("REJECT -1"), None);
    }
}
