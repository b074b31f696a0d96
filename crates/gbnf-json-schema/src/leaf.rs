//! The seam between the core and the leaf lowerings (`strings`, `numbers`): converts the
//! merged constraints of one normalised leaf into the leaves' constraint structs.

use gbnf::{Expr, GrammarBuilder};

use crate::normalize::{NumberC, StringC};
pub(crate) use crate::numbers::NumberConstraints;
use crate::numbers::{self, Decimal};
use crate::strings::{self, CharRules, StringConstraints};

pub(crate) use crate::strings::{Escapes, LeafError, LeafErrorKind, LeafOptions};

/// The JSON text of a string meeting `constraints` (quotes included). Only the first
/// format is passed on; the core reports any others.
pub(crate) fn lower_string(
    builder: &mut GrammarBuilder,
    chars: &mut CharRules,
    name: &str,
    constraints: &StringC,
    options: &LeafOptions,
) -> Result<Expr, LeafError> {
    let leaf_constraints = StringConstraints {
        min_length: constraints.min_length,
        max_length: constraints.max_length,
        patterns: constraints
            .patterns
            .iter()
            .map(|(p, _)| p.clone())
            .collect(),
        format: constraints.formats.first().map(|(f, _)| f.clone()),
        not_patterns: constraints
            .not_patterns
            .iter()
            .map(|(p, _)| p.clone())
            .collect(),
        not_formats: constraints
            .not_formats
            .iter()
            .map(|(f, _)| f.clone())
            .collect(),
    };
    strings::lower_string(builder, chars, name, &leaf_constraints, options)
}

/// The JSON text of a number meeting `constraints` (see [`number_constraints`]).
pub(crate) fn lower_number(
    builder: &mut GrammarBuilder,
    name: &str,
    constraints: &NumberConstraints,
) -> Result<Expr, LeafError> {
    numbers::lower_number(builder, name, constraints)
}

/// The leaf's number constraints (an integer's when `integer`) as exact decimals; the core
/// keys its memo of lowered numbers by them.
pub(crate) fn number_constraints(
    integer: bool,
    constraints: &NumberC,
) -> Result<NumberConstraints, LeafError> {
    let decimal = |number: &serde_json::Number, keyword: &'static str| {
        Decimal::from_json(number).ok_or_else(|| LeafError {
            keyword,
            kind: LeafErrorKind::Invalid,
            message: format!("{number} is not a decimal number"),
            pattern_index: None,
        })
    };
    let mut leaf_constraints = NumberConstraints {
        integer,
        ..NumberConstraints::default()
    };
    if let Some(bound) = &constraints.minimum {
        let value = Some(decimal(&bound.value, "minimum")?);
        if bound.exclusive {
            leaf_constraints.exclusive_minimum = value;
        } else {
            leaf_constraints.minimum = value;
        }
    }
    if let Some(bound) = &constraints.maximum {
        let value = Some(decimal(&bound.value, "maximum")?);
        if bound.exclusive {
            leaf_constraints.exclusive_maximum = value;
        } else {
            leaf_constraints.maximum = value;
        }
    }
    for (number, _) in &constraints.multiple_of {
        leaf_constraints
            .multiple_of
            .push(decimal(number, "multipleOf")?);
    }
    for (number, _) in &constraints.not_multiple_of {
        leaf_constraints
            .not_multiple_of
            .push(decimal(number, "multipleOf")?);
    }
    Ok(leaf_constraints)
}

/// The default options with the core's flags.
pub(crate) fn options(dotall: bool, raw_pattern: bool) -> LeafOptions {
    LeafOptions {
        dotall,
        raw_pattern,
        escapes: Escapes::All,
    }
}
