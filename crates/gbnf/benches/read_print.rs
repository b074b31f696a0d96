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
//!
//! Without criterion:
//! - `READ_PRINT_CPU=N`: N rounds of read, print and check, one call each a round, timed by
//!   the CPU time of this thread (`/proc/thread-self/schedstat`); prints the best and the
//!   median of each, in MB/s.
//! - `READ_PRINT_ONLY=read` (or `print`, `check`), `READ_PRINT_REPS=N` (default 1): one of
//!   them N times after a warm-up call, for a profiler: under
//!   `valgrind --tool=callgrind --toggle-collect='read_print::run_once'`, the difference
//!   between 3 and 1 repetitions, halved, is one call.

use criterion::{criterion_group, Criterion, Throughput};
use std::time::Duration;

/// The allocator the `gbnf` and `schema2gbnf` CLIs use, so that these figures are theirs;
/// build with `RUSTFLAGS="--cfg system_alloc"` to measure with the system allocator instead.
#[cfg(not(system_alloc))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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

/// One read, print or check, for a profiler.
#[inline(never)]
fn run_once(which: &str, text: &str, grammar: &gbnf::Grammar) {
    match which {
        "read" => drop(std::hint::black_box(gbnf::read(text))),
        "print" => drop(std::hint::black_box(gbnf::print(grammar))),
        _ => drop(std::hint::black_box(gbnf::check(text, "root"))),
    }
}

/// The CPU time the calling thread has run for, from `/proc/thread-self/schedstat` (its
/// first field, in nanoseconds), or `None` where that file cannot be read.
fn thread_cpu_time() -> Option<Duration> {
    // The kernel brings a running thread's total up to date only when it schedules: yielding
    // first makes the figure exact rather than a tick stale.
    std::thread::yield_now();
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos = text.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(nanos))
}

fn main() {
    let env_number = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
    };
    if let Some(rounds) = env_number("READ_PRINT_CPU") {
        let text = generated_grammar(5_000);
        let grammar = gbnf::read(&text).expect("the generated grammar reads");
        let printed_len = gbnf::print(&grammar).len();
        let mut times: [Vec<f64>; 3] = Default::default();
        for _ in 0..rounds.max(1) {
            for (at, which) in ["read", "print", "check"].into_iter().enumerate() {
                let (Some(before), _, Some(after)) = (
                    thread_cpu_time(),
                    run_once(which, &text, &grammar),
                    thread_cpu_time(),
                ) else {
                    eprintln!("no /proc/thread-self/schedstat: no CPU time here");
                    return;
                };
                times[at].push((after - before).as_secs_f64());
            }
        }
        for (at, which) in ["read", "print", "check"].into_iter().enumerate() {
            let bytes = if which == "print" {
                printed_len
            } else {
                text.len()
            };
            let times = &mut times[at];
            times.sort_by(f64::total_cmp);
            let rate = |secs: f64| bytes as f64 / secs / 1e6;
            println!(
                "{which}: {:.1} MB/s best, {:.1} MB/s median ({:.2} ms), {} bytes",
                rate(times[0]),
                rate(times[times.len() / 2]),
                times[times.len() / 2] * 1e3,
                bytes
            );
        }
        return;
    }
    if let Ok(which) = std::env::var("READ_PRINT_ONLY") {
        let text = generated_grammar(5_000);
        let grammar = gbnf::read(&text).expect("the generated grammar reads");
        run_once(&which, &text, &grammar);
        for _ in 0..env_number("READ_PRINT_REPS").unwrap_or(1) {
            run_once(&which, &text, &grammar);
        }
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
