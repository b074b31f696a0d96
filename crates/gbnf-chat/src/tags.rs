//! The tag names that give a parse its chat meaning: the mapper reads them, the builders
//! write them. They are llama.cpp's names, so `.peg` files and arenas serialised by either
//! side mean the same thing.

pub const REASONING_BLOCK: &str = "reasoning-block";
pub const REASONING: &str = "reasoning";
pub const CONTENT: &str = "content";
pub const TOOL: &str = "tool";
pub const TOOL_OPEN: &str = "tool-open";
pub const TOOL_CLOSE: &str = "tool-close";
pub const TOOL_ID: &str = "tool-id";
pub const TOOL_NAME: &str = "tool-name";
pub const TOOL_ARGS: &str = "tool-args";
pub const TOOL_ARG: &str = "tool-arg";
pub const TOOL_ARG_OPEN: &str = "tool-arg-open";
pub const TOOL_ARG_CLOSE: &str = "tool-arg-close";
pub const TOOL_ARG_NAME: &str = "tool-arg-name";
pub const TOOL_ARG_VALUE: &str = "tool-arg-value";
pub const TOOL_ARG_STRING_VALUE: &str = "tool-arg-string-value";
