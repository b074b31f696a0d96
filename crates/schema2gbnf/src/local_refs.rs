//! `schema2gbnf --refs DIR`: remote `$ref`s resolved from local files, since the compiler
//! never touches the network. Every `.json` file under the directory is read once and
//! indexed by its `$id` and by its file name.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gbnf_json_schema::Resolver;
use serde_json::Value;

/// The schema documents found under one directory.
#[derive(Debug, Default)]
pub struct LocalRefs {
    /// `$id` without fragment → document.
    by_id: HashMap<String, Arc<Value>>,
    /// File name → document; `None` when two files share the name.
    by_name: HashMap<String, Option<Arc<Value>>>,
}

impl LocalRefs {
    /// Reads every `.json` file under `dir` (subdirectories too). A file that is not JSON
    /// is an error naming it.
    pub fn load(dir: &Path) -> Result<LocalRefs, String> {
        let mut refs = LocalRefs::default();
        // Explicit stack: directory depth is the user's.
        let mut pending: Vec<PathBuf> = vec![dir.to_path_buf()];
        while let Some(dir) = pending.pop() {
            let entries = fs::read_dir(&dir).map_err(|err| format!("{}: {err}", dir.display()))?;
            let mut paths: Vec<PathBuf> = entries
                .filter_map(|entry| entry.ok().map(|entry| entry.path()))
                .collect();
            // Deterministic: which of two same-named files is seen first never matters,
            // but error messages should not depend on directory order.
            paths.sort();
            for path in paths {
                if path.is_dir() {
                    pending.push(path);
                } else if path.extension().is_some_and(|ext| ext == "json") {
                    refs.add(&path)?;
                }
            }
        }
        Ok(refs)
    }

    fn add(&mut self, path: &Path) -> Result<(), String> {
        let text = fs::read_to_string(path).map_err(|err| format!("{}: {err}", path.display()))?;
        let document: Arc<Value> = serde_json::from_str(&text)
            .map(Arc::new)
            .map_err(|err| format!("{}: not JSON: {err}", path.display()))?;
        if let Some(id) = document.get("$id").or_else(|| document.get("id")) {
            if let Some(id) = id.as_str() {
                let id = id.split('#').next().unwrap_or(id);
                self.by_id
                    .entry(id.to_owned())
                    .or_insert_with(|| document.clone());
            }
        }
        if let Some(name) = path.file_name().and_then(|name| name.to_str()) {
            self.by_name
                .entry(name.to_owned())
                .and_modify(|slot| *slot = None)
                .or_insert(Some(document));
        }
        Ok(())
    }

    /// How many documents were read.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether no document was read.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

impl Resolver for LocalRefs {
    fn resolve(&self, uri: &str) -> Option<Arc<Value>> {
        let uri = uri.split('#').next().unwrap_or(uri);
        if let Some(document) = self.by_id.get(uri) {
            return Some(document.clone());
        }
        let path = uri.split(['?', '#']).next().unwrap_or(uri);
        let name = path.rsplit('/').next().unwrap_or(path);
        self.by_name.get(name).cloned().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resolves_by_id_then_by_file_name() {
        let mut refs = LocalRefs::default();
        refs.by_id.insert(
            "https://example.com/a.json".into(),
            Arc::new(json!({"type": "string"})),
        );
        refs.by_name
            .insert("b.json".into(), Some(Arc::new(json!({"type": "integer"}))));
        refs.by_name.insert("twice.json".into(), None);
        assert_eq!(
            refs.resolve("https://example.com/a.json").as_deref(),
            Some(&json!({"type": "string"}))
        );
        assert_eq!(
            refs.resolve("https://elsewhere.org/x/b.json").as_deref(),
            Some(&json!({"type": "integer"}))
        );
        assert_eq!(refs.resolve("https://elsewhere.org/twice.json"), None);
        assert_eq!(refs.resolve("https://example.com/c.json"), None);
    }
}
