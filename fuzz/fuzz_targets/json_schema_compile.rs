//! Fuzzes the JSON Schema compiler: any JSON document, compiled with default and with
//! lenient options, must give a grammar or an error, never a panic or a hang. The document
//! is also compiled written twice, after enough other schemas that the compiler shares
//! schemas written again (normalises the second one by reusing the first).

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

/// More schemas than the compiler normalises before it looks for schemas written again.
const FILLERS: usize = 300;

fuzz_target!(|data: &[u8]| {
    let Ok(schema) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let options = gbnf_json_schema::Options::default();
    let lenient = gbnf_json_schema::Options {
        lenient: true,
        property_order: gbnf_json_schema::PropertyOrder::Any,
        ..gbnf_json_schema::Options::default()
    };
    let _ = gbnf_json_schema::compile(&schema, &options);
    let _ = gbnf_json_schema::compile(&schema, &lenient);

    let mut properties = Map::new();
    for i in 0..FILLERS {
        properties.insert(format!("f{i}"), Value::Bool(true));
    }
    properties.insert("a".to_owned(), schema.clone());
    properties.insert("b".to_owned(), schema);
    let mut twice = Map::new();
    twice.insert("properties".to_owned(), Value::Object(properties));
    let twice = Value::Object(twice);
    let _ = gbnf_json_schema::compile(&twice, &options);
    let _ = gbnf_json_schema::compile(&twice, &lenient);
});
