//! Errors and warnings of the JSON Schema compiler. Every one names the JSON pointer of the
//! schema keyword it is about, and errors keep "the schema is wrong" (`Invalid`) apart from
//! "the schema is fine but cannot be expressed in GBNF" (`Unsupported`).

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};

use gbnf::FastHash;

use crate::normalize::SeededHash;
use crate::pointer::JsonPointer;

/// Why a schema could not be compiled, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    /// The keyword (or subschema) the error is about.
    pub pointer: JsonPointer,
}

#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The schema is not a valid JSON Schema: a keyword has the wrong type or an
    /// impossible value (`minimum` above `maximum`, a negative `minItems`, …).
    Invalid { keyword: String, message: String },
    /// The schema is valid, but this keyword (in this combination) cannot be expressed
    /// exactly as a grammar. With `Options::lenient` it becomes a [`Warning`] instead.
    Unsupported { keyword: String, message: String },
    /// A `$ref` that names nothing: a missing local target, or a remote document the
    /// resolver does not provide.
    UnresolvedRef { reference: String },
    /// A `$ref` cycle that never reaches a schema with structure (`{"$ref": "#"}`).
    CyclicRef { reference: String },
    /// Schemas (or references) nested deeper than the compiler's limit.
    TooDeep { limit: usize },
    /// No JSON value satisfies the schema (for example `false`, or a required property
    /// whose schema is `false`); GBNF cannot express an empty language.
    Unsatisfiable,
}

impl Error {
    pub fn new(kind: ErrorKind, pointer: JsonPointer) -> Error {
        Error { kind, pointer }
    }

    /// The keyword the error is about, when it is about one.
    pub fn keyword(&self) -> Option<&str> {
        match &self.kind {
            ErrorKind::Invalid { keyword, .. } | ErrorKind::Unsupported { keyword, .. } => {
                Some(keyword)
            }
            ErrorKind::UnresolvedRef { .. } | ErrorKind::CyclicRef { .. } => Some("$ref"),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pointer.is_root() {
            f.write_str("(root): ")?;
        } else {
            write!(f, "{}: ", self.pointer)?;
        }
        fmt::Display::fmt(&self.kind, f)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Invalid { message, .. } => write!(f, "invalid schema: {message}"),
            ErrorKind::Unsupported { message, .. } => write!(f, "unsupported: {message}"),
            ErrorKind::UnresolvedRef { reference } => {
                write!(f, "cannot resolve $ref {reference:?}")
            }
            ErrorKind::CyclicRef { reference } => write!(
                f,
                "$ref {reference:?} is part of a reference cycle that never reaches a schema"
            ),
            ErrorKind::TooDeep { limit } => {
                write!(f, "schema nesting exceeds the limit of {limit} levels")
            }
            ErrorKind::Unsatisfiable => f.write_str("no JSON value satisfies this schema"),
        }
    }
}

impl std::error::Error for Error {}

/// An assertion that was not enforced (with `Options::lenient`), or something suspicious
/// such as an unknown `format`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    pub pointer: JsonPointer,
    pub keyword: String,
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pointer.is_root() {
            f.write_str("(root): ")?;
        } else {
            write!(f, "{}: ", self.pointer)?;
        }
        f.write_str(&self.message)
    }
}

/// Keeps the first of equal warnings: a subschema merged or lowered in several places warns
/// in each.
pub(crate) fn report_once(warnings: &mut Vec<Warning>) {
    // Compared in place: two pointers are equal exactly when their texts are (the token
    // escaping is one-to-one), so nothing needs to be printed or copied to find repeats.
    // Kept warnings are found by a keyed hash of their content, each hash leading to the
    // first kept warning with it and `same_hash` chaining the others.
    // Seeded, so that a schema cannot choose collisions (foldhash: much quicker than SipHash
    // on these short texts, and there can be thousands of warnings); the map's keys are
    // those hashes already.
    let state = SeededHash::default();
    let mut by_hash: HashMap<u64, usize, FastHash> =
        HashMap::with_capacity_and_hasher(warnings.len(), FastHash::default());
    let mut same_hash: Vec<usize> = vec![usize::MAX; warnings.len()];
    let mut first: Vec<bool> = Vec::with_capacity(warnings.len());
    for (i, warning) in warnings.iter().enumerate() {
        let mut hasher = state.build_hasher();
        warning.pointer.hash(&mut hasher);
        warning.keyword.hash(&mut hasher);
        warning.message.hash(&mut hasher);
        let hash = hasher.finish();
        let Some(&head) = by_hash.get(&hash) else {
            by_hash.insert(hash, i);
            first.push(true);
            continue;
        };
        let mut at = head;
        let repeat = loop {
            let other = &warnings[at];
            if other.pointer == warning.pointer
                && other.keyword == warning.keyword
                && other.message == warning.message
            {
                break true;
            }
            if same_hash[at] == usize::MAX {
                break false;
            }
            at = same_hash[at];
        };
        if !repeat {
            same_hash[at] = i;
        }
        first.push(!repeat);
    }
    let mut first = first.into_iter();
    warnings.retain(|_| first.next().unwrap_or(true));
}
