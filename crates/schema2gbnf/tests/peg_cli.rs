//! End-to-end tests of the PEG commands: `schema2gbnf peg` (a parser lowered to GBNF) and
//! `gbnf parse` (the same parser run over model output), on the files in
//! `tests/data/cli-peg/`, snapshotted in `snapshots/cli-peg/`. The grammar snapshots use the
//! standard grammar format with verdicts, so `cargo xtask llama-compat` replays them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn data_dir() -> PathBuf {
    repo_root().join("tests/data/cli-peg")
}

fn snapshot(name: &str, text: &str) {
    insta::with_settings!({
        snapshot_path => repo_root().join("snapshots/cli-peg"),
        prepend_module_to_snapshot => false,
        omit_expression => true,
    }, {
        insta::assert_snapshot!(name, text);
    });
}

/// The result of one run of a binary.
struct Run {
    command: String,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    /// The command line, exit code, stdout and stderr.
    fn transcript(&self) -> String {
        format!(
            "{}\nexit: {}\n--- stdout ---\n{}--- stderr ---\n{}",
            self.command,
            self.code
                .map_or("signal".to_owned(), |code| code.to_string()),
            self.stdout,
            self.stderr,
        )
    }
}

/// Runs binary `exe` (shown as `name`) with `args` in `tests/data/cli-peg`, with `stdin_file`
/// (a file of that directory) on stdin.
fn run(exe: &str, name: &str, args: &[&str], stdin_file: Option<&str>) -> Run {
    let stdin = match stdin_file {
        Some(file) => std::fs::read(data_dir().join(file)).expect("the input file exists"),
        None => Vec::new(),
    };
    let mut child = Command::new(exe)
        .args(args)
        .current_dir(data_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    // A command that fails before reading its input closes the pipe early: a broken pipe here is
    // part of the behaviour under test, not a harness failure.
    let _ = child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(&stdin);
    let output = child.wait_with_output().expect("the binary finishes");
    let mut command = format!("$ {name} {}", args.join(" "));
    if let Some(file) = stdin_file {
        command.push_str(&format!(" < {file}"));
    }
    Run {
        command,
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn schema2gbnf(args: &[&str]) -> Run {
    run(env!("CARGO_BIN_EXE_schema2gbnf"), "schema2gbnf", args, None)
}

fn gbnf(args: &[&str], stdin_file: Option<&str>) -> Run {
    run(env!("CARGO_BIN_EXE_gbnf"), "gbnf", args, stdin_file)
}

/// The samples of `verdicts.jsonl`.
fn samples() -> Vec<String> {
    let text = std::fs::read_to_string(data_dir().join("verdicts.jsonl")).expect("samples");
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).expect("a JSON string per line"))
        .collect()
}

/// A grammar snapshot: the run's transcript (without stdout), then the grammar it printed and
/// our matcher's verdicts on `samples`.
fn grammar_snapshot(run: &Run, samples: &[String]) -> String {
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let grammar = gbnf::read(&run.stdout).unwrap_or_else(|error| panic!("{error}"));
    gbnf::validate(&grammar, "root").unwrap_or_else(|error| panic!("{error}"));
    let matcher = gbnf::Matcher::new(&grammar, "root").unwrap_or_else(|error| panic!("{error}"));
    let mut text = format!(
        "{}\nexit: 0\n--- stderr ---\n{}--- grammar (root: root) ---\n{}--- verdicts ---\n",
        run.command, run.stderr, run.stdout
    );
    for sample in samples {
        let verdict = matcher.verdict(sample).to_string();
        text.push_str(&format!(
            "{verdict}\t{}\n",
            serde_json::Value::from(sample.as_str())
        ));
    }
    text
}

#[test]
fn peg_lazy_grammar() {
    let run = schema2gbnf(&["peg", "--lazy", "tool-call.peg"]);
    assert_eq!(run.stderr, "triggers: tool-call\n");
    let text = grammar_snapshot(&run, &samples());
    snapshot("peg-lazy", &text);
}

#[test]
fn peg_eager_grammar() {
    let run = schema2gbnf(&["peg", "tool-call.peg"]);
    assert_eq!(run.stderr, "");
    let mut samples = samples();
    let prefixed: Vec<String> = samples
        .iter()
        .map(|sample| format!("Let me check the weather. {sample}"))
        .collect();
    samples.extend(prefixed);
    samples.push("Just content, no call.".to_owned());
    let text = grammar_snapshot(&run, &samples);
    snapshot("peg-eager", &text);
}

#[test]
fn peg_output_file_holds_the_same_grammar() {
    let dir = std::env::temp_dir().join(format!("schema2gbnf-peg-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let out = dir.join("tool-call.gbnf");
    let out_arg = out.to_string_lossy().into_owned();
    let written = schema2gbnf(&["peg", "--lazy", "tool-call.peg", "-o", &out_arg]);
    let printed = schema2gbnf(&["peg", "--lazy", "tool-call.peg"]);
    assert_eq!(written.code, Some(0), "{}", written.transcript());
    assert_eq!(written.stdout, "");
    let file = std::fs::read_to_string(&out).expect("the grammar was written");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(file, printed.stdout);
}

#[test]
fn peg_exact_space() {
    let run = schema2gbnf(&["peg", "--lazy", "--exact-space", "tool-call.peg"]);
    let text = grammar_snapshot(&run, &samples());
    snapshot("peg-lazy-exact-space", &text);
}

#[test]
fn peg_syntax_error() {
    snapshot(
        "peg-syntax-error",
        &schema2gbnf(&["peg", "broken.peg"]).transcript(),
    );
}

#[test]
fn peg_missing_file() {
    snapshot(
        "peg-missing-file",
        &schema2gbnf(&["peg", "no-such-file.peg"]).transcript(),
    );
}

#[test]
fn schema_argument_still_compiles_a_schema() {
    // `peg` is a subcommand, but a positional schema file keeps working beside it.
    let dir = std::env::temp_dir().join(format!("schema2gbnf-peg-schema-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let schema = dir.join("schema.json");
    std::fs::write(&schema, r#"{"type": "boolean"}"#).expect("schema written");
    let run = schema2gbnf(&[&schema.to_string_lossy()]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let grammar = gbnf::read(&run.stdout).unwrap_or_else(|error| panic!("{error}"));
    let matcher = gbnf::Matcher::new(&grammar, "root").unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(matcher.verdict("true"), gbnf::Verdict::Accept);
    assert_eq!(matcher.verdict("null"), gbnf::Verdict::Reject { offset: 0 });
}

#[test]
fn parse_with_message() {
    let run = gbnf(&["parse", "tool-call.peg", "--message"], Some("output.txt"));
    snapshot("parse-message", &run.transcript());
}

#[test]
fn parse_output_is_json() {
    let run = gbnf(&["parse", "tool-call.peg"], Some("output.txt"));
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let json: serde_json::Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|error| panic!("{error}"));
    let input = std::fs::read_to_string(data_dir().join("output.txt")).expect("output");
    assert_eq!(json["outcome"], "match");
    assert_eq!(json["end"], input.len());
    // Every node's text is the input between its start and end.
    let mut stack: Vec<&serde_json::Value> = json["ast"].as_array().expect("ast").iter().collect();
    let mut seen = 0;
    while let Some(node) = stack.pop() {
        let start = node["start"].as_u64().expect("start") as usize;
        let end = node["end"].as_u64().expect("end") as usize;
        assert_eq!(node["text"], input[start..end]);
        stack.extend(node["children"].as_array().expect("children"));
        seen += 1;
    }
    assert!(seen >= 5, "{seen} nodes");
    assert!(json.get("message").is_none());
}

#[test]
fn parse_partial_needs_more() {
    let run = gbnf(
        &["parse", "tool-call.peg", "--partial"],
        Some("output-cut.txt"),
    );
    snapshot("parse-partial", &run.transcript());
}

#[test]
fn parse_cut_output_without_partial_fails() {
    let run = gbnf(&["parse", "tool-call.peg"], Some("output-cut.txt"));
    assert_eq!(run.code, Some(1), "{}", run.transcript());
    let json: serde_json::Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(json["outcome"], "no_match");
}

#[test]
fn parse_unknown_tool() {
    let run = gbnf(&["parse", "tool-call.peg"], Some("output-unknown-tool.txt"));
    snapshot("parse-unknown-tool", &run.transcript());
}

#[test]
fn parse_stream() {
    let run = gbnf(
        &["parse", "tool-call.peg", "--stream", "16"],
        Some("output.txt"),
    );
    snapshot("parse-stream", &run.transcript());
}

#[test]
fn parse_stream_rebuilds_the_message_at_any_chunk_size() {
    let whole = gbnf(&["parse", "tool-call.peg", "--message"], Some("output.txt"));
    let whole: serde_json::Value = serde_json::from_str(&whole.stdout).expect("json");
    for size in ["1", "3", "7", "64", "1000"] {
        let run = gbnf(
            &["parse", "tool-call.peg", "--stream", size],
            Some("output.txt"),
        );
        assert_eq!(run.code, Some(0), "{}", run.transcript());
        let last = run.stdout.lines().last().expect("a final line");
        let last: serde_json::Value = serde_json::from_str(last).expect("json");
        assert_eq!(last["end"], true);
        assert_eq!(last["message"], whole["message"], "chunk size {size}");
    }
}

#[test]
fn parse_stream_of_unknown_tool_fails() {
    let run = gbnf(
        &["parse", "tool-call.peg", "--stream", "16"],
        Some("output-unknown-tool.txt"),
    );
    snapshot("parse-stream-unknown-tool", &run.transcript());
}

#[test]
fn parse_gives_up_on_exponential_backtracking() {
    let run = gbnf(&["parse", "backtracking.peg"], Some("backtracking.txt"));
    snapshot("parse-step-limit", &run.transcript());
}

#[test]
fn parse_stream_gives_up_on_exponential_backtracking() {
    let run = gbnf(
        &["parse", "backtracking.peg", "--stream", "16"],
        Some("backtracking.txt"),
    );
    snapshot("parse-stream-step-limit", &run.transcript());
}

#[test]
fn parse_broken_parser() {
    let run = gbnf(&["parse", "broken.peg"], Some("output.txt"));
    snapshot("parse-broken-parser", &run.transcript());
}

#[test]
fn parse_missing_parser() {
    let run = gbnf(&["parse", "no-such-file.peg"], Some("output.txt"));
    snapshot("parse-missing-parser", &run.transcript());
}

#[test]
fn parse_stream_zero_is_a_usage_error() {
    let run = gbnf(&["parse", "tool-call.peg", "--stream", "0"], None);
    assert_eq!(run.code, Some(2), "{}", run.transcript());
}

#[test]
fn readme_worked_example_is_current() {
    // The README shows the parser, its lazy grammar and its streamed parse: they must be what
    // the tools print today.
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    let parser = std::fs::read_to_string(data_dir().join("tool-call.peg")).expect("parser");
    let lazy = schema2gbnf(&["peg", "--lazy", "tool-call.peg"]);
    let stream = gbnf(
        &["parse", "tool-call.peg", "--stream", "16"],
        Some("output.txt"),
    );
    for (what, text) in [
        ("the parser", format!("```peg\n{parser}```")),
        ("the lazy grammar", format!("```gbnf\n{}```", lazy.stdout)),
        ("the triggers", format!("```text\n{}```", lazy.stderr)),
        (
            "the streamed parse",
            format!("```json\n{}```", stream.stdout),
        ),
    ] {
        assert!(
            readme.contains(&text),
            "README.md does not show {what} as printed today:\n{text}"
        );
    }
}
