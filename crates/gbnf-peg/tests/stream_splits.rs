//! Every way a stream resumes, on sample transcripts split everywhere: after each chunk the
//! stream's status (and, on some chunks, its AST) must equal a fresh partial parse of the
//! prefix, and `finish` a complete parse. The transcripts (`tests/data/peg-runtime/
//! transcripts` and `stream-splits`) put token boundaries inside JSON arguments at every kind
//! of place (in numbers, literals, keys, white space, escapes, between containers), where the
//! stream resumes the JSON scanner directly, as well as in prose, markers and call syntax;
//! and a parser of class-char and white-space runs between literals (`runs.txt`), where a
//! feed that only continues a run moves the end without running; and a parser whose
//! sequences have runs of literals and white space (`chains.txt`), which the runtime parses
//! as one leaf that a stream suspends and extends at any byte, checked also against the same
//! parser run literal by literal.

use std::path::PathBuf;

use gbnf_peg::{parse_bytes, Arena, Builder, Options, StreamParser};

#[path = "support/ast_rows.rs"]
mod ast_rows;
use ast_rows::rows;

#[path = "support/tool_call.rs"]
mod tool_call;
use tool_call::tool_call_parser;

/// `tests/data/peg-runtime`.
fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/peg-runtime")
}

/// A text file of `tests/data/peg-runtime`.
fn data_text(name: &str) -> String {
    std::fs::read_to_string(data_dir().join(name)).unwrap_or_else(|err| panic!("{name}: {err}"))
}

fn transcripts() -> Vec<(String, Vec<u8>)> {
    let root = data_dir();
    let mut out = Vec::new();
    for dir in ["transcripts", "stream-splits"] {
        let dir = root.join(dir);
        let mut paths: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|err| panic!("{dir:?}: {err}"))
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .collect();
        paths.sort();
        for path in paths {
            let bytes = std::fs::read(&path).unwrap_or_else(|err| panic!("{path:?}: {err}"));
            out.push((path.display().to_string(), bytes));
        }
    }
    assert!(out.len() >= 10, "{out:?}");
    out
}

/// The tool-call parser with its JSON scanner and without it (node by node).
fn parsers() -> Vec<(&'static str, Arena)> {
    let fast = tool_call_parser();
    let slow = fast.without_json_fast_path();
    vec![("scanner", fast), ("interpreter", slow)]
}

/// Runs of class chars and white space followed by literals, where a feed that only
/// continues a run moves the end without running the machine: words of 3 to 6 letters, digit
/// runs of any length (also empty), capitalised identifiers before a negative lookahead, and
/// `@` with at least two letters, which may end the input.
fn runs_parser() -> Arena {
    let mut p = Builder::new();
    let word = {
        let letters = p.chars("[a-z]", 3..=6);
        let letters = p.tag("word", letters);
        let ws = p.space();
        let semi = p.literal(";");
        p.seq([letters, ws, semi])
    };
    let number = {
        let hash = p.literal("#");
        let digits = p.chars("[0-9]", 0..);
        let digits = p.tag("num", digits);
        let bang = p.literal("!");
        let bang = p.optional(bang);
        let ws = p.space();
        p.seq([hash, digits, bang, ws])
    };
    let ident = {
        let name = p.chars("[A-Z_]", 1..);
        let name = p.tag("id", name);
        let dash = p.literal("-");
        let no_dash = p.negate(dash);
        let ws = p.space();
        let comma = p.literal(",");
        p.seq([name, no_dash, ws, comma])
    };
    // A run that may end the input: below its minimum it waits for more, at it the parse
    // may match.
    let tail = {
        let at = p.literal("@");
        let letters = p.chars("[a-z]", 2..);
        let letters = p.tag("tail", letters);
        p.seq([at, letters])
    };
    let lead = p.space();
    let item = p.choice([word, number, ident, tail]);
    let item = p.seq([lead, item]);
    let items = p.zero_or_more(item);
    let end = p.end();
    let root = p.seq([items, end]);
    p.set_root(root);
    p.build().unwrap_or_else(|err| panic!("{err}"))
}

/// The runs parser on each line of `runs.txt` and on `runs-tail.txt` (no final newline),
/// split at every point, and fed byte by byte and in 3-byte tokens.
#[test]
fn class_runs() {
    let lines = data_text("runs.txt");
    let tail = data_text("runs-tail.txt");
    let arena = runs_parser();
    for line in lines.lines().chain([tail.as_str()]) {
        let bytes = line.as_bytes();
        let name = format!("runs {line:?}");
        check_splits(&name, &arena, bytes, 4);
    }
}

/// Sequences with runs of literals and white space (compiled to one leaf each): a call
/// shape, a choice whose alternatives start with the same literal (the first one's chain
/// fails after it), runs that start and end in white space, a literal of nothing, and a
/// negative lookahead between two runs.
fn chains_parser() -> Arena {
    let mut p = Builder::new();
    let call = {
        let parts = [
            p.literal("<a>"),
            p.space(),
            p.literal("{"),
            p.space(),
            p.literal("\"k\""),
            p.space(),
            p.literal(":"),
            p.space(),
        ];
        let digits = p.chars("[0-9]", 1..);
        let value = p.tag("v", digits);
        let tail = [p.space(), p.literal("}"), p.space(), p.literal("</a>")];
        p.seq(parts.into_iter().chain([value]).chain(tail))
    };
    let list = {
        let open = p.literal("<a>");
        let ws = p.space();
        let bracket = p.literal("[");
        let letters = p.chars("[a-z]", 1..);
        let word = p.tag("w", letters);
        let close = p.literal("]");
        p.seq([open, ws, bracket, word, close])
    };
    let marks = {
        let parts = [
            p.space(),
            p.space(),
            p.literal("!"),
            p.literal(""),
            p.space(),
            p.literal("?"),
        ];
        p.seq(parts)
    };
    let hash = {
        let parts = [p.literal("#"), p.space()];
        let dash = p.literal("-");
        let no_dash = p.negate(dash);
        let rest = [p.space(), p.literal(";")];
        p.seq(parts.into_iter().chain([no_dash]).chain(rest))
    };
    let at = {
        let at = p.literal("@");
        let ws = p.space();
        p.seq([at, ws])
    };
    let item = p.choice([call, list, marks, hash, at]);
    let items = p.zero_or_more(item);
    let ws = p.space();
    let dot = p.literal(".");
    let end = p.end();
    let root = p.seq([items, ws, dot, end]);
    p.set_root(root);
    p.build().unwrap_or_else(|err| panic!("{err}"))
}

/// The chains parser on each line of `chains.txt`: every prefix parsed fresh gives what the
/// same parser gives literal by literal (partial and complete), and streams split at every
/// point, byte by byte and in 3-byte tokens give what a fresh parse gives.
#[test]
fn chains() {
    let lines = data_text("chains.txt");
    let arena = chains_parser();
    let plain = arena.without_json_fast_path();
    assert_ne!(arena, plain, "the parser must have chains");
    for line in lines.lines() {
        let bytes = line.as_bytes();
        let name = format!("chains {line:?}");
        for at in 0..=bytes.len() {
            for options in [Options { partial: true }, Options::default()] {
                let chained = parse_bytes(&arena, &bytes[..at], &options);
                let literal = parse_bytes(&plain, &bytes[..at], &options);
                let what = format!("{name}: {at} bytes, {options:?}");
                assert_eq!(
                    (chained.outcome, chained.end),
                    (literal.outcome, literal.end),
                    "{what}"
                );
                assert_eq!(rows(&chained.ast), rows(&literal.ast), "{what}");
            }
        }
        check_splits(&name, &arena, bytes, 3);
    }
}

/// What to do after a chunk.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ask {
    Status,
    Ast,
    Finish,
}

/// Feeds `bytes` cut at `cuts` (increasing offsets; the end is added), checking after each
/// chunk what `ask` says for that chunk's index.
fn check(name: &str, arena: &Arena, bytes: &[u8], cuts: &[usize], ask: impl Fn(usize) -> Ask) {
    let partial = Options { partial: true };
    let mut stream = StreamParser::new(arena);
    let mut at = 0;
    for (index, &cut) in cuts.iter().chain([bytes.len()].iter()).enumerate() {
        let status = stream.feed(&bytes[at..cut]);
        at = cut;
        let fresh = parse_bytes(arena, &bytes[..at], &partial);
        let what = || format!("{name}: after {at} bytes, cuts {cuts:?}");
        assert_eq!(
            (status.outcome, status.end),
            (fresh.outcome, fresh.end),
            "{}",
            what()
        );
        match ask(index) {
            Ask::Status => {}
            Ask::Ast => assert_eq!(rows(stream.ast()), rows(&fresh.ast), "AST {}", what()),
            Ask::Finish => {
                let done = stream.finish();
                let complete = parse_bytes(arena, &bytes[..at], &Options::default());
                assert_eq!(
                    (done.outcome, done.end),
                    (complete.outcome, complete.end),
                    "finish {}",
                    what()
                );
                assert_eq!(rows(stream.ast()), rows(&complete.ast), "{}", what());
            }
        }
    }
    let done = stream.finish();
    let complete = parse_bytes(arena, bytes, &Options::default());
    assert_eq!((done.outcome, done.end), (complete.outcome, complete.end));
    assert_eq!(rows(stream.ast()), rows(&complete.ast), "{name}: finish");
}

/// Two chunks, split at every byte offset; the AST after the first chunk on every other
/// split, so that the second feed resumes both from built and from unbuilt states.
#[test]
fn every_split_point() {
    for (parser, arena) in parsers() {
        for (path, bytes) in transcripts() {
            let name = format!("{parser} {path}");
            for split in 0..=bytes.len() {
                check(&name, &arena, &bytes, &[split], |index| {
                    if index == 0 && split % 2 == 1 {
                        Ask::Ast
                    } else {
                        Ask::Status
                    }
                });
            }
        }
    }
}

/// Tokens of 4 bytes at each of the four alignments, as a model streams them: the AST
/// never asked for (every feed resumes from the lazy state), asked every third token, or a
/// `finish` now and then.
#[test]
fn token_streams() {
    for (parser, arena) in parsers() {
        for (path, bytes) in transcripts() {
            let name = format!("{parser} {path}");
            for offset in 0..4 {
                let cuts: Vec<usize> = (offset..bytes.len()).step_by(4).collect();
                check(&name, &arena, &bytes, &cuts, |_| Ask::Status);
                check(&name, &arena, &bytes, &cuts, |index| {
                    if index % 3 == 2 {
                        Ask::Ast
                    } else {
                        Ask::Status
                    }
                });
                check(&name, &arena, &bytes, &cuts, |index| {
                    if index % 7 == 6 {
                        Ask::Finish
                    } else {
                        Ask::Status
                    }
                });
            }
        }
    }
}

/// Byte by byte, with the AST never asked for, after every byte, or every fifth.
#[test]
fn byte_by_byte() {
    for (parser, arena) in parsers() {
        for (path, bytes) in transcripts() {
            let name = format!("{parser} {path}");
            let cuts: Vec<usize> = (1..bytes.len()).collect();
            check(&name, &arena, &bytes, &cuts, |_| Ask::Status);
            check(&name, &arena, &bytes, &cuts, |_| Ask::Ast);
            check(&name, &arena, &bytes, &cuts, |index| {
                if index % 5 == 4 {
                    Ask::Ast
                } else {
                    Ask::Status
                }
            });
        }
    }
}

/// Streams `bytes` split once at every point (reading the AST after the first chunk of odd
/// splits), byte by byte (once with status only, once reading the AST every `ast_every`
/// feeds), and in 3-byte tokens finishing every fifth feed.
fn check_splits(name: &str, arena: &Arena, bytes: &[u8], ast_every: usize) {
    for split in 0..=bytes.len() {
        check(name, arena, bytes, &[split], |index| {
            if index == 0 && split % 2 == 1 {
                Ask::Ast
            } else {
                Ask::Status
            }
        });
    }
    let bytewise: Vec<usize> = (1..bytes.len()).collect();
    check(name, arena, bytes, &bytewise, |_| Ask::Status);
    check(name, arena, bytes, &bytewise, |index| {
        if index % ast_every == ast_every - 1 {
            Ask::Ast
        } else {
            Ask::Status
        }
    });
    let tokens: Vec<usize> = (3..bytes.len()).step_by(3).collect();
    check(name, arena, bytes, &tokens, |index| {
        if index % 5 == 4 {
            Ask::Finish
        } else {
            Ask::Status
        }
    });
}

/// The cases where a stream once disagreed with a fresh parse (found by the random-parser
/// property with many cases): `stream-regressions/NAME.peg` with `NAME.txt`, streamed in
/// every way of cutting the input into chunks, with the status only and with the AST read
/// after every chunk.
#[test]
fn stream_regressions() {
    let dir = data_dir().join("stream-regressions");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("{dir:?}: {err}"))
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "peg"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty());
    for path in paths {
        let name = path.display().to_string();
        let source = std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{name}: {err}"));
        let arena = gbnf_peg::parse_peg(&source).unwrap_or_else(|err| panic!("{name}: {err}"));
        let input_path = path.with_extension("txt");
        let bytes =
            std::fs::read(&input_path).unwrap_or_else(|err| panic!("{input_path:?}: {err}"));
        assert!(
            bytes.len() <= 12,
            "{name}: every cutting of a longer input is too many"
        );
        // Bit `i` of `mask` cuts after byte `i + 1`.
        for mask in 0u32..1 << bytes.len().saturating_sub(1) {
            let cuts: Vec<usize> = (1..bytes.len())
                .filter(|&cut| mask & (1 << (cut - 1)) != 0)
                .collect();
            check(&name, &arena, &bytes, &cuts, |_| Ask::Status);
            check(&name, &arena, &bytes, &cuts, |_| Ask::Ast);
        }
    }
}
