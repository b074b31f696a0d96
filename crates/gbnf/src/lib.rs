//! GBNF grammars as llama.cpp reads them.
//!
//! - [`Grammar`], [`Expr`], [`CharClass`], [`RuleName`]: the IR every compiler lowers into.
//! - [`GrammarBuilder`]: names rules and merges identical bodies.
//!
//! Invariants:
//! - Rule names are `[a-zA-Z0-9-]+` by construction ([`RuleName`]).
//! - Character classes are canonical (sorted, merged ranges), so equal sets are equal values.
//! - Every rule body in a grammar built by [`GrammarBuilder`] is at most
//!   [`GrammarBuilder::MAX_DEPTH`] deep ([`Expr::depth`]); deeper parts are hoisted into
//!   generated rules without recursion, so recursive walks and the derived traits are safe.
//! - No function in this crate does IO or panics on any input.

mod builder;
mod error;
mod ir;
mod matcher;
mod print;
mod read;
mod validate;

pub use builder::{push_decimal, FastHash, FastHasher, GrammarBuilder, RuleReferences};
pub use error::{Error, ErrorKind, Location, Warning, WarningKind};
pub use ir::{
    is_rule_name_byte, CharClass, Expr, Grammar, InvalidRuleName, RuleName, Rules, Text, Token,
    TokenKind,
};

// The reader and printer.
mod legalize;
mod walk;
pub use print::print;
pub use read::read;

// The validator.
pub use validate::{check, validate};

// The matcher.
pub use matcher::{MatchState, Matcher, Verdict};
