//! The `.peg` text format: PEG definitions written as text, so that a parser can be kept in a
//! file, passed to the command line, or fuzzed, instead of being built in Rust.
//!
//! # Syntax
//!
//! A file is a list of definitions `name <- expression`. The first definition is the root.
//! `trigger name <- expression` defines a trigger rule (an entry point of lazy grammars).
//! `#` starts a comment that runs to the end of the line. A definition runs until the next
//! `name <-` (or `trigger name <-`), so expressions may span lines.
//!
//! | notation | meaning |
//! |---|---|
//! | `a b` | sequence |
//! | `a / b` | ordered choice |
//! | `a*` `a+` `a?` `a{3}` `a{2,}` `a{2,5}` `a{,5}` | repetition |
//! | `&a` `!a` | positive and negative lookahead |
//! | `"text"` `'text'` | literal; escapes `\n \r \t \\ \" \' \0 \xHH \u{H…}` |
//! | `[a-z_]` `[^"\\]` | one character of a class (llama.cpp class syntax); a quantifier right after a class repeats it inside the class parser |
//! | `.` | any one character |
//! | `( … )` | grouping; `()` is the empty expression |
//! | `name` | reference to a rule (defined before or after) |
//! | `@tag(a)` | tag the node (tags: letters, digits, `-`, `_`) |
//! | `atomic(a)` | drop the nodes of `a` while `a` is incomplete |
//! | `until("d", …)` | everything up to the first delimiter (not consumed) |
//! | `rest` `space` `eps` `start` `end` `marker` | the llama.cpp leaves |
//! | `json` `json_object` `json_array` `json_string` `json_number` `json_bool` `json_null` `json_string_content` | JSON values |
//! | `json_member("key", a)` | `"key"` `:` and `a`, with optional spaces |
//! | `python_value` `python_dict` `python_array` `python_string` | Python literal values |
//! | `schema(a, "name", {…json schema…})` `schema(a, "name", {…}, raw)` | parse as `a`, constrain the grammar by the schema |
//! | `gbnf(a, "gbnf text")` | parse as `a`, emit this GBNF instead |
//!
//! The built-in names are reserved: they cannot name rules.
//!
//! ```text
//! # A model that may think, then answers or calls a tool.
//! root      <- reasoning? @content(until("<tool_call>")) tool-call? end
//! reasoning <- "<think>" @reasoning(until("</think>")) "</think>" space
//! trigger tool-call <- "<tool_call>" space json space "</tool_call>"
//! ```
//!
//! Errors carry the line and column and name the rule being read. Nesting is limited to
//! [`MAX_NESTING`] levels, so hostile input cannot overflow the stack.

use std::fmt;

use serde_json::Value;

use crate::builder::{sanitize_rule_name, Builder};
use crate::error::{Error, ErrorKind};
use crate::node::{Arena, NodeId};

/// The deepest nesting of parentheses, calls, prefixes and quantifiers that the reader accepts.
pub const MAX_NESTING: usize = 100;

/// A syntax error in `.peg` text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
    /// The rule being defined, when the error is inside a definition.
    pub rule: Option<String>,
    pub message: String,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: ", self.line, self.column)?;
        if let Some(rule) = &self.rule {
            write!(f, "in rule '{rule}': ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for SyntaxError {}

/// A definition read from text, before it is built into an arena.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Definition {
    pub name: String,
    pub trigger: bool,
    pub body: Ast,
    /// Byte offset of the name, for errors found while building.
    pub offset: usize,
}

/// A parsed expression. It mirrors the builder's combinators one to one.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Ast {
    Seq(Vec<Ast>),
    Choice(Vec<Ast>),
    Repeat {
        expr: Box<Ast>,
        min: u32,
        max: Option<u32>,
    },
    Peek(Box<Ast>),
    Negate(Box<Ast>),
    Literal(String),
    /// `chars(class, min, max)`; `class` is the text between and including the brackets.
    Chars {
        class: String,
        min: u32,
        max: Option<u32>,
    },
    Any,
    Ref {
        name: String,
        offset: usize,
    },
    Tag(String, Box<Ast>),
    Atomic(Box<Ast>),
    Until(Vec<String>),
    Leaf(Leaf),
    JsonMember(String, Box<Ast>),
    Schema {
        expr: Box<Ast>,
        name: String,
        schema: Value,
        raw: bool,
    },
    Gbnf(Box<Ast>, String),
}

/// The built-in parsers without arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Leaf {
    Eps,
    Start,
    End,
    Rest,
    Space,
    Marker,
    Json,
    JsonObject,
    JsonArray,
    JsonString,
    JsonNumber,
    JsonBool,
    JsonNull,
    JsonStringContent,
    PythonValue,
    PythonDict,
    PythonArray,
    PythonString,
}

const LEAVES: &[(&str, Leaf)] = &[
    ("eps", Leaf::Eps),
    ("start", Leaf::Start),
    ("end", Leaf::End),
    ("rest", Leaf::Rest),
    ("space", Leaf::Space),
    ("marker", Leaf::Marker),
    ("json", Leaf::Json),
    ("json_object", Leaf::JsonObject),
    ("json_array", Leaf::JsonArray),
    ("json_string", Leaf::JsonString),
    ("json_number", Leaf::JsonNumber),
    ("json_bool", Leaf::JsonBool),
    ("json_null", Leaf::JsonNull),
    ("json_string_content", Leaf::JsonStringContent),
    ("python_value", Leaf::PythonValue),
    ("python_dict", Leaf::PythonDict),
    ("python_array", Leaf::PythonArray),
    ("python_string", Leaf::PythonString),
];

const CALLS: &[&str] = &[
    "atomic",
    "until",
    "json_member",
    "schema",
    "gbnf",
    "trigger",
];

/// Whether `name` is reserved by the format (a built-in or a keyword).
pub fn is_reserved(name: &str) -> bool {
    LEAVES.iter().any(|(leaf, _)| *leaf == name) || CALLS.contains(&name)
}

/// Reads `.peg` text and builds its arena; the root is the first definition.
///
/// Errors are [`ErrorKind::Syntax`] (located by line and column, naming the rule), or the
/// builder's errors (left recursion), named by rule.
///
/// ```
/// use gbnf_peg::{lower, parse, parse_peg, LowerOptions, Options, Outcome};
///
/// let arena = parse_peg(r#"
///     root <- @content(until("<call>")) call? end
///     trigger call <- "<call>" @tool-name([a-z_]+) "</call>"
/// "#).unwrap();
/// let result = parse(&arena, "Hi<call>get_time</call>", &Options::default());
/// assert_eq!(result.outcome, Outcome::Match);
///
/// let lazy = LowerOptions { lazy: true, ..LowerOptions::default() };
/// let grammar = gbnf::print(&lower(&arena, &lazy).unwrap().grammar);
/// assert!(grammar.starts_with("root ::= call\n"));
///
/// let error = parse_peg("root <- 'a' (").unwrap_err();
/// assert_eq!(error.to_string(), "1:14: rule 'root': expected ')' to close the '(' at 1:13, found end of input");
/// ```
pub fn parse_peg(text: &str) -> Result<Arena, Error> {
    let definitions = read_definitions(text).map_err(|error| Error {
        kind: ErrorKind::Syntax {
            line: error.line,
            column: error.column,
            message: error.message,
        },
        rule: error.rule,
    })?;
    let mut builder = Builder::new();
    let mut root = None;
    for definition in &definitions {
        let body = build(&mut builder, &definition.body);
        let rule = if definition.trigger {
            builder.trigger_rule(&definition.name, body)
        } else {
            builder.rule(&definition.name, body)
        };
        root.get_or_insert(rule);
    }
    if let Some(root) = root {
        builder.set_root(root);
    }
    builder.build()
}

/// Adds the nodes of `ast` to `builder`. The reader bounds the nesting, so recursion is
/// safe here.
fn build(p: &mut Builder, ast: &Ast) -> NodeId {
    match ast {
        Ast::Seq(items) => {
            if items.is_empty() {
                return p.eps();
            }
            let items: Vec<NodeId> = items.iter().map(|item| build(p, item)).collect();
            p.seq(items)
        }
        Ast::Choice(items) => {
            let items: Vec<NodeId> = items.iter().map(|item| build(p, item)).collect();
            p.choice(items)
        }
        Ast::Repeat { expr, min, max } => {
            let child = build(p, expr);
            p.add(crate::node::Node::Repeat {
                child,
                min: *min,
                max: *max,
            })
        }
        Ast::Peek(inner) => {
            let inner = build(p, inner);
            p.peek(inner)
        }
        Ast::Negate(inner) => {
            let inner = build(p, inner);
            p.negate(inner)
        }
        Ast::Literal(text) => p.literal(text),
        Ast::Chars { class, min, max } => p.add(crate::node::Node::Chars(crate::node::Chars::new(
            class, *min, *max,
        ))),
        Ast::Any => p.any(),
        Ast::Ref { name, .. } => p.ref_(name),
        Ast::Tag(tag, inner) => {
            let inner = build(p, inner);
            p.tag(tag, inner)
        }
        Ast::Atomic(inner) => {
            let inner = build(p, inner);
            p.atomic(inner)
        }
        Ast::Until(delimiters) => p.until_one_of(delimiters.iter().cloned()),
        Ast::Leaf(leaf) => match leaf {
            Leaf::Eps => p.eps(),
            Leaf::Start => p.start(),
            Leaf::End => p.end(),
            Leaf::Rest => p.rest(),
            Leaf::Space => p.space(),
            Leaf::Marker => p.marker(),
            Leaf::Json => p.json(),
            Leaf::JsonObject => p.json_object(),
            Leaf::JsonArray => p.json_array(),
            Leaf::JsonString => p.json_string(),
            Leaf::JsonNumber => p.json_number(),
            Leaf::JsonBool => p.json_bool(),
            Leaf::JsonNull => p.json_null(),
            Leaf::JsonStringContent => p.json_string_content(),
            Leaf::PythonValue => p.python_value(),
            Leaf::PythonDict => p.python_dict(),
            Leaf::PythonArray => p.python_array(),
            Leaf::PythonString => p.python_string(),
        },
        Ast::JsonMember(key, inner) => {
            let inner = build(p, inner);
            p.json_member(key, inner)
        }
        Ast::Schema {
            expr,
            name,
            schema,
            raw,
        } => {
            let inner = build(p, expr);
            p.schema(inner, name, schema.clone(), *raw)
        }
        Ast::Gbnf(inner, grammar) => {
            let inner = build(p, inner);
            p.gbnf(inner, grammar)
        }
    }
}

/// Rules that built-in parsers define; a definition may not take their names.
const BUILTIN_RULES: &[&str] = &[
    "json-value",
    "json-object",
    "json-array",
    "json-string",
    "json-number",
    "json-bool",
    "json-null",
    "python-value",
    "python-dict",
    "python-array",
    "python-string",
    "python-bool",
    "python-none",
];

/// Reads `.peg` text into definitions. The first definition is the root.
pub(crate) fn read_definitions(text: &str) -> Result<Vec<Definition>, SyntaxError> {
    let mut reader = Reader {
        text,
        pos: 0,
        rule: None,
        depth: 0,
        deepest: 0,
    };
    let mut definitions: Vec<Definition> = Vec::new();
    loop {
        reader.skip_trivia();
        if reader.at_end() {
            break;
        }
        reader.rule = None;
        let start = reader.pos;
        let mut trigger = false;
        let mut name = reader.identifier().ok_or_else(|| {
            reader.error_at(
                start,
                "expected a definition `name <- expression`".to_owned(),
            )
        })?;
        let mut name_offset = start;
        if name == "trigger" {
            reader.skip_trivia();
            name_offset = reader.pos;
            if let Some(real) = reader.identifier() {
                trigger = true;
                name = real;
            }
        }
        if is_reserved(name) {
            return Err(reader.error_at(
                name_offset,
                format!("'{name}' is a built-in name and cannot name a rule"),
            ));
        }
        let sanitized = sanitize_rule_name(name);
        if BUILTIN_RULES.contains(&sanitized.as_str()) {
            return Err(reader.error_at(
                name_offset,
                format!("'{name}' is the name of a built-in rule and cannot be redefined"),
            ));
        }
        if definitions
            .iter()
            .any(|definition| sanitize_rule_name(&definition.name) == sanitized)
        {
            return Err(reader.error_at(name_offset, format!("rule '{name}' is defined twice")));
        }
        reader.rule = Some(name.to_owned());
        reader.skip_trivia();
        if !reader.eat("<-") {
            return Err(reader.error_here(format!("expected '<-' after rule name '{name}'")));
        }
        let body = reader.choice()?;
        reader.skip_trivia();
        if !reader.at_end() && !reader.at_definition() {
            let found = reader.describe_here();
            return Err(reader.error_here(format!(
                "expected an expression or a new definition, found {found}"
            )));
        }
        definitions.push(Definition {
            name: name.to_owned(),
            trigger,
            body,
            offset: name_offset,
        });
    }
    check_references(text, &definitions)?;
    if definitions.is_empty() {
        return Err(SyntaxError {
            line: 1,
            column: 1,
            rule: None,
            message: "no definitions: expected `name <- expression`".to_owned(),
        });
    }
    Ok(definitions)
}

/// Reports the first reference to a rule that is not defined, where it is written.
fn check_references(text: &str, definitions: &[Definition]) -> Result<(), SyntaxError> {
    let defined: Vec<String> = definitions
        .iter()
        .map(|definition| sanitize_rule_name(&definition.name))
        .collect();
    for definition in definitions {
        let mut stack = vec![&definition.body];
        while let Some(ast) = stack.pop() {
            match ast {
                Ast::Ref { name, offset } if !defined.contains(&sanitize_rule_name(name)) => {
                    let (line, column) = line_column(text, *offset);
                    return Err(SyntaxError {
                        line,
                        column,
                        rule: Some(definition.name.clone()),
                        message: format!("undefined rule '{name}'"),
                    });
                }
                Ast::Seq(items) | Ast::Choice(items) => stack.extend(items),
                Ast::Repeat { expr, .. }
                | Ast::Peek(expr)
                | Ast::Negate(expr)
                | Ast::Tag(_, expr)
                | Ast::Atomic(expr)
                | Ast::JsonMember(_, expr)
                | Ast::Schema { expr, .. }
                | Ast::Gbnf(expr, _) => stack.push(expr),
                _ => {}
            }
        }
    }
    Ok(())
}

/// The line and column of byte `offset` in `text`.
pub(crate) fn line_column(text: &str, offset: usize) -> (u32, u32) {
    let location = gbnf::Location::of_offset(text, offset);
    (location.line, location.column)
}

struct Reader<'a> {
    text: &'a str,
    pos: usize,
    rule: Option<String>,
    /// Open levels (parentheses, calls, prefixes) around the current position.
    depth: usize,
    /// The deepest level, quantifiers included, reached in the expression being read.
    deepest: usize,
}

impl<'a> Reader<'a> {
    fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    fn at_end(&self) -> bool {
        self.pos >= self.text.len()
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn eat(&mut self, token: &str) -> bool {
        if self.rest().starts_with(token) {
            self.pos += token.len();
            true
        } else {
            false
        }
    }

    fn skip_trivia(&mut self) {
        loop {
            let rest = self.rest();
            let trimmed = rest.trim_start();
            self.pos += rest.len() - trimmed.len();
            if trimmed.starts_with('#') {
                self.pos += trimmed.find('\n').unwrap_or(trimmed.len());
                continue;
            }
            break;
        }
    }

    fn identifier(&mut self) -> Option<&'a str> {
        let rest = self.rest();
        let first = rest.chars().next()?;
        if !(first.is_ascii_alphabetic() || first == '_') {
            return None;
        }
        let len = rest
            .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_' || ch == '-'))
            .unwrap_or(rest.len());
        // A trailing '-' belongs to a following '<-' only if the name would otherwise eat
        // its dash, which cannot happen: '<' ends the name first.
        self.pos += len;
        Some(&rest[..len])
    }

    /// Whether a new definition starts here (`name <-` or `trigger name <-`).
    fn at_definition(&self) -> bool {
        let mut probe = Reader {
            text: self.text,
            pos: self.pos,
            rule: None,
            depth: 0,
            deepest: 0,
        };
        let Some(name) = probe.identifier() else {
            return false;
        };
        probe.skip_trivia();
        if probe.rest().starts_with("<-") {
            return true;
        }
        if name == "trigger" && probe.identifier().is_some() {
            probe.skip_trivia();
            return probe.rest().starts_with("<-");
        }
        false
    }

    fn error_at(&self, offset: usize, message: String) -> SyntaxError {
        let (line, column) = line_column(self.text, offset);
        SyntaxError {
            line,
            column,
            rule: self.rule.clone(),
            message,
        }
    }

    fn error_here(&self, message: String) -> SyntaxError {
        self.error_at(self.pos, message)
    }

    fn describe_here(&self) -> String {
        match self.peek() {
            None => "end of input".to_owned(),
            Some(ch) => format!("{ch:?}"),
        }
    }

    fn enter(&mut self) -> Result<(), SyntaxError> {
        self.depth += 1;
        self.deepest = self.deepest.max(self.depth);
        if self.depth > MAX_NESTING {
            return Err(self.error_here(format!(
                "expression nested deeper than {MAX_NESTING} levels"
            )));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    fn choice(&mut self) -> Result<Ast, SyntaxError> {
        self.enter()?;
        let mut alternatives = vec![self.sequence()?];
        loop {
            self.skip_trivia();
            if !self.eat("/") {
                break;
            }
            alternatives.push(self.sequence()?);
        }
        self.leave();
        Ok(if alternatives.len() == 1 {
            alternatives.pop().unwrap_or(Ast::Seq(Vec::new()))
        } else {
            Ast::Choice(alternatives)
        })
    }

    fn sequence(&mut self) -> Result<Ast, SyntaxError> {
        let mut items = Vec::new();
        loop {
            self.skip_trivia();
            match self.peek() {
                None | Some(')' | '/' | ',') => break,
                _ if self.at_definition() => break,
                _ => items.push(self.prefixed()?),
            }
        }
        Ok(if items.len() == 1 {
            items.pop().unwrap_or(Ast::Seq(Vec::new()))
        } else {
            Ast::Seq(items)
        })
    }

    fn prefixed(&mut self) -> Result<Ast, SyntaxError> {
        self.skip_trivia();
        if self.eat("&") {
            self.enter()?;
            let inner = self.prefixed()?;
            self.leave();
            return Ok(Ast::Peek(Box::new(inner)));
        }
        if self.eat("!") {
            self.enter()?;
            let inner = self.prefixed()?;
            self.leave();
            return Ok(Ast::Negate(Box::new(inner)));
        }
        self.postfixed()
    }

    fn postfixed(&mut self) -> Result<Ast, SyntaxError> {
        // Each quantifier wraps the expression once more, so quantifiers count as nesting
        // on top of the deepest level reached inside the expression: neither `'a'???…` nor
        // `(('a'??…)??…)??…` may build a tree deeper than the reader allows.
        let outer_deepest = self.deepest;
        self.deepest = self.depth;
        let mut expr = self.primary()?;
        let base = self.deepest;
        let mut stacked = 0;
        loop {
            let quantifier_start = self.pos;
            let (min, max) = if self.eat("*") {
                (0, None)
            } else if self.eat("+") {
                (1, None)
            } else if self.eat("?") {
                (0, Some(1))
            } else if self.peek() == Some('{') {
                self.pos += 1;
                self.bounds()?
            } else {
                break;
            };
            if let Some(max) = max {
                if max < min {
                    return Err(self.error_at(
                        quantifier_start,
                        format!("repetition maximum {max} is below its minimum {min}"),
                    ));
                }
            }
            stacked += 1;
            if base + stacked > MAX_NESTING {
                return Err(self.error_at(
                    quantifier_start,
                    format!("expression nested deeper than {MAX_NESTING} levels"),
                ));
            }
            expr = match expr {
                // A class repeats inside the class parser, which scans without a loop.
                Ast::Chars {
                    class,
                    min: 1,
                    max: Some(1),
                } => Ast::Chars { class, min, max },
                other => Ast::Repeat {
                    expr: Box::new(other),
                    min,
                    max,
                },
            };
        }
        self.deepest = outer_deepest.max(base + stacked);
        Ok(expr)
    }

    /// Reads `m}`, `m,}`, `m,n}` or `,n}` after a `{`.
    fn bounds(&mut self) -> Result<(u32, Option<u32>), SyntaxError> {
        self.skip_spaces();
        let min = if self.peek() == Some(',') {
            0
        } else {
            self.number()?
        };
        let max = if self.eat(",") {
            self.skip_spaces();
            if self.peek() == Some('}') {
                None
            } else {
                Some(self.number()?)
            }
        } else {
            Some(min)
        };
        self.skip_spaces();
        if !self.eat("}") {
            let found = self.describe_here();
            return Err(self.error_here(format!(
                "expected '}}' to close the repetition, found {found}"
            )));
        }
        Ok((min, max))
    }

    fn skip_spaces(&mut self) {
        let rest = self.rest();
        let trimmed = rest.trim_start_matches([' ', '\t']);
        self.pos += rest.len() - trimmed.len();
    }

    fn number(&mut self) -> Result<u32, SyntaxError> {
        self.skip_spaces();
        let rest = self.rest();
        let len = rest
            .find(|ch: char| !ch.is_ascii_digit())
            .unwrap_or(rest.len());
        if len == 0 {
            let found = self.describe_here();
            return Err(self.error_here(format!("expected a number, found {found}")));
        }
        let value = rest[..len]
            .parse::<u32>()
            .map_err(|_| self.error_here(format!("number {} is too large", &rest[..len])))?;
        self.pos += len;
        Ok(value)
    }

    fn primary(&mut self) -> Result<Ast, SyntaxError> {
        self.skip_trivia();
        let start = self.pos;
        match self.peek() {
            None => Err(self.error_here("expected an expression, found end of input".to_owned())),
            Some('"' | '\'') => Ok(Ast::Literal(self.string()?)),
            Some('[') => Ok(Ast::Chars {
                class: self.class()?,
                min: 1,
                max: Some(1),
            }),
            Some('.') => {
                self.pos += 1;
                Ok(Ast::Any)
            }
            Some('(') => {
                self.pos += 1;
                self.skip_trivia();
                if self.eat(")") {
                    return Ok(Ast::Seq(Vec::new()));
                }
                let inner = self.choice()?;
                self.expect_close(start)?;
                Ok(inner)
            }
            Some('@') => {
                self.pos += 1;
                let rest = self.rest();
                let len = rest
                    .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_' || ch == '-'))
                    .unwrap_or(rest.len());
                if len == 0 {
                    return Err(self.error_here("expected a tag name after '@'".to_owned()));
                }
                let tag = rest[..len].to_owned();
                self.pos += len;
                if !self.eat("(") {
                    let found = self.describe_here();
                    return Err(
                        self.error_here(format!("expected '(' after tag '@{tag}', found {found}"))
                    );
                }
                let inner = self.choice()?;
                self.expect_close(start)?;
                Ok(Ast::Tag(tag, Box::new(inner)))
            }
            Some(ch) if ch.is_ascii_alphabetic() || ch == '_' => {
                let name = self.identifier().unwrap_or_default();
                if let Some((_, leaf)) = LEAVES.iter().find(|(leaf, _)| *leaf == name) {
                    return Ok(Ast::Leaf(*leaf));
                }
                if CALLS.contains(&name) && name != "trigger" {
                    return self.call(name, start);
                }
                Ok(Ast::Ref {
                    name: name.to_owned(),
                    offset: start,
                })
            }
            Some(ch) => Err(self.error_here(format!("expected an expression, found {ch:?}"))),
        }
    }

    fn expect_close(&mut self, open: usize) -> Result<(), SyntaxError> {
        self.skip_trivia();
        if self.eat(")") {
            return Ok(());
        }
        let found = if self.at_definition() {
            "a new definition".to_owned()
        } else {
            self.describe_here()
        };
        let (line, column) = line_column(self.text, open);
        Err(self.error_here(format!(
            "expected ')' to close the '(' at {line}:{column}, found {found}"
        )))
    }

    fn call(&mut self, name: &str, start: usize) -> Result<Ast, SyntaxError> {
        self.skip_trivia();
        if !self.eat("(") {
            let found = self.describe_here();
            return Err(self.error_here(format!("expected '(' after '{name}', found {found}")));
        }
        self.enter()?;
        let ast = match name {
            "atomic" => Ast::Atomic(Box::new(self.choice()?)),
            "until" => {
                let mut delimiters = vec![self.string_arg()?];
                while self.comma()? {
                    delimiters.push(self.string_arg()?);
                }
                Ast::Until(delimiters)
            }
            "json_member" => {
                let key = self.string_arg()?;
                self.require_comma(name)?;
                Ast::JsonMember(key, Box::new(self.choice()?))
            }
            "gbnf" => {
                let inner = self.choice()?;
                self.require_comma(name)?;
                let grammar = self.string_arg()?;
                Ast::Gbnf(Box::new(inner), grammar)
            }
            _ => {
                let inner = self.choice()?;
                self.require_comma(name)?;
                let schema_name = self.string_arg()?;
                self.require_comma(name)?;
                let schema = self.json_value()?;
                let raw = if self.comma()? {
                    self.skip_trivia();
                    if self.eat("raw") {
                        true
                    } else {
                        let found = self.describe_here();
                        return Err(self.error_here(format!(
                            "expected 'raw' as the last argument of 'schema', found {found}"
                        )));
                    }
                } else {
                    false
                };
                Ast::Schema {
                    expr: Box::new(inner),
                    name: schema_name,
                    schema,
                    raw,
                }
            }
        };
        self.leave();
        self.expect_close(start)?;
        Ok(ast)
    }

    fn comma(&mut self) -> Result<bool, SyntaxError> {
        self.skip_trivia();
        Ok(self.eat(","))
    }

    fn require_comma(&mut self, name: &str) -> Result<(), SyntaxError> {
        if self.comma()? {
            return Ok(());
        }
        let found = self.describe_here();
        Err(self.error_here(format!(
            "expected ',' between the arguments of '{name}', found {found}"
        )))
    }

    fn string_arg(&mut self) -> Result<String, SyntaxError> {
        self.skip_trivia();
        match self.peek() {
            Some('"' | '\'') => self.string(),
            _ => {
                let found = self.describe_here();
                Err(self.error_here(format!("expected a quoted string, found {found}")))
            }
        }
    }

    fn json_value(&mut self) -> Result<Value, SyntaxError> {
        self.skip_trivia();
        let mut stream = serde_json::Deserializer::from_str(self.rest()).into_iter::<Value>();
        match stream.next() {
            Some(Ok(value)) => {
                self.pos += stream.byte_offset();
                Ok(value)
            }
            Some(Err(error)) => {
                let (line, column) = (error.line(), error.column());
                // serde_json counts from the start of the value.
                let base = line_column(self.text, self.pos);
                let (line, column) = if line <= 1 {
                    (base.0, base.1 + column.saturating_sub(1) as u32)
                } else {
                    (base.0 + line as u32 - 1, column as u32)
                };
                Err(SyntaxError {
                    line,
                    column,
                    rule: self.rule.clone(),
                    message: {
                        let message = error.to_string();
                        let message = match message.rfind(" at line ") {
                            Some(cut) => message[..cut].to_owned(),
                            None => message,
                        };
                        format!("invalid JSON schema: {message}")
                    },
                })
            }
            None => Err(self.error_here("expected a JSON schema".to_owned())),
        }
    }

    /// Reads a quoted literal with its escapes.
    fn string(&mut self) -> Result<String, SyntaxError> {
        let open = self.pos;
        let Some(quote) = self.peek() else {
            return Err(self.error_here("expected a string".to_owned()));
        };
        self.pos += 1;
        let mut out = String::new();
        loop {
            let Some(ch) = self.peek() else {
                return Err(self.error_at(open, "unterminated string".to_owned()));
            };
            self.pos += ch.len_utf8();
            if ch == quote {
                return Ok(out);
            }
            if ch != '\\' {
                out.push(ch);
                continue;
            }
            let escape_start = self.pos - 1;
            let Some(escaped) = self.peek() else {
                return Err(self.error_at(open, "unterminated string".to_owned()));
            };
            self.pos += escaped.len_utf8();
            let decoded = match escaped {
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                '0' => '\0',
                '\\' | '"' | '\'' => escaped,
                'x' => self.hex_escape(escape_start, 2)?,
                'u' => {
                    if self.eat("{") {
                        let rest = self.rest();
                        let len = rest.find('}').unwrap_or(rest.len());
                        let digits = &rest[..len];
                        let value = u32::from_str_radix(digits, 16).ok();
                        let Some(ch) = value
                            .and_then(char::from_u32)
                            .filter(|_| !digits.is_empty() && digits.len() <= 6)
                        else {
                            return Err(self.error_at(
                                escape_start,
                                format!("invalid escape '\\u{{{digits}}}'"),
                            ));
                        };
                        self.pos += len;
                        self.eat("}");
                        ch
                    } else {
                        self.hex_escape(escape_start, 4)?
                    }
                }
                other => {
                    return Err(self.error_at(escape_start, format!("unknown escape '\\{other}'")))
                }
            };
            out.push(decoded);
        }
    }

    fn hex_escape(&mut self, escape_start: usize, digits: usize) -> Result<char, SyntaxError> {
        let rest = self.rest();
        let text = rest.get(..digits).unwrap_or("");
        let value = if text.len() == digits && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            u32::from_str_radix(text, 16).ok().and_then(char::from_u32)
        } else {
            None
        };
        match value {
            Some(ch) => {
                self.pos += digits;
                Ok(ch)
            }
            None => Err(self.error_at(
                escape_start,
                format!("expected {digits} hex digits in the escape"),
            )),
        }
    }

    /// Reads a bracketed class verbatim (the class parser reads its escapes).
    fn class(&mut self) -> Result<String, SyntaxError> {
        let open = self.pos;
        let mut escaped = false;
        for (idx, ch) in self.rest().char_indices() {
            if escaped {
                escaped = false;
                continue;
            }
            match ch {
                '\\' => escaped = true,
                ']' if idx > 0 => {
                    let class = self.rest()[..=idx].to_owned();
                    self.pos += idx + 1;
                    return Ok(class);
                }
                '\n' => break,
                _ => {}
            }
        }
        Err(self.error_at(open, "unterminated character class".to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_one(text: &str) -> Ast {
        match read_definitions(text) {
            Ok(mut definitions) => definitions.remove(0).body,
            Err(error) => panic!("{error}"),
        }
    }

    fn error(text: &str) -> String {
        match read_definitions(text) {
            Ok(definitions) => panic!("expected an error, read {definitions:?}"),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn definitions_span_lines_and_end_at_the_next_name() {
        let definitions =
            read_definitions("a <- 'x'\n  b # c\nb <- \"y\"\ntrigger c <- a").unwrap_or_default();
        let names: Vec<(&str, bool)> = definitions
            .iter()
            .map(|d| (d.name.as_str(), d.trigger))
            .collect();
        assert_eq!(names, [("a", false), ("b", false), ("c", true)]);
    }

    #[test]
    fn classes_absorb_their_quantifier() {
        assert_eq!(
            read_one("a <- [a-z]{2,5}"),
            Ast::Chars {
                class: "[a-z]".to_owned(),
                min: 2,
                max: Some(5)
            }
        );
        assert_eq!(
            read_one("a <- .+"),
            Ast::Repeat {
                expr: Box::new(Ast::Any),
                min: 1,
                max: None
            }
        );
    }

    #[test]
    fn repetition_bounds_may_omit_the_minimum() {
        assert_eq!(
            read_one("a <- 'x'{,3}"),
            Ast::Repeat {
                expr: Box::new(Ast::Literal("x".to_owned())),
                min: 0,
                max: Some(3)
            }
        );
    }

    #[test]
    fn errors_are_located_and_name_the_rule() {
        assert_eq!(
            error("a <- 'x'\nb <- ('y'"),
            "2:10: in rule 'b': expected ')' to close the '(' at 2:6, found end of input"
        );
        assert_eq!(
            error("json <- 'x'"),
            "1:1: 'json' is a built-in name and cannot name a rule"
        );
        assert_eq!(
            error("a <- 'x\\q'"),
            "1:8: in rule 'a': unknown escape '\\q'"
        );
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let text = format!("a <- {}'x'{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(error(&text).contains("nested deeper"));
        let text = format!("a <- {}'x'", "!".repeat(100_000));
        assert!(error(&text).contains("nested deeper"));
    }

    #[test]
    fn quantifiers_count_as_nesting() {
        // The root's choice is level 1; each quantifier adds one.
        let at_cap = format!("a <- 'x'{}", "?".repeat(MAX_NESTING - 1));
        assert!(read_definitions(&at_cap).is_ok());
        let over = format!("a <- 'x'{}", "?".repeat(MAX_NESTING));
        let column = 9 + MAX_NESTING - 1;
        assert_eq!(
            error(&over),
            format!("1:{column}: in rule 'a': expression nested deeper than {MAX_NESTING} levels")
        );
        // Quantifiers on a group count on top of the levels inside it.
        let inner = MAX_NESTING / 2;
        let nested = format!(
            "a <- ({}'x'{})?",
            "!".repeat(inner),
            "?".repeat(MAX_NESTING - inner - 3)
        );
        assert!(read_definitions(&nested).is_ok());
        let nested = format!(
            "a <- ({}'x'{})??",
            "!".repeat(inner),
            "?".repeat(MAX_NESTING - inner - 3)
        );
        assert!(error(&nested).contains("nested deeper"));
    }
}
