//! `cargo xtask llama-compat`: runs every grammar we ship (`grammars/`, with the samples of
//! its source in `tests/data/grammars/`) or snapshot (`snapshots/**/*.snap`, standard format)
//! through real llama.cpp, and compares llama.cpp's verdicts with ours.
//!
//! llama.cpp is node-llama-cpp's prebuilt addon (version pinned in
//! `xtask/llama-compat/package.json`), driven by our harness `xtask/llama-compat/harness.mjs`
//! (byte-level vocabulary, one long-lived worker, a time limit per grammar). The packages are
//! installed on demand into `xtask/llama-compat/node_modules` (git-ignored), without install
//! scripts and without downloading or building anything else.
//!
//! What must hold: llama.cpp loads a grammar exactly when our validator accepts it (a
//! snapshot may show a grammar both refuse, for example to pin the matcher's answer on left
//! recursion; that counts as agreement and its samples cannot be compared; shipped grammars
//! must load), and every sample of a loaded grammar gets the same verdict as ours (`ACCEPT`,
//! `PREFIX`, or `REJECT` at the same offset). llama.cpp feeds bytes and
//! may refuse a byte in the middle of a multi-byte code point; our matcher works per code
//! point, so llama.cpp's offset is moved back to the start of its code point before comparing.
//!
//! Skipped, and counted in the summary: samples containing U+0000 (llama.cpp's sampler never
//! allows a token whose text starts with a NUL byte, whatever the grammar says), and grammars
//! with token elements (`<[id]>`, `<text>`: their ids and texts mean nothing with a byte
//! vocabulary).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::snapshot::{self, Verdict};
use crate::{display_path, files_with_suffix};

/// The harness directory, relative to the repository root.
pub const HARNESS_DIR: &str = "xtask/llama-compat";

#[derive(Clone, Debug)]
pub struct Options {
    /// The time llama.cpp gets for one grammar and all of its samples.
    pub timeout_seconds: f64,
    /// Keep only the grammars whose source (path) contains this text.
    pub only: Option<String>,
    /// Take the cases from this JSONL file (see [`collect_file`]) instead of the repository.
    pub cases: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            timeout_seconds: 60.0,
            only: None,
            cases: None,
        }
    }
}

/// A grammar to load in llama.cpp, with the samples whose verdicts we know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// Where it comes from, for messages (`path` or `path:line`).
    pub source: String,
    pub root: String,
    pub grammar: String,
    /// Each sample with our verdict.
    pub samples: Vec<(String, Verdict)>,
    /// Why our validator refuses the grammar, if it does.
    pub our_error: Option<String>,
}

/// The cases found in the repository, and what was left out.
#[derive(Clone, Debug, Default)]
pub struct Collection {
    pub cases: Vec<Case>,
    /// Problems on our side (unreadable files, snapshots in a broken format, grammars our
    /// reader refuses), each a located message; they fail the run like disagreements.
    pub problems: Vec<String>,
    pub skipped_nul_samples: usize,
    pub skipped_token_grammars: usize,
}

/// The outcome of a run.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub grammars: usize,
    pub samples: usize,
    /// Grammars that llama.cpp and our validator both refuse (an agreement: their samples
    /// cannot be compared).
    pub refused_by_both: usize,
    /// Each disagreement or problem, one located message each.
    pub disagreements: Vec<String>,
}

/// Installs the pinned node-llama-cpp into `HARNESS_DIR/node_modules` unless it is there.
pub fn install(root: &Path) -> Result<(), String> {
    let dir = root.join(HARNESS_DIR);
    let pinned = pinned_version(&dir)?;
    if installed_version_ok(&dir, &pinned) {
        return Ok(());
    }
    eprintln!("llama-compat: installing node-llama-cpp {pinned} into {HARNESS_DIR}/node_modules");
    let status = Command::new("npm")
        .args([
            "install",
            "--omit=optional",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
        ])
        .current_dir(&dir)
        .env("NODE_LLAMA_CPP_SKIP_DOWNLOAD", "true")
        .status()
        .map_err(|error| format!("cannot run npm (node >= 20 and npm are needed): {error}"))?;
    if !status.success() {
        return Err(format!("npm install failed in {HARNESS_DIR} ({status})"));
    }
    if !installed_version_ok(&dir, &pinned) {
        return Err(format!(
            "npm install finished but node-llama-cpp {pinned} and its linux-x64 binary are not in {HARNESS_DIR}/node_modules"
        ));
    }
    Ok(())
}

/// Collects every case: the shipped grammars with their samples, then every snapshot grammar.
pub fn collect(root: &Path) -> Collection {
    let mut collection = Collection::default();
    collect_shipped(root, &mut collection);
    collect_snapshots(root, &mut collection);
    collection
}

/// Collects the cases of a JSONL file, one grammar a line: `{"source", "root", "grammar",
/// "samples": [[text, verdict], …]}` with our verdicts (`ACCEPT`, `PREFIX`, `REJECT <offset>`),
/// as the corpora bench writes them (`CORPORA_LLAMA`).
pub fn collect_file(path: &Path) -> Collection {
    let mut collection = Collection::default();
    let name = path.display();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) => {
            collection.problems.push(format!("{name}: {error}"));
            return collection;
        }
    };
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("{name}:{}", index + 1);
        match case_of_line(line) {
            Ok(case) => {
                let has_tokens =
                    gbnf::read(&case.grammar).is_ok_and(|grammar| has_token_elements(&grammar));
                push_case(&mut collection, case, has_tokens);
            }
            Err(error) => collection.problems.push(format!("{at}: {error}")),
        }
    }
    collection
}

fn case_of_line(line: &str) -> Result<Case, String> {
    let value: serde_json::Value = serde_json::from_str(line).map_err(|error| error.to_string())?;
    let field = |key: &str| {
        value[key]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("no string {key:?}"))
    };
    let (source, root, grammar) = (field("source")?, field("root")?, field("grammar")?);
    let mut samples = Vec::new();
    for sample in value["samples"].as_array().ok_or("no \"samples\" list")? {
        let pair = sample.as_array().filter(|pair| pair.len() == 2);
        let (text, verdict) = match pair.map(|pair| (pair[0].as_str(), pair[1].as_str())) {
            Some((Some(text), Some(verdict))) => (text, verdict),
            _ => return Err(format!("{source}: a sample is not [text, verdict]")),
        };
        let verdict = Verdict::parse(verdict)
            .ok_or_else(|| format!("{source}: unknown verdict {verdict:?}"))?;
        samples.push((text.to_owned(), verdict));
    }
    let our_error = gbnf::check(&grammar, &root)
        .err()
        .map(|error| error.to_string());
    Ok(Case {
        source,
        root,
        grammar,
        samples,
        our_error,
    })
}

/// Runs the cases through llama.cpp and compares; `problems` from [`collect`] are included.
pub fn run(root: &Path, collection: &Collection, options: &Options) -> Result<Report, String> {
    let results = run_harness(root, &collection.cases, options)?;
    let mut report = Report {
        grammars: collection.cases.len(),
        disagreements: collection.problems.clone(),
        ..Report::default()
    };
    for (case, result) in collection.cases.iter().zip(&results) {
        compare(case, result, &mut report);
    }
    Ok(report)
}

/// One line of the harness's output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LlamaResult {
    Verdicts(Vec<Verdict>),
    /// llama.cpp refuses the grammar, with its message.
    Refused(String),
    /// llama.cpp timed out or crashed: the message says which.
    Failed(String),
}

/// Sends every case to the harness and reads its answers, in order.
pub fn run_harness(
    root: &Path,
    cases: &[Case],
    options: &Options,
) -> Result<Vec<LlamaResult>, String> {
    let dir = root.join(HARNESS_DIR);
    let mut input = String::new();
    for (id, case) in cases.iter().enumerate() {
        let strings: Vec<&str> = case.samples.iter().map(|(text, _)| text.as_str()).collect();
        let record = serde_json::json!({
            "id": id,
            "grammar": case.grammar,
            "root": case.root,
            "strings": strings,
        });
        input.push_str(&record.to_string());
        input.push('\n');
    }
    let mut child = Command::new("node")
        .arg("harness.mjs")
        .arg("--timeout")
        .arg(options.timeout_seconds.to_string())
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|error| format!("cannot run node: {error}"))?;
    let mut stdin = child.stdin.take().ok_or("the harness has no stdin")?;
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let stdout = child.stdout.take().ok_or("the harness has no stdout")?;
    let mut results = Vec::with_capacity(cases.len());
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(|error| format!("reading the harness's output: {error}"))?;
        if line.trim().is_empty() {
            continue;
        }
        results.push(parse_result(&line, results.len())?);
    }
    let status = child
        .wait()
        .map_err(|error| format!("waiting for the harness: {error}"))?;
    match writer.join() {
        Ok(Ok(())) => {}
        Ok(Err(error)) => return Err(format!("writing to the harness: {error}")),
        Err(_) => return Err("the thread writing to the harness panicked".into()),
    }
    if !status.success() || results.len() != cases.len() {
        return Err(format!(
            "the harness answered {} of {} grammars ({status})",
            results.len(),
            cases.len()
        ));
    }
    Ok(results)
}

/// `offset` moved back to the start of the code point of `text` it falls in.
pub fn code_point_start(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

fn parse_result(line: &str, expected_id: usize) -> Result<LlamaResult, String> {
    let bad = || format!("unexpected harness output: {line}");
    let value: serde_json::Value = serde_json::from_str(line).map_err(|_| bad())?;
    if value["id"].as_u64() != Some(expected_id as u64) {
        return Err(bad());
    }
    let status = value["status"].as_str().ok_or_else(bad)?;
    if status != "ok" {
        let error = value["error"].as_str().unwrap_or("no message").to_owned();
        return Ok(match status {
            "grammar_error" => LlamaResult::Refused(error),
            "timeout" => LlamaResult::Failed(format!("llama.cpp timed out: {error}")),
            _ => LlamaResult::Failed(format!("llama.cpp crashed: {error}")),
        });
    }
    let verdicts = value["verdicts"].as_array().ok_or_else(bad)?;
    let verdicts = verdicts
        .iter()
        .map(|verdict| verdict.as_str().and_then(Verdict::parse))
        .collect::<Option<Vec<Verdict>>>()
        .ok_or_else(bad)?;
    Ok(LlamaResult::Verdicts(verdicts))
}

/// Adds `case`'s outcome to `report`: whether the grammar loads must agree between llama.cpp
/// and our validator, and when it loads, every sample's verdict must agree.
fn compare(case: &Case, result: &LlamaResult, report: &mut Report) {
    let disagreements = &mut report.disagreements;
    let verdicts = match (result, &case.our_error) {
        (LlamaResult::Failed(message), _) => {
            disagreements.push(format!("{}: {message}", case.source));
            return;
        }
        (LlamaResult::Refused(_), Some(_)) => {
            report.refused_by_both += 1;
            return;
        }
        (LlamaResult::Refused(message), None) => {
            disagreements.push(format!(
                "{}: llama.cpp refuses the grammar ({message}), our validator accepts it",
                case.source
            ));
            return;
        }
        (LlamaResult::Verdicts(verdicts), our_error) => {
            if let Some(our_error) = our_error {
                disagreements.push(format!(
                    "{}: llama.cpp loads the grammar, our validator refuses it ({our_error})",
                    case.source
                ));
            }
            if verdicts.len() != case.samples.len() {
                disagreements.push(format!(
                    "{}: llama.cpp gave {} verdicts for {} samples",
                    case.source,
                    verdicts.len(),
                    case.samples.len()
                ));
                return;
            }
            verdicts
        }
    };
    report.samples += case.samples.len();
    for ((text, ours), theirs) in case.samples.iter().zip(verdicts) {
        let theirs = match *theirs {
            Verdict::Reject(offset) => Verdict::Reject(code_point_start(text, offset)),
            other => other,
        };
        if *ours != theirs {
            let sample = serde_json::Value::from(text.as_str());
            disagreements.push(format!(
                "{}: sample {sample}: ours {ours}, llama.cpp {theirs}",
                case.source
            ));
        }
    }
}

fn collect_shipped(root: &Path, collection: &mut Collection) {
    let grammar_dir = root.join(crate::codegen::OUTPUT_DIR);
    let files = match files_with_suffix(&grammar_dir, ".gbnf") {
        Ok(files) => files,
        Err(error) => {
            collection
                .problems
                .push(format!("{}: {error}", crate::codegen::OUTPUT_DIR));
            return;
        }
    };
    for path in files {
        let source = display_path(root, &path);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) => {
                collection.problems.push(format!("{source}: {error}"));
                continue;
            }
        };
        let grammar = match gbnf::check(&text, "root") {
            Ok((grammar, _warnings)) => grammar,
            Err(error) => {
                collection
                    .problems
                    .push(crate::located(&source, &error, error.location.is_some()));
                continue;
            }
        };
        let matcher = match gbnf::Matcher::new(&grammar, "root") {
            Ok(matcher) => matcher,
            Err(error) => {
                collection
                    .problems
                    .push(format!("{source}: our matcher refuses it: {error}"));
                continue;
            }
        };
        let stem = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let mut samples = Vec::new();
        for kind in ["accept", "prefix", "reject"] {
            let sample_path = root
                .join(crate::codegen::SOURCE_DIR)
                .join(format!("{stem}.{kind}.jsonl"));
            match read_samples(&sample_path) {
                Ok(texts) => samples.extend(texts),
                Err(error) => collection
                    .problems
                    .push(format!("{}: {error}", display_path(root, &sample_path))),
            }
        }
        let mut case = Case {
            source,
            root: "root".into(),
            grammar: text,
            samples: Vec::new(),
            our_error: None,
        };
        for text in samples {
            let ours = our_verdict(&matcher, &text);
            case.samples.push((text, ours));
        }
        push_case(collection, case, false);
    }
}

fn collect_snapshots(root: &Path, collection: &mut Collection) {
    let snapshot_dir = root.join("snapshots");
    if !snapshot_dir.exists() {
        return;
    }
    let files = match files_with_suffix(&snapshot_dir, ".snap") {
        Ok(files) => files,
        Err(error) => {
            collection.problems.push(format!("snapshots: {error}"));
            return;
        }
    };
    for path in files {
        let name = display_path(root, &path);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) => {
                collection.problems.push(format!("{name}: {error}"));
                continue;
            }
        };
        let sections = match snapshot::parse(&text) {
            Ok(sections) => sections,
            Err(error) => {
                collection.problems.push(format!("{name}:{error}"));
                continue;
            }
        };
        for section in sections {
            let has_tokens =
                gbnf::read(&section.grammar).is_ok_and(|grammar| has_token_elements(&grammar));
            let our_error = gbnf::check(&section.grammar, &section.root)
                .err()
                .map(|error| error.to_string());
            let case = Case {
                source: format!("{name}:{}", section.line),
                root: section.root,
                grammar: section.grammar,
                samples: section
                    .samples
                    .into_iter()
                    .map(|(verdict, text)| (text, verdict))
                    .collect(),
                our_error,
            };
            push_case(collection, case, has_tokens);
        }
    }
}

/// Adds `case` minus the samples llama.cpp cannot judge, or counts it as skipped.
fn push_case(collection: &mut Collection, mut case: Case, has_tokens: bool) {
    if has_tokens {
        collection.skipped_token_grammars += 1;
        return;
    }
    let before = case.samples.len();
    case.samples.retain(|(text, _)| !text.contains('\0'));
    collection.skipped_nul_samples += before - case.samples.len();
    collection.cases.push(case);
}

/// Our matcher's verdict, without a step limit: the grammars here are ours and the
/// comparison needs an answer.
fn our_verdict(matcher: &gbnf::Matcher, text: &str) -> Verdict {
    match matcher.verdict_within(text, u64::MAX) {
        gbnf::Verdict::Accept => Verdict::Accept,
        gbnf::Verdict::Prefix => Verdict::Prefix,
        gbnf::Verdict::Reject { offset } | gbnf::Verdict::StepLimit { offset } => {
            Verdict::Reject(offset)
        }
    }
}

/// The strings of a JSONL sample file (a missing file is an empty list).
fn read_samples(path: &PathBuf) -> Result<Vec<String>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error.to_string()),
    };
    let mut samples = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let sample: String = serde_json::from_str(line)
            .map_err(|error| format!("line {}: not a JSON string: {error}", index + 1))?;
        samples.push(sample);
    }
    Ok(samples)
}

fn has_token_elements(grammar: &gbnf::Grammar) -> bool {
    let mut pending: Vec<&gbnf::Expr> = grammar.rules.values().collect();
    while let Some(expr) = pending.pop() {
        match expr {
            gbnf::Expr::Token(_) => return true,
            gbnf::Expr::Seq(items) | gbnf::Expr::Alt(items) => pending.extend(items),
            gbnf::Expr::Repeat { expr, .. } => pending.push(expr),
            _ => {}
        }
    }
    false
}

/// The version `package.json` pins for node-llama-cpp.
fn pinned_version(dir: &Path) -> Result<String, String> {
    let path = dir.join("package.json");
    let text =
        std::fs::read_to_string(&path).map_err(|error| format!("{}: {error}", path.display()))?;
    let manifest: serde_json::Value =
        serde_json::from_str(&text).map_err(|error| format!("{}: {error}", path.display()))?;
    manifest["dependencies"]["node-llama-cpp"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("{}: no node-llama-cpp dependency", path.display()))
}

fn installed_version_ok(dir: &Path, pinned: &str) -> bool {
    let modules = dir.join("node_modules");
    let version_of = |package: &str| -> Option<String> {
        let text = std::fs::read_to_string(modules.join(package).join("package.json")).ok()?;
        let manifest: serde_json::Value = serde_json::from_str(&text).ok()?;
        manifest["version"].as_str().map(str::to_owned)
    };
    let addon = modules.join("@node-llama-cpp/linux-x64/bins/linux-x64/llama-addon.node");
    version_of("node-llama-cpp").as_deref() == Some(pinned)
        && version_of("@node-llama-cpp/linux-x64").as_deref() == Some(pinned)
        && addon.exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_move_back_to_the_code_point() {
        assert_eq!(code_point_start("aé", 1), 1);
        assert_eq!(code_point_start("aé", 2), 1);
        assert_eq!(code_point_start("a😀b", 4), 1);
        assert_eq!(code_point_start("a😀b", 5), 5);
    }

    #[test]
    fn harness_lines_parse() {
        let line = r#"{"id":0,"status":"ok","verdicts":["ACCEPT","REJECT 4","PREFIX"]}"#;
        assert_eq!(
            parse_result(line, 0),
            Ok(LlamaResult::Verdicts(vec![
                Verdict::Accept,
                Verdict::Reject(4),
                Verdict::Prefix
            ]))
        );
        let line = r#"{"id":1,"status":"grammar_error","error":"Undefined rule identifier 'foo'"}"#;
        assert_eq!(
            parse_result(line, 1),
            Ok(LlamaResult::Refused(
                "Undefined rule identifier 'foo'".into()
            ))
        );
        assert!(parse_result(line, 2).is_err());
    }

    fn case(samples: Vec<(String, Verdict)>, our_error: Option<&str>) -> Case {
        Case {
            source: "x".into(),
            root: "root".into(),
            grammar: String::new(),
            samples,
            our_error: our_error.map(str::to_owned),
        }
    }

    fn disagreements(case: &Case, result: LlamaResult) -> Report {
        let mut report = Report::default();
        compare(case, &result, &mut report);
        report
    }

    #[test]
    fn comparison_maps_mid_code_point_rejections() {
        let samples = vec![
            ("é".into(), Verdict::Reject(0)),
            ("a".into(), Verdict::Accept),
        ];
        let report = disagreements(
            &case(samples, None),
            LlamaResult::Verdicts(vec![Verdict::Reject(1), Verdict::Prefix]),
        );
        assert_eq!(
            report.disagreements,
            [r#"x: sample "a": ours ACCEPT, llama.cpp PREFIX"#]
        );
        assert_eq!(report.samples, 2);
    }

    #[test]
    fn loading_must_agree_with_our_validator() {
        let refused = LlamaResult::Refused("left recursion".into());
        let report = disagreements(
            &case(Vec::new(), Some("1:1: left recursion: a -> a")),
            refused.clone(),
        );
        assert_eq!((report.refused_by_both, report.disagreements.len()), (1, 0));
        let report = disagreements(&case(Vec::new(), None), refused);
        assert_eq!(
            report.disagreements,
            ["x: llama.cpp refuses the grammar (left recursion), our validator accepts it"]
        );
        let report = disagreements(
            &case(Vec::new(), Some("oops")),
            LlamaResult::Verdicts(Vec::new()),
        );
        assert_eq!(
            report.disagreements,
            ["x: llama.cpp loads the grammar, our validator refuses it (oops)"]
        );
    }

    #[test]
    fn case_files_are_read_with_located_problems() {
        let dir = std::env::temp_dir().join(format!("llama-compat-cases-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("cases.jsonl");
        let lines = [
            r#"{"source":"s/a","root":"root","grammar":"root ::= \"a\"","samples":[["a","ACCEPT"],["","PREFIX"],["b","REJECT 0"],["\u0000","REJECT 0"]]}"#,
            "",
            r#"{"source":"s/b","root":"root","grammar":"root ::= x","samples":[]}"#,
            r#"{"source":"s/c","root":"root","grammar":"root ::= \"c\"","samples":[["c","MAYBE"]]}"#,
            "not json",
        ];
        std::fs::write(&path, lines.join("\n")).expect("write");
        let collection = collect_file(&path);
        std::fs::remove_dir_all(&dir).ok();
        let sources: Vec<&str> = collection.cases.iter().map(|c| c.source.as_str()).collect();
        assert_eq!(sources, ["s/a", "s/b"]);
        let a = &collection.cases[0];
        assert_eq!(
            a.samples,
            [
                ("a".to_owned(), Verdict::Accept),
                (String::new(), Verdict::Prefix),
                ("b".to_owned(), Verdict::Reject(0)),
            ]
        );
        assert_eq!(
            (a.our_error.as_deref(), collection.skipped_nul_samples),
            (None, 1)
        );
        // Our validator's verdict on the grammar travels with the case.
        assert!(collection.cases[1].our_error.is_some());
        assert_eq!(collection.problems.len(), 2, "{:?}", collection.problems);
        assert!(collection.problems[0].ends_with(":4: s/c: unknown verdict \"MAYBE\""));
        assert!(collection.problems[1].contains("cases.jsonl:5: "));
    }
}
