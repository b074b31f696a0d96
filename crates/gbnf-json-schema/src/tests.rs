//! Unit tests of the core: refs, allOf merging, oneOf disjointness, object shapes and
//! reporting, each checked by running the compiled grammar on accepted and rejected JSON
//! texts with a small reference recogniser (exact, exponential-free for these sizes).

use std::collections::{BTreeSet, HashMap};

use gbnf::{Expr, Grammar};
use serde_json::{json, Value};

use crate::{compile, ErrorKind, Options, PropertyOrder, Whitespace};

/// The end offsets (in chars) reachable by matching `expr` from `start`.
struct Recognizer<'g> {
    grammar: &'g Grammar,
    input: Vec<char>,
    memo: HashMap<(String, usize), BTreeSet<usize>>,
}

impl Recognizer<'_> {
    fn ends(&mut self, expr: &Expr, start: usize) -> BTreeSet<usize> {
        match expr {
            Expr::Empty => BTreeSet::from([start]),
            Expr::Literal(text) => {
                let chars: Vec<char> = text.chars().collect();
                if self.input.len() >= start + chars.len()
                    && self.input[start..start + chars.len()] == chars[..]
                {
                    BTreeSet::from([start + chars.len()])
                } else {
                    BTreeSet::new()
                }
            }
            Expr::Class(class) => match self.input.get(start) {
                Some(&ch) if class.contains(ch) => BTreeSet::from([start + 1]),
                _ => BTreeSet::new(),
            },
            Expr::Any => match self.input.get(start) {
                Some(_) => BTreeSet::from([start + 1]),
                None => BTreeSet::new(),
            },
            Expr::Token(_) => BTreeSet::new(),
            Expr::Rule(name) => {
                let key = (name.as_str().to_owned(), start);
                if let Some(ends) = self.memo.get(&key) {
                    return ends.clone();
                }
                // Left recursion never happens in our grammars; guard anyway.
                self.memo.insert(key.clone(), BTreeSet::new());
                let body = self
                    .grammar
                    .get(name.as_str())
                    .unwrap_or_else(|| panic!("undefined rule {name}"))
                    .clone();
                let ends = self.ends(&body, start);
                self.memo.insert(key, ends.clone());
                ends
            }
            Expr::Seq(items) => {
                let mut positions = BTreeSet::from([start]);
                for item in items {
                    let mut next = BTreeSet::new();
                    for p in positions {
                        next.extend(self.ends(item, p));
                    }
                    positions = next;
                    if positions.is_empty() {
                        break;
                    }
                }
                positions
            }
            Expr::Alt(items) => {
                let mut out = BTreeSet::new();
                for item in items {
                    out.extend(self.ends(item, start));
                }
                out
            }
            Expr::Repeat { expr, min, max } => {
                let mut out = BTreeSet::new();
                let mut frontier = BTreeSet::from([start]);
                let mut count = 0u32;
                let mut seen: BTreeSet<usize> = BTreeSet::new();
                loop {
                    if count >= *min {
                        out.extend(frontier.iter().copied());
                    }
                    if max.is_some_and(|m| count >= m) || frontier.is_empty() {
                        break;
                    }
                    let mut next = BTreeSet::new();
                    for p in &frontier {
                        next.extend(self.ends(expr, *p));
                    }
                    count += 1;
                    if count > *min {
                        next.retain(|p| !seen.contains(p));
                        seen.extend(next.iter().copied());
                    }
                    frontier = next;
                }
                out
            }
        }
    }
}

fn accepts(grammar: &Grammar, text: &str) -> bool {
    let mut recognizer = Recognizer {
        grammar,
        input: text.chars().collect(),
        memo: HashMap::new(),
    };
    let len = recognizer.input.len();
    recognizer
        .ends(&Expr::Rule(gbnf::RuleName::sanitize("root")), 0)
        .contains(&len)
}

/// Compiles `schema`, checks that the grammar passes `gbnf::validate` (llama.cpp's rules),
/// and checks each sample with both `gbnf::Matcher` and the reference recogniser above.
fn check_with(options: &Options, schema: Value, accept: &[&str], reject: &[&str]) {
    let compiled = compile(&schema, options).unwrap_or_else(|e| panic!("{schema}: {e}"));
    let printed = gbnf::print(&compiled.grammar);
    if let Err(err) = gbnf::validate(&compiled.grammar, "root") {
        panic!("{schema}: invalid grammar: {err}\n{printed}");
    }
    let matcher = gbnf::Matcher::new(&compiled.grammar, "root")
        .unwrap_or_else(|e| panic!("{schema}: {e}\n{printed}"));
    let samples = accept.iter().map(|t| (t, true));
    for (text, expected) in samples.chain(reject.iter().map(|t| (t, false))) {
        let verdict = matcher.verdict(text) == gbnf::Verdict::Accept;
        assert_eq!(verdict, expected, "{schema}: matcher on {text}\n{printed}");
        let recognised = accepts(&compiled.grammar, text);
        assert_eq!(
            recognised, expected,
            "{schema}: recogniser on {text}\n{printed}"
        );
    }
}

fn check(schema: Value, accept: &[&str], reject: &[&str]) {
    let options = Options {
        whitespace: Whitespace::Compact,
        ..Options::default()
    };
    check_with(&options, schema, accept, reject);
}

/// The warnings of a lenient compile, as sorted `pointer keyword` lines.
fn lenient_warnings(schema: &Value) -> Vec<String> {
    let lenient = Options {
        lenient: true,
        ..Options::default()
    };
    let compiled = compile(schema, &lenient).expect("lenient compiles");
    let mut lines: Vec<String> = compiled
        .warnings
        .iter()
        .map(|warning| format!("{} {}", warning.pointer, warning.keyword))
        .collect();
    lines.sort();
    lines
}

fn error_of(schema: Value) -> crate::Error {
    match compile(&schema, &Options::default()) {
        Ok(_) => panic!("{schema} should not compile"),
        Err(e) => e,
    }
}

#[test]
fn primitives_and_types() {
    check(
        json!({"type": "integer"}),
        &["0", "-12", "7"],
        &["1.5", "01", "\"1\""],
    );
    check(
        json!({"type": ["string", "null"]}),
        &["\"a\\n\"", "null"],
        &["1", "true"],
    );
    check(
        json!(true),
        &["{}", "[1,{\"a\":null}]", "-1.5e3"],
        &["", "nul"],
    );
    check(json!({}), &["\"x\""], &["x"]);
}

#[test]
fn enums_and_consts() {
    check(
        json!({"enum": ["red", "green", "greenish", 1, null, [1, 2], {"a": 1}]}),
        &[
            "\"red\"",
            "\"green\"",
            "\"greenish\"",
            "1",
            "null",
            "[1,2]",
            "{\"a\":1}",
        ],
        &["\"gree\"", "\"blue\"", "2", "[1]", "\"greenishh\""],
    );
    check(
        json!({"const": "x", "type": "string"}),
        &["\"x\""],
        &["\"y\""],
    );
    check(
        json!({"enum": [1, "a"], "type": "string"}),
        &["\"a\""],
        &["1"],
    );
}

#[test]
fn big_enum_is_fast() {
    let values: Vec<Value> = (0..100_000)
        .map(|i| Value::String(format!("v{i}")))
        .collect();
    check(
        json!({"enum": values}),
        &["\"v99999\"", "\"v0\""],
        &["\"v100000\"", "\"v\""],
    );
}

#[test]
fn big_enums_of_numbers_and_structures_are_linear() {
    // Deduplicating and intersecting values compared every pair: 100,000 integers took
    // hours in a release build, 10,000 objects 19 s (this debug-build test: minutes).
    let numbers: Vec<Value> = (0..20_000).map(|i| json!(i)).collect();
    check(
        json!({"enum": numbers}),
        &["19999", "0", "1.0", "512"],
        &["20000", "-1", "0.5"],
    );
    let halves: Vec<Value> = (10_000..30_000).map(|i| json!(i)).collect();
    check(
        json!({"allOf": [{"enum": numbers}, {"enum": halves}]}),
        &["10000", "19999"],
        &["9999", "20000"],
    );
    let objects: Vec<Value> = (0..5_000).map(|i| json!({"a": i, "b": [i]})).collect();
    check(
        json!({"enum": objects}),
        &["{\"a\":4999,\"b\":[4999]}", "{\"b\":[7],\"a\":7.0}"],
        &["{\"a\":7,\"b\":[8]}", "{\"a\":5000,\"b\":[5000]}"],
    );
}

#[test]
fn negating_many_numbers_is_refused_quickly() {
    // Each excluded number adds an interval; thousands of them, conjoined with an enum,
    // took seconds per thousand before the cap.
    let numbers: Vec<Value> = (0..20_000).map(|i| json!(i)).collect();
    let evens: Vec<Value> = (0..20_000).step_by(2).map(|i| json!(i)).collect();
    for schema in [
        json!({"not": {"enum": numbers}}),
        json!({"enum": numbers, "not": {"enum": evens}}),
    ] {
        let error = error_of(schema);
        assert!(
            matches!(error.kind, crate::ErrorKind::Unsupported { .. }),
            "{error}"
        );
    }
    check(
        json!({"not": {"enum": [1, 2, "a"]}}),
        &["0", "1.5", "3", "\"b\"", "null"],
        &["1", "2.0", "\"a\""],
    );
}

#[test]
fn escaped_spellings_of_declared_names_are_not_other_keys() {
    // `c\u0069ty` is the key `city`: its value must be a string. The grammar took any escape
    // as leaving the trie of declared names, so it let `{"c\u0069ty": 5}` through.
    let schema = json!({"properties": {"city": {"type": "string"}, "a/b": {"type": "string"}, "q\"": {"type": "string"}}});
    check(
        schema,
        &[
            r#"{"city":"x"}"#,
            r#"{"ci":5}"#,
            r#"{"\u00E9":1}"#,
            r#"{"ci\u00E9":1}"#,
            r#"{"c\/":1}"#,
            r#"{"a\n":1}"#,
            r#"{"q\\":1}"#,
            r#"{"q\"":"x"}"#,
        ],
        &[
            r#"{"c\u0069ty":5}"#,
            r#"{"\u0063ity":5}"#,
            r#"{"cit\u0079":5}"#,
            r#"{"a\/b":5}"#,
            r#"{"a\u002Fb":5}"#,
            r#"{"q\u0022":5}"#,
            r#"{"q\"":5}"#,
            // Other keys, valid, but refused for a shorter grammar: an ASCII character
            // written as a `\u` escape where the key could still be a declared name.
            r#"{"c\u0041ty":5}"#,
            r#"{"cit\u0059\u0079":5}"#,
        ],
    );
}

#[test]
fn other_keys_take_astral_characters_as_surrogate_pairs_only() {
    // A key that leaves the trie of declared names may spell a character outside the BMP as
    // a `\u` surrogate pair, as `char` does everywhere else; a lone surrogate is not a
    // character. The ways out of the trie took any one `\uXXXX`: a lone high surrogate then
    // passed, and a pair failed on its low half (which `char` refuses alone).
    let schema = json!({"properties": {"city": {"type": "string"}, "é": {"type": "string"}}});
    check(
        schema.clone(),
        &[
            r#"{"\uD83D\uDE80":1}"#,
            r#"{"c\uD83D\uDE80":1}"#,
            r#"{"city\uD83D\uDE80":1}"#,
            r#"{"é\uD83D\uDE80":1}"#,
            r#"{"🚀":1}"#,
            r#"{"city🚀":1}"#,
        ],
        &[
            r#"{"\uD83D":1}"#,
            r#"{"c\uD83D":1}"#,
            r#"{"city\uD83D":1}"#,
            r#"{"city\uDE80":1}"#,
            r#"{"city\uD83Dx":1}"#,
            r#"{"é\uDE80":1}"#,
        ],
    );
    // The same through `not` of strings (one trie, the same ways out).
    check(
        json!({"type": "string", "not": {"enum": ["ab", "é"]}}),
        &[
            r#""a\uD83D\uDE80""#,
            r#""ab\uD83D\uDE80""#,
            r#""\uD83D\uDE80""#,
        ],
        &[r#""a\uD83D""#, r#""ab\uDE80""#, r#""\uDBFF""#],
    );
}

#[test]
fn objects_in_schema_order() {
    let schema = json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}, "d": {"type": "null"}},
        "required": ["b"],
        "additionalProperties": false
    });
    check(
        schema,
        &[
            "{\"b\":\"x\"}",
            "{\"a\":1,\"b\":\"x\"}",
            "{\"a\":1,\"b\":\"x\",\"c\":true,\"d\":null}",
            "{\"b\":\"x\",\"d\":null}",
        ],
        &[
            "{}",
            "{\"a\":1}",
            "{\"b\":\"x\",\"a\":1}",
            "{\"b\":\"x\",\"e\":1}",
            "{\"b\":\"x\",\"b\":\"x\"}",
        ],
    );
    let all_optional = json!({"properties": {"a": {"const": 1}, "b": {"const": 2}, "c": {"const": 3}, "d": {"const": 4}}, "additionalProperties": false});
    check(
        all_optional,
        &[
            "{}",
            "{\"c\":3}",
            "{\"a\":1,\"d\":4}",
            "{\"b\":2,\"c\":3,\"d\":4}",
        ],
        &["{\"d\":4,\"a\":1}", "{,}"],
    );
}

#[test]
fn additional_properties() {
    let schema = json!({"properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "string"}});
    check(
        schema,
        &[
            "{\"a\":1,\"b\":\"x\"}",
            "{\"ab\":\"x\"}",
            "{\"\":\"x\"}",
            "{}",
        ],
        &["{\"b\":1}", "{\"a\":\"x\"}"],
    );
    let default = json!({"properties": {"a": {"type": "integer"}}});
    check(
        default.clone(),
        &["{\"a\":1,\"z\":[true]}"],
        &["{\"a\":1,\"a\":2}"],
    );
    let llama = Options {
        whitespace: Whitespace::Compact,
        additional_properties_default: false,
        ..Options::default()
    };
    check_with(&llama, default, &["{\"a\":1}"], &["{\"a\":1,\"z\":[true]}"]);
}

#[test]
fn any_order() {
    let options = Options {
        whitespace: Whitespace::Compact,
        property_order: PropertyOrder::Any,
        ..Options::default()
    };
    let schema = json!({"properties": {"a": {"const": 1}, "b": {"const": 2}}, "required": ["a"], "additionalProperties": false});
    check_with(
        &options,
        schema,
        &["{\"a\":1,\"b\":2}", "{\"b\":2,\"a\":1}", "{\"a\":1}"],
        &["{\"b\":2}", "{\"a\":1,\"a\":1}"],
    );
    let many: serde_json::Map<String, Value> =
        (0..20).map(|i| (format!("p{i}"), json!({}))).collect();
    let err = compile(&json!({"properties": many}), &options)
        .err()
        .map(|e| e.kind);
    assert!(matches!(err, Some(ErrorKind::Unsupported { .. })));
}

#[test]
fn property_counts() {
    let schema = json!({"properties": {"a": {}, "b": {}, "c": {}}, "additionalProperties": false, "minProperties": 2, "maxProperties": 2});
    check(
        schema,
        &["{\"a\":1,\"b\":2}", "{\"b\":1,\"c\":2}"],
        &["{\"a\":1}", "{\"a\":1,\"b\":2,\"c\":3}"],
    );
    let open = json!({"type": "object", "minProperties": 1, "maxProperties": 2});
    check(
        open,
        &["{\"x\":1}", "{\"x\":1,\"y\":2}"],
        &["{}", "{\"x\":1,\"y\":2,\"z\":3}"],
    );
}

#[test]
fn arrays() {
    check(
        json!({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3}),
        &["[1]", "[1,2,3]"],
        &["[]", "[1,2,3,4]", "[\"a\"]"],
    );
    check(
        json!({"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false}),
        &["[]", "[\"a\"]", "[\"a\",1]"],
        &["[1]", "[\"a\",1,2]"],
    );
    check(
        json!({"items": [{"type": "string"}], "additionalItems": {"type": "null"}, "minItems": 2}),
        &["[\"a\",null]", "[\"a\",null,null]"],
        &["[\"a\"]", "[\"a\",1]"],
    );
    check(json!({"type": "array", "maxItems": 0}), &["[]"], &["[1]"]);
}

#[test]
fn contains_and_unique() {
    check(
        json!({"type": "array", "contains": {"const": 5}}),
        &["[5]", "[1,5,2]", "[5,5]"],
        &["[]", "[1,2]"],
    );
    check(
        json!({"type": "array", "items": {"type": "string"}, "contains": {"const": "x"}, "maxContains": 1}),
        &["[\"x\"]", "[\"a\",\"x\",\"b\"]"],
        &["[\"x\",\"x\"]", "[\"a\"]", "[1]"],
    );
    check(
        json!({"type": "array", "items": {"enum": ["a", "b", "c"]}, "uniqueItems": true}),
        &["[]", "[\"a\",\"c\"]", "[\"c\",\"b\",\"a\"]"],
        &["[\"a\",\"a\"]"],
    );
    check(
        json!({"type": "array", "items": {"type": "boolean"}, "uniqueItems": true}),
        &["[true,false]"],
        &["[true,true]"],
    );
}

#[test]
fn refs() {
    let schema = json!({
        "$defs": {"node": {"type": "object", "properties": {"value": {"type": "integer"}, "next": {"$ref": "#/$defs/node"}}, "required": ["value"], "additionalProperties": false},
                  "a~b/c": {"type": "string"}, "pct%": {"type": "null"}},
        "type": "object",
        "properties": {"head": {"$ref": "#/$defs/node"}, "s": {"$ref": "#/$defs/a~0b~1c"}, "n": {"$ref": "#/$defs/pct%25"}},
        "additionalProperties": false
    });
    check(
        schema,
        &[
            "{\"head\":{\"value\":1,\"next\":{\"value\":2}}}",
            "{\"s\":\"x\",\"n\":null}",
        ],
        &["{\"head\":{\"next\":{\"value\":2}}}", "{\"s\":1}"],
    );
    let ids = json!({
        "$id": "https://example.com/root.json",
        "$defs": {"x": {"$id": "item.json", "type": "integer"}, "y": {"$anchor": "why", "type": "boolean"}},
        "prefixItems": [{"$ref": "item.json"}, {"$ref": "#why"}, {"$ref": "https://example.com/item.json"}],
        "items": false
    });
    check(ids, &["[1,true,2]"], &["[true,1,2]"]);
    let old = json!({"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"i": {"type": "integer"}}, "properties": {"a": {"$ref": "#/definitions/i", "type": "string"}}});
    check(old, &["{\"a\":1}"], &["{\"a\":\"x\"}"]);
}

#[test]
fn remote_refs_only_through_the_resolver() {
    let schema = json!({"$ref": "https://example.com/other.json#/$defs/n"});
    assert!(matches!(
        error_of(schema.clone()).kind,
        ErrorKind::UnresolvedRef { .. }
    ));
    let resolver = |uri: &str| {
        (uri == "https://example.com/other.json")
            .then(|| std::sync::Arc::new(json!({"$defs": {"n": {"type": "null"}}})))
    };
    let options = Options {
        whitespace: Whitespace::Compact,
        resolver: Some(&resolver),
        ..Options::default()
    };
    check_with(&options, schema, &["null"], &["1"]);
}

#[test]
fn bad_refs_are_errors() {
    assert!(matches!(
        error_of(json!({"$ref": "#"})).kind,
        ErrorKind::CyclicRef { .. }
    ));
    assert!(matches!(error_of(json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})).kind, ErrorKind::CyclicRef { .. }));
    let err = error_of(json!({"properties": {"x": {"$ref": "#/$defs/missing"}}}));
    assert!(matches!(err.kind, ErrorKind::UnresolvedRef { .. }));
    assert_eq!(err.pointer.to_string(), "/properties/x/$ref");
    // Recursion with no base case: every instance would be infinite.
    let infinite = json!({"type": "object", "properties": {"a": {"$ref": "#"}}, "required": ["a"]});
    assert!(matches!(error_of(infinite).kind, ErrorKind::Unsatisfiable));
}

#[test]
fn all_of_merges() {
    let schema = json!({"allOf": [
        {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
        {"properties": {"b": {"type": "string"}}, "required": ["b"]}
    ]});
    check(
        schema,
        &["{\"a\":1,\"b\":\"x\"}", "{\"a\":1,\"b\":\"x\",\"c\":null}"],
        &["{\"a\":1}", "{\"b\":\"x\"}"],
    );
    let closed = json!({"allOf": [{"properties": {"a": {}}, "additionalProperties": false}, {"properties": {"b": {}}}]});
    check(closed, &["{\"a\":1}", "{}"], &["{\"b\":1}"]);
    let types = json!({"allOf": [{"type": ["string", "integer"]}, {"type": ["integer", "null"]}]});
    check(types, &["3"], &["\"a\"", "null"]);
    let arrays = json!({"allOf": [{"items": {"type": "integer"}}, {"maxItems": 2}]});
    check(arrays, &["[1,2]"], &["[1,2,3]", "[\"a\"]"]);
    let distribute = json!({"allOf": [{"anyOf": [{"type": "string"}, {"type": "integer"}]}, {"anyOf": [{"type": "integer"}, {"type": "null"}]}]});
    check(distribute, &["1"], &["null", "\"a\""]);
    let unevaluated = json!({"allOf": [{"properties": {"a": {}}}], "properties": {"b": {}}, "unevaluatedProperties": false});
    check(unevaluated, &["{\"a\":1,\"b\":2}"], &["{\"c\":1}"]);
}

#[test]
fn one_of_needs_disjoint_branches() {
    check(
        json!({"oneOf": [{"type": "string"}, {"type": "integer"}]}),
        &["\"a\"", "1"],
        &["null"],
    );
    let tagged = json!({"oneOf": [
        {"properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind"]},
        {"properties": {"kind": {"const": "b"}, "y": {"type": "string"}}, "required": ["kind"]}
    ], "type": "object"});
    check(
        tagged,
        &["{\"kind\":\"a\",\"x\":1}", "{\"kind\":\"b\",\"y\":\"s\"}"],
        &["{\"kind\":\"c\"}"],
    );
    // Integers match both branches: only the other numbers are valid.
    check(
        json!({"oneOf": [{"type": "integer"}, {"type": "number"}]}),
        &["1.5", "-0.25"],
        &["1", "1.0", "\"a\""],
    );
    // Strings without an `a` (those with one match both branches).
    check(
        json!({"oneOf": [{"type": "string"}, {"type": "string", "pattern": "a"}]}),
        &["\"xyz\"", "\"\""],
        &["\"cat\"", "\"a\""],
    );
    // An object escapes a `patternProperties` schema by some matching key with a bad value:
    // no shape says "some key".
    let overlapping = json!({"oneOf": [
        {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
        {"type": "object", "required": ["y"]}
    ]});
    let err = error_of(overlapping.clone());
    assert!(matches!(err.kind, ErrorKind::Unsupported { ref keyword, .. } if keyword == "oneOf"));
    let lenient = Options {
        lenient: true,
        ..Options::default()
    };
    let compiled = compile(&overlapping, &lenient).expect("lenient compiles");
    assert_eq!(compiled.warnings.len(), 1);
    assert_eq!(compiled.warnings[0].keyword, "oneOf");
}

#[test]
fn a_warning_is_reported_once() {
    // The `contains` of the first branch is merged into each variant the draft-04
    // dependencies make of the object: one warning, not one per merge.
    let dynamic_has = |name: &str| json!({"required": ["dynamic"], "properties": {"dynamic": {"contains": {"const": name}}}});
    let schema = json!({
        "type": "object",
        "properties": {"dynamic": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}},
        "oneOf": [dynamic_has("version"), {"required": ["version"]}],
        "dependencies": {"a": {"not": dynamic_has("a")}, "b": {"not": dynamic_has("b")}}
    });
    assert_eq!(
        lenient_warnings(&schema),
        [
            "/dependencies/a/not not",
            "/dependencies/b/not not",
            "/oneOf oneOf",
            "/oneOf/0/properties/dynamic/contains contains",
            "/properties/dynamic/uniqueItems uniqueItems"
        ]
    );
}

#[test]
fn not_and_conditionals() {
    check(
        json!({"not": {"type": "string"}}),
        &["1", "null", "{}"],
        &["\"a\""],
    );
    check(
        json!({"type": "string", "not": {"enum": ["a", "b"]}}),
        &["\"c\"", "\"ab\"", "\"\""],
        &["\"a\"", "\"b\""],
    );
    check(
        json!({"type": "object", "not": {"required": ["x"]}}),
        &["{}", "{\"y\":1}"],
        &["{\"x\":1}"],
    );
    let conditional = json!({
        "type": "object",
        "properties": {"kind": {"enum": ["n", "s"]}, "v": {}},
        "required": ["kind", "v"],
        "additionalProperties": false,
        "if": {"properties": {"kind": {"const": "n"}}},
        "then": {"properties": {"v": {"type": "integer"}}},
        "else": {"properties": {"v": {"type": "string"}}}
    });
    check(
        conditional,
        &["{\"kind\":\"n\",\"v\":1}", "{\"kind\":\"s\",\"v\":\"x\"}"],
        &["{\"kind\":\"n\",\"v\":\"x\"}", "{\"kind\":\"s\",\"v\":1}"],
    );
}

#[test]
fn dependencies() {
    let schema = json!({"properties": {"a": {}, "b": {}}, "additionalProperties": false, "dependentRequired": {"a": ["b"]}});
    check(
        schema,
        &["{}", "{\"b\":1}", "{\"a\":1,\"b\":2}"],
        &["{\"a\":1}"],
    );
    let old = json!({"properties": {"a": {}, "b": {"type": "integer"}}, "dependencies": {"a": {"properties": {"b": {"const": 2}}, "required": ["b"]}}});
    check(
        old,
        &["{\"b\":5}", "{\"a\":1,\"b\":2}"],
        &["{\"a\":1,\"b\":5}", "{\"a\":1}"],
    );
}

#[test]
fn whitespace_modes() {
    let schema =
        json!({"type": "object", "properties": {"a": {"type": "array"}}, "required": ["a"]});
    let bounded = Options::default();
    check_with(
        &bounded,
        schema.clone(),
        &["{ \"a\" : [ 1 , 2 ] }", "{\n  \"a\": []\n}"],
        &["{   \"a\":[]}"],
    );
    let flexible = Options {
        whitespace: Whitespace::Flexible,
        ..Options::default()
    };
    check_with(
        &flexible,
        schema.clone(),
        &["{   \"a\":[\r\n]}"],
        &[" {\"a\":[]}"],
    );
    check(schema, &["{\"a\":[]}"], &["{ \"a\":[]}"]);
}

#[test]
fn invalid_schemas_name_the_keyword() {
    let err = error_of(json!({"properties": {"age": {"minimum": 5, "maximum": 1}}}));
    assert!(matches!(err.kind, ErrorKind::Invalid { .. }));
    assert_eq!(err.pointer.to_string(), "/properties/age/minimum");
    let err = error_of(json!({"items": {"minItems": -1}}));
    assert_eq!(
        err.to_string(),
        "/items/minItems: invalid schema: expected a non-negative integer, found -1"
    );
    assert!(matches!(
        error_of(json!({"type": "kaboom"})).kind,
        ErrorKind::Invalid { .. }
    ));
    assert!(matches!(
        error_of(json!({"required": "a"})).kind,
        ErrorKind::Invalid { .. }
    ));
    assert!(matches!(
        error_of(json!(false)).kind,
        ErrorKind::Unsatisfiable
    ));
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let mut schema = json!({"type": "integer"});
    for _ in 0..10_000 {
        // Not `json!`: it would serialise `schema` recursively.
        let mut map = serde_json::Map::new();
        map.insert("type".to_owned(), json!("array"));
        map.insert("items".to_owned(), schema);
        schema = Value::Object(map);
    }
    let err = compile(&schema, &Options::default()).err().map(|e| e.kind);
    assert!(matches!(err, Some(ErrorKind::TooDeep { .. })));
    // Dropping a 10,000-deep value recurses in serde_json; leak it instead.
    std::mem::forget(schema);
}

#[test]
fn huge_lengths_stay_small() {
    let compiled = compile(
        &json!({"type": "array", "maxItems": 1_000_000_000u64}),
        &Options::default(),
    )
    .expect("compiles");
    assert!(compiled.grammar.rules.len() < 20);
    for schema in [
        json!({"type": "string", "maxLength": 1_000_000_000u64}),
        json!({"type": "string", "minLength": 1_000_000_000u64}),
    ] {
        let compiled = compile(&schema, &Options::default()).expect("compiles");
        assert!(compiled.grammar.rules.len() < 20, "{schema}");
        gbnf::validate(&compiled.grammar, "root").expect("loads in llama.cpp");
    }
    // A pattern cannot be counted that far: a clear error at the bound, not a blow-up.
    let err = error_of(json!({"type": "string", "pattern": "^a+$", "maxLength": 1_000_000_000u64}));
    assert_eq!(err.pointer.to_string(), "/maxLength");
}

#[test]
fn compile_into_prefixes_rules() {
    let mut builder = gbnf::GrammarBuilder::new();
    let schema =
        json!({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]});
    let (rule, _) =
        crate::compile_into(&mut builder, "args", &schema, &Options::default()).expect("compiles");
    let grammar = builder.finish();
    assert_eq!(rule.as_str(), "args");
    assert!(grammar.get("root").is_none());
    assert!(
        grammar
            .rules
            .keys()
            .all(|name| name.as_str().starts_with("args")),
        "{:?}",
        grammar.rules.keys()
    );
}

#[test]
fn leaves_through_the_core() {
    check(
        json!({"type": "integer", "minimum": 3, "exclusiveMaximum": 10}),
        &["3", "9", "5.0"],
        &["2", "10", "-3"],
    );
    check(
        json!({"type": "number", "minimum": 0.5}),
        &["0.5", "0.51", "1"],
        &["0.49999", "-1"],
    );
    check(
        json!({"type": "string", "pattern": "^a+$", "maxLength": 3}),
        &["\"a\"", "\"aaa\""],
        &["\"aaaa\"", "\"b\"", "\"\""],
    );
    check(
        json!({"type": "string", "pattern": "b"}),
        &["\"abc\"", "\"b\""],
        &["\"ac\""],
    );
    check(
        json!({"type": "string", "format": "date"}),
        &["\"2024-02-29\""],
        &["\"2024-13-01\""],
    );
    check(
        json!({"type": "integer", "minimum": 5, "maximum": 5}),
        &["5"],
        &["4", "6"],
    );
    assert!(matches!(
        error_of(json!({"type": "integer", "minimum": 1.2, "maximum": 1.8})).kind,
        ErrorKind::Unsatisfiable
    ));
    let err = error_of(json!({"properties": {"p": {"type": "string", "pattern": "(?=a)"}}}));
    assert_eq!(err.pointer.to_string(), "/properties/p/pattern");
    let compiled = compile(
        &json!({"type": "string", "format": "no-such-format"}),
        &Options::default(),
    )
    .expect("unknown formats only warn");
    assert_eq!(compiled.warnings.len(), 1);
}

#[test]
fn numeric_consts_match_by_value() {
    check(
        json!({"const": 1}),
        &["1", "1.0", "1.00"],
        &["10", "1.01", "true"],
    );
    check(json!({"const": -2.0}), &["-2", "-2.0"], &["2"]);
    check(
        json!({"enum": [0, 1.5]}),
        &["0", "-0", "0.0", "1.5", "1.50"],
        &["1", "0.5"],
    );
    check(json!({"const": 1e2}), &["100", "100.0"], &["1"]);
}

#[test]
fn dynamic_refs() {
    let single = json!({"$dynamicAnchor": "t", "type": ["array", "integer"], "items": {"$dynamicRef": "#t"}});
    check(single, &["[1,[2]]", "3"], &["[\"a\"]"]);
    let two = json!({"$id": "https://x/a", "$dynamicAnchor": "t", "$ref": "https://x/b", "$defs": {"b": {"$id": "https://x/b", "$dynamicAnchor": "t", "items": {"$dynamicRef": "#t"}}}});
    assert!(
        matches!(error_of(two).kind, ErrorKind::Unsupported { ref keyword, .. } if keyword == "$dynamicRef")
    );
}

#[test]
fn one_of_exactly_one_when_negatable() {
    let schema = json!({"type": "integer", "oneOf": [{"minimum": 5}, {"maximum": 10}]});
    check(schema, &["3", "11"], &["7", "5", "10"]);
    check(
        json!({"type": "array", "items": {"type": "integer"}, "contains": {"const": 5}, "maxContains": 1}),
        &["[5]", "[1,5,2]"],
        &["[5,5]", "[1]"],
    );
    check(
        json!({"not": {"enum": [1, 2, "a"]}}),
        &["0", "1.5", "3", "\"b\"", "null"],
        &["1", "2", "2.0", "\"a\""],
    );
}

#[test]
fn pattern_properties() {
    let schema = json!({"properties": {"id": {"type": "integer"}}, "patternProperties": {"^x-": {"type": "string"}, "d$": {"type": "integer"}}, "additionalProperties": false});
    check(
        schema,
        &[
            "{\"id\":1}",
            "{\"x-a\":\"s\"}",
            "{\"id\":1,\"x-b\":\"s\",\"ad\":2}",
        ],
        &[
            "{\"x-a\":1}",
            "{\"y\":1}",
            "{\"ad\":\"s\"}",
            "{\"x-d\":\"s\"}",
            "{\"x-d\":1}",
        ],
    );
    let open = json!({"patternProperties": {"^a": {"type": "integer"}}});
    check(open, &["{\"ab\":1,\"b\":\"s\"}", "{}"], &["{\"ab\":\"s\"}"]);
    let declared_too = json!({"properties": {"ab": {"minimum": 0}}, "patternProperties": {"^a": {"type": "integer"}}, "required": ["ab"]});
    check(
        declared_too,
        &["{\"ab\":1}"],
        &["{\"ab\":1.5}", "{\"ab\":-1}", "{}"],
    );
}

#[test]
fn all_of_with_pattern_properties() {
    let schema = json!({"allOf": [
        {"properties": {"a": {"type": "integer"}}, "patternProperties": {"^x": {"type": "string"}}},
        {"properties": {"xb": {"maxLength": 2}}, "additionalProperties": {"type": ["string", "integer"]}}
    ]});
    check(
        schema,
        &["{\"a\":1,\"xb\":\"ab\",\"xc\":\"s\",\"z\":3}"],
        &[
            "{\"xb\":\"abc\"}",
            "{\"xc\":1}",
            "{\"z\":true}",
            "{\"xb\":1}",
        ],
    );
}

#[test]
fn recursive_ref_beside_other_keywords() {
    let schema = json!({
        "$defs": {"node": {"type": "object", "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"allOf": [{"$ref": "#/$defs/node"}, {"required": ["name"]}]}}}, "additionalProperties": false}},
        "$ref": "#/$defs/node"
    });
    check(
        schema,
        &[
            "{}",
            "{\"children\":[{\"name\":\"a\",\"children\":[{\"name\":\"b\"}]}]}",
        ],
        &[
            "{\"children\":[{}]}",
            "{\"children\":[{\"name\":\"a\",\"children\":[{}]}]}",
        ],
    );
}

#[test]
fn enums_checked_against_patterns() {
    let schema = json!({"type": "string", "oneOf": [{"enum": ["HTTP", "HTTPS"]}, {"pattern": "^\\[.*\\]$"}]});
    check(schema, &["\"HTTP\"", "\"[x]\""], &["\"FTP\""]);
    check(
        json!({"enum": ["ab", "b", "cab"], "pattern": "^a"}),
        &["\"ab\""],
        &["\"b\"", "\"cab\""],
    );
}

#[test]
fn property_names_beside_declared_properties() {
    let schema = json!({"properties": {"id": {"type": "integer"}}, "propertyNames": {"pattern": "^[a-z]+$", "maxLength": 3}});
    check(
        schema,
        &["{\"id\":1,\"abc\":true}", "{\"xy\":null}"],
        &["{\"ABC\":1}", "{\"abcd\":1}", "{\"id\":\"x\"}"],
    );
}

#[test]
fn unsatisfiable_points_at_the_contradiction() {
    let schema = json!({"type": "object", "required": ["n"], "properties": {"n": {"type": "integer", "enum": ["1", "2"]}}});
    let err = error_of(schema);
    assert!(matches!(err.kind, ErrorKind::Unsatisfiable));
    assert_eq!(err.pointer.to_string(), "/properties/n");
}

#[test]
fn const_objects_in_any_member_order() {
    check(
        json!({"const": {"a": 1, "b": [true]}}),
        &["{\"a\":1,\"b\":[true]}", "{\"b\":[true],\"a\":1}"],
        &["{\"a\":1}", "{\"a\":1,\"a\":1}"],
    );
}

#[test]
fn merging_two_recursive_definitions() {
    let schema = json!({
        "$defs": {
            "a": {"type": "object", "properties": {"x": {"$ref": "#/$defs/a"}, "y": {"$ref": "#/$defs/a"}, "n": {"type": "integer"}}},
            "b": {"type": "object", "properties": {"x": {"$ref": "#/$defs/b"}, "y": {"$ref": "#/$defs/b"}, "n": {"minimum": 0}}}
        },
        "allOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}]
    });
    check(
        schema,
        &["{}", "{\"x\":{\"y\":{\"n\":3}}}"],
        &["{\"x\":{\"y\":{\"n\":-3}}}", "{\"x\":{\"n\":1.5}}"],
    );
}

/// A schema of more than `SHARE_AFTER` subschemas (300 filler properties first), so that the
/// normaliser looks for schemas written again, with `extra` properties after them.
fn past_the_sharing_threshold(extra: Value) -> Value {
    let mut properties = serde_json::Map::new();
    for i in 0..300 {
        properties.insert(
            format!("filler{i}"),
            json!({"type": "integer", "minimum": i}),
        );
    }
    properties.extend(extra.as_object().expect("an object of properties").clone());
    json!({"type": "object", "properties": properties, "additionalProperties": false})
}

#[test]
fn schemas_written_again_share_rules_and_keep_their_meaning() {
    // Equal but for their descriptions: one shape (normalised once), and so one set of rules.
    let tags = |description: &str| {
        json!({"description": description, "type": "array", "items": {"enum": ["a", "b"]},
               "maxItems": 2})
    };
    let schema = past_the_sharing_threshold(json!({
        "x": tags("first"), "y": tags("second"),
        // Written the same way but with properties in another order: not the same schema.
        "p": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
              "required": ["a", "b"], "additionalProperties": false},
        "q": {"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "integer"}},
              "required": ["a", "b"], "additionalProperties": false}
    }));
    let fillers: String = (0..300).map(|i| format!("\"filler{i}\":{i},")).collect();
    let object = |rest: &str| format!("{{{}{rest}}}", fillers.trim_end_matches(','));
    let with = |rest: &str| object(&format!(",{rest}"));
    check_with(
        &Options {
            whitespace: Whitespace::Compact,
            ..Options::default()
        },
        schema,
        &[
            &with(r#""x":["a"],"y":["b","a"],"p":{"a":1,"b":""},"q":{"b":"","a":1}"#),
            &object(""),
        ],
        &[
            &with(r#""x":["c"]"#),
            &with(r#""y":["a","a","a"]"#),
            &with(r#""p":{"b":"","a":1}"#),
            &with(r#""q":{"a":1,"b":""}"#),
        ],
    );
}

#[test]
fn warnings_name_every_place_of_a_schema_written_again() {
    let unique = json!({"type": "array", "items": {"type": "string"}, "uniqueItems": true});
    let pair = json!({"type": "object", "properties": {"left": unique, "right": unique}});
    // `pair` is written twice, each with `unique` twice inside; `unique` once more alone.
    let schema = past_the_sharing_threshold(json!({"a": pair, "b": pair, "c": unique}));
    assert_eq!(
        lenient_warnings(&schema),
        [
            "/properties/a/properties/left/uniqueItems uniqueItems",
            "/properties/a/properties/right/uniqueItems uniqueItems",
            "/properties/b/properties/left/uniqueItems uniqueItems",
            "/properties/b/properties/right/uniqueItems uniqueItems",
            "/properties/c/uniqueItems uniqueItems",
        ]
    );
    // Without `lenient`, the error names the first place.
    let err = compile(&schema, &Options::default()).expect_err("uniqueItems is unsupported");
    assert_eq!(
        err.pointer.to_string(),
        "/properties/a/properties/left/uniqueItems"
    );
}
