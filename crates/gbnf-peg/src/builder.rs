//! The builder: combinators that append nodes to an arena, named after the grammar they
//! denote, and `build`, which resolves references and rejects left recursion.

use std::ops::{RangeFrom, RangeInclusive};

use indexmap::IndexMap;

use crate::error::{Error, ErrorKind};
use crate::node::{Arena, Chars, Node, NodeId};

/// Appends parser nodes to an arena; [`Builder::build`] checks and freezes it.
///
/// ```
/// use gbnf_peg::{parse, Builder, Options, Outcome};
///
/// let mut p = Builder::new();
/// let content = p.until("<tool_call>");
/// let content = p.tag("content", content);
/// let open = p.literal("<tool_call>");
/// let args = p.json();
/// let close = p.literal("</tool_call>");
/// let call = p.seq([open, args, close]);
/// let call = p.trigger_rule("tool-call", call);
/// let call = p.optional(call);
/// let end = p.end();
/// let root = p.seq([content, call, end]);
/// p.set_root(root);
/// let arena = p.build().unwrap();
/// let res = parse(&arena, "hi<tool_call>{\"a\": 1}</tool_call>", &Options::default());
/// assert_eq!(res.outcome, Outcome::Match);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Builder {
    nodes: Vec<Node>,
    rules: IndexMap<String, NodeId>,
    root: Option<NodeId>,
}

/// Repetition bounds: `n` (exactly), `min..=max` or `min..` (unbounded).
pub trait RepeatBounds {
    /// `(min, max)`; `max == None` is unbounded.
    fn bounds(self) -> (u32, Option<u32>);
}

impl RepeatBounds for u32 {
    fn bounds(self) -> (u32, Option<u32>) {
        (self, Some(self))
    }
}

impl RepeatBounds for RangeInclusive<u32> {
    fn bounds(self) -> (u32, Option<u32>) {
        (*self.start(), Some(*self.end()))
    }
}

impl RepeatBounds for RangeFrom<u32> {
    fn bounds(self) -> (u32, Option<u32>) {
        (self.start, None)
    }
}

impl Builder {
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Appends a node as is (no flattening) and returns its id.
    pub fn add(&mut self, node: Node) -> NodeId {
        let id = NodeId(self.nodes.len() as u32);
        self.nodes.push(node);
        id
    }

    /// The node with this id (as built so far).
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    pub fn set_root(&mut self, root: NodeId) {
        self.root = Some(root);
    }

    // Basic matchers.

    pub fn eps(&mut self) -> NodeId {
        self.add(Node::Eps)
    }

    pub fn start(&mut self) -> NodeId {
        self.add(Node::Start)
    }

    pub fn end(&mut self) -> NodeId {
        self.add(Node::End)
    }

    pub fn literal(&mut self, text: &str) -> NodeId {
        self.add(Node::Literal(text.to_owned()))
    }

    pub fn any(&mut self) -> NodeId {
        self.add(Node::Any)
    }

    // Combinators.

    /// All of `items` in order; nested sequences are flattened.
    pub fn seq(&mut self, items: impl IntoIterator<Item = NodeId>) -> NodeId {
        let mut children = Vec::new();
        for item in items {
            match &self.nodes[item.index()] {
                Node::Seq(inner) => children.extend_from_slice(inner),
                _ => children.push(item),
            }
        }
        self.add(Node::Seq(children))
    }

    /// The first of `items` that does not fail; nested choices are flattened.
    pub fn choice(&mut self, items: impl IntoIterator<Item = NodeId>) -> NodeId {
        let mut children = Vec::new();
        for item in items {
            match &self.nodes[item.index()] {
                Node::Choice(inner) => children.extend_from_slice(inner),
                _ => children.push(item),
            }
        }
        self.add(Node::Choice(children))
    }

    /// `p` repeated within `bounds` (`3`, `1..=3`, `2..`).
    pub fn repeat(&mut self, p: NodeId, bounds: impl RepeatBounds) -> NodeId {
        let (min, max) = bounds.bounds();
        self.add(Node::Repeat { child: p, min, max })
    }

    pub fn one_or_more(&mut self, p: NodeId) -> NodeId {
        self.repeat(p, 1..)
    }

    pub fn zero_or_more(&mut self, p: NodeId) -> NodeId {
        self.repeat(p, 0..)
    }

    pub fn optional(&mut self, p: NodeId) -> NodeId {
        self.repeat(p, 0..=1)
    }

    /// Positive lookahead `&p`.
    pub fn peek(&mut self, p: NodeId) -> NodeId {
        self.add(Node::Peek(p))
    }

    /// Negative lookahead `!p`.
    pub fn negate(&mut self, p: NodeId) -> NodeId {
        self.add(Node::Not(p))
    }

    // Character classes and scanners.

    /// Code points of `class` (e.g. `[a-z\u00e9]`, `[^"]`), repeated within `bounds`.
    pub fn chars(&mut self, class: &str, bounds: impl RepeatBounds) -> NodeId {
        let (min, max) = bounds.bounds();
        self.add(Node::Chars(Chars::new(class, min, max)))
    }

    pub fn space(&mut self) -> NodeId {
        self.add(Node::Space)
    }

    /// Everything up to (not including) `delimiter`.
    pub fn until(&mut self, delimiter: &str) -> NodeId {
        self.add(Node::Until {
            delimiters: vec![delimiter.to_owned()],
        })
    }

    /// Everything up to (not including) the first of `delimiters`.
    pub fn until_one_of<S: Into<String>>(
        &mut self,
        delimiters: impl IntoIterator<Item = S>,
    ) -> NodeId {
        let delimiters = delimiters.into_iter().map(Into::into).collect();
        self.add(Node::Until { delimiters })
    }

    /// Everything that is left.
    pub fn rest(&mut self) -> NodeId {
        self.add(Node::Until {
            delimiters: Vec::new(),
        })
    }

    /// A JSON-like string body up to the unescaped ASCII `delimiter`.
    pub fn string_content(&mut self, delimiter: char) -> NodeId {
        self.add(Node::StringContent { delimiter })
    }

    /// `"<...>"` or `"[...]"`: a special-token-like marker.
    pub fn marker(&mut self) -> NodeId {
        let angle = {
            let open = self.literal("<");
            let body = self.until(">");
            let close = self.literal(">");
            self.seq([open, body, close])
        };
        let square = {
            let open = self.literal("[");
            let body = self.until("]");
            let close = self.literal("]");
            self.seq([open, body, close])
        };
        self.choice([angle, square])
    }

    // JSON.

    /// Any JSON value (rule `json-value`).
    pub fn json(&mut self) -> NodeId {
        self.rule_with("json-value", |p| {
            let items = [
                p.json_object(),
                p.json_array(),
                p.json_string(),
                p.json_number(),
                p.json_bool(),
                p.json_null(),
            ];
            p.choice(items)
        })
    }

    /// Rule `json-object`: `"{" ws ( "}" | member (ws "," ws member)* ws "}" )`.
    pub fn json_object(&mut self) -> NodeId {
        self.rule_with("json-object", |p| {
            let member = {
                let key = p.json_string();
                let value = p.json();
                p.spaced_pair(key, value)
            };
            p.delimited("{", member, "}")
        })
    }

    /// Rule `json-array`: `"[" ws ( "]" | value (ws "," ws value)* ws "]" )`.
    pub fn json_array(&mut self) -> NodeId {
        self.rule_with("json-array", |p| {
            let value = p.json();
            p.delimited("[", value, "]")
        })
    }

    /// Rule `json-string`: a quoted JSON string.
    pub fn json_string(&mut self) -> NodeId {
        self.rule_with("json-string", |p| {
            let open = p.literal("\"");
            let body = p.json_string_content();
            let close = p.literal("\"");
            p.seq([open, body, close])
        })
    }

    /// Rule `json-number`, with a negative lookahead so that a streamed `3` is not committed
    /// while `3.14` may follow.
    pub fn json_number(&mut self) -> NodeId {
        self.rule_with("json-number", |p| {
            let minus = p.literal("-");
            let minus = p.optional(minus);
            let int = {
                let zero = p.literal("0");
                let first = p.chars("[1-9]", 1);
                let rest = p.chars("[0-9]", 0..);
                let nonzero = p.seq([first, rest]);
                p.choice([zero, nonzero])
            };
            let frac = {
                let dot = p.literal(".");
                let digits = p.chars("[0-9]", 1..);
                let frac = p.seq([dot, digits]);
                p.optional(frac)
            };
            let exp = {
                let e = p.chars("[eE]", 1);
                let sign = p.chars("[+-]", 1);
                let sign = p.optional(sign);
                let digits = p.chars("[0-9]", 1..);
                let exp = p.seq([e, sign, digits]);
                p.optional(exp)
            };
            let follow = p.chars("[0-9.eE+-]", 1);
            let stop = p.negate(follow);
            p.seq([minus, int, frac, exp, stop])
        })
    }

    /// Rule `json-bool`.
    pub fn json_bool(&mut self) -> NodeId {
        self.rule_with("json-bool", |p| {
            let t = p.literal("true");
            let f = p.literal("false");
            p.choice([t, f])
        })
    }

    /// Rule `json-null`.
    pub fn json_null(&mut self) -> NodeId {
        self.rule_with("json-null", |p| p.literal("null"))
    }

    /// A JSON string body without its quotes.
    pub fn json_string_content(&mut self) -> NodeId {
        self.string_content('"')
    }

    /// `"key" ws ":" ws value`.
    pub fn json_member(&mut self, key: &str, value: NodeId) -> NodeId {
        let quoted = serde_json::Value::String(key.to_owned()).to_string();
        let key = self.literal(&quoted);
        self.spaced_pair(key, value)
    }

    // Python-style values.

    /// Rule `python-value`: dict, array, string, number, `True`/`False`/`None`.
    pub fn python_value(&mut self) -> NodeId {
        self.rule_with("python-value", |p| {
            let items = [
                p.python_dict(),
                p.python_array(),
                p.python_string(),
                p.json_number(),
                p.python_bool(),
                p.python_none(),
            ];
            p.choice(items)
        })
    }

    /// Rule `python-dict`; it consumes trailing white space.
    pub fn python_dict(&mut self) -> NodeId {
        self.rule_with("python-dict", |p| {
            let member = {
                let key = p.python_string();
                let value = p.python_value();
                p.spaced_pair(key, value)
            };
            let dict = p.delimited("{", member, "}");
            let ws = p.space();
            p.seq([dict, ws])
        })
    }

    /// Rule `python-array`: items separated by `"," ws` (no white space before commas).
    pub fn python_array(&mut self) -> NodeId {
        self.rule_with("python-array", |p| {
            let open = p.literal("[");
            let ws = p.space();
            let close = p.literal("]");
            let empty = p.seq([close]);
            let items = {
                let first = p.python_value();
                let comma = p.literal(",");
                let ws2 = p.space();
                let next = p.python_value();
                let more = p.seq([comma, ws2, next]);
                let more = p.zero_or_more(more);
                let ws3 = p.space();
                let close = p.literal("]");
                p.seq([first, more, ws3, close])
            };
            let body = p.choice([empty, items]);
            p.seq([open, ws, body])
        })
    }

    /// Rule `python-string`: double- or single-quoted.
    pub fn python_string(&mut self) -> NodeId {
        self.rule_with("python-string", |p| {
            let double = {
                let open = p.literal("\"");
                let body = p.string_content('"');
                let close = p.literal("\"");
                p.seq([open, body, close])
            };
            let single = {
                let open = p.literal("'");
                let body = p.string_content('\'');
                let close = p.literal("'");
                p.seq([open, body, close])
            };
            p.choice([double, single])
        })
    }

    /// Rule `python-bool`: `True` or `False`.
    pub fn python_bool(&mut self) -> NodeId {
        self.rule_with("python-bool", |p| {
            let t = p.literal("True");
            let f = p.literal("False");
            p.choice([t, f])
        })
    }

    /// Rule `python-none`: `None`.
    pub fn python_none(&mut self) -> NodeId {
        self.rule_with("python-none", |p| p.literal("None"))
    }

    // Grammar structure.

    /// A reference to the rule `name` (sanitised), resolved by `build`.
    pub fn ref_(&mut self, name: &str) -> NodeId {
        let name = sanitize_rule_name(name);
        self.add(Node::Ref { name })
    }

    /// Defines rule `name` (sanitised: runs of `[^a-zA-Z0-9-]` become `-`) as `p` and returns
    /// its `Rule` node. Defining a name again replaces its body.
    pub fn rule(&mut self, name: &str, p: NodeId) -> NodeId {
        self.define_rule(name, p, false)
    }

    /// Like [`Builder::rule`], for an entry point of lazy grammars.
    pub fn trigger_rule(&mut self, name: &str, p: NodeId) -> NodeId {
        self.define_rule(name, p, true)
    }

    /// Rule `name`, built by `body` only if it does not exist yet. Inside `body`, the rule can
    /// already be referred to (by `ref_` or by calling this again), so rules may recurse.
    pub fn rule_with(&mut self, name: &str, body: impl FnOnce(&mut Builder) -> NodeId) -> NodeId {
        let name = sanitize_rule_name(name);
        if let Some(&id) = self.rules.get(&name) {
            return id;
        }
        let placeholder = self.eps();
        let id = self.add(Node::Rule {
            name: name.clone(),
            child: placeholder,
            trigger: false,
        });
        self.rules.insert(name, id);
        let child = body(self);
        if let Node::Rule { child: slot, .. } = &mut self.nodes[id.index()] {
            *slot = child;
        }
        id
    }

    /// Parses like `p`; lowers to the JSON schema `schema` (rule name prefix `name`). `raw`
    /// means the value is not a quoted JSON string (it only matters for string schemas).
    pub fn schema(
        &mut self,
        p: NodeId,
        name: &str,
        schema: serde_json::Value,
        raw: bool,
    ) -> NodeId {
        self.add(Node::Schema {
            child: p,
            name: name.to_owned(),
            schema,
            raw,
        })
    }

    /// Drops the AST nodes under `p` while `p` needs more input.
    pub fn atomic(&mut self, p: NodeId) -> NodeId {
        self.add(Node::Atomic(p))
    }

    /// Makes an AST node tagged `tag` for what `p` matches.
    pub fn tag(&mut self, tag: &str, p: NodeId) -> NodeId {
        self.add(Node::Tag {
            tag: tag.to_owned(),
            child: p,
        })
    }

    /// Parses like `p`; lowers to the GBNF `text` verbatim (empty text emits nothing).
    pub fn gbnf(&mut self, p: NodeId, text: &str) -> NodeId {
        self.add(Node::Gbnf {
            child: p,
            grammar: text.to_owned(),
        })
    }

    /// Parses like `p`; lowers to "everything up to and including the first delimiter".
    pub fn ac<S: Into<String>>(
        &mut self,
        p: NodeId,
        delimiters: impl IntoIterator<Item = S>,
    ) -> NodeId {
        let delimiters = delimiters.into_iter().map(Into::into).collect();
        self.add(Node::Ac {
            child: p,
            delimiters,
        })
    }

    /// Resolves references, checks the arena and returns it.
    pub fn build(self) -> Result<Arena, Error> {
        let root = self.root.ok_or_else(|| Error::new(ErrorKind::NoRoot))?;
        Arena::from_parts(self.nodes, self.rules, root)
    }

    fn define_rule(&mut self, name: &str, p: NodeId, trigger: bool) -> NodeId {
        let name = sanitize_rule_name(name);
        if let Some(&id) = self.rules.get(&name) {
            self.nodes[id.index()] = Node::Rule {
                name,
                child: p,
                trigger,
            };
            return id;
        }
        let id = self.add(Node::Rule {
            name: name.clone(),
            child: p,
            trigger,
        });
        self.rules.insert(name, id);
        id
    }

    /// `key ws ":" ws value`.
    fn spaced_pair(&mut self, key: NodeId, value: NodeId) -> NodeId {
        let ws1 = self.space();
        let colon = self.literal(":");
        let ws2 = self.space();
        self.seq([key, ws1, colon, ws2, value])
    }

    /// `open ws ( close | item (ws "," ws item)* ws close )`.
    fn delimited(&mut self, open: &str, item: NodeId, close: &str) -> NodeId {
        let open = self.literal(open);
        let ws = self.space();
        let empty = self.literal(close);
        let items = {
            let ws1 = self.space();
            let comma = self.literal(",");
            let ws2 = self.space();
            let more = self.seq([ws1, comma, ws2, item]);
            let more = self.zero_or_more(more);
            let ws3 = self.space();
            let close = self.literal(close);
            self.seq([item, more, ws3, close])
        };
        let body = self.choice([empty, items]);
        self.seq([open, ws, body])
    }
}

/// A rule name as GBNF accepts it: every run of characters outside `[a-zA-Z0-9-]` becomes
/// one `-`.
pub fn sanitize_rule_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_run = false;
    for ch in name.chars() {
        if ch.is_ascii_alphanumeric() || ch == '-' {
            out.push(ch);
            in_run = false;
        } else if !in_run {
            out.push('-');
            in_run = true;
        }
    }
    out
}

impl Arena {
    /// Checks `nodes`, resolves `Ref` child slots to their `Rule` nodes and compiles the
    /// scanners. Shared by `Builder::build` and `Arena::from_json`.
    pub(crate) fn from_parts(
        mut nodes: Vec<Node>,
        rules: IndexMap<String, NodeId>,
        root: NodeId,
    ) -> Result<Arena, Error> {
        let n_nodes = nodes.len();
        let valid = |id: NodeId| id.index() < n_nodes;
        if !valid(root) {
            return Err(invalid(format!("root {} is not a node", root.0)));
        }
        for (name, &id) in &rules {
            match nodes.get(id.index()) {
                Some(Node::Rule {
                    name: rule_name, ..
                }) if rule_name == name => {}
                _ => {
                    return Err(invalid(format!(
                        "rules.{name} is not a rule node named '{name}'"
                    )))
                }
            }
        }
        for (idx, node) in nodes.iter().enumerate() {
            if let Some(&bad) = node.children().iter().find(|&&child| !valid(child)) {
                return Err(invalid(format!(
                    "parsers[{idx}] has child {} which is not a node",
                    bad.0
                )));
            }
            if let Node::StringContent { delimiter } = node {
                if !delimiter.is_ascii() {
                    return Err(Error::new(ErrorKind::InvalidNode {
                        message: format!("string delimiter {delimiter:?} is not ascii"),
                    }));
                }
            }
        }
        // Resolve references: a chain of refs ends at a rule (refs never point at refs).
        let resolve = |nodes: &[Node], id: NodeId| -> Result<NodeId, Error> {
            match &nodes[id.index()] {
                Node::Ref { name } => rules.get(name).copied().ok_or_else(|| {
                    Error::in_rule(ErrorKind::UndefinedRule { name: name.clone() }, name)
                }),
                _ => Ok(id),
            }
        };
        for idx in 0..n_nodes {
            let children: Vec<NodeId> = nodes[idx].children().to_vec();
            for (slot, child) in children.into_iter().enumerate() {
                let target = resolve(&nodes, child)?;
                nodes[idx].children_mut()[slot] = target;
            }
        }
        let root = resolve(&nodes, root)?;
        let mut arena = Arena {
            scanners: nodes
                .iter()
                .map(crate::scan::UntilScanner::for_node)
                .collect(),
            nodes,
            rules,
            root,
            nullable: Vec::new(),
            first: Vec::new(),
            prog: crate::prog::Program::default(),
        };
        arena.nullable = arena.compute_nullable();
        arena.check_left_recursion()?;
        arena.first = crate::first::first_sets(&arena.nodes, &arena.nullable);
        arena.prog =
            crate::prog::Program::compile(&arena.nodes, arena.root, &arena.nullable, &arena.first);
        Ok(arena)
    }

    /// Rejects a node that can reach itself at the same offset (through children that may
    /// run without consuming input). Iterative: nullable fixpoint, then a DFS with an explicit
    /// stack.
    fn check_left_recursion(&self) -> Result<(), Error> {
        let n = self.nodes.len();
        let nullable = &self.nullable;
        // Edges: the children a node may run at its own start offset.
        let first = |idx: usize| -> Vec<NodeId> {
            match &self.nodes[idx] {
                Node::Seq(children) => {
                    let mut out = Vec::new();
                    for &child in children {
                        out.push(child);
                        if !nullable[child.index()] {
                            break;
                        }
                    }
                    out
                }
                node => node.children().to_vec(),
            }
        };
        // 0 = unvisited, 1 = on the DFS stack, 2 = done.
        let mut state = vec![0u8; n];
        for start in 0..n {
            if state[start] != 0 {
                continue;
            }
            let mut stack: Vec<(usize, Vec<NodeId>, usize)> = vec![(start, first(start), 0)];
            state[start] = 1;
            while let Some((node, edges, next)) = stack.last_mut() {
                let Some(&child) = edges.get(*next) else {
                    state[*node] = 2;
                    stack.pop();
                    continue;
                };
                *next += 1;
                match state[child.index()] {
                    0 => {
                        state[child.index()] = 1;
                        let edges = first(child.index());
                        stack.push((child.index(), edges, 0));
                    }
                    1 => {
                        let at = stack
                            .iter()
                            .position(|(node, _, _)| *node == child.index())
                            .unwrap_or(0);
                        return Err(self.cycle_error(stack[at..].iter().map(|(node, _, _)| *node)));
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    fn cycle_error(&self, cycle: impl Iterator<Item = usize>) -> Error {
        let cycle: Vec<usize> = cycle.collect();
        let mut names: Vec<String> = cycle
            .iter()
            .filter_map(|&idx| match &self.nodes[idx] {
                Node::Rule { name, .. } => Some(name.clone()),
                _ => None,
            })
            .collect();
        if names.is_empty() {
            names = cycle.iter().map(|idx| format!("node {idx}")).collect();
        }
        let rule = names[0].clone();
        names.push(rule.clone());
        Error::in_rule(ErrorKind::LeftRecursion { cycle: names }, &rule)
    }

    /// Per node: whether it can succeed without consuming input (least fixpoint).
    fn compute_nullable(&self) -> Vec<bool> {
        let mut nullable = vec![false; self.nodes.len()];
        loop {
            let mut changed = false;
            for (idx, node) in self.nodes.iter().enumerate() {
                if nullable[idx] {
                    continue;
                }
                let now = match node {
                    Node::Eps | Node::Start | Node::End | Node::Peek(_) | Node::Not(_) => true,
                    Node::Space | Node::StringContent { .. } | Node::Until { .. } => true,
                    Node::Ref { .. } => false,
                    Node::Any => false,
                    Node::Literal(text) => text.is_empty(),
                    Node::Chars(chars) => chars.min == 0,
                    Node::Repeat { child, min, .. } => *min == 0 || nullable[child.index()],
                    Node::Seq(children) => children.iter().all(|c| nullable[c.index()]),
                    Node::Choice(children) => children.iter().any(|c| nullable[c.index()]),
                    other => other.children().iter().any(|c| nullable[c.index()]),
                };
                if now {
                    nullable[idx] = true;
                    changed = true;
                }
            }
            if !changed {
                return nullable;
            }
        }
    }
}

fn invalid(message: String) -> Error {
    Error::new(ErrorKind::InvalidJson { message })
}
