//! `cargo xtask tidy`: repository rules that no compiler checks, such as every `.rs` file
//! opening with a `//!` comment that says why it exists, and a README whose generated
//! figures match their sources.

use std::path::Path;

use crate::{display_path, files_with_suffix};

/// The problems found under `root`, one message per offending file (empty when tidy).
pub fn check(root: &Path) -> std::io::Result<Vec<String>> {
    let mut problems = Vec::new();
    for path in files_with_suffix(root, ".rs")? {
        let text = std::fs::read_to_string(&path)?;
        if !text.starts_with("//!") {
            problems.push(format!(
                "{}:1:1: a Rust file must start with a `//!` comment saying why it exists",
                display_path(root, &path)
            ));
        }
    }
    problems.extend(crate::readme::check(root)?);
    Ok(problems)
}
