//! The `gbnf` command: checks, formats and runs GBNF grammars in llama.cpp's dialect with the
//! `gbnf` crate's reader, validator, printer and matcher, so that a grammar can be tried
//! without loading a model. `gbnf parse` runs a PEG parser (`.peg` text) over model output
//! and prints the tagged AST as JSON, the other half of a parser definition's use.

use std::io::{BufRead, Read, Write};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

/// The reader builds the grammar as many small expressions, and `check` reads it twice: with
/// mimalloc they run about twice as fast as with glibc's allocator (`cargo bench -p gbnf
/// --bench read_print`, whose figures use it too).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const EXIT_CODES: &str = "Exit codes:
  0  success (for `match`: every input was evaluated, whatever the verdicts)
  1  the grammar is invalid, or `fmt --check` found an unformatted file
  2  usage error, or a file could not be read or written
  3  `match`: some input hit the step limit (its verdict is STEP-LIMIT); the others were
     evaluated and printed";

const TOP_EXIT_CODES: &str = "Exit codes:
  0  success (for `match`: every input was evaluated, whatever the verdicts)
  1  the grammar or parser is invalid, `fmt --check` found an unformatted file, or the input
     of `parse` does not match
  2  usage error, or a file could not be read or written
  3  `match`: some input hit the step limit (its verdict is STEP-LIMIT)";

const PARSE_EXIT_CODES: &str = "Exit codes:
  0  the input matches (with --partial: or is a viable prefix, `need_more`)
  1  the input does not match, or the parser file is invalid
  2  usage error, or a file could not be read";

/// Check, format and run GBNF grammars (llama.cpp's grammar dialect), and run PEG parsers.
#[derive(Debug, Parser)]
#[command(name = "gbnf", version, after_help = TOP_EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Read and validate a grammar as llama.cpp would load it.
    ///
    /// Errors are printed as `FILE:LINE:COLUMN: message`, warnings as
    /// `FILE:LINE:COLUMN: warning: message`, both on stderr.
    #[command(after_help = EXIT_CODES)]
    Check(CheckArgs),
    /// Print a grammar in canonical form: the start rule first, then rules in order of first
    /// reference, one rule per line.
    ///
    /// Comments and layout are not kept.
    #[command(after_help = EXIT_CODES)]
    Fmt(FmtArgs),
    /// Run a grammar on strings and print one verdict per input, in input order.
    ///
    /// Each line is `ACCEPT`, `PREFIX` (not complete, but can still be continued),
    /// `REJECT <byte offset>` (the first code point that cannot be accepted) or
    /// `STEP-LIMIT <byte offset>` (the matcher gave up there: see --max-steps), a tab, and
    /// the input as a JSON string. The grammar is validated first.
    #[command(after_help = EXIT_CODES)]
    Match(MatchArgs),
    /// Run a PEG parser (`.peg` text, or arena JSON) over stdin and print the tagged AST.
    ///
    /// The output is one pretty-printed JSON object: `{"outcome": "match" | "need_more" |
    /// "no_match", "end": BYTE, "ast": [NODE…], "message": {…}}` (message only with
    /// --message), where a NODE is `{"rule" | "tag": NAME, "start", "end", "text", "partial",
    /// "children": [NODE…]}`.
    ///
    /// With --stream N the input is fed to a chat stream N bytes at a time instead, and the
    /// output is one JSON line per chunk, `{"chunk", "delta"}` (an OpenAI-style message delta;
    /// `"held_back": true` when the chunk's parse would change emitted text), then
    /// `{"end": true, "delta", "message"}`.
    #[command(after_help = PARSE_EXIT_CODES)]
    Parse(ParseArgs),
}

#[derive(Debug, Args)]
struct CheckArgs {
    /// The grammar file (`-` reads stdin).
    file: String,
    /// The start rule.
    #[arg(long, default_value = "root")]
    root: String,
}

#[derive(Debug, Args)]
struct FmtArgs {
    /// The grammar file (`-` reads stdin).
    file: String,
    /// Print nothing; exit 1 when the file is not already formatted.
    #[arg(long, conflicts_with = "write")]
    check: bool,
    /// Rewrite the file in place instead of printing it.
    #[arg(long)]
    write: bool,
}

#[derive(Debug, Args)]
struct MatchArgs {
    /// The grammar file (`-` reads stdin).
    file: String,
    /// The strings to match (put `--` before them when one starts with `-`).
    #[arg(required_unless_present = "jsonl", conflicts_with = "jsonl")]
    strings: Vec<String>,
    /// Read the inputs from a file with one JSON string per line (`-` reads stdin).
    #[arg(long, value_name = "FILE")]
    jsonl: Option<String>,
    /// The start rule.
    #[arg(long, default_value = "root")]
    root: String,
    /// Print one JSON object per input: {"input", "verdict", "offset"}.
    #[arg(long)]
    json: bool,
    /// Give up on an input (verdict STEP-LIMIT) after this many matcher steps (Earley
    /// items made). The default grows with the input and the grammar, and only highly
    /// ambiguous grammars, whose matching is cubic, reach it; 0 means no limit.
    #[arg(long, value_name = "N")]
    max_steps: Option<u64>,
}

#[derive(Debug, Args)]
struct ParseArgs {
    /// The parser file; the input is read from stdin.
    file: String,
    /// The input may be the beginning of an output (a stream cut short): `need_more` is a
    /// success.
    #[arg(long, conflicts_with = "stream")]
    partial: bool,
    /// Also print the chat message (OpenAI shape) that the tagged nodes map to.
    #[arg(long, conflicts_with = "stream")]
    message: bool,
    /// Feed the input to a chat stream N bytes at a time and print the deltas.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    stream: Option<u32>,
}

/// Why a command failed: the exit code and the message for stderr.
#[derive(Debug)]
struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    fn invalid(message: String) -> Failure {
        Failure { code: 1, message }
    }

    fn io(message: String) -> Failure {
        Failure { code: 2, message }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Check(args) => check(&args),
        Command::Fmt(args) => fmt(&args),
        Command::Match(args) => run_match(&args),
        Command::Parse(args) => parse(&args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            if !failure.message.is_empty() {
                eprintln!("{}", failure.message);
            }
            ExitCode::from(failure.code)
        }
    }
}

fn check(args: &CheckArgs) -> Result<(), Failure> {
    let text = read_input(&args.file)?;
    let (grammar, _) = validate(&args.file, &text, &args.root)?;
    let n_rules = grammar.rules.len();
    let plural = if n_rules == 1 { "" } else { "s" };
    println!("{}: ok ({n_rules} rule{plural})", display_name(&args.file));
    Ok(())
}

fn fmt(args: &FmtArgs) -> Result<(), Failure> {
    let text = read_input(&args.file)?;
    let grammar = gbnf::read(&text)
        .map_err(|error| Failure::invalid(located(&args.file, &error, error.location)))?;
    let formatted = gbnf::print(&grammar);
    if args.check {
        if formatted != text {
            return Err(Failure::invalid(format!(
                "{}: not formatted",
                display_name(&args.file)
            )));
        }
        return Ok(());
    }
    if args.write {
        if args.file == "-" {
            return Err(Failure::io(
                "gbnf fmt: --write needs a file, not stdin".into(),
            ));
        }
        if formatted != text {
            std::fs::write(&args.file, &formatted)
                .map_err(|error| Failure::io(format!("{}: {error}", args.file)))?;
        }
        return Ok(());
    }
    write_stdout(formatted.as_bytes())
}

fn run_match(args: &MatchArgs) -> Result<(), Failure> {
    if args.file == "-" && args.jsonl.as_deref() == Some("-") {
        return Err(Failure::io(
            "gbnf match: the grammar and --jsonl cannot both be stdin".into(),
        ));
    }
    let text = read_input(&args.file)?;
    let (grammar, _) = validate(&args.file, &text, &args.root)?;
    let matcher = gbnf::Matcher::new(&grammar, &args.root)
        .map_err(|error| Failure::invalid(located(&args.file, &error, error.location)))?;
    let inputs = match &args.jsonl {
        Some(path) => read_jsonl(path)?,
        None => args.strings.clone(),
    };
    let mut out = String::new();
    let mut gave_up = 0;
    for input in &inputs {
        let limit = match args.max_steps {
            Some(0) => u64::MAX,
            Some(steps) => steps,
            None => matcher.default_step_limit(input.len()),
        };
        let verdict = matcher.verdict_within(input, limit);
        if matches!(verdict, gbnf::Verdict::StepLimit { .. }) {
            gave_up += 1;
        }
        if args.json {
            let line = serde_json::json!({
                "input": input,
                "verdict": verdict.name(),
                "offset": verdict.offset(),
            });
            out.push_str(&line.to_string());
        } else {
            out.push_str(&verdict.to_string());
            out.push('\t');
            out.push_str(&serde_json::Value::from(input.as_str()).to_string());
        }
        out.push('\n');
    }
    write_stdout(out.as_bytes())?;
    if gave_up > 0 {
        let plural = if gave_up == 1 { "" } else { "s" };
        return Err(Failure {
            code: 3,
            message: format!(
                "{}: {gave_up} input{plural} hit the step limit (the grammar is highly \
                 ambiguous there); --max-steps raises it, 0 removes it",
                display_name(&args.file)
            ),
        });
    }
    Ok(())
}

fn parse(args: &ParseArgs) -> Result<(), Failure> {
    if args.file == "-" {
        return Err(Failure::io(
            "gbnf parse: the input is read from stdin, so the parser must be a file".into(),
        ));
    }
    let source = read_input(&args.file)?;
    let mut input = Vec::new();
    std::io::stdin()
        .read_to_end(&mut input)
        .map_err(|error| Failure::io(format!("<stdin>: {error}")))?;
    let name = &args.file;
    if let Some(chunk_size) = args.stream {
        let chunk_size = usize::try_from(chunk_size).unwrap_or(usize::MAX);
        let report = schema2gbnf::peg_cmd::stream_with_peg(&source, &input, chunk_size)
            .map_err(|message| Failure::invalid(format!("{name}: {message}")))?;
        write_stdout(report.lines.as_bytes())?;
        return match report.error {
            None => Ok(()),
            Some(message) => Err(Failure::invalid(format!("<stdin>: {message}"))),
        };
    }
    let options = schema2gbnf::peg_cmd::ParseCmdOptions {
        partial: args.partial,
        message: args.message,
    };
    let report = schema2gbnf::peg_cmd::parse_with_peg(&source, &input, &options)
        .map_err(|message| Failure::invalid(format!("{name}: {message}")))?;
    write_stdout(report.text.as_bytes())?;
    match report.outcome {
        gbnf_peg::Outcome::Match => Ok(()),
        gbnf_peg::Outcome::NeedMore if args.partial => Ok(()),
        gbnf_peg::Outcome::NeedMore => Err(Failure::invalid(
            "<stdin>: the input is incomplete (pass --partial to accept a prefix)".into(),
        )),
        gbnf_peg::Outcome::NoMatch => Err(Failure::invalid(
            "<stdin>: the input does not match the parser".into(),
        )),
        // (`parse_with_peg` reports it as an error, with the rule.)
        gbnf_peg::Outcome::StepLimit => Err(Failure::invalid(
            "<stdin>: the parse gave up at its step limit".into(),
        )),
    }
}

/// Reads and validates the grammar, printing warnings; an error becomes a located failure.
fn validate(
    file: &str,
    text: &str,
    root: &str,
) -> Result<(gbnf::Grammar, Vec<gbnf::Warning>), Failure> {
    let (grammar, warnings) = gbnf::check(text, root)
        .map_err(|error| Failure::invalid(located(file, &error, error.location)))?;
    for warning in &warnings {
        // The warning's own Display puts its location first; here the file comes first.
        let unlocated = gbnf::Warning {
            kind: warning.kind.clone(),
            location: None,
        };
        match warning.location {
            Some(location) => eprintln!("{}:{location}: warning: {unlocated}", display_name(file)),
            None => eprintln!("{}: warning: {unlocated}", display_name(file)),
        }
    }
    Ok((grammar, warnings))
}

/// `FILE:LINE:COLUMN: message`, or `FILE: message` without a location.
fn located(file: &str, error: &gbnf::Error, location: Option<gbnf::Location>) -> String {
    match location {
        Some(_) => format!("{}:{error}", display_name(file)),
        None => format!("{}: {error}", display_name(file)),
    }
}

fn display_name(file: &str) -> &str {
    if file == "-" {
        "<stdin>"
    } else {
        file
    }
}

fn read_input(file: &str) -> Result<String, Failure> {
    if file == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|error| Failure::io(format!("<stdin>: {error}")))?;
        return Ok(text);
    }
    std::fs::read_to_string(file).map_err(|error| Failure::io(format!("{file}: {error}")))
}

/// The strings of a file with one JSON string per line; blank lines are skipped.
fn read_jsonl(path: &str) -> Result<Vec<String>, Failure> {
    let name = display_name(path);
    let lines: Vec<String> = if path == "-" {
        std::io::stdin()
            .lock()
            .lines()
            .collect::<Result<_, _>>()
            .map_err(|error| Failure::io(format!("{name}: {error}")))?
    } else {
        let text = std::fs::read_to_string(path)
            .map_err(|error| Failure::io(format!("{name}: {error}")))?;
        text.lines().map(str::to_owned).collect()
    };
    let mut inputs = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let input: String = serde_json::from_str(line).map_err(|error| {
            Failure::io(format!(
                "{name}:{}: expected a JSON string: {error}",
                index + 1
            ))
        })?;
        inputs.push(input);
    }
    Ok(inputs)
}

fn write_stdout(bytes: &[u8]) -> Result<(), Failure> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        // A reader that stops early (`| head`) is not an error.
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(error) => Err(Failure::io(format!("<stdout>: {error}"))),
    }
}
