//! Chat shapes built on `gbnf-peg`: parsers tagged for content, reasoning and tool calls,
//! and the mapping of their parse to an OpenAI-compatible assistant message.

mod mapper;
mod message;
pub mod tags;

pub use mapper::Mapper;
pub use message::{Message, MessageDelta, ToolCall, ToolCallDelta};
