//! Unit tests of the normaliser's shortcuts: leaves told disjoint before merging must be
//! disjoint by the merge too, and a `oneOf` made disjoint through the memoised conjunctions
//! must still mean exactly one branch.

use std::rc::Rc;

use serde_json::{json, Value};

use crate::normalize::{check_value_depth, disjoint_leaves, Leaf, Normalizer, Shape};
use crate::pointer::JsonPointer;
use crate::{compile, Options, Whitespace, MAX_DEPTH};

/// The leaf `schema` normalises to.
fn leaf(normalizer: &mut Normalizer, schema: &Value) -> Rc<Leaf> {
    match normalizer.normalize(schema, &JsonPointer::root(), "") {
        Ok(Shape::Leaf(leaf)) => leaf,
        other => panic!("{schema}: not a leaf: {other:?}"),
    }
}

/// Whether `disjoint_leaves` tells `a` and `b` apart; checked to be symmetric and, when it
/// does, to agree with merging them.
fn told_apart(a: Value, b: Value) -> bool {
    let root = json!({});
    let options = Options::default();
    let mut normalizer = Normalizer::new(&root, &options).expect("normaliser");
    let (x, y) = (leaf(&mut normalizer, &a), leaf(&mut normalizer, &b));
    let told = disjoint_leaves(&x, &y);
    assert_eq!(told, disjoint_leaves(&y, &x), "{a} / {b}: not symmetric");
    let merged = normalizer.merge_leaves(&x, &y).expect("merges");
    let merged = normalizer.simplify(merged).expect("simplifies");
    if told {
        assert!(
            merged.is_never(),
            "{a} / {b}: told apart, merged {merged:?}"
        );
    }
    told
}

#[test]
fn disjoint_leaves_agree_with_the_merge() {
    let tag = |value: &str| json!({"type": "object", "required": ["k"], "properties": {"k": {"const": value}}});
    assert!(told_apart(tag("a"), tag("b")));
    assert!(!told_apart(tag("a"), tag("a")));
    // An absent dependency trigger against a branch that requires it.
    let absent = json!({"properties": {"t": false}});
    assert!(told_apart(
        absent.clone(),
        json!({"type": "object", "required": ["t"]})
    ));
    assert!(!told_apart(
        absent,
        json!({"type": "object", "required": ["u"]})
    ));
    // A closed object without the required key, and with it.
    let closed = json!({"type": "object", "properties": {"a": {}}, "additionalProperties": false});
    assert!(told_apart(closed.clone(), json!({"required": ["b"]})));
    assert!(!told_apart(closed, json!({"required": ["a"]})));
    // A pattern may admit the key: not told (the merge decides).
    let patterned =
        json!({"type": "object", "patternProperties": {"^b": {}}, "additionalProperties": false});
    assert!(!told_apart(patterned, json!({"required": ["b"]})));
    // Strings are shared: the leaves overlap whatever the objects do.
    let either = json!({"type": ["object", "string"], "properties": {"t": false}});
    assert!(!told_apart(either, json!({"required": ["t"]})));
}

/// Whether the grammar of `schema` accepts `text` (compact white space).
fn accepts(schema: &Value, text: &str) -> bool {
    let options = Options {
        whitespace: Whitespace::Compact,
        ..Options::default()
    };
    let compiled = compile(schema, &options).unwrap_or_else(|err| panic!("{schema}: {err}"));
    assert!(compiled.warnings.is_empty(), "{:?}", compiled.warnings);
    let matcher = gbnf::Matcher::new(&compiled.grammar, "root").expect("matcher");
    matcher.verdict(text) == gbnf::Verdict::Accept
}

#[test]
fn one_of_over_dependency_alternatives_is_exact() {
    // pyproject's `project` in small: dependencies make each branch a union of leaves that
    // differ by which trigger keys are absent, and the branches overlap.
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "version": {"type": "string"},
            "readme": {"type": "string"},
            "dynamic": {"type": "string"},
            "lock": {"type": "boolean"}
        },
        "required": ["name"],
        "additionalProperties": false,
        "dependencies": {
            "version": {"not": {"required": ["lock"]}},
            "readme": {"not": {"required": ["lock"]}}
        },
        "oneOf": [{"required": ["dynamic"]}, {"required": ["version"]}]
    });
    for text in [
        r#"{"name":"x","version":"1"}"#,
        r#"{"name":"x","dynamic":"d"}"#,
        r#"{"name":"x","dynamic":"d","lock":true}"#,
        r#"{"name":"x","version":"1","readme":"r"}"#,
    ] {
        assert!(accepts(&schema, text), "rejected {text}");
    }
    for text in [
        r#"{"name":"x"}"#,
        r#"{"name":"x","version":"1","dynamic":"d"}"#,
        r#"{"name":"x","version":"1","lock":true}"#,
        r#"{"name":"x","dynamic":"d","readme":"r","lock":true}"#,
    ] {
        assert!(!accepts(&schema, text), "accepted {text}");
    }
}

/// `leaf` inside `levels` arrays, and inside `levels` objects.
fn nested(levels: usize, leaf: Value) -> [Value; 2] {
    let mut array = leaf.clone();
    let mut object = leaf;
    for _ in 0..levels {
        array = Value::Array(vec![array]);
        object = json!({ "k": object });
    }
    [array, object]
}

#[test]
fn value_depth_limit_counts_scalars_and_containers_alike() {
    let limit = MAX_DEPTH * 4;
    for leaf in [json!(1), json!([]), json!({})] {
        for value in nested(limit, leaf.clone()) {
            assert!(check_value_depth(&value).is_ok(), "{leaf} at depth {limit}");
        }
        for value in nested(limit + 1, leaf.clone()) {
            assert!(
                check_value_depth(&value).is_err(),
                "{leaf} at depth {}",
                limit + 1
            );
        }
    }
}
