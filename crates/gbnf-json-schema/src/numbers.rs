//! Number leaves: lowers `type: integer`, `minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum` and `multipleOf` into a grammar for the JSON text of every number that
//! satisfies all of them, compared exactly in decimal.

use gbnf::{Expr, GrammarBuilder};

use crate::strings::LeafError;

/// The numeric keywords of one (normalised) schema. Bounds are exact decimals.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct NumberConstraints {
    /// `type: integer` (JSON Schema counts `1.0` as an integer).
    pub integer: bool,
    pub minimum: Option<Decimal>,
    pub maximum: Option<Decimal>,
    pub exclusive_minimum: Option<Decimal>,
    pub exclusive_maximum: Option<Decimal>,
    pub multiple_of: Option<Decimal>,
}

/// An exact decimal number, parsed from the text of a JSON number.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Decimal {
    pub negative: bool,
    /// Significant digits without leading or trailing zeros; empty for zero.
    pub digits: String,
    /// The value is `digits × 10^exponent`.
    pub exponent: i64,
}

impl Decimal {
    /// Parses JSON number syntax (`-?int(.frac)?([eE][+-]?exp)?`); `None` if it is not one.
    pub fn parse(text: &str) -> Option<Decimal> {
        let _ = text;
        None
    }
}

/// Lowers `constraints` into an expression for the JSON text of every number that satisfies
/// all of them. Helper rules are named after `name`.
pub(crate) fn lower_number(
    builder: &mut GrammarBuilder,
    name: &str,
    constraints: &NumberConstraints,
) -> Result<Expr, LeafError> {
    let _ = (builder, name, constraints);
    Err(LeafError::unsupported("minimum", "not implemented yet"))
}
