//! Throughput of the reader and printer on a generated 5,000-rule grammar.
//!
//! Measured on the shared 2-core machine (load ≈ 6–7), branch `read-perf`, CPU time of
//! the process (from `/proc/self/stat`, 60 iterations, 4 interleaved rounds) and
//! instructions per call (callgrind), before → after:
//! - read: 32–34 → 45–50 MB/s CPU; 153 M → 119 M instructions (−22 %).
//! - print: 27–29 → 46–56 MB/s CPU; 81 M → 56 M instructions (−31 %).
//! - check: 354 M → 310 M instructions (−12 %).
//!
//! Criterion's wall-clock figures swing by ±25 % with the other jobs on the machine
//! (back-to-back runs: read 34 → 31 MiB/s, print 37 → 44 MiB/s, check 8.6 → 6.7 MiB/s,
//! the check "regression" being pure load): compare CPU time or instruction counts.
//!
//! What is left in the reader is mostly allocating and freeing the IR itself (one
//! `String` per rule reference and literal, one `Vec` per sequence, alternation and
//! class, one `Box` per repetition); dropping the result is part of each iteration.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

/// A deterministic grammar with the usual mix: literals with escapes, classes,
/// repetitions, groups, alternations and references.
fn generated_grammar(n_rules: usize) -> String {
    let mut text = String::from("root ::= r0 (\",\" ws r1)*\nws ::= [ \\t\\n]*\n");
    for i in 0..n_rules {
        let next = (i + 1) % n_rules;
        let other = (i * 7 + 3) % n_rules;
        text.push_str(&format!(
            "r{i} ::= \"key-{i}\\\"\" ws ( [a-zA-Z_][a-zA-Z0-9_]{{0,15}} | \"\\u00e9t\\u00e9\" r{next} ) ws \"=\" ws (number | \"null\" | r{other}?) | [^\\x00-\\x1F\"\\\\]+ \"\\n\"\n"
        ));
    }
    text.push_str("number ::= \"-\"? ([0-9] | [1-9] [0-9]{1,15}) (\".\" [0-9]+)?\n");
    text
}

fn bench(c: &mut Criterion) {
    let text = generated_grammar(5_000);
    let grammar = gbnf::read(&text).expect("the generated grammar reads");
    let printed = gbnf::print(&grammar);

    let mut group = c.benchmark_group("read_print");
    group.sample_size(20);
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("read", |b| b.iter(|| gbnf::read(&text)));
    group.throughput(Throughput::Bytes(printed.len() as u64));
    group.bench_function("print", |b| b.iter(|| gbnf::print(&grammar)));
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("check", |b| b.iter(|| gbnf::check(&text, "root")));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
