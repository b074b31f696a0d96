//! The step limit (`STEPS_PER_BYTE`): a definition that backtracks exponentially gives
//! `Outcome::StepLimit`, naming the rule, in a parse and in a stream (which stays there),
//! instead of running for ever; one that backtracks a bounded number of times still parses;
//! and failed alternatives' AST nodes do not pile up. Inputs: `tests/data/peg-runtime/
//! step-limit/NAME.peg` with `NAME.txt`.

use std::path::PathBuf;

use gbnf_peg::{parse_bytes, parse_peg, Arena, Options, Outcome, StreamParser, STEPS_PER_BYTE};

fn case(name: &str) -> (Arena, Vec<u8>) {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/peg-runtime/step-limit");
    let source = std::fs::read_to_string(dir.join(format!("{name}.peg")))
        .unwrap_or_else(|err| panic!("{name}.peg: {err}"));
    let input = std::fs::read(dir.join(format!("{name}.txt")))
        .unwrap_or_else(|err| panic!("{name}: {err}"));
    let arena = parse_peg(&source).unwrap_or_else(|err| panic!("{name}.peg: {err}"));
    (arena, input)
}

/// A complete parse gives up, names rule `k` and an offset inside the input, and leaves no
/// AST. (A partial parse of the same input does not backtrack: the first `NeedMore` at the
/// end of input goes straight up.)
fn gives_up(name: &str) {
    let (arena, input) = case(name);
    let result = parse_bytes(&arena, &input, &Options { partial: false });
    assert_eq!(result.outcome, Outcome::StepLimit, "{name}");
    let limit = result.step_limit.expect("a step limit");
    assert_eq!(result.end, limit.at);
    assert!(limit.at <= input.len());
    assert!(result.ast.roots().is_empty());
    let text = limit.describe(&arena);
    assert!(text.contains("in rule `k`"), "{text}");
    assert!(text.contains(&format!("at byte {}", limit.at)), "{text}");
    // The limit is the documented one.
    let nodes = limit.steps / STEPS_PER_BYTE / (input.len() as u64 + 1);
    assert_eq!(
        limit.steps,
        STEPS_PER_BYTE * (input.len() as u64 + 1) * nodes
    );
    let partial = parse_bytes(&arena, &input, &Options { partial: true });
    assert_eq!(partial.outcome, Outcome::NeedMore, "{name}");
    assert_eq!(partial.step_limit, None);
}

#[test]
fn the_fuzz_reproducer_gives_up_naming_the_rule() {
    gives_up("fuzz-twice");
}

#[test]
fn fibonacci_backtracking_gives_up_naming_the_rule() {
    gives_up("fibonacci");
}

/// Backtracking that reads the rest of the input again at every offset: quadratic time, which
/// the backtracking budget stops (after about 700 of the 2,000 bytes).
#[test]
fn quadratic_rescanning_gives_up_naming_the_rule() {
    gives_up("scan-then-fail");
}

/// Fed byte by byte, each status is what a fresh partial parse says; `finish` gives up, and
/// the stream stays there (`feed`, `finish`, `result`), with an empty AST, until a reset,
/// after which it does all that again.
#[test]
fn a_stream_that_gives_up_stays_so() {
    for name in ["fuzz-twice", "fibonacci", "scan-then-fail"] {
        let (arena, input) = case(name);
        let mut stream = StreamParser::new(&arena);
        for pass in 0..2 {
            if pass == 1 {
                stream.reset();
                assert_eq!(stream.step_limit(), None, "{name}");
            }
            for (at, byte) in input.iter().enumerate() {
                let status = stream.feed(&[*byte]);
                let fresh = parse_bytes(&arena, &input[..=at], &Options { partial: true });
                assert_eq!(status.outcome, fresh.outcome, "{name} at {at}");
                assert_eq!(status.end, fresh.end, "{name} at {at}");
            }
            let gave_up = stream.finish();
            assert_eq!(gave_up.outcome, Outcome::StepLimit, "{name}");
            let limit = stream.step_limit().expect("a step limit");
            assert_eq!(gave_up.end, limit.at);
            assert_eq!(stream.feed(b"a"), gave_up, "{name}");
            assert_eq!(stream.finish(), gave_up, "{name}");
            let result = stream.result();
            assert_eq!(result.outcome, Outcome::StepLimit);
            assert_eq!(result.step_limit, Some(limit));
            assert!(result.ast.roots().is_empty());
        }
    }
}

/// Each item is parsed up to eight times before its terminator decides: a bounded amount of
/// backtracking, which must parse completely (and leave only the nodes it reaches).
#[test]
fn bounded_backtracking_parses() {
    let (arena, input) = case("eightfold");
    let result = parse_bytes(&arena, &input, &Options { partial: false });
    assert_eq!(result.outcome, Outcome::Match);
    assert_eq!(result.end, input.len());
    assert_eq!(result.ast.stored_len(), result.ast.visit().len());
    let root = result.ast.roots()[0];
    let items = result.ast.children(root).len();
    assert_eq!(
        items,
        input.split(|&b| b == b' ').count(),
        "one item node per item"
    );
}

/// The nodes of failed alternatives are dropped as the parse goes: a complete parse stores
/// only the nodes its result reaches, whatever it tried (here, up to eight `word`s per item).
#[test]
fn failed_alternatives_leave_no_nodes() {
    let (arena, input) = case("eightfold");
    for end in [0, 1, 17, 100, input.len() / 2, input.len()] {
        let result = parse_bytes(&arena, &input[..end], &Options { partial: false });
        assert_eq!(
            result.ast.stored_len(),
            result.ast.visit().len(),
            "at {end}: {:?}",
            result.outcome
        );
    }
}
