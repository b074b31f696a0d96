//! Deeply nested parsers lower without overflowing the stack, and into grammars whose rule
//! bodies are shallow (`GrammarBuilder::MAX_DEPTH`), so that printing, validating and
//! matching them is safe too.
//!
//! Every case runs on a thread with a small stack, so recursion as deep as the parser
//! fails the test instead of passing by luck on a large main-thread stack.

use gbnf::{Grammar, GrammarBuilder, Matcher, Verdict};
use gbnf_peg::{lower, parse_peg, Arena, Builder, LowerOptions, NodeId, MAX_NESTING};

/// How deep the built parsers nest.
const LEVELS: usize = 10_000;

/// Lowers the arena that `build` makes, on a small stack, checks that every rule body is
/// shallow and that the grammar prints, reads back and validates, then compiles it to a
/// matcher and checks each `(input, verdict)`.
///
/// `verdicts` is `None` where the matcher refuses the grammar by design (nested unbounded
/// loops multiply its repetition counts, and finding that out takes seconds in a debug
/// build); such cases skip the matcher.
///
/// `build` runs on the test's own thread: the `.peg` reader recurses up to `MAX_NESTING`
/// levels by design, which is more than a small stack holds in a debug build.
fn check(build: fn() -> Arena, verdicts: Option<&'static [(&'static str, Verdict)]>) {
    let arena = build();
    let handle = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            let lowered = lower(&arena, &LowerOptions::default()).expect("lowers");
            let grammar = lowered.grammar;
            assert_shallow(&grammar);
            let text = gbnf::print(&grammar);
            assert_eq!(gbnf::read(&text).as_ref(), Ok(&grammar));
            gbnf::validate(&grammar, "root").expect("valid grammar");
            let Some(verdicts) = verdicts else {
                return;
            };
            let matcher = Matcher::new(&grammar, "root").expect("matcher");
            for (input, verdict) in verdicts {
                assert_eq!(&matcher.verdict(input), verdict, "input {input:?}");
            }
        })
        .expect("spawn a test thread");
    assert!(handle.join().is_ok(), "the test thread panicked");
}

fn assert_shallow(grammar: &Grammar) {
    for (name, body) in &grammar.rules {
        let depth = body.depth();
        assert!(
            depth <= GrammarBuilder::MAX_DEPTH,
            "rule {name} is {depth} deep"
        );
    }
}

/// Applies `wrap` to a literal `LEVELS` times and makes the result the root.
fn nested(wrap: fn(&mut Builder, NodeId) -> NodeId) -> Arena {
    let mut builder = Builder::new();
    let mut node = builder.literal("a");
    for _ in 0..LEVELS {
        node = wrap(&mut builder, node);
    }
    builder.set_root(node);
    builder.build().expect("a valid arena")
}

/// `("a" ("a" (…)?)?)`: the language `a{1,LEVELS+1}`.
fn optionals() -> Arena {
    nested(|builder, inner| {
        let a = builder.literal("a");
        let seq = builder.seq([a, inner]);
        builder.optional(seq)
    })
}

/// `"a"+ … +`: nested loops of one character.
fn pluses() -> Arena {
    nested(|builder, inner| builder.one_or_more(inner))
}

/// `"a"* … *`: nested loops whose bodies match the empty string, which the lowering
/// rewrites for llama.cpp.
fn stars() -> Arena {
    nested(|builder, inner| builder.zero_or_more(inner))
}

/// `"a" / "b" ("a" / "b" (…))`: choices inside sequences.
fn choices() -> Arena {
    nested(|builder, inner| {
        let a = builder.literal("a");
        let b = builder.literal("b");
        let seq = builder.seq([b, inner]);
        builder.choice([a, seq])
    })
}

#[test]
fn nested_optionals_lower() {
    check(
        optionals,
        Some(&[
            ("", Verdict::Accept),
            ("aaaa", Verdict::Accept),
            ("ab", Verdict::Reject { offset: 1 }),
        ]),
    );
}

#[test]
fn nested_pluses_lower() {
    check(pluses, None);
}

#[test]
fn nested_nullable_loops_lower() {
    check(stars, None);
}

#[test]
fn nested_choices_lower() {
    check(
        choices,
        Some(&[
            ("bbba", Verdict::Accept),
            ("bbb", Verdict::Prefix),
            ("bc", Verdict::Reject { offset: 1 }),
        ]),
    );
}

/// Groups nested up to the `.peg` reader's cap, under a stack of quantifiers, lower into
/// shallow grammars.
#[test]
fn deep_peg_text_lowers() {
    check(
        || {
            // The root's choice is level 1, each group adds a level and so does each
            // quantifier: `depth` groups closed by `)?` reach `1 + 2 * depth`, and the
            // trailing quantifiers fill the rest up to the cap.
            let depth = MAX_NESTING / 2 - 2;
            let mut text = String::from("root <- ");
            text.push_str(&"(\"a\" ".repeat(depth));
            text.push_str("\"a\"");
            text.push_str(&")?".repeat(depth));
            text.push_str(&"?".repeat(MAX_NESTING - 1 - 2 * depth));
            parse_peg(&text).expect("readable text")
        },
        Some(&[
            ("", Verdict::Accept),
            ("aaa", Verdict::Accept),
            ("ab", Verdict::Reject { offset: 1 }),
        ]),
    );
}

/// A lowering error after a deep sibling was lowered drops that sibling's expression:
/// the drop must not recurse either.
#[test]
fn errors_after_deep_parts_return_cleanly() {
    let mut builder = Builder::new();
    let mut node = builder.literal("a");
    for _ in 0..LEVELS {
        let a = builder.literal("a");
        let seq = builder.seq([a, node]);
        node = builder.optional(seq);
    }
    let child = builder.literal("b");
    let bad = builder.gbnf(child, "[unclosed");
    let root = builder.seq([node, bad]);
    builder.set_root(root);
    let arena = builder.build().expect("a valid arena");
    let handle = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || lower(&arena, &LowerOptions::default()).map(|_| ()))
        .expect("spawn a test thread");
    let result = handle.join().expect("the test thread returned");
    let error = result.expect_err("the gbnf text is unreadable");
    assert!(error.to_string().contains("gbnf"), "{error}");
}

/// `("a"? ("a"+…+)?)*` exactly `GrammarBuilder::MAX_DEPTH` deep: the rewrite of its
/// nullable loop makes it one level deeper, which must be hoisted again.
#[test]
fn loop_rewrites_stay_shallow() {
    check(
        || {
            let mut builder = Builder::new();
            let mut chain = builder.literal("a");
            for _ in 0..GrammarBuilder::MAX_DEPTH - 4 {
                chain = builder.one_or_more(chain);
            }
            let nullable = builder.optional(chain);
            let a = builder.literal("a");
            let first = builder.optional(a);
            let seq = builder.seq([first, nullable]);
            let root = builder.zero_or_more(seq);
            builder.set_root(root);
            builder.build().expect("a valid arena")
        },
        None,
    );
}

/// Reads each `.peg` text on a thread with `stack_size` bytes of stack and checks that it
/// is a located nesting error.
fn assert_too_deep(stack_size: usize, cases: Vec<(&'static str, String)>) {
    let handle = std::thread::Builder::new()
        .stack_size(stack_size)
        .spawn(move || {
            cases
                .into_iter()
                .map(|(name, text)| {
                    (
                        name,
                        parse_peg(&text).map(|_| ()).map_err(|e| e.to_string()),
                    )
                })
                .collect::<Vec<_>>()
        })
        .expect("spawn a test thread");
    let results = handle
        .join()
        .expect("the reader did not overflow the stack");
    for (name, result) in results {
        let error = result.expect_err(name);
        assert!(
            error.starts_with("1:")
                && (error.contains("nested deeper") || error.contains("recursion limit")),
            "{name}: {error}"
        );
    }
}

const HOSTILE: usize = 10_000;

/// Stacked quantifiers and prefixes past the cap are a located syntax error on a small
/// stack: the reader counts each one as a level and stops at the cap, instead of building a
/// 10,000-deep tree whose recursive build overflows.
#[test]
fn stacked_operators_are_an_error_on_a_small_stack() {
    let n = HOSTILE;
    assert_too_deep(
        256 * 1024,
        vec![
            (
                "stacked quantifiers",
                format!("root <- \"a\"{}", "?".repeat(n)),
            ),
            ("stacked stars", format!("root <- \"a\"{}", "*".repeat(n))),
            (
                "stacked bounds",
                format!("root <- \"a\"{}", "{1,2}".repeat(n)),
            ),
            ("class quantifiers", format!("root <- [a]{}", "+".repeat(n))),
            (
                "quantified prefixes",
                format!("root <- {}\"a\"{}", "!".repeat(50), "?".repeat(n)),
            ),
            ("peeks", format!("root <- {}\"a\"", "&".repeat(n))),
            ("negations", format!("root <- {}\"a\"", "!".repeat(n))),
        ],
    );
}

/// Groups, tags and calls past the cap, and quantifiers on nested groups (which would
/// otherwise multiply: each group level under its own stack of quantifiers), are a located
/// syntax error. The reader itself recurses through several functions per group up to the
/// cap, which needs more than a small stack in a debug build, so these run on the 2 MiB of
/// an ordinary test thread.
#[test]
fn nested_groups_are_an_error_on_a_test_thread_stack() {
    let n = HOSTILE;
    let json = format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert_too_deep(
        2 * 1024 * 1024,
        vec![
            ("groups", format!("root <- {}\"a\"", "(".repeat(n))),
            ("tags", format!("root <- {}\"a\"", "@t(".repeat(n))),
            ("atomics", format!("root <- {}\"a\"", "atomic(".repeat(n))),
            (
                "quantified groups",
                format!(
                    "root <- {}\"a\"{}",
                    "(".repeat(40),
                    format!("){}", "?".repeat(40)).repeat(40)
                ),
            ),
            (
                "deep schema JSON",
                format!("root <- schema(json, \"s\", {json})"),
            ),
            (
                "schema inside groups",
                format!("root <- {}schema(json, \"s\", {{}})", "(".repeat(n)),
            ),
        ],
    );
}
