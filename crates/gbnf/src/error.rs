//! Errors and warnings of the `gbnf` crate, located by line and column in GBNF text or by
//! rule name in the IR.

use std::fmt;

/// A place in GBNF text: a byte offset with its 1-based line and column (in characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Location {
    pub offset: usize,
    pub line: u32,
    pub column: u32,
}

impl Location {
    /// The location of byte `offset` in `text` (clamped to the text, and to a character
    /// boundary).
    pub fn of_offset(text: &str, offset: usize) -> Location {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &text[..offset];
        let line = before.bytes().filter(|&b| b == b'\n').count() as u32 + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = text[line_start..offset].chars().count() as u32 + 1;
        Location {
            offset,
            line,
            column,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// A grammar that llama.cpp would refuse, or that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    /// Where in the text, when the grammar came from text.
    pub location: Option<Location>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The text is not GBNF: `message` says what was expected and what was found.
    Syntax { message: String },
    /// The grammar has no rules at all.
    NoRules,
    /// `rule` references `name`, which is not defined.
    UndefinedRule { name: String, rule: String },
    /// The start rule does not exist.
    MissingStartRule { name: String },
    /// The rules in `cycle` can reach themselves without consuming input; the first rule
    /// is repeated at the end (`a → b → a`).
    LeftRecursion { cycle: Vec<String> },
    /// A repetition in `rule` exceeds llama.cpp's limits.
    RepetitionLimit { rule: String, message: String },
}

impl Error {
    pub fn new(kind: ErrorKind) -> Error {
        Error {
            kind,
            location: None,
        }
    }

    pub fn at(kind: ErrorKind, location: Location) -> Error {
        Error {
            kind,
            location: Some(location),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(location) = self.location {
            write!(f, "{location}: ")?;
        }
        fmt::Display::fmt(&self.kind, f)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Syntax { message } => f.write_str(message),
            ErrorKind::NoRules => f.write_str("the grammar has no rules"),
            ErrorKind::UndefinedRule { name, rule } => {
                write!(f, "undefined rule '{name}' (referenced by '{rule}')")
            }
            ErrorKind::MissingStartRule { name } => {
                write!(f, "the grammar has no start rule '{name}'")
            }
            ErrorKind::LeftRecursion { cycle } => {
                write!(f, "left recursion: {}", cycle.join(" -> "))
            }
            ErrorKind::RepetitionLimit { rule, message } => {
                write!(f, "in rule '{rule}': {message}")
            }
        }
    }
}

impl std::error::Error for Error {}

/// Something llama.cpp accepts but that is probably a mistake.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    pub kind: WarningKind,
    pub location: Option<Location>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WarningKind {
    /// The rule cannot be reached from the start rule.
    UnreachableRule { rule: String },
    /// The rule has no finite derivation: it matches no string at all.
    EmptyLanguage { rule: String },
    /// The rule is defined more than once; llama.cpp keeps the last definition.
    DuplicateRule { rule: String },
    /// A repetition `{m,n}` in the rule has `n` over llama.cpp's limit of 2000, so
    /// llama.cpp (and our reader) drop the maximum and read it as `{m,}`.
    RepetitionMaxDropped { rule: String, max: u64 },
    /// Left recursion through rules that derive the empty string without an empty
    /// alternative: llama.cpp's check misses it, loads the grammar, and then hangs.
    HiddenLeftRecursion { cycle: Vec<String> },
    /// A negated class excludes a character past ASCII. When a token ends inside a
    /// character, llama.cpp refuses its first bytes if any character they may begin is
    /// excluded: after `[^é]` no tokenizer that splits `ü` can write it. The positive class
    /// of the rest has no such effect (`gbnf fmt` and every grammar we print write that).
    WideNegatedClass { rule: String, excluded: char },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(location) = self.location {
            write!(f, "{location}: ")?;
        }
        match &self.kind {
            WarningKind::UnreachableRule { rule } => {
                write!(f, "rule '{rule}' is unreachable from the start rule")
            }
            WarningKind::EmptyLanguage { rule } => {
                write!(
                    f,
                    "rule '{rule}' matches no string (it has no finite derivation)"
                )
            }
            WarningKind::DuplicateRule { rule } => {
                write!(
                    f,
                    "rule '{rule}' is defined more than once; the last definition wins"
                )
            }
            WarningKind::RepetitionMaxDropped { rule, max } => {
                write!(
                    f,
                    "in rule '{rule}': llama.cpp ignores a repetition maximum of {max} (over 2000) and repeats without a maximum"
                )
            }
            WarningKind::WideNegatedClass { rule, excluded } => {
                write!(
                    f,
                    "in rule '{rule}': the negated class excludes {excluded:?} (U+{:04X}), past ASCII: llama.cpp then refuses the first bytes of every character that begins like an excluded one when a token ends inside it; write the positive class of the other characters instead (`gbnf fmt` does)",
                    u32::from(*excluded)
                )
            }
            WarningKind::HiddenLeftRecursion { cycle } => {
                write!(
                    f,
                    "left recursion {} through rules that derive the empty string: llama.cpp loads this grammar, then hangs when sampling",
                    cycle.join(" -> ")
                )
            }
        }
    }
}
