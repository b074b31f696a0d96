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
    /// Pretty-printed JSON: `{"outcome", "end", "ast": [node…], "message"?}`, where a node is
    /// `{"rule"|"tag", "start", "end", "text", "partial", "children": [node…]}`.
    pub text: String,
}

/// The JSON name of an outcome: `match`, `need_more`, `no_match` or `step_limit`.
pub fn outcome_name(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Match => "match",
        Outcome::NeedMore => "need_more",
        Outcome::NoMatch => "no_match",
        Outcome::StepLimit => "step_limit",
    }
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
    if let Some(limit) = result.step_limit {
        return Err(limit.describe(&arena));
    }
    let mut text = String::new();
    let _ = write!(
        text,
        "{{\n  \"outcome\": \"{}\",\n  \"end\": {},\n  \"ast\": ",
        outcome_name(result.outcome),
        result.end
    );
    write_ast_json(&mut text, &arena, &result.ast, input);
    if options.message {
        let message = map_ast(&arena, &result.ast, input);
        let json = serde_json::to_string_pretty(&message.to_json()).unwrap_or_default();
        text.push_str(",\n  \"message\": ");
        text.push_str(&json.replace('\n', "\n  "));
    }
    text.push_str("\n}\n");
    Ok(ParseReport {
        outcome: result.outcome,
        text,
    })
}

/// One step of writing the AST: open a node, or close the children array of one.
enum AstStep {
    Open {
        id: gbnf_peg::AstId,
        indent: usize,
        first: bool,
    },
    Close {
        indent: usize,
    },
}

/// How deep the AST is written in full: below this many levels, nodes are written compactly,
/// on the line of their parent, and their `text` is `null` (their `start` and `end` give it).
/// Otherwise a parser that nests once per byte (`k <- . k / ""`) would write its input once
/// per level, with indentation that grows per level: output quadratic in the input (7.4 GB
/// for 20 KB). Indented at the deepest level instead, each node took ~2.5 KB: 500 MB for
/// 200 KB of nested JSON arrays (two nodes a level); compact, ~90 bytes.
pub const AST_TEXT_DEPTH: usize = 64;

/// Writes the AST as a pretty-printed JSON array (as a member of the top-level object, so
/// indented by 2). The tree is walked with an explicit stack and written as text, so neither
/// building nor dropping it recurses, however deep the user's parser nests; below
/// [`AST_TEXT_DEPTH`] levels the output grows only linearly with the depth, by a few dozen
/// bytes a node.
fn write_ast_json(out: &mut String, arena: &Arena, ast: &gbnf_peg::Ast, input: &[u8]) {
    const DEEPEST_INDENT: usize = 4 * AST_TEXT_DEPTH;
    if ast.roots().is_empty() {
        out.push_str("[]");
        return;
    }
    out.push('[');
    let mut stack: Vec<AstStep> = vec![AstStep::Close { indent: 0 }];
    stack.extend(
        ast.roots()
            .iter()
            .enumerate()
            .rev()
            .map(|(index, &id)| AstStep::Open {
                id,
                indent: 4,
                first: index == 0,
            }),
    );
    while let Some(step) = stack.pop() {
        match step {
            AstStep::Open { id, indent, first } => {
                let node = ast.node(id);
                let (key, name) = match ast.label(arena, id) {
                    Label::Rule(name) => ("rule", name),
                    Label::Tag(tag) => ("tag", tag),
                };
                if !first {
                    out.push(',');
                }
                if indent <= DEEPEST_INDENT {
                    let span = input.get(node.start..node.end).unwrap_or_default();
                    let pad = " ".repeat(indent);
                    let _ = write!(
                        out,
                        "\n{pad}{{\n{pad}  \"{key}\": {},\n{pad}  \"start\": {},\n{pad}  \"end\": {},\n{pad}  \"text\": {},\n{pad}  \"partial\": {},\n{pad}  \"children\": ",
                        json_string(name),
                        node.start,
                        node.end,
                        json_string(&String::from_utf8_lossy(span)),
                        node.is_partial,
                    );
                } else {
                    let _ = write!(
                        out,
                        "{{\"{key}\": {}, \"start\": {}, \"end\": {}, \"text\": null, \"partial\": {}, \"children\": ",
                        json_string(name),
                        node.start,
                        node.end,
                        node.is_partial,
                    );
                }
                let children = ast.children(id);
                if children.is_empty() {
                    if indent <= DEEPEST_INDENT {
                        let _ = write!(out, "[]\n{}}}", " ".repeat(indent));
                    } else {
                        out.push_str("[]}");
                    }
                } else {
                    out.push('[');
                    stack.push(AstStep::Close { indent });
                    stack.extend(children.iter().enumerate().rev().map(|(index, &child)| {
                        AstStep::Open {
                            id: child,
                            indent: indent + 4,
                            first: index == 0,
                        }
                    }));
                }
            }
            AstStep::Close { indent: 0 } => out.push_str("\n  ]"),
            AstStep::Close { indent } if indent <= DEEPEST_INDENT => {
                let pad = " ".repeat(indent);
                let _ = write!(out, "\n{pad}  ]\n{pad}}}");
            }
            AstStep::Close { .. } => out.push_str("]}"),
        }
    }
}

fn json_string(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

/// What `gbnf parse --stream` produced: the JSON lines written before any failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamReport {
    /// One JSON object per line: `{"chunk", "delta"}` per chunk (plus `"held_back": true`
    /// when the chunk's parse would have changed emitted text), then
    /// `{"end": true, "delta", "message"}`.
    pub lines: String,
    /// Why the stream failed (the output does not match, or the parser took text back).
    pub error: Option<String>,
}

/// `gbnf parse FILE.peg --stream N < input`: feeds `input` to a chat stream `chunk_size`
/// bytes at a time and reports, per chunk, what the message gained (an OpenAI-style delta),
/// then the final message. Only a parser that does not load is an `Err`.
pub fn stream_with_peg(
    source: &str,
    input: &[u8],
    chunk_size: usize,
) -> Result<StreamReport, String> {
    let arena = load_parser(source)?;
    let mut stream = gbnf_chat::ChatStream::new(&arena);
    let mut lines = String::new();
    for chunk in input.chunks(chunk_size.max(1)) {
        let update = match stream.feed_bytes(chunk) {
            Ok(update) => update,
            Err(error) => {
                return Ok(StreamReport {
                    lines,
                    error: Some(error.to_string()),
                })
            }
        };
        let mut line = serde_json::Map::new();
        line.insert(
            "chunk".to_owned(),
            serde_json::Value::String(String::from_utf8_lossy(chunk).into_owned()),
        );
        line.insert("delta".to_owned(), delta_json(&update.delta));
        if update.held_back {
            line.insert("held_back".to_owned(), serde_json::Value::Bool(true));
        }
        let _ = writeln!(lines, "{}", serde_json::Value::Object(line));
    }
    let last = match stream.finish() {
        Ok(last) => last,
        Err(error) => {
            return Ok(StreamReport {
                lines,
                error: Some(error.to_string()),
            })
        }
    };
    let line = serde_json::json!({
        "end": true,
        "delta": delta_json(&last.delta),
        "message": last.message.to_json(),
    });
    let _ = writeln!(lines, "{line}");
    Ok(StreamReport { lines, error: None })
}

/// A delta in OpenAI's streaming shape: `{content?, reasoning_content?, tool_calls?: [{index,
/// id?, type?, function: {name?, arguments?}}]}`, empty members left out.
fn delta_json(delta: &gbnf_chat::MessageDelta) -> serde_json::Value {
    use serde_json::{json, Map, Value};
    let mut object = Map::new();
    if !delta.reasoning_content.is_empty() {
        object.insert(
            "reasoning_content".to_owned(),
            json!(delta.reasoning_content),
        );
    }
    if !delta.content.is_empty() {
        object.insert("content".to_owned(), json!(delta.content));
    }
    if !delta.tool_calls.is_empty() {
        let calls = delta
            .tool_calls
            .iter()
            .map(|call| {
                let mut entry = Map::new();
                entry.insert("index".to_owned(), json!(call.index));
                if let Some(id) = call.id.as_ref().filter(|id| !id.is_empty()) {
                    entry.insert("id".to_owned(), json!(id));
                }
                let mut function = Map::new();
                if let Some(name) = &call.name {
                    entry.insert("type".to_owned(), json!("function"));
                    function.insert("name".to_owned(), json!(name));
                }
                if !call.arguments.is_empty() {
                    function.insert("arguments".to_owned(), json!(call.arguments));
                }
                entry.insert("function".to_owned(), Value::Object(function));
                Value::Object(entry)
            })
            .collect();
        object.insert("tool_calls".to_owned(), Value::Array(calls));
    }
    Value::Object(object)
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
        let json: serde_json::Value =
            serde_json::from_str(&report.text).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(json["outcome"], "match");
        assert_eq!(json["end"], input.len());
        assert_eq!(json["ast"][0]["rule"], "root");
        assert_eq!(json["ast"][0]["children"][0]["tag"], "content");
        assert_eq!(json["ast"][0]["children"][0]["text"], "Hi ");
        let call = &json["message"]["tool_calls"][0]["function"];
        assert_eq!(call["name"], "get_time");
        assert_eq!(call["arguments"], "{\"tz\": \"UTC\"}");
    }

    #[test]
    fn deep_asts_are_written_without_recursion() {
        // 5 000 nested rule nodes: recursion over them would overflow the test stack.
        let parser = "root <- nest end\nnest <- \"(\" nest? \")\"\n";
        let depth = 5_000;
        let input = format!("{}{}", "(".repeat(depth), ")".repeat(depth));
        let report = parse_with_peg(parser, input.as_bytes(), &ParseCmdOptions::default())
            .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(report.outcome, Outcome::Match);
        assert_eq!(report.text.matches("\"rule\": \"nest\"").count(), depth);
        let opened = report.text.matches('[').count();
        let closed = report.text.matches(']').count();
        assert_eq!(opened, closed);
        // `root` and the first 63 `nest`s are written in full; the deeper ones compactly,
        // without their text, so the output grows linearly with the depth, by ~90 bytes a
        // level (~1.2 MB here, most of it the text of the first levels).
        let nulls = report.text.matches("\"text\": null").count();
        assert_eq!(nulls, depth - (AST_TEXT_DEPTH - 1));
        assert_eq!(
            report.text.matches('{').count(),
            report.text.matches('}').count()
        );
        assert!(
            report.text.len() < 300 * depth,
            "{} bytes",
            report.text.len()
        );
    }

    #[test]
    fn a_failed_parse_is_reported_as_json() {
        let report = parse_with_peg(PARSER, b"Hi <call>1", &ParseCmdOptions::default())
            .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(report.outcome, Outcome::NoMatch);
        let json: serde_json::Value =
            serde_json::from_str(&report.text).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(json["outcome"], "no_match");
    }

    #[test]
    fn streams_a_message_chunk_by_chunk() {
        let input = b"Hi <call>get_time {\"tz\": \"UTC\"}</call>";
        let report = stream_with_peg(PARSER, input, 5).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(report.error, None);
        let lines: Vec<serde_json::Value> = report
            .lines
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|error| panic!("{error}")))
            .collect();
        assert_eq!(lines.len(), input.len().div_ceil(5) + 1);
        assert_eq!(lines[0]["chunk"], "Hi <c");
        assert_eq!(lines[0]["delta"]["content"], "Hi ");
        let named = lines
            .iter()
            .filter(|line| line["delta"]["tool_calls"][0]["function"]["name"] == "get_time")
            .count();
        assert_eq!(named, 1);
        let last = &lines[lines.len() - 1];
        assert_eq!(last["end"], true);
        assert_eq!(
            last["message"]["tool_calls"][0]["function"]["arguments"],
            "{\"tz\": \"UTC\"}"
        );
    }

    #[test]
    fn a_name_that_is_not_atomic_is_reported_as_taken_back() {
        // Without `atomic`, the half-streamed name "get_ti" is emitted, then contradicted.
        let parser = PARSER.replace(
            "atomic(@tool-open(\"\") @tool-name([a-z_]+) \" \")",
            "@tool-open(\"\") @tool-name([a-z_]+) \" \"",
        );
        let input = b"Hi <call>get_time {\"tz\": \"UTC\"}</call>";
        let report = stream_with_peg(&parser, input, 5).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(
            report.error.as_deref(),
            Some("offset 38: the parse would take back text that was already emitted")
        );
        // The half-written name was emitted before the parse changed its mind.
        assert!(report.lines.contains(r#""name":"g""#), "{}", report.lines);
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
