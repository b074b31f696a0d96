//! Tests of the matcher: data cases under `tests/data/gbnf-matcher/` (a grammar and its
//! samples, snapshotted with their verdicts), recorded llama.cpp verdicts on random
//! grammars, and the streaming API, errors and scaling cases.
#![allow(clippy::unwrap_used)]

use std::fmt::Write;
use std::path::{Path, PathBuf};

use gbnf::{CharClass, ErrorKind, Expr, Grammar, Matcher, RuleName, Verdict};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn data_dir() -> PathBuf {
    repo_root().join("tests/data/gbnf-matcher")
}

fn matcher_of(text: &str) -> Matcher {
    let grammar = support::parse(text).unwrap();
    Matcher::new(&grammar, "root").unwrap()
}

fn verdict_line(verdict: Verdict, sample: &str) -> String {
    let quoted = serde_json::to_string(sample).unwrap();
    match verdict {
        Verdict::Accept => format!("ACCEPT\t{quoted}"),
        Verdict::Prefix => format!("PREFIX\t{quoted}"),
        Verdict::Reject { offset } => format!("REJECT {offset}\t{quoted}"),
    }
}

/// Runs one data case: `<name>.gbnf` with samples in `<name>.samples.jsonl` (one JSON
/// string per line), snapshotted as `snapshots/gbnf-matcher/<name>.snap`.
fn check(name: &str) {
    let dir = data_dir();
    let text = std::fs::read_to_string(dir.join(format!("{name}.gbnf"))).unwrap();
    let samples_text = std::fs::read_to_string(dir.join(format!("{name}.samples.jsonl"))).unwrap();
    let matcher = matcher_of(&text);
    let mut out = String::new();
    writeln!(out, "--- grammar (root: root) ---").unwrap();
    out.push_str(text.trim_end());
    out.push('\n');
    writeln!(out, "--- verdicts ---").unwrap();
    for line in samples_text.lines().filter(|line| !line.trim().is_empty()) {
        let sample: String = serde_json::from_str(line).unwrap();
        let verdict = matcher.verdict(&sample);
        // Feeding code points one by one must agree with the one-shot verdict (which
        // takes fast paths through runs of ASCII).
        let mut state = matcher.start();
        let rejected = sample.char_indices().find(|&(_, ch)| !state.advance(ch));
        let streamed = match rejected {
            Some((offset, _)) => Verdict::Reject { offset },
            None if state.is_accepting() => Verdict::Accept,
            None if state.can_continue() => Verdict::Prefix,
            None => Verdict::Reject {
                offset: sample.len(),
            },
        };
        assert_eq!(verdict, streamed, "{name}: {sample:?}");
        writeln!(out, "{}", verdict_line(verdict, &sample)).unwrap();
    }
    insta::with_settings!({
        snapshot_path => repo_root().join("snapshots/gbnf-matcher"),
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!(name, out);
    });
}

#[test]
fn every_data_case_has_a_test() {
    let mut names: Vec<String> = std::fs::read_dir(data_dir())
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".gbnf").map(str::to_owned)
        })
        .collect();
    names.sort();
    let source = std::fs::read_to_string(file!()).unwrap_or_default();
    let source = if source.is_empty() {
        std::fs::read_to_string(repo_root().join("crates/gbnf/tests/matcher.rs")).unwrap()
    } else {
        source
    };
    for name in names {
        assert!(
            source.contains(&format!("check(\"{name}\")")),
            "no test for data case {name}"
        );
    }
}

#[test]
fn literal() {
    check("literal");
}
#[test]
fn alternatives_and_empty() {
    check("alternatives-and-empty");
}
#[test]
fn nullable_loops() {
    check("nullable-loops");
}
#[test]
fn bounded_repetition() {
    check("bounded-repetition");
}
#[test]
fn multibyte() {
    check("multibyte");
}
#[test]
fn negated_class_and_any() {
    check("negated-class-and-any");
}
#[test]
fn no_finite_derivation() {
    check("no-finite-derivation");
}
#[test]
fn json() {
    check("json");
}
#[test]
fn right_recursion() {
    check("right-recursion");
}
#[test]
fn center_recursion() {
    check("center-recursion");
}
#[test]
fn left_recursion_gets_the_context_free_answer() {
    // llama.cpp refuses this grammar, so it cannot be a data case checked against it.
    let matcher = matcher_of("root ::= root \"a\" | \"b\"");
    assert_eq!(matcher.verdict(""), Verdict::Prefix);
    assert_eq!(matcher.verdict("b"), Verdict::Accept);
    assert_eq!(matcher.verdict("baaa"), Verdict::Accept);
    assert_eq!(matcher.verdict("ab"), Verdict::Reject { offset: 0 });
    assert_eq!(matcher.verdict("bab"), Verdict::Reject { offset: 2 });
    let matcher = matcher_of("root ::= x \"a\" | \"b\"\nx ::= e root\ne ::= \"\" | \"e\"");
    assert_eq!(matcher.verdict("baa"), Verdict::Accept);
    assert_eq!(matcher.verdict("ebaa"), Verdict::Accept);
    assert_eq!(matcher.verdict("ebae"), Verdict::Reject { offset: 3 });
    assert_eq!(matcher.verdict("eeba"), Verdict::Prefix);
}
#[test]
fn ambiguous_optionals() {
    check("ambiguous-optionals");
}
#[test]
fn nested_repetition() {
    check("nested-repetition");
}

// ---------------------------------------------------------------------------------------
// Errors.

#[test]
fn missing_start_rule_is_an_error() {
    let grammar = support::parse("a ::= \"x\"").unwrap();
    let err = Matcher::new(&grammar, "root").unwrap_err();
    assert_eq!(
        err.kind,
        ErrorKind::MissingStartRule {
            name: "root".to_owned()
        }
    );
}

#[test]
fn undefined_rule_is_an_error_even_when_unreachable() {
    let grammar = support::parse("root ::= \"x\"\nother ::= missing").unwrap();
    let err = Matcher::new(&grammar, "root").unwrap_err();
    assert_eq!(
        err.kind,
        ErrorKind::UndefinedRule {
            name: "missing".to_owned(),
            rule: "other".to_owned()
        }
    );
}

#[test]
fn custom_start_rule() {
    let grammar = support::parse("root ::= \"a\"\nother ::= \"b\"+").unwrap();
    let matcher = Matcher::new(&grammar, "other").unwrap();
    assert_eq!(matcher.verdict("bbb"), Verdict::Accept);
    assert_eq!(matcher.verdict("a"), Verdict::Reject { offset: 0 });
}

#[test]
fn huge_repetition_products_are_refused_not_unrolled() {
    // Nested counts become rules of their own, so this compiles to a few thousand states.
    let nested = Expr::repeat(
        Expr::repeat(
            Expr::repeat(Expr::literal("ab"), 1000, Some(1000)),
            1000,
            Some(1000),
        ),
        1000,
        Some(1000),
    );
    let mut grammar = Grammar::new();
    grammar.insert(RuleName::new("root").unwrap(), nested);
    let matcher = Matcher::new(&grammar, "root").unwrap();
    assert_eq!(matcher.verdict("abab"), Verdict::Prefix);
    assert_eq!(matcher.verdict("aba"), Verdict::Prefix);
    assert_eq!(matcher.verdict("abb"), Verdict::Reject { offset: 2 });

    let mut grammar = Grammar::new();
    let flat = Expr::repeat(
        Expr::class(CharClass::new([('a', 'z')], false)),
        0,
        Some(u32::MAX),
    );
    grammar.insert(RuleName::new("root").unwrap(), flat);
    let err = Matcher::new(&grammar, "root").unwrap_err();
    assert!(
        matches!(err.kind, ErrorKind::RepetitionLimit { .. }),
        "{err}"
    );
}

#[test]
fn empty_alternation_is_not_viable() {
    let mut grammar = Grammar::new();
    grammar.insert(RuleName::new("root").unwrap(), Expr::Alt(Vec::new()));
    let matcher = Matcher::new(&grammar, "root").unwrap();
    assert!(!matcher.start().is_viable());
    assert_eq!(matcher.verdict(""), Verdict::Reject { offset: 0 });
    assert_eq!(matcher.verdict("a"), Verdict::Reject { offset: 0 });
}

// ---------------------------------------------------------------------------------------
// Streaming.

#[test]
fn rejected_advance_leaves_the_state_unchanged() {
    let matcher = matcher_of("root ::= \"ab\" | \"ac\"");
    let mut state = matcher.start();
    assert!(state.advance('a'));
    assert!(!state.advance('x'));
    assert!(!state.is_accepting());
    assert!(state.advance('c'));
    assert!(state.is_accepting());
    assert!(!state.can_continue());
    assert!(!state.advance('c'));
    assert!(state.is_viable());
}

#[test]
fn clones_are_independent() {
    let matcher = matcher_of("root ::= \"a\"+ \"b\"");
    let mut state = matcher.start();
    assert!(state.advance('a'));
    let mut fork = state.clone();
    assert!(fork.advance('b'));
    assert!(fork.is_accepting());
    assert!(!state.is_accepting());
    assert!(state.advance('a'));
    assert!(state.advance('b'));
    assert!(state.is_accepting());
}

#[test]
fn allowed_next_is_the_union_of_what_can_come() {
    let matcher = matcher_of("root ::= [a-c] | \"x\" [0-9] | [^q-z] \"!\"");
    let state = matcher.start();
    let allowed = state.allowed_next();
    assert!(allowed.is_negated(), "{allowed:?}");
    assert_eq!(allowed, CharClass::new([('q', 'w'), ('y', 'z')], true));
    let mut state = matcher.start();
    assert!(state.advance('x'));
    assert_eq!(state.allowed_next(), CharClass::new([('0', '9')], false));
    let mut state = matcher.start();
    assert!(state.advance('a'));
    assert!(state.is_accepting());
    assert_eq!(state.allowed_next(), CharClass::new([('!', '!')], false));
    assert!(state.advance('!'));
    assert_eq!(state.allowed_next(), CharClass::new([], false));
}

#[test]
fn allowed_next_of_any_is_everything() {
    let matcher = matcher_of("root ::= .");
    assert_eq!(matcher.start().allowed_next(), CharClass::new([], true));
}

#[test]
fn tokens_match_ids_not_characters() {
    let matcher = matcher_of("root ::= \"a\" <[10]> !<[11]> \"b\"");
    let mut state = matcher.start();
    assert!(state.advance('a'));
    assert!(!state.advance_token(11));
    assert!(state.allows_token(10));
    assert!(!state.allows_token(11));
    assert!(state.advance_token(10));
    assert_eq!(state.allowed_next(), CharClass::new([], false));
    assert!(state.can_continue());
    assert!(!state.advance_token(11));
    assert!(state.advance_token(12));
    assert!(state.advance('b'));
    assert!(state.is_accepting());
    assert_eq!(matcher.verdict("a"), Verdict::Prefix);
    assert_eq!(matcher.verdict("ab"), Verdict::Reject { offset: 1 });
}

#[test]
fn token_text_matches_no_id() {
    let matcher = matcher_of("root ::= <think> | !<think> | \"x\"");
    let state = matcher.start();
    assert!(state.can_continue());
    assert!((0..100).all(|id| !state.allows_token(id)));
    assert_eq!(matcher.verdict("x"), Verdict::Accept);
}

// ---------------------------------------------------------------------------------------
// Scaling: these would take exponential time or overflow the stack in a naive matcher.

#[test]
fn fifty_ambiguous_optionals() {
    let text = format!("root ::= {}", "\"a\"? ".repeat(50));
    let matcher = matcher_of(&text);
    assert_eq!(matcher.verdict(&"a".repeat(25)), Verdict::Accept);
    assert_eq!(matcher.verdict(&"a".repeat(50)), Verdict::Accept);
    assert_eq!(
        matcher.verdict(&"a".repeat(51)),
        Verdict::Reject { offset: 50 }
    );
}

#[test]
fn fifty_ambiguous_optionals_as_rules() {
    let mut text = String::from("root ::=");
    for i in 0..50 {
        text.push_str(&format!(" o{i}"));
    }
    for i in 0..50 {
        text.push_str(&format!("\no{i} ::= \"a\" | \"\""));
    }
    let matcher = matcher_of(&text);
    assert_eq!(matcher.verdict(&"a".repeat(50)), Verdict::Accept);
    assert_eq!(
        matcher.verdict(&"a".repeat(51)),
        Verdict::Reject { offset: 50 }
    );
}

#[test]
fn deep_right_recursion() {
    let matcher = matcher_of("root ::= x\nx ::= \"a\" x | \"\"");
    let input = "a".repeat(100_000);
    assert_eq!(matcher.verdict(&input), Verdict::Accept);
    assert_eq!(
        matcher.verdict(&format!("{input}b")),
        Verdict::Reject { offset: 100_000 }
    );
}

#[test]
fn deep_nesting() {
    let matcher = matcher_of("root ::= x\nx ::= \"(\" x \")\" | \"\"");
    let input = format!("{}{}", "(".repeat(50_000), ")".repeat(50_000));
    assert_eq!(matcher.verdict(&input), Verdict::Accept);
    assert_eq!(matcher.verdict(&input[..60_000]), Verdict::Prefix);
    assert_eq!(
        matcher.verdict(&format!("{input})")),
        Verdict::Reject { offset: 100_000 }
    );
}

#[test]
fn deep_expression_nesting_in_the_grammar() {
    const DEPTH: usize = 100_000;
    let mut expr = Expr::literal("a");
    for _ in 0..DEPTH {
        expr = Expr::Alt(vec![
            Expr::Seq(vec![expr, Expr::literal("b")]),
            Expr::literal("c"),
        ]);
    }
    let mut grammar = Grammar::new();
    grammar.insert(RuleName::new("root").unwrap(), expr);
    let matcher = Matcher::new(&grammar, "root").unwrap();
    assert_eq!(matcher.verdict("abbb"), Verdict::Prefix);
    assert_eq!(
        matcher.verdict(&format!("a{}", "b".repeat(DEPTH))),
        Verdict::Accept
    );
    assert_eq!(matcher.verdict("cb"), Verdict::Accept);
    assert_eq!(matcher.verdict("ca"), Verdict::Reject { offset: 1 });
    // Dropping the IR recurses once per level; leak it rather than test the IR's Drop.
    std::mem::forget(grammar);
}

/// A small GBNF reader for these tests until `gbnf::read` lands: rules, literals, classes,
/// `.`, groups, repetition operators and token elements, with llama.cpp's escapes.
mod support {
    use gbnf::{CharClass, Expr, Grammar, RuleName, Token, TokenKind};

    pub fn parse(text: &str) -> Result<Grammar, String> {
        let mut parser = Parser {
            chars: text.chars().collect(),
            pos: 0,
        };
        let mut grammar = Grammar::new();
        loop {
            parser.skip_space(true);
            if parser.pos >= parser.chars.len() {
                break;
            }
            let name = parser.name()?;
            parser.skip_space(false);
            parser.expect_str("::=")?;
            parser.skip_space(true);
            let body = parser.alternatives(0)?;
            grammar.insert(RuleName::new(&name).map_err(|e| e.to_string())?, body);
        }
        Ok(grammar)
    }

    struct Parser {
        chars: Vec<char>,
        pos: usize,
    }

    impl Parser {
        fn peek(&self) -> Option<char> {
            self.chars.get(self.pos).copied()
        }

        fn skip_space(&mut self, newlines: bool) {
            while let Some(ch) = self.peek() {
                if ch == '#' {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                } else if ch == ' ' || ch == '\t' || (newlines && (ch == '\n' || ch == '\r')) {
                    self.pos += 1;
                } else {
                    break;
                }
            }
        }

        fn expect_str(&mut self, s: &str) -> Result<(), String> {
            for want in s.chars() {
                if self.peek() != Some(want) {
                    return Err(format!("expected {s:?} at {}", self.pos));
                }
                self.pos += 1;
            }
            Ok(())
        }

        fn name(&mut self) -> Result<String, String> {
            let start = self.pos;
            while self
                .peek()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
            {
                self.pos += 1;
            }
            if start == self.pos {
                return Err(format!("expected a name at {}", self.pos));
            }
            Ok(self.chars[start..self.pos].iter().collect())
        }

        fn alternatives(&mut self, depth: usize) -> Result<Expr, String> {
            let mut alts = vec![self.sequence(depth)?];
            while self.peek() == Some('|') {
                self.pos += 1;
                self.skip_space(true);
                alts.push(self.sequence(depth)?);
            }
            Ok(Expr::alt(alts))
        }

        fn sequence(&mut self, depth: usize) -> Result<Expr, String> {
            let mut items = Vec::new();
            self.skip_space(depth > 0);
            while let Some(ch) = self.peek() {
                let atom = match ch {
                    '"' => {
                        self.pos += 1;
                        let mut text = String::new();
                        while self.peek() != Some('"') {
                            text.push(self.char_or_escape()?);
                        }
                        self.pos += 1;
                        Expr::literal(&text)
                    }
                    '[' => {
                        self.pos += 1;
                        let negated = self.peek() == Some('^');
                        if negated {
                            self.pos += 1;
                        }
                        let mut ranges = Vec::new();
                        while self.peek() != Some(']') {
                            let lo = self.char_or_escape()?;
                            let mut hi = lo;
                            if self.peek() == Some('-')
                                && self.chars.get(self.pos + 1) != Some(&']')
                            {
                                self.pos += 1;
                                hi = self.char_or_escape()?;
                            }
                            ranges.push((lo, hi));
                        }
                        self.pos += 1;
                        Expr::class(CharClass::new(ranges, negated))
                    }
                    '.' => {
                        self.pos += 1;
                        Expr::Any
                    }
                    '(' => {
                        self.pos += 1;
                        self.skip_space(true);
                        let inner = self.alternatives(depth + 1)?;
                        self.skip_space(true);
                        self.expect_str(")")?;
                        inner
                    }
                    '<' | '!' => {
                        let negated = ch == '!';
                        if negated {
                            self.pos += 1;
                        }
                        self.expect_str("<")?;
                        let start = self.pos;
                        while self.peek().is_some_and(|c| c != '>') {
                            self.pos += 1;
                        }
                        let inner: String = self.chars[start..self.pos].iter().collect();
                        self.pos += 1;
                        let kind = match inner.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
                            Some(id) => TokenKind::Id(id.parse().map_err(|_| "bad token id")?),
                            None => TokenKind::Text(inner),
                        };
                        Expr::Token(Token { kind, negated })
                    }
                    c if c.is_ascii_alphanumeric() || c == '-' => {
                        let name = self.name()?;
                        Expr::Rule(RuleName::new(&name).map_err(|e| e.to_string())?)
                    }
                    _ => break,
                };
                let mut atom = atom;
                loop {
                    match self.peek() {
                        Some('*') => atom = Expr::star(atom),
                        Some('+') => atom = Expr::plus(atom),
                        Some('?') => atom = Expr::optional(atom),
                        Some('{') => {
                            self.pos += 1;
                            let min = self.number()?;
                            let max = if self.peek() == Some(',') {
                                self.pos += 1;
                                if self.peek() == Some('}') {
                                    None
                                } else {
                                    Some(self.number()?)
                                }
                            } else {
                                Some(min)
                            };
                            self.expect_str("}")?;
                            atom = Expr::repeat(atom, min, max);
                            continue;
                        }
                        _ => break,
                    }
                    self.pos += 1;
                }
                items.push(atom);
                self.skip_space(depth > 0);
            }
            Ok(Expr::seq(items))
        }

        fn number(&mut self) -> Result<u32, String> {
            let start = self.pos;
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.pos += 1;
            }
            let digits: String = self.chars[start..self.pos].iter().collect();
            digits
                .parse()
                .map_err(|_| format!("expected a number at {start}"))
        }

        fn char_or_escape(&mut self) -> Result<char, String> {
            let ch = self.peek().ok_or("unexpected end")?;
            self.pos += 1;
            if ch != '\\' {
                return Ok(ch);
            }
            let esc = self.peek().ok_or("unexpected end")?;
            self.pos += 1;
            let hex_len = match esc {
                'x' => 2,
                'u' => 4,
                'U' => 8,
                'n' => return Ok('\n'),
                't' => return Ok('\t'),
                'r' => return Ok('\r'),
                '\\' | '"' | '[' | ']' => return Ok(esc),
                _ => return Err(format!("unknown escape at {}", self.pos)),
            };
            let digits: String = self.chars[self.pos..self.pos + hex_len].iter().collect();
            self.pos += hex_len;
            let code = u32::from_str_radix(&digits, 16).map_err(|e| e.to_string())?;
            char::from_u32(code).ok_or_else(|| "bad code point".to_owned())
        }
    }
}
