//! The PEG commands of the command-line tools, as functions over text so that the binaries
//! only do IO: `schema2gbnf peg FILE` (lower a parser to GBNF) and
//! `gbnf parse FILE.peg < input` (run a parser over model output).
//!
//! A parser source is either `.peg` text or an arena serialised as JSON (text starting
//! with `{`), so parsers exported from llama.cpp-style tools load too.

use std::fmt::Write as _;

use gbnf_chat::map_ast;
use gbnf_peg::{
    lower, parse_bytes, parse_peg, Arena, Label, LowerOptions, Options, Outcome, SpaceStyle,
};

/// Options of `schema2gbnf peg`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PegGbnfOptions {
    /// `--lazy`: only what the trigger rules reach; `root` chooses among them.
    pub lazy: bool,
    /// `--exact-space`: `space` accepts any run of white space (default: llama.cpp's bound).
    pub exact_space: bool,
}

/// What `schema2gbnf peg` produces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PegGbnf {
    /// The printed grammar (start rule `root`).
    pub grammar: String,
    /// With `--lazy`, the trigger rules `root` chooses among (pair them with trigger words).
    pub triggers: Vec<String>,
    /// One line per warning, for stderr.
    pub warnings: Vec<String>,
}

/// Loads a parser from `.peg` text or arena JSON.
pub fn load_parser(source: &str) -> Result<Arena, String> {
    if source.trim_start().starts_with('{') {
        let json: serde_json::Value =
            serde_json::from_str(source).map_err(|error| format!("arena json: {error}"))?;
        return Arena::from_json(&json).map_err(|error| error.to_string());
    }
    parse_peg(source).map_err(|error| error.to_string())
}

/// `schema2gbnf peg FILE`: lowers the parser in `source` to GBNF.
pub fn peg_to_gbnf(source: &str, options: &PegGbnfOptions) -> Result<PegGbnf, String> {
    let arena = load_parser(source)?;
    let lower_options = LowerOptions {
        lazy: options.lazy,
        space: if options.exact_space {
            SpaceStyle::Exact
        } else {
            SpaceStyle::Bounded
        },
        ..LowerOptions::default()
    };
    let lowered = lower(&arena, &lower_options).map_err(|error| error.to_string())?;
    Ok(PegGbnf {
        grammar: gbnf::print(&lowered.grammar),
        triggers: lowered
            .triggers
            .iter()
            .map(|name| name.as_str().to_owned())
            .collect(),
        warnings: lowered
            .warnings
            .iter()
            .map(|warning| format!("warning: {warning}"))
            .collect(),
    })
}

/// Options of `gbnf parse FILE.peg`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParseCmdOptions {
    /// `--partial`: the input may be a prefix of the output (streaming).
    pub partial: bool,
    /// `--message`: also print the chat message the tagged nodes map to.
    pub message: bool,
}

/// What `gbnf parse` produces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseReport {
    /// `Match`, `NeedMore` or `NoMatch`.
    pub outcome: Outcome,
    /// The outcome, the AST (one node per line, indented) and, if asked, the message.
    pub text: String,
}

/// `gbnf parse FILE.peg < input`: runs the parser over `input`.
pub fn parse_with_peg(
    source: &str,
    input: &[u8],
    options: &ParseCmdOptions,
) -> Result<ParseReport, String> {
    let arena = load_parser(source)?;
    let result = parse_bytes(
        &arena,
        input,
        &Options {
            partial: options.partial,
        },
    );
    let mut text = String::new();
    let _ = writeln!(text, "{:?} at byte {}", result.outcome, result.end);
    let ast = &result.ast;
    let mut stack: Vec<(gbnf_peg::AstId, usize)> =
        ast.roots().iter().rev().map(|&id| (id, 0)).collect();
    while let Some((id, depth)) = stack.pop() {
        let node = ast.node(id);
        let label = match ast.label(&arena, id) {
            Label::Rule(name) => name.to_owned(),
            Label::Tag(tag) => format!("@{tag}"),
        };
        let span = input.get(node.start..node.end).unwrap_or_default();
        let span = serde_json::Value::String(String::from_utf8_lossy(span).into_owned());
        let partial = if node.is_partial { " (partial)" } else { "" };
        let _ = writeln!(
            text,
            "{:indent$}{label} {}..{}{partial} {span}",
            "",
            node.start,
            node.end,
            indent = depth * 2
        );
        stack.extend(
            ast.children(id)
                .iter()
                .rev()
                .map(|&child| (child, depth + 1)),
        );
    }
    if options.message {
        let message = map_ast(&arena, ast, input);
        let json = serde_json::to_string_pretty(&message.to_json()).unwrap_or_default();
        let _ = writeln!(text, "{json}");
    }
    Ok(ParseReport {
        outcome: result.outcome,
        text,
    })
}

/// `gbnf parse FILE.peg --stream N < input`: feeds `input` to a chat stream `chunk_size`
/// bytes at a time and reports, per chunk, what the message gained, then the final message
/// as OpenAI JSON. Fails if the output does not match.
pub fn stream_with_peg(source: &str, input: &[u8], chunk_size: usize) -> Result<String, String> {
    let arena = load_parser(source)?;
    let mut stream = gbnf_chat::ChatStream::new(&arena);
    let mut text = String::new();
    for chunk in input.chunks(chunk_size.max(1)) {
        let update = stream
            .feed_bytes(chunk)
            .map_err(|error| error.to_string())?;
        let shown = serde_json::Value::String(String::from_utf8_lossy(chunk).into_owned());
        let _ = writeln!(text, "{shown} -> {}", describe_delta(&update.delta));
    }
    let last = stream.finish().map_err(|error| error.to_string())?;
    let _ = writeln!(text, "(end) -> {}", describe_delta(&last.delta));
    let json = serde_json::to_string_pretty(&last.message.to_json()).unwrap_or_default();
    let _ = writeln!(text, "{json}");
    Ok(text)
}

/// One line for a delta: `content "…", call #0 name "…" arguments "…"`, or `-`.
fn describe_delta(delta: &gbnf_chat::MessageDelta) -> String {
    let mut parts = Vec::new();
    if !delta.reasoning_content.is_empty() {
        parts.push(format!("reasoning {:?}", delta.reasoning_content));
    }
    if !delta.content.is_empty() {
        parts.push(format!("content {:?}", delta.content));
    }
    for call in &delta.tool_calls {
        let mut part = format!("call #{}", call.index);
        if let Some(name) = &call.name {
            part.push_str(&format!(" name {name:?}"));
        }
        if !call.arguments.is_empty() {
            part.push_str(&format!(" arguments {:?}", call.arguments));
        }
        parts.push(part);
    }
    if parts.is_empty() {
        "-".to_owned()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARSER: &str = r#"
root <- @content(until("<call>")) call? end
trigger call <- "<call>" @tool(atomic(@tool-open("") @tool-name([a-z_]+) " ") @tool-args(json_object) @tool-close("")) "</call>"
"#;

    #[test]
    fn lowers_peg_text_lazily() {
        let options = PegGbnfOptions {
            lazy: true,
            exact_space: false,
        };
        let out = peg_to_gbnf(PARSER, &options).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(out.triggers, ["call"]);
        assert!(
            out.grammar.starts_with("root ::= call\n"),
            "{}",
            out.grammar
        );
    }

    #[test]
    fn loads_arena_json_too() {
        let arena = load_parser(PARSER).unwrap_or_else(|error| panic!("{error}"));
        let json = arena.to_json().to_string();
        let from_json = peg_to_gbnf(&json, &PegGbnfOptions::default());
        let from_text = peg_to_gbnf(PARSER, &PegGbnfOptions::default());
        assert_eq!(from_json, from_text);
    }

    #[test]
    fn parses_and_maps_a_message() {
        let options = ParseCmdOptions {
            partial: false,
            message: true,
        };
        let input = b"Hi <call>get_time {\"tz\": \"UTC\"}</call>";
        let report =
            parse_with_peg(PARSER, input, &options).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(report.outcome, Outcome::Match);
        assert!(
            report.text.contains("\"name\": \"get_time\""),
            "{}",
            report.text
        );
        assert!(
            report
                .text
                .contains("\"arguments\": \"{\\\"tz\\\": \\\"UTC\\\"}\""),
            "{}",
            report.text
        );
    }

    #[test]
    fn streams_a_message_chunk_by_chunk() {
        let input = b"Hi <call>get_time {\"tz\": \"UTC\"}</call>";
        let text = stream_with_peg(PARSER, input, 5).unwrap_or_else(|error| panic!("{error}"));
        assert!(text.starts_with("\"Hi <c\" -> content \"Hi \"\n"), "{text}");
        assert!(text.contains("call #0 name \"get_time\""), "{text}");
    }

    #[test]
    fn a_name_that_is_not_atomic_is_reported_as_taken_back() {
        // Without `atomic`, the half-streamed name "get_ti" is emitted, then contradicted.
        let parser = PARSER.replace(
            "atomic(@tool-open(\"\") @tool-name([a-z_]+) \" \")",
            "@tool-open(\"\") @tool-name([a-z_]+) \" \"",
        );
        let input = b"Hi <call>get_time {\"tz\": \"UTC\"}</call>";
        let error = stream_with_peg(&parser, input, 5).err().unwrap_or_default();
        assert_eq!(
            error,
            "offset 38: the parse would take back text that was already emitted"
        );
    }

    #[test]
    fn reports_errors_with_their_location() {
        let error = peg_to_gbnf("root <- (", &PegGbnfOptions::default()).err();
        assert_eq!(
            error.as_deref(),
            Some("1:10: rule 'root': expected ')' to close the '(' at 1:9, found end of input")
        );
    }
}
