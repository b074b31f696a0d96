//! A complete chat parser of the native shape: optional `<think>` reasoning, then content,
//! then either tool calls (`<tool_call>[{"name": …, "arguments": {…}}]</tool_call>`), a
//! JSON response constrained by a schema, or plain content. It is the parser llama.cpp's
//! tests use for the native shape, so its results can be compared row by row.

use gbnf_peg::{Arena, Builder, Error};
use serde_json::Value;

use crate::builders::{content, reasoning, standard_json_tools, JsonToolsOptions, Tool};

/// What the chat request asks for.
#[derive(Clone, Debug, Default)]
pub struct NativeOptions {
    pub tools: Vec<Tool>,
    /// Several tool calls may be made at once.
    pub parallel_tool_calls: bool,
    /// A tool call is required (tool_choice "required").
    pub force_tool_calls: bool,
    /// Extract `<think>…</think>` as reasoning (false: leave it in the content).
    pub extract_reasoning: bool,
    /// A response format: the content must be JSON valid against this schema.
    pub json_schema: Option<Value>,
}

/// Builds the native chat parser.
pub fn native_parser(options: &NativeOptions) -> Result<Arena, Error> {
    let mut p = Builder::new();
    let mut items = Vec::new();
    if options.extract_reasoning {
        let open = p.literal("<think>");
        let body = p.until("</think>");
        let body = reasoning(&mut p, body);
        let close = p.literal("</think>");
        let ws = p.space();
        let block = p.seq([open, body, close, ws]);
        items.push(p.optional(block));
    }
    if !options.tools.is_empty() {
        let text = p.until("<tool_call>");
        items.push(content(&mut p, text));
        let tools_options = JsonToolsOptions {
            section_start: "<tool_call>[".to_owned(),
            section_end: "]</tool_call>".to_owned(),
            parallel: options.parallel_tool_calls,
            force: options.force_tool_calls,
            ..JsonToolsOptions::default()
        };
        let ws = p.space();
        let calls = standard_json_tools(&mut p, &options.tools, &tools_options);
        let calls = p.seq([ws, calls]);
        items.push(p.optional(calls));
        items.push(p.space());
    } else if let Some(schema) = &options.json_schema {
        let json = p.json();
        let constrained = p.schema(json, "response-output", schema.clone(), false);
        items.push(content(&mut p, constrained));
        items.push(p.space());
    } else {
        let rest = p.rest();
        items.push(content(&mut p, rest));
    }
    items.push(p.end());
    let root = p.seq(items);
    p.set_root(root);
    p.build()
}
