//! Loading the real-world corpora (SchemaStore with its labelled instances, BFCL tool
//! parameter schemas) and measuring how our compiler does on them. Shared by the `corpora`
//! test (a fixed sample) and the `corpora` bench report (everything).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gbnf_json_schema::{compile, Options};
use serde_json::Value;

/// A corpus schema.
#[derive(Debug)]
pub struct Entry {
    pub name: String,
    pub schema: Value,
}

/// A labelled SchemaStore instance.
#[derive(Debug)]
pub struct Instance {
    pub schema: String,
    pub valid: bool,
    pub value: Value,
    /// The instance serialised compactly, keys as written.
    pub text: String,
}

/// SchemaStore: the schemas (in file order), the documents by every URL they are known under,
/// and the instances.
#[derive(Debug)]
pub struct SchemaStore {
    pub schemas: Vec<Entry>,
    pub by_url: HashMap<String, Arc<Value>>,
    pub instances: Vec<Instance>,
}

pub fn load_schemastore() -> SchemaStore {
    let mut schemas = Vec::new();
    let mut by_url = HashMap::new();
    for row in crate::support::read_jsonl("schemastore/schemas.jsonl") {
        let name = row["name"].as_str().unwrap_or_default().to_owned();
        let schema = row["schema"].clone();
        let shared = Arc::new(schema.clone());
        for host in [
            "https://json.schemastore.org/",
            "https://www.schemastore.org/",
        ] {
            by_url.insert(format!("{host}{name}.json"), Arc::clone(&shared));
        }
        for key in ["$id", "id"] {
            if let Some(id) = schema.get(key).and_then(Value::as_str) {
                by_url.insert(id.trim_end_matches('#').to_owned(), Arc::clone(&shared));
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
            value: row["instance"].clone(),
        })
        .collect();
    SchemaStore {
        schemas,
        by_url,
        instances,
    }
}

impl SchemaStore {
    /// The instances of each schema, by the schema's name.
    pub fn instances_by_schema(&self) -> HashMap<&str, Vec<&Instance>> {
        let mut by_schema: HashMap<&str, Vec<&Instance>> = HashMap::new();
        for instance in &self.instances {
            by_schema
                .entry(instance.schema.as_str())
                .or_default()
                .push(instance);
        }
        by_schema
    }

    /// The document for a `$ref` URL (fragment ignored), if the corpus has it.
    pub fn resolve(&self, uri: &str) -> Option<Arc<Value>> {
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

/// Compiles one schema with default options (`lenient` or not) and `resolve` for remote
/// references, timing `compile` alone.
pub fn compile_entry(
    schema: &Value,
    resolve: &dyn Fn(&str) -> Option<Arc<Value>>,
    lenient: bool,
) -> Compiled {
    let options = Options {
        resolver: Some(&resolve),
        lenient,
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

/// `instance` with every object's keys put in the order its schema declares them (declared
/// properties first, in `properties` order, gathered through local `$ref`s and
/// `allOf`/`anyOf`/`oneOf` branches; other keys after them, as written).
///
/// Grammars fix property order (schema order by default), while real instances are written in
/// any order; comparing on reordered instances measures everything except that design choice.
/// It is a heuristic: where the schema is too dynamic to follow, keys stay as written.
pub fn order_like_schema(instance: &Value, schema: &Value, root: &Value) -> Value {
    order_value(instance, schema, root, 0)
}

fn order_value(instance: &Value, schema: &Value, root: &Value, depth: usize) -> Value {
    if depth > 64 {
        return instance.clone();
    }
    let schemas = expand(schema, root);
    match instance {
        Value::Object(map) => {
            let mut declared: Vec<(&str, &Value)> = Vec::new();
            for schema in &schemas {
                if let Some(Value::Object(properties)) = schema.get("properties") {
                    for (name, subschema) in properties {
                        if !declared.iter().any(|(seen, _)| *seen == name.as_str()) {
                            declared.push((name.as_str(), subschema));
                        }
                    }
                }
            }
            let fallback = schemas.iter().find_map(|schema| {
                schema
                    .get("additionalProperties")
                    .filter(|value| value.is_object())
            });
            let rank = |key: &str| {
                declared
                    .iter()
                    .position(|(name, _)| *name == key)
                    .unwrap_or(declared.len())
            };
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by_key(|(key, _)| rank(key));
            let mut out = serde_json::Map::new();
            for (key, value) in entries {
                let subschema = declared
                    .iter()
                    .find(|(name, _)| *name == key.as_str())
                    .map(|(_, subschema)| *subschema)
                    .or(fallback);
                let ordered = match subschema {
                    Some(subschema) => order_value(value, subschema, root, depth + 1),
                    None => value.clone(),
                };
                out.insert(key.clone(), ordered);
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            let item_schema = schemas
                .iter()
                .find_map(|schema| schema.get("items").filter(|value| value.is_object()));
            let prefix = schemas.iter().find_map(|schema| {
                schema
                    .get("prefixItems")
                    .or_else(|| schema.get("items").filter(|value| value.is_array()))
                    .and_then(Value::as_array)
            });
            let ordered = items
                .iter()
                .enumerate()
                .map(|(idx, item)| {
                    match prefix.and_then(|prefix| prefix.get(idx)).or(item_schema) {
                        Some(subschema) => order_value(item, subschema, root, depth + 1),
                        None => item.clone(),
                    }
                })
                .collect();
            Value::Array(ordered)
        }
        other => other.clone(),
    }
}

/// The schema and what it pulls in: local `$ref` targets and `allOf`/`anyOf`/`oneOf`
/// branches, breadth first, at most 64 schemas.
fn expand<'a>(schema: &'a Value, root: &'a Value) -> Vec<&'a Value> {
    let mut out: Vec<&Value> = vec![schema];
    let mut idx = 0;
    while idx < out.len() && out.len() < 64 {
        let current = out[idx];
        idx += 1;
        if let Some(reference) = current.get("$ref").and_then(Value::as_str) {
            if let Some(pointer) = reference.strip_prefix('#') {
                if let Some(target) = root.pointer(pointer) {
                    if !out.iter().any(|seen| std::ptr::eq(*seen, target)) {
                        out.push(target);
                    }
                }
            }
        }
        for keyword in ["allOf", "anyOf", "oneOf"] {
            for branch in current
                .get(keyword)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                out.push(branch);
            }
        }
    }
    out
}
