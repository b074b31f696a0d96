//! Streaming never takes back what it emitted: for generated outputs of the native and the
//! constructed shapes, cut into random chunks, every chunk parses (no `NoMatch`), the
//! deltas concatenate to the final message, and the final message equals the one from
//! parsing the whole output at once.
//!
//! Every update is also checked against the definition it shortcuts ([`Reference`]): the
//! whole parse so far mapped again, and its difference from what was emitted before.

use gbnf_chat::builders::{
    content, reasoning, standard_constructed_tools, standard_json_tools, ConstructedMarkers,
    JsonToolsOptions, Tool,
};
use gbnf_chat::{map_ast, parse_message, ChatStream, Error, Message, MessageDelta, Update};
use gbnf_peg::{Arena, Builder, NodeId, Outcome, StreamParser};
use proptest::prelude::*;
use serde_json::json;

fn tools() -> Vec<Tool> {
    Tool::from_openai(&json!([
        {"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"]}}},
        {"type": "function", "function": {"name": "get", "parameters": {
            "type": "object", "properties": {"key": {"type": "string"}}}}}
    ]))
}

fn thinking(p: &mut Builder) -> NodeId {
    let open = p.literal("<think>");
    let body = p.until("</think>");
    let body = reasoning(p, body);
    let close = p.literal("</think>");
    let ws = p.space();
    let block = p.seq([open, body, close, ws]);
    p.optional(block)
}

fn native_arena() -> Arena {
    let mut p = Builder::new();
    let think = thinking(&mut p);
    let text = p.until("<tool_call>");
    let text = content(&mut p, text);
    let options = JsonToolsOptions {
        parallel: true,
        ..JsonToolsOptions::default()
    };
    let calls = standard_json_tools(&mut p, &tools(), &options);
    let end = p.end();
    let root = p.seq([think, text, calls, end]);
    p.set_root(root);
    p.build().unwrap_or_else(|error| panic!("{error}"))
}

fn constructed_arena() -> Arena {
    let mut p = Builder::new();
    let think = thinking(&mut p);
    let text = p.until("<tool_call>");
    let text = content(&mut p, text);
    let calls = standard_constructed_tools(
        &mut p,
        &tools(),
        &ConstructedMarkers::default(),
        true,
        false,
    );
    let end = p.end();
    let root = p.seq([think, text, calls, end]);
    p.set_root(root);
    p.build().unwrap_or_else(|error| panic!("{error}"))
}

/// Text without the markers the parsers look for.
fn plain_text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 ,.!?\n<>/\"'{}é😀]{0,30}".prop_filter("no markers", |text| {
        !["<think>", "</think>", "<tool_call>", "</"]
            .iter()
            .any(|marker| text.contains(marker))
    })
}

fn string_value() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 ,.é]{0,12}"
}

/// A native output: optional reasoning, content, optional calls.
fn native_output() -> impl Strategy<Value = String> {
    let call = (prop::bool::ANY, string_value(), 0u32..1000).prop_map(|(weather, text, days)| {
        if weather {
            format!(
                "{{\"name\": \"get_weather\", \"arguments\": {{\"city\": {}, \"days\": {days}}}}}",
                serde_json::Value::String(text)
            )
        } else {
            format!(
                "{{\"name\":\"get\",\"arguments\":{{\"key\":{}}}}}",
                serde_json::Value::String(text)
            )
        }
    });
    (
        prop::option::of(plain_text()),
        plain_text(),
        prop::collection::vec(call, 0..3),
    )
        .prop_map(|(think, text, calls)| {
            let mut out = String::new();
            if let Some(think) = think {
                out.push_str(&format!("<think>{think}</think>\n"));
            }
            out.push_str(&text);
            if !calls.is_empty() {
                out.push_str(&format!("<tool_call>{}</tool_call>", calls.join(", ")));
            }
            out
        })
}

/// A constructed output (XML parameters).
fn constructed_output() -> impl Strategy<Value = String> {
    let call = (prop::bool::ANY, string_value(), 0u32..1000).prop_map(|(weather, text, days)| {
        if weather {
            format!("<function=get_weather>\n<param=city>{text}</param>\n<param=days>{days}</param>\n</function>")
        } else {
            format!("<function=get><param=key>{text}</param></function>")
        }
    });
    (plain_text(), prop::collection::vec(call, 0..3)).prop_map(|(text, calls)| {
        let mut out = text;
        if !calls.is_empty() {
            out.push_str(&format!("<tool_call>\n{}\n</tool_call>", calls.join("\n")));
        }
        out
    })
}

/// Cuts `output` at the given fractions (on byte offsets, so code points may split).
fn chunks(output: &str, cuts: &[usize]) -> Vec<Vec<u8>> {
    let bytes = output.as_bytes();
    let mut offsets: Vec<usize> = cuts.iter().map(|cut| cut % (bytes.len() + 1)).collect();
    offsets.push(0);
    offsets.push(bytes.len());
    offsets.sort_unstable();
    offsets.dedup();
    offsets
        .windows(2)
        .map(|pair| bytes[pair[0]..pair[1]].to_vec())
        .collect()
}

/// Whether `output` ends inside a possible `<tool_call>`: as in llama.cpp, such an output is
/// not complete (the content stops before the partial marker, and nothing may follow).
fn ends_in_partial_marker(output: &str) -> bool {
    let marker = "<tool_call>";
    (1..marker.len()).any(|len| output.ends_with(&marker[..len]))
}

/// What a streamed update must be, worked out the slow way: after each chunk, the whole
/// parse so far is mapped again, and the update is its difference from the message emitted
/// before (nothing, held back, if it would take text back).
struct Reference<'a> {
    arena: &'a Arena,
    parser: StreamParser<'a>,
    emitted: Message,
}

impl<'a> Reference<'a> {
    fn new(arena: &'a Arena) -> Reference<'a> {
        Reference {
            arena,
            parser: StreamParser::new(arena),
            emitted: Message::default(),
        }
    }

    /// The message, the delta and whether it held back; `None` for `NoMatch`.
    fn feed(&mut self, chunk: &[u8]) -> Option<(Message, MessageDelta, bool)> {
        if self.parser.feed(chunk).outcome == Outcome::NoMatch {
            return None;
        }
        let ast = self.parser.ast().clone();
        let message = map_ast(self.arena, &ast, self.parser.input());
        Some(match message.delta_from(&self.emitted) {
            Some(delta) => {
                self.emitted = message;
                (self.emitted.clone(), delta, false)
            }
            None => (self.emitted.clone(), MessageDelta::default(), true),
        })
    }
}

/// Feeds `chunks` to a `ChatStream` and to the [`Reference`], which must agree on every
/// update; returns the stream.
fn agree_with_reference<'a>(
    arena: &'a Arena,
    output: &str,
    chunks: &[Vec<u8>],
) -> Result<ChatStream<'a>, TestCaseError> {
    let mut stream = ChatStream::new(arena);
    let mut reference = Reference::new(arena);
    for chunk in chunks {
        let update = stream.feed_bytes(chunk);
        let expected = reference.feed(chunk);
        match (update, expected) {
            (Ok(update), Some((message, delta, held_back))) => {
                prop_assert_eq!(update.message, &message, "{:?} after {:?}", output, chunk);
                prop_assert_eq!(&update.delta, &delta, "{:?} after {:?}", output, chunk);
                prop_assert_eq!(update.held_back, held_back, "{:?}", output);
            }
            (Err(_), None) => break,
            (update, expected) => {
                return Err(TestCaseError::fail(format!(
                    "{output:?} after {chunk:?}: {update:?} but the reference gives {expected:?}"
                )))
            }
        }
    }
    Ok(stream)
}

fn check_stream(arena: &Arena, output: &str, cuts: &[usize]) -> Result<(), TestCaseError> {
    prop_assume!(!ends_in_partial_marker(output));
    let whole = parse_message(arena, output)
        .map_err(|error| TestCaseError::fail(format!("{output:?}: {error}")))?;
    agree_with_reference(arena, output, &chunks(output, cuts))?;
    let mut stream = ChatStream::new(arena);
    let mut rebuilt = Message::default();
    for chunk in chunks(output, cuts) {
        let update = stream
            .feed_bytes(&chunk)
            .map_err(|error| TestCaseError::fail(format!("{output:?}: {error}")))?;
        prop_assert!(
            !update.held_back,
            "{:?}: held back at {:?}",
            output,
            update.message
        );
        rebuilt.apply(&update.delta);
        prop_assert_eq!(&rebuilt, update.message);
    }
    let last = stream
        .finish()
        .map_err(|error| TestCaseError::fail(format!("{output:?}: {error}")))?;
    rebuilt.apply(&last.delta);
    prop_assert_eq!(&rebuilt, &whole, "{:?}", output);
    for call in &whole.tool_calls {
        let arguments: Result<serde_json::Value, _> = serde_json::from_str(&call.arguments);
        prop_assert!(
            arguments.is_ok(),
            "arguments are not JSON: {}",
            call.arguments
        );
    }
    Ok(())
}

/// An update as owned values, so that two streams' updates can be compared.
type OwnedUpdate = Result<(Message, MessageDelta, bool), Error>;

fn owned(update: Result<Update<'_>, Error>) -> OwnedUpdate {
    update.map(|update| (update.message.clone(), update.delta, update.held_back))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn native_streams_concatenate_to_the_final_message(
        output in native_output(),
        cuts in prop::collection::vec(0usize..10_000, 0..40),
    ) {
        check_stream(&native_arena(), &output, &cuts)?;
    }

    /// A stream reset after another output (stopped anywhere) gives the next output's
    /// updates exactly as a new stream does.
    #[test]
    fn a_reset_stream_is_a_new_stream(
        before in native_output(),
        cut in any::<prop::sample::Index>(),
        output in native_output(),
        cuts in prop::collection::vec(0usize..10_000, 0..40),
    ) {
        let arena = native_arena();
        let mut reused = ChatStream::new(&arena);
        let before = &before.as_bytes()[..cut.index(before.len() + 1)];
        for chunk in before.chunks(5) {
            let _ = reused.feed_bytes(chunk);
        }
        reused.reset();
        prop_assert_eq!(reused.message(), &Message::default());
        let mut fresh = ChatStream::new(&arena);
        for chunk in chunks(&output, &cuts) {
            prop_assert_eq!(owned(reused.feed_bytes(&chunk)), owned(fresh.feed_bytes(&chunk)));
        }
        prop_assert_eq!(owned(reused.finish()), owned(fresh.finish()));
    }

    #[test]
    fn constructed_streams_concatenate_to_the_final_message(
        output in constructed_output(),
        cuts in prop::collection::vec(0usize..10_000, 0..40),
    ) {
        check_stream(&constructed_arena(), &output, &cuts)?;
    }
}

#[test]
fn byte_by_byte_streaming_of_a_constructed_call() {
    let arena = constructed_arena();
    let output = "Checking.<tool_call>\n<function=get_weather>\n<param=city>São Paulo</param>\n<param=days>3</param>\n</function>\n</tool_call>";
    let cuts: Vec<usize> = (0..output.len()).collect();
    check_stream(&arena, output, &cuts).unwrap_or_else(|error| panic!("{error}"));
    let message = parse_message(&arena, output).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(message.tool_calls.len(), 1);
    assert_eq!(
        message.tool_calls[0].arguments,
        r#"{"city":"São Paulo","days":3}"#
    );
}

/// Outputs where a stream that mapped the whole parse again after each chunk would cost the
/// square of their length: many calls, and one call with large JSON arguments. Fed 4 bytes
/// at a time (and in uneven chunks), every update agrees with the reference.
#[test]
fn many_calls_and_long_arguments_stream_like_the_reference() {
    let arena = native_arena();
    let mut many = String::from("<think>Plan.</think>\nChecking the weather.<tool_call>");
    for i in 0..40 {
        if i > 0 {
            many.push_str(", ");
        }
        many.push_str(&format!(
            "{{\"name\": \"get_weather\", \"arguments\": {{\"city\": \"Paris {i}\", \"days\": {i}}}}}"
        ));
    }
    many.push_str("</tool_call>");
    let mut long = String::from("Sure.<tool_call>{\"name\": \"get\", \"arguments\": {\"key\": \"");
    for i in 0..400 {
        long.push_str(&format!("word {i}, \\\"quoted\\\" é "));
    }
    long.push_str("\"}}</tool_call>");
    for output in [many, long] {
        let whole = parse_message(&arena, &output).unwrap_or_else(|error| panic!("{error}"));
        for step in [4, 7] {
            let chunks: Vec<Vec<u8>> = output.as_bytes().chunks(step).map(<[u8]>::to_vec).collect();
            let mut stream = agree_with_reference(&arena, &output, &chunks)
                .unwrap_or_else(|error| panic!("{error}"));
            let last = stream.finish().unwrap_or_else(|error| panic!("{error}"));
            assert_eq!(last.message, &whole);
        }
    }
}
