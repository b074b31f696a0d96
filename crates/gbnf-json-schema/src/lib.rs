//! JSON Schema → GBNF. The crate compiles a schema in two stages: schema → normalised
//! schema → `gbnf` IR.

// Leaves (branch schema-leaf): strings, patterns, formats, numbers.
#[allow(dead_code)]
mod formats;
#[allow(dead_code)]
mod numbers;
#[allow(dead_code)]
mod pattern;
#[allow(dead_code)]
mod strings;
