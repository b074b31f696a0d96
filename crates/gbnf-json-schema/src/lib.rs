//! JSON Schema → GBNF. The crate compiles a schema in two stages: schema → normalised
//! schema (`normalize`: refs resolved, `allOf` merged, conditionals expanded) → `gbnf` IR
//! (`lower`).
//!
//! - [`compile`]: a whole grammar whose start rule is `root`.
//! - [`compile_into`]: the rules for one schema inside a larger grammar (used by `gbnf-peg`).
//! - [`Options`]: whitespace, property order, leniency, the remote-`$ref` [`Resolver`].
//! - [`Error`] (with [`ErrorKind::Invalid`] vs [`ErrorKind::Unsupported`]) and [`Warning`],
//!   both located by a [`JsonPointer`] into the schema.
//!
//! ```
//! let schema = serde_json::json!({
//!     "type": "object",
//!     "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
//!     "required": ["name"]
//! });
//! let compiled = gbnf_json_schema::compile(&schema, &gbnf_json_schema::Options::default()).unwrap();
//! assert!(compiled.grammar.get("root").is_some());
//! ```
//!
//! Invariants:
//! - Every assertion keyword is either enforced exactly or reported: an error by default, a
//!   warning with `lenient`. Annotations and unknown keywords are ignored.
//! - The grammar accepts JSON text: the instance with the whitespace the options allow,
//!   objects with their properties in schema order (unless `PropertyOrder::Any`).
//! - No recursion whose depth the schema controls goes unchecked: nesting past
//!   [`MAX_DEPTH`] is an [`ErrorKind::TooDeep`] error.
//! - Output is deterministic: the same schema and options give the same grammar.
//!
//! Documented restrictions on the accepted JSON *encodings* (every valid instance is still
//! accepted in at least its canonical compact form, with the chosen whitespace):
//! - Object members follow schema order (`PropertyOrder::Schema`); undeclared members come
//!   after the declared ones. Keys are matched in their canonical JSON spelling.
//! - `const`/`enum` strings are matched in their canonical JSON spelling; numbers in every
//!   plain decimal spelling of the value (`1`, `1.0`, `-0`), not in exponent form (unless the
//!   schema wrote it so); objects with their keys in the order the schema gives them.
//! - Numbers with bounds or `multipleOf` have no exponent form (see `numbers`).
//! - `format` is enforced for the formats the `formats` module knows (a deliberate choice:
//!   2020-12 makes it an annotation); unknown formats are warnings.
//!
//! Reported rather than enforced (an `Unsupported` error, or a warning with `lenient`):
//! `uniqueItems` over items that are not a small finite set, `oneOf` whose branches may
//! overlap and cannot be negated, `not`/`if` whose negation is not expressible (negation
//! covers types, `enum`/`const`, `required`, property schemas, length/number/item-count
//! bounds and `items`), `$dynamicRef` when several `$dynamicAnchor`s of that name exist,
//! counting constraints past their state caps, and remote `$ref`s without a resolver.
//! `unevaluatedProperties`/`unevaluatedItems` see the properties of the alternative that
//! matched (anyOf branches are not combined), which is exact in the common cases.

mod decimal;
mod error;
mod keys;
mod leaf;
mod lower;
mod normalize;
mod pointer;
mod refs;
mod value_id;
mod value_key;

// Leaves (branch schema-leaf): strings, patterns, formats, numbers.
#[allow(dead_code)]
mod formats;
#[allow(dead_code)]
mod numbers;
#[allow(dead_code)]
mod pattern;
#[allow(dead_code)]
mod strings;

use std::fmt;
use std::sync::Arc;

use gbnf::{Grammar, GrammarBuilder, RuleName};
use serde_json::Value;

pub use error::{Error, ErrorKind, Warning};
pub use pointer::JsonPointer;

/// How deeply schemas (and chains of references) may nest.
pub const MAX_DEPTH: usize = 128;

/// What [`compile`] produces.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The grammar; its start rule is `root`.
    pub grammar: Grammar,
    /// Assertions not enforced (with `lenient`) and other remarks, each once, in the order
    /// they were first found.
    pub warnings: Vec<Warning>,
}

/// Where whitespace may appear between JSON tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Whitespace {
    /// None at all: the compact serialisation.
    Compact,
    /// llama.cpp's `space ::= | " " | "\n"{1,2} [ \t]{0,20}`: at most one space, or one or
    /// two newlines and a bounded indent, so a model cannot loop on whitespace.
    #[default]
    Bounded,
    /// Any JSON whitespace, unbounded: `[ \t\n\r]*`.
    Flexible,
}

/// The most declared properties [`PropertyOrder::Any`] accepts, whatever
/// [`Options::max_any_order_properties`] says: the grammar has a rule for every subset of
/// the properties seen so far, up to 2^n of them (32,768 at 15).
pub const MAX_ANY_ORDER_PROPERTIES: usize = 15;

/// The order in which an object's properties may appear.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PropertyOrder {
    /// Declared properties in the order of `properties`; additional properties after them.
    #[default]
    Schema,
    /// Any order, for objects with at most [`Options::max_any_order_properties`] declared
    /// properties (an `Unsupported` error past that).
    Any,
}

/// Fetches a remote schema document by absolute URI (fragment removed). The compiler never
/// does IO itself: remote `$ref`s resolve only through this.
///
/// Documents are shared, not copied: a host that keeps a registry of schemas hands out the
/// same `Arc` to every compile, which only reads it (copying a large document per compile,
/// and dropping the copy, cost more than compiling against it).
pub trait Resolver {
    fn resolve(&self, uri: &str) -> Option<Arc<Value>>;
}

impl<F: Fn(&str) -> Option<Arc<Value>>> Resolver for F {
    fn resolve(&self, uri: &str) -> Option<Arc<Value>> {
        self(uri)
    }
}

/// Compilation options; `Options::default()` follows the JSON Schema specification.
#[derive(Clone, Copy)]
pub struct Options<'a> {
    pub whitespace: Whitespace,
    /// What a missing `additionalProperties` means: `true` per the specification; `false`
    /// is llama.cpp's behaviour (no undeclared properties).
    pub additional_properties_default: bool,
    pub property_order: PropertyOrder,
    /// The cap for [`PropertyOrder::Any`]; at most [`MAX_ANY_ORDER_PROPERTIES`] applies
    /// whatever the value.
    pub max_any_order_properties: usize,
    /// Report unsupported assertions as warnings (and leave them unenforced) instead of
    /// failing.
    pub lenient: bool,
    /// `.` in patterns matches line terminators too.
    pub dotall: bool,
    /// Patterns describe the raw JSON string content (escapes included) rather than the
    /// decoded string (llama.cpp's `--raw-pattern`).
    pub raw_pattern: bool,
    /// Unknown keywords and unknown formats are errors rather than ignored / warnings.
    pub strict: bool,
    /// Provides remote documents for `$ref`s outside the schema.
    pub resolver: Option<&'a dyn Resolver>,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            whitespace: Whitespace::default(),
            additional_properties_default: true,
            property_order: PropertyOrder::default(),
            max_any_order_properties: 6,
            lenient: false,
            dotall: false,
            raw_pattern: false,
            strict: false,
            resolver: None,
        }
    }
}

impl fmt::Debug for Options<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("whitespace", &self.whitespace)
            .field(
                "additional_properties_default",
                &self.additional_properties_default,
            )
            .field("property_order", &self.property_order)
            .field("max_any_order_properties", &self.max_any_order_properties)
            .field("lenient", &self.lenient)
            .field("dotall", &self.dotall)
            .field("raw_pattern", &self.raw_pattern)
            .field("strict", &self.strict)
            .field("resolver", &self.resolver.map(|_| ".."))
            .finish()
    }
}

/// Compiles `schema` into a grammar whose start rule `root` accepts exactly the JSON texts
/// of the valid instances (within the documented restrictions on encodings).
pub fn compile(schema: &Value, options: &Options) -> Result<Compiled, Error> {
    let (grammar, mut warnings) = lower::compile_grammar(schema, options)?;
    error::report_once(&mut warnings);
    Ok(Compiled { grammar, warnings })
}

/// Adds the rules for `schema` to `builder`, all named with the prefix `name`, and returns
/// the rule that matches an instance. No `root` rule is created.
pub fn compile_into(
    builder: &mut GrammarBuilder,
    name: &str,
    schema: &Value,
    options: &Options,
) -> Result<(RuleName, Vec<Warning>), Error> {
    lower::compile_schema(builder, name, schema, options)
}

#[cfg(test)]
mod tests;
