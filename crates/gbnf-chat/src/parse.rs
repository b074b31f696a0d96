//! Running a chat parser: a whole output to a [`Message`], or a streamed output chunk by
//! chunk to the message so far and what each chunk added.

use std::fmt;

use gbnf_peg::{Arena, Ast, Label, Node, NodeId, Outcome, StreamParser};

use crate::mapper::Mapper;
use crate::message::{Message, MessageDelta, ToolCallDelta};
use crate::tags;

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
    Ok(stream.finish()?.message.clone())
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
pub struct Update<'s> {
    /// Everything emitted so far.
    pub message: &'s Message,
    /// What this chunk added.
    pub delta: MessageDelta,
    /// The parse of the output so far would have changed emitted text, so this update
    /// emitted nothing (the parser is not prefix-stable at this point).
    pub held_back: bool,
}

/// Parses an output as it streams. Each update only ever adds to what was emitted before.
///
/// While the model writes content or reasoning, an update costs about the new bytes: when
/// the only change to the tagged nodes is that the last one (content or reasoning) grew, the
/// new text is appended without mapping the whole parse again.
#[derive(Debug)]
pub struct ChatStream<'a> {
    arena: &'a Arena,
    parser: StreamParser<'a>,
    emitted: Message,
    /// The tagged nodes (parser, start, end) that `emitted` was mapped from; empty when
    /// `emitted` is not exactly their mapping (after a hold-back).
    spans: Vec<(NodeId, usize, usize)>,
}

impl<'a> ChatStream<'a> {
    pub fn new(arena: &'a Arena) -> ChatStream<'a> {
        ChatStream {
            arena,
            parser: StreamParser::new(arena),
            emitted: Message::default(),
            spans: Vec::new(),
        }
    }

    /// The message emitted so far.
    pub fn message(&self) -> &Message {
        &self.emitted
    }

    /// Adds a chunk of output (bytes may split a code point) and returns the message so far.
    ///
    /// If the parse of the longer output would change text already emitted, the update holds
    /// back (an empty delta) until the output extends what was emitted again; [`finish`]
    /// reports it if it never does.
    ///
    /// [`finish`]: ChatStream::finish
    pub fn feed(&mut self, chunk: &str) -> Result<Update<'_>, Error> {
        self.feed_bytes(chunk.as_bytes())
    }

    /// [`ChatStream::feed`] for raw bytes.
    pub fn feed_bytes(&mut self, chunk: &[u8]) -> Result<Update<'_>, Error> {
        let status = self.parser.feed(chunk);
        if status.outcome == Outcome::NoMatch {
            return Err(Error {
                kind: ErrorKind::NoMatch,
                offset: status.end,
            });
        }
        let spans = tagged_spans(self.arena, self.parser.ast());
        if let Some(delta) = self.grown_text(&spans) {
            self.emitted.apply(&delta);
            self.spans = spans;
            return Ok(Update {
                message: &self.emitted,
                delta,
                held_back: false,
            });
        }
        // The parser builds its AST on demand (the call above did); the copy is small, one
        // entry per node, and lets the input be read alongside.
        let ast = self.parser.ast().clone();
        let message = map_ast(self.arena, &ast, self.parser.input());
        let (delta, held_back) = match message.delta_from(&self.emitted) {
            Some(delta) => {
                self.emitted = message;
                self.spans = spans;
                (delta, false)
            }
            None => {
                self.spans.clear();
                (MessageDelta::default(), true)
            }
        };
        Ok(Update {
            message: &self.emitted,
            delta,
            held_back,
        })
    }

    /// Ends the output: parses it as complete and returns the final message.
    ///
    /// As in llama.cpp, an output that ends inside a possible marker (content ending in
    /// `<tool` when `<tool_call>` may follow) is not complete: `until` stops before the
    /// partial marker, which then matches nothing.
    pub fn finish(&mut self) -> Result<Update<'_>, Error> {
        let status = self.parser.finish();
        if status.outcome != Outcome::Match {
            return Err(Error {
                kind: ErrorKind::NoMatch,
                offset: status.end,
            });
        }
        let ast = self.parser.ast().clone();
        let message = map_ast(self.arena, &ast, self.parser.input());
        let Some(delta) = message.delta_from(&self.emitted) else {
            return Err(Error {
                kind: ErrorKind::Retraction,
                offset: status.end,
            });
        };
        self.emitted = message;
        self.spans = tagged_spans(self.arena, &ast);
        Ok(Update {
            message: &self.emitted,
            delta,
            held_back: false,
        })
    }

    /// The delta when the only change is that the last tagged node, a content node or a
    /// reasoning node whose text is already emitted, grew at its end.
    fn grown_text(&self, spans: &[(NodeId, usize, usize)]) -> Option<MessageDelta> {
        let (last, before) = spans.split_last()?;
        let (old_last, old_before) = self.spans.split_last()?;
        if before != old_before || last.0 != old_last.0 || last.1 != old_last.1 {
            return None;
        }
        if last.2 < old_last.2 {
            return None;
        }
        let Node::Tag { tag, .. } = self.arena.node(last.0) else {
            return None;
        };
        let input = self.parser.input();
        let added = std::str::from_utf8(input.get(old_last.2..last.2)?).ok()?;
        let mut delta = MessageDelta::default();
        match tag.as_str() {
            tags::CONTENT => delta.content = added.to_owned(),
            // Whitespace-only reasoning is dropped, so only append to reasoning that has
            // something else already.
            tags::REASONING if !self.emitted.reasoning_content.is_empty() => {
                delta.reasoning_content = added.to_owned();
            }
            tags::TOOL_ARGS => {
                // The arguments of the call named since the last tool-open, verbatim but
                // trailing-trimmed: new text extends them unless only blanks were added.
                let named = before
                    .iter()
                    .rev()
                    .map(|span| self.tag_of(span.0))
                    .take_while(|&tag| tag != Some(tags::TOOL_OPEN))
                    .any(|tag| tag == Some(tags::TOOL_NAME));
                // `emitted` is the mapping of the same nodes with the shorter text, so the
                // call's arguments are that text trimmed; only the lengths need checking.
                let call = self.emitted.tool_calls.last()?;
                let old = trim_blanks(input.get(old_last.1..old_last.2)?);
                if !named || old.first() != Some(&b'{') || call.arguments.len() != old.len() {
                    return None;
                }
                let new = trim_blanks(input.get(last.1..last.2)?);
                let added = std::str::from_utf8(new.get(old.len()..)?).ok()?;
                delta.tool_calls.push(ToolCallDelta {
                    index: self.emitted.tool_calls.len() - 1,
                    id: None,
                    name: None,
                    arguments: added.to_owned(),
                });
            }
            _ => return None,
        }
        Some(delta)
    }

    fn tag_of(&self, parser: NodeId) -> Option<&'a str> {
        match self.arena.node(parser) {
            Node::Tag { tag, .. } => Some(tag.as_str()),
            _ => None,
        }
    }
}

/// `bytes` without its trailing C `isspace` bytes (as the mapper trims).
fn trim_blanks(bytes: &[u8]) -> &[u8] {
    let len = bytes
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0B' | b'\x0C'))
        .map_or(0, |idx| idx + 1);
    &bytes[..len]
}

/// The tags the mapper reads (`tool` and `tool-arg` only group).
const MAPPED_TAGS: [&str; 12] = [
    tags::REASONING,
    tags::CONTENT,
    tags::TOOL_OPEN,
    tags::TOOL_CLOSE,
    tags::TOOL_ID,
    tags::TOOL_NAME,
    tags::TOOL_ARGS,
    tags::TOOL_ARG_OPEN,
    tags::TOOL_ARG_CLOSE,
    tags::TOOL_ARG_NAME,
    tags::TOOL_ARG_VALUE,
    tags::TOOL_ARG_STRING_VALUE,
];

/// The nodes of a parse that the mapper reads, in pre-order.
fn tagged_spans(arena: &Arena, ast: &Ast) -> Vec<(NodeId, usize, usize)> {
    ast.visit()
        .into_iter()
        .filter(|&id| matches!(ast.label(arena, id), Label::Tag(tag) if MAPPED_TAGS.contains(&tag)))
        .map(|id| {
            let node = ast.node(id);
            (node.parser, node.start, node.end)
        })
        .collect()
}
