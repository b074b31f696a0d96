//! PEG parser combinators: one definition both parses model output (also while it
//! streams) and lowers to a (lazy) GBNF grammar.
