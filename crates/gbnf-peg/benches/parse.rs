//! Throughput of the PEG runtime on a native tool-call parser: complete parses of a 1 MB
//! transcript, and 8,000-token streams fed token by token against one complete parse (half
//! prose and 130 short calls; and four calls with 8 KB arguments each).
//!
//! Instruction counts, steadier than the wall clock on a shared machine:
//! `PARSE_ONLY=stream` (or `complete`) skips criterion and runs one of them `PARSE_REPS`
//! times (default 1) after one warm-up run; `PARSE_LONG=1` takes the long-arguments
//! transcript, `PARSE_PROSE=1` only its prose (up to the first call), `PARSE_CALLS=1` only
//! its calls (from the first call on), and `PARSE_ROTATE=N`
//! (below) N variants of it in turn. Under
//! `valgrind --tool=callgrind --toggle-collect='parse::run_once'`, the
//! difference between 3 and 1 repetitions, halved, is one run in the steady state. With
//! `PARSE_REUSE=1` the streams run on one `StreamParser`, reset before each, as a server
//! that parses output after output on a thread would: with glibc's malloc, a new stream each
//! time may fault its memory in again (`perf stat -e page-faults`).
//!
//! The wall-clock ratio: `PARSE_RATIO=N` (e.g. 400) skips criterion, alternates one complete
//! parse and one stream N times for each transcript, and prints the medians and their ratio,
//! also for the call-dense transcript's prose alone (its first 16 KB, before the first call)
//! and its calls alone (the rest).
//! Alternating keeps both under the same conditions on a shared machine. `PARSE_REUSE=1`
//! applies there too: the streams run on one parser, reset before each. `PARSE_ROTATE=N`
//! takes N variants of each transcript in turn instead of the same one every time, each read
//! into the cache before its run, outside the timing: repeated, one 32 KB input lets the
//! branch predictor learn the parse (a complete parse of the long-arguments transcript ~38
//! us, against ~88 us on one it has not just seen), and so do 8 inputs in turn; 32 or more do
//! not (the criterion benches `-fresh-outputs` take 64).

use criterion::{criterion_group, BatchSize, BenchmarkId, Criterion, Throughput};
use gbnf_peg::{parse, Options, StreamParser};

#[path = "../tests/support/tool_call.rs"]
mod tool_call;
use tool_call::tool_call_parser;

struct Rng(u64);

impl Rng {
    fn next(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

const WORDS: &[&str] = &[
    "the",
    "weather",
    "in",
    "Paris",
    "is",
    "sunny",
    "and",
    "I",
    "will",
    "check",
    "a <b>",
    "résumé",
    "你好",
    "tool",
    "call",
    "x < y",
    "arguments",
    "\n\n",
    "calls",
    "1.5",
    "🚀",
];

fn content(rng: &mut Rng, bytes: usize) -> String {
    let mut out = String::new();
    while out.len() < bytes {
        out.push_str(WORDS[rng.next(WORDS.len())]);
        out.push(' ');
    }
    out
}

fn json(rng: &mut Rng, depth: usize, out: &mut String) {
    match if depth > 2 { rng.next(4) } else { rng.next(6) } {
        0 => out.push_str(&format!("{}", rng.next(100_000) as i64 - 50_000)),
        1 => out.push_str(&format!(
            "\"{}\\n{}\"",
            WORDS[rng.next(WORDS.len())].replace('\n', "\\n"),
            rng.next(1000)
        )),
        2 => out.push_str(["true", "false", "null", "-0.25e3"][rng.next(4)]),
        3 => out.push_str(&format!("{}.{}", rng.next(100), rng.next(100))),
        4 => {
            out.push('[');
            for i in 0..rng.next(5) {
                if i > 0 {
                    out.push_str(", ");
                }
                json(rng, depth + 1, out);
            }
            out.push(']');
        }
        _ => {
            out.push('{');
            for i in 0..rng.next(6) {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&format!("\"key_{i}\": "));
                json(rng, depth + 1, out);
            }
            out.push('}');
        }
    }
}

/// The generator for the transcript numbered `seed` (0: the one the criterion benches use).
fn rng(seed: u64) -> Rng {
    Rng(0x9E37_79B9_7F4A_7C15 ^ seed.wrapping_mul(0x2545_F491_4F6C_DD1D))
}

/// About `content_bytes` of prose, then tool calls until the transcript has `total` bytes.
fn transcript(seed: u64, content_bytes: usize, total: usize) -> String {
    let mut rng = rng(seed);
    let mut out = content(&mut rng, content_bytes);
    while out.len() < total {
        out.push_str("<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"data\": ");
        json(&mut rng, 0, &mut out);
        out.push_str("}}</tool_call>");
    }
    out
}

/// About `content_bytes` of prose, then calls whose arguments hold an array of about
/// `per_call` bytes of values, until the transcript has `total` bytes.
fn transcript_long(seed: u64, content_bytes: usize, total: usize, per_call: usize) -> String {
    let mut rng = rng(seed);
    let mut out = content(&mut rng, content_bytes);
    while out.len() < total {
        out.push_str(
            "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"data\": [",
        );
        let start = out.len();
        while out.len() - start < per_call {
            if out.len() > start {
                out.push_str(", ");
            }
            json(&mut rng, 0, &mut out);
        }
        out.push_str("]}}</tool_call>");
    }
    out
}

fn complete(c: &mut Criterion) {
    let arena = tool_call_parser();
    let mut group = c.benchmark_group("complete");
    group.sample_size(20);
    for (name, text) in [
        ("mixed-1MB", transcript(0, 512 << 10, 1 << 20)),
        ("content-1MB", transcript(0, 1 << 20, 0)),
        ("calls-1MB", transcript(0, 0, 1 << 20)),
    ] {
        assert_eq!(
            parse(&arena, &text, &Options::default()).outcome,
            gbnf_peg::Outcome::Match
        );
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), &text, |b, text| {
            b.iter(|| parse(&arena, text, &Options::default()))
        });
    }
    group.finish();
}

/// The two streaming transcripts: (name, text), the variant numbered `seed` of each.
fn stream_transcripts(seed: u64) -> [(&'static str, String); 2] {
    [
        ("stream-8000-tokens", transcript(seed, 16_000, 32_000)),
        (
            "stream-8000-tokens-long-arguments",
            transcript_long(seed, 2_000, 32_000, 8_000),
        ),
    ]
}

/// Variants of each streaming transcript that the `-fresh-outputs` benches take in turn: enough
/// that the branch predictor cannot learn them. (With 8, the call-dense complete parse ran in
/// 33 us, ~39 us with 32 or more: `PERFORMANCE.md`, session 26.)
const VARIANTS: u64 = 64;

/// Reads an output's tokens, then its text, so that they are in the cache when it is parsed,
/// as an output a server has just generated is (64 variants of them are not); the text last,
/// nearest.
fn warm(text: &str, tokens: &[&[u8]]) {
    let lengths = tokens.iter().map(|token| token.len()).sum::<usize>();
    let bytes = text.as_bytes().iter().map(|&b| b as usize).sum::<usize>();
    std::hint::black_box(bytes + lengths);
}

fn streaming(c: &mut Criterion) {
    let arena = tool_call_parser();
    let sets: Vec<[(&str, String); 2]> = (0..VARIANTS).map(stream_transcripts).collect();
    for shape in 0..2 {
        let name = sets[0][shape].0;
        let texts: Vec<&str> = sets.iter().map(|set| &set[shape].1[..]).collect();
        // 8,000 tokens of about 4 bytes.
        let tokens: Vec<Vec<&[u8]>> = texts
            .iter()
            .map(|text| text.as_bytes().chunks(4).collect())
            .collect();
        let mut group = c.benchmark_group(name);
        group.sample_size(20);
        // The same output every time, as the earlier sessions measured it.
        group.bench_function("complete-parse", |b| {
            b.iter(|| parse(&arena, texts[0], &Options::default()))
        });
        group.bench_function("fed-token-by-token", |b| {
            b.iter(|| stream(&arena, &tokens[0]))
        });
        // A different output each time, as a server sees them (repeated, one output lets the
        // branch predictor learn the parse), read into the cache first, outside the timing.
        let mut k = 0;
        let mut next = || {
            k = (k + 1) % texts.len();
            warm(texts[k], &tokens[k]);
            k
        };
        group.bench_function("complete-parse-fresh-outputs", |b| {
            b.iter_batched(
                &mut next,
                // (The result is dropped inside the timing, as `iter` drops it.)
                |k| parse(&arena, texts[k], &Options::default()).outcome,
                BatchSize::PerIteration,
            )
        });
        group.bench_function("fed-token-by-token-fresh-outputs", |b| {
            b.iter_batched(
                &mut next,
                |k| stream(&arena, &tokens[k]),
                BatchSize::PerIteration,
            )
        });
        group.finish();
    }
}

fn stream(arena: &gbnf_peg::Arena, tokens: &[&[u8]]) -> gbnf_peg::Status {
    feed_all(&mut StreamParser::new(arena), tokens)
}

fn feed_all(stream: &mut StreamParser, tokens: &[&[u8]]) -> gbnf_peg::Status {
    for token in tokens {
        std::hint::black_box(stream.feed(token));
    }
    stream.finish()
}

/// One complete parse or one stream (`PARSE_ONLY`), for a profiler; the stream on `reused`
/// after a reset, if given.
#[inline(never)]
fn run_once(
    arena: &gbnf_peg::Arena,
    text: &str,
    tokens: &[&[u8]],
    streamed: bool,
    reused: Option<&mut StreamParser>,
) {
    if let (true, Some(reused)) = (streamed, reused) {
        reused.reset();
        std::hint::black_box(feed_all(reused, tokens));
    } else if streamed {
        std::hint::black_box(stream(arena, tokens));
    } else {
        std::hint::black_box(parse(arena, text, &Options::default()));
    }
}

criterion_group!(benches, complete, streaming);

/// Medians of `runs` alternated timings of a complete parse and a stream in 4-byte tokens, in
/// microseconds, the `k`th of each on `texts[k % texts.len()]` (one text: the same input
/// every time).
/// With `reused`, the streams run on it, reset before each (`PARSE_REUSE`).
fn alternated(
    arena: &gbnf_peg::Arena,
    texts: &[&str],
    runs: usize,
    mut reused: Option<&mut StreamParser>,
) -> (f64, f64) {
    let tokens: Vec<Vec<&[u8]>> = texts
        .iter()
        .map(|text| text.as_bytes().chunks(4).collect())
        .collect();
    let (mut complete, mut streamed) = (Vec::new(), Vec::new());
    for k in 0..runs.max(1) {
        let (text, tokens) = (texts[k % texts.len()], &tokens[k % texts.len()]);
        warm(text, tokens);
        let started = std::time::Instant::now();
        std::hint::black_box(parse(arena, text, &Options::default()));
        complete.push(started.elapsed().as_secs_f64() * 1e6);
        warm(text, tokens);
        let started = std::time::Instant::now();
        match reused.as_deref_mut() {
            Some(reused) => {
                reused.reset();
                std::hint::black_box(feed_all(reused, tokens));
            }
            None => {
                std::hint::black_box(stream(arena, tokens));
            }
        }
        streamed.push(started.elapsed().as_secs_f64() * 1e6);
    }
    let median = |times: &mut Vec<f64>| {
        times.sort_by(f64::total_cmp);
        times[times.len() / 2]
    };
    (median(&mut complete), median(&mut streamed))
}

/// Runs the bench again with glibc's malloc told not to give the heap's top back to the
/// system between runs, nor to map larger vectors afresh each time (`GLIBC_TUNABLES`, read
/// only at start-up), as in a long-running server whose heap stays warm. Otherwise
/// whichever of two alternated runs grows the heap again first pays for faulting its pages
/// in (~10 us a run here), and which one that is depends on the heap's layout: holding 32 KB
/// more across the complete parse moved that cost from the stream to the complete parse
/// (`PERFORMANCE.md`, session 25). `PARSE_RAW_HEAP=1`, or `GLIBC_TUNABLES` already set,
/// runs as it is.
fn steady_heap() {
    const TUNABLES: &str =
        "glibc.malloc.trim_threshold=268435456:glibc.malloc.mmap_threshold=16777216";
    if !cfg!(all(target_os = "linux", target_env = "gnu"))
        || std::env::var_os("PARSE_RAW_HEAP").is_some()
        || std::env::var_os("GLIBC_TUNABLES").is_some()
    {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let status = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env("GLIBC_TUNABLES", TUNABLES)
        .status();
    if let Ok(status) = status {
        std::process::exit(status.code().unwrap_or(1));
    }
}

fn main() {
    steady_heap();
    if let Some(runs) = std::env::var("PARSE_RATIO")
        .ok()
        .and_then(|runs| runs.parse::<usize>().ok())
    {
        let arena = tool_call_parser();
        // `PARSE_ROTATE=N`: N transcripts of each shape (the generator's variants 0..N), one
        // after the other, so that no run sees the input the one before it saw.
        let variants: u64 = std::env::var("PARSE_ROTATE")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(1)
            .max(1);
        let sets: Vec<[(&str, String); 2]> = (0..variants).map(stream_transcripts).collect();
        let prose: Vec<String> = sets
            .iter()
            .map(|[short, _]| {
                let text = &short.1;
                text[..text.find("<tool_call>").unwrap_or(text.len())].to_owned()
            })
            .collect();
        // The rest of it: its calls alone.
        let calls: Vec<&str> = sets
            .iter()
            .map(|[short, _]| &short.1[short.1.find("<tool_call>").unwrap_or(0)..])
            .collect();
        let shapes: [(&str, Vec<&str>); 4] = [
            (sets[0][0].0, sets.iter().map(|set| &set[0].1[..]).collect()),
            (sets[0][1].0, sets.iter().map(|set| &set[1].1[..]).collect()),
            ("prose", prose.iter().map(|text| &text[..]).collect()),
            ("calls", calls),
        ];
        for (name, texts) in shapes {
            let mut reused = std::env::var_os("PARSE_REUSE")
                .is_some()
                .then(|| StreamParser::new(&arena));
            let (complete, streamed) = alternated(&arena, &texts, runs, reused.as_mut());
            println!(
                "{name}: complete {complete:.1} us, fed token by token {streamed:.1} us, ratio {:.2}",
                streamed / complete
            );
        }
        return;
    }
    if let Ok(mode) = std::env::var("PARSE_ONLY") {
        let arena = tool_call_parser();
        // `PARSE_ROTATE=N`: the runs take N variants of the transcript in turn.
        let variants: u64 = std::env::var("PARSE_ROTATE")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(1)
            .max(1);
        let texts: Vec<String> = (0..variants)
            .map(|seed| {
                let [short, long] = stream_transcripts(seed);
                let mut text = if std::env::var_os("PARSE_LONG").is_some() {
                    long.1
                } else {
                    short.1
                };
                if std::env::var_os("PARSE_PROSE").is_some() {
                    text.truncate(text.find("<tool_call>").unwrap_or(text.len()));
                } else if std::env::var_os("PARSE_CALLS").is_some() {
                    text.drain(..text.find("<tool_call>").unwrap_or(0));
                }
                text
            })
            .collect();
        let tokens: Vec<Vec<&[u8]>> = texts
            .iter()
            .map(|text| text.as_bytes().chunks(4).collect())
            .collect();
        let reps: usize = std::env::var("PARSE_REPS")
            .ok()
            .and_then(|reps| reps.parse().ok())
            .unwrap_or(1);
        let streamed = mode == "stream";
        // Warm-up: the allocations a repeated run reuses.
        std::hint::black_box(if streamed {
            stream(&arena, &tokens[0])
        } else {
            let result = parse(&arena, &texts[0], &Options::default());
            gbnf_peg::Status {
                outcome: result.outcome,
                end: result.end,
            }
        });
        let mut reused = std::env::var_os("PARSE_REUSE")
            .is_some()
            .then(|| StreamParser::new(&arena));
        for rep in 0..reps {
            let k = rep % texts.len();
            warm(&texts[k], &tokens[k]);
            run_once(&arena, &texts[k], &tokens[k], streamed, reused.as_mut());
        }
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
