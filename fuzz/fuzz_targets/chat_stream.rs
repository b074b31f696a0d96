//! Fuzzes streamed chat parsing: an arbitrary model output, cut into arbitrary chunks, is fed
//! to a native tool-call parser. Nothing may panic, every update must be what mapping the
//! whole parse so far gives (the message, and its difference from the one emitted before),
//! and when the stream completes, its deltas must concatenate to the final message.
//!
//! Input: the first byte seeds the chunk sizes, the rest is the output.

#![no_main]

use std::sync::OnceLock;

use gbnf_chat::{map_ast, native_parser, ChatStream, Message, MessageDelta, NativeOptions, Tool};
use gbnf_peg::{parse_bytes, Arena, Options, Outcome};
use libfuzzer_sys::fuzz_target;

fn arena() -> &'static Arena {
    static ARENA: OnceLock<Arena> = OnceLock::new();
    ARENA.get_or_init(|| {
        let tools = Tool::from_openai(&serde_json::json!([
            {"type": "function", "function": {"name": "get_weather", "parameters": {
                "type": "object", "properties": {"city": {"type": "string"}}}}},
            {"type": "function", "function": {"name": "get", "parameters": {}}}
        ]));
        let options = NativeOptions {
            tools,
            parallel_tool_calls: true,
            extract_reasoning: true,
            ..NativeOptions::default()
        };
        native_parser(&options).expect("the native parser builds")
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&seed, output)) = data.split_first() else {
        return;
    };
    let mut stream = ChatStream::new(arena());
    // The slow definition of each update: the output so far parsed afresh (not as a stream:
    // the stream's incremental AST is under test too) and mapped again.
    let partial = Options { partial: true };
    let mut emitted = Message::default();
    let mut rebuilt = Message::default();
    let mut rest = output;
    let mut size = usize::from(seed % 13) + 1;
    while !rest.is_empty() {
        let (chunk, tail) = rest.split_at(size.min(rest.len()));
        rest = tail;
        size = size * 7 % 13 + 1;
        let input = &output[..output.len() - rest.len()];
        let fresh = parse_bytes(arena(), input, &partial);
        let matched = !matches!(fresh.outcome, Outcome::NoMatch | Outcome::StepLimit);
        match stream.feed_bytes(chunk) {
            Ok(update) => {
                assert!(matched);
                let message = map_ast(arena(), &fresh.ast, input);
                match message.delta_from(&emitted) {
                    Some(delta) => {
                        assert_eq!(update.delta, delta);
                        assert!(!update.held_back);
                        emitted = message;
                    }
                    None => {
                        assert_eq!(update.delta, MessageDelta::default());
                        assert!(update.held_back);
                    }
                }
                assert_eq!(&emitted, update.message);
                rebuilt.apply(&update.delta);
                assert_eq!(&rebuilt, update.message);
            }
            Err(_) => {
                assert!(!matched);
                return;
            }
        }
    }
    if let Ok(last) = stream.finish() {
        rebuilt.apply(&last.delta);
        assert_eq!(&rebuilt, last.message);
    }
});
