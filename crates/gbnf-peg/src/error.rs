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
    // Kinds of lowering and of the `.peg` text format (peg-lower).
    /// `.peg` text that cannot be read, at 1-based `line` and `column` (in characters).
    Syntax {
        line: u32,
        column: u32,
        message: String,
    },
    /// Lazy lowering of an arena without trigger rules.
    NoTriggerRules,
    /// The text of a `gbnf` node does not read as GBNF.
    Gbnf { message: String },
    /// The JSON schema of a `schema` node does not compile.
    Schema { message: String },
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
        if let ErrorKind::Syntax { line, column, .. } = &self.kind {
            write!(f, "{line}:{column}: ")?;
        }
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
            ErrorKind::Syntax { message, .. } => f.write_str(message),
            ErrorKind::NoTriggerRules => {
                f.write_str("lazy lowering needs at least one trigger rule")
            }
            ErrorKind::Gbnf { message } => write!(f, "gbnf text: {message}"),
            ErrorKind::Schema { message } => write!(f, "json schema: {message}"),
        }
    }
}

impl std::error::Error for Error {}
