//! Project automation behind `cargo xtask` (see `main.rs` for the commands), kept in a library
//! so that `cargo test` can run the same checks (`tests/tidy.rs`).

pub mod codegen;
pub mod llama_compat;
pub mod readme;
pub mod snapshot;
pub mod tidy;

use std::path::{Path, PathBuf};

/// The repository root: the parent of this crate's directory.
pub fn repo_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// Every file under `dir` (recursively) whose name ends with `suffix`, sorted, skipping
/// build output, installed packages and hidden directories.
pub fn files_with_suffix(dir: &Path, suffix: &str) -> std::io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current)? {
            let entry = entry?;
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if entry.file_type()?.is_dir() {
                let skipped = name.starts_with('.') || name == "target" || name == "node_modules";
                if !skipped {
                    pending.push(path);
                }
            } else if name.ends_with(suffix) {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// `path` relative to `root`, with `/` separators, for messages.
pub fn display_path(root: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(root).unwrap_or(path);
    relative.to_string_lossy().replace('\\', "/")
}

/// `message` prefixed with the file it is about: `path:line:col: …` when the message starts
/// with its own location, `path: …` otherwise.
pub fn located(path: &str, message: &dyn std::fmt::Display, has_location: bool) -> String {
    if has_location {
        format!("{path}:{message}")
    } else {
        format!("{path}: {message}")
    }
}
