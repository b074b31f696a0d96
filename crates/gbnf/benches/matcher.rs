//! Benchmarks of the matcher: llama.cpp's JSON grammar (`grammars/json.gbnf`, with `value`
//! as the start rule) over a generated 1 MB JSON document, one-shot and streaming.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use gbnf::{CharClass, Expr, Grammar, Matcher, RuleName, Verdict};

/// The allocator of the `gbnf` CLI (whose `match` runs this matcher); build with
/// `RUSTFLAGS="--cfg system_alloc"` to measure with the system allocator instead.
#[cfg(not(system_alloc))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn name(text: &str) -> RuleName {
    RuleName::new(text).expect("valid rule name")
}

fn rule(text: &str) -> Expr {
    Expr::rule(&name(text))
}

fn lit(text: &str) -> Expr {
    Expr::literal(text)
}

fn class(ranges: &[(char, char)], negated: bool) -> Expr {
    Expr::class(CharClass::new(ranges.iter().copied(), negated))
}

/// llama.cpp's `grammars/json.gbnf`, written as IR.
fn json_grammar() -> Grammar {
    let mut grammar = Grammar::new();
    let ws = || rule("ws");
    grammar.insert(name("root"), rule("object"));
    grammar.insert(
        name("value"),
        Expr::alt([
            rule("object"),
            rule("array"),
            rule("string"),
            rule("number"),
            Expr::seq([Expr::alt([lit("true"), lit("false"), lit("null")]), ws()]),
        ]),
    );
    let member = || Expr::seq([rule("string"), lit(":"), ws(), rule("value")]);
    grammar.insert(
        name("object"),
        Expr::seq([
            lit("{"),
            ws(),
            Expr::optional(Expr::seq([
                member(),
                Expr::star(Expr::seq([lit(","), ws(), member()])),
            ])),
            lit("}"),
            ws(),
        ]),
    );
    grammar.insert(
        name("array"),
        Expr::seq([
            lit("["),
            ws(),
            Expr::optional(Expr::seq([
                rule("value"),
                Expr::star(Expr::seq([lit(","), ws(), rule("value")])),
            ])),
            lit("]"),
            ws(),
        ]),
    );
    let hex = class(&[('0', '9'), ('a', 'f'), ('A', 'F')], false);
    grammar.insert(
        name("string"),
        Expr::seq([
            lit("\""),
            Expr::star(Expr::alt([
                class(
                    &[('"', '"'), ('\\', '\\'), ('\x7F', '\x7F'), ('\0', '\x1F')],
                    true,
                ),
                Expr::seq([
                    lit("\\"),
                    Expr::alt([
                        class(
                            &[
                                ('"', '"'),
                                ('\\', '\\'),
                                ('b', 'b'),
                                ('f', 'f'),
                                ('n', 'n'),
                                ('r', 'r'),
                                ('t', 't'),
                            ],
                            false,
                        ),
                        Expr::seq([lit("u"), Expr::repeat(hex, 4, Some(4))]),
                    ]),
                ]),
            ])),
            lit("\""),
            ws(),
        ]),
    );
    let digit = || class(&[('0', '9')], false);
    grammar.insert(
        name("number"),
        Expr::seq([
            Expr::optional(lit("-")),
            Expr::alt([
                digit(),
                Expr::seq([
                    class(&[('1', '9')], false),
                    Expr::repeat(digit(), 0, Some(15)),
                ]),
            ]),
            Expr::optional(Expr::seq([lit("."), Expr::plus(digit())])),
            Expr::optional(Expr::seq([
                class(&[('e', 'e'), ('E', 'E')], false),
                Expr::optional(class(&[('-', '-'), ('+', '+')], false)),
                digit(),
                Expr::repeat(class(&[('1', '7')], false), 0, Some(15)),
            ])),
            ws(),
        ]),
    );
    grammar.insert(
        name("ws"),
        Expr::alt([
            Expr::Empty,
            lit(" "),
            Expr::seq([
                lit("\n"),
                Expr::repeat(class(&[(' ', ' '), ('\t', '\t')], false), 0, Some(20)),
            ]),
        ]),
    );
    grammar
}

/// A deterministic pseudo-random JSON document of about `size` bytes that `json_grammar`
/// accepts from `value`: nested objects and arrays, strings with escapes and non-ASCII
/// text, numbers, literals, and the grammar's whitespace.
fn json_document(size: usize) -> String {
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let words = [
        "alpha",
        "beta",
        "gamma",
        "Zoë",
        "naïve café",
        "😀 ok",
        "x\\ny",
        "\\u00e9t\\u00E9",
        "quote \\\" here",
        "tab\\tend",
    ];
    let mut out = String::from("[");
    let mut first_item = true;
    while out.len() < size {
        if !first_item {
            out.push_str(if next(3) == 0 { ",\n  " } else { ", " });
        }
        first_item = false;
        out.push_str("{\"id\": ");
        out.push_str(&next(1_000_000).to_string());
        out.push_str(", \"name\": \"");
        for _ in 0..1 + next(4) {
            out.push_str(words[next(words.len() as u64) as usize]);
            out.push(' ');
        }
        out.push_str("\", \"score\": -");
        out.push_str(&format!("{}.{}e1{}", next(1000), next(100), 1 + next(7)));
        out.push_str(", \"tags\": [");
        for i in 0..next(5) {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&format!("\"t{}\"", next(50)));
        }
        out.push_str("], \"ok\": ");
        out.push_str(["true", "false", "null"][next(3) as usize]);
        out.push_str(", \"nested\": {\"a\": [[1, 2], {\"b\": \"c\"}], \"d\": {}}}");
    }
    out.push(']');
    out
}

fn bench_json(c: &mut Criterion) {
    let grammar = json_grammar();
    let matcher = Matcher::new(&grammar, "value").expect("the JSON grammar compiles");
    let document = json_document(1 << 20);
    if let Verdict::Reject { offset } = matcher.verdict(&document) {
        panic!(
            "rejected at {offset}: {:?}",
            &document[offset.saturating_sub(40)..offset + 1]
        );
    }
    assert_eq!(matcher.verdict(&document), Verdict::Accept);
    let mut group = c.benchmark_group("json");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(document.len() as u64));
    group.bench_function("verdict-1MB", |b| b.iter(|| matcher.verdict(&document)));
    group.bench_function("stream-1MB", |b| {
        b.iter(|| {
            let mut state = matcher.start();
            for ch in document.chars() {
                state.advance(ch);
            }
            state.is_accepting()
        })
    });
    group.finish();
}

fn bench_ambiguous(c: &mut Criterion) {
    let mut grammar = Grammar::new();
    let optionals = (0..50).map(|_| Expr::optional(lit("a")));
    grammar.insert(
        name("root"),
        Expr::star(Expr::seq(optionals.chain([lit("b")]))),
    );
    let matcher = Matcher::new(&grammar, "root").expect("compiles");
    let input = "a".repeat(25).repeat(2) + "b";
    let input = input.repeat(200);
    let mut group = c.benchmark_group("ambiguous");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(input.len() as u64));
    group.bench_function("optional-a-x50", |b| b.iter(|| matcher.verdict(&input)));
    group.finish();
}

criterion_group!(benches, bench_json, bench_ambiguous);
criterion_main!(benches);
