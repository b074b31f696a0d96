//! Number leaves: lowers `type: integer`, `minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum` and `multipleOf` into a grammar for the JSON text of every number that
//! satisfies all of them, compared exactly in decimal.
//!
//! Mechanism: a number's text is read by a small automaton whose state records, for each bound,
//! how the digits read so far compare with the bound's digits, and the remainder modulo the
//! `multipleOf` numerator. The reachable states are explored ([`Dfa::explore`]), minimised and
//! printed as a right-linear grammar, so the result is exact and unambiguous. Bounds of any size
//! work (no digit cap); only the automaton size is capped. Exploring is kept small: digits that
//! step every state alike are one class, and once the sign is read the bound it cannot fail is
//! no longer tracked (with bounds `-b` and `b`, both signs share their states). The minimised
//! automaton depends only on the language, so none of this changes the grammar.
//!
//! Accepted encodings (documented restrictions):
//! - Without any numeric constraint, `type: number` accepts the full JSON number syntax
//!   `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
//! - With a non-zero bound, `multipleOf` or `type: integer`, numbers are accepted **without
//!   exponent** only: `1e2` is rejected even where 100 would be valid. Every value is still
//!   accepted in its plain decimal form. Bounds of zero (`minimum: 0`, `exclusiveMinimum: 0`)
//!   keep the exponent form, exactly.
//! - `type: integer` accepts `-?(0|[1-9][0-9]*)` and also a zero fraction (`1.0`, `-3.00`),
//!   because JSON Schema counts those as integers.
//! - `-0` is zero.
//! - `multipleOf` works for any positive decimal `a × 10^-k` whose numerator `a` is at most
//!   100000 (e.g. 7, 0.01, 2.5); larger numerators are Unsupported. Several `multipleOf`
//!   values (from `allOf`) are all enforced.
//! - A negated `multipleOf` (from `not`; `not: {type: integer}` is "not a multiple of 1") is
//!   enforced by the same remainders: some must be non-zero. Like `multipleOf`, it accepts
//!   numbers without exponent only (`1.5`, not `15e-1`).

use std::cmp::Ordering;
use std::rc::Rc;

use gbnf::{CharClass, Expr, GrammarBuilder};

use crate::pattern::dfa::Dfa;
use crate::strings::LeafError;

/// The numeric keywords of one (normalised) schema. Bounds are exact decimals.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct NumberConstraints {
    /// `type: integer` (JSON Schema counts `1.0` as an integer).
    pub integer: bool,
    pub minimum: Option<Decimal>,
    pub maximum: Option<Decimal>,
    pub exclusive_minimum: Option<Decimal>,
    pub exclusive_maximum: Option<Decimal>,
    /// Every `multipleOf` that applies (from `allOf` branches, say); all must divide.
    pub multiple_of: Vec<Decimal>,
    /// Every negated `multipleOf` (`not: {type: integer}` is "not a multiple of 1"): none
    /// may divide.
    pub not_multiple_of: Vec<Decimal>,
}

/// An exact decimal number, parsed from the text of a JSON number (never through `f64`).
///
/// Invariant: `digits` has no leading or trailing zeros; zero is `digits: ""`, `exponent: 0`,
/// `negative: false`. Equal values are equal structs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Decimal {
    negative: bool,
    /// Significant decimal digits (ASCII).
    digits: String,
    /// The value is `digits × 10^exponent`.
    exponent: i64,
}

impl Decimal {
    /// Parses JSON number syntax (`-?int(.frac)?([eE][+-]?exp)?`, which is also what
    /// `serde_json::Number::to_string` prints, with or without `arbitrary_precision`);
    /// `None` if it is not one, or if the exponent does not fit in an `i64`.
    pub fn parse(text: &str) -> Option<Decimal> {
        let bytes = text.as_bytes();
        let mut i = 0;
        let negative = bytes.first() == Some(&b'-');
        if negative {
            i += 1;
        }
        let int_start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        let int_part = &text[int_start..i];
        if int_part.is_empty() || (int_part.len() > 1 && int_part.starts_with('0')) {
            return None;
        }
        let mut frac_part = "";
        if bytes.get(i) == Some(&b'.') {
            let start = i + 1;
            i = start;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            frac_part = &text[start..i];
            if frac_part.is_empty() {
                return None;
            }
        }
        let mut exponent: i64 = 0;
        if matches!(bytes.get(i), Some(b'e' | b'E')) {
            i += 1;
            let exp_negative = bytes.get(i) == Some(&b'-');
            if matches!(bytes.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            if start == i {
                return None;
            }
            let value: i64 = text[start..i].trim_start_matches('0').parse().unwrap_or(0);
            if text[start..i].trim_start_matches('0').len() > 15 {
                return None;
            }
            exponent = if exp_negative { -value } else { value };
        }
        if i != bytes.len() {
            return None;
        }
        let mut digits = format!("{int_part}{frac_part}");
        exponent -= frac_part.len() as i64;
        let trimmed = digits.trim_end_matches('0');
        exponent += (digits.len() - trimmed.len()) as i64;
        digits = trimmed.trim_start_matches('0').to_owned();
        if digits.is_empty() {
            return Some(Decimal::zero());
        }
        Some(Decimal {
            negative,
            digits,
            exponent,
        })
    }

    /// Parses a `serde_json::Number` exactly (its text form).
    pub fn from_json(number: &serde_json::Number) -> Option<Decimal> {
        Decimal::parse(&number.to_string())
    }

    pub fn zero() -> Decimal {
        Decimal {
            negative: false,
            digits: String::new(),
            exponent: 0,
        }
    }

    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    pub fn is_negative(&self) -> bool {
        self.negative
    }

    /// The magnitude as (integer digits without leading zeros, `"0"` for none; fraction digits
    /// without trailing zeros); `None` if that would be absurdly long.
    fn split_magnitude(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        if self.exponent.unsigned_abs() > MAX_BOUND_DIGITS as u64 {
            return None;
        }
        let digits: Vec<u8> = self.digits.bytes().map(|b| b - b'0').collect();
        if self.exponent >= 0 {
            let mut int = digits;
            int.extend(std::iter::repeat(0).take(self.exponent as usize));
            if int.is_empty() {
                int.push(0);
            }
            return Some((int, Vec::new()));
        }
        let point = digits.len() as i64 + self.exponent;
        if point <= 0 {
            let mut frac: Vec<u8> = std::iter::repeat(0).take((-point) as usize).collect();
            frac.extend(digits);
            Some((vec![0], frac))
        } else {
            let point = point as usize;
            Some((digits[..point].to_vec(), digits[point..].to_vec()))
        }
    }

    /// Compares magnitudes exactly.
    fn cmp_magnitude(&self, other: &Decimal) -> Ordering {
        match (self.is_zero(), other.is_zero()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            (false, false) => {}
        }
        // Position of the most significant digit.
        let self_top = self.digits.len() as i128 + i128::from(self.exponent);
        let other_top = other.digits.len() as i128 + i128::from(other.exponent);
        self_top.cmp(&other_top).then_with(|| {
            let (a, b) = (self.digits.as_bytes(), other.digits.as_bytes());
            let n = a.len().max(b.len());
            (0..n)
                .map(|i| {
                    a.get(i)
                        .copied()
                        .unwrap_or(b'0')
                        .cmp(&b.get(i).copied().unwrap_or(b'0'))
                })
                .find(|o| *o != Ordering::Equal)
                .unwrap_or(Ordering::Equal)
        })
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Decimal) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Decimal) -> Ordering {
        match (self.negative, other.negative) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => self.cmp_magnitude(other),
            (true, true) => other.cmp_magnitude(self),
        }
    }
}

/// The largest `multipleOf` numerator handled (one automaton state per remainder).
const MAX_MODULUS: u64 = 100_000;
/// The most digits a bound may have on either side of the point.
const MAX_BOUND_DIGITS: usize = 10_000;
/// The most automaton states a number leaf may need.
const MAX_STATES: usize = 50_000;

/// Lowers `constraints` into an expression for the JSON text of every number that satisfies
/// all of them. Helper rules are named after `name`.
pub(crate) fn lower_number(
    builder: &mut GrammarBuilder,
    name: &str,
    constraints: &NumberConstraints,
) -> Result<Expr, LeafError> {
    let lower = tighter(
        constraints.minimum.as_ref().map(|d| (d, false, "minimum")),
        constraints
            .exclusive_minimum
            .as_ref()
            .map(|d| (d, true, "exclusiveMinimum")),
        Ordering::Greater,
    );
    let upper = tighter(
        constraints.maximum.as_ref().map(|d| (d, false, "maximum")),
        constraints
            .exclusive_maximum
            .as_ref()
            .map(|d| (d, true, "exclusiveMaximum")),
        Ordering::Less,
    );
    if lower.is_none()
        && upper.is_none()
        && constraints.multiple_of.is_empty()
        && constraints.not_multiple_of.is_empty()
        && !constraints.integer
    {
        return Ok(plain_number());
    }
    thread_local! {
        // Shared, so that storing and reusing a template does not copy its rules.
        static MEMO: crate::pattern::memo::Table<NumberConstraints, Result<Rc<Template>, LeafError>> =
            Default::default();
    }
    let template = crate::pattern::memo::get_or_make(&MEMO, constraints, || {
        let dfa = number_dfa(constraints, lower, upper)?;
        Ok(Rc::new(Template::of(&dfa)))
    })?;
    Ok(template.replay(builder, name))
}

/// A number leaf's rules, printed once under the placeholder name `n` and replayed under the
/// real name: the same rules, in the same order, as printing the automaton there would give
/// (its transitions are raw classes, which need no builder).
#[derive(Debug)]
struct Template {
    start: Expr,
    rules: Vec<(gbnf::RuleName, Expr)>,
}

impl Template {
    fn of(dfa: &Dfa) -> Template {
        let mut builder = GrammarBuilder::new();
        let mut encode = |_: &mut GrammarBuilder, ranges: &[(u32, u32)]| raw_class(ranges);
        let start = dfa.to_expr(&mut builder, "n", &mut encode, &Expr::Empty);
        Template {
            start,
            rules: builder.finish().rules.into_iter().collect(),
        }
    }

    fn replay(&self, builder: &mut GrammarBuilder, name: &str) -> Expr {
        let renames: std::collections::HashMap<&gbnf::RuleName, gbnf::RuleName> = self
            .rules
            .iter()
            .map(|(rule, _)| {
                let suffix = rule.as_str().strip_prefix('n').unwrap_or(rule.as_str());
                (rule, builder.reserve(&format!("{name}{suffix}")))
            })
            .collect();
        for (rule, body) in &self.rules {
            builder.define(
                &renames[rule],
                body.rename_rules(&|name| {
                    renames.get(name).cloned().unwrap_or_else(|| name.clone())
                }),
            );
        }
        self.start
            .rename_rules(&|name| renames.get(name).cloned().unwrap_or_else(|| name.clone()))
    }
}

/// The minimised automaton of the numbers meeting `constraints`, whose tightest bounds are
/// `lower` and `upper`.
fn number_dfa(
    constraints: &NumberConstraints,
    lower: Option<(&Decimal, bool, &'static str)>,
    upper: Option<(&Decimal, bool, &'static str)>,
) -> Result<Dfa, LeafError> {
    if let (Some((lo, lo_excl, keyword)), Some((hi, hi_excl, _))) = (lower, upper) {
        let order = lo.cmp(hi);
        if order == Ordering::Greater || (order == Ordering::Equal && (lo_excl || hi_excl)) {
            return Err(LeafError::unsatisfiable(
                keyword,
                "the lower bound exceeds the upper bound, so no number is valid",
            ));
        }
    }
    let bound = |b: Option<(&Decimal, bool, &'static str)>| -> Result<Option<Bound>, LeafError> {
        let Some((value, exclusive, keyword)) = b else {
            return Ok(None);
        };
        let (int, frac) = value.split_magnitude().ok_or_else(|| {
            LeafError::unsupported(
                keyword,
                format!("bounds are limited to {MAX_BOUND_DIGITS} digits"),
            )
        })?;
        Ok(Some(Bound {
            int,
            frac,
            negative: value.is_negative(),
            zero: value.is_zero(),
            exclusive,
        }))
    };
    let moduli = constraints
        .multiple_of
        .iter()
        .map(modulus)
        .collect::<Result<Vec<_>, LeafError>>()?;
    let not_moduli = constraints
        .not_multiple_of
        .iter()
        .map(modulus)
        .collect::<Result<Vec<_>, LeafError>>()?;
    let max_k = moduli
        .iter()
        .chain(&not_moduli)
        .map(|m| m.1)
        .max()
        .unwrap_or(0);
    let machine = Machine {
        lower: bound(lower)?,
        upper: bound(upper)?,
        integer: constraints.integer,
        moduli,
        not_moduli,
        max_k,
        exponent: false,
        signs: SignedBounds::default(),
    };
    // Bounds of zero depend only on the sign and on whether the mantissa is zero, so the
    // exponent form stays exact there (`minimum: 0` is common).
    let zero_bounds = machine.lower.iter().chain(&machine.upper).all(|b| b.zero);
    let machine = Machine {
        signs: SignedBounds::of(machine.lower.as_ref(), machine.upper.as_ref()),
        exponent: zero_bounds
            && !constraints.integer
            && machine.moduli.is_empty()
            && machine.not_moduli.is_empty(),
        ..machine
    };
    let alphabet = alphabet(&machine);
    let start = NumState {
        phase: Phase::Start,
        negative: false,
        zero: true,
        lower: machine.lower.as_ref().map(|_| Tracker::Int {
            len: 0,
            lex: Ordering::Equal,
        }),
        upper: machine.upper.as_ref().map(|_| Tracker::Int {
            len: 0,
            lex: Ordering::Equal,
        }),
        rem: vec![0; machine.moduli.len()],
        not_rem: vec![Some(0); machine.not_moduli.len()],
        frac_digits: 0,
    };
    let blame = if !machine.moduli.is_empty() || !machine.not_moduli.is_empty() {
        "multipleOf"
    } else {
        lower.or(upper).map_or("type", |b| b.2)
    };
    let dfa = Dfa::explore(
        start,
        &alphabet,
        MAX_STATES,
        |state, ch| machine.step(state, ch),
        |state| machine.accepts(state),
    )
    .map_err(|_| {
        LeafError::unsupported(
            blame,
            format!("the number grammar would need more than {MAX_STATES} states"),
        )
    })?
    .minimize();
    if dfa.is_empty() {
        return Err(LeafError::unsatisfiable(
            blame,
            "no number satisfies all the numeric constraints",
        ));
    }
    Ok(dfa)
}

/// The characters of a number's text as classes whose members step every state of `machine`
/// alike, for [`Dfa::explore`]. A digit matters to a state through its remainders (every digit
/// differs when there is a `multipleOf`), whether it is zero, and how it compares with the
/// bounds' digits; so digits `d - 1` and `d` share a class unless one of them is a bound digit.
/// The exponent characters are left out when no exponent may follow.
fn alphabet(machine: &Machine) -> Vec<(char, char)> {
    let mut classes = vec![('-', '-'), ('.', '.')];
    if machine.exponent {
        classes.extend([('+', '+'), ('E', 'E'), ('e', 'e')]);
    }
    let every_digit = !machine.moduli.is_empty() || !machine.not_moduli.is_empty();
    let mut bound_digits = [false; 10];
    for bound in machine.lower.iter().chain(&machine.upper) {
        for &digit in bound.int.iter().chain(&bound.frac) {
            bound_digits[usize::from(digit)] = true;
        }
    }
    let mut first = 0;
    for digit in 1..=10 {
        let splits = digit == 10
            || digit == 1
            || every_digit
            || bound_digits[digit - 1]
            || bound_digits[digit];
        if splits {
            let char_of = |digit: usize| char::from(b'0' + digit as u8);
            classes.push((char_of(first), char_of(digit - 1)));
            first = digit;
        }
    }
    classes
}

/// The full JSON number syntax.
fn plain_number() -> Expr {
    let digit = Expr::class(CharClass::new([('0', '9')], false));
    let digits = Expr::plus(digit.clone());
    Expr::seq([
        Expr::optional(Expr::literal("-")),
        Expr::alt([
            Expr::literal("0"),
            Expr::seq([
                Expr::class(CharClass::new([('1', '9')], false)),
                Expr::star(digit),
            ]),
        ]),
        Expr::optional(Expr::seq([Expr::literal("."), digits.clone()])),
        Expr::optional(Expr::seq([
            Expr::class(CharClass::of_chars(['e', 'E'], false)),
            Expr::optional(Expr::class(CharClass::of_chars(['+', '-'], false))),
            digits,
        ])),
    ])
}

/// The expression for a set of code points printed as themselves.
pub(crate) fn raw_class(ranges: &[(u32, u32)]) -> Expr {
    let chars: Vec<(char, char)> = ranges
        .iter()
        .flat_map(|&(lo, hi)| crate::pattern::clip_surrogates(lo, hi))
        .filter_map(|(lo, hi)| Some((char::from_u32(lo)?, char::from_u32(hi)?)))
        .collect();
    if let [(lo, hi)] = chars.as_slice() {
        if lo == hi {
            return Expr::literal(&lo.to_string());
        }
    }
    // Print whichever of the set and its complement has fewer ranges (`[^"\\]`, not a
    // list of everything else). Surrogates count as members of either, since they never occur.
    // (A complement with a character past ASCII stays positive: see `CharClass::new`.)
    let class = CharClass::new(chars, false);
    let mut complement = Vec::new();
    let mut next = 0u32;
    for &(lo, hi) in class.ranges() {
        let (lo, hi) = (u32::from(lo), u32::from(hi));
        if next < lo && !(next == 0xD800 && lo == 0xE000) {
            complement.push((next, lo - 1));
        }
        next = hi + 1;
    }
    if next <= 0x10FFFF {
        complement.push((next, 0x10FFFF));
    }
    let complement: Vec<(char, char)> = complement
        .into_iter()
        .flat_map(|(lo, hi)| crate::pattern::clip_surrogates(lo, hi))
        .filter_map(|(lo, hi)| Some((char::from_u32(lo)?, char::from_u32(hi)?)))
        .collect();
    if complement.is_empty() {
        return Expr::Any;
    }
    if complement.len() <= class.ranges().len() {
        return Expr::class(CharClass::new(complement, true));
    }
    Expr::class(class)
}

/// Of two bounds, the one that constrains more (`toward` says which direction is tighter); on
/// equal values the exclusive one.
fn tighter<'a>(
    a: Option<(&'a Decimal, bool, &'static str)>,
    b: Option<(&'a Decimal, bool, &'static str)>,
    toward: Ordering,
) -> Option<(&'a Decimal, bool, &'static str)> {
    match (a, b) {
        (Some(a), Some(b)) => {
            let order = b.0.cmp(a.0);
            if order == toward || (order == Ordering::Equal && b.1) {
                Some(b)
            } else {
                Some(a)
            }
        }
        (a, b) => a.or(b),
    }
}

/// `multipleOf` as (numerator, fraction digits): the value is `a / 10^k`.
fn modulus(m: &Decimal) -> Result<(u64, u32), LeafError> {
    if m.is_zero() || m.is_negative() {
        return Err(LeafError::invalid(
            "multipleOf",
            "multipleOf must be greater than 0",
        ));
    }
    let too_big = || {
        LeafError::unsupported(
            "multipleOf",
            format!("multipleOf is supported for numerators up to {MAX_MODULUS}"),
        )
    };
    let mut a: u64 = m.digits.parse().map_err(|_| too_big())?;
    let mut k = 0u32;
    if m.exponent >= 0 {
        for _ in 0..m.exponent {
            a = a
                .checked_mul(10)
                .filter(|&a| a <= MAX_MODULUS)
                .ok_or_else(too_big)?;
        }
    } else {
        k = u32::try_from(-m.exponent).map_err(|_| too_big())?;
        if k > 1000 {
            return Err(too_big());
        }
    }
    if a > MAX_MODULUS {
        return Err(too_big());
    }
    Ok((a, k))
}

/// A bound's magnitude digits, sign and exclusivity.
#[derive(Debug)]
struct Bound {
    int: Vec<u8>,
    frac: Vec<u8>,
    negative: bool,
    zero: bool,
    exclusive: bool,
}

#[derive(Debug)]
struct Machine {
    lower: Option<Bound>,
    upper: Option<Bound>,
    integer: bool,
    /// Each `multipleOf` as `a / 10^k`.
    moduli: Vec<(u64, u32)>,
    /// Each negated `multipleOf`, likewise.
    not_moduli: Vec<(u64, u32)>,
    /// The largest `k` of both: past it, fraction digits change no remainder.
    max_k: u32,
    /// Whether an exponent may follow (only when no constraint depends on the magnitude).
    exponent: bool,
    signs: SignedBounds,
}

/// Which bounds a number's sign leaves to check. A positive number cannot fail a negative lower
/// bound, nor a negative number a positive upper bound, so once the sign is read the tracker
/// of that bound is dropped (`None`): states that differ only in it are one state.
#[derive(Clone, Copy, Debug, Default)]
struct SignedBounds {
    /// The lower bound is below zero.
    lower_negative: bool,
    /// The upper bound is above zero.
    upper_positive: bool,
    /// The bounds are `-b` and `b`, both inclusive or both exclusive: a number is in range
    /// exactly when its magnitude is, so a negative number is read like a positive one
    /// (checked against the upper bound alone) and both signs share their states.
    symmetric: bool,
}

impl SignedBounds {
    fn of(lower: Option<&Bound>, upper: Option<&Bound>) -> SignedBounds {
        let lower_negative = lower.is_some_and(|b| b.negative && !b.zero);
        let upper_positive = upper.is_some_and(|b| !b.negative && !b.zero);
        let symmetric = match (lower, upper) {
            (Some(lower), Some(upper)) => {
                lower_negative
                    && upper_positive
                    && lower.int == upper.int
                    && lower.frac == upper.frac
                    && lower.exclusive == upper.exclusive
            }
            _ => false,
        };
        SignedBounds {
            lower_negative,
            upper_positive,
            symmetric,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Phase {
    Start,
    Minus,
    /// The integer part is `0`: only `.` or the end may follow.
    IntZero,
    Int,
    Dot,
    Frac,
    /// After `e`/`E`, before the exponent's sign or digits.
    Exp,
    /// After the exponent's sign.
    ExpSign,
    ExpDigits,
}

/// How the magnitude read so far compares with one bound's magnitude.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Tracker {
    /// In the integer part: `len` digits read (capped at the bound's length + 1), `lex` the
    /// comparison of the first digits with the bound's.
    Int {
        len: usize,
        lex: Ordering,
    },
    /// In the fraction, equal so far; `pos` fraction digits read (capped at the bound's).
    Frac {
        pos: usize,
    },
    Done(Ordering),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct NumState {
    phase: Phase,
    negative: bool,
    /// Every digit so far is 0.
    zero: bool,
    lower: Option<Tracker>,
    upper: Option<Tracker>,
    /// Per `multipleOf`, the remainder modulo its numerator of the digits read (fraction
    /// digits up to its `k` included).
    rem: Vec<u64>,
    /// Per negated `multipleOf`, the same remainder, or `None` once a non-zero fraction digit
    /// past its `k` was read (then the value is certainly not a multiple).
    not_rem: Vec<Option<u64>>,
    /// Fraction digits read, capped at the largest `k`.
    frac_digits: u32,
}

impl Tracker {
    fn int_digit(self, bound: &Bound, digit: u8) -> Tracker {
        match self {
            Tracker::Int { len, lex } => {
                let lex = if len < bound.int.len() && lex == Ordering::Equal {
                    digit.cmp(&bound.int[len])
                } else {
                    lex
                };
                Tracker::Int {
                    len: (len + 1).min(bound.int.len() + 1),
                    lex,
                }
            }
            other => other,
        }
    }

    fn end_int(self, bound: &Bound) -> Tracker {
        match self {
            Tracker::Int { len, lex } => match len.cmp(&bound.int.len()) {
                Ordering::Equal if lex == Ordering::Equal => Tracker::Frac { pos: 0 },
                Ordering::Equal => Tracker::Done(lex),
                other => Tracker::Done(other),
            },
            other => other,
        }
    }

    fn frac_digit(self, bound: &Bound, digit: u8) -> Tracker {
        match self {
            Tracker::Frac { pos } if pos < bound.frac.len() => match digit.cmp(&bound.frac[pos]) {
                Ordering::Equal => Tracker::Frac { pos: pos + 1 },
                other => Tracker::Done(other),
            },
            Tracker::Frac { pos } if digit > 0 => {
                let _ = pos;
                Tracker::Done(Ordering::Greater)
            }
            other => other,
        }
    }

    /// The final magnitude comparison.
    fn finish(self, bound: &Bound) -> Ordering {
        match self.end_int(bound) {
            Tracker::Frac { pos } if pos < bound.frac.len() => Ordering::Less,
            Tracker::Frac { .. } | Tracker::Int { .. } => Ordering::Equal,
            Tracker::Done(order) => order,
        }
    }
}

impl Machine {
    fn step(&self, state: &NumState, ch: char) -> Option<NumState> {
        let mut next = state.clone();
        match (state.phase, ch) {
            (Phase::Start, '-') => {
                next.phase = Phase::Minus;
                if self.signs.symmetric {
                    // Read the magnitude like a positive number's (see `SignedBounds`).
                    next.lower = None;
                } else {
                    next.negative = true;
                    if self.signs.upper_positive {
                        next.upper = None;
                    }
                }
                Some(next)
            }
            (Phase::Start | Phase::Minus, '0'..='9') | (Phase::Int, '0'..='9') => {
                let digit = ch as u8 - b'0';
                next.phase = match (state.phase, digit) {
                    (Phase::Int, _) => Phase::Int,
                    (_, 0) => Phase::IntZero,
                    _ => Phase::Int,
                };
                next.zero = state.zero && digit == 0;
                next.lower = self
                    .lower
                    .as_ref()
                    .zip(state.lower)
                    .map(|(b, t)| t.int_digit(b, digit));
                next.upper = self
                    .upper
                    .as_ref()
                    .zip(state.upper)
                    .map(|(b, t)| t.int_digit(b, digit));
                if state.phase == Phase::Start && self.signs.lower_negative {
                    next.lower = None;
                }
                for (rem, (a, _)) in next.rem.iter_mut().zip(&self.moduli) {
                    *rem = (*rem * 10 + u64::from(digit)) % a;
                }
                for (rem, (a, _)) in next.not_rem.iter_mut().zip(&self.not_moduli) {
                    *rem = rem.map(|rem| (rem * 10 + u64::from(digit)) % a);
                }
                Some(next)
            }
            (Phase::IntZero | Phase::Int, '.') => {
                next.phase = Phase::Dot;
                next.lower = self
                    .lower
                    .as_ref()
                    .zip(state.lower)
                    .map(|(b, t)| t.end_int(b));
                next.upper = self
                    .upper
                    .as_ref()
                    .zip(state.upper)
                    .map(|(b, t)| t.end_int(b));
                Some(next)
            }
            (Phase::Dot | Phase::Frac, '0'..='9') => {
                let digit = ch as u8 - b'0';
                if self.integer && digit != 0 {
                    return None;
                }
                if !self.moduli.is_empty() || !self.not_moduli.is_empty() {
                    for (rem, (a, k)) in next.rem.iter_mut().zip(&self.moduli) {
                        if state.frac_digits < *k {
                            *rem = (*rem * 10 + u64::from(digit)) % a;
                        } else if digit != 0 {
                            return None;
                        }
                    }
                    for (rem, (a, k)) in next.not_rem.iter_mut().zip(&self.not_moduli) {
                        if state.frac_digits < *k {
                            *rem = rem.map(|rem| (rem * 10 + u64::from(digit)) % a);
                        } else if digit != 0 {
                            *rem = None;
                        }
                    }
                    next.frac_digits = (state.frac_digits + 1).min(self.max_k);
                }
                next.phase = Phase::Frac;
                next.zero = state.zero && digit == 0;
                next.lower = self
                    .lower
                    .as_ref()
                    .zip(state.lower)
                    .map(|(b, t)| t.frac_digit(b, digit));
                next.upper = self
                    .upper
                    .as_ref()
                    .zip(state.upper)
                    .map(|(b, t)| t.frac_digit(b, digit));
                Some(next)
            }
            (Phase::IntZero | Phase::Int | Phase::Frac, 'e' | 'E') if self.exponent => {
                next.phase = Phase::Exp;
                Some(next)
            }
            (Phase::Exp, '+' | '-') => {
                next.phase = Phase::ExpSign;
                Some(next)
            }
            (Phase::Exp | Phase::ExpSign | Phase::ExpDigits, '0'..='9') => {
                next.phase = Phase::ExpDigits;
                Some(next)
            }
            _ => None,
        }
    }

    fn accepts(&self, state: &NumState) -> bool {
        if !matches!(
            state.phase,
            Phase::IntZero | Phase::Int | Phase::Frac | Phase::ExpDigits
        ) {
            return false;
        }
        let value_negative = state.negative && !state.zero;
        let compare = |bound: &Bound, tracker: Tracker| -> Ordering {
            let magnitude = if state.zero {
                if bound.zero {
                    Ordering::Equal
                } else {
                    Ordering::Less
                }
            } else {
                tracker.finish(bound)
            };
            let bound_negative = bound.negative && !bound.zero;
            match (value_negative, bound_negative) {
                (false, false) => magnitude,
                (true, true) => magnitude.reverse(),
                (false, true) => Ordering::Greater,
                (true, false) => Ordering::Less,
            }
        };
        if let (Some(bound), Some(tracker)) = (&self.lower, state.lower) {
            match compare(bound, tracker) {
                Ordering::Less => return false,
                Ordering::Equal if bound.exclusive => return false,
                _ => {}
            }
        }
        if let (Some(bound), Some(tracker)) = (&self.upper, state.upper) {
            match compare(bound, tracker) {
                Ordering::Greater => return false,
                Ordering::Equal if bound.exclusive => return false,
                _ => {}
            }
        }
        // Scale the digits read to `10^k` units: pad the fraction with zeros.
        let scaled = |rem: u64, (a, k): (u64, u32)| -> u64 {
            let mut rem = rem;
            for _ in state.frac_digits.min(k)..k {
                rem = rem * 10 % a;
                if rem == 0 {
                    break;
                }
            }
            rem
        };
        let multiples = state.rem.iter().zip(&self.moduli);
        if multiples.into_iter().any(|(&rem, &m)| scaled(rem, m) != 0) {
            return false;
        }
        let mut not_multiples = state.not_rem.iter().zip(&self.not_moduli);
        not_multiples.all(|(rem, &m)| rem.map_or(true, |rem| scaled(rem, m) != 0))
    }
}

#[cfg(test)]
mod tests;
