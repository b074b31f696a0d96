//! Number leaf tests: decimal parsing and ordering, the grammar's verdicts on samples, and a
//! property test against exact decimal comparison.

#![allow(clippy::unwrap_used)] // Tests fail loudly on purpose.

use gbnf::GrammarBuilder;

use crate::numbers::{lower_number, Decimal, NumberConstraints};
use crate::pattern::testutil::Lowered;
use crate::strings::LeafErrorKind;

fn dec(text: &str) -> Decimal {
    Decimal::parse(text).unwrap_or_else(|| panic!("bad decimal {text}"))
}

/// Constraints from a compact spec: `int`, `min=..`, `max=..`, `xmin=..`, `xmax=..`, `mul=..`.
fn constraints(spec: &str) -> NumberConstraints {
    let mut c = NumberConstraints::default();
    for part in spec.split_whitespace() {
        let (key, value) = part.split_once('=').unwrap_or((part, ""));
        match key {
            "int" => c.integer = true,
            "min" => c.minimum = Some(dec(value)),
            "max" => c.maximum = Some(dec(value)),
            "xmin" => c.exclusive_minimum = Some(dec(value)),
            "xmax" => c.exclusive_maximum = Some(dec(value)),
            "mul" => c.multiple_of.push(dec(value)),
            _ => panic!("bad spec {part}"),
        }
    }
    c
}

fn check(spec: &str, accept: &[&str], reject: &[&str]) {
    let mut builder = GrammarBuilder::new();
    let expr = lower_number(&mut builder, "n", &constraints(spec))
        .unwrap_or_else(|e| panic!("{spec}: {e}"));
    let lowered = Lowered::new(builder, expr);
    for text in accept {
        assert!(lowered.accepts(text), "{spec}: should accept {text}");
    }
    for text in reject {
        assert!(!lowered.accepts(text), "{spec}: should reject {text}");
    }
}

#[test]
fn decimals_parse_and_compare_exactly() {
    assert_eq!(dec("1.50"), dec("15e-1"));
    assert_eq!(dec("-0"), dec("0.000"));
    assert_eq!(dec("100"), dec("1E2"));
    assert!(dec("0.1") < dec("0.10000000000000000001"));
    assert!(dec("-2") < dec("-1.5"));
    assert!(dec("123456789012345678901234567890") > dec("123456789012345678901234567889"));
    for bad in ["", "-", "01", "1.", ".5", "1e", "+1", "1.0.0", "0x10"] {
        assert!(Decimal::parse(bad).is_none(), "{bad:?} parsed");
    }
}

#[test]
fn plain_numbers() {
    check(
        "",
        &["0", "-0", "1.5", "-12e+3", "1E-7"],
        &["01", "1.", ".5", "+1", "1e", "--1"],
    );
}

#[test]
fn integers() {
    check(
        "int",
        &["0", "-0", "42", "-7", "1.0", "3.000"],
        &["1.5", "1e2", "01", "1.", "-"],
    );
    check(
        "int min=0",
        &["0", "-0", "7", "12345678901234567890123"],
        &["-1", "-0.5"],
    );
    check("int min=3", &["3", "4", "10", "25"], &["2", "0", "-3"]);
    check("int max=-3", &["-3", "-10", "-4"], &["-2", "0", "3"]);
    check(
        "int min=-12 max=345",
        &["-12", "0", "9", "99", "345"],
        &["-13", "346", "1000"],
    );
    check("int min=0.5", &["1", "2"], &["0", "0.5"]);
    check("int xmin=3 xmax=6", &["4", "5"], &["3", "6"]);
}

#[test]
fn decimal_bounds() {
    check(
        "min=0.5",
        &["0.5", "0.51", "1", "0.50", "100"],
        &["0.49999", "0", "-1"],
    );
    check("xmin=0.5", &["0.51", "1"], &["0.5", "0.500"]);
    check(
        "max=-0.25",
        &["-0.25", "-0.3", "-1"],
        &["-0.2", "0", "-0.24999"],
    );
    check(
        "min=-1.5 max=2.25",
        &["-1.5", "-1", "0", "2.25", "2.2"],
        &["-1.51", "2.26", "3"],
    );
    check("min=0 max=0", &["0", "-0", "0.000"], &["0.001", "-0.001"]);
    check(
        "min=0",
        &["0", "1e5", "0e0", "-0e3", "2.5E-7"],
        &["-1e-5", "-1", "1e", "1e+"],
    );
    check("xmin=0", &["1E-9", "3"], &["0e1", "-0.0e0", "0"]);
    check("min=0.5", &["0.5"], &["1e0"]);
}

#[test]
fn bounds_of_both_signs() {
    // Symmetric bounds: negative numbers are read like positive ones.
    check(
        "min=-40 max=40",
        &["-40", "40", "-39.99", "0", "-0", "-0.0"],
        &["-40.01", "40.01", "-400", "400", "-41"],
    );
    check(
        "xmin=-40 xmax=40",
        &["-39.99", "39.99", "-0"],
        &["-40", "40", "-40.0", "40.00"],
    );
    // Equal magnitudes, but one bound exclusive: not symmetric.
    check(
        "xmin=-40 max=40",
        &["40", "-39.9", "0", "-0"],
        &["-40", "-40.0", "40.1"],
    );
    check(
        "min=-2.5 xmax=2.5",
        &["-2.5", "2.49"],
        &["2.5", "2.50", "-2.51"],
    );
    let huge = format!("179769{}", "0".repeat(303));
    let above = format!("{huge}.5");
    check(
        "min=-1.79769e+308 max=1.79769e+308",
        &[&huge, &format!("-{huge}"), "-1", "0.5"],
        &[&above, &format!("-{above}"), &format!("-{huge}0")],
    );
    check(
        "int min=-9223372036854775808 max=9223372036854775807",
        &["-9223372036854775808", "9223372036854775807", "-1"],
        &["9223372036854775808", "-9223372036854775809"],
    );
}

#[test]
fn multiples() {
    check(
        "int mul=3",
        &["0", "3", "-9", "300", "3.0"],
        &["1", "10", "3.5"],
    );
    check(
        "mul=0.01",
        &["0.01", "1.5", "-3.27", "2"],
        &["0.001", "1.005"],
    );
    check("mul=2.5", &["0", "2.5", "5", "7.50", "-25"], &["2", "1.25"]);
    check("int min=10 max=50 mul=7", &["14", "49"], &["7", "56", "15"]);
    check(
        "mul=0.5 mul=0.3",
        &["0", "1.5", "-3", "4.50"],
        &["0.5", "0.3", "0.6", "1"],
    );
}

#[test]
fn contradictions_and_bad_values() {
    let kind = |spec: &str| {
        lower_number(&mut GrammarBuilder::new(), "n", &constraints(spec))
            .map(|_| ())
            .unwrap_err()
            .kind
    };
    assert_eq!(kind("min=3 max=2"), LeafErrorKind::Unsatisfiable);
    assert_eq!(kind("xmin=2 max=2"), LeafErrorKind::Unsatisfiable);
    assert_eq!(kind("int min=0.2 max=0.8"), LeafErrorKind::Unsatisfiable);
    assert_eq!(kind("mul=0"), LeafErrorKind::Invalid);
    assert_eq!(kind("mul=-2"), LeafErrorKind::Invalid);
    assert_eq!(kind("mul=1000003"), LeafErrorKind::Unsupported);
}

/// A deterministic pseudo-random generator (no dependency, reproducible).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }

    /// A random JSON number text without exponent, biased toward small, boundary-like values.
    fn number(&mut self) -> String {
        let mut text = String::new();
        if self.next(2) == 0 {
            text.push('-');
        }
        let int_len = 1 + self.next(3);
        for i in 0..int_len {
            let digit = if i == 0 && int_len > 1 {
                1 + self.next(9)
            } else {
                self.next(10)
            };
            text.push(char::from(b'0' + digit as u8));
        }
        if self.next(2) == 0 {
            text.push('.');
            for _ in 0..1 + self.next(3) {
                text.push(char::from(b'0' + self.next(10) as u8));
            }
        }
        if self.next(5) == 0 {
            text.push(['e', 'E'][self.next(2) as usize]);
            text.push_str(["", "+", "-"][self.next(3) as usize]);
            text.push(char::from(b'0' + self.next(10) as u8));
        }
        text
    }
}

/// The exact verdict of the constraints on a number, by decimal arithmetic.
fn expected(c: &NumberConstraints, text: &str) -> bool {
    let value = dec(text);
    if c.integer
        && text.contains('.')
        && text
            .split('.')
            .nth(1)
            .is_some_and(|f| f.bytes().any(|b| b != b'0'))
    {
        return false;
    }
    if c.minimum.as_ref().is_some_and(|m| value < *m)
        || c.maximum.as_ref().is_some_and(|m| value > *m)
    {
        return false;
    }
    if c.exclusive_minimum.as_ref().is_some_and(|m| value <= *m)
        || c.exclusive_maximum.as_ref().is_some_and(|m| value >= *m)
    {
        return false;
    }
    for m in &c.multiple_of {
        // value / m is an integer: scale both to integers with 10^6 (tests use ≤ 3 decimals).
        let scale = |d: &Decimal| -> i128 {
            let (int, frac) = d.split_magnitude().expect("small");
            let mut n: i128 = 0;
            for digit in int
                .iter()
                .chain(frac.iter().chain(std::iter::repeat(&0)).take(6))
            {
                n = n * 10 + i128::from(*digit);
            }
            n
        };
        if scale(&value) % scale(m) != 0 {
            return false;
        }
    }
    true
}

#[test]
fn property_matches_exact_decimal_comparison() {
    let specs = [
        "min=0.5",
        "xmin=-1.25 max=3",
        "int min=-12 max=345",
        "int xmax=100 mul=4",
        "min=-2.5 xmax=2.5 mul=0.5",
        "mul=0.25",
        "int min=7",
        "max=99.9",
        "min=0 max=0.01",
        "mul=0.5 mul=0.75 min=-4",
        "min=0",
        "xmin=0",
        "max=0",
        "xmax=0",
        "xmin=-0.001 xmax=0.001",
        // Bounds whose digits split the digit classes of the alphabet in different places.
        "min=-37.5 max=642.19",
        "int min=15 max=980",
        "xmin=2.5 xmax=7.25",
        "min=-88.8 xmax=111",
        // Bounds of both signs: symmetric ones share the states of both signs.
        "min=-2.5 max=2.5",
        "int min=-128 max=127",
        "min=-12.5 max=12.5 mul=0.5",
        "xmin=-40 max=40",
    ];
    let mut rng = Lcg(7);
    for spec in specs {
        let c = constraints(spec);
        let mut builder = GrammarBuilder::new();
        let expr = lower_number(&mut builder, "n", &c).unwrap_or_else(|e| panic!("{spec}: {e}"));
        let lowered = Lowered::new(builder, expr);
        for _ in 0..400 {
            let text = rng.number();
            // Exponents are accepted only where every bound is zero (see the module docs).
            let zero_bounds = [
                &c.minimum,
                &c.maximum,
                &c.exclusive_minimum,
                &c.exclusive_maximum,
            ]
            .iter()
            .all(|b| b.as_ref().map_or(true, Decimal::is_zero));
            let exponent_ok = zero_bounds && !c.integer && c.multiple_of.is_empty();
            let want = expected(&c, &text) && (exponent_ok || !text.contains(['e', 'E']));
            assert_eq!(lowered.accepts(&text), want, "{spec}: {text}");
        }
    }
}
