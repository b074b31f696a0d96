//! Throughput of the PEG runtime on a native tool-call parser: complete parses of a 1 MB
//! transcript, and an 8,000-token stream fed token by token against one complete parse.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
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

/// About `content_bytes` of prose, then tool calls until the transcript has `total` bytes.
fn transcript(content_bytes: usize, total: usize) -> String {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut out = content(&mut rng, content_bytes);
    while out.len() < total {
        out.push_str("<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"data\": ");
        json(&mut rng, 0, &mut out);
        out.push_str("}}</tool_call>");
    }
    out
}

fn complete(c: &mut Criterion) {
    let arena = tool_call_parser();
    let mut group = c.benchmark_group("complete");
    group.sample_size(20);
    for (name, text) in [
        ("mixed-1MB", transcript(512 << 10, 1 << 20)),
        ("content-1MB", transcript(1 << 20, 0)),
        ("calls-1MB", transcript(0, 1 << 20)),
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

fn streaming(c: &mut Criterion) {
    let arena = tool_call_parser();
    // 8,000 tokens of about 4 bytes: half prose, half tool calls.
    let text = transcript(16_000, 32_000);
    let tokens: Vec<&[u8]> = text.as_bytes().chunks(4).collect();
    let mut group = c.benchmark_group("stream-8000-tokens");
    group.sample_size(20);
    group.bench_function("complete-parse", |b| {
        b.iter(|| parse(&arena, &text, &Options::default()))
    });
    group.bench_function("fed-token-by-token", |b| {
        b.iter(|| {
            let mut stream = StreamParser::new(&arena);
            for token in &tokens {
                stream.feed(token);
            }
            stream.finish()
        })
    });
    group.finish();
}

criterion_group!(benches, complete, streaming);
criterion_main!(benches);
