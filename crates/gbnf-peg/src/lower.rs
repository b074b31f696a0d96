//! PEG arena → GBNF: the same definition that parses model output constrains its
//! generation.
//!
//! Lowering follows llama.cpp's `build_grammar` (see the crate documentation for the
//! combinators), with these choices:
//!
//! - Every PEG `rule` becomes a GBNF rule of the same (sanitised) name; generated rules
//!   (`space`, `until-<id>…`, `ac-<id>…`, schema rules) get names that cannot collide.
//! - Lookahead (`peek`, `negate`) has no context-free equivalent, so it lowers to nothing:
//!   the grammar accepts a superset of what the parser accepts there. A warning names the
//!   rule.
//! - `until` lowers to an exact automaton (module `until_automaton`), `rest` to `.*`.
//! - `schema(p, name, schema, raw)` lowers to the JSON schema's rules (crate
//!   `gbnf-json-schema`), except raw string schemas, which use `p`'s grammar (a raw string
//!   compiled from a schema would be ambiguous against the text that follows it).
//! - `gbnf(p, text)` lowers to `text`, read as a GBNF expression (or, if it contains `::=`,
//!   as a grammar whose `root` rule is used); an empty text lowers to nothing.
//! - Non-lazy: the rules reachable from the root, and `root ::= <root parser>`.
//!   Lazy: the rules reachable from the trigger rules, and `root ::= t1 | t2 | …` (sorted by
//!   name); the trigger rule names are returned so that callers can pair them with trigger
//!   words.
//!
//! With [`SpaceStyle::Exact`] every string the parser matches is accepted by the grammar;
//! [`SpaceStyle::Bounded`] (llama.cpp's choice, and the default) bounds whitespace runs so
//! that a sampler cannot loop on whitespace.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

use gbnf::{CharClass, Expr, Grammar, GrammarBuilder, RuleName};

use crate::error::{Error, ErrorKind};
use crate::node::{Arena, Chars, Node, NodeId};
use crate::until_automaton::{lower_automaton, AutomatonKind};

/// How to lower.
#[derive(Clone, Copy, Debug, Default)]
pub struct LowerOptions<'a> {
    /// Emit only what the trigger rules reach, with `root` choosing among them.
    pub lazy: bool,
    /// What the PEG `space` parser becomes.
    pub space: SpaceStyle,
    /// Options for `schema` nodes.
    pub json_schema: gbnf_json_schema::Options<'a>,
}

/// The GBNF rule that `space` lowers to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SpaceStyle {
    /// llama.cpp's `space ::= | " " | "\n"{1,2} [ \t]{0,20}`: at most one space, or one or
    /// two newlines and a bounded indent.
    #[default]
    Bounded,
    /// `[ \t\n\v\f\r]*`: exactly what the parser's `space` matches.
    Exact,
}

/// A lowered grammar.
#[derive(Clone, Debug)]
pub struct Lowered {
    /// The grammar; its start rule is `root`.
    pub grammar: Grammar,
    /// In lazy mode, the trigger rules that `root` chooses among (sorted by name); empty
    /// otherwise.
    pub triggers: Vec<RuleName>,
    pub warnings: Vec<Warning>,
}

/// Something the grammar does not enforce exactly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    pub kind: WarningKind,
    /// The rule the node is in (`root` for the root parser outside any rule).
    pub rule: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WarningKind {
    /// A `peek` or `negate` was dropped: the grammar accepts a superset here.
    LookaheadDropped,
    /// The JSON schema compiler reported something (an unenforced keyword, …).
    Schema { message: String },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rule '{}': ", self.rule)?;
        match &self.kind {
            WarningKind::LookaheadDropped => f.write_str(
                "lookahead has no GBNF equivalent and was dropped; the grammar accepts more here",
            ),
            WarningKind::Schema { message } => write!(f, "schema: {message}"),
        }
    }
}

/// Lowers `arena` to a GBNF grammar whose start rule is `root`.
pub fn lower(arena: &Arena, options: &LowerOptions) -> Result<Lowered, Error> {
    let mut ctx = Ctx {
        arena,
        options,
        builder: GrammarBuilder::new(),
        rule_names: HashMap::new(),
        queue: Vec::new(),
        space: None,
        automata: HashMap::new(),
        schemas: HashMap::new(),
        warnings: Vec::new(),
        warned: HashSet::new(),
    };
    let root_name = ctx.builder.reserve("root");
    let mut triggers = Vec::new();
    if options.lazy {
        let mut by_name: BTreeMap<String, NodeId> = BTreeMap::new();
        for (_, &id) in arena.rules() {
            if let Node::Rule {
                name,
                trigger: true,
                ..
            } = arena.node(id)
            {
                by_name.insert(name.clone(), id);
            }
        }
        if by_name.is_empty() {
            return Err(Error::new(ErrorKind::NoTriggerRules));
        }
        for &id in by_name.values() {
            triggers.push(ctx.rule_name(id));
        }
        let body = Expr::alt(triggers.iter().map(Expr::rule));
        ctx.builder.define(&root_name, body);
    } else {
        let root = arena.root();
        match arena.node(root) {
            // The root parser is the rule `root` itself: it *is* the start rule.
            Node::Rule { name, .. } if RuleName::sanitize(name).as_str() == "root" => {
                ctx.rule_names.insert(root, root_name.clone());
                ctx.queue.push(root);
            }
            _ => {
                let body = ctx.lower_node(root, "root")?;
                ctx.builder.define(&root_name, body);
            }
        }
    }
    while let Some(rule_id) = ctx.queue.pop() {
        let Node::Rule { name, child, .. } = arena.node(rule_id) else {
            continue;
        };
        let body = ctx.lower_node(*child, name)?;
        let gbnf_name = ctx.rule_names[&rule_id].clone();
        ctx.builder.define(&gbnf_name, body);
    }
    let mut grammar = ctx.builder.finish();
    remove_nullable_loops(&mut grammar);
    remove_unreachable(&mut grammar, &root_name);
    Ok(Lowered {
        grammar: make_shallow(grammar),
        triggers,
        warnings: ctx.warnings,
    })
}

struct Ctx<'a, 'o> {
    arena: &'a Arena,
    options: &'a LowerOptions<'o>,
    builder: GrammarBuilder,
    /// PEG rule node → its GBNF rule.
    rule_names: HashMap<NodeId, RuleName>,
    /// Rules named but not lowered yet.
    queue: Vec<NodeId>,
    space: Option<RuleName>,
    automata: HashMap<(AutomatonKind, Vec<String>), Expr>,
    schemas: HashMap<(String, String), Expr>,
    warnings: Vec<Warning>,
    warned: HashSet<(String, &'static str)>,
}

/// The lowered values of the iterative lowering, each with its depth ([`Expr::depth`]).
#[derive(Default)]
struct Values(Vec<(Expr, usize)>);

impl Values {
    /// Pushes an expression made elsewhere (a leaf, an automaton, a read text), measuring it.
    fn push(&mut self, expr: Expr) {
        let depth = expr.depth();
        self.0.push((expr, depth));
    }

    /// Pushes an expression built from values, with an upper bound on its depth.
    fn push_with_depth(&mut self, expr: Expr, depth: usize) {
        self.0.push((expr, depth));
    }
}

/// A step of the iterative lowering: visit a node, or combine the values of its children.
enum Task {
    Visit(NodeId),
    Seq(usize),
    Choice(usize),
    Repeat { min: u32, max: Option<u32> },
}

impl Ctx<'_, '_> {
    /// The GBNF rule of a PEG rule node, reserving it (and queueing its body) on first use.
    fn rule_name(&mut self, id: NodeId) -> RuleName {
        if let Some(name) = self.rule_names.get(&id) {
            return name.clone();
        }
        let preferred = match self.arena.node(id) {
            Node::Rule { name, .. } => name.as_str(),
            _ => "rule",
        };
        let name = self.builder.reserve(preferred);
        self.rule_names.insert(id, name.clone());
        self.queue.push(id);
        name
    }

    /// Lowers the tree under `top` (stopping at rules, which become references) with an
    /// explicit stack: definitions may nest arbitrarily deep.
    ///
    /// The values are kept at most [`GrammarBuilder::MAX_DEPTH`] deep (each with its
    /// depth): a part that deep becomes a rule of its own before it is nested further, so
    /// no deep expression ever exists, even when an error drops the values half-way.
    fn lower_node(&mut self, top: NodeId, rule: &str) -> Result<Expr, Error> {
        let arena = self.arena;
        let mut tasks = vec![Task::Visit(top)];
        let mut values = Values::default();
        while let Some(task) = tasks.pop() {
            let id = match task {
                Task::Visit(id) => id,
                Task::Seq(n) => {
                    let (items, depth) = self.children(&mut values, n, rule);
                    values.push_with_depth(Expr::seq(items), depth + 1);
                    continue;
                }
                Task::Choice(n) => {
                    let (items, depth) = self.children(&mut values, n, rule);
                    if items.is_empty() {
                        values.push(never());
                    } else {
                        values.push_with_depth(Expr::alt(items), depth + 1);
                    }
                    continue;
                }
                Task::Repeat { min, max } => {
                    let (mut items, depth) = self.children(&mut values, 1, rule);
                    let item = items.pop().unwrap_or(Expr::Empty);
                    values.push_with_depth(Expr::repeat(item, min, max), depth + 1);
                    continue;
                }
            };
            match arena.node(id) {
                Node::Eps | Node::Start | Node::End => values.push(Expr::Empty),
                Node::Literal(text) => values.push(Expr::literal(text)),
                Node::Seq(children) => {
                    tasks.push(Task::Seq(children.len()));
                    tasks.extend(children.iter().rev().map(|&child| Task::Visit(child)));
                }
                Node::Choice(children) => {
                    tasks.push(Task::Choice(children.len()));
                    tasks.extend(children.iter().rev().map(|&child| Task::Visit(child)));
                }
                Node::Repeat { child, min, max } => {
                    tasks.push(Task::Repeat {
                        min: *min,
                        max: *max,
                    });
                    tasks.push(Task::Visit(*child));
                }
                Node::Peek(_) | Node::Not(_) => {
                    self.warn(rule, "lookahead", WarningKind::LookaheadDropped);
                    values.push(Expr::Empty);
                }
                Node::Any => values.push(Expr::Any),
                Node::Space => values.push(Expr::rule(&self.space_rule())),
                Node::Chars(chars) => values.push(lower_chars(chars)),
                Node::StringContent { delimiter } => values.push(string_content(*delimiter)),
                Node::Until { delimiters } => {
                    let expr = self.automaton(id, "until", delimiters, AutomatonKind::Until);
                    values.push(expr);
                }
                Node::Ac { delimiters, .. } => {
                    let kind = AutomatonKind::ThroughFirstDelimiter;
                    values.push(self.automaton(id, "ac", delimiters, kind));
                }
                Node::Schema {
                    child,
                    name,
                    schema,
                    raw,
                } => {
                    if delegates(schema, *raw) {
                        tasks.push(Task::Visit(*child));
                    } else {
                        values.push(self.schema(rule, name, schema)?);
                    }
                }
                Node::Rule { .. } => values.push(Expr::rule(&self.rule_name(id))),
                Node::Ref { name } => {
                    let Some(target) = arena.rule(name) else {
                        return Err(Error::in_rule(
                            ErrorKind::UndefinedRule { name: name.clone() },
                            rule,
                        ));
                    };
                    values.push(Expr::rule(&self.rule_name(target)));
                }
                Node::Atomic(child) | Node::Tag { child, .. } => tasks.push(Task::Visit(*child)),
                Node::Gbnf { grammar, .. } => {
                    let expr = self.gbnf_text(id, rule, grammar)?;
                    values.push(expr);
                }
            }
        }
        Ok(values.0.pop().map_or(Expr::Empty, |(expr, _)| expr))
    }

    /// Takes the last `n` values as the children of a new node, with the depth of the
    /// deepest; a child already [`GrammarBuilder::MAX_DEPTH`] deep becomes a rule first.
    fn children(&mut self, values: &mut Values, n: usize, rule: &str) -> (Vec<Expr>, usize) {
        let first = values.0.len().saturating_sub(n);
        let mut deepest = 0;
        let mut items = Vec::with_capacity(n);
        for (expr, depth) in values.0.drain(first..) {
            if depth >= GrammarBuilder::MAX_DEPTH {
                let name = self.builder.add(&format!("{rule}-deep"), expr);
                items.push(Expr::rule(&name));
                deepest = deepest.max(1);
            } else {
                items.push(expr);
                deepest = deepest.max(depth);
            }
        }
        (items, deepest)
    }

    fn warn(&mut self, rule: &str, what: &'static str, kind: WarningKind) {
        if self.warned.insert((rule.to_owned(), what)) {
            self.warnings.push(Warning {
                kind,
                rule: rule.to_owned(),
            });
        }
    }

    fn space_rule(&mut self) -> RuleName {
        if let Some(name) = &self.space {
            return name.clone();
        }
        let body = match self.options.space {
            SpaceStyle::Bounded => Expr::bounded_space(),
            SpaceStyle::Exact => Expr::star(Expr::class(CharClass::of_chars(
                [' ', '\t', '\n', '\x0B', '\x0C', '\r'],
                false,
            ))),
        };
        let name = self.builder.reserve("space");
        self.builder.define(&name, body);
        self.space = Some(name.clone());
        name
    }

    fn automaton(
        &mut self,
        id: NodeId,
        prefix: &str,
        delimiters: &[String],
        kind: AutomatonKind,
    ) -> Expr {
        let key = (kind, delimiters.to_vec());
        if let Some(expr) = self.automata.get(&key) {
            return expr.clone();
        }
        let prefix = format!("{prefix}-{}", id.0);
        let expr = lower_automaton(&mut self.builder, &prefix, delimiters, kind);
        self.automata.insert(key, expr.clone());
        expr
    }

    fn schema(
        &mut self,
        rule: &str,
        name: &str,
        schema: &serde_json::Value,
    ) -> Result<Expr, Error> {
        let key = (name.to_owned(), schema.to_string());
        if let Some(expr) = self.schemas.get(&key) {
            return Ok(expr.clone());
        }
        let compiled = gbnf_json_schema::compile_into(
            &mut self.builder,
            name,
            schema,
            &self.options.json_schema,
        );
        let (rule_name, warnings) = compiled.map_err(|error| {
            Error::in_rule(
                ErrorKind::Schema {
                    message: error.to_string(),
                },
                rule,
            )
        })?;
        for warning in warnings {
            self.warnings.push(Warning {
                kind: WarningKind::Schema {
                    message: warning.to_string(),
                },
                rule: rule.to_owned(),
            });
        }
        let expr = Expr::rule(&rule_name);
        self.schemas.insert(key, expr.clone());
        Ok(expr)
    }

    /// Reads the text of a `gbnf` node: an expression, or a grammar with a `root` rule whose
    /// rules are merged in under fresh names. References to rules the text does not define
    /// are kept: they name rules of the surrounding grammar, as in llama.cpp, where the text
    /// is pasted verbatim.
    fn gbnf_text(&mut self, id: NodeId, rule: &str, text: &str) -> Result<Expr, Error> {
        if text.trim().is_empty() {
            return Ok(Expr::Empty);
        }
        let fail = |message: String| Error::in_rule(ErrorKind::Gbnf { message }, rule);
        let (grammar, start) = if text.contains("::=") {
            (read_gbnf(text).map_err(fail)?, "root")
        } else {
            let wrapped = format!("{WRAPPER} ::= {text}\n");
            (read_gbnf(&wrapped).map_err(fail)?, WRAPPER)
        };
        if grammar.get(start).is_none() {
            return Err(fail("a gbnf grammar must define 'root'".to_owned()));
        }
        let mut renamed: HashMap<String, RuleName> = HashMap::new();
        for name in grammar.rules.keys() {
            if name.as_str() == WRAPPER {
                continue;
            }
            let fresh = self.builder.reserve(&format!("gbnf-{}-{}", id.0, name));
            renamed.insert(name.as_str().to_owned(), fresh);
        }
        let mut start_body = Expr::Empty;
        for (name, mut body) in grammar.rules {
            rename_rules(&mut body, |old| renamed.get(old.as_str()).cloned());
            match renamed.get(name.as_str()) {
                Some(fresh) => self.builder.define(fresh, body),
                // The wrapper of an expression text is inlined.
                None => start_body = body,
            }
        }
        match renamed.get(start) {
            Some(fresh) => Ok(Expr::rule(fresh)),
            None => Ok(start_body),
        }
    }
}

/// An expression that matches nothing (an empty choice): GBNF has no empty alternation,
/// but a class of no code point is one.
pub(crate) fn never() -> Expr {
    Expr::class(CharClass::new([('\0', char::MAX)], true))
}

/// Reads GBNF text, with the error as text.
fn read_gbnf(text: &str) -> Result<Grammar, String> {
    gbnf::read(text).map_err(|error| error.to_string())
}

/// The rule an expression text is wrapped in to be read; a name no PEG rule would use.
const WRAPPER: &str = "gbnf-peg-expression-text";

/// Whether a `schema` node lowers to its child's grammar instead of the schema's: no
/// schema, or a raw string schema.
fn delegates(schema: &serde_json::Value, raw: bool) -> bool {
    let Some(object) = schema.as_object() else {
        return schema.is_null();
    };
    if !raw {
        return false;
    }
    match object.get("type") {
        Some(serde_json::Value::String(ty)) => ty == "string",
        Some(serde_json::Value::Array(types)) => types
            .iter()
            .find(|ty| ty.as_str() != Some("null"))
            .is_some_and(|ty| ty.as_str() == Some("string")),
        None => object.contains_key("enum"),
        Some(_) => false,
    }
}

/// `chars(class, min, max)` → `[class]{min,max}`.
fn lower_chars(chars: &Chars) -> Expr {
    let ranges = chars
        .ranges()
        .iter()
        .flat_map(|&(lo, hi)| scalar_ranges(lo, hi));
    let class = CharClass::new(ranges, chars.is_negated());
    Expr::repeat(Expr::class(class), chars.min, chars.max)
}

/// The Unicode scalar values in `lo..=hi`, as at most two ranges (around the surrogates).
fn scalar_ranges(lo: u32, hi: u32) -> impl Iterator<Item = (char, char)> {
    let hi = hi.min(0x10FFFF);
    let below = (lo.min(0xD800), hi.min(0xD7FF));
    let above = (lo.max(0xE000), hi);
    [below, above].into_iter().filter_map(|(lo, hi)| {
        let lo = char::from_u32(lo)?;
        let hi = char::from_u32(hi)?;
        (lo <= hi).then_some((lo, hi))
    })
}

/// `( [^d\\] | "\\" ( [d\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )*`.
fn string_content(delimiter: char) -> Expr {
    let plain = Expr::class(CharClass::of_chars([delimiter, '\\'], true));
    let simple_escape = Expr::class(CharClass::of_chars(
        [delimiter, '\\', '/', 'b', 'f', 'n', 'r', 't'],
        false,
    ));
    let hex = Expr::class(CharClass::new([('0', '9'), ('a', 'f'), ('A', 'F')], false));
    let unicode_escape = Expr::seq([Expr::literal("u"), Expr::repeat(hex, 4, Some(4))]);
    let escape = Expr::seq([
        Expr::literal("\\"),
        Expr::alt([simple_escape, unicode_escape]),
    ]);
    Expr::star(Expr::alt([plain, escape]))
}

/// Renames every rule reference (iteratively); `rename` returns `None` to keep a name.
fn rename_rules(expr: &mut Expr, mut rename: impl FnMut(&RuleName) -> Option<RuleName>) {
    let mut stack = vec![expr];
    while let Some(expr) = stack.pop() {
        match expr {
            Expr::Rule(name) => {
                if let Some(new) = rename(name) {
                    *name = new;
                }
            }
            Expr::Seq(items) | Expr::Alt(items) => stack.extend(items.iter_mut()),
            Expr::Repeat { expr, .. } => stack.push(expr),
            _ => {}
        }
    }
}

/// Rewrites every unbounded repetition whose body can match the empty string into a
/// repetition of the body's non-empty strings: `x*` with `ε ∈ x` is `(x ∖ ε)*`.
///
/// The languages are equal, and PEG repetition stops at an empty iteration anyway, but
/// llama.cpp expands `x*` into a right-recursive rule, which its left-recursion check
/// rejects when `x` is nullable. Nullable rules used in such a body get a `-nonempty`
/// variant.
fn remove_nullable_loops(grammar: &mut Grammar) {
    let analysis = Nullability::new(grammar);
    let mut variants: HashMap<RuleName, Option<RuleName>> = HashMap::new();
    let mut pending: Vec<RuleName> = Vec::new();
    let names: Vec<RuleName> = grammar.rules.keys().cloned().collect();
    let mut taken: HashSet<String> = names.iter().map(|name| name.as_str().to_owned()).collect();
    for name in names {
        let Some(mut body) = grammar.rules.get(&name).cloned() else {
            continue;
        };
        let mut ctx = NonEmpty {
            analysis: &analysis,
            grammar,
            variants: &mut variants,
            pending: &mut pending,
            taken: &mut taken,
        };
        if ctx.fix_loops(&mut body) {
            grammar.rules.insert(name, body);
        }
    }
    // Bodies of the `-nonempty` variants, which may ask for further variants.
    let mut defined: HashSet<RuleName> = HashSet::new();
    while let Some(original) = pending.pop() {
        let Some(Some(variant)) = variants.get(&original).cloned() else {
            continue;
        };
        if !defined.insert(variant.clone()) {
            continue;
        }
        let body = grammar.rules.get(&original).cloned().unwrap_or(Expr::Empty);
        let mut ctx = NonEmpty {
            analysis: &analysis,
            grammar,
            variants: &mut variants,
            pending: &mut pending,
            taken: &mut taken,
        };
        let mut nonempty = ctx.non_empty(&body, 0).unwrap_or_else(never);
        ctx.fix_loops(&mut nonempty);
        grammar.rules.insert(variant, nonempty);
    }
}

/// Which rules can derive the empty string, and which can derive a non-empty string.
struct Nullability {
    nullable: HashSet<RuleName>,
    non_empty: HashSet<RuleName>,
}

impl Nullability {
    fn new(grammar: &Grammar) -> Nullability {
        let mut analysis = Nullability {
            nullable: HashSet::new(),
            non_empty: HashSet::new(),
        };
        loop {
            let mut changed = false;
            for (name, body) in &grammar.rules {
                if !analysis.nullable.contains(name) && analysis.expr_nullable(body) {
                    analysis.nullable.insert(name.clone());
                    changed = true;
                }
                if !analysis.non_empty.contains(name) && analysis.expr_non_empty(body) {
                    analysis.non_empty.insert(name.clone());
                    changed = true;
                }
            }
            if !changed {
                return analysis;
            }
        }
    }

    /// Whether `expr` can derive ε. Expressions nested deeper than [`MAX_REWRITE_DEPTH`]
    /// count as not nullable, so their loops are left as they are.
    fn expr_nullable(&self, expr: &Expr) -> bool {
        self.nullable_at(expr, 0)
    }

    fn nullable_at(&self, expr: &Expr, depth: usize) -> bool {
        if depth > MAX_REWRITE_DEPTH {
            return false;
        }
        match expr {
            Expr::Empty => true,
            Expr::Literal(_) | Expr::Class(_) | Expr::Any | Expr::Token(_) => false,
            Expr::Rule(name) => self.nullable.contains(name),
            Expr::Seq(items) => items.iter().all(|item| self.nullable_at(item, depth + 1)),
            Expr::Alt(items) => items.iter().any(|item| self.nullable_at(item, depth + 1)),
            Expr::Repeat { expr, min, .. } => *min == 0 || self.nullable_at(expr, depth + 1),
        }
    }

    /// Whether `expr` can derive a non-empty string (assuming every rule derives
    /// something). Expressions nested too deep count as able to.
    fn expr_non_empty(&self, expr: &Expr) -> bool {
        self.non_empty_at(expr, 0)
    }

    fn non_empty_at(&self, expr: &Expr, depth: usize) -> bool {
        if depth > MAX_REWRITE_DEPTH {
            return true;
        }
        match expr {
            Expr::Empty => false,
            Expr::Literal(_) | Expr::Class(_) | Expr::Any | Expr::Token(_) => true,
            Expr::Rule(name) => self.non_empty.contains(name),
            Expr::Seq(items) | Expr::Alt(items) => {
                items.iter().any(|item| self.non_empty_at(item, depth + 1))
            }
            Expr::Repeat { expr, max, .. } => *max != Some(0) && self.non_empty_at(expr, depth + 1),
        }
    }
}

/// The deepest expression `non_empty` rewrites; deeper ones are left as they are.
const MAX_REWRITE_DEPTH: usize = 256;

struct NonEmpty<'a> {
    analysis: &'a Nullability,
    grammar: &'a Grammar,
    variants: &'a mut HashMap<RuleName, Option<RuleName>>,
    pending: &'a mut Vec<RuleName>,
    taken: &'a mut HashSet<String>,
}

impl NonEmpty<'_> {
    /// Rewrites the nullable unbounded loops inside `expr`; returns whether it changed.
    fn fix_loops(&mut self, expr: &mut Expr) -> bool {
        let mut changed = false;
        let mut stack: Vec<&mut Expr> = vec![expr];
        while let Some(expr) = stack.pop() {
            let nullable_loop = matches!(
                &*expr,
                Expr::Repeat { expr: body, max: None, .. } if self.analysis.expr_nullable(body)
            );
            if nullable_loop {
                let rewritten = match &*expr {
                    Expr::Repeat { expr: body, .. } => match self.non_empty(body, 0) {
                        Some(non_empty) => Expr::star(non_empty),
                        None => Expr::Empty,
                    },
                    _ => Expr::Empty,
                };
                *expr = rewritten;
                changed = true;
            }
            match expr {
                Expr::Seq(items) | Expr::Alt(items) => stack.extend(items.iter_mut()),
                Expr::Repeat { expr: body, .. } => stack.push(body),
                _ => {}
            }
        }
        changed
    }

    /// An expression for the non-empty strings of `expr`, or `None` if it has none.
    fn non_empty(&mut self, expr: &Expr, depth: usize) -> Option<Expr> {
        if !self.analysis.expr_nullable(expr) {
            return Some(expr.clone());
        }
        if depth > MAX_REWRITE_DEPTH {
            return Some(expr.clone());
        }
        match expr {
            Expr::Empty => None,
            Expr::Literal(_) | Expr::Class(_) | Expr::Any | Expr::Token(_) => Some(expr.clone()),
            Expr::Rule(name) => self.variant(name).map(|variant| Expr::rule(&variant)),
            Expr::Seq(items) => {
                // ne(e1 e2 … en) = ne(e1) e2 … en | ne(e2) e3 … en | … while the earlier
                // items are nullable (here all are, since the sequence is nullable).
                let mut alternatives = Vec::new();
                for (idx, item) in items.iter().enumerate() {
                    if let Some(first) = self.non_empty(item, depth + 1) {
                        let rest = items[idx + 1..].iter().cloned();
                        alternatives.push(Expr::seq(std::iter::once(first).chain(rest)));
                    }
                }
                (!alternatives.is_empty()).then(|| Expr::alt(alternatives))
            }
            Expr::Alt(items) => {
                let alternatives: Vec<Expr> = items
                    .iter()
                    .filter_map(|item| self.non_empty(item, depth + 1))
                    .collect();
                (!alternatives.is_empty()).then(|| Expr::alt(alternatives))
            }
            Expr::Repeat {
                expr: body, max, ..
            } => {
                let body = self.non_empty(body, depth + 1)?;
                Some(Expr::repeat(body, 1, *max))
            }
        }
    }

    /// The `-nonempty` variant of a nullable rule (`None` if the rule only derives ε).
    fn variant(&mut self, name: &RuleName) -> Option<RuleName> {
        if let Some(variant) = self.variants.get(name) {
            return variant.clone();
        }
        if !self.analysis.non_empty.contains(name) || self.grammar.get(name.as_str()).is_none() {
            self.variants.insert(name.clone(), None);
            return None;
        }
        let base = format!("{name}-nonempty");
        let mut candidate = base.clone();
        let mut suffix = 2;
        while self.taken.contains(&candidate) {
            candidate = format!("{base}-{suffix}");
            suffix += 1;
        }
        self.taken.insert(candidate.clone());
        let variant = RuleName::sanitize(&candidate);
        self.variants.insert(name.clone(), Some(variant.clone()));
        self.pending.push(name.clone());
        Some(variant)
    }
}

/// Restores the builder's depth bound ([`GrammarBuilder::MAX_DEPTH`]) after the loop
/// rewrite, which can make a body a level or two deeper: the rules are rebuilt through a
/// builder, keeping their names and order.
fn make_shallow(grammar: Grammar) -> Grammar {
    let max = GrammarBuilder::MAX_DEPTH;
    if grammar.rules.values().all(|body| body.depth() <= max) {
        return grammar;
    }
    let mut builder = GrammarBuilder::new();
    // Every name is reserved first, so that the rules generated for deep parts cannot take
    // a name that a later rule has. Reserving a free name returns it unchanged.
    for name in grammar.rules.keys() {
        let reserved = builder.reserve(name.as_str());
        debug_assert_eq!(&reserved, name);
    }
    for (name, body) in grammar.rules {
        builder.define(&name, body);
    }
    builder.finish()
}

/// Drops the rules that `root` no longer reaches (after loops were rewritten).
fn remove_unreachable(grammar: &mut Grammar, root: &RuleName) {
    let mut reached: HashSet<RuleName> = HashSet::new();
    let mut stack: Vec<&Expr> = Vec::new();
    reached.insert(root.clone());
    stack.extend(grammar.get(root.as_str()));
    while let Some(expr) = stack.pop() {
        match expr {
            Expr::Rule(name) if reached.insert(name.clone()) => {
                stack.extend(grammar.get(name.as_str()));
            }
            Expr::Seq(items) | Expr::Alt(items) => stack.extend(items),
            Expr::Repeat { expr, .. } => stack.push(expr),
            _ => {}
        }
    }
    grammar.rules.retain(|name, _| reached.contains(name));
}
