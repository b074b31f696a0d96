//! Identities of schemas by what they say: equal numbers for schemas written the same way
//! (annotations such as `description` aside), so that a subschema written many times (the
//! options of hundreds of ESLint rules, `{"type": "boolean"}` everywhere) is normalised, and
//! so lowered, once.
//!
//! The identity is exact, not a hash: each distinct value is interned once as its kind, its
//! length and its children's codes, so two values get the same code only if they are equal
//! (members in the same order, numbers spelt the same way). Containers are looked up by
//! address first, so a schema asked for again, or the subschema of one asked for before, is
//! found without walking it. Addresses are only valid while the values live: an interner
//! must not outlive the documents it was asked about (the normaliser owns both).

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};

use gbnf::{FastHash, FastHasher};
use serde_json::{Map, Number, Value};

use crate::normalize::SeededHash;
use crate::MAX_DEPTH;

/// What a schema keyword's value is, for a schema's identity.
enum Role {
    /// A keyword that never changes what the schema itself accepts: left out.
    Annotation,
    /// A schema, or an array of schemas.
    Schemas,
    /// An object of schemas.
    SchemaMap,
    /// Anything else: taken as a plain value.
    Value,
}

fn role(keyword: &str, strict: bool) -> Role {
    match keyword {
        "title" | "description" | "$comment" | "default" | "examples" | "deprecated"
        | "readOnly" | "writeOnly" | "contentEncoding" | "contentMediaType" | "contentSchema" => {
            Role::Annotation
        }
        // Definitions are reached through references, which resolve by base URI and the
        // reference's text: what a schema's own `$defs` hold does not change its shape.
        "$defs" | "definitions" => Role::Annotation,
        "additionalProperties"
        | "propertyNames"
        | "items"
        | "additionalItems"
        | "contains"
        | "not"
        | "if"
        | "then"
        | "else"
        | "unevaluatedProperties"
        | "unevaluatedItems"
        | "prefixItems"
        | "allOf"
        | "anyOf"
        | "oneOf" => Role::Schemas,
        "properties" | "patternProperties" | "dependentSchemas" | "dependencies" => Role::SchemaMap,
        // Editors' and vendors' keywords, which the normaliser never reads (SchemaStore
        // schemas carry long `markdownDescription`s): ignored unless strict mode makes an
        // unknown keyword an error.
        _ if !strict && is_editor_keyword(keyword) => Role::Annotation,
        _ => Role::Value,
    }
}

fn is_editor_keyword(keyword: &str) -> bool {
    keyword.starts_with("x-")
        || matches!(
            keyword,
            "markdownDescription"
                | "markdownEnumDescriptions"
                | "enumDescriptions"
                | "deprecationMessage"
                | "errorMessage"
                | "patternErrorMessage"
                | "doNotSuggest"
                | "suggestSortText"
                | "defaultSnippets"
        )
}

/// How deep schemas nest before [`ValueIds::schema`] gives up: as deep as the normaliser
/// takes them ([`MAX_DEPTH`]), which bounds the recursion.
const MAX_SCHEMA_DEPTH: usize = MAX_DEPTH;

/// Interned JSON values and schemas.
///
/// Scalars are coded directly (strings and numbers by their own tables); a container is its
/// kind, its length and its children's codes, kept one after another in `containers`.
/// Entries with equal hashes are chained, and a lookup walks at most [`MAX_CHAIN`] of them
/// before making a new entry: a schema crafted so that its texts collide costs at most that
/// many comparisons per value (and loses sharing, never exactness: an id is only given again
/// to content that compared equal).
#[derive(Default)]
pub(crate) struct ValueIds {
    /// Unknown keywords are errors: editors' keywords count in a schema's identity.
    strict: bool,
    /// Containers already interned as plain values, by address.
    values: HashMap<usize, u64, FastHash>,
    /// Schema objects already interned as schemas, by address (`None`: too deep).
    schemas: HashMap<usize, Option<u64>, FastHash>,
    /// Every container's content: kind, length, then the children's codes (an object's as
    /// key, value, key, value…).
    containers: Table<u64>,
    /// Every string's bytes.
    texts: Table<u8>,
    numbers: HashMap<Number, u32, SeededHash>,
    /// The base URI [`ValueIds::base`] was last asked about, with its id.
    last_base: Option<(String, u32)>,
    /// A direct-mapped cache of string ids ([`RECENT_STRINGS`] slots, by [`recent_slot`];
    /// `NONE` when empty; allocated on first use): a few strings (keywords, type names) are
    /// most of those asked about, and a hit costs one comparison with the interned text
    /// instead of a hash and a table lookup. A slot only ever holds a real id, and a hit is
    /// checked against that id's text, so a collision only costs a miss.
    recent: Vec<u32>,
}

/// How many slots [`ValueIds::recent`] has (a power of two).
const RECENT_STRINGS: usize = 512;

/// The slot of [`ValueIds::recent`] for a string: its length and three of its bytes, which
/// tell the keywords of JSON Schema apart.
fn recent_slot(text: &[u8]) -> usize {
    let (Some(&first), Some(&last)) = (text.first(), text.last()) else {
        return 0;
    };
    let middle = text[text.len() / 2];
    (text.len().wrapping_mul(0x9e37)
        ^ usize::from(first) << 4
        ^ usize::from(middle) << 1
        ^ usize::from(last) << 7)
        & (RECENT_STRINGS - 1)
}

/// How many entries with the same hash a lookup compares before it makes a new one.
const MAX_CHAIN: usize = 16;

const NONE: u32 = u32::MAX;

// The kinds of codes, in the low three bits; the rest is the string, number or container id.
const NULL: u64 = 0;
const FALSE: u64 = 1;
const TRUE: u64 = 2;
const NUMBER: u64 = 3;
const STRING: u64 = 4;
const ARRAY: u64 = 5;
const OBJECT: u64 = 6;
/// A schema object, interned without its annotations (never equal to a plain object).
const SCHEMA: u64 = 7;

fn address(value: &Value) -> usize {
    value as *const Value as usize
}

fn is_container(value: &Value) -> bool {
    matches!(value, Value::Array(_) | Value::Object(_))
}

impl ValueIds {
    /// An empty table; `strict` as [`crate::Options::strict`].
    pub fn new(strict: bool) -> ValueIds {
        ValueIds {
            strict,
            ..ValueIds::default()
        }
    }

    /// The identity of `value` read as a schema: equal for schemas equal but for their
    /// annotations (member order and number spelling count). `None` for schemas nested
    /// deeper than anything the normaliser takes.
    pub fn schema(&mut self, value: &Value) -> Option<u64> {
        self.schema_at(value, 0)
    }

    fn schema_at(&mut self, value: &Value, depth: usize) -> Option<u64> {
        let Value::Object(map) = value else {
            return Some(self.value(value));
        };
        if let Some(&code) = self.schemas.get(&address(value)) {
            return code;
        }
        let code = match depth < MAX_SCHEMA_DEPTH {
            true => self.schema_object(map, depth),
            false => None,
        };
        self.schemas.insert(address(value), code);
        code
    }

    fn schema_object(&mut self, map: &Map<String, Value>, depth: usize) -> Option<u64> {
        let mut content = Vec::with_capacity(2 + 2 * map.len());
        content.extend([SCHEMA, 0]);
        for (keyword, arg) in map {
            let keyword = keyword.as_str();
            let code = match (role(keyword, self.strict), arg) {
                (Role::Annotation, _) => continue,
                (Role::Schemas, Value::Array(items)) => {
                    let mut list = Vec::with_capacity(2 + items.len());
                    list.extend([ARRAY, items.len() as u64]);
                    for item in items {
                        list.push(self.schema_at(item, depth + 1)?);
                    }
                    ARRAY | u64::from(self.container(&list)) << 3
                }
                (Role::Schemas, _) => self.schema_at(arg, depth + 1)?,
                (Role::SchemaMap, Value::Object(members)) => {
                    let mut list = Vec::with_capacity(2 + 2 * members.len());
                    list.extend([OBJECT, members.len() as u64]);
                    for (name, schema) in members {
                        list.push(STRING | u64::from(self.string(name)) << 3);
                        list.push(self.schema_at(schema, depth + 1)?);
                    }
                    OBJECT | u64::from(self.container(&list)) << 3
                }
                (Role::SchemaMap | Role::Value, _) => self.value(arg),
            };
            content.push(STRING | u64::from(self.string(keyword)) << 3);
            content.push(code);
        }
        content[1] = (content.len() as u64 - 2) / 2;
        Some(SCHEMA | u64::from(self.container(&content)) << 3)
    }

    /// The identity of a plain JSON value: equal for equal values, member order and number
    /// spelling included. Iterative, so that no value is too deep for it.
    pub fn value(&mut self, value: &Value) -> u64 {
        if let Some(code) = self.known(value) {
            return code;
        }
        // Post-order: a container is interned once all its containers are.
        let mut stack: Vec<(&Value, bool)> = vec![(value, false)];
        let mut content = Vec::new();
        while let Some((container, children_done)) = stack.pop() {
            if self.values.contains_key(&address(container)) {
                continue;
            }
            if !children_done {
                stack.push((container, true));
                let known = &self.values;
                let pending =
                    |child: &&Value| is_container(child) && !known.contains_key(&address(child));
                match container {
                    Value::Array(items) => {
                        stack.extend(items.iter().filter(pending).map(|child| (child, false)))
                    }
                    Value::Object(map) => {
                        stack.extend(map.values().filter(pending).map(|child| (child, false)))
                    }
                    _ => {}
                }
                continue;
            }
            content.clear();
            let kind = match container {
                Value::Array(items) => {
                    content.extend([ARRAY, items.len() as u64]);
                    for item in items {
                        content.push(self.child(item));
                    }
                    ARRAY
                }
                Value::Object(map) => {
                    content.extend([OBJECT, map.len() as u64]);
                    for (key, item) in map {
                        content.push(STRING | u64::from(self.string(key)) << 3);
                        content.push(self.child(item));
                    }
                    OBJECT
                }
                _ => continue,
            };
            let code = kind | u64::from(self.container(&content)) << 3;
            self.values.insert(address(container), code);
        }
        self.child(value)
    }

    /// The code of a value whose containers are interned already (post-order guarantees it).
    fn child(&mut self, value: &Value) -> u64 {
        let code = self.known(value);
        debug_assert!(code.is_some(), "a container is interned before its parent");
        code.unwrap_or(NULL)
    }

    /// The identity of a string (keys and string values share one table).
    pub fn string(&mut self, text: &str) -> u32 {
        let bytes = text.as_bytes();
        let slot = recent_slot(bytes);
        if let Some(&id) = self.recent.get(slot) {
            if id != NONE && self.texts.get(id) == bytes {
                return id;
            }
        }
        let mut hasher = FastHasher::default();
        hasher.write(bytes);
        let id = self.texts.intern(hasher.finish(), bytes);
        if self.recent.is_empty() {
            self.recent = vec![NONE; RECENT_STRINGS];
        }
        self.recent[slot] = id;
        id
    }

    /// [`ValueIds::string`] of a schema's base URI. Schemas are normalised document by
    /// document, so the base is mostly the one asked about last: comparing it with that one
    /// is quicker than hashing the URI again.
    pub fn base(&mut self, text: &str) -> u32 {
        if let Some((last, id)) = &self.last_base {
            if last == text {
                return *id;
            }
        }
        let id = self.string(text);
        self.last_base = Some((text.to_owned(), id));
        id
    }

    /// The code of a scalar, or of a container interned already.
    fn known(&mut self, value: &Value) -> Option<u64> {
        Some(match value {
            Value::Null => NULL,
            Value::Bool(false) => FALSE,
            Value::Bool(true) => TRUE,
            Value::Number(number) => {
                let next = self.numbers.len() as u32;
                let id = *self.numbers.entry(number.clone()).or_insert(next);
                NUMBER | u64::from(id) << 3
            }
            Value::String(text) => STRING | u64::from(self.string(text)) << 3,
            Value::Array(_) | Value::Object(_) => *self.values.get(&address(value))?,
        })
    }

    /// The id of a container with this content.
    fn container(&mut self, content: &[u64]) -> u32 {
        self.containers
            .intern(FastHash::default().hash_one(content), content)
    }
}

/// Slices stored one after another, each under the id of its first appearance.
struct Table<T> {
    items: Vec<T>,
    /// Where each entry starts and ends in `items`.
    spans: Vec<(usize, usize)>,
    /// The last entry with a hash; `previous` chains the earlier ones.
    last: HashMap<u64, u32, FastHash>,
    previous: Vec<u32>,
}

impl<T> Default for Table<T> {
    fn default() -> Table<T> {
        Table {
            items: Vec::new(),
            spans: Vec::new(),
            last: HashMap::default(),
            previous: Vec::new(),
        }
    }
}

impl<T: PartialEq + Clone> Table<T> {
    /// The content of entry `id`.
    fn get(&self, id: u32) -> &[T] {
        let (start, end) = self.spans[id as usize];
        &self.items[start..end]
    }

    /// The id of `content` (whose hash is `hash`), given to it now if it is new.
    fn intern(&mut self, hash: u64, content: &[T]) -> u32 {
        let (items, spans) = (&self.items, &self.spans);
        let equal = |id: u32| {
            let (start, end) = spans[id as usize];
            items[start..end] == *content
        };
        if let Some(id) = find(&self.last, &self.previous, hash, equal) {
            return id;
        }
        let id = self.spans.len() as u32;
        let start = self.items.len();
        self.items.extend_from_slice(content);
        self.spans.push((start, self.items.len()));
        self.previous.push(chain(&mut self.last, hash, id));
        id
    }
}

/// The first of the (at most [`MAX_CHAIN`]) entries with this hash that is `equal`.
fn find(
    last: &HashMap<u64, u32, FastHash>,
    previous: &[u32],
    hash: u64,
    equal: impl Fn(u32) -> bool,
) -> Option<u32> {
    let mut at = last.get(&hash).copied().unwrap_or(NONE);
    for _ in 0..MAX_CHAIN {
        if at == NONE {
            return None;
        }
        if equal(at) {
            return Some(at);
        }
        at = previous[at as usize];
    }
    None
}

/// Makes `id` the last entry with `hash`; returns the one it chains to.
fn chain(last: &mut HashMap<u64, u32, FastHash>, hash: u64, id: u32) -> u32 {
    match last.entry(hash) {
        Entry::Occupied(mut entry) => std::mem::replace(entry.get_mut(), id),
        Entry::Vacant(slot) => {
            slot.insert(id);
            NONE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ValueIds;
    use serde_json::{json, Value};

    fn same_value(a: &Value, b: &Value) -> bool {
        let mut ids = ValueIds::default();
        ids.value(a) == ids.value(b)
    }

    fn same_schema(a: &Value, b: &Value) -> bool {
        let mut ids = ValueIds::new(true);
        ids.schema(a) == ids.schema(b)
    }

    #[test]
    fn equal_values_share_an_identity() {
        let a =
            json!({"type": "object", "properties": {"x": {"type": "boolean"}}, "enum": [1, [2]]});
        let b =
            json!({"type": "object", "properties": {"x": {"type": "boolean"}}, "enum": [1, [2]]});
        assert!(same_value(&a, &b));
        assert!(same_schema(&a, &b));
        assert!(same_value(&json!(null), &json!(null)));
    }

    #[test]
    fn written_differently_is_different() {
        let pairs = [
            // Member order decides the order of properties in the grammar.
            (json!({"a": 1, "b": 2}), json!({"b": 2, "a": 1})),
            (json!(1), json!(1.0)),
            (json!([1, 2]), json!([2, 1])),
            (json!({"a": [1]}), json!({"a": [[1]]})),
            (json!("1"), json!(1)),
            (json!({"a": "b"}), json!({"b": "a"})),
            (json!([]), json!({})),
            (json!(false), json!(null)),
            (json!({"description": "a"}), json!({"description": "b"})),
        ];
        for (a, b) in pairs {
            assert!(!same_value(&a, &b), "{a} and {b}");
        }
    }

    #[test]
    fn schemas_equal_but_for_annotations_share_an_identity() {
        let a = json!({"description": "one", "type": "object", "properties": {
            "x": {"title": "x", "type": "boolean", "default": true}}});
        let b = json!({"type": "object", "properties": {"x": {"type": "boolean"}},
            "$comment": "two", "examples": [{"x": false}]});
        assert!(same_schema(&a, &b));
    }

    #[test]
    fn editors_keywords_count_only_in_strict_mode() {
        let a = json!({"type": "string", "x-taplo": {"links": {"key": "a"}},
                       "markdownDescription": "**a**"});
        let b = json!({"type": "string"});
        let mut lenient = ValueIds::new(false);
        assert_eq!(lenient.schema(&a), lenient.schema(&b));
        assert!(!same_schema(&a, &b));
    }

    #[test]
    fn annotation_names_count_where_they_are_not_keywords() {
        let pairs = [
            // A property named `description`, and a value with such a member.
            (
                json!({"properties": {"description": {"type": "string"}}}),
                json!({"properties": {"title": {"type": "string"}}}),
            ),
            (
                json!({"const": {"description": "a"}}),
                json!({"const": {"description": "b"}}),
            ),
            (
                json!({"enum": [{"title": 1}]}),
                json!({"enum": [{"title": 2}]}),
            ),
            (
                json!({"items": [{"type": "string"}, {"type": "integer"}]}),
                json!({"items": [{"type": "integer"}, {"type": "string"}]}),
            ),
            (
                json!({"type": "string"}),
                json!({"type": "string", "x-kind": 1}),
            ),
            (
                json!({"$id": "a", "type": "string"}),
                json!({"type": "string"}),
            ),
            (json!({"allOf": [true]}), json!({"anyOf": [true]})),
        ];
        for (a, b) in pairs {
            assert!(!same_schema(&a, &b), "{a} and {b}");
        }
    }

    #[test]
    fn a_child_asked_for_after_its_parent_keeps_its_identity() {
        let doc = json!({"properties": {"x": {"type": "string"}, "y": {"type": "string"}}});
        let mut ids = ValueIds::default();
        let whole = ids.schema(&doc);
        let x = ids.schema(&doc["properties"]["x"]);
        let y = ids.schema(&doc["properties"]["y"]);
        assert_eq!(x, y);
        assert_ne!(x, whole);
        assert_eq!(ids.schema(&doc), whole);
    }

    #[test]
    fn a_lookup_compares_a_bounded_chain() {
        use super::{chain, find, MAX_CHAIN, NONE};
        use gbnf::FastHash;
        use std::collections::HashMap;
        // Every entry with the same hash, as a crafted schema could make them.
        let mut last: HashMap<u64, u32, FastHash> = HashMap::default();
        let previous: Vec<u32> = (0..40).map(|id| chain(&mut last, 7, id)).collect();
        assert_eq!(previous[0], NONE);
        let compared = std::cell::Cell::new(0);
        let compared = &compared;
        let equal_to = |wanted: u32| {
            move |id: u32| {
                compared.set(compared.get() + 1);
                id == wanted
            }
        };
        assert_eq!(find(&last, &previous, 7, equal_to(39)), Some(39));
        assert_eq!(
            find(&last, &previous, 7, equal_to(39 - MAX_CHAIN as u32 + 1)),
            Some(24)
        );
        compared.set(0);
        // Past the bound the entry is not found: it gets a new id (sharing lost, never
        // a wrong identity).
        assert_eq!(find(&last, &previous, 7, equal_to(3)), None);
        assert_eq!(compared.get(), MAX_CHAIN);
        assert_eq!(find(&last, &previous, 8, equal_to(3)), None);
    }

    #[test]
    fn deep_values_do_not_overflow_the_stack() {
        let mut deep = json!(0);
        let mut also = json!(0);
        let mut schema = json!({});
        for _ in 0..100_000 {
            deep = Value::Array(vec![deep]);
            also = Value::Array(vec![also]);
            let mut wrapper = serde_json::Map::new();
            wrapper.insert("not".to_owned(), schema);
            schema = Value::Object(wrapper);
        }
        let mut ids = ValueIds::default();
        assert_eq!(ids.value(&deep), ids.value(&also));
        assert_eq!(ids.schema(&schema), None);
        // Dropping such values recurses in serde_json: leak them instead (test only).
        std::mem::forget(deep);
        std::mem::forget(also);
        std::mem::forget(schema);
    }
}
