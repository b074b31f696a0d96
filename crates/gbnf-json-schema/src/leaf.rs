//! The seam between the core and the leaf lowerings (strings: lengths, patterns, formats;
//! numbers: bounds, `multipleOf`). The core hands over the merged constraints of one leaf
//! and gets back the expression for the JSON text of a matching string or number.
//!
//! Until the leaf modules land, this file holds a conservative stand-in: string lengths
//! are enforced, everything else is reported as unsupported (or as an unknown format).

use gbnf::{CharClass, Expr, GrammarBuilder};

use crate::normalize::{NumberC, StringC};

/// Why a leaf could not be lowered.
#[derive(Clone, Debug)]
pub(crate) struct LeafError {
    pub keyword: &'static str,
    pub kind: LeafErrorKind,
    pub message: String,
}

#[allow(dead_code)] // Invalid is produced by the real leaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LeafErrorKind {
    Invalid,
    Unsupported,
    /// The format is not one we know: the core warns and drops it.
    UnknownFormat,
}

/// Options the leaves need.
#[allow(dead_code)] // Read by the real leaves.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LeafOptions {
    pub dotall: bool,
    pub raw_pattern: bool,
}

/// The JSON text of a string meeting `constraints` (quotes included). `char_rule` is the
/// rule for one JSON-encoded character.
pub(crate) fn lower_string(
    _builder: &mut GrammarBuilder,
    _name: &str,
    constraints: &StringC,
    char_expr: &Expr,
    _options: &LeafOptions,
) -> Result<Expr, LeafError> {
    if let Some((format, _)) = constraints.formats.first() {
        return Err(LeafError {
            keyword: "format",
            kind: LeafErrorKind::UnknownFormat,
            message: format!("format {format:?} is not enforced"),
        });
    }
    if !constraints.patterns.is_empty() {
        return Err(LeafError {
            keyword: "pattern",
            kind: LeafErrorKind::Unsupported,
            message: "patterns are not supported yet".to_owned(),
        });
    }
    let min = u32::try_from(constraints.min_length).map_err(|_| LeafError {
        keyword: "minLength",
        kind: LeafErrorKind::Unsupported,
        message: "minLength above 4294967295".to_owned(),
    })?;
    let max = constraints
        .max_length
        .and_then(|max| u32::try_from(max).ok());
    Ok(Expr::seq([
        Expr::literal("\""),
        Expr::repeat(char_expr.clone(), min, max),
        Expr::literal("\""),
    ]))
}

/// The JSON text of a number (or integer) meeting `constraints`.
pub(crate) fn lower_number(
    _builder: &mut GrammarBuilder,
    _name: &str,
    _integer: bool,
    constraints: &NumberC,
) -> Result<Expr, LeafError> {
    let keyword = if constraints.minimum.is_some() {
        "minimum"
    } else if constraints.maximum.is_some() {
        "maximum"
    } else {
        "multipleOf"
    };
    Err(LeafError {
        keyword,
        kind: LeafErrorKind::Unsupported,
        message: "numeric bounds are not supported yet".to_owned(),
    })
}

#[allow(dead_code)]
fn unused(_: CharClass) {}
