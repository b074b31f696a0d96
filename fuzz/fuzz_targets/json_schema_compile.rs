//! Fuzzes the JSON Schema compiler: any JSON document, compiled with default and with
//! lenient options, must give a grammar or an error, never a panic or a hang.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(schema) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let options = gbnf_json_schema::Options::default();
    let _ = gbnf_json_schema::compile(&schema, &options);
    let lenient = gbnf_json_schema::Options {
        lenient: true,
        property_order: gbnf_json_schema::PropertyOrder::Any,
        ..gbnf_json_schema::Options::default()
    };
    let _ = gbnf_json_schema::compile(&schema, &lenient);
});
