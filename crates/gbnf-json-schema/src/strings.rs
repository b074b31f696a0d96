//! String leaves: lowers `minLength`, `maxLength`, `pattern` and `format` into a grammar for
//! the JSON encoding of every string that satisfies all of them, quotes included.
//!
//! Lengths, patterns and formats apply to the decoded string, counted in code points; each is a
//! DFA over code points ([`crate::pattern`], [`crate::formats`]), they are intersected by
//! product, and the result is printed as a right-linear grammar whose transitions are the JSON
//! encodings of their code points. The grammar is exact and unambiguous.
//!
//! Encodings accepted for a code point (see [`Escapes`]):
//! - `Escapes::All` (exact): raw (except `"`, `\` and U+0000–U+001F, which JSON forbids raw),
//!   the short escapes `\" \\ \/ \b \f \n \r \t`, and `\uXXXX` with either hex case;
//!   astral code points also as a `\uD8xx\uDCxx` surrogate pair. Lone surrogate escapes are
//!   rejected (they decode to no Unicode string).
//! - `Escapes::Required`: `"`, `\` and U+0000–U+001F in all their escaped forms; every other
//!   code point raw only.
//!
//! Lengths alone print as `"\"" char{min,max} "\""` (the printer legalises large bounds);
//! combined with a pattern or format they become a counter automaton (product), which is only
//! built when it stays small (else Unsupported, keyword `maxLength`/`minLength`); bounds that
//! the pattern or format already implies (`uuid` with `maxLength: 36`) are simply dropped. `maxLength` above `u32::MAX` is treated as
//! unbounded (a documented approximation: no string that long is generated).
//!
//! `raw_pattern` (llama.cpp's `--raw-pattern`): the pattern describes the raw grammar text of
//! the value itself, with no quotes added and no JSON escaping; several patterns are
//! intersected; combining it with lengths or a format is Unsupported.

use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;

use gbnf::{CharClass, Expr, GrammarBuilder};

use crate::formats;
use crate::normalize::SeededHash;
use crate::numbers::raw_class;
use crate::pattern::dfa::{any_char, concat, Dfa};
use crate::pattern::{pattern_dfa, MAX_DFA_STATES};

/// The string keywords of one (normalised) schema.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct StringConstraints {
    pub min_length: u64,
    pub max_length: Option<u64>,
    /// Every pattern must match (ECMA-262 syntax, search semantics).
    pub patterns: Vec<String>,
    pub format: Option<String>,
    /// No pattern of these may match (from `not`).
    pub not_patterns: Vec<String>,
    /// None of these (known) formats may hold (from `not`).
    pub not_formats: Vec<String>,
}

/// The most states a product with a length counter may have.
const MAX_PRODUCT_STATES: usize = 20_000;

/// Lowers `constraints` into an expression for the JSON text (quotes included) of every string
/// that satisfies all of them. Helper rules are named `<name>-…`.
///
/// An unknown `format` gives [`LeafErrorKind::UnknownFormat`]; the core then warns and calls
/// again with `format: None`.
pub(crate) fn lower_string(
    builder: &mut GrammarBuilder,
    chars: &mut CharRules,
    name: &str,
    constraints: &StringConstraints,
    options: &LeafOptions,
) -> Result<Expr, LeafError> {
    let excludes = !constraints.not_patterns.is_empty() || !constraints.not_formats.is_empty();
    if options.raw_pattern && (!constraints.patterns.is_empty() || excludes) {
        if excludes {
            return Err(LeafError::unsupported(
                "not",
                "raw_pattern cannot be combined with a negated pattern or format",
            ));
        }
        return lower_raw_pattern(builder, name, constraints, options);
    }
    let min = constraints.min_length;
    let max = constraints
        .max_length
        .filter(|&max| max <= u64::from(u32::MAX));
    if let Some(max) = max {
        if min > max {
            return Err(LeafError::unsatisfiable(
                "minLength",
                "minLength exceeds maxLength",
            ));
        }
    }
    if constraints.patterns.is_empty() && constraints.format.is_none() && !excludes {
        let escapes = options.escapes;
        let min = u32::try_from(min)
            .map_err(|_| LeafError::unsupported("minLength", "minLength above 4294967295"))?;
        let max = max.map(|max| max as u32);
        let char = json_chars(builder, chars, name, &any_char(), escapes);
        return Ok(Expr::seq([
            Expr::literal("\""),
            Expr::repeat(char, min, max),
            Expr::literal("\""),
        ]));
    }
    thread_local! {
        // Shared, so that storing and reusing an automaton does not copy it.
        static MEMO: crate::pattern::memo::Table<(StringConstraints, LeafOptions), Result<Rc<Dfa>, LeafError>> =
            Default::default();
    }
    let dfa = crate::pattern::memo::get_or_make(&MEMO, &(constraints.clone(), *options), || {
        string_dfa(constraints, options, min, max).map(Rc::new)
    })?;
    let escapes = options.escapes;
    let mut encode = |builder: &mut GrammarBuilder, ranges: &[(u32, u32)]| {
        json_chars(builder, chars, name, ranges, escapes)
    };
    let body = dfa.to_expr(builder, name, &mut encode, &Expr::literal("\""));
    Ok(Expr::seq([Expr::literal("\""), body]))
}

/// The minimised automaton of the decoded strings meeting `constraints` (which have a pattern
/// or a format); `min` and `max` are the effective length bounds.
fn string_dfa(
    constraints: &StringConstraints,
    options: &LeafOptions,
    min: u64,
    max: Option<u64>,
) -> Result<Dfa, LeafError> {
    let format = match &constraints.format {
        None => None,
        Some(format) => match formats::format_dfa(format) {
            None => {
                return Err(LeafError {
                    keyword: "format",
                    kind: LeafErrorKind::UnknownFormat,
                    message: format!("unknown format {format:?}"),
                    pattern_index: None,
                })
            }
            Some(dfa) => Some(dfa?),
        },
    };
    let mut dfa = format;
    for (index, pattern) in constraints.patterns.iter().enumerate() {
        let next = pattern_dfa(pattern, options.dotall).map_err(|err| err.at_pattern(index))?;
        dfa = Some(conjoin(dfa, next, "pattern")?);
    }
    let not_patterns = constraints.not_patterns.iter().map(|p| (p, false));
    let not_formats = constraints.not_formats.iter().map(|f| (f, true));
    let mut excluded = Vec::new();
    for (source, format) in not_patterns.chain(not_formats) {
        excluded.push(if format {
            match formats::format_dfa(source) {
                Some(dfa) => dfa?,
                None => continue,
            }
        } else {
            pattern_dfa(source, options.dotall).map_err(|err| LeafError {
                keyword: "not",
                ..err
            })?
        });
    }
    let dfa = exclude(dfa, &excluded)?;
    let mut dfa = dfa.unwrap_or_else(Dfa::epsilon).trim();
    // Length bounds that the language already implies need no product.
    let (shortest, longest) = dfa.length_range();
    let min = if min <= shortest { 0 } else { min };
    let max = match (max, longest) {
        (Some(max), Some(longest)) if longest <= max => None,
        _ => max,
    };
    if min > 0 || max.is_some() {
        let keyword = if max.is_some() {
            "maxLength"
        } else {
            "minLength"
        };
        let bound = max.unwrap_or(min);
        let too_big = || {
            LeafError::unsupported(
                keyword,
                "the length bound is too large to combine with a pattern or format",
            )
        };
        if bound > MAX_PRODUCT_STATES as u64 {
            return Err(too_big());
        }
        dfa = dfa
            .intersect(&Dfa::lengths(min, max), MAX_PRODUCT_STATES)
            .map_err(|_| too_big())?
            .minimize();
    }
    if dfa.is_empty() {
        let keyword = if !constraints.patterns.is_empty() {
            "pattern"
        } else if constraints.format.is_some() {
            "format"
        } else {
            "not"
        };
        return Err(LeafError::unsatisfiable(
            keyword,
            "no string satisfies all the string constraints",
        ));
    }
    Ok(dfa)
}

/// The strings of both `dfa` (every string for `None`) and `next`, minimised; past the
/// product's cap, unsupported under `keyword`.
fn conjoin(dfa: Option<Dfa>, next: Dfa, keyword: &'static str) -> Result<Dfa, LeafError> {
    let Some(dfa) = dfa else {
        return Ok(next);
    };
    let both = dfa.intersect(&next, MAX_PRODUCT_STATES).map_err(|_| {
        LeafError::unsupported(
            keyword,
            "the patterns together need too many automaton states",
        )
    })?;
    Ok(both.minimize())
}

/// The strings of `dfa` (every string for `None`) that no automaton of `excluded` accepts;
/// `None` when there is nothing to exclude either.
fn exclude(dfa: Option<Dfa>, excluded: &[Dfa]) -> Result<Option<Dfa>, LeafError> {
    if excluded.len() >= 2 {
        // Complement the union of all of them once. The result is minimised, so it is the
        // same automaton as excluding them one at a time gives. Should a product grow past
        // the cap, the one-at-a-time way below decides (and reports) as it always did.
        if let Ok(any) = Dfa::union_all(excluded, MAX_PRODUCT_STATES) {
            let outside = any.complement();
            match &dfa {
                None => return Ok(Some(outside)),
                Some(dfa) => {
                    if let Ok(both) = dfa.intersect(&outside, MAX_PRODUCT_STATES) {
                        return Ok(Some(both.minimize()));
                    }
                }
            }
        }
    }
    let mut dfa = dfa;
    for next in excluded {
        dfa = Some(conjoin(dfa, next.complement(), "not")?);
    }
    Ok(dfa)
}

/// The expression for the JSON text (quotes included) of every string in `dfa`'s language of
/// decoded strings; for the core's keys (`patternProperties`, `propertyNames`), whose
/// languages it builds with [`string_language`] and the [`Dfa`] operations.
pub(crate) fn lower_string_dfa(
    builder: &mut GrammarBuilder,
    chars: &mut CharRules,
    name: &str,
    dfa: &Dfa,
    options: &LeafOptions,
) -> Result<Expr, LeafError> {
    let dfa = dfa.minimize();
    if dfa.is_empty() {
        return Err(LeafError::unsatisfiable("pattern", "no string matches"));
    }
    let escapes = options.escapes;
    let mut encode = |builder: &mut GrammarBuilder, ranges: &[(u32, u32)]| {
        json_chars(builder, chars, name, ranges, escapes)
    };
    let body = dfa.to_expr(builder, name, &mut encode, &Expr::literal("\""));
    Ok(Expr::seq([Expr::literal("\""), body]))
}

/// The decoded strings matching every one of `patterns` (all strings when there are none).
pub(crate) fn string_language(patterns: &[&str], options: &LeafOptions) -> Result<Dfa, LeafError> {
    let mut dfa = Dfa::lengths(0, None);
    for (index, pattern) in patterns.iter().enumerate() {
        let next = pattern_dfa(pattern, options.dotall).map_err(|err| err.at_pattern(index))?;
        dfa = dfa
            .intersect(&next, MAX_PRODUCT_STATES)
            .map_err(|_| {
                LeafError::unsupported(
                    "pattern",
                    "the patterns together need too many automaton states",
                )
            })?
            .minimize();
    }
    Ok(dfa)
}

/// Lowers patterns that describe the raw text (`raw_pattern`).
fn lower_raw_pattern(
    builder: &mut GrammarBuilder,
    name: &str,
    constraints: &StringConstraints,
    options: &LeafOptions,
) -> Result<Expr, LeafError> {
    if constraints.format.is_some()
        || constraints.min_length > 0
        || constraints.max_length.is_some()
    {
        return Err(LeafError::unsupported(
            "pattern",
            "raw_pattern cannot be combined with minLength, maxLength or format",
        ));
    }
    let mut dfa: Option<Dfa> = None;
    for (index, pattern) in constraints.patterns.iter().enumerate() {
        let next = pattern_dfa(pattern, options.dotall).map_err(|err| err.at_pattern(index))?;
        dfa = Some(match dfa {
            None => next,
            Some(dfa) => dfa
                .intersect(&next, MAX_DFA_STATES * 4)
                .map_err(|_| {
                    LeafError::unsupported(
                        "pattern",
                        "the patterns together need too many automaton states",
                    )
                })?
                .minimize(),
        });
    }
    let dfa = dfa.unwrap_or_else(Dfa::epsilon);
    if dfa.is_empty() {
        return Err(LeafError::unsatisfiable(
            "pattern",
            "no text matches all the patterns",
        ));
    }
    let mut encode = |_: &mut GrammarBuilder, ranges: &[(u32, u32)]| raw_class(ranges);
    Ok(dfa.to_expr(builder, name, &mut encode, &Expr::Empty))
}

/// Memo of [`json_chars_expr`]: (code points, escapes) to (expression, has escapes), shared so
/// that a hit copies nothing.
type CharsMemo = crate::pattern::memo::Table<(Vec<(u32, u32)>, Escapes), Rc<(Expr, bool)>>;

/// Code points that JSON forbids raw inside a string.
const MUST_ESCAPE: [(u32, u32); 3] = [(0, 0x1F), (0x22, 0x22), (0x5C, 0x5C)];

/// What [`json_chars`] gave for each set of code points and escapes asked for in one grammar.
/// A set asked for again (most are: the same classes recur in every pattern and format) then
/// costs one lookup, instead of the memo's lookup and a hash of its expression to find the
/// rule made for it, which would be the same rule: the builder gives an existing body's first
/// rule back. It belongs to one [`GrammarBuilder`]: its answers name that builder's rules.
#[derive(Debug, Default)]
pub(crate) struct CharRules {
    /// By [`Escapes`] (`All`, `Required`).
    known: [CharsAnswers; 2],
}

/// [`json_chars`]'s answers by the code points as asked for.
type CharsAnswers = HashMap<Vec<(u32, u32)>, Expr, SeededHash>;

/// The expression matching every JSON encoding (per `escapes`) of the code points in `ranges`.
/// When escapes are involved it becomes a shared rule (`char` for all code points). `chars`
/// holds the answers given for `builder` before.
pub(crate) fn json_chars(
    builder: &mut GrammarBuilder,
    chars: &mut CharRules,
    name: &str,
    ranges: &[(u32, u32)],
    escapes: Escapes,
) -> Expr {
    let known = &mut chars.known[usize::from(escapes == Escapes::Required)];
    if let Some(expr) = known.get(ranges) {
        return expr.clone();
    }
    let expr = json_chars_uncached(builder, name, ranges, escapes);
    known.insert(ranges.to_vec(), expr.clone());
    expr
}

/// [`json_chars`] without the grammar's cache.
pub(crate) fn json_chars_uncached(
    builder: &mut GrammarBuilder,
    name: &str,
    ranges: &[(u32, u32)],
    escapes: Escapes,
) -> Expr {
    thread_local! {
        static MEMO: CharsMemo = Default::default();
    }
    // Surrogates are not characters: never accept them, raw or as lone `\u` escapes.
    let clipped: Vec<(u32, u32)> = ranges
        .iter()
        .flat_map(|&(lo, hi)| crate::pattern::clip_surrogates(lo, hi))
        .collect();
    let ranges = clipped.as_slice();
    let memoised = crate::pattern::memo::get_or_make(&MEMO, &(clipped.clone(), escapes), || {
        Rc::new(json_chars_expr(ranges, escapes))
    });
    let (expr, has_escapes) = &*memoised;
    if !has_escapes {
        return expr.clone();
    }
    let preferred = if ranges == any_char().as_slice() {
        "char".to_owned()
    } else {
        crate::lower::dashed(name, "char")
    };
    // Most calls find the rule made by an earlier leaf, and then copy nothing.
    Expr::rule(&builder.add_cloned(&preferred, expr))
}

/// The expression of [`json_chars`] before it becomes a rule, and whether it has escapes
/// (then it is shared as a rule).
/// `ranges` holds no surrogates.
fn json_chars_expr(ranges: &[(u32, u32)], escapes: Escapes) -> (Expr, bool) {
    let mut alternatives = Vec::new();
    let raw = subtract(ranges, &MUST_ESCAPE);
    if !raw.is_empty() {
        alternatives.push(raw_class(&raw));
    }
    let short: Vec<char> = [
        ('"', '"'),
        ('\\', '\\'),
        ('/', '/'),
        ('\u{8}', 'b'),
        ('\u{C}', 'f'),
        ('\n', 'n'),
        ('\r', 'r'),
        ('\t', 't'),
    ]
    .into_iter()
    .filter(|&(ch, _)| (ch != '/' || escapes == Escapes::All) && contains(ranges, u32::from(ch)))
    .map(|(_, letter)| letter)
    .collect();
    if !short.is_empty() {
        alternatives.push(concat([
            Expr::literal("\\"),
            raw_class(
                &short
                    .iter()
                    .map(|&c| (u32::from(c), u32::from(c)))
                    .collect::<Vec<_>>(),
            ),
        ]));
    }
    let bmp = match escapes {
        Escapes::All => intersect(ranges, &[(0, 0xFFFF)]),
        Escapes::Required => intersect(ranges, &MUST_ESCAPE),
    };
    if !bmp.is_empty() {
        alternatives.push(concat([Expr::literal("\\u"), hex_digits(&bmp, 0, 4)]));
    }
    if escapes == Escapes::All {
        let astral = intersect(ranges, &[(0x10000, 0x10FFFF)]);
        if !astral.is_empty() {
            alternatives.push(surrogate_pairs(&astral));
        }
    }
    let has_escapes = alternatives.len() > 1 || raw.is_empty();
    (Expr::alt(alternatives), has_escapes)
}

/// `\uXXXX\uXXXX` for astral code points.
fn surrogate_pairs(ranges: &[(u32, u32)]) -> Expr {
    let mut alternatives = Vec::new();
    for &(lo, hi) in ranges {
        let (lo, hi) = (lo - 0x10000, hi - 0x10000);
        let (lo_high, lo_low) = (0xD800 + (lo >> 10), 0xDC00 + (lo & 0x3FF));
        let (hi_high, hi_low) = (0xD800 + (hi >> 10), 0xDC00 + (hi & 0x3FF));
        let pair = |high: (u32, u32), low: (u32, u32)| {
            concat([
                Expr::literal("\\u"),
                hex_digits(&[high], 0, 4),
                Expr::literal("\\u"),
                hex_digits(&[low], 0, 4),
            ])
        };
        if lo_high == hi_high {
            alternatives.push(pair((lo_high, lo_high), (lo_low, hi_low)));
            continue;
        }
        // A partial first high surrogate, the full ones, and a partial last one.
        let first_full = if lo_low == 0xDC00 {
            lo_high
        } else {
            lo_high + 1
        };
        let last_full = if hi_low == 0xDFFF {
            hi_high
        } else {
            hi_high - 1
        };
        if first_full != lo_high {
            alternatives.push(pair((lo_high, lo_high), (lo_low, 0xDFFF)));
        }
        if first_full <= last_full {
            alternatives.push(pair((first_full, last_full), (0xDC00, 0xDFFF)));
        }
        if last_full != hi_high {
            alternatives.push(pair((hi_high, hi_high), (0xDC00, hi_low)));
        }
    }
    Expr::alt(alternatives)
}

/// The `width` hex digits (either case) of the values in `ranges` that lie in
/// `base .. base + 16^width`, counted from `base`. Recursion depth is `width` (at most 4).
///
/// Leading digits whose continuations are the same set share one class, and each distinct
/// continuation is built once: equal sets give equal expressions, and different sets
/// different ones. The sets are compared in place (windows of `ranges`), not copied.
fn hex_digits(ranges: &[(u32, u32)], base: u32, width: u32) -> Expr {
    if width == 0 {
        return Expr::Empty;
    }
    let block = 16u32.pow(width - 1);
    let last = base + (16 * block - 1);
    if let [(from, to)] = window(ranges, base, last) {
        if *from <= base && last <= *to {
            return Expr::repeat(hex_class(0xFFFF), width, Some(width));
        }
    }
    // Group leading digits by their continuation. Every digit whose block is covered whole
    // has the same continuation, which no partly covered one has: only partly covered
    // blocks are compared with each other.
    let mut groups: Vec<DigitGroup> = Vec::new();
    let mut whole_group = None;
    for digit in 0..16 {
        let lo = base + digit * block;
        let hi = lo + (block - 1);
        let within = window(ranges, lo, hi);
        let found = match within {
            [] => continue,
            [(from, to)] if *from <= lo && hi <= *to => match whole_group {
                Some(at) => Some(at),
                None => {
                    whole_group = Some(groups.len());
                    None
                }
            },
            _ => (groups.iter().enumerate()).position(|(at, group)| {
                Some(at) != whole_group && same_within(group.within, group.start, within, lo, block)
            }),
        };
        match found {
            Some(at) => groups[at].digits |= 1 << digit,
            None => groups.push(DigitGroup {
                digits: 1 << digit,
                start: lo,
                within,
            }),
        }
    }
    Expr::alt(groups.into_iter().map(|group| {
        concat([
            hex_class(group.digits),
            hex_digits(ranges, group.start, width - 1),
        ])
    }))
}

/// Leading digits of [`hex_digits`] that share a continuation.
struct DigitGroup<'a> {
    /// The digits, as a bit set.
    digits: u16,
    /// Where the block of the first of them starts.
    start: u32,
    /// The ranges within that block.
    within: &'a [(u32, u32)],
}

/// The ranges of the sorted, disjoint `ranges` that meet `lo ..= hi` (unclipped), found by
/// binary search.
fn window(ranges: &[(u32, u32)], lo: u32, hi: u32) -> &[(u32, u32)] {
    let start = ranges.partition_point(|&(_, to)| to < lo);
    let end = ranges.partition_point(|&(from, _)| from <= hi);
    if start >= end {
        return &[];
    }
    &ranges[start..end]
}

/// Whether `in_a`, the ranges (as [`window`] gives them) within `a .. a + len`, and `in_b`,
/// those within `b .. b + len`, each counted from its start, are the same set.
fn same_within(in_a: &[(u32, u32)], a: u32, in_b: &[(u32, u32)], b: u32, len: u32) -> bool {
    let shifted = |start: u32, &(from, to): &(u32, u32)| {
        (from.max(start) - start, to.min(start + (len - 1)) - start)
    };
    in_a.len() == in_b.len()
        && in_a
            .iter()
            .zip(in_b)
            .all(|(x, y)| shifted(a, x) == shifted(b, y))
}

/// The hex digits with these values (a bit set of values below 16), either case: one digit
/// is a literal, more a class. (A class of hex digits always has fewer ranges than its
/// complement, so the set itself is printed, as [`raw_class`] would choose.) The ranges are
/// built merged and in order (digits, then `A-F`, then `a-f`), as the class keeps them.
fn hex_class(values: u16) -> Expr {
    if values.count_ones() == 1 && values < 1 << 10 {
        let digit = char::from(b'0' + values.trailing_zeros() as u8);
        return Expr::literal(digit.encode_utf8(&mut [0; 4]));
    }
    let mut chars: Vec<(char, char)> = Vec::with_capacity(6);
    let mut push_runs = |from: u32, to: u32, first: u8| {
        let mut value = from;
        while value < to {
            if values & (1 << value) == 0 {
                value += 1;
                continue;
            }
            let start = value;
            while value < to && values & (1 << value) != 0 {
                value += 1;
            }
            let char_of = |value: u32| char::from(first + (value - from) as u8);
            chars.push((char_of(start), char_of(value - 1)));
        }
    };
    push_runs(0, 10, b'0');
    push_runs(10, 16, b'A');
    push_runs(10, 16, b'a');
    Expr::class(CharClass::new(chars, false))
}

fn contains(ranges: &[(u32, u32)], code: u32) -> bool {
    ranges.iter().any(|&(lo, hi)| lo <= code && code <= hi)
}

/// The intersection of two sorted, disjoint range lists.
pub(crate) fn intersect(a: &[(u32, u32)], b: &[(u32, u32)]) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for &(alo, ahi) in a {
        for &(blo, bhi) in b {
            let (lo, hi) = (alo.max(blo), ahi.min(bhi));
            if lo <= hi {
                out.push((lo, hi));
            }
        }
    }
    out.sort_unstable();
    out
}

/// `a` minus `b` (both sorted and disjoint).
fn subtract(a: &[(u32, u32)], b: &[(u32, u32)]) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for &(lo, hi) in a {
        let mut lo = lo;
        for &(blo, bhi) in b {
            if bhi < lo || blo > hi {
                continue;
            }
            if blo > lo {
                out.push((lo, blo - 1));
            }
            lo = bhi.saturating_add(1);
            if lo > hi {
                break;
            }
        }
        if lo <= hi {
            out.push((lo, hi));
        }
    }
    out
}

/// Options of the leaf lowerings (set by the core from its `Options`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct LeafOptions {
    /// ECMA `s` flag: `.` also matches line terminators.
    pub dotall: bool,
    /// llama.cpp's `--raw-pattern`: patterns describe the raw text of the value itself (no
    /// quotes added, no JSON escaping); see the module docs.
    pub raw_pattern: bool,
    /// Which encodings of each code point the grammar accepts.
    pub escapes: Escapes,
}

impl Default for LeafOptions {
    fn default() -> LeafOptions {
        LeafOptions {
            dotall: false,
            raw_pattern: false,
            escapes: Escapes::All,
        }
    }
}

/// Which JSON encodings of a code point the string grammars accept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Escapes {
    /// Every encoding JSON allows: raw, short escapes (`\/` included) and `\uXXXX`
    /// (surrogate pairs for astral code points). Exact, at the cost of larger grammars.
    All,
    /// Code points that must be escaped (`"`, `\`, U+0000–U+001F) in every escaped form;
    /// all others raw only.
    Required,
}

/// Why a leaf could not be lowered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LeafError {
    /// The keyword to blame (`pattern`, `minimum`, …).
    pub keyword: &'static str,
    pub kind: LeafErrorKind,
    pub message: String,
    /// For `pattern` errors, which entry of `StringConstraints::patterns` is to blame (so the
    /// core can point at it); `None` when it is the combination.
    pub pattern_index: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LeafErrorKind {
    /// The keyword's value is wrong (a pattern that does not parse, `multipleOf: 0`).
    Invalid,
    /// Valid, but not expressible (lookarounds, a too large automaton).
    Unsupported,
    /// The constraints together admit no value (`minimum: 3, maximum: 2`); the core treats the
    /// leaf like the `false` schema.
    Unsatisfiable,
    /// `format` names a format this crate does not know; the core warns and lowers again with
    /// `format: None`.
    UnknownFormat,
}

impl LeafError {
    /// This error, blamed on pattern `index`.
    pub fn at_pattern(mut self, index: usize) -> LeafError {
        self.pattern_index = Some(index);
        self
    }

    pub fn invalid(keyword: &'static str, message: impl Into<String>) -> LeafError {
        LeafError {
            keyword,
            kind: LeafErrorKind::Invalid,
            message: message.into(),
            pattern_index: None,
        }
    }

    pub fn unsupported(keyword: &'static str, message: impl Into<String>) -> LeafError {
        LeafError {
            keyword,
            kind: LeafErrorKind::Unsupported,
            message: message.into(),
            pattern_index: None,
        }
    }

    pub fn unsatisfiable(keyword: &'static str, message: impl Into<String>) -> LeafError {
        LeafError {
            keyword,
            kind: LeafErrorKind::Unsatisfiable,
            message: message.into(),
            pattern_index: None,
        }
    }
}

impl fmt::Display for LeafError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.keyword, self.message)
    }
}

#[cfg(test)]
mod data_tests;
#[cfg(test)]
mod tests;
