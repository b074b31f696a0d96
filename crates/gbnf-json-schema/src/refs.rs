//! `$ref` resolution: the documents a schema refers to (the root one and any the caller's
//! resolver provides), indexed by `$id` and `$anchor`, and the URI arithmetic that turns a
//! reference into a (document, JSON pointer) target.

use std::borrow::Cow;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use serde_json::Value;

use crate::pointer::JsonPointer;
use crate::Resolver;

/// The JSON Schema dialect, which decides how `$ref` siblings and `id` behave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Draft {
    /// Draft-04 to draft-07: keywords beside `$ref` are ignored; draft-04 spells `$id` `id`.
    Old,
    /// 2019-09 and 2020-12 (and schemas that do not say): `$ref` is one assertion among
    /// the others.
    Modern,
}

/// Where a reference points: a document and a pointer inside it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Target {
    pub doc: usize,
    pub pointer: JsonPointer,
}

/// A document: the caller's root schema (borrowed, never copied: it may be megabytes) or
/// one the resolver returned (shared with the resolver, never copied either).
#[derive(Clone, Debug)]
pub(crate) enum Doc<'v> {
    Borrowed(&'v Value),
    Shared(Arc<Value>),
}

impl std::ops::Deref for Doc<'_> {
    type Target = Value;

    fn deref(&self) -> &Value {
        match self {
            Doc::Borrowed(value) => value,
            Doc::Shared(value) => value,
        }
    }
}

/// Every document the compilation has seen, with its resources and anchors.
#[derive(Debug)]
pub(crate) struct Documents<'v> {
    docs: Vec<(Doc<'v>, String)>,
    /// Absolute URI (no fragment) → the schema it identifies.
    resources: HashMap<String, Target>,
    /// `uri#name` → the schema carrying that `$anchor`.
    anchors: HashMap<String, Target>,
    /// How many schemas declare each `$dynamicAnchor` name (and `$recursiveAnchor: true`,
    /// under the empty name): with one, dynamic references resolve statically.
    pub dynamic_anchors: HashMap<String, usize>,
    pub draft: Draft,
    /// Some schema uses `unevaluatedProperties` or `unevaluatedItems`, so which subschemas
    /// evaluated a key or item (annotations) decides validity.
    pub unevaluated: bool,
}

impl<'v> Documents<'v> {
    pub fn new(root: &'v Value) -> Documents<'v> {
        let draft = match root.get("$schema").and_then(Value::as_str) {
            Some(uri)
                if ["draft-03", "draft-04", "draft-06", "draft-07"]
                    .iter()
                    .any(|d| uri.contains(d)) =>
            {
                Draft::Old
            }
            _ => Draft::Modern,
        };
        let mut documents = Documents {
            docs: Vec::new(),
            resources: HashMap::new(),
            anchors: HashMap::new(),
            dynamic_anchors: HashMap::new(),
            draft,
            unevaluated: false,
        };
        documents.add(Doc::Borrowed(root), "");
        documents
    }

    /// The document `target` is in, to find the target in with [`Documents::find`].
    pub fn document(&self, target: &Target) -> Doc<'v> {
        self.docs[target.doc].0.clone()
    }

    /// Resolves `reference` against `base`; remote documents come from `resolver`.
    /// `None` means the reference names nothing.
    pub fn resolve(
        &mut self,
        reference: &str,
        base: &str,
        resolver: Option<&dyn Resolver>,
    ) -> Option<Target> {
        let absolute = join_uri(base, reference);
        let (uri, fragment) = match absolute.split_once('#') {
            Some((uri, fragment)) => (uri.to_owned(), percent_decode(fragment)?),
            None => (absolute.clone(), String::new()),
        };
        let resource = match self.resources.get(&uri) {
            Some(target) => target.clone(),
            None => {
                let document = resolver?.resolve(&uri)?;
                let index = self.add(Doc::Shared(document), &uri);
                self.resources.get(&uri).cloned().unwrap_or(Target {
                    doc: index,
                    pointer: JsonPointer::root(),
                })
            }
        };
        if fragment.is_empty() {
            return Some(resource);
        }
        if fragment.starts_with('/') {
            let pointer = JsonPointer::parse(&fragment)?;
            // Most resources are whole documents: then the fragment is the pointer.
            let pointer = if resource.pointer.is_root() {
                pointer
            } else {
                (pointer.tokens().iter()).fold(resource.pointer, |joined, token| {
                    joined.join(token.as_str())
                })
            };
            return Some(Target {
                doc: resource.doc,
                pointer,
            });
        }
        self.anchors.get(&format!("{uri}#{fragment}")).cloned()
    }

    /// The value at `target` in `document` (its [`Documents::document`]) and the base URI in
    /// effect there, in one walk down the pointer.
    pub fn find<'d>(&self, document: &'d Value, target: &Target) -> Option<(&'d Value, String)> {
        let mut node = document;
        let mut base = self.rebase(node, &self.docs[target.doc].1).into_owned();
        for token in target.pointer.forward_tokens() {
            node = match node {
                Value::Object(map) => map.get(token)?,
                Value::Array(items) => items.get(parse_index(token)?)?,
                _ => return None,
            };
            // Most nodes have no identifier: the base goes on unchanged, not copied.
            if let Some(rebased) = self.rebased(node, &base) {
                base = rebased;
            }
        }
        Some((node, base))
    }

    /// The base URI inside `node`, given the one around it (borrowed when `node` does not
    /// change it, as for most schemas).
    pub fn rebase<'b>(&self, node: &Value, base: &'b str) -> Cow<'b, str> {
        match self.rebased(node, base) {
            Some(rebased) => Cow::Owned(rebased),
            None => Cow::Borrowed(base),
        }
    }

    /// [`Documents::rebase`] when `node`'s identifier changes the base URI; `None` when the
    /// base stays the one around it.
    fn rebased(&self, node: &Value, base: &str) -> Option<String> {
        let id = self.id_of(node)?;
        let (uri, _) = id.split_once('#').unwrap_or((id, ""));
        (!uri.is_empty()).then(|| join_uri(base, uri))
    }

    fn id_of<'n>(&self, node: &'n Value) -> Option<&'n str> {
        self.id_in(&Marks::of(node.as_object()?))
    }

    /// The identifier of a schema object with these keywords.
    fn id_in<'n>(&self, marks: &Marks<'n>) -> Option<&'n str> {
        if self.draft == Draft::Old && marks.has_ref {
            // Draft-07 and earlier ignore every sibling of `$ref`, `$id` included.
            return None;
        }
        if let Some(id) = marks.id.and_then(Value::as_str) {
            return Some(id);
        }
        if self.draft == Draft::Old {
            // Draft-04 `id`; only when it is a string, so a property named `id` in an
            // instance-like position is not mistaken for one.
            return marks.old_id.and_then(Value::as_str);
        }
        None
    }

    fn add(&mut self, document: Doc<'v>, base: &str) -> usize {
        let index = self.docs.len();
        self.docs.push((document.clone(), base.to_owned()));
        self.resources.entry(base.to_owned()).or_insert(Target {
            doc: index,
            pointer: JsonPointer::root(),
        });
        // Index `$id`s and anchors with an explicit stack: the nesting depth is the user's.
        // A large document is walked node by node, and few nodes carry an identifier: the
        // path to each node is a link to its parent's in `path` (no allocation), and a
        // `JsonPointer` is made only for a node that is recorded. Bases are shared
        // (`Rc<str>`) likewise.
        let mut path: Vec<(u32, Step<'_>)> = Vec::new();
        let mut stack: Vec<(&Value, u32, Rc<str>)> = vec![(&*document, ROOT, Rc::from(base))];
        while let Some((node, at, outer_base)) = stack.pop() {
            let Some(object) = node.as_object() else {
                continue;
            };
            let marks = Marks::of(object);
            self.unevaluated |= marks.unevaluated;
            let id = self.id_in(&marks);
            let dynamic_anchor = marks.dynamic_anchor.and_then(Value::as_str);
            let anchors = [
                marks.anchor.and_then(Value::as_str),
                dynamic_anchor,
                id.and_then(|id| id.split_once('#'))
                    .map(|(_, anchor)| anchor)
                    .filter(|anchor| !anchor.is_empty() && !anchor.starts_with('/')),
            ];
            let mut target = None;
            let base: Rc<str> = match id {
                None => outer_base,
                Some(_) => {
                    let base = self.rebase(node, &outer_base).into_owned();
                    if *base != *outer_base {
                        let target = target.get_or_insert_with(|| Target {
                            doc: index,
                            pointer: pointer_to(&path, at),
                        });
                        self.resources
                            .entry(base.clone())
                            .or_insert_with(|| target.clone());
                    }
                    Rc::from(base)
                }
            };
            if marks.recursive_anchor == Some(&Value::Bool(true)) {
                *self.dynamic_anchors.entry(String::new()).or_insert(0) += 1;
            }
            if let Some(anchor) = dynamic_anchor {
                *self.dynamic_anchors.entry(anchor.to_owned()).or_insert(0) += 1;
            }
            for anchor in anchors.into_iter().flatten() {
                let target = target.get_or_insert_with(|| Target {
                    doc: index,
                    pointer: pointer_to(&path, at),
                });
                self.anchors
                    .entry(format!("{base}#{anchor}"))
                    .or_insert_with(|| target.clone());
            }
            for (keyword, child) in object {
                match keyword.as_str() {
                    "properties" | "patternProperties" | "$defs" | "definitions"
                    | "dependentSchemas" | "dependencies" => {
                        if let Some(map) = child.as_object() {
                            let at = link(&mut path, at, Step::Key(keyword));
                            for (key, schema) in map {
                                let at = link(&mut path, at, Step::Key(key));
                                stack.push((schema, at, base.clone()));
                            }
                        }
                    }
                    "allOf" | "anyOf" | "oneOf" | "prefixItems" | "items" => match child {
                        Value::Array(items) => {
                            let at = link(&mut path, at, Step::Key(keyword));
                            for (i, schema) in items.iter().enumerate() {
                                let at = link(&mut path, at, Step::Index(i));
                                stack.push((schema, at, base.clone()));
                            }
                        }
                        _ => {
                            let at = link(&mut path, at, Step::Key(keyword));
                            stack.push((child, at, base.clone()));
                        }
                    },
                    "additionalProperties"
                    | "additionalItems"
                    | "unevaluatedProperties"
                    | "unevaluatedItems"
                    | "contains"
                    | "propertyNames"
                    | "not"
                    | "if"
                    | "then"
                    | "else" => {
                        let at = link(&mut path, at, Step::Key(keyword));
                        stack.push((child, at, base.clone()));
                    }
                    _ => {}
                }
            }
        }
        index
    }
}

/// The keywords of a schema object that identify it, found in one pass over its members: a
/// large document is indexed node by node, and a hash lookup per keyword and node was most
/// of the cost.
#[derive(Default)]
struct Marks<'n> {
    id: Option<&'n Value>,
    /// Draft-04 `id`.
    old_id: Option<&'n Value>,
    has_ref: bool,
    anchor: Option<&'n Value>,
    dynamic_anchor: Option<&'n Value>,
    recursive_anchor: Option<&'n Value>,
    /// `unevaluatedProperties` or `unevaluatedItems` is present.
    unevaluated: bool,
}

impl<'n> Marks<'n> {
    fn of(object: &'n serde_json::Map<String, Value>) -> Marks<'n> {
        let mut marks = Marks::default();
        for (keyword, value) in object {
            match keyword.as_str() {
                "$id" => marks.id = Some(value),
                "id" => marks.old_id = Some(value),
                "$ref" => marks.has_ref = true,
                "$anchor" => marks.anchor = Some(value),
                "$dynamicAnchor" => marks.dynamic_anchor = Some(value),
                "$recursiveAnchor" => marks.recursive_anchor = Some(value),
                "unevaluatedProperties" | "unevaluatedItems" => marks.unevaluated = true,
                _ => {}
            }
        }
        marks
    }
}

/// One step of a path in [`Documents::add`]'s walk.
#[derive(Clone, Copy)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// The parent link of the document root in [`Documents::add`]'s walk.
const ROOT: u32 = u32::MAX;

/// Adds the step from the node `at` to `path`; returns where it is.
fn link<'a>(path: &mut Vec<(u32, Step<'a>)>, at: u32, step: Step<'a>) -> u32 {
    path.push((at, step));
    (path.len() - 1) as u32
}

/// The pointer to the node that `at` reaches in `path` (links to parents).
fn pointer_to(path: &[(u32, Step<'_>)], mut at: u32) -> JsonPointer {
    let mut steps = Vec::new();
    while at != ROOT {
        let (parent, step) = path[at as usize];
        steps.push(step);
        at = parent;
    }
    let mut pointer = JsonPointer::root();
    for step in steps.into_iter().rev() {
        pointer = match step {
            Step::Key(key) => pointer.join(key),
            Step::Index(i) => pointer.join(i.to_string()),
        };
    }
    pointer
}

fn parse_index(token: &str) -> Option<usize> {
    if token.len() > 1 && token.starts_with('0') {
        return None;
    }
    token.parse().ok()
}

/// RFC 3986 reference resolution, enough for schema identifiers: absolute references
/// replace the base, fragments and paths are resolved against it.
pub(crate) fn join_uri(base: &str, reference: &str) -> String {
    if has_scheme(reference) {
        return reference.to_owned();
    }
    let base_no_fragment = base.split_once('#').map_or(base, |(uri, _)| uri);
    if reference.is_empty() {
        return base_no_fragment.to_owned();
    }
    if reference.starts_with('#') {
        return [base_no_fragment, reference].concat();
    }
    let scheme_end = if has_scheme(base_no_fragment) {
        base_no_fragment.find(':').map_or(0, |i| i + 1)
    } else {
        0
    };
    let (scheme, rest) = base_no_fragment.split_at(scheme_end);
    if let Some(stripped) = reference.strip_prefix("//") {
        return format!("{scheme}//{stripped}");
    }
    let (authority, path) = match rest.strip_prefix("//") {
        Some(after) => {
            let end = after.find('/').unwrap_or(after.len());
            (&rest[..end + 2], &after[end..])
        }
        None => ("", rest),
    };
    let path = path.split_once('?').map_or(path, |(p, _)| p);
    let merged = if reference.starts_with('/') {
        reference.to_owned()
    } else if !authority.is_empty() && path.is_empty() {
        format!("/{reference}")
    } else {
        match path.rfind('/') {
            Some(slash) => format!("{}{}", &path[..=slash], reference),
            None => reference.to_owned(),
        }
    };
    format!("{scheme}{authority}{}", remove_dot_segments(&merged))
}

fn has_scheme(text: &str) -> bool {
    let Some(colon) = text.find(':') else {
        return false;
    };
    let scheme = &text[..colon];
    let mut chars = scheme.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

fn remove_dot_segments(path: &str) -> String {
    let (path, suffix) = match path.find(['?', '#']) {
        Some(i) => path.split_at(i),
        None => (path, ""),
    };
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').collect();
    let last = segments.len().saturating_sub(1);
    for (i, segment) in segments.iter().enumerate() {
        match *segment {
            "." => {
                if i == last {
                    out.push("");
                }
            }
            ".." => {
                if out.len() > 1 || out.first().is_some_and(|s| !s.is_empty()) {
                    out.pop();
                }
                if i == last {
                    out.push("");
                }
            }
            other => out.push(other),
        }
    }
    format!("{}{}", out.join("/"), suffix)
}

/// Decodes `%XX` escapes; `None` when they do not form UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?;
            if let Ok(byte) = u8::from_str_radix(hex, 16) {
                out.push(byte);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_references() {
        assert_eq!(join_uri("", "#/a"), "#/a");
        assert_eq!(
            join_uri("http://x.org/a/b.json", "c.json"),
            "http://x.org/a/c.json"
        );
        assert_eq!(
            join_uri("http://x.org/a/b.json", "/c.json"),
            "http://x.org/c.json"
        );
        assert_eq!(
            join_uri("http://x.org/a/b.json", "../c.json#/d"),
            "http://x.org/c.json#/d"
        );
        assert_eq!(join_uri("http://x.org", "c.json"), "http://x.org/c.json");
        assert_eq!(join_uri("http://x.org/a/b.json", "urn:x"), "urn:x");
        assert_eq!(join_uri("urn:x", "#foo"), "urn:x#foo");
    }

    #[test]
    fn decodes_percent_escapes() {
        assert_eq!(percent_decode("/a%25b%22").as_deref(), Some("/a%b\""));
        assert_eq!(percent_decode("100%").as_deref(), Some("100%"));
    }
}
