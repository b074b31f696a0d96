//! Compile-time benchmarks of `gbnf_json_schema::compile`: a typical tool schema, and
//! generated schemas of growing size, to show that time grows linearly with the schema:
//! wide objects, and nesting through objects, arrays, `anyOf`, `allOf` and chains of `$ref`s.
//! Nesting stops short of [`gbnf_json_schema::MAX_DEPTH`] (128 schema levels; an object level
//! is one, an `anyOf`/`allOf` level or a `$ref` hop two), past which compiling is a `TooDeep`
//! error. The per-schema distribution over the real corpora is in the `corpora` bench.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use gbnf_json_schema::{compile, Options};
use serde_json::{json, Value};

fn example() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/examples/get_weather.schema.json"
    );
    let text = std::fs::read_to_string(path).expect("example schema");
    serde_json::from_str(&text).expect("example schema is JSON")
}

/// `schema` without the given keywords anywhere (object keys named like them included).
fn strip_keywords(mut schema: Value, keywords: &[&str]) -> Value {
    let mut stack = vec![&mut schema];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                map.retain(|key, _| !keywords.contains(&key.as_str()));
                stack.extend(map.values_mut());
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            _ => {}
        }
    }
    schema
}

/// An object with `n` properties of mixed kinds, half of them required.
fn wide_object(n: usize) -> Value {
    let mut properties = serde_json::Map::new();
    let mut required = Vec::new();
    for i in 0..n {
        let schema = match i % 5 {
            0 => json!({"type": "string", "maxLength": 40}),
            1 => json!({"type": "integer", "minimum": 0, "maximum": 1000}),
            2 => json!({"type": "array", "items": {"type": "number"}}),
            3 => json!({"enum": ["alpha", "beta", "gamma", i]}),
            _ => {
                json!({"type": "object", "properties": {"x": {"type": "boolean"}}, "required": ["x"]})
            }
        };
        properties.insert(format!("field_{i}"), schema);
        if i % 2 == 0 {
            required.push(Value::String(format!("field_{i}")));
        }
    }
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

/// `depth` nested objects, each with a sibling string property.
fn deep_object(depth: usize) -> Value {
    let mut schema = json!({"type": "string"});
    for _ in 0..depth {
        schema = json!({
            "type": "object",
            "properties": {"name": {"type": "string"}, "child": schema},
            "required": ["name"],
            "additionalProperties": false
        });
    }
    schema
}

/// `depth` nested arrays of strings.
fn deep_array(depth: usize) -> Value {
    let mut schema = json!({"type": "string"});
    for _ in 0..depth {
        schema = json!({"type": "array", "items": schema});
    }
    schema
}

/// `depth` levels of `anyOf: [null, {object with the next level}]`.
fn deep_any_of(depth: usize) -> Value {
    let mut schema = json!({"type": "string"});
    for _ in 0..depth {
        schema = json!({"anyOf": [
            {"type": "null"},
            {"type": "object", "properties": {"next": schema}}
        ]});
    }
    schema
}

/// `depth` levels of `allOf` merging an object with one property and the next level.
fn deep_all_of(depth: usize) -> Value {
    let mut schema = json!({"type": "string"});
    for i in 0..depth {
        schema = json!({"allOf": [
            {"type": "object", "properties": {format!("field_{i}"): {"type": "integer"}}},
            {"properties": {"next": schema}}
        ]});
    }
    schema
}

/// A chain of `depth` definitions, each an object whose property refers to the previous one.
fn ref_chain(depth: usize) -> Value {
    let mut defs = serde_json::Map::new();
    defs.insert("d0".to_owned(), json!({"type": "string"}));
    for i in 1..depth {
        defs.insert(
            format!("d{i}"),
            json!({"type": "object", "properties": {"next": {"$ref": format!("#/$defs/d{}", i - 1)}}}),
        );
    }
    json!({"$defs": defs, "$ref": format!("#/$defs/d{}", depth - 1)})
}

/// Times `make(n)` for each `n`, as a group of its own.
fn bench_nesting(
    c: &mut Criterion,
    group: &str,
    sizes: &[usize],
    make: fn(usize) -> Value,
    options: &Options,
) {
    let mut group = c.benchmark_group(group);
    for &n in sizes {
        let schema = make(n);
        // Time successful compilations only: an early error would look fast.
        if let Err(err) = compile(&schema, options) {
            panic!("{n} levels do not compile: {err}");
        }
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &schema, |b, schema| {
            b.iter(|| compile(schema, options))
        });
    }
    group.finish();
}

fn bench_compile(c: &mut Criterion) {
    let options = Options::default();
    let tool = example();
    // Until number bounds are supported, time the example without them.
    let tool = match compile(&tool, &options) {
        Ok(_) => tool,
        Err(_) => strip_keywords(tool, &["minimum", "maximum", "minLength", "maxLength"]),
    };
    c.bench_function("compile/tool-schema", |b| {
        b.iter(|| compile(&tool, &options))
    });

    let mut wide = c.benchmark_group("compile/wide-object");
    for n in [10, 100, 1000] {
        let schema = wide_object(n);
        if let Err(err) = compile(&schema, &options) {
            panic!("wide-object/{n} does not compile: {err}");
        }
        wide.throughput(Throughput::Elements(n as u64));
        wide.bench_with_input(BenchmarkId::from_parameter(n), &schema, |b, schema| {
            b.iter(|| compile(schema, &options))
        });
    }
    wide.finish();

    bench_nesting(
        c,
        "compile/deep-object",
        &[10, 30, 100],
        deep_object,
        &options,
    );
    bench_nesting(
        c,
        "compile/deep-array",
        &[10, 30, 100],
        deep_array,
        &options,
    );
    bench_nesting(
        c,
        "compile/deep-anyof",
        &[10, 30, 60],
        deep_any_of,
        &options,
    );
    bench_nesting(
        c,
        "compile/deep-allof",
        &[10, 30, 60],
        deep_all_of,
        &options,
    );
    bench_nesting(c, "compile/ref-chain", &[10, 30, 60], ref_chain, &options);
}

criterion_group!(benches, bench_compile);
criterion_main!(benches);
