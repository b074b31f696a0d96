//! Project automation, run as `cargo xtask <command>` (see `.cargo/config.toml`).
//!
//! Exit codes: 0 success, 1 a check failed (untidy, stale, disagreement), 2 usage or
//! environment error.

use std::process::ExitCode;

use xtask::{codegen, llama_compat, readme, repo_root, tidy};

const USAGE: &str = "usage: cargo xtask <command>

commands:
  tidy                        check repository rules (every .rs file starts with `//!`, the
                              README's generated figures are current)
  readme                      rewrite the README's JSON Schema Test Suite figures from
                              tests/data/jsts/baseline.tsv
  codegen [--check]           print tests/data/grammars/*.gbnf into grammars/ (--check: only
                              report stale files)
  llama-compat [--timeout S] [--only TEXT] [--cases FILE]
                              run every shipped and snapshot grammar through llama.cpp
                              (node-llama-cpp, installed on demand) and compare verdicts;
                              S = seconds per grammar (default 60); --only keeps the grammars
                              whose source path contains TEXT; --cases takes the grammars
                              and samples of FILE instead (JSONL, as the corpora bench's
                              CORPORA_LLAMA and the JSTS test's JSTS_LLAMA write them)

exit codes: 0 success, 1 check failed, 2 usage or environment error";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["tidy"] => run_tidy(),
        ["readme"] => run_readme(),
        ["codegen"] => run_codegen(false),
        ["codegen", "--check"] => run_codegen(true),
        ["llama-compat", rest @ ..] => match llama_compat_options(rest) {
            Ok(options) => run_llama_compat(options),
            Err(message) => usage_error(&message),
        },
        ["help" | "--help" | "-h"] => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => usage_error(&format!("unknown arguments {args:?}")),
    }
}

fn llama_compat_options(args: &[&str]) -> Result<llama_compat::Options, String> {
    let mut options = llama_compat::Options::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match *arg {
            "--timeout" => {
                let seconds = args.next().ok_or("--timeout needs a value")?;
                options.timeout_seconds = seconds
                    .parse::<f64>()
                    .ok()
                    .filter(|seconds| *seconds > 0.0)
                    .ok_or_else(|| {
                        format!("--timeout needs a positive number of seconds, not {seconds:?}")
                    })?;
            }
            "--only" => {
                let filter = args.next().ok_or("--only needs a value")?;
                options.only = Some((*filter).to_owned());
            }
            "--cases" => {
                let path = args.next().ok_or("--cases needs a file")?;
                options.cases = Some(path.into());
            }
            other => return Err(format!("unknown llama-compat argument {other:?}")),
        }
    }
    Ok(options)
}

fn usage_error(message: &str) -> ExitCode {
    eprintln!("xtask: {message}\n\n{USAGE}");
    ExitCode::from(2)
}

fn run_readme() -> ExitCode {
    let root = repo_root();
    let read = |path: &str| std::fs::read_to_string(root.join(path));
    let (readme, baseline) = match (read("README.md"), read("tests/data/jsts/baseline.tsv")) {
        (Ok(readme), Ok(baseline)) => (readme, baseline),
        (Err(error), _) | (_, Err(error)) => {
            eprintln!("readme: {error}");
            return ExitCode::from(2);
        }
    };
    match readme::render(&readme, &baseline) {
        Ok(rendered) if rendered == readme => {
            println!("readme: up to date");
            ExitCode::SUCCESS
        }
        Ok(rendered) => match std::fs::write(root.join("README.md"), rendered) {
            Ok(()) => {
                println!("readme: rewrote the JSON Schema Test Suite figures");
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("readme: {error}");
                ExitCode::from(2)
            }
        },
        Err(message) => {
            eprintln!("readme: README.md: {message}");
            ExitCode::from(1)
        }
    }
}

fn run_tidy() -> ExitCode {
    match tidy::check(&repo_root()) {
        Ok(problems) if problems.is_empty() => {
            println!("tidy: ok");
            ExitCode::SUCCESS
        }
        Ok(problems) => {
            for problem in &problems {
                eprintln!("{problem}");
            }
            eprintln!("tidy: {} problems", problems.len());
            ExitCode::from(1)
        }
        Err(error) => {
            eprintln!("tidy: {error}");
            ExitCode::from(2)
        }
    }
}

fn run_codegen(check_only: bool) -> ExitCode {
    let root = repo_root();
    let generated = match codegen::generate(&root) {
        Ok(generated) => generated,
        Err(errors) => {
            for error in &errors {
                eprintln!("{error}");
            }
            eprintln!("codegen: {} grammar sources have errors", errors.len());
            return ExitCode::from(1);
        }
    };
    for warning in generated.iter().flat_map(|file| &file.warnings) {
        eprintln!("warning: {warning}");
    }
    let outcome = if check_only {
        codegen::stale(&root, &generated)
    } else {
        codegen::write(&root, &generated)
    };
    match outcome {
        Ok(files) if check_only && !files.is_empty() => {
            for file in &files {
                eprintln!("{file}");
            }
            eprintln!("codegen: grammars/ is stale; run `cargo xtask codegen`");
            ExitCode::from(1)
        }
        Ok(files) => {
            for file in &files {
                println!("updated {file}");
            }
            println!(
                "codegen: {} grammars, {} files changed",
                generated.len(),
                files.len()
            );
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("codegen: {error}");
            ExitCode::from(2)
        }
    }
}

fn run_llama_compat(options: llama_compat::Options) -> ExitCode {
    let root = repo_root();
    let started = std::time::Instant::now();
    if let Err(error) = llama_compat::install(&root) {
        eprintln!("llama-compat: {error}");
        return ExitCode::from(2);
    }
    let mut collection = match &options.cases {
        Some(path) => llama_compat::collect_file(path),
        None => llama_compat::collect(&root),
    };
    if let Some(only) = &options.only {
        collection
            .cases
            .retain(|case| case.source.contains(only.as_str()));
        collection
            .problems
            .retain(|problem| problem.contains(only.as_str()));
    }
    let report = match llama_compat::run(&root, &collection, &options) {
        Ok(report) => report,
        Err(error) => {
            eprintln!("llama-compat: {error}");
            return ExitCode::from(2);
        }
    };
    for disagreement in &report.disagreements {
        println!("{disagreement}");
    }
    println!(
        "llama-compat: {} grammars, {} samples, {} disagreements ({} grammars refused by llama.cpp and our validator alike; {} samples with U+0000 and {} grammars with token elements skipped; {:.1} s)",
        report.grammars,
        report.samples,
        report.disagreements.len(),
        report.refused_by_both,
        collection.skipped_nul_samples,
        collection.skipped_token_grammars,
        started.elapsed().as_secs_f64()
    );
    if report.disagreements.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
