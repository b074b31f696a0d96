//! OpenAI Structured Outputs "strict mode" rules, checked on a schema before it is compiled,
//! so that `schema2gbnf --strict` can say which documented rule a schema breaks (and where)
//! instead of letting a provider reject it later.
//!
//! The rules are the documented subset (types, keywords, `additionalProperties: false`, every
//! property required, a non-`anyOf` object root) and the documented limits (5000 properties,
//! 10 levels of nesting, 120,000 characters of names and values, 1000 enum values, 15,000
//! characters for one string enum of more than 250 values).

use std::fmt;

use serde_json::{Map, Value};

/// Total object properties a strict schema may declare.
pub const MAX_PROPERTIES: usize = 5000;
/// Levels of object nesting a strict schema may have.
pub const MAX_NESTING: usize = 10;
/// Characters across all property names, definition names, enum values and const values.
pub const MAX_TOTAL_CHARS: usize = 120_000;
/// Enum values across the whole schema.
pub const MAX_ENUM_VALUES: usize = 1000;
/// A single string enum with more than this many values ...
pub const LARGE_ENUM_VALUES: usize = 250;
/// ... may have at most this many characters in total.
pub const LARGE_ENUM_CHARS: usize = 15_000;

const TYPES: &[&str] = &[
    "string", "number", "boolean", "integer", "object", "array", "null",
];
const FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];
/// Keywords the strict subset does not accept at all.
const UNSUPPORTED: &[&str] = &[
    "allOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contains",
    "minContains",
    "maxContains",
    "uniqueItems",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "$dynamicRef",
    "$recursiveRef",
];

/// One broken strict-mode rule, located by a JSON pointer (RFC 6901) into the schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StrictViolation {
    pub pointer: String,
    /// A short stable name of the rule, e.g. `additional-properties`, `required`, `keyword`.
    pub rule: &'static str,
    pub message: String,
}

impl fmt::Display for StrictViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: strict mode ({}): {}",
            self.pointer, self.rule, self.message
        )
    }
}

/// Checks `schema` against OpenAI's strict-mode rules and returns every violation, in
/// document order. An empty result means the schema is accepted as strict.
pub fn check_strict(schema: &Value) -> Vec<StrictViolation> {
    let mut out = Vec::new();
    let mut totals = Totals::default();
    match schema {
        Value::Object(map) => {
            if map.contains_key("anyOf") {
                out.push(violation("", "root", "the root schema must not be `anyOf`"));
            }
            if !has_type(map, "object") {
                out.push(violation(
                    "",
                    "root",
                    "the root schema must be `\"type\": \"object\"`",
                ));
            }
        }
        _ => out.push(violation(
            "",
            "root",
            "the root schema must be an object schema",
        )),
    }
    // Explicit stack: nesting depth is under the user's control.
    let mut stack: Vec<(String, &Value, usize)> = vec![(String::new(), schema, 0)];
    while let Some((pointer, value, depth)) = stack.pop() {
        let Value::Object(map) = value else {
            if !pointer.is_empty() {
                out.push(violation(
                    &pointer,
                    "boolean-schema",
                    "boolean schemas are not supported",
                ));
            }
            continue;
        };
        let children = check_node(&pointer, map, depth, &mut totals, &mut out);
        // Reverse so that the stack pops children in document order.
        stack.extend(children.into_iter().rev());
    }
    if totals.properties > MAX_PROPERTIES {
        out.push(violation(
            "",
            "limit",
            &format!(
                "{} object properties in total (at most {MAX_PROPERTIES})",
                totals.properties
            ),
        ));
    }
    if totals.chars > MAX_TOTAL_CHARS {
        out.push(violation(
            "",
            "limit",
            &format!(
                "{} characters of property names, definition names, enum and const values (at most {MAX_TOTAL_CHARS})",
                totals.chars
            ),
        ));
    }
    if totals.enum_values > MAX_ENUM_VALUES {
        out.push(violation(
            "",
            "limit",
            &format!(
                "{} enum values in total (at most {MAX_ENUM_VALUES})",
                totals.enum_values
            ),
        ));
    }
    out
}

#[derive(Default)]
struct Totals {
    properties: usize,
    chars: usize,
    enum_values: usize,
}

/// Checks one schema object and returns its subschemas with their pointers and nesting depth.
fn check_node<'a>(
    pointer: &str,
    map: &'a Map<String, Value>,
    depth: usize,
    totals: &mut Totals,
    out: &mut Vec<StrictViolation>,
) -> Vec<(String, &'a Value, usize)> {
    let mut children = Vec::new();
    if depth > MAX_NESTING {
        out.push(violation(
            pointer,
            "limit",
            &format!("nesting depth {depth} (at most {MAX_NESTING} levels)"),
        ));
    }
    for keyword in UNSUPPORTED {
        if map.contains_key(*keyword) {
            out.push(violation(
                &child(pointer, keyword),
                "keyword",
                &format!("`{keyword}` is not supported"),
            ));
        }
    }
    if let Some(ty) = map.get("type") {
        let names: Vec<&Value> = match ty {
            Value::Array(items) => items.iter().collect(),
            other => vec![other],
        };
        for name in names {
            if !name.as_str().is_some_and(|name| TYPES.contains(&name)) {
                out.push(violation(
                    &child(pointer, "type"),
                    "type",
                    &format!("unsupported type {name}"),
                ));
            }
        }
    } else if !map.contains_key("$ref")
        && !map.contains_key("anyOf")
        && !map.contains_key("enum")
        && !map.contains_key("const")
    {
        out.push(violation(
            pointer,
            "type",
            "every schema needs a `type` (or `anyOf`, `enum`, `const`, `$ref`)",
        ));
    }
    if let Some(format) = map.get("format") {
        if !format.as_str().is_some_and(|name| FORMATS.contains(&name)) {
            out.push(violation(
                &child(pointer, "format"),
                "format",
                &format!("unsupported format {format}"),
            ));
        }
    }
    if let Some(Value::Array(values)) = map.get("enum") {
        totals.enum_values += values.len();
        let chars: usize = values.iter().map(value_chars).sum();
        totals.chars += chars;
        let all_strings = values.iter().all(Value::is_string);
        if all_strings && values.len() > LARGE_ENUM_VALUES && chars > LARGE_ENUM_CHARS {
            out.push(violation(
                &child(pointer, "enum"),
                "limit",
                &format!(
                    "a string enum of {} values has {chars} characters (at most {LARGE_ENUM_CHARS} past {LARGE_ENUM_VALUES} values)",
                    values.len()
                ),
            ));
        }
    }
    if let Some(value) = map.get("const") {
        totals.chars += value_chars(value);
    }
    let is_object = has_type(map, "object") || map.contains_key("properties");
    if is_object {
        if map.get("additionalProperties") != Some(&Value::Bool(false)) {
            out.push(violation(
                &child(pointer, "additionalProperties"),
                "additional-properties",
                "every object must set `additionalProperties: false`",
            ));
        }
        let required: Vec<&str> = match map.get("required") {
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if let Some(Value::Object(properties)) = map.get("properties") {
            totals.properties += properties.len();
            let properties_pointer = child(pointer, "properties");
            for (name, schema) in properties {
                totals.chars += name.chars().count();
                let property_pointer = child(&properties_pointer, name);
                if !required.contains(&name.as_str()) {
                    out.push(violation(
                        &property_pointer,
                        "required",
                        &format!("property {name:?} must be listed in `required` (use a union with null for optional fields)"),
                    ));
                }
                children.push((property_pointer, schema, depth + 1));
            }
        }
    }
    if let Some(items) = map.get("items") {
        match items {
            Value::Array(tuple) => {
                let items_pointer = child(pointer, "items");
                for (idx, schema) in tuple.iter().enumerate() {
                    children.push((child(&items_pointer, &idx.to_string()), schema, depth + 1));
                }
            }
            schema => children.push((child(pointer, "items"), schema, depth + 1)),
        }
    }
    if let Some(Value::Array(prefix)) = map.get("prefixItems") {
        let prefix_pointer = child(pointer, "prefixItems");
        for (idx, schema) in prefix.iter().enumerate() {
            children.push((child(&prefix_pointer, &idx.to_string()), schema, depth + 1));
        }
    }
    if let Some(Value::Array(branches)) = map.get("anyOf") {
        let any_pointer = child(pointer, "anyOf");
        for (idx, schema) in branches.iter().enumerate() {
            children.push((child(&any_pointer, &idx.to_string()), schema, depth));
        }
    }
    for defs in ["$defs", "definitions"] {
        if let Some(Value::Object(definitions)) = map.get(defs) {
            let defs_pointer = child(pointer, defs);
            for (name, schema) in definitions {
                totals.chars += name.chars().count();
                children.push((child(&defs_pointer, name), schema, depth));
            }
        }
    }
    children
}

fn has_type(map: &Map<String, Value>, name: &str) -> bool {
    match map.get("type") {
        Some(Value::String(ty)) => ty == name,
        Some(Value::Array(items)) => items.iter().any(|item| item.as_str() == Some(name)),
        _ => false,
    }
}

/// Characters a value contributes to the total-size limit: a string's characters, or the
/// compact JSON text of anything else.
fn value_chars(value: &Value) -> usize {
    match value {
        Value::String(text) => text.chars().count(),
        other => other.to_string().chars().count(),
    }
}

/// `pointer` extended by one reference token, escaped per RFC 6901.
fn child(pointer: &str, token: &str) -> String {
    format!("{pointer}/{}", token.replace('~', "~0").replace('/', "~1"))
}

fn violation(pointer: &str, rule: &'static str, message: &str) -> StrictViolation {
    StrictViolation {
        pointer: pointer.to_owned(),
        rule,
        message: message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rules(schema: Value) -> Vec<(String, &'static str)> {
        check_strict(&schema)
            .into_iter()
            .map(|v| (v.pointer, v.rule))
            .collect()
    }

    #[test]
    fn documented_example_is_strict() {
        let schema = json!({
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "where"},
                "unit": {"type": ["string", "null"], "enum": ["F", "C", null]}
            },
            "additionalProperties": false,
            "required": ["location", "unit"]
        });
        assert_eq!(rules(schema), vec![]);
    }

    #[test]
    fn structural_rules_are_located() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a/b": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
                "c": {"allOf": [{"type": "string"}], "type": "string", "format": "uri"}
            },
            "required": ["a/b"],
            "additionalProperties": false
        });
        assert_eq!(
            rules(schema),
            vec![
                ("/properties/c".to_owned(), "required"),
                (
                    "/properties/a~1b/additionalProperties".to_owned(),
                    "additional-properties"
                ),
                ("/properties/c/allOf".to_owned(), "keyword"),
                ("/properties/c/format".to_owned(), "format"),
            ]
        );
    }

    #[test]
    fn root_must_be_a_plain_object() {
        let schema = json!({"anyOf": [{"type": "object", "additionalProperties": false}]});
        assert_eq!(
            rules(schema),
            vec![("".to_owned(), "root"), ("".to_owned(), "root")]
        );
    }

    #[test]
    fn nesting_limit_is_reported_per_level() {
        let mut schema = json!({"type": "string"});
        for _ in 0..50 {
            schema = json!({"type": "array", "items": schema});
        }
        let schema = json!({"type": "object", "properties": {"deep": schema}, "required": ["deep"], "additionalProperties": false});
        let found = check_strict(&schema);
        let limits: Vec<&str> = found
            .iter()
            .filter(|v| v.rule == "limit")
            .map(|v| v.pointer.as_str())
            .collect();
        assert_eq!(
            limits.len(),
            41,
            "one per level past {MAX_NESTING}: {limits:?}"
        );
    }

    #[test]
    fn enum_limits() {
        let values: Vec<Value> = (0..300)
            .map(|i| Value::String(format!("{i:0>60}")))
            .collect();
        let schema = json!({
            "type": "object",
            "properties": {"e": {"type": "string", "enum": values}},
            "required": ["e"],
            "additionalProperties": false
        });
        assert_eq!(
            rules(schema),
            vec![("/properties/e/enum".to_owned(), "limit")]
        );
    }
}
