//! `.peg` text cases: each `tests/data/peg-text/<case>.peg` is read; `error-*` cases must
//! fail and snapshot the error, the others snapshot the parse of every input of
//! `<case>.inputs.jsonl` (outcome and AST). Every input is a transcript: each of its
//! prefixes, parsed in partial mode, must not be a `NoMatch` unless the whole input is one.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use gbnf_peg::{parse, parse_peg, Arena, Label, Options, Outcome, ParseResult};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn render(arena: &Arena, input: &str, result: &ParseResult) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "outcome: {:?}, end: {}", result.outcome, result.end);
    let ast = &result.ast;
    let mut stack: Vec<(gbnf_peg::AstId, usize)> =
        ast.roots().iter().rev().map(|&id| (id, 0)).collect();
    while let Some((id, depth)) = stack.pop() {
        let node = ast.node(id);
        let label = match ast.label(arena, id) {
            Label::Rule(name) => format!("rule {name}"),
            Label::Tag(tag) => format!("@{tag}"),
        };
        let text = input.get(node.start..node.end).unwrap_or("<not utf-8>");
        let partial = if node.is_partial { " (partial)" } else { "" };
        let _ = writeln!(
            out,
            "{:indent$}{label} {}..{}{partial} {}",
            "",
            node.start,
            node.end,
            serde_json::Value::String(text.to_owned()),
            indent = depth * 2
        );
        stack.extend(
            ast.children(id)
                .iter()
                .rev()
                .map(|&child| (child, depth + 1)),
        );
    }
    out
}

/// Partial parses of every proper prefix never say `NoMatch` when the whole input matches.
fn check_prefixes(arena: &Arena, input: &str) -> Result<(), String> {
    let partial = Options { partial: true };
    for (end, _) in input.char_indices() {
        let prefix = &input[..end];
        if parse(arena, prefix, &partial).outcome == Outcome::NoMatch {
            return Err(format!("NoMatch on the prefix {prefix:?}"));
        }
    }
    Ok(())
}

fn check(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{path:?}: {error}"));
    let is_error_case = path
        .file_name()
        .is_some_and(|name| name.to_string_lossy().starts_with("error-"));
    let mut out = String::new();
    let _ = writeln!(out, "source:\n{}", text.trim_end());
    let arena = match parse_peg(&text) {
        Ok(arena) => arena,
        Err(error) => {
            assert!(is_error_case, "{path:?}: {error}");
            let _ = writeln!(out, "error: {error}");
            return out;
        }
    };
    assert!(!is_error_case, "{path:?} should not read");
    let inputs_path = path.with_extension("inputs.jsonl");
    let inputs = std::fs::read_to_string(&inputs_path).unwrap_or_default();
    for line in inputs.lines().filter(|line| !line.trim().is_empty()) {
        let input: String =
            serde_json::from_str(line).unwrap_or_else(|error| panic!("{inputs_path:?}: {error}"));
        let result = parse(&arena, &input, &Options::default());
        if result.outcome == Outcome::Match {
            check_prefixes(&arena, &input).unwrap_or_else(|error| panic!("{path:?}: {error}"));
        }
        let _ = writeln!(out, "\ninput: {line}");
        out.push_str(&render(&arena, &input, &result));
    }
    out
}

#[test]
fn peg_text_cases() {
    let dir = repo_root().join("tests/data/peg-text");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok().map(|entry| entry.path()))
                .collect()
        })
        .unwrap_or_default();
    paths.retain(|path| path.extension().is_some_and(|ext| ext == "peg"));
    paths.sort();
    assert!(paths.len() >= 10, "cases missing in {dir:?}");
    for path in paths {
        let snapshot = check(&path);
        let name = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        insta::with_settings!({
            snapshot_path => repo_root().join("snapshots/peg-text"),
            prepend_module_to_snapshot => false,
            omit_expression => true,
        }, {
            insta::assert_snapshot!(name, snapshot);
        });
    }
}

#[test]
fn the_text_format_round_trips_through_the_arena_json() {
    let text = std::fs::read_to_string(repo_root().join("tests/data/peg-text/chat-with-tools.peg"))
        .unwrap_or_default();
    let arena = parse_peg(&text).unwrap_or_else(|error| panic!("{error}"));
    let json = arena.to_json();
    let back = Arena::from_json(&json).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(back, arena);
}

#[test]
fn hostile_text_never_panics() {
    let cases = [
        "",
        "#",
        "a",
        "a <-",
        "a <- (",
        "a <- \"",
        "a <- [",
        "a <- @",
        "a <- @t(",
        "a <- until(",
        "a <- schema(",
        "a <- schema(\"x\", \"n\", {",
        "a <- \"x\"{99999999999}",
        "a <- 'é",
        "trigger",
        "trigger <- 'a'",
        "a <- \\",
        "a <- \"\\u{110000}\"",
        "a <- \"\\xZZ\"",
        "a <- b\nb <- a",
    ];
    for case in cases {
        let _ = parse_peg(case);
    }
}
