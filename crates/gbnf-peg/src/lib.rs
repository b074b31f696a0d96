//! PEG parser combinators: one definition both parses model output (also while it
//! streams) and lowers to a (lazy) GBNF grammar.

// Lowering to GBNF and the `.peg` text format (branch `peg-lower`).
mod until_automaton;
mod text;
