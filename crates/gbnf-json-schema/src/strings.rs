//! String leaves: lowers `minLength`, `maxLength`, `pattern` and `format` into a grammar for
//! the JSON encoding of every string that satisfies all of them, quotes included.
//!
//! Lengths and patterns apply to the decoded string, counted in code points; the grammar
//! describes the encoded text.

use gbnf::{Expr, GrammarBuilder};

use std::fmt;

/// The string keywords of one (normalised) schema.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct StringConstraints {
    pub min_length: u64,
    pub max_length: Option<u64>,
    /// Every pattern must match (ECMA-262 syntax, search semantics).
    pub patterns: Vec<String>,
    pub format: Option<String>,
}

/// Lowers `constraints` into an expression for the JSON text (quotes included) of every string
/// that satisfies all of them. Helper rules are named after `name`.
pub(crate) fn lower_string(
    builder: &mut GrammarBuilder,
    name: &str,
    constraints: &StringConstraints,
    options: &LeafOptions,
) -> Result<Expr, LeafError> {
    let _ = (builder, name, constraints, options);
    Err(LeafError::unsupported("pattern", "not implemented yet"))
}

/// Options of the leaf lowerings (set by the core from its `Options`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LeafOptions {
    /// ECMA `s` flag: `.` also matches line terminators.
    pub dotall: bool,
    /// llama.cpp's `--raw-pattern`: the pattern describes the JSON text between the quotes
    /// (escape sequences included), not the decoded string; see `pattern`.
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Escapes {
    /// Every encoding JSON allows: raw, short escapes (`\/` included) and `\uXXXX`
    /// (surrogate pairs for astral code points). Exact, at the cost of larger grammars.
    All,
    /// Code points that must be escaped (`"`, `\\`, U+0000–U+001F) in every escaped form;
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
    pub fn invalid(keyword: &'static str, message: impl Into<String>) -> LeafError {
        LeafError {
            keyword,
            kind: LeafErrorKind::Invalid,
            message: message.into(),
        }
    }

    pub fn unsupported(keyword: &'static str, message: impl Into<String>) -> LeafError {
        LeafError {
            keyword,
            kind: LeafErrorKind::Unsupported,
            message: message.into(),
        }
    }

    pub fn unsatisfiable(keyword: &'static str, message: impl Into<String>) -> LeafError {
        LeafError {
            keyword,
            kind: LeafErrorKind::Unsatisfiable,
            message: message.into(),
        }
    }
}

impl fmt::Display for LeafError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.keyword, self.message)
    }
}
