//! Pattern → DFA tests: ECMA translation and search semantics, checked on the automaton.

#![allow(clippy::unwrap_used)] // Tests fail loudly on purpose.

use crate::pattern::pattern_dfa;
use crate::strings::LeafErrorKind;

fn check(pattern: &str, accept: &[&str], reject: &[&str]) {
    let dfa = pattern_dfa(pattern, false).unwrap_or_else(|err| panic!("{pattern}: {err}"));
    for text in accept {
        assert!(dfa.accepts(text), "{pattern:?} should match {text:?}");
    }
    for text in reject {
        assert!(!dfa.accepts(text), "{pattern:?} should not match {text:?}");
    }
}

fn error_kind(pattern: &str) -> LeafErrorKind {
    match pattern_dfa(pattern, false) {
        Ok(_) => panic!("{pattern:?} should fail"),
        Err(err) => err.kind,
    }
}

#[test]
fn unanchored_patterns_match_anywhere() {
    check("abc", &["abc", "xxabcyy", "ab abc"], &["ab", "acb", ""]);
    check("^abc", &["abc", "abcdef"], &["xabc"]);
    check("abc$", &["abc", "xxabc"], &["abcx"]);
    check("^abc$", &["abc"], &["abcabc", "xabc"]);
    check("", &["", "anything"], &[]);
}

#[test]
fn ecma_escapes() {
    check("^\\d+$", &["0123"], &["١", "a", ""]);
    check("^\\w$", &["a", "Z", "_", "5"], &["é", "-"]);
    check(
        "^\\s$",
        &[" ", "\t", "\u{a0}", "\u{2028}", "\u{feff}"],
        &["a", "\u{200b}"],
    );
    check("^\\S$", &["a"], &[" "]);
    check("^.$", &["a", "é", "😀"], &["\n", "\r", "\u{2028}", "ab"]);
    check(
        "^\\/\\.\\u0041\\x42\\u{1F600}\\cJ$",
        &["/.AB😀\n"],
        &["/.AB😀"],
    );
    check("^\\uD83D\\uDE00$", &["😀"], &["x", "\u{FFFD}"]);
    check("^a\\uD83Db$", &[], &["ab", "a\u{FFFD}b"]);
    check("^a{2}b{1,}c{0,1}$", &["aab", "aabbbc"], &["ab", "aabcc"]);
    check("^a{,2}$", &["a{,2}"], &["aa"]);
    check("^x{$", &["x{"], &[]);
}

#[test]
fn ecma_classes() {
    check("^[a-c-]$", &["a", "-", "c"], &["d"]);
    check("^[\\w-]$", &["-", "a"], &["."]);
    check("^[^\\d]$", &["a"], &["1"]);
    check("^[\\b]$", &["\u{8}"], &["b"]);
    check("^[]$", &[], &["", "a"]);
    check("^[^]$", &["a", "\n"], &["", "ab"]);
    check("^[[]$", &["["], &["]"]);
    check("^[a&&b]$", &["a", "&", "b"], &["c"]);
    check("^[\\-a]$", &["-", "a"], &["b"]);
}

#[test]
fn groups_and_alternation() {
    check("^(?:ab|cd)+$", &["ab", "abcd"], &["", "abc"]);
    check("^(?<year>\\d{4})-(\\d{2})$", &["2024-01"], &["2024-1"]);
    check("(^a|b$)", &["ax", "xb"], &["xa", "bx"]);
}

#[test]
fn unsupported_constructs() {
    assert_eq!(error_kind("a(?=b)"), LeafErrorKind::Unsupported);
    assert_eq!(error_kind("(?<!a)b"), LeafErrorKind::Unsupported);
    assert_eq!(error_kind("(a)\\1"), LeafErrorKind::Unsupported);
    assert_eq!(error_kind("\\bword"), LeafErrorKind::Unsupported);
    assert_eq!(error_kind("(unclosed"), LeafErrorKind::Invalid);
    assert_eq!(error_kind("[z-a]"), LeafErrorKind::Invalid);
}

#[test]
fn random_patterns_never_panic() {
    let pieces = [
        "a",
        "b",
        "(",
        ")",
        "(?:",
        "(?<n>",
        "[",
        "]",
        "[^",
        "-",
        "|",
        "*",
        "+",
        "?",
        "{2}",
        "{1,3}",
        "{",
        "}",
        "\\",
        "\\d",
        "\\u{1F600}",
        "\\uD83D",
        "\\x4",
        "\\c",
        "\\p{L}",
        "^",
        "$",
        ".",
        "😀",
        "\\b",
        "\\1",
        "(?=",
        "{0,40}",
    ];
    let mut seed = 3u64;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize % n
    };
    for _ in 0..1000 {
        let len = next(8);
        let pattern: String = (0..len).map(|_| pieces[next(pieces.len())]).collect();
        // Any outcome is fine but a panic; a success must agree with itself on a few strings.
        if let Ok(dfa) = pattern_dfa(&pattern, false) {
            let _ = (dfa.accepts(""), dfa.accepts("ab😀"));
        }
    }
}

#[test]
fn leading_lookaheads() {
    check(
        "^(?=.*\\d)(?=.*[a-z])(?!.*\\s).{8,}$",
        &["abcdefg1", "1aaaaaaaaa"],
        &["abcdefgh", "12345678", "abc 12345", "a1"],
    );
    check(
        "^(?![ \\t\\n]*\\(default(.*)\\))[\\s\\S]*",
        &["x", "", "(defaults"],
        &["(default)", "  (default1))"],
    );
    check("^(?!-)[a-z-]+", &["a-", "ab"], &["-a"]);
    assert_eq!(error_kind("^(?=a)b|c"), LeafErrorKind::Unsupported);
    assert_eq!(error_kind("a(?=b)"), LeafErrorKind::Unsupported);
}
