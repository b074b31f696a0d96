//! Shared plumbing of the command-line tools `schema2gbnf` and `gbnf` (in `src/bin/`):
//! the only crate besides `xtask` that reads files and prints.

pub mod local_refs;
pub mod peg_cmd;
pub mod strict;
