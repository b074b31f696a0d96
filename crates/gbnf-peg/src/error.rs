//! The one error type of `gbnf-peg`: a broken parser definition, located by rule name.
//! (A parse that does not match is an `Outcome`, never an `Error`.)

use std::fmt;

/// A parser definition that cannot be built or loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    /// The rule the problem is in (or about), when there is one.
    pub rule: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A `ref` names a rule that is never defined.
    UndefinedRule { name: String },
    /// These rules (or, when none is named, nodes) can reach themselves without consuming
    /// input; the first is repeated at the end.
    LeftRecursion { cycle: Vec<String> },
    /// The builder was never given a root.
    NoRoot,
    /// Serialised JSON that does not describe an arena: `message` says what is wrong and
    /// where (a JSON path).
    InvalidJson { message: String },
    /// A node that the runtime cannot execute, e.g. a string delimiter that is not ASCII.
    InvalidNode { message: String },
}

impl Error {
    pub fn new(kind: ErrorKind) -> Error {
        Error { kind, rule: None }
    }

    pub fn in_rule(kind: ErrorKind, rule: &str) -> Error {
        Error {
            kind,
            rule: Some(rule.to_owned()),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(rule) = &self.rule {
            write!(f, "rule '{rule}': ")?;
        }
        fmt::Display::fmt(&self.kind, f)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::UndefinedRule { name } => write!(f, "undefined rule '{name}'"),
            ErrorKind::LeftRecursion { cycle } => {
                write!(f, "left recursion: {}", cycle.join(" -> "))
            }
            ErrorKind::NoRoot => f.write_str("the parser has no root"),
            ErrorKind::InvalidJson { message } => write!(f, "invalid arena json: {message}"),
            ErrorKind::InvalidNode { message } => f.write_str(message),
        }
    }
}

impl std::error::Error for Error {}
