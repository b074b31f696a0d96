//! JSON Schema → GBNF. The crate compiles a schema in two stages: schema → normalised
//! schema → `gbnf` IR.
