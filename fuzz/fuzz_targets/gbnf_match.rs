//! Fuzzes the matcher: a small grammar built from the input bytes and a string to match.
//! The matcher must never panic, the one-shot verdict must agree with feeding code points
//! one by one, and `allowed_next` must say exactly which code point `advance` takes. Both
//! run within a step limit (`STEP_LIMIT`, well below the default, so that the fuzzer keeps
//! its pace on highly ambiguous grammars); where either gives up, the two may count their
//! steps differently (the one-shot verdict takes runs of ASCII in one step each), so they
//! are not compared.
#![no_main]

use gbnf::{CharClass, Expr, Grammar, Matcher, RuleName, Token, TokenKind, Verdict};
use libfuzzer_sys::fuzz_target;

const ALPHABET: [char; 5] = ['a', 'b', 'é', '\n', '😀'];

/// Far more than the grammars here need on 24 code points unless they are highly ambiguous.
const STEP_LIMIT: u64 = 1 << 18;

struct Bytes<'a> {
    data: &'a [u8],
}

impl Bytes<'_> {
    fn next(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&byte, rest)) => {
                self.data = rest;
                byte
            }
            None => 0,
        }
    }
}

fn rule_name(idx: u8) -> RuleName {
    RuleName::new(&format!("r{}", idx % 4)).expect("valid name")
}

/// An expression from the bytes, built with an explicit budget so that it stays small.
fn expr(bytes: &mut Bytes, depth: u32) -> Expr {
    let byte = bytes.next();
    let ch = ALPHABET[(byte as usize >> 4) % ALPHABET.len()];
    match byte % 12 {
        0 => Expr::Empty,
        1 | 2 => Expr::literal(&ch.to_string()),
        3 => Expr::class(CharClass::new(
            [(ch, ALPHABET[(bytes.next() as usize) % 5])],
            byte & 0x80 != 0,
        )),
        4 => Expr::Any,
        5 | 6 => Expr::rule(&rule_name(bytes.next())),
        7 => Expr::Token(Token {
            kind: TokenKind::Id(u32::from(bytes.next() % 3)),
            negated: byte & 0x80 != 0,
        }),
        8 if depth < 4 => Expr::seq([expr(bytes, depth + 1), expr(bytes, depth + 1)]),
        9 if depth < 4 => Expr::alt([expr(bytes, depth + 1), expr(bytes, depth + 1)]),
        10 | 11 if depth < 4 => {
            let min = u32::from(bytes.next() % 3);
            let max = match bytes.next() % 4 {
                0 => None,
                extra => Some(min + u32::from(extra) - 1),
            };
            Expr::repeat(expr(bytes, depth + 1), min, max)
        }
        _ => Expr::literal("b"),
    }
}

fuzz_target!(|data: &[u8]| {
    let mut bytes = Bytes { data };
    let n_rules = 1 + bytes.next() % 4;
    let mut grammar = Grammar::new();
    for idx in 0..n_rules {
        grammar.insert(rule_name(idx), expr(&mut bytes, 0));
    }
    let input: String = bytes
        .data
        .iter()
        .take(24)
        .map(|&byte| ALPHABET[byte as usize % ALPHABET.len()])
        .collect();
    let Ok(matcher) = Matcher::new(&grammar, "r0") else {
        return;
    };
    let verdict = matcher.verdict_within(&input, STEP_LIMIT);
    let mut state = matcher.start();
    state.set_step_limit(STEP_LIMIT);
    let mut streamed = None;
    for (offset, ch) in input.char_indices() {
        let allowed = state.allowed_next().contains(ch);
        let before = state.clone();
        let advanced = state.advance(ch);
        if state.gave_up() {
            return;
        }
        assert_eq!(
            allowed, advanced,
            "allowed_next disagrees with advance on {ch:?}"
        );
        if !advanced {
            assert_eq!(state.is_accepting(), before.is_accepting());
            assert_eq!(state.allowed_next(), before.allowed_next());
            streamed = Some(Verdict::Reject { offset });
            break;
        }
    }
    if matches!(verdict, Verdict::StepLimit { .. }) {
        return;
    }
    let streamed = streamed.unwrap_or(if state.is_accepting() {
        Verdict::Accept
    } else if state.can_continue() {
        Verdict::Prefix
    } else {
        Verdict::Reject {
            offset: input.len(),
        }
    });
    assert_eq!(verdict, streamed);
    for id in 0..3 {
        let mut fork = state.clone();
        let advanced = fork.advance_token(id);
        // As for code points above: where the fork gives up, its answer is unknown.
        if !fork.gave_up() {
            assert_eq!(advanced, state.allows_token(id));
        }
    }
});
