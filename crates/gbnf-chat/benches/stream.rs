//! Streaming cost: an 8,000-token output (about 4 bytes per token) fed token by token to a
//! `ChatStream`, against one parse of the whole output; and how the cost grows with the
//! output for many calls and for long arguments (a stream that mapped the whole parse again
//! after each token would grow with the square of the output).

use criterion::{criterion_group, criterion_main, Criterion};
use gbnf_chat::{native_parser, parse_message, ChatStream, NativeOptions, Tool};
use serde_json::json;

fn output() -> String {
    let mut out = String::from("<think>");
    while out.len() < 12_000 {
        out.push_str("Let me think about the weather. ");
    }
    out.push_str("</think>\n");
    while out.len() < 28_000 {
        out.push_str("Here is some content for you. ");
    }
    out.push_str("<tool_call>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"");
    while out.len() < 32_000 {
        out.push_str("Paris ");
    }
    out.push_str("\"}}]</tool_call>");
    out
}

fn bench(c: &mut Criterion) {
    let options = NativeOptions {
        tools: Tool::from_openai(
            &json!([{"type": "function", "function": {"name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]),
        ),
        extract_reasoning: true,
        ..NativeOptions::default()
    };
    let arena = match native_parser(&options) {
        Ok(arena) => arena,
        Err(error) => panic!("{error}"),
    };
    let output = output();
    let tokens: Vec<&[u8]> = output.as_bytes().chunks(4).collect();
    c.bench_function("chat: whole output (32 KB)", |b| {
        b.iter(|| parse_message(&arena, &output).is_ok())
    });
    c.bench_function("peg only: streamed token by token (8,000 tokens)", |b| {
        b.iter(|| {
            let mut parser = gbnf_peg::StreamParser::new(&arena);
            for token in &tokens {
                let _ = parser.feed(token);
            }
            parser.finish()
        })
    });
    c.bench_function(
        "peg with its AST: streamed token by token (8,000 tokens)",
        |b| {
            b.iter(|| {
                let mut parser = gbnf_peg::StreamParser::new(&arena);
                let mut n_nodes = 0;
                for token in &tokens {
                    let _ = parser.feed(token);
                    n_nodes += parser.ast().roots().len();
                }
                n_nodes
            })
        },
    );
    c.bench_function("chat: streamed token by token (8,000 tokens)", |b| {
        b.iter(|| {
            let mut stream = ChatStream::new(&arena);
            for token in &tokens {
                let _ = stream.feed_bytes(token);
            }
            stream.finish().is_ok()
        })
    });
}

/// `calls` parallel calls in one section.
fn many_calls(calls: usize) -> String {
    let mut out = String::from("<think>Plan.</think>\nChecking.<tool_call>[");
    for i in 0..calls {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&format!(
            "{{\"name\": \"get_weather\", \"arguments\": {{\"city\": \"Paris {i}\", \"days\": {i}}}}}"
        ));
    }
    out.push_str("]</tool_call>");
    out
}

/// One call whose arguments hold an array of `items` numbers.
fn long_arguments(items: usize) -> String {
    let mut out = String::from(
        "Sure.<tool_call>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": [",
    );
    for i in 0..items {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&(i % 97).to_string());
    }
    out.push_str("]}}]</tool_call>");
    out
}

/// One call with a string argument of `lines` lines (about 21 bytes each): a file written
/// through a tool.
fn long_string(lines: usize) -> String {
    let mut out = String::from(
        "Sure.<tool_call>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": \"",
    );
    for i in 0..lines {
        out.push_str(&format!("line {} of the file\\n", i % 97));
    }
    out.push_str("\"}}]</tool_call>");
    out
}

fn growth(c: &mut Criterion) {
    let options = NativeOptions {
        tools: Tool::from_openai(
            &json!([{"type": "function", "function": {"name": "get_weather",
            "parameters": {"type": "object", "properties": {
                "city": {"type": "string"}, "days": {}}}}}]),
        ),
        parallel_tool_calls: true,
        ..NativeOptions::default()
    };
    let arena = match native_parser(&options) {
        Ok(arena) => arena,
        Err(error) => panic!("{error}"),
    };
    let outputs = [
        ("many calls: 50", many_calls(50)),
        ("many calls: 200", many_calls(200)),
        ("long arguments: 1,000 items", long_arguments(1_000)),
        ("long arguments: 4,000 items", long_arguments(4_000)),
        ("long string: 1,000 lines", long_string(1_000)),
        ("long string: 4,000 lines", long_string(4_000)),
    ];
    for (name, output) in outputs {
        let tokens: Vec<&[u8]> = output.as_bytes().chunks(4).collect();
        c.bench_function(
            &format!("chat growth, {name}: streamed token by token"),
            |b| {
                b.iter(|| {
                    let mut stream = ChatStream::new(&arena);
                    for token in &tokens {
                        let _ = stream.feed_bytes(token);
                    }
                    stream.finish().map(|last| last.message.tool_calls.len())
                })
            },
        );
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench, growth
}
criterion_main!(benches);
