//! PEG parser combinators: one definition both parses model output (also while it
//! streams) and lowers to a (lazy) GBNF grammar.
//!
//! - [`Builder`] appends parser [`Node`]s (combinators named after the grammar: `seq`,
//!   `choice`, `repeat(p, 1..=3)`, `until`, `json`, `tag`, `rule`, …) and `build`s an
//!   [`Arena`]: references resolved, left recursion rejected.
//! - [`parse`] runs an arena over complete input; with [`Options::partial`] the input may be a
//!   prefix (llama.cpp's LENIENT mode) and parsers that reach its end return
//!   [`Outcome::NeedMore`]. [`StreamParser`] does the same for text that arrives in chunks,
//!   resuming instead of re-parsing.
//! - Results carry an [`Ast`] of the `rule` and `tag` nodes that matched.
//! - [`Arena::to_json`] / [`Arena::from_json`] serialise the arena.
//!
//! ```
//! use gbnf_peg::{parse, Builder, Options, Outcome};
//!
//! let mut p = Builder::new();
//! let name = p.chars("[a-z]", 1..);
//! let name = p.tag("name", name);
//! let end = p.end();
//! let root = p.seq([name, end]);
//! p.set_root(root);
//! let arena = p.build().unwrap();
//! assert_eq!(parse(&arena, "abc", &Options::default()).outcome, Outcome::Match);
//! let partial = Options { partial: true };
//! assert_eq!(parse(&arena, "", &partial).outcome, Outcome::NeedMore);
//! ```
//!
//! Invariants:
//! - Semantics match llama.cpp's `common_peg_*` parsers (ordered choice, greedy repetition,
//!   `NeedMore` propagating straight to the root).
//! - No recursion whose depth the input or the definition controls: the runtime and `build`
//!   use explicit stacks.
//! - Nothing here panics on any input, any definition or any JSON.

mod ast;
mod builder;
mod class;
mod error;
mod first;
mod node;
mod prog;
mod runtime;
mod scan;
mod serial;

pub use ast::{Ast, AstId, AstNode, Label};
pub use builder::{sanitize_rule_name, Builder, RepeatBounds};
pub use error::{Error, ErrorKind};
pub use node::{Arena, Chars, Node, NodeId};
pub use runtime::{
    parse, parse_bytes, Options, Outcome, ParseResult, Status, StepLimit, StreamParser,
    STEPS_PER_BYTE,
};

// Lowering to GBNF and the textual format (peg-lower).
mod lower;
mod text;
mod until_automaton;

pub use lower::{lower, LowerOptions, Lowered, SpaceStyle, Warning, WarningKind};
pub use text::{parse_peg, MAX_NESTING};
