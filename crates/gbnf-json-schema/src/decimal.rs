//! Exact comparison of JSON numbers by their decimal text, so that bounds such as
//! `minimum: 0.1` are merged and checked without the rounding of `f64`.

use std::cmp::Ordering;

use serde_json::Number;

/// A JSON number as sign, significant digits and exponent: `0.d1d2… × 10^exponent`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Decimal {
    negative: bool,
    /// No leading or trailing zeros; empty for zero.
    digits: Vec<u8>,
    exponent: i64,
}

impl Decimal {
    pub fn parse(text: &str) -> Option<Decimal> {
        let (negative, rest) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text.strip_prefix('+').unwrap_or(text)),
        };
        let (mantissa, exponent) = match rest.find(['e', 'E']) {
            Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
            None => (rest, 0),
        };
        let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        if int_part.is_empty() && frac_part.is_empty() {
            return None;
        }
        if !int_part
            .bytes()
            .chain(frac_part.bytes())
            .all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let mut digits: Vec<u8> = int_part
            .bytes()
            .chain(frac_part.bytes())
            .map(|b| b - b'0')
            .collect();
        let mut point = int_part.len() as i64;
        let leading = digits.iter().take_while(|&&d| d == 0).count();
        digits.drain(..leading);
        point -= leading as i64;
        while digits.last() == Some(&0) {
            digits.pop();
        }
        if digits.is_empty() {
            return Some(Decimal {
                negative: false,
                digits,
                exponent: 0,
            });
        }
        Some(Decimal {
            negative,
            digits,
            exponent: point.checked_add(exponent)?,
        })
    }

    pub fn of(number: &Number) -> Option<Decimal> {
        Decimal::parse(&number.to_string())
    }

    pub fn is_integer(&self) -> bool {
        self.digits.is_empty() || self.exponent >= self.digits.len() as i64
    }

    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    pub fn is_negative(&self) -> bool {
        self.negative
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Decimal) -> Ordering {
        let sign = |d: &Decimal| {
            if d.digits.is_empty() {
                0
            } else if d.negative {
                -1
            } else {
                1
            }
        };
        let (a, b) = (sign(self), sign(other));
        if a != b || a == 0 {
            return a.cmp(&b);
        }
        let magnitude = self
            .exponent
            .cmp(&other.exponent)
            .then_with(|| self.digits.cmp(&other.digits));
        if a < 0 {
            magnitude.reverse()
        } else {
            magnitude
        }
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Decimal) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Compares two JSON numbers exactly.
pub(crate) fn compare(a: &Number, b: &Number) -> Ordering {
    match (Decimal::of(a), Decimal::of(b)) {
        (Some(a), Some(b)) => a.cmp(&b),
        _ => a
            .as_f64()
            .partial_cmp(&b.as_f64())
            .unwrap_or(Ordering::Equal),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(text: &str) -> Decimal {
        Decimal::parse(text).unwrap_or_else(|| {
            Decimal::parse("0").unwrap_or(Decimal {
                negative: false,
                digits: vec![],
                exponent: 0,
            })
        })
    }

    #[test]
    fn compares_exactly() {
        assert_eq!(d("1.0"), d("1"));
        assert_eq!(d("100"), d("1e2"));
        assert!(d("0.1") < d("0.10000000000000001"));
        assert!(d("-2") < d("-1.5"));
        assert!(d("-0") == d("0"));
        assert!(d("1e400") > d("9e399"));
        assert!(!d("1.5").is_integer());
        assert!(d("2.0e0").is_integer());
        assert!(!d("15e-1").is_integer());
        assert!(d("15e1").is_integer());
    }
}
