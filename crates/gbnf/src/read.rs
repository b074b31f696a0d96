//! The reader: GBNF text in the llama.cpp dialect → IR, with located errors.
//!
//! The reader mirrors llama.cpp's `llama_grammar_parser` (v0.5.0, the version we pin)
//! token for token, so that it accepts and refuses the same texts. While reading it also
//! records what llama.cpp would see: its repetition-limit counters and the shape of its
//! expanded rules, which the validator needs to decide left recursion exactly as
//! llama.cpp does. [`read`] keeps only the IR; [`crate::check`] uses the rest.
//!
//! Decisions where llama.cpp's behaviour has no direct IR equivalent:
//! - An escape that is not a Unicode scalar value (`\uD800`, `\U00110000`) can never match
//!   text. In a class such values are dropped (ranges are clamped to scalar values); a
//!   literal that contains one becomes a class that matches nothing.
//! - A class whose ranges are all empty (`[z-a]`) becomes `[^\x00-\U0010FFFF]` (matches
//!   nothing), and its negation becomes `[\x00-\U0010FFFF]`, so that equal languages read
//!   as equal IR and printing round-trips. `[]`, `[^]` and `""` match the empty string,
//!   as in llama.cpp, and cannot be repeated.
//! - `{m,n}` with `n > 2000` means `{m,}`: llama.cpp v0.5.0 degrades such bounds to
//!   unbounded, and the reader keeps its meaning. `{m,n}` with `n < m` is a syntax error
//!   (llama.cpp loops forever on it). A raw NUL character is a syntax error (llama.cpp
//!   would silently stop reading there). Token ids above `u32::MAX` are syntax errors.
//! - `\-` is accepted, as llama.cpp v0.5.0 does (older versions refuse it; the printer
//!   never writes it).
//! - Groups nested more than [`HOIST_DEPTH`] deep, and more than [`HOIST_STACKED`]
//!   repetitions stacked on one item, are hoisted into fresh rules named
//!   `<rule>-nested-<n>` (with a different infix if that could clash with a name in the
//!   text), so that no later tree walk goes deep. llama.cpp itself turns every group
//!   into a generated rule, so the language is the same.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use indexmap::IndexMap;

use crate::error::{Error, ErrorKind, Location, WarningKind};
use crate::ir::{is_rule_name_byte, CharClass, Expr, Grammar, RuleName, Text, Token, TokenKind};

/// llama.cpp's `MAX_REPETITION_THRESHOLD`.
pub(crate) const MAX_REPETITION: u64 = 2000;
/// Groups at a depth that is a multiple of this are hoisted into their own rule.
const HOIST_DEPTH: u32 = 64;
/// Stacked repetitions (`x???…`) are hoisted into their own rule after this many.
const HOIST_STACKED: u32 = 32;

/// Reads GBNF text in llama.cpp's dialect into canonical IR.
///
/// Repetitions over llama.cpp's limits are read (as what they mean); [`crate::check`]
/// refuses them as llama.cpp does. A rule defined twice keeps its last definition.
pub fn read(text: &str) -> Result<Grammar, Error> {
    parse(text, Mode::Read).map(|parsed| parsed.grammar)
}

/// What the parser does with llama.cpp's repetition limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Ignore them.
    Read,
    /// Stop at the first violation with an error, as llama.cpp does.
    Check,
    /// Record every violation and every degraded bound in [`Parsed::limits`].
    Collect,
    /// Ignore them, but record what the validator needs.
    Analyze,
}

/// Everything the parser learned about a text.
#[derive(Debug)]
pub(crate) struct Parsed {
    pub grammar: Grammar,
    /// llama.cpp's expanded rules, reduced to what left-recursion detection needs.
    pub graph: Graph,
    /// Definitions in text order: rule name and the offset of its name.
    pub definitions: Vec<(String, usize)>,
    /// The first reference to each name, in text order: offset and the referencing rule.
    pub first_refs: IndexMap<String, (usize, String)>,
    /// Limit events, in text order (only in [`Mode::Collect`]).
    pub limits: Vec<LimitEvent>,
    /// What llama.cpp accepts but `check` warns about, seen while reading, with the offset
    /// where it starts, in text order (only in [`Mode::Check`]): repetition maxima over
    /// llama.cpp's limit, which it silently drops (at the `{`), and negated classes that
    /// exclude a character past ASCII (at the `[`; read as the positive class of the rest,
    /// see `CharClass::new`).
    pub warnings: Vec<(usize, WarningKind)>,
    /// The undefined rule llama.cpp reports, if any (see [`Parser::undefined`]).
    pub undefined: Option<String>,
}

/// A repetition that llama.cpp refuses or silently changes.
#[derive(Clone, Debug)]
pub(crate) struct LimitEvent {
    /// Offset of the repetition operator.
    pub offset: usize,
}

/// An element of a llama.cpp rule, as far as left recursion is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AElem {
    /// A character or token element: the left scan stops here.
    Term,
    Ref(u32),
}

/// llama.cpp's rules: one node per symbol (user rules, groups, repetition helpers), plus
/// auxiliary sequence nodes that stand for a repeated item inline.
#[derive(Debug, Default)]
pub(crate) struct Graph {
    pub nodes: Vec<Node>,
    /// User rule names by node.
    pub names: HashMap<u32, String>,
}

#[derive(Debug)]
pub(crate) struct Node {
    /// Alternatives, each cut after its first [`AElem::Term`].
    pub alts: Vec<Vec<AElem>>,
    /// An auxiliary node: its one alternative is inlined in llama.cpp, so it may be
    /// empty exactly when all its elements may be.
    pub aux: bool,
    /// The user rule whose text created this node (itself for user rules).
    pub owner: u32,
    /// Offset of the text that created the node (the rule name for user rules).
    pub offset: usize,
}

/// Parses `text`; see [`Mode`].
pub(crate) fn parse(text: &str, mode: Mode) -> Result<Parsed, Error> {
    let mut salt = 0u32;
    loop {
        let mut parser = Parser::new(text, mode, salt);
        parser.parse_grammar()?;
        let clash = parser
            .hoisted
            .iter()
            .any(|name| parser.symbols.contains_key(name.as_str()));
        if !clash {
            return Ok(parser.finish());
        }
        salt += 1;
    }
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    mode: Mode,
    /// Whether to record what the validator needs (llama.cpp's rules, references).
    analyze: bool,
    salt: u32,
    grammar: Grammar,
    /// User symbols → node, and the name as the IR holds it (made once, then shared by
    /// every reference: a clone is a reference count, where a new name was an allocation).
    symbols: HashMap<&'a str, (u32, RuleName), BuildHasherDefault<NameHasher>>,
    /// llama.cpp's symbol count (user names and generated rules).
    n_symbols: u64,
    graph: Graph,
    definitions: Vec<(String, usize)>,
    first_refs: IndexMap<String, (usize, String)>,
    limits: Vec<LimitEvent>,
    warnings: Vec<(usize, WarningKind)>,
    hoisted: Vec<String>,
    /// Emptied item buffers of closed groups, reused so that each group does not grow
    /// a fresh vector.
    item_pool: Vec<Vec<Item>>,
    /// The frame stack, kept between rules for the same reason.
    frames: Vec<Frame>,
    rule_name: &'a str,
    rule_node: u32,
    /// llama.cpp's symbol id of each user symbol, by node.
    symbol_ids: HashMap<u32, u64>,
    /// Generated rules (groups, repetition helpers): id and the user symbols they reference.
    generated_refs: Vec<(u64, Vec<u32>)>,
    /// The last definition of each user rule: the user symbols it references.
    defined_refs: HashMap<u32, Vec<u32>>,
    /// The highest id of a rule llama.cpp defines (its `rules` vector's length − 1).
    max_defined_id: Option<u64>,
}

/// A parsed rule body: its IR, llama.cpp's alternatives, and the user symbols it
/// references directly.
type Body = (Expr, Vec<Vec<AElem>>, Vec<u32>);

/// An open group (or the rule body itself).
struct Frame {
    /// User symbols referenced by this rule's own elements.
    refs: Vec<u32>,
    /// llama.cpp's id of the rule this frame becomes.
    llama_id: u64,
    alts: Vec<Expr>,
    a_alts: Vec<Vec<AElem>>,
    items: Vec<Item>,
    open: usize,
    nested: bool,
    depth: u32,
    symbols_before: u64,
    node: u32,
}

/// The elements llama.cpp's rule holds for one item, reduced for left recursion: at most
/// two (an item, or the auxiliary node standing for it, and a repetition helper).
#[derive(Clone, Copy)]
struct Elems {
    len: u8,
    items: [AElem; 2],
}

impl Elems {
    const EMPTY: Elems = Elems {
        len: 0,
        items: [AElem::Term; 2],
    };

    fn one(elem: AElem) -> Elems {
        Elems {
            len: 1,
            items: [elem, AElem::Term],
        }
    }

    fn as_slice(&self) -> &[AElem] {
        &self.items[..usize::from(self.len)]
    }

    fn push(&mut self, elem: AElem) {
        debug_assert!(self.len < 2, "an item holds at most two elements");
        if let Some(slot) = self.items.get_mut(usize::from(self.len)) {
            *slot = elem;
            self.len += 1;
        }
    }
}

/// One item of the sequence being read.
struct Item {
    expr: Expr,
    /// What llama.cpp's rule holds for this item.
    aelems: Elems,
    /// llama.cpp emitted no element for it (`""`, `[]`, `x{0}`): it cannot be repeated.
    zero: bool,
    /// llama.cpp's `n_prev_rules`.
    n_prev: u64,
    stacked: u32,
    /// The user symbol this item's elements reference directly (not inside a group).
    refs: Option<u32>,
}

impl Item {
    fn new(expr: Expr, aelems: Elems) -> Item {
        let zero = aelems.len == 0;
        Item {
            expr,
            aelems,
            zero,
            n_prev: 1,
            stacked: 0,
            refs: None,
        }
    }
}

/// A repetition as written: `min`, and `max` (`None`: unbounded) after llama.cpp's
/// degradation of large bounds.
struct Rep {
    min: u64,
    max: Option<u64>,
    offset: usize,
    op: &'static str,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str, mode: Mode, salt: u32) -> Parser<'a> {
        Parser {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            mode,
            analyze: matches!(mode, Mode::Check | Mode::Analyze),
            salt,
            grammar: Grammar::new(),
            symbols: HashMap::default(),
            n_symbols: 0,
            graph: Graph::default(),
            definitions: Vec::new(),
            first_refs: IndexMap::new(),
            limits: Vec::new(),
            warnings: Vec::new(),
            hoisted: Vec::new(),
            item_pool: Vec::new(),
            frames: Vec::new(),
            rule_name: "",
            rule_node: 0,
            symbol_ids: HashMap::new(),
            generated_refs: Vec::new(),
            defined_refs: HashMap::new(),
            max_defined_id: None,
        }
    }

    fn finish(self) -> Parsed {
        let undefined = self.undefined();
        Parsed {
            undefined,
            grammar: self.grammar,
            graph: self.graph,
            definitions: self.definitions,
            first_refs: self.first_refs,
            limits: self.limits,
            warnings: self.warnings,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<u8> {
        self.bytes.get(offset).copied()
    }

    fn error(&self, offset: usize, message: String) -> Error {
        Error::at(
            ErrorKind::Syntax { message },
            Location::of_offset(self.text, offset),
        )
    }

    /// How the text at `offset` reads in an error message.
    fn found(&self, offset: usize) -> String {
        let Some(ch) = self.text.get(offset..).and_then(|rest| rest.chars().next()) else {
            return "end of input".to_owned();
        };
        match ch {
            '\n' | '\r' => "end of line".to_owned(),
            _ => format!("{ch:?}"),
        }
    }

    fn loc(&self, offset: usize) -> Location {
        Location::of_offset(self.text, offset)
    }

    /// llama.cpp's `parse_space`: blanks and comments, and newlines when `newline_ok`.
    fn space(&mut self, newline_ok: bool) {
        while let Some(byte) = self.peek() {
            match byte {
                b' ' | b'\t' => self.pos += 1,
                b'\r' | b'\n' if newline_ok => self.pos += 1,
                b'#' => {
                    while let Some(byte) = self.peek() {
                        if byte == b'\r' || byte == b'\n' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
    }

    fn name(&mut self) -> Option<&'a str> {
        let start = self.pos;
        while self.peek().is_some_and(is_rule_name_byte) {
            self.pos += 1;
        }
        (self.pos > start).then(|| &self.text[start..self.pos])
    }

    /// The node of the user symbol `name` (a non-empty run of rule-name bytes), created on
    /// first mention as llama.cpp does, and its name for the IR.
    fn symbol(&mut self, name: &'a str, offset: usize) -> (u32, RuleName) {
        if let Some((node, rule)) = self.symbols.get(name) {
            return (*node, rule.clone());
        }
        self.n_symbols += 1;
        let rule = RuleName::from_checked(name);
        if !self.analyze {
            let node = self.symbols.len() as u32;
            self.symbols.insert(name, (node, rule.clone()));
            return (node, rule);
        }
        let node = self.graph.nodes.len() as u32;
        self.symbol_ids.insert(node, self.n_symbols - 1);
        self.graph.nodes.push(Node {
            alts: Vec::new(),
            aux: false,
            owner: node,
            offset,
        });
        self.graph.names.insert(node, name.to_owned());
        self.symbols.insert(name, (node, rule.clone()));
        (node, rule)
    }

    fn new_node(&mut self, alts: Vec<Vec<AElem>>, aux: bool, offset: usize) -> u32 {
        let node = self.graph.nodes.len() as u32;
        if !self.analyze {
            return node;
        }
        self.graph.nodes.push(Node {
            alts,
            aux,
            owner: self.rule_node,
            offset,
        });
        node
    }

    fn parse_grammar(&mut self) -> Result<(), Error> {
        self.space(true);
        while self.peek().is_some() {
            self.parse_rule()?;
        }
        Ok(())
    }

    fn parse_rule(&mut self) -> Result<(), Error> {
        let start = self.pos;
        let Some(name) = self.name() else {
            return Err(self.error(
                start,
                format!("expected a rule name, found {}", self.found(start)),
            ));
        };
        self.space(false);
        if !self.bytes[self.pos..].starts_with(b"::=") {
            return Err(self.error(
                self.pos,
                format!(
                    "expected '::=' after the rule name '{name}', found {}",
                    self.found(self.pos)
                ),
            ));
        }
        let (node, rule_name) = self.symbol(name, start);
        self.rule_name = name;
        self.rule_node = node;
        if self.analyze {
            self.graph.nodes[node as usize].offset = start;
            self.definitions.push((name.to_owned(), start));
        }
        self.pos += 3;
        self.space(true);
        let llama_id = self.symbol_ids.get(&node).copied().unwrap_or(0);
        let (body, a_alts, refs) = self.parse_alternates(node, llama_id)?;
        if self.analyze {
            self.defined_refs.insert(node, refs);
            self.define(llama_id);
            self.graph.nodes[node as usize].alts = a_alts;
        }
        self.grammar.insert(rule_name, body);
        match self.peek() {
            None => {}
            Some(b'\r') => {
                self.pos += 1;
                if self.peek() == Some(b'\n') {
                    self.pos += 1;
                }
            }
            Some(b'\n') => self.pos += 1,
            Some(_) => {
                return Err(self.error(
                    self.pos,
                    format!(
                        "expected the end of the line after the rule '{name}', found {}",
                        self.found(self.pos)
                    ),
                ))
            }
        }
        self.space(true);
        Ok(())
    }

    /// The alternatives of a rule body, groups included, with an explicit stack.
    fn parse_alternates(&mut self, node: u32, llama_id: u64) -> Result<Body, Error> {
        let items = self.item_pool.pop().unwrap_or_default();
        let mut stack = std::mem::take(&mut self.frames);
        stack.clear();
        stack.push(Frame {
            refs: Vec::new(),
            llama_id,
            alts: Vec::new(),
            a_alts: Vec::new(),
            items,
            open: self.pos,
            nested: false,
            depth: 0,
            symbols_before: 0,
            node,
        });
        loop {
            let Some(frame) = stack.last_mut() else {
                unreachable_frame()?;
                continue;
            };
            let nested = frame.nested;
            let start = self.pos;
            match self.peek() {
                Some(b'"') => {
                    let item = self.literal()?;
                    frame.items.push(item);
                    self.space(nested);
                }
                Some(b'[') => {
                    let item = self.class()?;
                    frame.items.push(item);
                    self.space(nested);
                }
                Some(b'<' | b'!') => {
                    let item = self.token()?;
                    frame.items.push(item);
                    self.space(nested);
                }
                Some(byte) if is_rule_name_byte(byte) => {
                    let name = self.name().unwrap_or_default();
                    let (target, rule) = self.symbol(name, start);
                    if self.analyze && !self.first_refs.contains_key(name) {
                        self.first_refs
                            .insert(name.to_owned(), (start, self.rule_name.to_owned()));
                    }
                    let mut item = Item::new(Expr::Rule(rule), Elems::one(AElem::Ref(target)));
                    item.refs = Some(target);
                    frame.items.push(item);
                    self.space(nested);
                }
                Some(b'(') => {
                    let symbols_before = self.n_symbols;
                    self.n_symbols += 1;
                    let depth = frame.depth + 1;
                    let group = self.new_node(Vec::new(), false, start);
                    self.pos += 1;
                    self.space(true);
                    let items = self.item_pool.pop().unwrap_or_default();
                    stack.push(Frame {
                        refs: Vec::new(),
                        llama_id: symbols_before,
                        alts: Vec::new(),
                        a_alts: Vec::new(),
                        items,
                        open: start,
                        nested: true,
                        depth,
                        symbols_before,
                        node: group,
                    });
                }
                Some(b'.') => {
                    frame
                        .items
                        .push(Item::new(Expr::Any, Elems::one(AElem::Term)));
                    self.pos += 1;
                    self.space(nested);
                }
                Some(op @ (b'*' | b'+' | b'?')) => {
                    self.pos += 1;
                    self.space(nested);
                    let (min, max, op) = match op {
                        b'*' => (0, None, "'*'"),
                        b'+' => (1, None, "'+'"),
                        _ => (0, Some(1), "'?'"),
                    };
                    let rep = Rep {
                        min,
                        max,
                        offset: start,
                        op,
                    };
                    self.repeat(frame, rep)?;
                }
                Some(b'{') => {
                    let rep = self.braces(nested)?;
                    self.repeat(frame, rep)?;
                }
                Some(b'|') => {
                    finish_sequence(frame, self.analyze);
                    self.pos += 1;
                    self.space(true);
                }
                other => {
                    finish_sequence(frame, self.analyze);
                    if !frame.nested {
                        break;
                    }
                    if other != Some(b')') {
                        let open = self.loc(frame.open);
                        return Err(self.error(
                            self.pos,
                            format!(
                                "expected ')' to close the group opened at {open}, found {}",
                                self.found(self.pos)
                            ),
                        ));
                    }
                    let Some(done) = stack.pop() else {
                        unreachable_frame()?;
                        continue;
                    };
                    let Some(parent) = stack.last_mut() else {
                        unreachable_frame()?;
                        continue;
                    };
                    let mut expr = alt_of(done.alts);
                    self.item_pool.push(done.items);
                    if done.depth % HOIST_DEPTH == 0 {
                        expr = self.hoist(expr);
                    }
                    if self.analyze {
                        self.graph.nodes[done.node as usize].alts = done.a_alts;
                        self.generated_refs.push((done.llama_id, done.refs));
                        self.define(done.llama_id);
                    }
                    let mut item = Item::new(expr, Elems::one(AElem::Ref(done.node)));
                    item.n_prev = (self.n_symbols - done.symbols_before).max(1);
                    parent.items.push(item);
                    self.pos += 1;
                    self.space(parent.nested);
                }
            }
        }
        let Some(top) = stack.pop() else {
            return unreachable_frame().map(|()| (Expr::Empty, Vec::new(), Vec::new()));
        };
        self.item_pool.push(top.items);
        self.frames = stack;
        Ok((alt_of(top.alts), top.a_alts, top.refs))
    }

    fn literal(&mut self) -> Result<Item, Error> {
        let open = self.pos;
        self.pos += 1;
        let mut text = String::new();
        let mut never = false;
        loop {
            match self.peek() {
                None => {
                    return Err(self.error(
                        self.pos,
                        format!(
                            "expected '\"' to close the literal opened at {}, found end of input",
                            self.loc(open)
                        ),
                    ))
                }
                Some(b'"') => break,
                Some(byte) if byte != b'\\' && byte != 0 => {
                    // A run of plain characters is copied as it is.
                    let run = self.bytes[self.pos..]
                        .iter()
                        .position(|&b| b == b'"' || b == b'\\' || b == 0)
                        .map_or(self.bytes.len(), |len| self.pos + len);
                    if text.is_empty() && self.peek_at(run) == Some(b'"') {
                        // The whole literal is one run: one allocation of the right size.
                        text = self.text[self.pos..run].to_owned();
                    } else {
                        text.push_str(&self.text[self.pos..run]);
                    }
                    self.pos = run;
                }
                Some(_) => match char::from_u32(self.char()?) {
                    Some(ch) => text.push(ch),
                    None => never = true,
                },
            }
        }
        self.pos += 1;
        let aelems = if text.is_empty() && !never {
            Elems::EMPTY
        } else {
            Elems::one(AElem::Term)
        };
        let expr = if never {
            Expr::Class(never_class())
        } else if text.is_empty() {
            Expr::Empty
        } else {
            Expr::Literal(Text::from(text))
        };
        Ok(Item::new(expr, aelems))
    }

    fn class(&mut self) -> Result<Item, Error> {
        let open = self.pos;
        self.pos += 1;
        let negated = self.peek() == Some(b'^');
        if negated {
            self.pos += 1;
        }
        let mut ranges = Vec::new();
        let mut elements = 0usize;
        loop {
            match self.peek() {
                None => {
                    return Err(self.error(
                        self.pos,
                        format!(
                            "expected ']' to close the class opened at {}, found end of input",
                            self.loc(open)
                        ),
                    ))
                }
                Some(b']') => break,
                Some(_) => {}
            }
            let lo = self.char()?;
            let mut hi = lo;
            if self.peek() == Some(b'-') && self.peek_at(self.pos + 1) != Some(b']') {
                if self.peek_at(self.pos + 1).is_none() {
                    return Err(self.error(
                        self.pos + 1,
                        format!(
                            "expected the end of a range in the class opened at {}, found end of input",
                            self.loc(open)
                        ),
                    ));
                }
                self.pos += 1;
                hi = self.char()?;
            }
            elements += 1;
            if let Some(range) = scalar_range(lo, hi) {
                ranges.push(range);
            }
        }
        self.pos += 1;
        if elements == 0 {
            // llama.cpp emits nothing for `[]` and `[^]`: they match the empty string.
            return Ok(Item::new(Expr::Empty, Elems::EMPTY));
        }
        if negated && self.mode == Mode::Check {
            let wide = ranges.iter().filter(|(lo, hi)| lo <= hi && !hi.is_ascii());
            if let Some(ch) = wide.map(|&(lo, _)| lo.max('\u{80}')).min() {
                let rule = self.rule_name.to_owned();
                let kind = WarningKind::WideNegatedClass { rule, excluded: ch };
                self.warnings.push((open, kind));
            }
        }
        // Written ranges that are all empty (reversed): the class of nothing, or negated, of
        // everything.
        let class = if ranges.iter().all(|(lo, hi)| lo > hi) {
            CharClass::new([('\0', char::MAX)], !negated)
        } else {
            CharClass::new(ranges, negated)
        };
        Ok(Item::new(Expr::Class(class), Elems::one(AElem::Term)))
    }

    fn token(&mut self) -> Result<Item, Error> {
        let start = self.pos;
        let negated = self.peek() == Some(b'!');
        if negated {
            self.pos += 1;
            if self.peek() != Some(b'<') {
                return Err(self.error(
                    self.pos,
                    format!("expected '<' after '!', found {}", self.found(self.pos)),
                ));
            }
        }
        self.pos += 1;
        let kind = if self.peek() == Some(b'[') {
            self.pos += 1;
            let digits = self.pos;
            while self.peek().is_some_and(|b| b.is_ascii_digit()) {
                self.pos += 1;
            }
            if self.pos == digits {
                return Err(self.error(
                    self.pos,
                    format!(
                        "expected a token id after '<[', found {}",
                        self.found(self.pos)
                    ),
                ));
            }
            let Ok(id) = self.text[digits..self.pos].parse::<u32>() else {
                return Err(self.error(digits, "token id is too large".to_owned()));
            };
            for close in [b']', b'>'] {
                if self.peek() != Some(close) {
                    return Err(self.error(
                        self.pos,
                        format!(
                            "expected '{}' to close the token id, found {}",
                            close as char,
                            self.found(self.pos)
                        ),
                    ));
                }
                self.pos += 1;
            }
            TokenKind::Id(id)
        } else {
            let begin = self.pos;
            while self.peek().is_some_and(|b| b != b'>') {
                if self.peek() == Some(0) {
                    return Err(self.error(self.pos, "NUL character in grammar text".to_owned()));
                }
                self.pos += 1;
            }
            if self.peek().is_none() {
                return Err(self.error(
                    self.pos,
                    format!(
                        "expected '>' to close the token opened at {}, found end of input",
                        self.loc(start)
                    ),
                ));
            }
            let text = self.text[begin..self.pos].to_owned();
            self.pos += 1;
            TokenKind::Text(text)
        };
        Ok(Item::new(
            Expr::Token(Token { kind, negated }),
            Elems::one(AElem::Term),
        ))
    }

    /// One character of a literal or class, escapes decoded: a code point that may not
    /// be a scalar value.
    fn char(&mut self) -> Result<u32, Error> {
        let start = self.pos;
        let Some(byte) = self.peek() else {
            return Err(self.error(start, "unexpected end of input".to_owned()));
        };
        if byte != b'\\' {
            let ch = self.text[start..].chars().next().unwrap_or('\0');
            if ch == '\0' {
                return Err(self.error(start, "NUL character in grammar text".to_owned()));
            }
            self.pos += ch.len_utf8();
            return Ok(u32::from(ch));
        }
        let Some(escape) = self.peek_at(start + 1) else {
            return Err(self.error(
                start,
                "expected an escape after '\\', found end of input".to_owned(),
            ));
        };
        let simple = match escape {
            b't' => Some('\t'),
            b'r' => Some('\r'),
            b'n' => Some('\n'),
            b'\\' | b'"' | b'[' | b']' | b'-' => Some(escape as char),
            _ => None,
        };
        if let Some(ch) = simple {
            self.pos += 2;
            return Ok(u32::from(ch));
        }
        let size = match escape {
            b'x' => 2,
            b'u' => 4,
            b'U' => 8,
            _ => {
                let shown = self.text[start + 1..].chars().next().unwrap_or('?');
                return Err(self.error(
                    start,
                    format!(
                        "unknown escape '\\{shown}' (use \\xHH, \\uHHHH, \\UHHHHHHHH, \\t, \\r, \\n, \\\\, \\\", \\[ or \\])"
                    ),
                ));
            }
        };
        let digits = start + 2;
        let hex = self
            .bytes
            .get(digits..digits + size)
            .filter(|hex| hex.iter().all(u8::is_ascii_hexdigit));
        let Some(hex) = hex else {
            return Err(self.error(
                digits,
                format!(
                    "expected {size} hex digits after '\\{}', found {}",
                    escape as char,
                    self.found(digits)
                ),
            ));
        };
        let value = hex.iter().fold(0u32, |acc, &digit| {
            let nibble = (digit as char).to_digit(16).unwrap_or(0);
            (acc << 4) | nibble
        });
        self.pos = digits + size;
        Ok(value)
    }

    /// `{m}`, `{m,}` or `{m,n}`, with llama.cpp's own checks.
    fn braces(&mut self, nested: bool) -> Result<Rep, Error> {
        let start = self.pos;
        self.pos += 1;
        self.space(nested);
        let min = self.int("'{'")?;
        self.space(nested);
        let max = match self.peek() {
            Some(b'}') => Some(min),
            Some(b',') => {
                self.pos += 1;
                self.space(nested);
                let max = if self.peek().is_some_and(|b| b.is_ascii_digit()) {
                    let max = self.int("','")?;
                    self.space(nested);
                    Some(max)
                } else {
                    None
                };
                if self.peek() != Some(b'}') {
                    return Err(self.error(
                        self.pos,
                        format!(
                            "expected '}}' to close the repetition opened at {}, found {}",
                            self.loc(start),
                            self.found(self.pos)
                        ),
                    ));
                }
                max
            }
            _ => {
                return Err(self.error(
                    self.pos,
                    format!(
                        "expected ',' or '}}' in the repetition opened at {}, found {}",
                        self.loc(start),
                        self.found(self.pos)
                    ),
                ))
            }
        };
        self.pos += 1;
        self.space(nested);
        if min > MAX_REPETITION {
            self.limit(
                start,
                true,
                format!("{min} repetitions exceed llama.cpp's limit of {MAX_REPETITION}"),
            )?;
        }
        let max = match max {
            // llama.cpp checks the minimum first; over it, the text is refused anyway and
            // the bound keeps its written meaning.
            Some(max) if max > MAX_REPETITION && min <= MAX_REPETITION => {
                self.limit(
                    start,
                    false,
                    format!(
                        "llama.cpp turns a maximum of {max} repetitions (over {MAX_REPETITION}) into no maximum"
                    ),
                )?;
                if self.mode == Mode::Check {
                    let rule = self.rule_name.to_owned();
                    let kind = WarningKind::RepetitionMaxDropped { rule, max };
                    self.warnings.push((start, kind));
                }
                None
            }
            other => other,
        };
        Ok(Rep {
            min,
            max,
            offset: start,
            op: "'{'",
        })
    }

    fn int(&mut self, after: &str) -> Result<u64, Error> {
        let start = self.pos;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
        if self.pos == start {
            return Err(self.error(
                start,
                format!(
                    "expected an integer after {after}, found {}",
                    self.found(start)
                ),
            ));
        }
        self.text[start..self.pos]
            .parse::<u64>()
            .map_err(|_| self.error(start, "repetition count is too large".to_owned()))
    }

    /// Records a limit event; in [`Mode::Check`] a fatal one is the error.
    fn limit(&mut self, offset: usize, fatal: bool, message: String) -> Result<(), Error> {
        match self.mode {
            Mode::Read | Mode::Analyze => Ok(()),
            Mode::Check if fatal => Err(Error::at(
                ErrorKind::RepetitionLimit {
                    rule: self.rule_name.to_owned(),
                    message,
                },
                self.loc(offset),
            )),
            Mode::Check => Ok(()),
            Mode::Collect => {
                self.limits.push(LimitEvent { offset });
                Ok(())
            }
        }
    }

    /// llama.cpp's `handle_repetitions` applied to the last item of `frame`.
    fn repeat(&mut self, frame: &mut Frame, rep: Rep) -> Result<(), Error> {
        let Some(item) = frame.items.last_mut().filter(|item| !item.zero) else {
            return Err(self.error(
                rep.offset,
                format!("expected an item to repeat before {}", rep.op),
            ));
        };
        if let Some(max) = rep.max {
            if max < rep.min {
                return Err(self.error(
                    rep.offset,
                    format!(
                        "the repetition maximum {max} is less than its minimum {}",
                        rep.min
                    ),
                ));
            }
        }
        let total = match rep.max {
            Some(max) if max > 0 => max,
            _ if rep.min > 0 => rep.min,
            _ => 1,
        };
        let n_prev = item.n_prev;
        if n_prev.saturating_mul(total) > MAX_REPETITION {
            let message = format!(
                "the repeated item expands to {n_prev} rules, and {n_prev} × {total} exceeds llama.cpp's limit of {MAX_REPETITION}"
            );
            let Some(item) = frame.items.last_mut() else {
                return Ok(());
            };
            item.n_prev = n_prev.saturating_mul(total);
            self.limit(rep.offset, true, message)?;
        }
        let Some(item) = frame.items.last_mut() else {
            return Ok(());
        };
        item.n_prev = n_prev.saturating_mul(total);
        let (Ok(min), Ok(max)) = (
            u32::try_from(rep.min),
            rep.max.map(u32::try_from).transpose(),
        ) else {
            return Err(self.error(rep.offset, "repetition count is too large".to_owned()));
        };
        let n_opt = match rep.max {
            None => 1,
            Some(max) => max - rep.min,
        };
        if n_opt > 0 && self.analyze {
            // The helpers S'(1..=n_opt) all hold the item's elements.
            self.generated_refs
                .push((self.n_symbols, item.refs.into_iter().collect()));
            self.define(self.n_symbols + n_opt - 1);
        }
        if rep.min == 0 {
            item.refs = None;
        }
        self.n_symbols += n_opt;
        // llama.cpp: S{m,n} → S×m S'(n-m), S'(k) ::= S S'(k-1) |. For left recursion,
        // S×m scans like S once, and a chain of S' like one node.
        let mut elems = item.aelems;
        if elems.len > 1 {
            let aux = self.new_node(vec![elems.as_slice().to_vec()], true, rep.offset);
            elems = Elems::one(AElem::Ref(aux));
        }
        let mut out = if rep.min > 0 { elems } else { Elems::EMPTY };
        if n_opt > 0 {
            let helper = self.graph.nodes.len() as u32;
            if self.analyze {
                let mut first = elems.as_slice().to_vec();
                if rep.max.is_none() {
                    first.push(AElem::Ref(helper));
                }
                self.new_node(vec![first, Vec::new()], false, rep.offset);
            }
            out.push(AElem::Ref(helper));
        }
        let Some(item) = frame.items.last_mut() else {
            return Ok(());
        };
        item.zero = out.len == 0;
        item.aelems = out;
        let expr = std::mem::replace(&mut item.expr, Expr::Empty);
        let mut expr = Expr::repeat(expr, min, max);
        item.stacked += 1;
        if item.stacked >= HOIST_STACKED {
            item.stacked = 0;
            expr = self.hoist(expr);
        }
        let Some(item) = frame.items.last_mut() else {
            return Ok(());
        };
        item.expr = expr;
        Ok(())
    }

    fn define(&mut self, llama_id: u64) {
        self.max_defined_id = Some(
            self.max_defined_id
                .map_or(llama_id, |max| max.max(llama_id)),
        );
    }

    /// The rule llama.cpp reports as undefined, exactly as its check after parsing: a
    /// symbol below the highest defined id with no rule, or a reference to a symbol
    /// without a rule from any rule that survives (redefinition drops only the rule's
    /// own elements, not the rules generated for its groups and repetitions).
    fn undefined(&self) -> Option<String> {
        let size = self.max_defined_id? + 1;
        let defined = |node: &u32| self.defined_refs.contains_key(node);
        let mut best: Option<(u64, u32)> = None;
        let mut consider = |id: u64, node: u32| {
            if best.map_or(true, |(best_id, _)| id < best_id) {
                best = Some((id, node));
            }
        };
        for (&node, &id) in &self.symbol_ids {
            if !defined(&node) && id < size {
                consider(id, node);
            }
        }
        let user_rules = self
            .defined_refs
            .iter()
            .filter_map(|(node, refs)| Some((*self.symbol_ids.get(node)?, refs)));
        let generated = self.generated_refs.iter().map(|(id, refs)| (*id, refs));
        for (id, refs) in user_rules.chain(generated) {
            if let Some(&missing) = refs.iter().find(|node| !defined(node)) {
                consider(id, missing);
            }
        }
        let (_, node) = best?;
        self.graph.names.get(&node).cloned()
    }

    /// Moves `expr` into a fresh rule and returns a reference to it.
    fn hoist(&mut self, expr: Expr) -> Expr {
        let infix = if self.salt == 0 {
            "nested".to_owned()
        } else {
            format!("nested{}", self.salt)
        };
        let name = RuleName::sanitize(&format!(
            "{}-{infix}-{}",
            self.rule_name,
            self.hoisted.len() + 1
        ));
        self.hoisted.push(name.as_str().to_owned());
        self.grammar.insert(name.clone(), expr);
        Expr::Rule(name)
    }
}

/// Closes the sequence being read in `frame` as one alternative.
fn finish_sequence(frame: &mut Frame, analyze: bool) {
    if analyze {
        frame
            .refs
            .extend(frame.items.iter().filter_map(|item| item.refs));
        // llama.cpp's left scan stops at the first terminal.
        let mut a_alt = Vec::new();
        'items: for item in &frame.items {
            for &elem in item.aelems.as_slice() {
                a_alt.push(elem);
                if elem == AElem::Term {
                    break 'items;
                }
            }
        }
        frame.a_alts.push(a_alt);
    }
    frame.alts.push(seq_of(&mut frame.items));
}

/// `Expr::seq` of the items' expressions, draining `items`, with one allocation of the
/// right size (the reader's hot path; `Expr::seq` grows its vector item by item).
fn seq_of(items: &mut Vec<Item>) -> Expr {
    let len: usize = items
        .iter()
        .map(|item| match &item.expr {
            Expr::Empty => 0,
            Expr::Seq(inner) => inner.len(),
            _ => 1,
        })
        .sum();
    match len {
        0 => {
            items.clear();
            Expr::Empty
        }
        1 => {
            let mut out = Expr::Empty;
            for item in items.drain(..) {
                match item.expr {
                    Expr::Empty => {}
                    Expr::Seq(mut inner) => out = inner.pop().unwrap_or(Expr::Empty),
                    other => out = other,
                }
            }
            out
        }
        _ => {
            let mut out = Vec::with_capacity(len);
            for item in items.drain(..) {
                match item.expr {
                    Expr::Empty => {}
                    Expr::Seq(inner) => out.extend(inner),
                    other => out.push(other),
                }
            }
            Expr::Seq(out)
        }
    }
}

/// `Expr::alt(alts)`, reusing the vector when no alternative is itself an alternation.
fn alt_of(mut alts: Vec<Expr>) -> Expr {
    if alts.iter().any(|alt| matches!(alt, Expr::Alt(_))) {
        return Expr::alt(alts);
    }
    match alts.len() {
        1 => alts.pop().unwrap_or(Expr::Empty),
        _ => Expr::Alt(alts),
    }
}

/// A fast hasher for rule names (short, from the grammar text): FxHash's mixing, a
/// word at a time. Collisions only cost time, and SipHash dominated symbol lookup.
#[derive(Default)]
struct NameHasher(u64);

impl Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(K);
        }
        for &byte in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(byte)).wrapping_mul(K);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The frame stack is never empty while parsing; this keeps that invariant panic-free.
fn unreachable_frame() -> Result<(), Error> {
    debug_assert!(false, "the reader's frame stack is empty");
    Err(Error::new(ErrorKind::Syntax {
        message: "internal error: the reader lost its place".to_owned(),
    }))
}

/// The class that matches no character.
pub(crate) fn never_class() -> CharClass {
    CharClass::new([('\0', char::MAX)], true)
}

/// The range `lo..=hi` of code points clamped to scalar values, if any remain.
fn scalar_range(lo: u32, hi: u32) -> Option<(char, char)> {
    let lo = match lo {
        0xD800..=0xDFFF => 0xE000,
        _ => lo,
    };
    let hi = match hi {
        0xD800..=0xDFFF => 0xD7FF,
        _ => hi.min(0x10FFFF),
    };
    if lo > hi {
        return None;
    }
    Some((char::from_u32(lo)?, char::from_u32(hi)?))
}
