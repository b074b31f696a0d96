//! `schema2gbnf`: compiles a JSON Schema (a file, stdin, or a JSONL batch) into a GBNF grammar
//! for llama.cpp's grammar sampler. The flags follow llama.cpp's
//! `examples/json_schema_to_grammar.py` where they make sense.
//!
//! `schema2gbnf peg FILE` lowers a PEG parser definition (`.peg` text or arena JSON) to GBNF
//! instead, optionally lazy (only the trigger rules, for llama.cpp's lazy grammars).
//!
//! Exit codes: 0 success; 1 a schema or parser is invalid or unsupported (in `--batch`: at
//! least one line failed); 2 usage or IO error.

use std::fs;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, Parser, Subcommand, ValueEnum};
use gbnf_json_schema::{compile, ErrorKind, Options, PropertyOrder, Whitespace};
use serde_json::{json, Map, Value};

use schema2gbnf::local_refs::LocalRefs;
use schema2gbnf::peg_cmd::{peg_to_gbnf, PegGbnfOptions};

/// The compiler builds many small expression trees and drops most of them: mimalloc makes a
/// large schema's compile about a fifth cheaper than glibc's allocator (README, Benchmarks).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use schema2gbnf::strict::check_strict;

const EXIT_SCHEMA: u8 = 1;
const EXIT_USAGE: u8 = 2;

/// Compile a JSON Schema (or, with `peg`, a PEG parser) into a GBNF grammar (start rule `root`).
///
/// Exit codes: 0 ok; 1 the schema or parser is invalid or unsupported (with --batch: some line
/// failed); 2 usage or IO error.
#[derive(Debug, Parser)]
#[command(
    name = "schema2gbnf",
    version,
    about = "Compile a JSON Schema into a GBNF grammar for llama.cpp (start rule `root`); `schema2gbnf peg FILE` lowers a PEG parser instead",
    long_about = None,
    args_conflicts_with_subcommands = true,
    after_help = "Exit codes: 0 ok; 1 the schema or parser is invalid or unsupported (with --batch: some line failed); 2 usage or IO error.\n\
                  --allow-fetch (json_schema_to_grammar.py) is not supported: nothing is fetched; remote $refs are errors, unless --refs DIR has them.\n\
                  A schema file named `peg` must be given as `./peg`."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,

    /// The schema file; `-` or nothing reads stdin.
    schema: Option<String>,

    /// Write the grammar here instead of stdout (with --batch: the JSONL results).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: Option<PathBuf>,

    /// Compile every line `{"id": …, "schema": …}` of this JSONL file (`-` = stdin); print one
    /// result line per input line, in order: `{"id","grammar","ms"}` or `{"id","error"}`.
    /// `ms` is the time to compile the schema and print its grammar, in this process.
    #[arg(long, value_name = "IN.jsonl", conflicts_with = "schema")]
    batch: Option<String>,

    /// Comma-separated property names that come first, in this order, in every object
    /// (the others follow in schema order), as in json_schema_to_grammar.py.
    #[arg(long, value_name = "a,b,c", value_delimiter = ',')]
    prop_order: Vec<String>,

    /// Accept the properties of every object in any order (default: schema order). Objects
    /// with more properties than --max-any-order are an error.
    #[arg(long)]
    any_order: bool,

    /// The most properties an object may have under --any-order (the grammar grows with
    /// the number of orders); at most 15 whatever N is.
    #[arg(long, value_name = "N", default_value_t = Options::default().max_any_order_properties)]
    max_any_order: usize,

    /// `.` in patterns also matches line breaks.
    #[arg(long)]
    dotall: bool,

    /// Patterns match the raw string content, without JSON string escaping.
    #[arg(long)]
    raw_pattern: bool,

    /// Not supported: schema2gbnf never uses the network. Remote `$ref`s are errors.
    #[arg(long, hide = true)]
    allow_fetch: bool,

    /// Resolve remote `$ref`s from the `.json` files under this directory: a reference
    /// names a file by its `$id`, or else by its file name (the URI's last path segment).
    /// Files are read when a reference needs them (with --batch, all of them first); one
    /// that is not JSON is reported on stderr when read. Nothing is fetched.
    #[arg(long, value_name = "DIR")]
    refs: Option<PathBuf>,

    /// Whitespace allowed between JSON tokens.
    #[arg(long, value_enum, default_value_t = WhitespaceArg::Bounded)]
    whitespace: WhitespaceArg,

    /// Turn unsupported keywords into warnings (JSON lines on stderr with pointer and keyword)
    /// instead of errors; the grammar then accepts more than the schema allows.
    #[arg(long)]
    lenient: bool,

    /// Check OpenAI Structured Outputs strict-mode rules first; a violation is an error (exit 1).
    #[arg(long)]
    strict: bool,

    /// What a missing `additionalProperties` means: `true` follows the JSON Schema spec,
    /// `false` follows llama.cpp's converter (no extra properties).
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    additional_properties_default: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Lower a PEG parser (`.peg` text, or arena JSON) to a GBNF grammar (start rule `root`).
    ///
    /// Warnings go to stderr; with --lazy, so do the trigger rules, as
    /// `triggers: tool-call, …` (pair them with the trigger words of llama.cpp's lazy grammars).
    /// Errors are printed as `FILE: message`.
    #[command(
        after_help = "Exit codes: 0 ok; 1 the parser is invalid or cannot be lowered; 2 usage or IO error."
    )]
    Peg(PegArgs),
}

#[derive(Debug, Args)]
struct PegArgs {
    /// The parser file (`.peg` text, or arena JSON starting with `{`); `-` reads stdin.
    file: String,

    /// Lazy grammar: `root` chooses among the trigger rules, and only what they reach is kept.
    #[arg(long)]
    lazy: bool,

    /// `space` accepts any run of white space (default: llama.cpp's bounded `space`).
    #[arg(long)]
    exact_space: bool,

    /// Write the grammar here instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum WhitespaceArg {
    /// No whitespace at all.
    Compact,
    /// llama.cpp's `space`: at most one space, or one or two newlines and some indentation.
    Bounded,
    /// Any JSON whitespace, unbounded.
    Flexible,
}

/// Why one schema did not compile: one message per problem (several for --strict).
struct Failure {
    messages: Vec<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(Command::Peg(args)) = &cli.command {
        return run_peg(args);
    }
    if cli.allow_fetch {
        eprintln!("error: --allow-fetch is not supported: schema2gbnf never uses the network; remote $refs are reported as errors");
        return ExitCode::from(EXIT_USAGE);
    }
    let refs = match &cli.refs {
        Some(dir) => match LocalRefs::load(dir) {
            Ok(refs) => refs,
            Err(message) => {
                eprintln!("error: --refs: {message}");
                return ExitCode::from(EXIT_USAGE);
            }
        },
        None => LocalRefs::default(),
    };
    match &cli.batch {
        Some(batch) => {
            // Read up front, so that each line's `ms` is its compile and print alone.
            refs.read_all();
            for problem in refs.take_problems() {
                eprintln!("warning: --refs: {problem}");
            }
            run_batch(&cli, &refs, batch)
        }
        None => run_single(&cli, &refs),
    }
}

fn run_peg(args: &PegArgs) -> ExitCode {
    let source = match read_input(&args.file) {
        Ok(text) => text,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let options = PegGbnfOptions {
        lazy: args.lazy,
        exact_space: args.exact_space,
    };
    let name = if args.file == "-" {
        "<stdin>"
    } else {
        &args.file
    };
    let lowered = match peg_to_gbnf(&source, &options) {
        Ok(lowered) => lowered,
        Err(message) => {
            eprintln!("{name}: {message}");
            return ExitCode::from(EXIT_SCHEMA);
        }
    };
    for warning in &lowered.warnings {
        eprintln!("{name}: {warning}");
    }
    if args.lazy {
        eprintln!("triggers: {}", lowered.triggers.join(", "));
    }
    match write_output(args.output.as_ref(), &lowered.grammar) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// Writes `text` to `path`, or to stdout without one.
fn write_output(path: Option<&PathBuf>, text: &str) -> Result<(), String> {
    match path {
        Some(path) => fs::write(path, text).map_err(|err| format!("{}: {err}", path.display())),
        None => {
            let mut stdout = io::stdout().lock();
            stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
                .map_err(|err| format!("stdout: {err}"))
        }
    }
}

fn run_single(cli: &Cli, refs: &LocalRefs) -> ExitCode {
    let source = cli.schema.as_deref().unwrap_or("-");
    let text = match read_input(source) {
        Ok(text) => text,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let schema: Value = match serde_json::from_str(&text) {
        Ok(schema) => schema,
        Err(err) => {
            eprintln!("error: {source}: not JSON: {err}");
            return ExitCode::from(EXIT_SCHEMA);
        }
    };
    let outcome = compile_one(cli, refs, schema, Release::LeaveToExit);
    for warning in &outcome.warnings {
        eprintln!("{warning}");
    }
    let grammar = match outcome.result {
        Ok(grammar) => grammar,
        Err(failure) => {
            for message in failure.messages {
                eprintln!("error: {message}");
            }
            return ExitCode::from(EXIT_SCHEMA);
        }
    };
    match write_output(cli.output.as_ref(), &grammar) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

fn run_batch(cli: &Cli, refs: &LocalRefs, source: &str) -> ExitCode {
    let reader: Box<dyn BufRead> = if source == "-" {
        Box::new(BufReader::new(io::stdin()))
    } else {
        match fs::File::open(source) {
            Ok(file) => Box::new(BufReader::new(file)),
            Err(err) => {
                eprintln!("error: {source}: {err}");
                return ExitCode::from(EXIT_USAGE);
            }
        }
    };
    // Buffered, and flushed after each result line: serde_json writes a value piece by piece
    // (every escape is a piece). Unbuffered, one build made a system call for each (a million
    // for four large grammars, longer than compiling them) and another did not, depending on
    // how the writer was inlined.
    let mut out: Box<dyn Write> = match &cli.output {
        Some(path) => match fs::File::create(path) {
            Ok(file) => Box::new(io::BufWriter::new(file)),
            Err(err) => {
                eprintln!("error: {}: {err}", path.display());
                return ExitCode::from(EXIT_USAGE);
            }
        },
        None => Box::new(io::BufWriter::new(io::stdout().lock())),
    };
    let mut any_failed = false;
    for (line_idx, line) in reader.lines().enumerate() {
        let line = match line {
            Ok(line) => line,
            Err(err) => {
                eprintln!("error: {source}:{}: {err}", line_idx + 1);
                return ExitCode::from(EXIT_USAGE);
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let result = batch_line(cli, refs, &line);
        any_failed |= result.get("error").is_some();
        let written = writeln!(out, "{result}").and_then(|()| out.flush());
        if let Err(err) = written {
            eprintln!("error: writing results: {err}");
            return ExitCode::from(EXIT_USAGE);
        }
    }
    if any_failed {
        ExitCode::from(EXIT_SCHEMA)
    } else {
        ExitCode::SUCCESS
    }
}

/// The result object of one batch line; never fails.
fn batch_line(cli: &Cli, refs: &LocalRefs, line: &str) -> Value {
    let mut result = Map::new();
    let input: Value = match serde_json::from_str(line) {
        Ok(input) => input,
        Err(err) => {
            result.insert("id".into(), Value::Null);
            result.insert(
                "error".into(),
                Value::String(format!("line is not JSON: {err}")),
            );
            return Value::Object(result);
        }
    };
    let id = input.get("id").cloned().unwrap_or(Value::Null);
    result.insert("id".into(), id);
    let Some(schema) = input.get("schema").cloned() else {
        result.insert(
            "error".into(),
            Value::String("line has no \"schema\" member".into()),
        );
        return Value::Object(result);
    };
    let started = Instant::now();
    let outcome = compile_one(cli, refs, schema, Release::Free);
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    match outcome.result {
        Ok(grammar) => {
            result.insert("grammar".into(), Value::String(grammar));
            result.insert("ms".into(), json!((ms * 1000.0).round() / 1000.0));
        }
        Err(failure) => {
            result.insert("error".into(), Value::String(failure.messages.join("; ")));
        }
    }
    if cli.lenient {
        let warnings = outcome
            .warnings
            .into_iter()
            .map(|line| serde_json::from_str(&line).unwrap_or(Value::String(line)))
            .collect();
        result.insert("warnings".into(), Value::Array(warnings));
    }
    Value::Object(result)
}

/// The outcome of compiling one schema: the printed grammar or the error messages, plus the
/// warnings as JSON lines.
struct Outcome {
    result: Result<String, Failure>,
    warnings: Vec<String>,
}

/// What becomes of the compiled grammar once it is printed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Release {
    /// Freed, as the next schema of a batch needs the memory.
    Free,
    /// Left to the process's exit: one schema, printed and then written. Freeing the grammar
    /// node by node took 5–10 ms for the largest SchemaStore grammars (podman-desktop-extension,
    /// 6,633 rules), about a tenth of the command's time.
    LeaveToExit,
}

fn compile_one(cli: &Cli, refs: &LocalRefs, mut schema: Value, release: Release) -> Outcome {
    if cli.strict {
        let violations = check_strict(&schema);
        if !violations.is_empty() {
            return Outcome {
                result: Err(Failure {
                    messages: violations.iter().map(ToString::to_string).collect(),
                }),
                warnings: Vec::new(),
            };
        }
    }
    if !cli.prop_order.is_empty() {
        reorder_properties(&mut schema, &cli.prop_order);
    }
    let options = Options {
        whitespace: match cli.whitespace {
            WhitespaceArg::Compact => Whitespace::Compact,
            WhitespaceArg::Bounded => Whitespace::Bounded,
            WhitespaceArg::Flexible => Whitespace::Flexible,
        },
        additional_properties_default: cli.additional_properties_default,
        property_order: if cli.any_order {
            PropertyOrder::Any
        } else {
            PropertyOrder::Schema
        },
        max_any_order_properties: cli.max_any_order,
        lenient: cli.lenient,
        dotall: cli.dotall,
        raw_pattern: cli.raw_pattern,
        resolver: (!refs.is_empty()).then_some(refs as &dyn gbnf_json_schema::Resolver),
        // `--strict` is OpenAI's strict mode, checked above; the compiler's own `strict`
        // (unknown keywords are errors) is a different thing and stays off.
        ..Options::default()
    };
    let compiled = compile(&schema, &options);
    for problem in refs.take_problems() {
        eprintln!("warning: --refs: {problem}");
    }
    match compiled {
        Ok(compiled) => {
            let outcome = Outcome {
                result: Ok(gbnf::print(&compiled.grammar)),
                warnings: compiled
                    .warnings
                    .iter()
                    .map(|warning| {
                        json!({
                            "pointer": warning.pointer.to_string(),
                            "keyword": warning.keyword,
                            "message": warning.message,
                        })
                        .to_string()
                    })
                    .collect(),
            };
            if release == Release::LeaveToExit {
                std::mem::forget(compiled);
            }
            outcome
        }
        Err(err) => {
            let mut message = err.to_string();
            let remote = matches!(&err.kind, ErrorKind::UnresolvedRef { reference }
                if reference.contains("://"));
            if remote && cli.refs.is_none() {
                message.push_str(
                    " (nothing is fetched; --refs DIR reads referenced schemas from local files)",
                );
            }
            Outcome {
                result: Err(Failure {
                    messages: vec![message],
                }),
                warnings: Vec::new(),
            }
        }
    }
}

fn read_input(source: &str) -> Result<String, String> {
    if source == "-" {
        let mut text = String::new();
        io::stdin()
            .read_to_string(&mut text)
            .map_err(|err| format!("stdin: {err}"))?;
        Ok(text)
    } else {
        fs::read_to_string(source).map_err(|err| format!("{source}: {err}"))
    }
}

/// Reorders every `properties` map in the schema so that the names in `order` come first, in
/// that order, and the rest keep their schema order (json_schema_to_grammar.py's
/// `--prop-order`). Only schema positions are visited, so `enum`/`const` data and property
/// names that look like keywords are left alone.
fn reorder_properties(schema: &mut Value, order: &[String]) {
    let rank = |name: &str| {
        order
            .iter()
            .position(|wanted| wanted == name)
            .unwrap_or(order.len())
    };
    // Explicit stack: nesting depth is under the user's control.
    let mut stack: Vec<&mut Value> = vec![schema];
    while let Some(value) = stack.pop() {
        let Value::Object(map) = value else { continue };
        if let Some(Value::Object(properties)) = map.get_mut("properties") {
            let mut entries: Vec<(String, Value)> =
                std::mem::take(properties).into_iter().collect();
            // A stable sort keeps schema order among equal ranks.
            entries.sort_by_key(|(name, _)| rank(name));
            properties.extend(entries);
        }
        for (key, child) in map.iter_mut() {
            match (key.as_str(), child) {
                (
                    "items"
                    | "additionalItems"
                    | "additionalProperties"
                    | "contains"
                    | "propertyNames"
                    | "not"
                    | "if"
                    | "then"
                    | "else"
                    | "unevaluatedItems"
                    | "unevaluatedProperties",
                    child @ Value::Object(_),
                ) => stack.push(child),
                ("allOf" | "anyOf" | "oneOf" | "prefixItems" | "items", Value::Array(schemas)) => {
                    stack.extend(schemas.iter_mut());
                }
                (
                    "properties" | "patternProperties" | "$defs" | "definitions"
                    | "dependentSchemas" | "dependencies",
                    Value::Object(schemas),
                ) => stack.extend(schemas.values_mut()),
                _ => {}
            }
        }
    }
}
