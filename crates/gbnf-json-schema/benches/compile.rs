//! Compile-time benchmarks of `gbnf_json_schema::compile`: a typical tool schema, and
//! generated schemas of growing size, to show that time grows linearly with the schema:
//! wide objects, and nesting through objects, arrays, `anyOf`, `allOf` and chains of `$ref`s.
//! Nesting stops short of [`gbnf_json_schema::MAX_DEPTH`] (128 schema levels; an object level
//! is one, an `anyOf`/`allOf` level or a `$ref` hop two), past which compiling is a `TooDeep`
//! error. The per-schema distribution over the real corpora is in the `corpora` bench.
//!
//! `COMPILE_CPU=1` skips criterion and prints, for each case, the process CPU time per
//! compile (from `/proc/self/stat`, over at least two seconds of CPU per case): on a shared
//! machine that is steadier than criterion's wall clock.

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

/// The nesting cases: group name, sizes (levels), generator.
type Nesting = (&'static str, &'static [usize], fn(usize) -> Value);
const NESTING: &[Nesting] = &[
    ("deep-object", &[10, 30, 100], deep_object),
    ("deep-array", &[10, 30, 100], deep_array),
    ("deep-anyof", &[10, 30, 60], deep_any_of),
    ("deep-allof", &[10, 30, 60], deep_all_of),
    ("ref-chain", &[10, 30, 60], ref_chain),
];

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

/// The process's CPU time (user + system) in clock ticks, if `/proc` says.
fn cpu_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name, which is in parentheses.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// Prints the CPU time per compile of every case (`COMPILE_CPU=1`).
fn cpu_report() {
    const TICKS_PER_SECOND: f64 = 100.0;
    let options = Options::default();
    let mut cases = vec![("tool-schema".to_owned(), tool_schema())];
    for n in [10, 100, 1000] {
        cases.push((format!("wide-object/{n}"), wide_object(n)));
    }
    for (group, sizes, make) in NESTING {
        for &n in *sizes {
            cases.push((format!("{group}/{n}"), make(n)));
        }
    }
    for (name, schema) in cases {
        let Some(start) = cpu_ticks() else {
            println!("no /proc/self/stat: no CPU times");
            return;
        };
        let mut iterations = 0u64;
        let mut batch = 1u64;
        let elapsed = loop {
            for _ in 0..batch {
                std::hint::black_box(compile(&schema, &options).is_ok());
            }
            iterations += batch;
            batch *= 2;
            let elapsed = cpu_ticks().unwrap_or(start) - start;
            if elapsed as f64 >= 2.0 * TICKS_PER_SECOND {
                break elapsed;
            }
        };
        let micros = elapsed as f64 / TICKS_PER_SECOND * 1e6 / iterations as f64;
        println!("{name}: {micros:.1} µs CPU per compile ({iterations} compiles)");
    }
}

fn tool_schema() -> Value {
    let options = Options::default();
    let tool = example();
    // Until number bounds are supported, time the example without them.
    match compile(&tool, &options) {
        Ok(_) => tool,
        Err(_) => strip_keywords(tool, &["minimum", "maximum", "minLength", "maxLength"]),
    }
}

fn bench_compile(c: &mut Criterion) {
    if std::env::var_os("COMPILE_CPU").is_some() {
        cpu_report();
        return;
    }
    let options = Options::default();
    let tool = tool_schema();
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

    for (group, sizes, make) in NESTING {
        bench_nesting(c, &format!("compile/{group}"), sizes, *make, &options);
    }
}

criterion_group!(benches, bench_compile);
criterion_main!(benches);
