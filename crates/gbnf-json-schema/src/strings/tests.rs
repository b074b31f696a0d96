//! String leaf tests: JSON encodings, lengths, patterns and formats together, checked on the
//! lowered grammar; and a property test comparing patterns with the `regex` crate.

#![allow(clippy::unwrap_used)] // Tests fail loudly on purpose.

use gbnf::{Expr, GrammarBuilder};

use crate::pattern::testutil::{Lowered, Recognizer};
use crate::strings::{
    lower_string, CharRules, Escapes, LeafError, LeafErrorKind, LeafOptions, StringConstraints,
};

/// `lower_string` as a rule named `s`, with character rules of its own.
fn lower_s(
    builder: &mut GrammarBuilder,
    c: &StringConstraints,
    options: &LeafOptions,
) -> Result<Expr, LeafError> {
    lower_string(builder, &mut CharRules::default(), "s", c, options)
}

fn constraints(
    min: u64,
    max: Option<u64>,
    patterns: &[&str],
    format: Option<&str>,
) -> StringConstraints {
    StringConstraints {
        min_length: min,
        max_length: max,
        patterns: patterns.iter().map(|p| p.to_string()).collect(),
        format: format.map(str::to_owned),
        not_patterns: Vec::new(),
        not_formats: Vec::new(),
    }
}

/// Checks JSON texts (quotes included) against the lowered grammar.
fn check_with(c: &StringConstraints, options: &LeafOptions, accept: &[&str], reject: &[&str]) {
    let mut builder = GrammarBuilder::new();
    let expr = lower_s(&mut builder, c, options).unwrap_or_else(|e| panic!("{c:?}: {e}"));
    let lowered = Lowered::new(builder, expr);
    for text in accept {
        assert!(lowered.accepts(text), "{c:?}: should accept {text}");
    }
    for text in reject {
        assert!(!lowered.accepts(text), "{c:?}: should reject {text}");
    }
}

fn check(c: &StringConstraints, accept: &[&str], reject: &[&str]) {
    check_with(c, &LeafOptions::default(), accept, reject);
}

#[test]
fn lengths_count_code_points_of_the_decoded_string() {
    let c = constraints(2, Some(3), &[], None);
    check(
        &c,
        &[
            r#""ab""#,
            r#""abc""#,
            r#""\n\"""#,
            r#""😀😀""#,
            r#""\ud83d\ude00x""#,
            r#""\u0061\/""#,
        ],
        &[
            r#""a""#,
            r#""abcd""#,
            r#""\ud83d\ude00""#,
            r#""a"#,
            r#"ab"#,
            "\"a\u{1}\"",
            r#""\ud83dx""#,
            r#""\x41b""#,
        ],
    );
    check(
        &constraints(0, None, &[], None),
        &[r#""""#, r#""any \"thing\" \\ \t""#],
        &[r#""\""#, "\"\n\""],
    );
}

#[test]
fn huge_length_bounds_stay_small() {
    let c = constraints(0, Some(1_000_000_000), &[], None);
    let mut builder = GrammarBuilder::new();
    let expr = lower_s(&mut builder, &c, &LeafOptions::default()).unwrap();
    assert!(format!("{expr:?}").len() < 300);
    // The matcher refuses a repetition this large (llama.cpp's printer legalises it), so
    // check the printed grammar and the recognizer only.
    let mut grammar = builder.finish();
    grammar.insert(gbnf::RuleName::new("root").unwrap(), expr.clone());
    assert!(grammar.rules.len() <= 3);
    let text = gbnf::print(&grammar);
    assert!(text.len() < 2000, "{text}");
    gbnf::check(&text, "root").unwrap();
    assert!(Recognizer::matches(&grammar, &expr, "\"abc\""));
    let big = constraints(0, Some(1_000_000_000), &["^a"], None);
    let err = lower_s(&mut GrammarBuilder::new(), &big, &LeafOptions::default()).unwrap_err();
    assert_eq!(
        (err.kind, err.keyword),
        (LeafErrorKind::Unsupported, "maxLength")
    );
}

#[test]
fn patterns_apply_to_the_decoded_string() {
    let c = constraints(0, None, &["^a\"b/c$"], None);
    check(
        &c,
        &[r#""a\"b/c""#, r#""a\u0022b\/c""#, r#""\u0061\"b/c""#],
        &[r#""a"b/c""#, r#""a\"b/cd""#],
    );
    let c = constraints(0, None, &["^[\\n]+$"], None);
    check(
        &c,
        &[r#""\n""#, r#""\u000a\n\u000A""#],
        &[r#""n""#, "\"\n\"", r#""""#],
    );
    let c = constraints(0, None, &["x"], None);
    check(&c, &[r#""x""#, r#""aaxbb""#, r#""\u0078""#], &[r#""aa""#]);
}

#[test]
fn required_escapes_only() {
    let options = LeafOptions {
        escapes: Escapes::Required,
        ..LeafOptions::default()
    };
    let c = constraints(0, None, &["^a.$"], None);
    check_with(
        &c,
        &options,
        &[
            r#""ab""#,
            r#""a\"""#,
            r#""a\u0022""#,
            r#""a\t""#,
            r#""a\u0009""#,
        ],
        &[r#""\u0061b""#, r#""a\/""#, r#""a\n""#],
    );
}

#[test]
fn patterns_lengths_and_formats_intersect() {
    let c = constraints(3, Some(5), &["^[a-z]+$", "b"], None);
    check(
        &c,
        &[r#""abc""#, r#""bbbbb""#],
        &[r#""ab""#, r#""aaaa""#, r#""abcdef""#, r#""aBc""#],
    );
    let c = constraints(0, Some(10), &[], Some("date"));
    check(&c, &[r#""2024-02-29""#], &[r#""2023-02-29""#]);
    let c = constraints(0, Some(9), &[], Some("date"));
    let err = lower_s(&mut GrammarBuilder::new(), &c, &LeafOptions::default()).unwrap_err();
    assert_eq!(err.kind, LeafErrorKind::Unsatisfiable);
    let c = constraints(0, None, &["^2024-"], Some("date"));
    check(&c, &[r#""2024-01-01""#], &[r#""2023-01-01""#]);
}

#[test]
fn unknown_formats_are_reported() {
    let c = constraints(0, None, &[], Some("color"));
    let err = lower_s(&mut GrammarBuilder::new(), &c, &LeafOptions::default()).unwrap_err();
    assert_eq!(
        (err.kind, err.keyword),
        (LeafErrorKind::UnknownFormat, "format")
    );
}

#[test]
fn raw_patterns_describe_the_text() {
    let options = LeafOptions {
        raw_pattern: true,
        ..LeafOptions::default()
    };
    let c = constraints(0, None, &["^[0-9]{3}\"?$"], None);
    check_with(&c, &options, &["123", "123\""], &["\"123\"", "12"]);
    let with_length = constraints(1, None, &["^a$"], None);
    let err = lower_s(&mut GrammarBuilder::new(), &with_length, &options).unwrap_err();
    assert_eq!(err.kind, LeafErrorKind::Unsupported);
}

/// A deterministic pseudo-random generator.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }

    fn string(&mut self, alphabet: &[char]) -> String {
        let len = self.next(7);
        (0..len)
            .map(|_| alphabet[self.next(alphabet.len() as u64) as usize])
            .collect()
    }

    /// A JSON encoding of `text`, choosing randomly among the encodings of each code point.
    fn encode(&mut self, text: &str) -> String {
        let mut out = String::from("\"");
        for ch in text.chars() {
            let code = u32::from(ch);
            let short = match ch {
                '"' => Some("\\\""),
                '\\' => Some("\\\\"),
                '/' => Some("\\/"),
                '\n' => Some("\\n"),
                '\t' => Some("\\t"),
                _ => None,
            };
            let must = code < 0x20 || ch == '"' || ch == '\\';
            match self.next(3) {
                0 if short.is_some() => out.push_str(short.unwrap_or_default()),
                1 if code > 0xFFFF => {
                    let v = code - 0x10000;
                    let upper = self.next(2) == 0;
                    let (high, low) = (0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
                    let pair = format!("\\u{high:04x}\\u{low:04x}");
                    out.push_str(&if upper {
                        pair.to_uppercase().replace("\\U", "\\u")
                    } else {
                        pair
                    });
                }
                1 => out.push_str(&format!("\\u{code:04X}")),
                _ if must => out.push_str(&format!("\\u{code:04x}")),
                _ => out.push(ch),
            }
        }
        out.push('"');
        out
    }
}

#[test]
fn property_patterns_agree_with_the_regex_crate() {
    // Patterns whose ECMA and Rust readings coincide.
    let patterns = [
        "^a+b*$",
        "ab|ba",
        "^(?:[a-c]{2}|\\d)+$",
        "c$",
        "^.{2,4}$",
        "^[^a\"]*$",
        "(?:a\\\\)+",
        "^[a/]{1,3}c?$",
        "^😀|\n$",
        "^[\u{10000}-😀]*a",
        "[é-\u{10FFFF}]{2}",
    ];
    let alphabet = [
        'a',
        'b',
        'c',
        '1',
        '"',
        '\\',
        '/',
        '\n',
        '😀',
        'é',
        '\u{10000}',
        '\u{10FFFF}',
        '\u{1}',
    ];
    let mut rng = Lcg(11);
    for pattern in patterns {
        let oracle = regex::Regex::new(pattern).unwrap();
        let c = constraints(0, None, &[pattern], None);
        let mut builder = GrammarBuilder::new();
        let expr = lower_s(&mut builder, &c, &LeafOptions::default()).unwrap();
        let lowered = Lowered::new(builder, expr);
        for _ in 0..300 {
            let text = rng.string(&alphabet);
            let json = rng.encode(&text);
            assert_eq!(
                lowered.accepts(&json),
                oracle.is_match(&text),
                "{pattern:?} on {text:?} encoded {json}"
            );
        }
    }
}

#[test]
fn key_languages_from_complements() {
    let options = LeafOptions::default();
    let starts_with_a = crate::strings::string_language(&["^a", "b"], &options).unwrap();
    let others = starts_with_a.complement();
    let mut builder = GrammarBuilder::new();
    let expr = crate::strings::lower_string_dfa(
        &mut builder,
        &mut CharRules::default(),
        "key",
        &others,
        &options,
    )
    .unwrap();
    let lowered = Lowered::new(builder, expr);
    for accepted in [r#""""#, r#""b""#, r#""a""#, r#""\u0062ab""#, r#""😀""#] {
        assert!(lowered.accepts(accepted), "{accepted}");
    }
    for rejected in [
        r#""ab""#,
        r#""\u0061b""#,
        r#""axxb""#,
        r#""\ud800""#,
        r#""\udfff""#,
    ] {
        assert!(!lowered.accepts(rejected), "{rejected}");
    }
}

#[test]
fn implied_length_bounds_need_no_product() {
    let lower = |c: &StringConstraints| {
        let mut builder = GrammarBuilder::new();
        let expr = lower_s(&mut builder, c, &LeafOptions::default()).unwrap();
        gbnf::print(&Lowered::new(builder, expr).grammar)
    };
    let plain = lower(&constraints(0, None, &[], Some("uuid")));
    assert_eq!(
        lower(&constraints(36, Some(100_000), &[], Some("uuid"))),
        plain
    );
    let date = constraints(0, Some(100_000), &["^2"], Some("date"));
    assert!(lower_s(&mut GrammarBuilder::new(), &date, &LeafOptions::default()).is_ok());
    let too_short = constraints(0, Some(35), &[], Some("uuid"));
    let err = lower_s(
        &mut GrammarBuilder::new(),
        &too_short,
        &LeafOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err.kind, LeafErrorKind::Unsatisfiable);
}
