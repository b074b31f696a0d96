//! Chat shapes built on `gbnf-peg`: parsers tagged for content, reasoning and tool calls,
//! and the mapping of their parse to an OpenAI-compatible assistant message.
//!
//! - [`builders`]: tag helpers ([`builders::content`], [`builders::tool_name`], …) and the
//!   standard tool-call sections ([`builders::standard_json_tools`],
//!   [`builders::standard_constructed_tools`]).
//! - [`native_parser`]: a complete parser of the native shape.
//! - [`parse_message`] maps a whole output to a [`Message`]; [`ChatStream`] does it chunk by
//!   chunk, returning the message so far and a [`MessageDelta`] per chunk.
//!
//! Invariants:
//! - A stream never takes back what it emitted: the deltas concatenate to the final message.
//! - The mapping follows llama.cpp's chat mapper (tags and rules in [`tags`] and [`Mapper`]).

pub mod builders;
mod mapper;
mod message;
mod native;
mod parse;
pub mod tags;

pub use builders::Tool;
pub use mapper::Mapper;
pub use message::{Message, MessageDelta, ToolCall, ToolCallDelta};
pub use native::{native_parser, NativeOptions};
pub use parse::{map_ast, parse_message, ChatStream, Error, ErrorKind, Update};
