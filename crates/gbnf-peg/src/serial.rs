//! The arena as JSON, in the shape llama.cpp stores it in chat parameters:
//! `{"parsers":[{"type":…}], "rules":{name:id}, "root":id}`. Loading validates everything and
//! never panics.

use indexmap::IndexMap;
use serde_json::{json, Map, Value};

use crate::error::{Error, ErrorKind};
use crate::node::{Arena, Chars, Node, NodeId};

impl Arena {
    /// The arena as JSON (`Arena::from_json` reads it back).
    pub fn to_json(&self) -> Value {
        let parsers: Vec<Value> = self.nodes.iter().map(node_to_json).collect();
        let rules: Map<String, Value> = self
            .rules
            .iter()
            .map(|(name, id)| (name.clone(), json!(id.0)))
            .collect();
        json!({ "parsers": parsers, "rules": rules, "root": self.root.0 })
    }

    /// Reads an arena written by [`Arena::to_json`] (or by llama.cpp) and checks it as
    /// `Builder::build` does.
    pub fn from_json(value: &Value) -> Result<Arena, Error> {
        let obj = value
            .as_object()
            .ok_or_else(|| invalid("", "expected an object"))?;
        let parsers = obj
            .get("parsers")
            .and_then(Value::as_array)
            .ok_or_else(|| invalid("parsers", "expected an array"))?;
        if parsers.len() > u32::MAX as usize {
            return Err(invalid("parsers", "too many parsers"));
        }
        let nodes = parsers
            .iter()
            .enumerate()
            .map(|(idx, parser)| node_from_json(parser, &format!("parsers[{idx}]")))
            .collect::<Result<Vec<Node>, Error>>()?;
        let mut rules = IndexMap::new();
        if let Some(map) = obj.get("rules") {
            let map = map
                .as_object()
                .ok_or_else(|| invalid("rules", "expected an object"))?;
            for (name, id) in map {
                rules.insert(name.clone(), id_at(id, &format!("rules.{name}"))?);
            }
        }
        let root = id_at(obj.get("root").unwrap_or(&Value::Null), "root")?;
        Arena::from_parts(nodes, rules, root)
    }
}

fn count_to_json(max: Option<u32>) -> Value {
    match max {
        Some(max) => json!(max),
        None => json!(-1),
    }
}

fn node_to_json(node: &Node) -> Value {
    match node {
        Node::Eps => json!({"type": "epsilon"}),
        Node::Start => json!({"type": "start"}),
        Node::End => json!({"type": "end"}),
        Node::Literal(text) => json!({"type": "literal", "literal": text}),
        Node::Seq(children) => json!({"type": "sequence", "children": ids(children)}),
        Node::Choice(children) => json!({"type": "choice", "children": ids(children)}),
        Node::Repeat { child, min, max } => json!({
            "type": "repetition", "child": child.0, "min_count": min, "max_count": count_to_json(*max)
        }),
        Node::Peek(child) => json!({"type": "and", "child": child.0}),
        Node::Not(child) => json!({"type": "not", "child": child.0}),
        Node::Any => json!({"type": "any"}),
        Node::Space => json!({"type": "space"}),
        Node::Chars(chars) => {
            let ranges: Vec<Value> = chars
                .ranges()
                .iter()
                .map(|&(start, end)| json!({"start": start, "end": end}))
                .collect();
            json!({
                "type": "chars", "pattern": chars.pattern, "ranges": ranges,
                "negated": chars.is_negated(), "min_count": chars.min,
                "max_count": count_to_json(chars.max)
            })
        }
        Node::StringContent { delimiter } => {
            json!({"type": "string", "delimiter": delimiter.to_string()})
        }
        Node::Until { delimiters } => json!({"type": "until", "delimiters": delimiters}),
        Node::Schema {
            child,
            name,
            schema,
            raw,
        } => {
            json!({"type": "schema", "child": child.0, "name": name, "schema": schema, "raw": raw})
        }
        Node::Rule {
            name,
            child,
            trigger,
        } => {
            json!({"type": "rule", "name": name, "child": child.0, "trigger": trigger})
        }
        Node::Ref { name } => json!({"type": "ref", "name": name}),
        Node::Atomic(child) => json!({"type": "atomic", "child": child.0}),
        Node::Tag { tag, child } => json!({"type": "tag", "tag": tag, "child": child.0}),
        Node::Gbnf { child, grammar } => {
            json!({"type": "gbnf", "child": child.0, "grammar": grammar})
        }
        Node::Ac { child, delimiters } => {
            json!({"type": "ac", "child": child.0, "delimiters": delimiters})
        }
    }
}

fn ids(children: &[NodeId]) -> Vec<u32> {
    children.iter().map(|id| id.0).collect()
}

fn node_from_json(value: &Value, path: &str) -> Result<Node, Error> {
    let obj = value
        .as_object()
        .ok_or_else(|| invalid(path, "expected an object"))?;
    let field = |name: &str| {
        obj.get(name)
            .ok_or_else(|| invalid(path, &format!("missing '{name}'")))
    };
    let string = |name: &str| -> Result<String, Error> {
        field(name)?
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| invalid(&format!("{path}.{name}"), "expected a string"))
    };
    let child =
        |name: &str| -> Result<NodeId, Error> { id_at(field(name)?, &format!("{path}.{name}")) };
    let strings = |name: &str| -> Result<Vec<String>, Error> {
        let at = format!("{path}.{name}");
        field(name)?
            .as_array()
            .ok_or_else(|| invalid(&at, "expected an array"))?
            .iter()
            .map(|item| {
                item.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| invalid(&at, "expected strings"))
            })
            .collect()
    };
    let children = || -> Result<Vec<NodeId>, Error> {
        let at = format!("{path}.children");
        field("children")?
            .as_array()
            .ok_or_else(|| invalid(&at, "expected an array"))?
            .iter()
            .map(|item| id_at(item, &at))
            .collect()
    };
    let count = |name: &str| -> Result<u32, Error> {
        let at = format!("{path}.{name}");
        let n = field(name)?
            .as_u64()
            .ok_or_else(|| invalid(&at, "expected a count"))?;
        u32::try_from(n).map_err(|_| invalid(&at, "count too large"))
    };
    let max_count = |name: &str| -> Result<Option<u32>, Error> {
        let at = format!("{path}.{name}");
        let n = field(name)?
            .as_i64()
            .ok_or_else(|| invalid(&at, "expected a count or -1"))?;
        if n == -1 {
            return Ok(None);
        }
        u32::try_from(n)
            .map(Some)
            .map_err(|_| invalid(&at, "expected a count or -1"))
    };
    let boolean = |name: &str| -> Result<bool, Error> {
        match obj.get(name) {
            None => Ok(false),
            Some(value) => value
                .as_bool()
                .ok_or_else(|| invalid(&format!("{path}.{name}"), "expected a boolean")),
        }
    };
    let ty = string("type")?;
    let node = match ty.as_str() {
        "epsilon" => Node::Eps,
        "start" => Node::Start,
        "end" => Node::End,
        "literal" => Node::Literal(string("literal")?),
        "sequence" => Node::Seq(children()?),
        "choice" => Node::Choice(children()?),
        "repetition" => Node::Repeat {
            child: child("child")?,
            min: count("min_count")?,
            max: max_count("max_count")?,
        },
        "and" => Node::Peek(child("child")?),
        "not" => Node::Not(child("child")?),
        "any" => Node::Any,
        "space" => Node::Space,
        "chars" => Node::Chars(Chars::new(
            &string("pattern")?,
            count("min_count")?,
            max_count("max_count")?,
        )),
        "json_string" => Node::StringContent { delimiter: '"' },
        "string" => {
            let delimiter = string("delimiter")?;
            let mut it = delimiter.chars();
            match (it.next(), it.next()) {
                (Some(ch), None) => Node::StringContent { delimiter: ch },
                _ => {
                    return Err(invalid(
                        &format!("{path}.delimiter"),
                        "expected one character",
                    ))
                }
            }
        }
        "until" => Node::Until {
            delimiters: strings("delimiters")?,
        },
        "schema" => Node::Schema {
            child: child("child")?,
            name: string("name")?,
            schema: field("schema")?.clone(),
            raw: boolean("raw")?,
        },
        "rule" => Node::Rule {
            name: string("name")?,
            child: child("child")?,
            trigger: boolean("trigger")?,
        },
        "ref" => Node::Ref {
            name: string("name")?,
        },
        "atomic" => Node::Atomic(child("child")?),
        "tag" => Node::Tag {
            tag: string("tag")?,
            child: child("child")?,
        },
        "gbnf" => Node::Gbnf {
            child: child("child")?,
            grammar: string("grammar")?,
        },
        "ac" => Node::Ac {
            child: child("child")?,
            delimiters: strings("delimiters")?,
        },
        other => {
            return Err(invalid(
                &format!("{path}.type"),
                &format!("unknown parser type '{other}'"),
            ))
        }
    };
    Ok(node)
}

fn id_at(value: &Value, path: &str) -> Result<NodeId, Error> {
    value
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .map(NodeId)
        .ok_or_else(|| invalid(path, "expected a parser id"))
}

fn invalid(path: &str, message: &str) -> Error {
    let message = if path.is_empty() {
        message.to_owned()
    } else {
        format!("{path}: {message}")
    };
    Error::new(ErrorKind::InvalidJson { message })
}
