//! Loading the real-world corpora (SchemaStore with its labelled instances, BFCL tool
//! parameter schemas) and measuring how our compiler does on them. Shared by the `corpora`
//! test (a fixed sample) and the `corpora` bench report (everything).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use gbnf_json_schema::{compile, Options};
use serde_json::Value;

/// A corpus schema.
#[derive(Debug)]
pub struct Entry {
    pub name: String,
    pub schema: Value,
}

/// A labelled SchemaStore instance, serialised compactly.
#[derive(Debug)]
pub struct Instance {
    pub schema: String,
    pub valid: bool,
    pub text: String,
}

/// SchemaStore: the schemas (in file order), the documents by every URL they are known under,
/// and the instances.
#[derive(Debug)]
pub struct SchemaStore {
    pub schemas: Vec<Entry>,
    pub by_url: HashMap<String, Value>,
    pub instances: Vec<Instance>,
}

pub fn load_schemastore() -> SchemaStore {
    let mut schemas = Vec::new();
    let mut by_url = HashMap::new();
    for row in crate::support::read_jsonl("schemastore/schemas.jsonl") {
        let name = row["name"].as_str().unwrap_or_default().to_owned();
        let schema = row["schema"].clone();
        for host in [
            "https://json.schemastore.org/",
            "https://www.schemastore.org/",
        ] {
            by_url.insert(format!("{host}{name}.json"), schema.clone());
        }
        for key in ["$id", "id"] {
            if let Some(id) = schema.get(key).and_then(Value::as_str) {
                by_url.insert(id.trim_end_matches('#').to_owned(), schema.clone());
            }
        }
        schemas.push(Entry { name, schema });
    }
    let instances = crate::support::read_jsonl("schemastore/instances.jsonl")
        .into_iter()
        .map(|row| Instance {
            schema: row["schema"].as_str().unwrap_or_default().to_owned(),
            valid: row["valid"] == Value::Bool(true),
            text: serde_json::to_string(&row["instance"]).unwrap_or_default(),
        })
        .collect();
    SchemaStore {
        schemas,
        by_url,
        instances,
    }
}

impl SchemaStore {
    /// The document for a `$ref` URL (fragment ignored), if the corpus has it.
    pub fn resolve(&self, uri: &str) -> Option<Value> {
        let base = uri.split('#').next()?;
        self.by_url
            .get(base)
            .or_else(|| {
                self.by_url
                    .get(base.replace("http://", "https://").as_str())
            })
            .cloned()
    }
}

/// BFCL tool `parameters` schemas, in file order.
pub fn load_bfcl() -> Vec<Entry> {
    crate::support::read_jsonl("bfcl/tools.jsonl")
        .into_iter()
        .map(|row| Entry {
            name: row["id"].as_str().unwrap_or_default().to_owned(),
            schema: row["parameters"].clone(),
        })
        .collect()
}

/// What compiling one schema gave.
#[derive(Debug)]
pub struct Compiled {
    pub grammar: Option<gbnf::Grammar>,
    /// The error message, when it did not compile.
    pub error: Option<String>,
    pub elapsed: Duration,
}

/// Compiles one schema with default options and `resolve` for remote references.
pub fn compile_entry(schema: &Value, resolve: &dyn Fn(&str) -> Option<Value>) -> Compiled {
    let options = Options {
        resolver: Some(&resolve),
        ..Options::default()
    };
    let started = Instant::now();
    let result = compile(schema, &options);
    let elapsed = started.elapsed();
    match result {
        Ok(compiled) => Compiled {
            grammar: Some(compiled.grammar),
            error: None,
            elapsed,
        },
        Err(err) => Compiled {
            grammar: None,
            error: Some(err.to_string()),
            elapsed,
        },
    }
}

/// The kind of an error message, for tallies: the text after the pointer, with quoted
/// parts and numbers dropped.
pub fn error_kind(message: &str) -> String {
    let after_pointer = message.split_once(": ").map_or(message, |(_, rest)| rest);
    let mut out = String::new();
    let mut in_quote = false;
    for ch in after_pointer.chars() {
        match ch {
            '"' | '`' => {
                in_quote = !in_quote;
                if in_quote {
                    out.push('…');
                }
            }
            _ if in_quote => {}
            '0'..='9' => {
                if !out.ends_with('N') {
                    out.push('N');
                }
            }
            _ => out.push(ch),
        }
    }
    out.chars().take(90).collect()
}
