//! End-to-end tests of the `schema2gbnf` binary: inputs, outputs, flags, exit codes and the
//! batch mode, run as a subprocess exactly as users run it.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs the binary with `args` (relative paths from the repository root) and `stdin`.
fn run(args: &[&str], stdin: &str) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_schema2gbnf"))
        .args(args)
        .current_dir(repo_root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    let output = child.wait_with_output().expect("the binary finishes");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const EXAMPLE: &str = "tests/data/examples/get_weather.schema.json";

#[test]
fn example_file_compiles_to_a_loadable_grammar() {
    let run = run(&[EXAMPLE], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.starts_with("root ::= "), "{}", run.stdout);
    gbnf::check(&run.stdout, "root").expect("the output reads and validates");
}

#[test]
fn stdin_and_output_file() {
    let out = std::env::temp_dir().join(format!("schema2gbnf-cli-{}.gbnf", std::process::id()));
    let out_arg = out.to_string_lossy().into_owned();
    let run = run(
        &["-", "-o", &out_arg, "--whitespace", "compact"],
        r#"{"type": "boolean"}"#,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    let grammar = std::fs::read_to_string(&out).expect("output written");
    std::fs::remove_file(&out).ok();
    let (grammar, _) = gbnf::check(&grammar, "root").expect("valid grammar");
    let matcher = gbnf::Matcher::new(&grammar, "root").expect("matcher");
    assert_eq!(matcher.verdict("true"), gbnf::Verdict::Accept);
    assert_ne!(matcher.verdict("1"), gbnf::Verdict::Accept);
}

#[test]
fn schema_errors_name_the_pointer_and_exit_1() {
    let run = run(
        &["-"],
        r#"{"properties": {"age": {"type": "integer", "minimum": "ten"}}}"#,
    );
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("/properties/age/minimum"),
        "{}",
        run.stderr
    );
    let run = self::run(&["-"], "{not json");
    assert_eq!(run.code, 1, "{}", run.stderr);
}

#[test]
fn usage_and_io_errors_exit_2() {
    assert_eq!(run(&["tests/data/examples/no-such-file.json"], "").code, 2);
    assert_eq!(run(&["--no-such-flag"], "").code, 2);
    assert_eq!(run(&["--whitespace", "sometimes", EXAMPLE], "").code, 2);
    let fetch = run(&["--allow-fetch", EXAMPLE], "");
    assert_eq!(fetch.code, 2);
    assert!(fetch.stderr.contains("not supported"), "{}", fetch.stderr);
}

#[test]
fn lenient_prints_warnings_as_json_lines() {
    let schema = r#"{"type": "array", "items": {"type": "object"}, "uniqueItems": true}"#;
    let strict_run = run(&["-"], schema);
    assert_eq!(strict_run.code, 1, "{}", strict_run.stdout);
    assert!(
        strict_run.stderr.contains("/uniqueItems"),
        "{}",
        strict_run.stderr
    );
    let lenient = run(&["--lenient", "-"], schema);
    assert_eq!(lenient.code, 0, "{}", lenient.stderr);
    let warnings: Vec<Value> = lenient
        .stderr
        .lines()
        .map(|line| serde_json::from_str(line).expect("each warning is a JSON line"))
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w["pointer"] == "/uniqueItems" && w["keyword"] == "uniqueItems"),
        "{warnings:?}"
    );
}

#[test]
fn strict_mode_reports_openai_rules() {
    let schema = r#"{"type": "object", "properties": {"a": {"type": "string"}, "b": {"allOf": [{"type": "integer"}]}}, "required": ["a"]}"#;
    let run = run(&["--strict", "-"], schema);
    assert_eq!(run.code, 1);
    for expected in [
        "/additionalProperties",
        "/properties/b",
        "/properties/b/allOf",
    ] {
        assert!(
            run.stderr.contains(&format!("{expected}: strict mode")),
            "{expected}\n{}",
            run.stderr
        );
    }
    let ok = r#"{"type": "object", "properties": {"a": {"type": ["string", "null"]}}, "required": ["a"], "additionalProperties": false}"#;
    let run = self::run(&["--strict", "-"], ok);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn prop_order_puts_listed_properties_first() {
    let schema = r#"{"type": "object", "properties": {"a": {"const": 1}, "b": {"const": 2}, "c": {"const": 3}}, "required": ["a", "b", "c"], "additionalProperties": false}"#;
    let run = run(
        &["--prop-order", "c,b", "--whitespace", "compact", "-"],
        schema,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (grammar, _) = gbnf::check(&run.stdout, "root").expect("valid grammar");
    let matcher = gbnf::Matcher::new(&grammar, "root").expect("matcher");
    assert_eq!(
        matcher.verdict(r#"{"c":3,"b":2,"a":1}"#),
        gbnf::Verdict::Accept
    );
    assert_ne!(
        matcher.verdict(r#"{"a":1,"b":2,"c":3}"#),
        gbnf::Verdict::Accept
    );
}

#[test]
fn additional_properties_default_false_follows_llamacpp() {
    let schema = r#"{"type": "object", "properties": {"a": {"type": "integer"}}}"#;
    let run = run(
        &[
            "--additional-properties-default",
            "false",
            "--whitespace",
            "compact",
            "-",
        ],
        schema,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (grammar, _) = gbnf::check(&run.stdout, "root").expect("valid grammar");
    let matcher = gbnf::Matcher::new(&grammar, "root").expect("matcher");
    assert_eq!(matcher.verdict(r#"{"a":1}"#), gbnf::Verdict::Accept);
    assert_ne!(matcher.verdict(r#"{"b":1}"#), gbnf::Verdict::Accept);
}

#[test]
fn batch_keeps_order_and_survives_bad_lines() {
    let input = [
        r#"{"id": "ok", "schema": {"type": "integer"}}"#,
        "this is not json",
        r#"{"id": 7, "schema": {"type": "kaboom"}}"#,
        "",
        r#"{"id": "no-schema"}"#,
        r#"{"id": ["last"], "schema": {"enum": ["x"]}}"#,
    ]
    .join("\n");
    let run = run(&["--batch", "-"], &input);
    assert_eq!(
        run.code, 1,
        "a failed line makes the exit code 1: {}",
        run.stderr
    );
    let lines: Vec<Value> = run
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("each result is a JSON line"))
        .collect();
    assert_eq!(lines.len(), 5, "{}", run.stdout);
    assert_eq!(lines[0]["id"], "ok");
    assert!(lines[0]["grammar"]
        .as_str()
        .is_some_and(|g| g.starts_with("root ::=")));
    assert!(lines[0]["ms"].as_f64().is_some_and(|ms| ms >= 0.0));
    assert_eq!(lines[1]["id"], Value::Null);
    assert!(lines[1]["error"]
        .as_str()
        .is_some_and(|e| e.contains("not JSON")));
    assert_eq!(lines[2]["id"], 7);
    assert!(
        lines[2]["error"]
            .as_str()
            .is_some_and(|e| e.contains("/type")),
        "{}",
        lines[2]
    );
    assert!(lines[3]["error"].is_string());
    assert_eq!(lines[4]["id"], serde_json::json!(["last"]));
    assert!(lines[4]["grammar"].is_string());
    assert!(lines.iter().all(|line| line.get("warnings").is_none()));

    let lenient = self::run(
        &["--batch", "-", "--lenient"],
        r#"{"id": 1, "schema": {"type": "string"}}"#,
    );
    assert_eq!(lenient.code, 0, "{}", lenient.stderr);
    let line: Value = serde_json::from_str(lenient.stdout.trim()).expect("JSON line");
    assert_eq!(line["warnings"], serde_json::json!([]));
}

#[test]
fn refs_directory_resolves_remote_references() {
    const ORDER: &str = "tests/data/cli-refs/order.schema.json";
    let without = run(&[ORDER], "");
    assert_eq!(without.code, 1);
    assert!(
        without
            .stderr
            .contains("/properties/ship_to/$ref: cannot resolve $ref \"https://example.com/schemas/address.json\"")
            && without.stderr.contains("--refs DIR"),
        "{}",
        without.stderr
    );
    let with = run(&["--refs", "tests/data/cli-refs/refs", ORDER], "");
    assert_eq!(with.code, 0, "{}", with.stderr);
    let (grammar, _) = gbnf::check(&with.stdout, "root").expect("the output reads and validates");
    let matcher = gbnf::Matcher::new(&grammar, "root").expect("matcher");
    for (input, valid) in [
        (
            r#"{"ship_to": {"city": "Paris", "zip": "75001"}, "weight": 2.5}"#,
            true,
        ),
        (r#"{"ship_to": {"city": "Paris"}, "weight": 1}"#, true),
        (
            r#"{"ship_to": {"city": "Paris", "zip": "7500"}, "weight": 1}"#,
            false,
        ),
        (r#"{"ship_to": {"city": "Paris"}, "weight": 0}"#, false),
    ] {
        let accepted = matches!(matcher.verdict(input), gbnf::Verdict::Accept);
        assert_eq!(accepted, valid, "{input}");
    }
    let missing = run(&["--refs", "tests/data/cli-refs/no-such-dir", ORDER], "");
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    assert!(
        missing.stderr.starts_with("error: --refs: "),
        "{}",
        missing.stderr
    );
}

#[test]
fn any_order_accepts_permutations_up_to_the_cap() {
    let schema = r#"{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}}, "required": ["a", "b"], "additionalProperties": false}"#;
    let run_any = run(&["--any-order", "-"], schema);
    assert_eq!(run_any.code, 0, "{}", run_any.stderr);
    let (grammar, _) = gbnf::check(&run_any.stdout, "root").expect("the output validates");
    let matcher = gbnf::Matcher::new(&grammar, "root").expect("matcher");
    for (input, valid) in [
        (r#"{"b": "x", "a": 1}"#, true),
        (r#"{"c": true, "b": "x", "a": 1}"#, true),
        (r#"{"a": 1, "c": false, "b": "y"}"#, true),
        (r#"{"a": 1}"#, false),
        (r#"{"a": 1, "b": "x", "a": 2}"#, false),
    ] {
        let accepted = matches!(matcher.verdict(input), gbnf::Verdict::Accept);
        assert_eq!(accepted, valid, "{input}");
    }
    // Over the cap: exit 1, the error naming the object and the limit that applies.
    let refused = |max: &str, schema: &str, message: &str| {
        let over = run(&["--any-order", "--max-any-order", max, "-"], schema);
        assert_eq!(over.code, 1, "{}", over.stderr);
        assert!(over.stderr.contains(message), "{}", over.stderr);
    };
    refused(
        "2",
        schema,
        "/properties: unsupported: 3 properties in any order (the limit is 2)",
    );
    // Past the hard limit, the error names it rather than the flag's value.
    let wide: serde_json::Map<String, serde_json::Value> = (0..16)
        .map(|i| (format!("p{i}"), serde_json::json!({"type": "integer"})))
        .collect();
    let wide = serde_json::json!({"type": "object", "properties": wide}).to_string();
    refused(
        "100",
        &wide,
        "/properties: unsupported: 16 properties in any order (the limit is 15)",
    );
}
