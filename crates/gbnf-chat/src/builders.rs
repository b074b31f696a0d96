//! Chat-shaped parsers: tag helpers for the three AST shapes (simple, native, constructed)
//! and the standard tool-call sections built from OpenAI tool definitions.
//!
//! - *Simple*: [`reasoning`] and [`content`].
//! - *Native* (arguments are one JSON object): [`tool`], [`tool_open`], [`tool_close`],
//!   [`tool_id`], [`tool_name`], [`tool_args`]; [`standard_json_tools`] builds a section.
//! - *Constructed* (arguments are separate entities, e.g. XML parameters): [`tool_arg`],
//!   [`tool_arg_open`], [`tool_arg_close`], [`tool_arg_name`], [`tool_arg_value`],
//!   [`tool_arg_string_value`]; [`standard_constructed_tools`] builds a section.
//!
//! The open/close/id/name markers are wrapped in `atomic`, so a half-streamed marker never
//! produces a node (a client never sees a tool name that is still being written).

use gbnf_peg::{Builder, NodeId};
use serde_json::Value;

use crate::tags;

/// Tags `p` as reasoning (`reasoning_content`).
pub fn reasoning(p: &mut Builder, inner: NodeId) -> NodeId {
    p.tag(tags::REASONING, inner)
}

/// Tags `p` as content.
pub fn content(p: &mut Builder, inner: NodeId) -> NodeId {
    p.tag(tags::CONTENT, inner)
}

/// Tags a whole tool call.
pub fn tool(p: &mut Builder, inner: NodeId) -> NodeId {
    p.tag(tags::TOOL, inner)
}

/// The start of a tool call (atomic).
pub fn tool_open(p: &mut Builder, inner: NodeId) -> NodeId {
    atomic_tag(p, tags::TOOL_OPEN, inner)
}

/// The end of a tool call (atomic).
pub fn tool_close(p: &mut Builder, inner: NodeId) -> NodeId {
    atomic_tag(p, tags::TOOL_CLOSE, inner)
}

/// The call id (atomic); surrounding quotes are stripped by the mapper.
pub fn tool_id(p: &mut Builder, inner: NodeId) -> NodeId {
    atomic_tag(p, tags::TOOL_ID, inner)
}

/// The tool name (atomic).
pub fn tool_name(p: &mut Builder, inner: NodeId) -> NodeId {
    atomic_tag(p, tags::TOOL_NAME, inner)
}

/// The arguments as one JSON object (native shape).
pub fn tool_args(p: &mut Builder, inner: NodeId) -> NodeId {
    p.tag(tags::TOOL_ARGS, inner)
}

/// One whole argument (constructed shape).
pub fn tool_arg(p: &mut Builder, inner: NodeId) -> NodeId {
    p.tag(tags::TOOL_ARG, inner)
}

/// The start of an argument (atomic).
pub fn tool_arg_open(p: &mut Builder, inner: NodeId) -> NodeId {
    atomic_tag(p, tags::TOOL_ARG_OPEN, inner)
}

/// The end of an argument (atomic).
pub fn tool_arg_close(p: &mut Builder, inner: NodeId) -> NodeId {
    atomic_tag(p, tags::TOOL_ARG_CLOSE, inner)
}

/// The argument name (atomic).
pub fn tool_arg_name(p: &mut Builder, inner: NodeId) -> NodeId {
    atomic_tag(p, tags::TOOL_ARG_NAME, inner)
}

/// An argument value written as JSON or as a Python literal (normalised to JSON).
pub fn tool_arg_value(p: &mut Builder, inner: NodeId) -> NodeId {
    p.tag(tags::TOOL_ARG_VALUE, inner)
}

/// An argument value that is raw text, to be JSON-quoted.
pub fn tool_arg_string_value(p: &mut Builder, inner: NodeId) -> NodeId {
    p.tag(tags::TOOL_ARG_STRING_VALUE, inner)
}

fn atomic_tag(p: &mut Builder, tag: &str, inner: NodeId) -> NodeId {
    let tagged = p.tag(tag, inner);
    p.atomic(tagged)
}

/// A tool definition: OpenAI's `{"type": "function", "function": {name, parameters}}`.
#[derive(Clone, Debug, PartialEq)]
pub struct Tool {
    pub name: String,
    /// The JSON schema of the arguments (an empty object schema when absent).
    pub parameters: Value,
}

impl Tool {
    /// The tools of an OpenAI `tools` array; entries without a `function.name` are skipped.
    pub fn from_openai(tools: &Value) -> Vec<Tool> {
        let Some(tools) = tools.as_array() else {
            return Vec::new();
        };
        tools
            .iter()
            .filter_map(|tool| {
                let function = tool.get("function")?;
                let name = function.get("name")?.as_str()?.to_owned();
                let parameters = function
                    .get("parameters")
                    .cloned()
                    .unwrap_or_else(|| serde_json::json!({}));
                Some(Tool { name, parameters })
            })
            .collect()
    }
}

/// How a JSON tool-call section looks.
#[derive(Clone, Debug)]
pub struct JsonToolsOptions {
    /// Text before the calls (e.g. `<tool_call>` or `<tool_call>[`).
    pub section_start: String,
    /// Text after the calls.
    pub section_end: String,
    /// Several calls separated by `,`.
    pub parallel: bool,
    /// The section is required (tool_choice "required"); otherwise it is optional.
    pub force: bool,
    /// The key of the name (`name`).
    pub name_key: String,
    /// The key of the arguments (`arguments`).
    pub args_key: String,
}

impl Default for JsonToolsOptions {
    fn default() -> Self {
        JsonToolsOptions {
            section_start: "<tool_call>".to_owned(),
            section_end: "</tool_call>".to_owned(),
            parallel: false,
            force: false,
            name_key: "name".to_owned(),
            args_key: "arguments".to_owned(),
        }
    }
}

/// A section of JSON tool calls `{"name": "…", "arguments": {…}}`, one rule `tool-<name>`
/// per tool with the arguments constrained by the tool's schema, inside the trigger rule
/// `tool-call`. Returns `eps` when there are no tools.
pub fn standard_json_tools(p: &mut Builder, tools: &[Tool], options: &JsonToolsOptions) -> NodeId {
    if tools.is_empty() {
        return p.eps();
    }
    let mut choices = Vec::new();
    for definition in tools {
        let name_member = {
            let key = p.literal(&json_quote(&options.name_key));
            let ws1 = p.space();
            let colon = p.literal(":");
            let ws2 = p.space();
            let open = p.literal("\"");
            let name = p.literal(&definition.name);
            let name = tool_name(p, name);
            let close = p.literal("\"");
            let quoted = p.seq([open, name, close]);
            let quoted = p.atomic(quoted);
            p.seq([key, ws1, colon, ws2, quoted])
        };
        let args_member = {
            let key = p.literal(&json_quote(&options.args_key));
            let ws1 = p.space();
            let colon = p.literal(":");
            let ws2 = p.space();
            let json = p.json();
            let schema_name = format!("tool-{}-schema", definition.name);
            let args = p.schema(json, &schema_name, definition.parameters.clone(), false);
            let args = tool_args(p, args);
            p.seq([key, ws1, colon, ws2, args])
        };
        let body = {
            let open = p.literal("{");
            let open = tool_open(p, open);
            let ws1 = p.space();
            let ws2 = p.space();
            let comma = p.literal(",");
            let ws3 = p.space();
            let ws4 = p.space();
            let close = p.literal("}");
            let close = tool_close(p, close);
            p.seq([
                open,
                ws1,
                name_member,
                ws2,
                comma,
                ws3,
                args_member,
                ws4,
                close,
            ])
        };
        let call = tool(p, body);
        choices.push(p.rule(&format!("tool-{}", definition.name), call));
    }
    let one = p.choice(choices.iter().copied());
    let calls = if options.parallel {
        let ws1 = p.space();
        let comma = p.literal(",");
        let ws2 = p.space();
        let another = p.choice(choices.iter().copied());
        let more = p.seq([ws1, comma, ws2, another]);
        let more = p.zero_or_more(more);
        let ws = p.space();
        p.seq([one, more, ws])
    } else {
        let ws = p.space();
        p.seq([one, ws])
    };
    section(
        p,
        &options.section_start,
        calls,
        &options.section_end,
        options.force,
    )
}

/// The markers of a constructed (XML-like) tool-call section. The defaults are Qwen3-Coder's:
/// `<tool_call><function=name><param=arg>value</param></function></tool_call>`.
#[derive(Clone, Debug)]
pub struct ConstructedMarkers {
    pub section_start: String,
    pub section_end: String,
    pub function_opener: String,
    pub function_name_suffix: String,
    pub function_closer: String,
    pub parameter_key_prefix: String,
    pub parameter_key_suffix: String,
    pub parameter_closer: String,
}

impl Default for ConstructedMarkers {
    fn default() -> Self {
        ConstructedMarkers {
            section_start: "<tool_call>".to_owned(),
            section_end: "</tool_call>".to_owned(),
            function_opener: "<function=".to_owned(),
            function_name_suffix: ">".to_owned(),
            function_closer: "</function>".to_owned(),
            parameter_key_prefix: "<param=".to_owned(),
            parameter_key_suffix: ">".to_owned(),
            parameter_closer: "</param>".to_owned(),
        }
    }
}

/// A section of constructed tool calls: per tool a rule `tool-<name>`, whose arguments are
/// `prefix name suffix value closer` with the value up to the closer. String-typed
/// parameters are tagged as string values (JSON-quoted by the mapper), others as JSON values.
pub fn standard_constructed_tools(
    p: &mut Builder,
    tools: &[Tool],
    markers: &ConstructedMarkers,
    parallel: bool,
    force: bool,
) -> NodeId {
    if tools.is_empty() {
        return p.eps();
    }
    let mut choices = Vec::new();
    for definition in tools {
        let mut arg_choices = Vec::new();
        if let Some(properties) = definition
            .parameters
            .get("properties")
            .and_then(Value::as_object)
        {
            for (name, schema) in properties {
                let is_string = schema.get("type").and_then(Value::as_str) == Some("string");
                let open = p.literal(&markers.parameter_key_prefix);
                let open = tool_arg_open(p, open);
                // The name may be written bare, double- or single-quoted.
                let bare = p.literal(name);
                let double = p.literal(&json_quote(name));
                let single = p.literal(&format!("'{name}'"));
                let key = p.choice([bare, double, single]);
                let key = tool_arg_name(p, key);
                let suffix = p.literal(&markers.parameter_key_suffix);
                let value = p.until(&markers.parameter_closer);
                let value = if is_string {
                    tool_arg_string_value(p, value)
                } else {
                    tool_arg_value(p, value)
                };
                let close = p.literal(&markers.parameter_closer);
                let close = tool_arg_close(p, close);
                let arg = p.seq([open, key, suffix, value, close]);
                arg_choices.push(tool_arg(p, arg));
            }
        }
        let args = if arg_choices.is_empty() {
            p.eps()
        } else {
            let choice = p.choice(arg_choices);
            let ws = p.space();
            let item = p.seq([choice, ws]);
            p.zero_or_more(item)
        };
        let args = tool_args(p, args);
        let open = {
            let opener = p.literal(&markers.function_opener);
            let name = p.literal(&definition.name);
            let name = tool_name(p, name);
            let suffix = p.literal(&markers.function_name_suffix);
            let open = p.seq([opener, name, suffix]);
            tool_open(p, open)
        };
        let ws1 = p.space();
        let ws2 = p.space();
        let close = p.literal(&markers.function_closer);
        let close = tool_close(p, close);
        let body = p.seq([open, ws1, args, ws2, close]);
        let call = tool(p, body);
        choices.push(p.rule(&format!("tool-{}", definition.name), call));
    }
    let choice = p.choice(choices);
    let ws = p.space();
    let item = p.seq([choice, ws]);
    let calls = if parallel { p.one_or_more(item) } else { item };
    section(
        p,
        &markers.section_start,
        calls,
        &markers.section_end,
        force,
    )
}

/// `trigger_rule("tool-call", start space calls end)`, optional unless forced. `calls`
/// ends with its own white space.
fn section(p: &mut Builder, start: &str, calls: NodeId, end: &str, force: bool) -> NodeId {
    let start = p.literal(start);
    let ws = p.space();
    let end = p.literal(end);
    let body = p.seq([start, ws, calls, end]);
    let section = p.trigger_rule("tool-call", body);
    if force {
        section
    } else {
        p.optional(section)
    }
}

fn json_quote(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}
