//! Running a chat parser: a whole output to a [`Message`], or a streamed output chunk by
//! chunk to the message so far and what each chunk added.

use std::fmt;

use gbnf_peg::{Arena, Ast, Label, Outcome, StreamParser};

use crate::mapper::Mapper;
use crate::message::{Message, MessageDelta};

/// The output does not have the shape the parser describes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    /// Byte offset in the output where parsing stopped.
    pub offset: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The output does not match the parser.
    NoMatch,
    /// A new chunk would change text that was already emitted (the parser is not
    /// prefix-stable for this output).
    Retraction,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "offset {}: ", self.offset)?;
        match self.kind {
            ErrorKind::NoMatch => f.write_str("the output does not match the chat parser"),
            ErrorKind::Retraction => {
                f.write_str("the parse would take back text that was already emitted")
            }
        }
    }
}

impl std::error::Error for Error {}

/// Parses a complete output.
pub fn parse_message(arena: &Arena, output: &str) -> Result<Message, Error> {
    let mut stream = ChatStream::new(arena);
    stream.feed(output)?;
    Ok(stream.finish()?.message)
}

/// Maps the tagged nodes of an AST (over `input`) to a message.
pub fn map_ast(arena: &Arena, ast: &Ast, input: &[u8]) -> Message {
    let mut mapper = Mapper::new();
    for id in ast.visit() {
        let Label::Tag(tag) = ast.label(arena, id) else {
            continue;
        };
        let node = ast.node(id);
        let text = input.get(node.start..node.end).unwrap_or_default();
        mapper.node(tag, &String::from_utf8_lossy(text));
    }
    mapper.finish()
}

/// The state of a streamed message after a chunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Update {
    /// Everything emitted so far.
    pub message: Message,
    /// What this chunk added.
    pub delta: MessageDelta,
    /// The parse of the output so far would have changed emitted text, so this update
    /// emitted nothing (the parser is not prefix-stable at this point).
    pub held_back: bool,
}

/// Parses an output as it streams. Each update only ever adds to what was emitted before.
#[derive(Debug)]
pub struct ChatStream<'a> {
    arena: &'a Arena,
    parser: StreamParser<'a>,
    emitted: Message,
}

impl<'a> ChatStream<'a> {
    pub fn new(arena: &'a Arena) -> ChatStream<'a> {
        ChatStream {
            arena,
            parser: StreamParser::new(arena),
            emitted: Message::default(),
        }
    }

    /// Adds a chunk of output (bytes may split a code point) and returns the message so far.
    ///
    /// If the parse of the longer output would change text already emitted, the update holds
    /// back (an empty delta) until the output extends what was emitted again; [`finish`]
    /// reports it if it never does.
    ///
    /// [`finish`]: ChatStream::finish
    pub fn feed(&mut self, chunk: &str) -> Result<Update, Error> {
        self.feed_bytes(chunk.as_bytes())
    }

    /// [`ChatStream::feed`] for raw bytes.
    pub fn feed_bytes(&mut self, chunk: &[u8]) -> Result<Update, Error> {
        let status = self.parser.feed(chunk);
        if status.outcome == Outcome::NoMatch {
            return Err(Error {
                kind: ErrorKind::NoMatch,
                offset: status.end,
            });
        }
        let message = map_ast(self.arena, self.parser.ast(), self.parser.input());
        let (delta, held_back) = match message.delta_from(&self.emitted) {
            Some(delta) => {
                self.emitted = message;
                (delta, false)
            }
            None => (MessageDelta::default(), true),
        };
        Ok(Update {
            message: self.emitted.clone(),
            delta,
            held_back,
        })
    }

    /// Ends the output: parses it as complete and returns the final message.
    ///
    /// As in llama.cpp, an output that ends inside a possible marker (content ending in
    /// `<tool` when `<tool_call>` may follow) is not complete: `until` stops before the
    /// partial marker, which then matches nothing.
    pub fn finish(&mut self) -> Result<Update, Error> {
        let status = self.parser.finish();
        if status.outcome != Outcome::Match {
            return Err(Error {
                kind: ErrorKind::NoMatch,
                offset: status.end,
            });
        }
        let message = map_ast(self.arena, self.parser.ast(), self.parser.input());
        let Some(delta) = message.delta_from(&self.emitted) else {
            return Err(Error {
                kind: ErrorKind::Retraction,
                offset: status.end,
            });
        };
        self.emitted = message;
        Ok(Update {
            message: self.emitted.clone(),
            delta,
            held_back: false,
        })
    }
}
