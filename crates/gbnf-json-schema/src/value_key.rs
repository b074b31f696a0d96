//! A JSON value's identity under JSON Schema equality, as a hashable key: numbers are equal
//! by value (`1`, `1.0` and `1e0` are one number) and objects regardless of member order.
//! Large `enum`s are deduplicated, intersected and filtered through hash sets of these keys,
//! so that each costs linear time instead of a comparison per pair of values.

use std::collections::HashSet;

use serde_json::Value;

use crate::decimal::Decimal;
use crate::normalize::SeededHash;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum ValueKey<'a> {
    Null,
    Bool(bool),
    Number(NumberKey),
    String(&'a str),
    Array(Vec<ValueKey<'a>>),
    /// Members sorted by name (a JSON Schema object has no member order).
    Object(Vec<(&'a str, ValueKey<'a>)>),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum NumberKey {
    Exact(Decimal),
    /// A number whose decimal form is out of range (as `decimal::compare`, which falls back
    /// to `f64` there).
    Float(u64),
}

impl<'a> ValueKey<'a> {
    pub fn of(value: &'a Value) -> ValueKey<'a> {
        match value {
            Value::Null => ValueKey::Null,
            Value::Bool(b) => ValueKey::Bool(*b),
            Value::Number(number) => ValueKey::Number(match Decimal::of(number) {
                Some(decimal) => NumberKey::Exact(decimal),
                None => NumberKey::Float(number.as_f64().unwrap_or(f64::NAN).to_bits()),
            }),
            Value::String(text) => ValueKey::String(text),
            Value::Array(items) => ValueKey::Array(items.iter().map(ValueKey::of).collect()),
            Value::Object(members) => {
                let mut members: Vec<(&str, ValueKey)> = members
                    .iter()
                    .map(|(name, value)| (name.as_str(), ValueKey::of(value)))
                    .collect();
                members.sort_unstable_by(|a, b| a.0.cmp(b.0));
                ValueKey::Object(members)
            }
        }
    }
}

/// Up to how many values a list is scanned rather than hashed: most `enum`s and every
/// `const` are this small, and comparing a few keys is cheaper than hashing them.
const SMALL: usize = 8;

/// The keys of some values, for membership tests.
pub(crate) enum KeySet<'a> {
    /// At most [`SMALL`] keys, scanned.
    Small(Vec<ValueKey<'a>>),
    Hashed(HashSet<ValueKey<'a>, SeededHash>),
}

impl<'a> KeySet<'a> {
    pub fn contains(&self, key: &ValueKey<'a>) -> bool {
        match self {
            KeySet::Small(keys) => keys.contains(key),
            KeySet::Hashed(keys) => keys.contains(key),
        }
    }

    pub fn is_empty(&self) -> bool {
        match self {
            KeySet::Small(keys) => keys.is_empty(),
            KeySet::Hashed(keys) => keys.is_empty(),
        }
    }
}

/// The keys of `values`, for membership tests.
pub(crate) fn key_set<'a>(values: impl IntoIterator<Item = &'a Value>) -> KeySet<'a> {
    let mut values = values.into_iter();
    let mut small = Vec::new();
    for value in values.by_ref() {
        small.push(ValueKey::of(value));
        if small.len() > SMALL {
            let mut hashed: HashSet<ValueKey, SeededHash> = small.into_iter().collect();
            hashed.extend(values.map(ValueKey::of));
            return KeySet::Hashed(hashed);
        }
    }
    KeySet::Small(small)
}

/// `values` without repeats (the first of equal values is kept), in order.
pub(crate) fn dedup(values: Vec<Value>) -> Vec<Value> {
    if values.len() <= 1 {
        return values;
    }
    let keep: Vec<bool> = if values.len() <= SMALL {
        let keys: Vec<ValueKey> = values.iter().map(ValueKey::of).collect();
        (0..keys.len())
            .map(|i| !keys[..i].contains(&keys[i]))
            .collect()
    } else {
        let mut seen: HashSet<ValueKey, SeededHash> =
            HashSet::with_capacity_and_hasher(values.len(), SeededHash::default());
        values
            .iter()
            .map(|v| seen.insert(ValueKey::of(v)))
            .collect()
    };
    if keep.iter().all(|&keep| keep) {
        return values;
    }
    values
        .into_iter()
        .zip(keep)
        .filter_map(|(value, keep)| keep.then_some(value))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::normalize::json_equal;

    #[test]
    fn keys_are_equal_exactly_when_values_are() {
        let values = [
            json!(1),
            json!(1.0),
            json!(1e0),
            json!(10),
            json!(1e1),
            json!(-0.0),
            json!(0),
            json!(0.1),
            json!("1"),
            json!(null),
            json!(false),
            json!([1, 2]),
            json!([1.0, 2]),
            json!([2, 1]),
            json!({"a": 1, "b": [2]}),
            json!({"b": [2.0], "a": 1}),
            json!({"a": 1}),
            json!({"a": "1"}),
        ];
        for a in &values {
            for b in &values {
                assert_eq!(
                    ValueKey::of(a) == ValueKey::of(b),
                    json_equal(a, b),
                    "{a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn dedup_keeps_the_first_of_equal_values() {
        assert_eq!(
            dedup(vec![
                json!(1),
                json!("a"),
                json!(1.0),
                json!({"x": 1}),
                json!("a"),
                json!({"x": 1.0}),
                json!(2)
            ]),
            vec![json!(1), json!("a"), json!({"x": 1}), json!(2)]
        );
    }
}
