//! Property tests of the printer and reader on random canonical grammars:
//! `read(print(g)) == g` when `g` is within llama.cpp's limits, and in every case the
//! printed text reads back, validates the same way, and printing is a fixed point.

use gbnf::{CharClass, Expr, Grammar, RuleName, Token, TokenKind};
use proptest::prelude::*;

const NAMES: [&str; 5] = ["root", "a", "b-1", "item", "x9"];

fn name() -> impl Strategy<Value = RuleName> {
    prop::sample::select(&NAMES[..]).prop_map(|name| RuleName::new(name).expect("valid name"))
}

fn any_char() -> impl Strategy<Value = char> {
    prop_oneof![
        prop::sample::select(vec![
            'a', '-', ']', '[', '\\', '^', '"', ' ', '\n', '\t', '\0', 'é', '😀', '\u{2028}',
            '\u{7f}'
        ]),
        any::<char>(),
    ]
}

fn leaf() -> impl Strategy<Value = Expr> {
    prop_oneof![
        Just(Expr::Empty),
        prop::collection::vec(any_char(), 1..6)
            .prop_map(|chars| Expr::literal(&chars.into_iter().collect::<String>())),
        (
            prop::collection::vec((any_char(), any_char()), 1..4),
            any::<bool>()
        )
            .prop_map(|(ranges, negated)| {
                let ranges: Vec<(char, char)> = ranges
                    .into_iter()
                    .map(|(a, b)| if a <= b { (a, b) } else { (b, a) })
                    .collect();
                Expr::Class(CharClass::new(ranges, negated))
            }),
        Just(Expr::Any),
        name().prop_map(Expr::Rule),
        (any::<u32>(), any::<bool>()).prop_map(|(id, negated)| Expr::Token(Token {
            kind: TokenKind::Id(id),
            negated
        })),
        ("[a-z|_]{0,6}", any::<bool>()).prop_map(|(text, negated)| Expr::Token(Token {
            kind: TokenKind::Text(text),
            negated
        })),
    ]
}

/// Canonical expressions whose repetitions stay far below llama.cpp's limits.
fn expr() -> impl Strategy<Value = Expr> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 2..4).prop_map(Expr::seq),
            prop::collection::vec(inner.clone(), 2..4).prop_map(Expr::alt),
            (inner, 0u32..4, prop::option::of(0u32..5)).prop_map(|(item, min, max)| {
                let max = max.map(|max| max.max(min));
                Expr::repeat(item, min, max)
            }),
        ]
    })
}

fn grammar() -> impl Strategy<Value = Grammar> {
    prop::collection::vec((name(), expr()), 1..5).prop_map(|rules| {
        let mut grammar = Grammar::new();
        for (name, body) in rules {
            grammar.insert(name, body);
        }
        grammar
    })
}

/// Big repetitions, which printing must legalize.
fn big_grammar() -> impl Strategy<Value = Grammar> {
    (expr(), 0u32..6000, prop::option::of(0u32..9000)).prop_map(|(item, min, max)| {
        let max = max.map(|max| max.max(min));
        let mut grammar = Grammar::new();
        let body = Expr::repeat(Expr::seq([item, Expr::literal("z")]), min, max);
        grammar.insert(RuleName::new("root").expect("valid name"), body);
        grammar
    })
}

fn check(grammar: &Grammar) -> Result<(), TestCaseError> {
    let printed = gbnf::print(grammar);
    let reread =
        gbnf::read(&printed).map_err(|error| TestCaseError::fail(format!("{error}\n{printed}")))?;
    prop_assert_eq!(
        gbnf::print(&reread),
        printed.clone(),
        "printing is a fixed point"
    );
    let original = gbnf::validate(grammar, "root").map(|_| ());
    let again = gbnf::validate(&reread, "root").map(|_| ());
    prop_assert_eq!(
        original.is_ok(),
        again.is_ok(),
        "same verdict for\n{}",
        printed
    );
    if original.is_ok() {
        // What llama.cpp loads: the printed text passes `check`.
        let checked = gbnf::check(&printed, "root");
        prop_assert!(
            checked.is_ok(),
            "check refuses printed text: {:?}\n{}",
            checked.err(),
            printed
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn small_grammars_round_trip(grammar in grammar()) {
        check(&grammar)?;
        let printed = gbnf::print(&grammar);
        prop_assert_eq!(gbnf::read(&printed).ok(), Some(grammar), "read(print(g)) == g\n{}", printed);
    }

    #[test]
    fn big_repetitions_are_legalized(grammar in big_grammar()) {
        check(&grammar)?;
    }
}
