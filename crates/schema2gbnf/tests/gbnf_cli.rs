//! End-to-end tests of the `gbnf` binary: each test runs it on the files in
//! `tests/data/cli/` and snapshots its exit code, stdout and stderr in `snapshots/cli/`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `gbnf ARGS` in `tests/data/cli` with `stdin`, and snapshots the result as `name`.
fn check(name: &str, args: &[&str], stdin: &str) {
    let transcript = run_in(&repo_root().join("tests/data/cli"), args, stdin);
    insta::with_settings!({
        snapshot_path => repo_root().join("snapshots/cli"),
        prepend_module_to_snapshot => false,
        omit_expression => true,
    }, {
        insta::assert_snapshot!(name, transcript);
    });
}

/// The transcript of one run: the command line, exit code, stdout and stderr.
fn run_in(dir: &Path, args: &[&str], stdin: &str) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_gbnf"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the gbnf binary runs");
    // A command that fails before reading its input closes the pipe early: a broken pipe here
    // is part of the behaviour under test, not a harness failure.
    let _ = child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(stdin.as_bytes());
    let output = child.wait_with_output().expect("gbnf finishes");
    format!(
        "$ gbnf {}\nexit: {}\n--- stdout ---\n{}--- stderr ---\n{}",
        args.iter()
            .map(|arg| shell_quote(arg))
            .collect::<Vec<_>>()
            .join(" "),
        output
            .status
            .code()
            .map_or("signal".to_owned(), |code| code.to_string()),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    )
}

/// `arg` as a shell would need it, so that the transcript's command line is unambiguous.
fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|ch| ch.is_alphanumeric() || "-_.,/=:@+".contains(ch));
    if plain {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

#[test]
fn check_valid() {
    check("check-valid", &["check", "greeting.gbnf"], "");
}

#[test]
fn check_undefined_rule() {
    check(
        "check-undefined-rule",
        &["check", "undefined-rule.gbnf"],
        "",
    );
}

#[test]
fn check_syntax_error() {
    check("check-syntax-error", &["check", "syntax-error.gbnf"], "");
}

#[test]
fn check_missing_root() {
    check(
        "check-missing-root",
        &["check", "greeting.gbnf", "--root", "start"],
        "",
    );
}

#[test]
fn check_other_root() {
    check(
        "check-other-root",
        &["check", "greeting.gbnf", "--root", "name"],
        "",
    );
}

#[test]
fn check_warning() {
    check("check-warning", &["check", "unreachable.gbnf"], "");
}

#[test]
fn check_stdin() {
    check("check-stdin", &["check", "-"], "root ::= [a-z]+\n");
}

#[test]
fn check_missing_file() {
    check("check-missing-file", &["check", "no-such-file.gbnf"], "");
}

#[test]
fn fmt_prints() {
    check("fmt-prints", &["fmt", "messy.gbnf"], "");
}

#[test]
fn fmt_check_unformatted() {
    check(
        "fmt-check-unformatted",
        &["fmt", "--check", "messy.gbnf"],
        "",
    );
}

#[test]
fn fmt_syntax_error() {
    check("fmt-syntax-error", &["fmt", "syntax-error.gbnf"], "");
}

#[test]
fn fmt_check_and_write_conflict() {
    check(
        "fmt-check-write-conflict",
        &["fmt", "--check", "--write", "messy.gbnf"],
        "",
    );
}

#[test]
fn match_strings() {
    check(
        "match-strings",
        &[
            "match",
            "greeting.gbnf",
            "hello World",
            "hi Bob!",
            "",
            "hi bob",
            "hello Zoë",
        ],
        "",
    );
}

#[test]
fn match_jsonl() {
    check(
        "match-jsonl",
        &["match", "greeting.gbnf", "--jsonl", "inputs.jsonl"],
        "",
    );
}

#[test]
fn match_jsonl_stdin_json() {
    check(
        "match-jsonl-stdin-json",
        &["match", "greeting.gbnf", "--jsonl", "-", "--json"],
        "\"hi Ann\"\n\"hi ann\"\n\"hi\"\n",
    );
}

#[test]
fn match_other_root() {
    check(
        "match-other-root",
        &["match", "greeting.gbnf", "--root", "name", "Ann", "ann"],
        "",
    );
}

#[test]
fn match_invalid_grammar() {
    check(
        "match-invalid-grammar",
        &["match", "undefined-rule.gbnf", "hello"],
        "",
    );
}

#[test]
fn match_bad_jsonl() {
    check(
        "match-bad-jsonl",
        &["match", "greeting.gbnf", "--jsonl", "-"],
        "\"ok\"\nnot json\n",
    );
}

#[test]
fn match_step_limit() {
    let long = format!("\"{}\"\n", "a".repeat(200));
    check(
        "match-step-limit",
        &["match", "ambiguous.gbnf", "--jsonl", "-", "--json"],
        &format!("\"aaaa\"\n{long}\"ab\"\n"),
    );
}

#[test]
fn match_max_steps() {
    let medium = "a".repeat(30);
    check(
        "match-max-steps",
        &[
            "match",
            "ambiguous.gbnf",
            "--max-steps",
            "20000",
            &medium,
            "aaa",
        ],
        "",
    );
}

#[test]
fn match_without_inputs() {
    check("match-without-inputs", &["match", "greeting.gbnf"], "");
}

/// `fmt --write` rewrites a copy of a messy file so that `fmt --check` passes on it, and the
/// rewritten grammar still matches what the original did.
#[test]
fn fmt_write_then_check() {
    let dir = std::env::temp_dir().join(format!("gbnf-cli-fmt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::copy(
        repo_root().join("tests/data/cli/messy.gbnf"),
        dir.join("messy.gbnf"),
    )
    .expect("copy");
    let transcripts = [
        run_in(&dir, &["fmt", "--write", "messy.gbnf"], ""),
        run_in(&dir, &["fmt", "--check", "messy.gbnf"], ""),
        run_in(&dir, &["match", "messy.gbnf", "1,x,22", "1,", "x;"], ""),
    ];
    let formatted = std::fs::read_to_string(dir.join("messy.gbnf")).expect("formatted file");
    std::fs::remove_dir_all(&dir).expect("cleanup");
    let transcript = format!(
        "{}--- messy.gbnf after --write ---\n{formatted}",
        transcripts.join("")
    );
    insta::with_settings!({
        snapshot_path => repo_root().join("snapshots/cli"),
        prepend_module_to_snapshot => false,
        omit_expression => true,
    }, {
        insta::assert_snapshot!("fmt-write-then-check", transcript);
    });
}
