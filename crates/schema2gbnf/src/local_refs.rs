//! `schema2gbnf --refs DIR`: remote `$ref`s resolved from local files, since the compiler
//! never touches the network. A reference names a file by its `$id`, or else by its file
//! name (the URI's last path segment).
//!
//! Files are read when a reference needs them, not up front: a SchemaStore checkout holds
//! ~1,000 schemas (28 MB), which took longer to parse than the largest of them takes to
//! compile. The file named like the URI's last segment is read first, and taken if its `$id`
//! is the URI; only otherwise are all the files read, once, and indexed by `$id`.

use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gbnf_json_schema::Resolver;
use serde_json::Value;

/// The schema documents under one directory, read on demand.
#[derive(Debug, Default)]
pub struct LocalRefs {
    /// Every `.json` file under the directory, in a deterministic order (sorted within each
    /// directory, depth first).
    files: Vec<PathBuf>,
    /// File name → indices in `files`.
    by_name: HashMap<String, Vec<usize>>,
    /// Each file's document once read; `None` inside when it could not be read or parsed
    /// (the reason is in `problems`).
    documents: RefCell<Vec<Option<Option<Arc<Value>>>>>,
    /// `$id` without fragment → document, the first file in order winning; built the first
    /// time a reference is not settled by file name.
    by_id: OnceCell<HashMap<String, Arc<Value>>>,
    /// Files that could not be read or were not JSON, not yet reported.
    problems: RefCell<Vec<String>>,
}

impl LocalRefs {
    /// Lists every `.json` file under `dir` (subdirectories too); nothing is read yet. A
    /// directory that cannot be listed is an error naming it.
    pub fn load(dir: &Path) -> Result<LocalRefs, String> {
        let mut refs = LocalRefs::default();
        // Explicit stack: directory depth is the user's.
        let mut pending: Vec<PathBuf> = vec![dir.to_path_buf()];
        while let Some(dir) = pending.pop() {
            let entries = fs::read_dir(&dir).map_err(|err| format!("{}: {err}", dir.display()))?;
            let mut paths: Vec<PathBuf> = entries
                .filter_map(|entry| entry.ok().map(|entry| entry.path()))
                .collect();
            // Deterministic: which of two files is found first decides between equal `$id`s.
            paths.sort();
            for path in paths {
                if path.is_dir() {
                    pending.push(path);
                } else if path.extension().is_some_and(|ext| ext == "json") {
                    refs.add(path);
                }
            }
        }
        refs.documents = RefCell::new(vec![None; refs.files.len()]);
        Ok(refs)
    }

    fn add(&mut self, path: PathBuf) {
        if let Some(name) = path.file_name().and_then(|name| name.to_str()) {
            self.by_name
                .entry(name.to_owned())
                .or_default()
                .push(self.files.len());
        }
        self.files.push(path);
    }

    /// How many files were found.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether no file was found.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Reads every file now (for a batch, whose per-schema times should not include
    /// reading the files its first schemas need).
    pub fn read_all(&self) {
        self.by_id();
    }

    /// The files read so far that could not be read or were not JSON, each once, as
    /// `path: reason`.
    pub fn take_problems(&self) -> Vec<String> {
        std::mem::take(&mut *self.problems.borrow_mut())
    }

    /// File `index`'s document, read and parsed the first time.
    fn document(&self, index: usize) -> Option<Arc<Value>> {
        if let Some(Some(read)) = self.documents.borrow().get(index) {
            return read.clone();
        }
        let path = self.files.get(index)?;
        let read = fs::read_to_string(path)
            .map_err(|err| format!("{}: {err}", path.display()))
            .and_then(|text| {
                serde_json::from_str::<Value>(&text)
                    .map_err(|err| format!("{}: not JSON: {err}", path.display()))
            });
        let document = match read {
            Ok(value) => Some(Arc::new(value)),
            Err(problem) => {
                self.problems.borrow_mut().push(problem);
                None
            }
        };
        if let Some(slot) = self.documents.borrow_mut().get_mut(index) {
            *slot = Some(document.clone());
        }
        document
    }

    /// Every file read, indexed by `$id` (or draft-04's `id`) without fragment.
    fn by_id(&self) -> &HashMap<String, Arc<Value>> {
        self.by_id.get_or_init(|| {
            let mut by_id = HashMap::new();
            for index in 0..self.files.len() {
                let Some(document) = self.document(index) else {
                    continue;
                };
                if let Some(id) = id_of(&document) {
                    by_id.entry(id.to_owned()).or_insert(document);
                }
            }
            by_id
        })
    }
}

/// A document's `$id` (or draft-04's `id`) without its fragment.
fn id_of(document: &Value) -> Option<&str> {
    let id = document
        .get("$id")
        .or_else(|| document.get("id"))?
        .as_str()?;
    id.split('#').next()
}

impl Resolver for LocalRefs {
    fn resolve(&self, uri: &str) -> Option<Arc<Value>> {
        let uri = uri.split('#').next().unwrap_or(uri);
        let path = uri.split(['?', '#']).next().unwrap_or(uri);
        let name = path.rsplit('/').next().unwrap_or(path);
        let named: &[usize] = self.by_name.get(name).map_or(&[], Vec::as_slice);
        // The file named like the URI, if its `$id` is the URI: settled without reading the
        // others.
        for &index in named {
            if let Some(document) = self.document(index) {
                if id_of(&document) == Some(uri) {
                    return Some(document);
                }
            }
        }
        if let Some(document) = self.by_id().get(uri) {
            return Some(document.clone());
        }
        // By file name, when exactly one file has that name.
        match named {
            [index] => self.document(*index),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory of schema files, removed when dropped.
    struct Dir(PathBuf);

    impl Dir {
        fn new(tag: &str, files: &[(&str, &str)]) -> Dir {
            let root = std::env::temp_dir().join(format!(
                "schema2gbnf-local-refs-{tag}-{}",
                std::process::id()
            ));
            let _ = fs::remove_dir_all(&root);
            for (name, text) in files {
                let path = root.join(name);
                fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
                fs::write(path, text).expect("write");
            }
            Dir(root)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn resolved(refs: &LocalRefs, uri: &str) -> Option<Value> {
        refs.resolve(uri).map(|document| (*document).clone())
    }

    #[test]
    fn resolves_by_id_then_by_file_name() {
        let dir = Dir::new(
            "order",
            &[
                (
                    "a.json",
                    r#"{"$id": "https://example.com/a.json", "type": "string"}"#,
                ),
                ("b.json", r#"{"type": "integer"}"#),
                // Its `$id` names another file's name: the `$id` wins.
                (
                    "c.json",
                    r#"{"$id": "https://example.com/b.json", "type": "null"}"#,
                ),
                ("x/twice.json", r#"{"type": "boolean"}"#),
                ("y/twice.json", r#"{"type": "array"}"#),
            ],
        );
        let refs = LocalRefs::load(&dir.0).expect("listed");
        assert_eq!(refs.len(), 5);
        assert_eq!(
            resolved(&refs, "https://example.com/a.json#/definitions/x"),
            Some(serde_json::json!({"$id": "https://example.com/a.json", "type": "string"}))
        );
        assert_eq!(
            resolved(&refs, "https://example.com/b.json"),
            Some(serde_json::json!({"$id": "https://example.com/b.json", "type": "null"}))
        );
        assert_eq!(
            resolved(&refs, "https://elsewhere.org/x/b.json"),
            Some(serde_json::json!({"type": "integer"}))
        );
        assert_eq!(resolved(&refs, "https://elsewhere.org/twice.json"), None);
        assert_eq!(resolved(&refs, "https://example.com/d.json"), None);
        assert!(refs.take_problems().is_empty());
    }

    #[test]
    fn reads_only_the_named_file_when_its_id_settles_the_reference() {
        let dir = Dir::new(
            "lazy",
            &[
                (
                    "a.json",
                    r#"{"$id": "https://example.com/a.json", "type": "string"}"#,
                ),
                ("broken.json", "{not json"),
            ],
        );
        let refs = LocalRefs::load(&dir.0).expect("listed");
        assert!(resolved(&refs, "https://example.com/a.json").is_some());
        assert!(
            refs.take_problems().is_empty(),
            "the broken file was not read"
        );
        // A reference that needs the `$id` index reads every file, and reports the broken
        // one once, by path.
        assert_eq!(resolved(&refs, "https://example.com/none.json"), None);
        let problems = refs.take_problems();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("broken.json: not JSON"),
            "{problems:?}"
        );
        assert_eq!(resolved(&refs, "https://example.com/none.json"), None);
        assert!(refs.take_problems().is_empty());
    }
}
