//! The corpus report: compiles every SchemaStore and BFCL schema, and prints the compile rate,
//! the agreement of our verdicts with SchemaStore's instance labels, the per-schema compile
//! time distribution (p50, p99, max; best of three runs each), grammar sizes and the most
//! common errors. Criterion then times compiling the whole BFCL corpus.
//!
//! Run: `cargo bench -p gbnf-json-schema --bench corpora` (add `-- --quick` for a short
//! criterion phase).
//!
//! The compile time measured is `gbnf_json_schema::compile` alone (schema → `Compiled`, the
//! grammar IR); printing the grammar (for the size figures) is not timed. The bench allocates
//! with mimalloc, as the `schema2gbnf` CLI does; `RUSTFLAGS="--cfg system_alloc"` measures
//! with the system allocator (glibc's malloc here) instead. (mimalloc's v2 series: with
//! `CORPORA_COLD`, each fresh thread first reclaims the memory the previous threads left, about
//! 80k instructions a compile on BFCL's small schemas, which a single-threaded CLI never pays.)
//!
//! Environment:
//! - `CORPORA=bfcl` (or `schemastore`) runs the report on that corpus only, without the
//!   criterion phase; SchemaStore is slow, so `CORPORA=bfcl` is the quick way to see the
//!   tool-schema distribution.
//! - `CORPORA_LOOPS=N` skips the report and criterion and compiles the BFCL corpus `N` times,
//!   for a profiler or `perf stat` on the bench binary
//!   (`perf stat -e instructions,task-clock target/release/deps/corpora-* --bench`).
//! - `CORPORA_DUMP=1` skips the rest and prints every BFCL and SchemaStore grammar (or error),
//!   one schema after another, to compare the output of two versions of the compiler;
//!   `CORPORA_DUMP=lenient` prints them compiled with `lenient`.
//! - `CORPORA_LLAMA=path` skips the rest and writes every grammar of both corpora with strings
//!   and our matcher's verdicts on them, one JSON line a grammar (`source`, `root`, `grammar`,
//!   `samples`: `[text, verdict]` pairs), for `cargo xtask llama-compat --cases path`, which
//!   asks real llama.cpp for its verdicts on the same strings. SchemaStore is compiled with
//!   `lenient` (a strict grammar that differs is written too), BFCL as it is; the strings are
//!   SchemaStore's labelled instances (as written and in schema order), and derivations of
//!   the grammar with mutations of them, up to `MAX_LLAMA_INSTANCE` bytes.
//!
//! More environment variables, for profiling the compile-time tail:
//! - `CORPORA_TOP=N`: print the N slowest schemas of each corpus with their names (default 5).
//! - `CORPORA_TIMES_ONLY=1`: only the SchemaStore compile-time report, strict and `lenient`
//!   (no instance verdicts, no BFCL, no criterion phase): the quick before/after measurement.
//! - `CORPORA_REPEAT=N`: time each schema as the best of N compilations (default 3).
//! - `CORPORA_COLD=1`: compile each time on a fresh thread, whose per-thread memos (pattern
//!   and number automata) are empty: the cost of a schema's first compile in a process, as
//!   the CLI pays it, rather than of compiling it again.
//! - `CORPORA_HASHES=path`: also write one line per schema and mode (`corpus`, name, then a
//!   hash and the length of the printed grammar, or the error), to compare the output of two
//!   builds: `diff` the files.
//! - `CORPORA_CPU=1`: time each compile by the CPU time of the thread that runs it
//!   (`/proc/thread-self/schedstat`, Linux) instead of the wall clock: steadier on a busy
//!   machine, since time spent waiting for a core is not counted.
//! - `CORPORA_FILTER=substring[,substring…]`: only the schemas whose name contains one of them
//!   (e.g. `CORPORA_FILTER=package,pyproject` for the tail), or to run one
//!   schema under `perf record`: `CORPORA_TIMES_ONLY=1 CORPORA_FILTER=cloudify perf record
//!   target/release/deps/corpora-…`).

#[path = "../tests/support/mod.rs"]
mod support;

/// The allocator the `schema2gbnf` CLI uses, so that these figures are the CLI's; build with
/// `RUSTFLAGS="--cfg system_alloc"` to measure with the system allocator instead.
#[cfg(not(system_alloc))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use criterion::Criterion;
use gbnf_json_schema::{compile, Options};

use support::corpus::{
    compile_entry, error_kind, load_bfcl, load_schemastore, order_like_schema, Entry,
};
use support::{accepts, matcher};

fn main() {
    if let Some(loops) = std::env::var("CORPORA_LOOPS")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
    {
        let tools = load_bfcl();
        let options = Options::default();
        let mut compiled = 0;
        for _ in 0..loops {
            compiled += tools
                .iter()
                .filter(|entry| compile(&entry.schema, &options).is_ok())
                .count();
        }
        println!("compiled {compiled} schemas in {loops} loops");
        return;
    }
    if std::env::var_os("CORPORA_DUMP").is_some() {
        dump();
        return;
    }
    if let Some(path) = std::env::var_os("CORPORA_LLAMA") {
        if let Err(error) = llama_cases(std::path::Path::new(&path)) {
            eprintln!("CORPORA_LLAMA: {error}");
            std::process::exit(2);
        }
        return;
    }
    let only = std::env::var("CORPORA").unwrap_or_default();
    if only != "bfcl" {
        schemastore_report();
    }
    let times_only = std::env::var_os("CORPORA_TIMES_ONLY").is_some_and(|value| value == "1");
    if only != "schemastore" && !times_only {
        bfcl_report();
    }
}

/// How the corpora resolve remote references.
type Resolve<'a> = dyn Fn(&str) -> Option<std::sync::Arc<serde_json::Value>> + 'a;

/// Prints every grammar (or error) of both corpora.
fn dump() {
    let store = load_schemastore();
    let resolve = |uri: &str| store.resolve(uri);
    let no_remote = |_: &str| None;
    let tools = load_bfcl();
    let corpora: [(&[Entry], &Resolve); 2] = [(&tools, &no_remote), (&store.schemas, &resolve)];
    let lenient = std::env::var_os("CORPORA_DUMP").is_some_and(|value| value == "lenient");
    for (entries, resolve) in corpora {
        for entry in entries {
            let compiled = compile_entry(&entry.schema, resolve, lenient);
            println!("### {}", entry.name);
            match compiled.grammar {
                Some(grammar) => println!("{}", gbnf::print(&grammar)),
                None => println!("error: {}", compiled.error.unwrap_or_default()),
            }
        }
    }
}

/// Instances longer than this are left out of `CORPORA_LLAMA` (llama.cpp's sampler feeds a byte
/// at a time, at ~0.3 MB/s).
const MAX_LLAMA_INSTANCE: usize = 20_000;

/// Writes the `CORPORA_LLAMA` cases (see the module comment).
fn llama_cases(path: &std::path::Path) -> std::io::Result<()> {
    use std::io::Write;
    let store = load_schemastore();
    let resolve = |uri: &str| store.resolve(uri);
    let no_remote = |_: &str| None;
    let tools = load_bfcl();
    let instances_of = store.instances_by_schema();
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut grammars = 0;
    let mut rng = support::sampler::Rng::new(19);
    let mut write = |source: String, grammar: &gbnf::Grammar, texts: Vec<String>| {
        grammars += 1;
        let line = support::llama_case(&source, grammar, texts, MAX_LLAMA_INSTANCE, &mut rng);
        out.write_all(line.as_bytes())
    };
    for entry in &store.schemas {
        let lenient = compile_entry(&entry.schema, &resolve, true).grammar;
        let strict = compile_entry(&entry.schema, &resolve, false).grammar;
        let mut texts = Vec::new();
        for instance in instances_of.get(entry.name.as_str()).into_iter().flatten() {
            let ordered = order_like_schema(&instance.value, &entry.schema, &entry.schema);
            texts.push(instance.text.clone());
            texts.push(serde_json::to_string(&ordered).unwrap_or_default());
        }
        if let Some(grammar) = &lenient {
            write(
                format!("schemastore/{} (lenient)", entry.name),
                grammar,
                texts.clone(),
            )?;
        }
        if let Some(grammar) = strict.filter(|strict| Some(strict) != lenient.as_ref()) {
            write(format!("schemastore/{}", entry.name), &grammar, texts)?;
        }
    }
    for entry in &tools {
        if let Some(grammar) = compile_entry(&entry.schema, &no_remote, false).grammar {
            write(format!("bfcl/{}", entry.name), &grammar, Vec::new())?;
        }
    }
    out.flush()?;
    eprintln!("CORPORA_LLAMA: {grammars} grammars in {}", path.display());
    Ok(())
}

fn schemastore_report() {
    let mut store = load_schemastore();
    if let Ok(filter) = std::env::var("CORPORA_FILTER") {
        let parts: Vec<&str> = filter.split(',').collect();
        store
            .schemas
            .retain(|entry| parts.iter().any(|part| entry.name.contains(part)));
    }
    let store = store;
    let resolve = |uri: &str| store.resolve(uri);
    if std::env::var_os("CORPORA_TIMES_ONLY").is_some_and(|value| value == "1") {
        println!("# SchemaStore ({} schemas), strict", store.schemas.len());
        report("schemastore", &store.schemas, &resolve);
        println!("\n# SchemaStore ({} schemas), lenient", store.schemas.len());
        report_with("schemastore-lenient", &store.schemas, &resolve, true);
        return;
    }
    println!(
        "# SchemaStore ({} schemas, {} instances)",
        store.schemas.len(),
        store.instances.len()
    );
    let grammars = report("schemastore", &store.schemas, &resolve);

    let mut agree = 0;
    let mut agree_ordered = 0;
    let mut checked = 0;
    let mut valid_rejected = Vec::new();
    let mut invalid_accepted = Vec::new();
    let mut with_schema = 0;
    for instance in &store.instances {
        let Some(grammar) = grammars.get(instance.schema.as_str()) else {
            continue;
        };
        with_schema += 1;
        let matcher = matcher(grammar);
        checked += 1;
        if accepts(&matcher, &instance.text) == instance.valid {
            agree += 1;
        }
        let schema = store
            .schemas
            .iter()
            .find(|entry| entry.name == instance.schema)
            .map(|entry| &entry.schema);
        let ordered = match schema {
            Some(schema) => {
                serde_json::to_string(&order_like_schema(&instance.value, schema, schema))
                    .unwrap_or_default()
            }
            None => instance.text.clone(),
        };
        if accepts(&matcher, &ordered) == instance.valid {
            agree_ordered += 1;
        } else if instance.valid {
            valid_rejected.push(instance.schema.clone());
        } else {
            invalid_accepted.push(instance.schema.clone());
        }
    }
    println!(
        "instances of compiled schemas: {with_schema}; verdict agrees with the label: {agree}/{checked} ({:.1}%) as written, {agree_ordered}/{checked} ({:.1}%) with keys in schema order; then valid rejected: {}, invalid accepted: {}",
        percent(agree, checked),
        percent(agree_ordered, checked),
        valid_rejected.len(),
        invalid_accepted.len()
    );
    valid_rejected.dedup();
    invalid_accepted.dedup();
    println!("valid rejected (schemas): {}", valid_rejected.join(" "));
    println!("invalid accepted (schemas): {}", invalid_accepted.join(" "));
}

fn bfcl_report() {
    let no_remote = |_: &str| None;
    let tools = load_bfcl();
    println!("\n# BFCL ({} tool schemas)", tools.len());
    report("bfcl", &tools, &no_remote);
    if std::env::var_os("CORPORA").is_some() {
        return;
    }

    let mut criterion = Criterion::default()
        .configure_from_args()
        .warm_up_time(Duration::from_secs(1));
    let options = Options::default();
    criterion.bench_function("corpora/bfcl-all", |b| {
        b.iter(|| {
            tools
                .iter()
                .filter(|entry| compile(&entry.schema, &options).is_ok())
                .count()
        })
    });
    criterion.final_summary();
}

/// Compiles every schema (best of three timings each, or `CORPORA_REPEAT`), prints the distribution, and returns the
/// grammars by schema name.
fn report(
    corpus: &str,
    entries: &[Entry],
    resolve: &(dyn Fn(&str) -> Option<std::sync::Arc<serde_json::Value>> + Sync),
) -> HashMap<String, gbnf::Grammar> {
    report_with(corpus, entries, resolve, false)
}

/// [`report`], compiling with `lenient` as asked.
fn report_with(
    corpus: &str,
    entries: &[Entry],
    resolve: &(dyn Fn(&str) -> Option<std::sync::Arc<serde_json::Value>> + Sync),
    lenient: bool,
) -> HashMap<String, gbnf::Grammar> {
    let top = std::env::var("CORPORA_TOP")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(5);
    let repeat: usize = std::env::var("CORPORA_REPEAT")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(3);
    let mut dump = std::env::var_os("CORPORA_HASHES").and_then(|path| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .ok()
    });
    let mut times: Vec<(Duration, &str, usize)> = Vec::new();
    let mut errors: BTreeMap<String, usize> = BTreeMap::new();
    let mut grammars = HashMap::new();
    let mut sizes = Vec::new();
    let mut compiled = 0;
    let cold = std::env::var_os("CORPORA_COLD").is_some();
    let cpu = std::env::var_os("CORPORA_CPU").is_some_and(|value| value == "1");
    let measure = |schema: &serde_json::Value| {
        if !cpu {
            return compile_entry(schema, resolve, lenient);
        }
        let started = thread_cpu_time();
        let mut compiled = compile_entry(schema, resolve, lenient);
        if let (Some(started), Some(ended)) = (started, thread_cpu_time()) {
            compiled.elapsed = ended.saturating_sub(started);
        }
        compiled
    };
    let time_one = |schema: &serde_json::Value| {
        if !cold {
            return measure(schema);
        }
        // A fresh thread starts with empty per-thread memos: the first compile of this
        // schema in a process (process-wide caches and the allocator stay warm).
        std::thread::scope(|scope| {
            scope
                .spawn(|| measure(schema))
                .join()
                .unwrap_or_else(|_| panic!("compiling panicked"))
        })
    };
    for entry in entries {
        let mut best = time_one(&entry.schema);
        for _ in 1..repeat {
            let again = time_one(&entry.schema);
            if again.elapsed < best.elapsed {
                best = again;
            }
        }
        if let Some(dump) = dump.as_mut() {
            use std::hash::{Hash, Hasher};
            use std::io::Write;
            let line = match (&best.grammar, &best.error) {
                (Some(grammar), _) => {
                    let text = gbnf::print(grammar);
                    let mut hasher = std::collections::hash_map::DefaultHasher::new();
                    text.hash(&mut hasher);
                    format!("ok\t{:016x}\t{}", hasher.finish(), text.len())
                }
                (None, error) => format!("error\t{}", error.as_deref().unwrap_or_default()),
            };
            let _ = writeln!(dump, "{corpus}\t{}\t{line}", entry.name);
        }
        let schema_bytes = entry.schema.to_string().len();
        times.push((best.elapsed, entry.name.as_str(), schema_bytes));
        match best.grammar {
            Some(grammar) => {
                compiled += 1;
                sizes.push((
                    gbnf::print(&grammar).len(),
                    grammar.rules.len(),
                    schema_bytes,
                    entry.name.as_str(),
                ));
                grammars.insert(entry.name.clone(), grammar);
            }
            None => {
                *errors
                    .entry(error_kind(&best.error.unwrap_or_default()))
                    .or_default() += 1
            }
        }
    }
    println!(
        "{corpus}: compiled {compiled}/{} ({:.1}%)",
        entries.len(),
        percent(compiled, entries.len())
    );
    times.sort();
    if times.is_empty() {
        return grammars;
    }
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize].0;
    println!(
        "{corpus}: compile {} per schema (best of {repeat}{}, compiled or not): p50 {:?}, p90 {:?}, p99 {:?}, max {:?}",
        if cpu { "CPU time" } else { "time" },
        if cold { ", each on a fresh thread" } else { "" },
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0)
    );
    println!("{corpus}: slowest:");
    for (elapsed, name, bytes) in times.iter().rev().take(top) {
        println!("  {elapsed:?}\t{name}\t({bytes} bytes of schema)");
    }
    sizes.sort();
    if !sizes.is_empty() {
        let median = sizes[sizes.len() / 2];
        println!(
            "{corpus}: grammar size: median {} bytes / {} rules (schema {} bytes); largest:",
            median.0, median.1, median.2
        );
        for (bytes, rules, schema_bytes, name) in sizes.iter().rev().take(3) {
            println!("  {bytes} bytes / {rules} rules\t{name}\t(schema {schema_bytes} bytes)");
        }
    }
    let mut by_count: Vec<(&String, &usize)> = errors.iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(a.1));
    println!("{corpus}: most common errors:");
    for (kind, count) in by_count.iter().take(12) {
        println!("  {count}\t{kind}");
    }
    grammars
}

/// The CPU time the calling thread has run for, from `/proc/thread-self/schedstat` (its
/// first field, in nanoseconds), or `None` where that file cannot be read.
fn thread_cpu_time() -> Option<Duration> {
    // The kernel brings a running thread's total up to date only when it schedules (or at a
    // tick): yielding first makes the figure exact rather than a tick stale.
    std::thread::yield_now();
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos = text.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(nanos))
}

fn percent(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}
