//! Chat shapes built on `gbnf-peg`: parsers tagged for content, reasoning and tool calls,
//! and the mapping of their parse to an OpenAI-compatible assistant message.
