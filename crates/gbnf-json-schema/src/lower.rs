//! Stage two: normalised shapes become `gbnf` rules. Objects keep schema order with
//! "ordered subset" rules (never `x? x? x?` chains), counts become state machines, enums
//! become tries, and every definition (`$ref` target) becomes one rule, so recursion in the
//! schema is recursion in the grammar.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::hash::Hasher;
use std::rc::Rc;

use gbnf::{CharClass, Expr, FastHash, Grammar, GrammarBuilder, RuleName, Text};
use serde_json::Value;

use crate::error::{Error, ErrorKind, Warning};
use crate::keys;
use crate::leaf::{self, LeafErrorKind};
use crate::normalize::{types, DefId, Leaf, Normalizer, SeededHash, Shape};
use crate::pattern::dfa::Dfa;
use crate::pattern::pattern_dfa;
use crate::pointer::JsonPointer;
use crate::strings::CharRules;
use crate::{Options, PropertyOrder, Whitespace, MAX_DEPTH};

/// How many states a counting construction (min/maxProperties, contains, uniqueItems) may use.
const MAX_STATES: usize = 4096;
/// How deep a trie of enum strings may branch before it is reported.
const MAX_TRIE_DEPTH: usize = 512;
/// From how many names on [`Lowerer::string_not_in`] writes its trie as a minimal automaton
/// with short-named exits ([`Lowerer::build_string_not_in_big`]).
const BIG_KEY_SET: usize = 64;
/// From how many declared properties an object leaf is lowered once for all the places
/// it appears in ([`Lowerer::lower_big_object`]).
const SHARED_OBJECT_PROPERTIES: usize = 64;
/// How deep [`shapes_equal`] compares before it answers "not equal".
const SAME_SHAPE_DEPTH: usize = 64;

/// Compiles `schema` into a grammar of its own, whose start rule is `root`.
pub(crate) fn compile_grammar(
    schema: &Value,
    options: &Options,
) -> Result<(Grammar, Vec<Warning>), Error> {
    let (grammar, _, warnings) = lower_schema(None, schema, options)?;
    Ok((grammar, warnings))
}

/// Compiles `schema` into the caller's builder, every rule named with the prefix `name`.
pub(crate) fn compile_schema(
    builder: &mut GrammarBuilder,
    name: &str,
    schema: &Value,
    options: &Options,
) -> Result<(RuleName, Vec<Warning>), Error> {
    let (grammar, reserved, warnings) = lower_schema(Some(name), schema, options)?;
    let prefix = format!("{name}-");
    // Into a shared builder: names may clash, so every rule gets a fresh name there.
    let mut renames: HashMap<RuleName, RuleName> = HashMap::new();
    for rule in grammar.rules.keys() {
        // Shared helpers (such as the leaves' `char`) get the prefix too.
        let preferred = if rule.as_str() == name || rule.as_str().starts_with(&prefix) {
            rule.as_str().to_owned()
        } else {
            format!("{prefix}{rule}")
        };
        renames.insert(rule.clone(), builder.reserve(&preferred));
    }
    for (rule, body) in &grammar.rules {
        builder.define(
            &renames[rule],
            body.rename_rules(&|name| renames.get(name).cloned().unwrap_or_else(|| name.clone())),
        );
    }
    Ok((renames[&reserved].clone(), warnings))
}

/// Lowers `schema` into a fresh grammar; with `name`, every rule is named with that prefix
/// and the start rule is `name` rather than `root`. Returns the grammar, its start rule and
/// the warnings.
fn lower_schema(
    name: Option<&str>,
    schema: &Value,
    options: &Options,
) -> Result<(Grammar, RuleName, Vec<Warning>), Error> {
    let prefix = name.map(|n| format!("{n}-")).unwrap_or_default();
    let root_name = name.unwrap_or("root");
    let mut normalizer = Normalizer::new(schema, options)?;
    let root_id = normalizer.define_root()?;
    check_ref_cycles(&normalizer)?;
    let mut lowerer = Lowerer {
        builder: GrammarBuilder::new(),
        chars: CharRules::default(),
        n: normalizer,
        prefix: prefix.clone(),
        def_rules: HashMap::default(),
        queue: Vec::new(),
        primitives: Vec::new(),
        string_cache: HashMap::default(),
        number_cache: HashMap::default(),
        dfa_cache: HashMap::default(),
        not_in_tails: HashMap::default(),
        not_in_cache: HashMap::default(),
        key_exits: [HashMap::default(), HashMap::default()],
        key_rest: None,
        plain_integer: None,
        big_objects: Vec::new(),
        lowered: HashMap::default(),
        depth: 0,
    };
    let root_rule = RuleName::sanitize(root_name);
    let reserved = lowerer.builder.reserve(root_rule.as_str());
    lowerer.def_rules.insert(root_id, reserved.clone());
    lowerer.queue.push(root_id);
    while let Some(id) = lowerer.queue.pop() {
        let rule = lowerer.def_rules[&id].clone();
        let shape = lowerer.n.defs[id].shape.clone().unwrap_or(Shape::Never);
        let def_name = if id == root_id {
            root_name.to_owned()
        } else {
            [lowerer.prefix.as_str(), lowerer.n.defs[id].name.as_str()].concat()
        };
        let body = lowerer.lower(&shape, &def_name)?;
        // An unsatisfiable definition keeps an empty alternation; pruning removes it.
        lowerer
            .builder
            .define(&rule, body.unwrap_or_else(|| Expr::alt([])));
    }
    let warnings = lowerer.n.take_warnings();
    let (mut grammar, recorded) = lowerer.builder.finish_with_references();
    let refs = References::recorded(
        grammar.rules.len(),
        |i| recorded.of_rule(i),
        |i| recorded.has_empty_alternation(i),
    );
    drop(recorded);
    // Debug builds (the tests) check the record against a walk of the grammar.
    #[cfg(debug_assertions)]
    assert!(refs.same_as(&References::of(&grammar.rules)));
    if let Err(mut err) = prune(&mut grammar, &reserved, refs) {
        if let Some(pointer) = lowerer.n.first_empty.clone() {
            err.pointer = pointer;
        }
        return Err(err);
    }
    Ok((grammar, reserved, warnings))
}

struct Lowerer<'o, 'r> {
    builder: GrammarBuilder,
    /// The character rules made in `builder`.
    chars: CharRules,
    n: Normalizer<'o, 'r>,
    /// Prefix of every generated rule name (`""` for a whole grammar).
    prefix: String,
    def_rules: HashMap<DefId, RuleName, FastHash>,
    queue: Vec<DefId>,
    /// The primitive rules made so far (a handful: a list is quicker than a map).
    primitives: Vec<(&'static str, RuleName)>,
    /// String leaves already lowered (patterns and formats are costly to determinise).
    string_cache: HashMap<StringKey, Expr, SeededHash>,
    /// Number leaves already lowered, by their exact constraints: a bound written again
    /// (ESLint's severity `0`–`2` in hundreds of rules) takes the rules made for it the first
    /// time rather than a copy of them under its own name.
    number_cache: HashMap<leaf::NumberConstraints, Expr, SeededHash>,
    /// Key patterns already determinised.
    dfa_cache: HashMap<String, Dfa, SeededHash>,
    /// The tail rules of `string_not_in`, by the trie node's child characters.
    not_in_tails: HashMap<Vec<char>, RuleName, FastHash>,
    /// Whole `string_not_in` results by their excluded names. Every rule a result refers to
    /// is made by `GrammarBuilder::add`, which merges identical bodies, so building the same
    /// trie again would give the very same expression (whatever the name asked for).
    /// (Keyed by the names, each after its length and a colon, in one string; every set is
    /// cached, small ones too: an object's declared names recur wherever its leaf is
    /// merged again, as under `allOf`.)
    not_in_cache: HashMap<String, Expr, SeededHash>,
    /// The exits of [`Lowerer::build_string_not_in_big`] by the node's child characters, for
    /// nodes that are not names (`key-end`) and nodes that are (`key-other`).
    key_exits: [HashMap<Vec<char>, RuleName, FastHash>; 2],
    /// `char* "\""`, the rest of a key that has left the trie, once made.
    key_rest: Option<RuleName>,
    /// The rule of an unconstrained integer, once made.
    plain_integer: Option<RuleName>,
    /// Leaves with at least [`SHARED_OBJECT_PROPERTIES`] declared properties already
    /// lowered, with their result.
    big_objects: Vec<(Rc<Leaf>, Option<Expr>)>,
    /// Leaves already lowered, by address (the leaf is kept alive so the address stays
    /// unique): a leaf shared by many branches (the variants a `oneOf` or `dependencies`
    /// makes of one object share their members' leaves) is lowered once.
    lowered: HashMap<*const Leaf, (Rc<Leaf>, Option<Expr>), FastHash>,
    depth: usize,
}

/// The string constraints a lowered string leaf is cached under: lengths, patterns, formats,
/// negated patterns, negated formats.
type StringKey = (
    u64,
    Option<u64>,
    Vec<String>,
    Vec<String>,
    Vec<String>,
    Vec<String>,
);

/// One declared (or required) property of an object being lowered: its key's JSON text
/// and its value. The two are kept apart so that the object's sequences (`ws "," ws key ws
/// ":" ws value`) are each made in one list of their final size, not from a `key ws ":" ws
/// value` list made first.
struct Member {
    key: Expr,
    value: Expr,
    required: bool,
}

impl Member {
    /// `key ws ":" ws value`.
    fn kv(&self, ws: &Expr) -> Expr {
        seq_exact([
            self.key.clone(),
            ws.clone(),
            Expr::literal(":"),
            ws.clone(),
            self.value.clone(),
        ])
    }
}

impl Lowerer<'_, '_> {
    fn options(&self) -> &Options<'_> {
        self.n.options
    }

    fn unsupported(
        &mut self,
        pointer: &JsonPointer,
        keyword: &str,
        message: impl Into<String>,
    ) -> Result<(), Error> {
        self.n.unsupported(pointer, keyword, message)
    }

    fn child(&self, name: &str, suffix: &str) -> String {
        if name == "root" && self.prefix.is_empty() {
            suffix.to_owned()
        } else {
            dashed(name, suffix)
        }
    }

    fn lower(&mut self, shape: &Shape, name: &str) -> Result<Option<Expr>, Error> {
        self.depth += 1;
        if self.depth > MAX_DEPTH * 2 {
            self.depth -= 1;
            return Err(Error::new(
                ErrorKind::TooDeep { limit: MAX_DEPTH },
                JsonPointer::root(),
            ));
        }
        let res = self.lower_inner(shape, name);
        self.depth -= 1;
        res
    }

    /// [`Lowerer::lower`] with the name made only when it may be needed: a reference, or a
    /// leaf lowered before (as most members of the variants a `oneOf` makes of an object
    /// are), takes no name.
    fn lower_named(
        &mut self,
        shape: &Shape,
        name: impl FnOnce(&Self) -> String,
    ) -> Result<Option<Expr>, Error> {
        // `lower` refuses to go deeper than this, known shapes included.
        if self.depth < MAX_DEPTH * 2 {
            if let Some(expr) = self.known(shape) {
                return Ok(expr);
            }
        }
        let name = name(self);
        self.lower(shape, &name)
    }

    /// The expression of `shape` when it needs no lowering: a reference, or a leaf lowered
    /// before.
    fn known(&mut self, shape: &Shape) -> Option<Option<Expr>> {
        match shape {
            Shape::Ref(id) => Some(Some(Expr::rule(&self.def_rule(*id)))),
            Shape::Leaf(leaf) => {
                (self.lowered.get(&Rc::as_ptr(leaf))).map(|(_, expr)| expr.clone())
            }
            _ => None,
        }
    }

    fn lower_inner(&mut self, shape: &Shape, name: &str) -> Result<Option<Expr>, Error> {
        match shape {
            Shape::Never => Ok(None),
            Shape::Ref(id) => Ok(Some(Expr::rule(&self.def_rule(*id)))),
            Shape::Union(items) => {
                let mut alternatives = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    if let Some(expr) = self.lower_named(item, |_| dashed_number(name, i))? {
                        if !alternatives.contains(&expr) {
                            alternatives.push(expr);
                        }
                    }
                }
                Ok(match alternatives.len() {
                    0 => None,
                    1 => alternatives.pop(),
                    _ => Some(Expr::rule(&self.builder.add(name, Expr::alt(alternatives)))),
                })
            }
            Shape::Leaf(leaf) if leaf.object.properties.len() >= SHARED_OBJECT_PROPERTIES => {
                self.lower_big_object(leaf, name)
            }
            Shape::Leaf(leaf) => {
                if let Some(expr) = self.known(shape) {
                    return Ok(expr);
                }
                let expr = self.lower_leaf(leaf, name)?;
                self.lowered
                    .insert(Rc::as_ptr(leaf), (Rc::clone(leaf), expr.clone()));
                Ok(expr)
            }
        }
    }

    /// [`Lowerer::lower_leaf`] for a leaf with many declared properties, lowered once: the
    /// same schema reached again (written inline and also the target of a `$ref`, such as
    /// ESLint's `rules`) gives an equal leaf, whose lowering would build the same rules again
    /// (identical bodies merge), so the first result is reused. Warnings are not repeated,
    /// as for the other memoised lowerings.
    fn lower_big_object(&mut self, leaf: &Rc<Leaf>, name: &str) -> Result<Option<Expr>, Error> {
        let seen = self.big_objects.iter().find(|(other, _)| {
            Rc::ptr_eq(other, leaf) || leaves_equal(other, leaf, SAME_SHAPE_DEPTH)
        });
        if let Some((_, expr)) = seen {
            return Ok(expr.clone());
        }
        let expr = self.lower_leaf(leaf, name)?;
        self.big_objects.push((Rc::clone(leaf), expr.clone()));
        Ok(expr)
    }

    fn def_rule(&mut self, id: DefId) -> RuleName {
        if let Some(rule) = self.def_rules.get(&id) {
            return rule.clone();
        }
        let name = [self.prefix.as_str(), self.n.defs[id].name.as_str()].concat();
        let rule = self.builder.reserve(&name);
        self.def_rules.insert(id, rule.clone());
        self.queue.push(id);
        rule
    }

    fn lower_leaf(&mut self, leaf: &Leaf, name: &str) -> Result<Option<Expr>, Error> {
        if let Some(values) = &leaf.values {
            let mut kept = Vec::new();
            let unrestricted = Shape::Leaf(Rc::new(leaf_without_values(leaf)));
            for value in values {
                match self.n.admits(&unrestricted, value, 0) {
                    Some(true) => kept.push(value),
                    Some(false) => {}
                    None => {
                        self.unsupported(&leaf.pointer, "enum", "an enum combined with constraints that cannot be checked on its values (pattern, format, multipleOf, contains)")?;
                        kept.push(value);
                    }
                }
            }
            return self.lower_values(&kept, name, &leaf.pointer);
        }
        if leaf.types == types::ALL && leaf.not_values.is_empty() && leaf_is_unconstrained(leaf) {
            return Ok(Some(self.primitive("value")));
        }
        let mut alternatives = Vec::new();
        let excluded = |v: &Value| leaf.not_values.iter().any(|x| x == v);
        if leaf.types & types::NULL != 0 && !excluded(&Value::Null) {
            alternatives.push(self.primitive("null"));
        }
        if leaf.types & types::BOOLEAN != 0 {
            match (excluded(&Value::Bool(true)), excluded(&Value::Bool(false))) {
                (false, false) => alternatives.push(self.primitive("boolean")),
                (false, true) => alternatives.push(Expr::literal("true")),
                (true, false) => alternatives.push(Expr::literal("false")),
                (true, true) => {}
            }
        }
        if leaf.types & types::NUMBER != 0 {
            let integer = leaf.types & types::NUMBER == types::INTEGER;
            if leaf.not_values.iter().any(Value::is_number) {
                self.unsupported(&leaf.pointer, "not", "excluding particular numbers")?;
            }
            if let Some(expr) = self.lower_number(leaf, integer, name)? {
                alternatives.push(expr);
            }
        }
        if leaf.types & types::STRING != 0 {
            if let Some(expr) = self.lower_string(leaf, name)? {
                alternatives.push(expr);
            }
        }
        if leaf.types & types::ARRAY != 0 {
            if leaf.not_values.iter().any(Value::is_array) {
                self.unsupported(&leaf.pointer, "not", "excluding particular arrays")?;
            }
            if let Some(expr) = self.lower_array(leaf, name)? {
                alternatives.push(expr);
            }
        }
        if leaf.types & types::OBJECT != 0 {
            if leaf.not_values.iter().any(Value::is_object) {
                self.unsupported(&leaf.pointer, "not", "excluding particular objects")?;
            }
            if let Some(expr) = self.lower_object(leaf, name)? {
                alternatives.push(expr);
            }
        }
        Ok(match alternatives.len() {
            0 => None,
            1 => alternatives.pop(),
            _ => Some(Expr::alt(alternatives)),
        })
    }

    // ----- whitespace and primitives -------------------------------------------------

    fn ws(&mut self) -> Expr {
        match self.options().whitespace {
            Whitespace::Compact => Expr::Empty,
            Whitespace::Bounded => self.primitive("space"),
            Whitespace::Flexible => self.primitive("ws"),
        }
    }

    /// `ws "," ws`: the separator before every member but the first.
    fn sep(&mut self) -> Expr {
        let ws = self.ws();
        Expr::seq([ws.clone(), Expr::literal(","), ws])
    }

    /// A reference to a primitive rule, created on first use.
    fn primitive(&mut self, which: &'static str) -> Expr {
        if let Some((_, rule)) = self.primitives.iter().find(|(p, _)| *p == which) {
            return Expr::rule(rule);
        }
        let name = format!("{}{which}", self.prefix);
        let rule = match which {
            "value" | "object" | "array" => {
                let rule = self.builder.reserve(&name);
                self.primitives.push((which, rule.clone()));
                let body = match which {
                    "value" => Expr::alt(
                        ["object", "array", "string", "number", "boolean", "null"]
                            .map(|p| self.primitive(p)),
                    ),
                    "object" => {
                        let string = self.primitive("string");
                        let value = self.primitive("value");
                        let ws = self.ws();
                        let kv =
                            Expr::seq([string, ws.clone(), Expr::literal(":"), ws.clone(), value]);
                        self.list("{", "}", kv)
                    }
                    _ => {
                        let value = self.primitive("value");
                        self.list("[", "]", value)
                    }
                };
                self.builder.define(&rule, body);
                return Expr::rule(&rule);
            }
            "space" => {
                let body = Expr::bounded_space();
                self.builder.add(&name, body)
            }
            "ws" => self.builder.add(
                &name,
                Expr::star(Expr::class(CharClass::of_chars(
                    [' ', '\t', '\n', '\r'],
                    false,
                ))),
            ),
            "char" => {
                // The leaves' exact encoding of any code point (no lone surrogate escapes),
                // so that plain and constrained strings share one `char` rule. Made once
                // per grammar, so `chars` is not asked (that would only fill it).
                let expr = crate::strings::json_chars_uncached(
                    &mut self.builder,
                    &name,
                    &crate::pattern::dfa::any_char(),
                    leaf::Escapes::All,
                );
                match expr {
                    Expr::Rule(rule) => rule,
                    other => self.builder.add(&name, other),
                }
            }
            "string" => {
                let char_rule = self.primitive("char");
                self.builder.add(
                    &name,
                    Expr::seq([
                        Expr::literal("\""),
                        Expr::star(char_rule),
                        Expr::literal("\""),
                    ]),
                )
            }
            "key-escape" => {
                // The same in every grammar, and costly to derive: built once.
                static BODY: std::sync::OnceLock<Expr> = std::sync::OnceLock::new();
                self.builder
                    .add(&name, BODY.get_or_init(key_escape).clone())
            }
            "integer" => self.builder.add(&name, integer_body()),
            "number" => {
                let digits = Expr::plus(Expr::class(CharClass::new([('0', '9')], false)));
                let body = Expr::seq([
                    integer_body(),
                    Expr::optional(Expr::seq([Expr::literal("."), digits.clone()])),
                    Expr::optional(Expr::seq([
                        Expr::class(CharClass::of_chars(['e', 'E'], false)),
                        Expr::optional(Expr::class(CharClass::of_chars(['-', '+'], false))),
                        digits,
                    ])),
                ]);
                self.builder.add(&name, body)
            }
            "boolean" => self.builder.add(
                &name,
                Expr::alt([Expr::literal("true"), Expr::literal("false")]),
            ),
            _ => self.builder.add(&name, Expr::literal("null")),
        };
        self.primitives.push((which, rule.clone()));
        Expr::rule(&rule)
    }

    /// `open (ws item (sep item)*)? ws close`.
    fn list(&mut self, open: &str, close: &str, item: Expr) -> Expr {
        let ws = self.ws();
        let sep = self.sep();
        Expr::seq([
            Expr::literal(open),
            Expr::optional(Expr::seq([
                ws.clone(),
                item.clone(),
                Expr::star(Expr::seq([sep, item])),
            ])),
            ws,
            Expr::literal(close),
        ])
    }

    // ----- strings and numbers -------------------------------------------------------

    fn lower_string(&mut self, leaf: &Leaf, name: &str) -> Result<Option<Expr>, Error> {
        let not_strings: Vec<String> = leaf
            .not_values
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        if !not_strings.is_empty() && leaf.string_trivial() {
            return Ok(Some(
                self.string_not_in(&not_strings, &self.child(name, "string")),
            ));
        }
        if leaf.string_trivial() {
            return Ok(Some(self.primitive("string")));
        }
        let mut constraints = leaf.string.clone();
        // Particular strings excluded from a constrained string: each is an anchored
        // pattern it must not match, intersected like the others.
        for text in &not_strings {
            constraints
                .not_patterns
                .push((literal_pattern(text), leaf.pointer.join("not")));
        }
        if constraints.formats.len() > 1 {
            let at = constraints.formats[1].1.clone();
            self.unsupported(&at, "format", "more than one format on one string")?;
            constraints.formats.truncate(1);
        }
        let options = leaf::options(self.options().dotall, self.options().raw_pattern);
        let key: StringKey = (
            constraints.min_length,
            constraints.max_length,
            constraints.patterns.iter().map(|p| p.0.clone()).collect(),
            constraints.formats.iter().map(|f| f.0.clone()).collect(),
            constraints
                .not_patterns
                .iter()
                .map(|p| p.0.clone())
                .collect(),
            constraints
                .not_formats
                .iter()
                .map(|f| f.0.clone())
                .collect(),
        );
        if let Some(expr) = self.string_cache.get(&key) {
            return Ok(Some(expr.clone()));
        }
        let mut attempt = constraints.clone();
        loop {
            match leaf::lower_string(&mut self.builder, &mut self.chars, name, &attempt, &options) {
                Ok(expr) => {
                    if attempt.patterns.len() == constraints.patterns.len()
                        && attempt.formats.len() == constraints.formats.len()
                        && attempt.not_patterns.len() == constraints.not_patterns.len()
                    {
                        self.string_cache.insert(key, expr.clone());
                    }
                    return Ok(Some(expr));
                }
                Err(err) => {
                    let at = match err.keyword {
                        "pattern" => attempt
                            .patterns
                            .get(err.pattern_index.unwrap_or(0))
                            .map(|p| p.1.clone()),
                        "format" => attempt.formats.first().map(|p| p.1.clone()),
                        "not" => attempt
                            .not_patterns
                            .first()
                            .or(attempt.not_formats.first())
                            .map(|p| p.1.clone()),
                        _ => None,
                    }
                    .unwrap_or_else(|| leaf.pointer.join(err.keyword));
                    match err.kind {
                        LeafErrorKind::Unsatisfiable => return Ok(None),
                        LeafErrorKind::Invalid => {
                            return Err(Error::new(
                                ErrorKind::Invalid {
                                    keyword: err.keyword.to_owned(),
                                    message: err.message,
                                },
                                at,
                            ))
                        }
                        LeafErrorKind::UnknownFormat => {
                            if self.options().strict {
                                return Err(Error::new(
                                    ErrorKind::Unsupported {
                                        keyword: "format".to_owned(),
                                        message: err.message,
                                    },
                                    at,
                                ));
                            }
                            self.n.warnings.push(Warning {
                                pointer: at,
                                keyword: "format".to_owned(),
                                message: err.message,
                            });
                            attempt.formats.clear();
                        }
                        LeafErrorKind::Unsupported => {
                            self.unsupported(&at, err.keyword, err.message)?;
                            // Lenient: drop what failed and try again with less.
                            match err.keyword {
                                "pattern" => match err.pattern_index {
                                    Some(i) if i < attempt.patterns.len() => {
                                        attempt.patterns.remove(i);
                                    }
                                    _ => attempt.patterns.clear(),
                                },
                                "format" => attempt.formats.clear(),
                                "not" => {
                                    attempt.not_patterns.clear();
                                    attempt.not_formats.clear();
                                }
                                _ => {
                                    attempt.min_length = 0;
                                    attempt.max_length = None;
                                }
                            }
                        }
                    }
                    if attempt.patterns.is_empty()
                        && attempt.formats.is_empty()
                        && attempt.not_patterns.is_empty()
                        && attempt.not_formats.is_empty()
                        && attempt.min_length == 0
                        && attempt.max_length.is_none()
                    {
                        return Ok(Some(self.primitive("string")));
                    }
                }
            }
        }
    }

    fn lower_number(
        &mut self,
        leaf: &Leaf,
        integer: bool,
        name: &str,
    ) -> Result<Option<Expr>, Error> {
        let plain = if integer { "integer" } else { "number" };
        if leaf.number_trivial() && !integer {
            return Ok(Some(self.primitive(plain)));
        }
        if let (true, Some(rule)) = (leaf.number_trivial(), &self.plain_integer) {
            return Ok(Some(Expr::rule(rule)));
        }
        // Integers always go through the leaf: it also accepts `1.0`, which JSON Schema
        // counts as an integer.
        let rule_name = if leaf.number_trivial() {
            format!("{}integer", self.prefix)
        } else {
            name.to_owned()
        };
        if leaf.number_trivial() {
            // `-?(0|[1-9][0-9]*)(.0+)?`: JSON Schema counts `1.0` as an integer.
            let body = Expr::seq([
                integer_body(),
                Expr::optional(Expr::seq([
                    Expr::literal("."),
                    Expr::plus(Expr::literal("0")),
                ])),
            ]);
            let rule = self.builder.add(&rule_name, body);
            self.plain_integer = Some(rule.clone());
            return Ok(Some(Expr::rule(&rule)));
        }
        let lowered = leaf::number_constraints(integer, &leaf.number).and_then(|constraints| {
            if let Some(expr) = self.number_cache.get(&constraints) {
                return Ok(expr.clone());
            }
            let expr = leaf::lower_number(&mut self.builder, &rule_name, &constraints)?;
            self.number_cache.insert(constraints, expr.clone());
            Ok(expr)
        });
        match lowered {
            Ok(expr) if leaf.number_trivial() => {
                Ok(Some(Expr::rule(&self.builder.add(&rule_name, expr))))
            }
            Ok(expr) => Ok(Some(expr)),
            Err(err) => {
                let at = leaf.pointer.join(err.keyword);
                match err.kind {
                    LeafErrorKind::Unsatisfiable => Ok(None),
                    LeafErrorKind::Invalid => Err(Error::new(
                        ErrorKind::Invalid {
                            keyword: err.keyword.to_owned(),
                            message: err.message,
                        },
                        at,
                    )),
                    _ => {
                        self.unsupported(&at, err.keyword, err.message)?;
                        Ok(Some(self.primitive(plain)))
                    }
                }
            }
        }
    }

    /// A JSON string whose (canonically encoded) content is none of `excluded`.
    ///
    /// A trie over the excluded strings: at each node the key may end (unless the node is
    /// an excluded string), continue along a child, or leave the trie with any other
    /// character and then anything. The "leave" tails are shared rules keyed by the set of
    /// child characters, and nodes are inlined into their parent (a trie node has one), with
    /// a rule every 16 levels, so the grammar stays proportional to the names' length.
    fn string_not_in(&mut self, excluded: &[String], name: &str) -> Expr {
        let big = excluded.len() >= BIG_KEY_SET;
        // The key: each name after its length, in one string (one allocation per call).
        let mut key = String::with_capacity(excluded.iter().map(|text| text.len() + 4).sum());
        for text in excluded {
            gbnf::push_decimal(&mut key, text.len() as u64);
            key.push(':');
            key.push_str(text);
        }
        if let Some(expr) = self.not_in_cache.get(key.as_str()) {
            return expr.clone();
        }
        let expr = if big {
            self.build_string_not_in_big(excluded, name)
        } else {
            self.build_string_not_in(excluded, name)
        };
        self.not_in_cache.insert(key, expr.clone());
        expr
    }

    /// [`Lowerer::string_not_in`] without the cache.
    fn build_string_not_in(&mut self, excluded: &[String], name: &str) -> Expr {
        let Trie { nodes, .. } = Trie::new(excluded);
        let char_rule = self.primitive("char");
        let quote = Expr::literal("\"");
        // Children are created after their parent: build from the last node back.
        let mut exprs: Vec<Expr> = Vec::with_capacity(nodes.len());
        exprs.resize(nodes.len(), Expr::Empty);
        let mut key: Vec<char> = Vec::new();
        for i in (0..nodes.len()).rev() {
            let node = &nodes[i];
            key.clear();
            let mut at = node.first_child;
            while at != NO_NODE {
                key.push(nodes[at].ch);
                at = nodes[at].next_sibling;
            }
            let mut alternatives = Vec::with_capacity(key.len() + 2);
            if !node.terminal {
                alternatives.push(quote.clone());
            }
            let mut at = node.first_child;
            while at != NO_NODE {
                let child = std::mem::replace(&mut exprs[at], Expr::Empty);
                let ch = nodes[at].ch;
                alternatives.push(trie_step(ch, child));
                at = nodes[at].next_sibling;
            }
            let tail = match self.not_in_tails.get(key.as_slice()) {
                Some(rule) => rule.clone(),
                None => {
                    let key_escape = self.primitive("key-escape");
                    let tail = not_in_tail(&key, &char_rule, &key_escape);
                    let rule = self.builder.add(&dashed(name, "rest"), tail);
                    self.not_in_tails.insert(key.clone(), rule.clone());
                    rule
                }
            };
            alternatives.push(Expr::Rule(tail));
            let mut expr = trie_choice(alternatives);
            if node.depth % 16 == 0 {
                expr = Expr::rule(&self.builder.add(&dashed_number(name, node.depth), expr));
            }
            exprs[i] = expr;
        }
        let body = std::mem::replace(&mut exprs[0], Expr::Empty);
        Expr::seq([Expr::literal("\""), body])
    }

    /// [`Lowerer::string_not_in`] for a big set of names (at least [`BIG_KEY_SET`]): the
    /// same language as [`Lowerer::build_string_not_in`], written smaller.
    ///
    /// - The trie is folded into its minimal acyclic automaton: nodes with the same future
    ///   (both ends of names or neither, the same characters leading to equivalent nodes)
    ///   are one state, found bottom-up by hashing each node's signature. A state reached
    ///   from several others gets a rule of its own (`key-suffix`) where that is shorter than
    ///   writing it out at each place: names share long endings (`-spacing`, `-style`).
    ///   Other states are written inline in their parent, with a rule every 16 levels below
    ///   the last rule so that bodies stay shallow; each distinct (state, level) is built
    ///   once.
    /// - A node's ways out of the trie are one short-named rule per set of child characters:
    ///   `key-other` (a character that leaves the trie, then the rest of the key) and, for a
    ///   node that is not a name, `key-end` (`"\"" | key-other`).
    fn build_string_not_in_big(&mut self, excluded: &[String], name: &str) -> Expr {
        let trie = Trie::new(excluded);
        let nodes = &trie.nodes;
        let n = nodes.len();

        // Equivalence classes, bottom-up: children are created after their parent, so going
        // from the last node back meets children first, and a class's children have smaller
        // class numbers than the class itself.
        let mut class = vec![0usize; n];
        // The first node (from the back) of each class, and how many classes lead to it.
        let mut class_node: Vec<usize> = Vec::new();
        let mut indegree: Vec<usize> = Vec::new();
        // Classes by a hash of their signature (whether a name ends there, and each child's
        // character and class), checked against the class's first node; on the rare
        // collision the node simply gets a class of its own.
        let mut signatures: HashMap<u64, usize, FastHash> = HashMap::default();
        let signature = |i: usize, class: &[usize]| {
            let mut hasher = gbnf::FastHasher::default();
            hasher.write_u8(u8::from(nodes[i].terminal));
            for at in trie.children(i) {
                hasher.write_u32(u32::from(nodes[at].ch));
                hasher.write_usize(class[at]);
            }
            hasher.finish()
        };
        let same_signature = |i: usize, j: usize, class: &[usize]| {
            nodes[i].terminal == nodes[j].terminal
                && trie
                    .children(i)
                    .map(|at| (nodes[at].ch, class[at]))
                    .eq(trie.children(j).map(|at| (nodes[at].ch, class[at])))
        };
        for i in (0..n).rev() {
            let hash = signature(i, &class);
            let known = signatures.get(&hash).copied();
            if let Some(c) = known.filter(|&c| same_signature(i, class_node[c], &class)) {
                class[i] = c;
                continue;
            }
            let c = class_node.len();
            if known.is_none() {
                signatures.insert(hash, c);
            }
            class_node.push(i);
            indegree.push(0);
            for at in trie.children(i) {
                indegree[class[at]] += 1;
            }
            class[i] = c;
        }
        drop(signatures);

        // Which classes get a rule of their own. Written out, a state costs about `text`
        // characters at each of its `indegree` places; as a rule, one definition plus a
        // reference at each place.
        const REFERENCE: usize = 14;
        const EXIT: usize = 11;
        let classes = class_node.len();
        let mut shared = vec![false; classes];
        // The printed length of each class written inline, and whether it needs
        // parentheses after a character (more than one alternative).
        let mut inline = vec![(0usize, false); classes];
        for c in 0..classes {
            let node = class_node[c];
            let mut alternatives = 1;
            let mut text = EXIT;
            for at in trie.children(node) {
                alternatives += 1;
                let child = class[at];
                text += nodes[at].ch.len_utf8() + 3;
                text += match (shared[child], inline[child]) {
                    (true, _) => REFERENCE,
                    (false, (child_text, true)) => child_text + 2,
                    (false, (child_text, false)) => child_text,
                };
            }
            text += 3 * (alternatives - 1);
            inline[c] = (text, alternatives > 1);
            let k = indegree[c];
            shared[c] =
                k >= 2 && text > REFERENCE + 8 && k * text > REFERENCE + 6 + text + k * REFERENCE;
        }

        // Levels below the last rule, from the root down: a node starts a rule (level 0) if
        // it is the root, a shared state, or 16 levels below the last rule.
        let mut level = vec![0u8; n];
        for i in 1..n {
            let below = level[trie.parent[i]] + 1;
            level[i] = if shared[class[i]] || below == 16 {
                0
            } else {
                below
            };
        }
        // Each distinct (class, level) is a key, built once, by its first node from the back.
        let mut slot = vec![u32::MAX; classes * 16];
        let mut key = vec![0usize; n];
        let mut builder_of: Vec<usize> = Vec::new();
        for i in (0..n).rev() {
            let s = &mut slot[class[i] * 16 + usize::from(level[i])];
            if *s == u32::MAX {
                *s = u32::try_from(builder_of.len()).unwrap_or(u32::MAX);
                builder_of.push(i);
            }
            key[i] = *s as usize;
        }
        drop(slot);
        // How many built nodes use each key: the last use takes the expression, the others
        // clone it.
        let mut uses = vec![0usize; builder_of.len()];
        for i in 1..n {
            let parent = trie.parent[i];
            if builder_of[key[parent]] == parent {
                uses[key[i]] += 1;
            }
        }
        let mut built: Vec<Expr> = vec![Expr::Empty; builder_of.len()];
        let mut child_set: Vec<char> = Vec::new();
        for (k, &i) in builder_of.iter().enumerate() {
            let node = &nodes[i];
            child_set.clear();
            child_set.extend(trie.children(i).map(|at| nodes[at].ch));
            let mut alternatives = Vec::with_capacity(child_set.len() + 1);
            for at in trie.children(i) {
                let child_key = key[at];
                uses[child_key] -= 1;
                let child = if uses[child_key] == 0 {
                    std::mem::replace(&mut built[child_key], Expr::Empty)
                } else {
                    built[child_key].clone()
                };
                alternatives.push(trie_step(nodes[at].ch, child));
            }
            alternatives.push(Expr::Rule(self.key_exit(&child_set, node.terminal)));
            let mut expr = trie_choice(alternatives);
            if level[i] == 0 {
                let rule = if shared[class[i]] {
                    format!("{}key-suffix", self.prefix)
                } else {
                    dashed_number(name, node.depth)
                };
                expr = Expr::rule(&self.builder.add(&rule, expr));
            }
            built[k] = expr;
        }
        let body = std::mem::replace(&mut built[key[0]], Expr::Empty);
        Expr::seq([Expr::literal("\""), body])
    }

    /// The ways out of a trie node of [`Lowerer::build_string_not_in_big`] whose children
    /// are `children`: a character that leaves the trie and the rest of the key, and the
    /// end of the key too unless the node is one of the names.
    fn key_exit(&mut self, children: &[char], terminal: bool) -> RuleName {
        if let Some(rule) = self.key_exits[usize::from(terminal)].get(children) {
            return rule.clone();
        }
        let rule = if terminal {
            let rest = match &self.key_rest {
                Some(rule) => rule.clone(),
                None => {
                    let char_rule = self.primitive("char");
                    let body = Expr::seq([Expr::star(char_rule), Expr::literal("\"")]);
                    let rule = self.builder.add(&format!("{}key-rest", self.prefix), body);
                    self.key_rest = Some(rule.clone());
                    rule
                }
            };
            let char_rule = self.primitive("char");
            let key_escape = self.primitive("key-escape");
            let body = Expr::seq([
                not_in_leave(children, &char_rule, &key_escape),
                Expr::Rule(rest),
            ]);
            self.builder.add(&format!("{}key-other", self.prefix), body)
        } else {
            let other = self.key_exit(children, true);
            let body = Expr::alt([Expr::literal("\""), Expr::Rule(other)]);
            self.builder.add(&format!("{}key-end", self.prefix), body)
        };
        self.key_exits[usize::from(terminal)].insert(children.to_vec(), rule.clone());
        rule
    }

    // ----- enum and const --------------------------------------------------------------

    fn lower_values(
        &mut self,
        values: &[&Value],
        name: &str,
        pointer: &JsonPointer,
    ) -> Result<Option<Expr>, Error> {
        let mut alternatives = Vec::new();
        let mut strings = Vec::new();
        for &value in values {
            match value {
                Value::String(text) => strings.push(json_string_text(text)),
                other => alternatives.push(self.lower_const(other, 0, pointer)?),
            }
        }
        if !strings.is_empty() {
            strings.sort();
            strings.dedup();
            alternatives.push(self.trie(&strings, 0, 0, name, pointer)?);
        }
        Ok(match alternatives.len() {
            0 => None,
            1 => alternatives.pop(),
            _ => {
                let alt = Expr::alt(alternatives);
                Some(Expr::rule(&self.builder.add(name, alt)))
            }
        })
    }

    /// The JSON text of one value, with the chosen whitespace between its tokens.
    fn lower_const(
        &mut self,
        value: &Value,
        depth: usize,
        pointer: &JsonPointer,
    ) -> Result<Expr, Error> {
        if depth > MAX_DEPTH {
            return Err(Error::new(
                ErrorKind::TooDeep { limit: MAX_DEPTH },
                pointer.clone(),
            ));
        }
        Ok(match value {
            Value::Array(items) if !items.is_empty() => {
                let ws = self.ws();
                let sep = self.sep();
                let mut parts = vec![Expr::literal("["), ws.clone()];
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        parts.push(sep.clone());
                    }
                    parts.push(self.lower_const(item, depth + 1, pointer)?);
                }
                parts.push(ws);
                parts.push(Expr::literal("]"));
                Expr::seq(parts)
            }
            Value::Object(map) if (2..=4).contains(&map.len()) => {
                // Object equality ignores member order: small objects in any order.
                let ws = self.ws();
                let mut members = Vec::new();
                for (key, item) in map {
                    let value = self.lower_const(item, depth + 1, pointer)?;
                    let key = json_string_literal(key);
                    members.push(Member {
                        key,
                        value,
                        required: true,
                    });
                }
                match self.members_any_order(&members, None, (0, None), "const", pointer, 4)? {
                    Some(body) => Expr::seq([Expr::literal("{"), body, ws, Expr::literal("}")]),
                    None => Expr::alt([]),
                }
            }
            Value::Object(map) if !map.is_empty() => {
                let ws = self.ws();
                let sep = self.sep();
                let mut parts = vec![Expr::literal("{"), ws.clone()];
                for (i, (key, item)) in map.iter().enumerate() {
                    if i > 0 {
                        parts.push(sep.clone());
                    }
                    parts.push(Expr::literal(
                        &serde_json::to_string(key).unwrap_or_default(),
                    ));
                    parts.push(ws.clone());
                    parts.push(Expr::literal(":"));
                    parts.push(ws.clone());
                    parts.push(self.lower_const(item, depth + 1, pointer)?);
                }
                parts.push(ws);
                parts.push(Expr::literal("}"));
                Expr::seq(parts)
            }
            Value::Array(_) => {
                let ws = self.ws();
                Expr::seq([Expr::literal("["), ws, Expr::literal("]")])
            }
            Value::Object(_) => {
                let ws = self.ws();
                Expr::seq([Expr::literal("{"), ws, Expr::literal("}")])
            }
            Value::Number(number) => number_encodings(number),
            other => Expr::literal(&other.to_string()),
        })
    }

    /// An alternation of the sorted, distinct `strings` (from byte `offset` on), sharing
    /// common prefixes.
    fn trie(
        &mut self,
        strings: &[String],
        offset: usize,
        depth: usize,
        name: &str,
        pointer: &JsonPointer,
    ) -> Result<Expr, Error> {
        if depth > MAX_TRIE_DEPTH {
            self.unsupported(
                pointer,
                "enum",
                "enum strings nest too deeply as prefixes of each other",
            )?;
        }
        if strings.len() == 1 || depth > MAX_TRIE_DEPTH {
            let alternatives: Vec<Expr> = strings
                .iter()
                .map(|s| Expr::literal(&s[offset.min(s.len())..]))
                .collect();
            return Ok(Expr::alt(alternatives));
        }
        let first = &strings[0][offset..];
        let last = &strings[strings.len() - 1][offset..];
        let mut common = first
            .bytes()
            .zip(last.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        while !first.is_char_boundary(common) {
            common -= 1;
        }
        let prefix = Expr::literal(&first[..common]);
        let start = offset + common;
        let mut alternatives = Vec::new();
        let mut i = 0;
        while i < strings.len() {
            let rest = &strings[i][start..];
            let Some(ch) = rest.chars().next() else {
                alternatives.push(Expr::Empty);
                i += 1;
                continue;
            };
            let mut j = i + 1;
            while j < strings.len() && strings[j][start..].starts_with(ch) {
                j += 1;
            }
            alternatives.push(self.trie(&strings[i..j], start, depth + 1, name, pointer)?);
            i = j;
        }
        let branches = if alternatives.len() == 2 && alternatives[0] == Expr::Empty {
            Expr::optional(alternatives.pop().unwrap_or(Expr::Empty))
        } else {
            Expr::alt(alternatives)
        };
        let mut expr = Expr::seq([prefix, branches]);
        if depth > 0 && depth % 16 == 0 {
            expr = Expr::rule(&self.builder.add(&format!("{name}-t"), expr));
        }
        Ok(expr)
    }

    // ----- objects -------------------------------------------------------------------

    fn lower_object(&mut self, leaf: &Leaf, name: &str) -> Result<Option<Expr>, Error> {
        let o = &leaf.object;
        let pointer = &leaf.pointer;
        if leaf.object_trivial() {
            return Ok(Some(self.primitive("object")));
        }
        let ws = self.ws();
        let additional_default =
            if self.options().additional_properties_default || o.properties.is_empty() {
                Shape::any()
            } else {
                Shape::Never
            };
        let additional = o
            .additional
            .as_deref()
            .cloned()
            .unwrap_or(additional_default);
        let mut members: Vec<Member> = Vec::new();
        let mut declared: Vec<String> = Vec::new();
        // The names and schemas of the members, borrowed from the leaf where it declares them.
        let mut names: Vec<(&str, Cow<'_, Shape>)> = o
            .properties
            .iter()
            .map(|(k, v)| (&**k, Cow::Borrowed(v)))
            .collect();
        // The automaton of each pattern of `patternProperties`, to match keys against.
        let mut pattern_dfas: Vec<(Dfa, Shape)> = Vec::new();
        for (pattern, shape) in &o.pattern_properties {
            let at = pointer.join("patternProperties").join(pattern.as_str());
            if let Some(dfa) = self.dfa_cache.get(pattern) {
                pattern_dfas.push((dfa.clone(), shape.clone()));
                continue;
            }
            match pattern_dfa(pattern, self.options().dotall) {
                Ok(dfa) => {
                    self.dfa_cache.insert(pattern.clone(), dfa.clone());
                    pattern_dfas.push((dfa, shape.clone()));
                }
                Err(err) if err.kind == LeafErrorKind::Invalid => {
                    return Err(Error::new(
                        ErrorKind::Invalid {
                            keyword: "patternProperties".to_owned(),
                            message: err.message,
                        },
                        at,
                    ))
                }
                Err(err) => self.unsupported(&at, "patternProperties", err.message)?,
            }
        }
        for required in &o.required {
            if !o.properties.contains_key(required.as_str()) {
                let by_pattern = pattern_dfas.iter().any(|(dfa, _)| dfa.accepts(required));
                let shape = if by_pattern || additional.is_never() {
                    Shape::any()
                } else {
                    additional.clone()
                };
                names.push((required.as_str(), Cow::Owned(shape)));
            }
        }
        for (key, mut shape) in names {
            let required = o.required.iter().any(|name| name == key);
            for (dfa, pattern_shape) in &pattern_dfas {
                if dfa.accepts(key) {
                    shape = Cow::Owned(self.n.conj(&shape, pattern_shape, pointer)?);
                }
            }
            declared.push(key.to_owned());
            if let Some(property_names) = o.property_names.as_deref() {
                match self
                    .n
                    .admits(property_names, &Value::String(key.to_owned()), 0)
                {
                    Some(true) => {}
                    Some(false) => {
                        if required {
                            return Ok(None);
                        }
                        continue;
                    }
                    None => self.unsupported(
                        &pointer.join("propertyNames"),
                        "propertyNames",
                        "cannot check a declared property name against propertyNames",
                    )?,
                }
            }
            match self.lower_named(&shape, |this| this.child(name, key))? {
                Some(value) => members.push(Member {
                    key: json_string_literal(key),
                    value,
                    required,
                }),
                None if required => return Ok(None),
                None => {}
            }
        }
        // Properties beyond the declared ones.
        let mut extra: Option<Expr> = None;
        if !pattern_dfas.is_empty() {
            extra = self.pattern_members(&pattern_dfas, &declared, &additional, name, pointer)?;
        } else if !additional.is_never() {
            let value_name = self.child(name, "additional-value");
            if let Some(value) = self.lower(&additional, &value_name)? {
                let key = match o.property_names.as_deref() {
                    None => {
                        if declared.is_empty() {
                            self.primitive("string")
                        } else {
                            let key_name = self.child(name, "additional-key");
                            self.string_not_in(&declared, &key_name)
                        }
                    }
                    Some(Shape::Leaf(names_leaf)) if names_leaf.values.is_some() => {
                        let keys: Vec<&Value> = names_leaf
                            .values
                            .iter()
                            .flatten()
                            .filter(|v| {
                                v.as_str().is_some_and(|s| !declared.iter().any(|d| d == s))
                            })
                            .collect();
                        let key_name = self.child(name, "additional-key");
                        match self.lower_values(&keys, &key_name, pointer)? {
                            Some(expr) => expr,
                            None => Expr::alt([]),
                        }
                    }
                    Some(Shape::Leaf(names_leaf))
                        if declared.is_empty() && names_leaf.not_values.is_empty() =>
                    {
                        let mut key_leaf = (**names_leaf).clone();
                        key_leaf.types &= types::STRING;
                        let key_name = self.child(name, "key");
                        match self.lower_leaf(&key_leaf, &key_name)? {
                            Some(expr) => expr,
                            None => Expr::alt([]),
                        }
                    }
                    Some(names_shape) => {
                        let key_name = self.child(name, "additional-key");
                        match self.key_language(names_shape) {
                            Some(language) => {
                                let undeclared = keys::complement(&keys::names(&declared));
                                match language.intersect(&undeclared, keys::MAX_KEY_STATES) {
                                    Ok(dfa) => keys::key_expr(
                                        &mut self.builder,
                                        &mut self.chars,
                                        &key_name,
                                        &dfa,
                                    )
                                    .unwrap_or_else(|| Expr::alt([])),
                                    Err(_) => {
                                        self.unsupported(
                                            &pointer.join("propertyNames"),
                                            "propertyNames",
                                            "the property-name automaton is too large",
                                        )?;
                                        self.string_not_in(&declared, &key_name)
                                    }
                                }
                            }
                            None => {
                                self.unsupported(
                                    &pointer.join("propertyNames"),
                                    "propertyNames",
                                    "propertyNames beside declared properties",
                                )?;
                                self.string_not_in(&declared, &key_name)
                            }
                        }
                    }
                };
                if key != Expr::alt([]) {
                    let kv = Expr::seq([key, ws.clone(), Expr::literal(":"), ws.clone(), value]);
                    let kv_name = self.child(name, "additional-kv");
                    extra = Some(Expr::rule(&self.builder.add(&kv_name, kv)));
                }
            }
        }
        // With at most one declared property there is only one order.
        let order = match members.len() {
            0 | 1 => PropertyOrder::Schema,
            _ => self.options().property_order,
        };
        let members_expr = match order {
            PropertyOrder::Schema => self.members_ordered(
                members,
                extra,
                o.min_properties,
                o.max_properties,
                name,
                pointer,
            )?,
            PropertyOrder::Any => {
                let cap = self.options().max_any_order_properties;
                self.members_any_order(
                    &members,
                    extra,
                    (o.min_properties, o.max_properties),
                    name,
                    pointer,
                    cap,
                )?
            }
        };
        let Some(members_expr) = members_expr else {
            return Ok(None);
        };
        let body = Expr::seq([Expr::literal("{"), members_expr, ws, Expr::literal("}")]);
        Ok(Some(Expr::rule(&self.builder.add(name, body))))
    }

    /// Undeclared members of an object with `patternProperties`: keys are split by which
    /// patterns they match (each part with the conjunction of those patterns' schemas, or
    /// `additionalProperties` when none matches), declared names excluded.
    fn pattern_members(
        &mut self,
        patterns: &[(Dfa, Shape)],
        declared: &[String],
        additional: &Shape,
        name: &str,
        pointer: &JsonPointer,
    ) -> Result<Option<Expr>, Error> {
        if patterns.len() > 4 {
            self.unsupported(
                &pointer.join("patternProperties"),
                "patternProperties",
                "more than 4 patterns on one object",
            )?;
        }
        let ws = self.ws();
        let undeclared = keys::complement(&keys::names(declared));
        let mut alternatives = Vec::new();
        let count = patterns.len().min(4);
        for mask in 0..(1usize << count) {
            let mut key = undeclared.clone();
            let mut value_shape = if mask == 0 {
                additional.clone()
            } else {
                Shape::any()
            };
            for (i, (dfa, shape)) in patterns.iter().take(count).enumerate() {
                let part = if mask & (1 << i) != 0 {
                    value_shape = self.n.conj(&value_shape, shape, pointer)?;
                    dfa.clone()
                } else {
                    keys::complement(dfa)
                };
                key = match key.intersect(&part, keys::MAX_KEY_STATES) {
                    Ok(dfa) => dfa.trim().minimize(),
                    Err(_) => {
                        self.unsupported(
                            &pointer.join("patternProperties"),
                            "patternProperties",
                            "the key patterns together need too many automaton states",
                        )?;
                        return Ok(None);
                    }
                };
            }
            if value_shape.is_never() {
                continue;
            }
            let key_name = self.child(name, &format!("key-{mask}"));
            // `key` was minimised by the last intersection (there is at least one pattern).
            let Some(key_expr) =
                keys::minimal_key_expr(&mut self.builder, &mut self.chars, &key_name, &key)
            else {
                continue;
            };
            let value_name = self.child(name, &format!("value-{mask}"));
            let Some(value) = self.lower(&value_shape, &value_name)? else {
                continue;
            };
            alternatives.push(Expr::seq([
                key_expr,
                ws.clone(),
                Expr::literal(":"),
                ws.clone(),
                value,
            ]));
        }
        if alternatives.is_empty() {
            return Ok(None);
        }
        let kv_name = self.child(name, "pattern-kv");
        Ok(Some(Expr::rule(
            &self.builder.add(&kv_name, Expr::alt(alternatives)),
        )))
    }

    /// The automaton of the keys `propertyNames` allows, when it is a string schema made of
    /// patterns, known formats and small lengths.
    fn key_language(&mut self, shape: &Shape) -> Option<Dfa> {
        let Shape::Leaf(leaf) = shape else {
            return None;
        };
        if leaf.types & types::STRING == 0 || leaf.values.is_some() || !leaf.not_values.is_empty() {
            return None;
        }
        let s = &leaf.string;
        let mut dfa = keys::complement(&keys::names(&[]));
        for (pattern, _) in &s.patterns {
            let next = match self.dfa_cache.get(pattern) {
                Some(dfa) => dfa.clone(),
                None => {
                    let built = pattern_dfa(pattern, self.options().dotall).ok()?;
                    self.dfa_cache.insert(pattern.clone(), built.clone());
                    built
                }
            };
            dfa = dfa.intersect(&next, keys::MAX_KEY_STATES).ok()?.minimize();
        }
        for (format, _) in &s.formats {
            let next = crate::formats::format_dfa(format)?.ok()?;
            dfa = dfa.intersect(&next, keys::MAX_KEY_STATES).ok()?.minimize();
        }
        for (pattern, _) in &s.not_patterns {
            let outside = pattern_dfa(pattern, self.options().dotall)
                .ok()?
                .complement();
            dfa = dfa
                .intersect(&outside, keys::MAX_KEY_STATES)
                .ok()?
                .minimize();
        }
        for (format, _) in &s.not_formats {
            let outside = crate::formats::format_dfa(format)?.ok()?.complement();
            dfa = dfa
                .intersect(&outside, keys::MAX_KEY_STATES)
                .ok()?
                .minimize();
        }
        if s.min_length > 0 || s.max_length.is_some() {
            if s.max_length.unwrap_or(s.min_length) > 256 {
                return None;
            }
            let lengths = Dfa::lengths(s.min_length, s.max_length);
            dfa = dfa
                .intersect(&lengths, keys::MAX_KEY_STATES)
                .ok()?
                .minimize();
        }
        Some(dfa)
    }

    /// The members of an object in schema order. Each member is preceded by `ws` (the
    /// first) or `sep`; the result may be empty when nothing is required.
    fn members_ordered(
        &mut self,
        members: Vec<Member>,
        extra: Option<Expr>,
        min_properties: u64,
        max_properties: Option<u64>,
        name: &str,
        pointer: &JsonPointer,
    ) -> Result<Option<Expr>, Error> {
        let ws = self.ws();
        let sep = self.sep();
        let n = members.len();
        let required_count = members.iter().filter(|m| m.required).count() as u64;
        let max_possible = if extra.is_some() {
            None
        } else {
            Some(n as u64)
        };
        let counting = min_properties > required_count
            || max_properties
                .is_some_and(|max| max_possible.map_or(true, |possible| max < possible));
        if counting {
            return self.members_counted(
                &members,
                extra,
                min_properties,
                max_properties,
                name,
                pointer,
            );
        }
        let first_required = members.iter().position(|m| m.required);
        // `sep key ws ":" ws value`, flattened as `seq_exact([sep, kv])` would flatten it, but
        // from `ws` and the comma directly rather than from a copy of `sep`'s own list, and
        // pushed straight into a list of its final size (the usual one, `ws` being one rule
        // or nothing): big objects make thousands of these.
        let (comma, colon) = (Expr::literal(","), Expr::literal(":"));
        let item = |member: Member, ws: &Expr| {
            let mut items = Vec::with_capacity(8);
            push_flat(&mut items, ws.clone());
            items.push(comma.clone());
            push_flat(&mut items, ws.clone());
            push_flat(&mut items, member.key);
            push_flat(&mut items, ws.clone());
            items.push(colon.clone());
            push_flat(&mut items, ws.clone());
            push_flat(&mut items, member.value);
            let expr = Expr::Seq(items);
            if member.required {
                expr
            } else {
                Expr::optional(expr)
            }
        };
        let extra_tail = extra
            .as_ref()
            .map(|e| Expr::star(Expr::seq([sep.clone(), e.clone()])))
            .unwrap_or(Expr::Empty);
        let last_candidate = first_required.unwrap_or(n.saturating_sub(1));
        let candidates = if n == 0 { 0 } else { last_candidate + 1 };
        // Members that may come first keep their expression for that; the others are only
        // ever preceded by a separator.
        let mut firsts: Vec<(Expr, Expr)> = Vec::with_capacity(candidates);
        let mut followers: Vec<Expr> = Vec::with_capacity(n);
        for (i, member) in members.into_iter().enumerate() {
            if i == 0 {
                firsts.push((member.key, member.value));
                followers.push(Expr::Empty);
            } else if i < candidates {
                firsts.push((member.key.clone(), member.value.clone()));
                followers.push(item(member, &ws));
            } else {
                followers.push(item(member, &ws));
            }
        }
        // The suffix shared by every choice of first member.
        let mut common: Vec<Expr> = followers.drain((last_candidate + 1).min(n)..).collect();
        common.push(extra_tail.clone());
        let common = Expr::seq(common);
        // rest[j]: everything after member j, when j is the first member present.
        let mut rest: Vec<Expr> = vec![Expr::Empty; candidates];
        if candidates > 0 {
            let use_rules = candidates > 2;
            let rest_name = dashed(name, "rest");
            rest[candidates - 1] = if use_rules && common != Expr::Empty {
                Expr::rule(
                    &self
                        .builder
                        .add(&dashed_number(&rest_name, candidates - 1), common),
                )
            } else {
                common
            };
            for j in (0..candidates - 1).rev() {
                let follower = std::mem::replace(&mut followers[j + 1], Expr::Empty);
                // rest[j + 1] also follows member j + 1 as the first one: a rule when there
                // are more than two candidates, so this clone is small.
                let body = seq_exact([follower, rest[j + 1].clone()]);
                rest[j] = if use_rules {
                    Expr::rule(&self.builder.add(&dashed_number(&rest_name, j), body))
                } else {
                    body
                };
            }
        }
        let mut alternatives: Vec<Expr> = Vec::with_capacity(candidates + 1);
        for ((key, value), rest) in firsts.into_iter().zip(rest) {
            alternatives.push(seq_exact([
                ws.clone(),
                key,
                ws.clone(),
                Expr::literal(":"),
                ws.clone(),
                value,
                rest,
            ]));
        }
        if first_required.is_none() {
            if let Some(extra) = extra {
                alternatives.push(Expr::seq([ws, extra, extra_tail]));
            }
            if alternatives.is_empty() {
                return Ok(Some(Expr::Empty));
            }
            return Ok(Some(Expr::optional(Expr::alt(alternatives))));
        }
        Ok(Some(Expr::alt(alternatives)))
    }

    /// Schema order with a member count in `[min, max]`: one rule per (member index,
    /// count so far, started) state.
    fn members_counted(
        &mut self,
        members: &[Member],
        extra: Option<Expr>,
        min: u64,
        max: Option<u64>,
        name: &str,
        pointer: &JsonPointer,
    ) -> Result<Option<Expr>, Error> {
        let n = members.len();
        let cap = max.unwrap_or(min).max(1) as usize;
        let cap = cap.min(n + 1 + min as usize);
        if (n + 1).saturating_mul(cap + 1).saturating_mul(2) > MAX_STATES {
            self.unsupported(
                pointer,
                "maxProperties",
                "minProperties/maxProperties on an object with this many properties",
            )?;
            let members = members
                .iter()
                .map(|m| Member {
                    key: m.key.clone(),
                    value: m.value.clone(),
                    required: m.required,
                })
                .collect();
            return self.members_ordered(members, extra, 0, None, name, pointer);
        }
        let ws = self.ws();
        let sep = self.sep();
        // states[i][c][s] for i in 0..=n; filled from the end.
        let mut next: Vec<[Option<Expr>; 2]> = Vec::new();
        for c in 0..=cap {
            let mut row: [Option<Expr>; 2] = [None, None];
            for started in [false, true] {
                let c64 = c as u64;
                let lo = min.saturating_sub(c64);
                let hi = max.map(|m| m.saturating_sub(c64));
                let saturated = max.is_none() && c == cap;
                let expr = match &extra {
                    None => (c64 >= min || saturated).then_some(Expr::Empty),
                    Some(e) => {
                        let lo = if saturated { 0 } else { lo };
                        let lo32 = clamp_u32(lo);
                        let hi32 = hi.map(clamp_u32);
                        if hi == Some(0) {
                            (lo == 0).then_some(Expr::Empty)
                        } else if started {
                            Some(Expr::repeat(
                                Expr::seq([sep.clone(), e.clone()]),
                                lo32,
                                hi32,
                            ))
                        } else {
                            Some(item_run(&ws, &sep, e, lo32, hi32))
                        }
                    }
                };
                row[usize::from(started)] = expr;
            }
            next.push(row);
        }
        // How many required members come before each index: they have all been written
        // there, so states with a lower count are never reached.
        let mut required_before = Vec::with_capacity(n + 1);
        let mut required = 0;
        for member in members {
            required_before.push(required);
            required += usize::from(member.required);
        }
        // Only the states a key can reach get a rule (the others would be pruned, but only
        // after they were made): before member `i`, between `required_before[i]` and `i`
        // members were written (the count saturating at `cap`, which is at least 1), and the
        // object has started if and only if one was.
        let reachable = |i: usize, c: usize, started: bool| {
            started == (c >= 1) && c <= i.min(cap) && c >= required_before[i].min(cap)
        };
        for i in (0..n).rev() {
            let mut current: Vec<[Option<Expr>; 2]> = Vec::new();
            for c in 0..=cap {
                let mut row: [Option<Expr>; 2] = [None, None];
                for started in [false, true] {
                    if !reachable(i, c, started) {
                        continue;
                    }
                    let mut alternatives = Vec::new();
                    let can_add = max.map_or(true, |m| (c as u64) < m);
                    if can_add {
                        let c2 = (c + 1).min(cap);
                        if let Some(rest) = &next[c2][1] {
                            let lead = if started { sep.clone() } else { ws.clone() };
                            alternatives.push(Expr::seq([lead, members[i].kv(&ws), rest.clone()]));
                        }
                    }
                    if !members[i].required {
                        if let Some(rest) = &next[c][usize::from(started)] {
                            alternatives.push(rest.clone());
                        }
                    }
                    row[usize::from(started)] = match alternatives.len() {
                        0 => None,
                        _ => Some(Expr::rule(
                            &self
                                .builder
                                .add(&tagged_number(name, "-s", i), Expr::alt(alternatives)),
                        )),
                    };
                }
                current.push(row);
            }
            next = current;
        }
        Ok(next[0][0].clone())
    }

    /// Declared properties in any order (each at most once), then additional ones.
    fn members_any_order(
        &mut self,
        members: &[Member],
        extra: Option<Expr>,
        (min, max): (u64, Option<u64>),
        name: &str,
        pointer: &JsonPointer,
        cap: usize,
    ) -> Result<Option<Expr>, Error> {
        let n = members.len();
        // The error names the limit that applies, the caller's or the hard one.
        let cap = cap.min(crate::MAX_ANY_ORDER_PROPERTIES);
        if n > cap {
            return Err(Error::new(
                ErrorKind::Unsupported {
                    keyword: "properties".to_owned(),
                    message: format!("{n} properties in any order (the limit is {cap})"),
                },
                pointer.join("properties"),
            ));
        }
        let ws = self.ws();
        let sep = self.sep();
        let required_mask: usize = members
            .iter()
            .enumerate()
            .filter(|(_, m)| m.required)
            .map(|(i, _)| 1 << i)
            .sum();
        let full = (1usize << n) - 1;
        let mut states: Vec<Option<Expr>> = vec![None; full + 1];
        for mask in (0..=full).rev() {
            let lead = if mask == 0 { ws.clone() } else { sep.clone() };
            let mut alternatives = Vec::new();
            // `minProperties`/`maxProperties`: the additional members bring the count of
            // the declared ones seen (`mask`) into range.
            let declared = u64::from(mask.count_ones());
            let fewest = min.saturating_sub(declared);
            let most = max.map(|max| max.checked_sub(declared));
            if mask & required_mask == required_mask && most != Some(None) {
                // Counts past `u32::MAX` are unbounded (no model writes that many members).
                let most = most.flatten().and_then(|most| u32::try_from(most).ok());
                let fewest = u32::try_from(fewest).unwrap_or(u32::MAX);
                let extras = extra.as_ref().filter(|_| most != Some(0));
                match extras {
                    None if fewest == 0 => alternatives.push(Expr::Empty),
                    None => {}
                    Some(e) => {
                        alternatives.push(item_run(&lead, &sep, e, fewest, most));
                    }
                }
            }
            for (j, member) in members.iter().enumerate() {
                if mask & (1 << j) != 0 {
                    continue;
                }
                if let Some(rest) = &states[mask | (1 << j)] {
                    alternatives.push(Expr::seq([lead.clone(), member.kv(&ws), rest.clone()]));
                }
            }
            states[mask] = match alternatives.len() {
                0 => None,
                1 if mask != 0 => alternatives.pop(),
                _ => Some(Expr::rule(
                    &self
                        .builder
                        .add(&tagged_number(name, "-m", mask), Expr::alt(alternatives)),
                )),
            };
        }
        Ok(states[0].clone())
    }

    // ----- arrays --------------------------------------------------------------------

    fn lower_array(&mut self, leaf: &Leaf, name: &str) -> Result<Option<Expr>, Error> {
        let a = &leaf.array;
        let pointer = &leaf.pointer;
        if leaf.array_trivial() {
            return Ok(Some(self.primitive("array")));
        }
        let ws = self.ws();
        let item_name = self.child(name, "item");
        let items: Option<Expr> = match &a.items {
            None => Some(self.primitive("value")),
            Some(shape) => self.lower(shape, &item_name)?,
        };
        let max = a.max_items;
        let body = if !a.contains.is_empty() {
            self.array_contains(leaf, items, name)?
        } else if a.unique && max.map_or(true, |m| m > 1) {
            self.array_unique(leaf, name)?
        } else {
            self.array_plain(leaf, items, name)?
        };
        let _ = pointer;
        let Some(body) = body else {
            return Ok(None);
        };
        let body = Expr::seq([Expr::literal("["), body, ws, Expr::literal("]")]);
        Ok(Some(Expr::rule(&self.builder.add(name, body))))
    }

    fn array_plain(
        &mut self,
        leaf: &Leaf,
        items: Option<Expr>,
        name: &str,
    ) -> Result<Option<Expr>, Error> {
        let a = &leaf.array;
        let ws = self.ws();
        let sep = self.sep();
        let mut prefix: Vec<Expr> = Vec::new();
        for (i, shape) in a.prefix.iter().enumerate() {
            if a.max_items.is_some_and(|m| (i as u64) >= m) {
                break;
            }
            match self.lower(shape, &self.child(name, &format!("item-{i}")))? {
                Some(expr) => prefix.push(expr),
                None => break,
            }
        }
        let k = prefix.len() as u64;
        let min = a.min_items;
        if min > k && (items.is_none() || (k as usize) < a.prefix.len()) {
            return Ok(None);
        }
        let lo = min.saturating_sub(k);
        let hi = a.max_items.map(|m| m.saturating_sub(k));
        let hi = if (k as usize) < a.prefix.len() {
            Some(0)
        } else {
            hi
        };
        let tail = match &items {
            None => (lo == 0).then_some(Expr::Empty),
            Some(_) if hi == Some(0) => (lo == 0).then_some(Expr::Empty),
            Some(item) => {
                let (lo32, hi32) = (clamp_u32(lo), hi.map(clamp_u32));
                if k == 0 {
                    Some(item_run(&ws, &sep, item, lo32, hi32))
                } else {
                    Some(Expr::repeat(
                        Expr::seq([sep.clone(), item.clone()]),
                        lo32,
                        hi32,
                    ))
                }
            }
        };
        let Some(mut acc) = tail else {
            return Ok(None);
        };
        for (i, elem) in prefix.iter().enumerate().rev() {
            let lead = if i == 0 { ws.clone() } else { sep.clone() };
            acc = Expr::seq([lead, elem.clone(), acc]);
            if (i as u64) >= min {
                acc = Expr::optional(acc);
            }
            if i > 0 && i % 16 == 0 {
                acc = Expr::rule(&self.builder.add(&format!("{name}-from-{i}"), acc));
            }
        }
        Ok(Some(acc))
    }

    /// `uniqueItems` over a finite item domain: one rule per set of values used so far.
    fn array_unique(&mut self, leaf: &Leaf, name: &str) -> Result<Option<Expr>, Error> {
        let a = &leaf.array;
        let pointer = leaf.pointer.join("uniqueItems");
        let domain: Option<Vec<Value>> = match a.items.as_deref() {
            Some(Shape::Leaf(item)) if a.prefix.is_empty() => match &item.values {
                Some(values) => Some(values.clone()),
                None if item.types & !(types::NULL | types::BOOLEAN) == 0 => {
                    let mut values = Vec::new();
                    if item.types & types::NULL != 0 {
                        values.push(Value::Null);
                    }
                    if item.types & types::BOOLEAN != 0 {
                        values.extend([Value::Bool(true), Value::Bool(false)]);
                    }
                    Some(values)
                }
                None => None,
            },
            _ => None,
        };
        let Some(domain) = domain.filter(|d| d.len() <= 10) else {
            self.unsupported(
                &pointer,
                "uniqueItems",
                "uniqueItems over items that are not a small finite set",
            )?;
            let mut relaxed = leaf.clone();
            relaxed.array.unique = false;
            let items = match &relaxed.array.items {
                None => Some(self.primitive("value")),
                Some(shape) => self.lower(&shape.clone(), &self.child(name, "item"))?,
            };
            return self.array_plain(&relaxed, items, name);
        };
        let ws = self.ws();
        let sep = self.sep();
        let mut literals = Vec::new();
        for value in &domain {
            literals.push(self.lower_const(value, 0, &pointer)?);
        }
        let d = domain.len();
        let full = (1usize << d) - 1;
        let mut states: Vec<Option<Expr>> = vec![None; full + 1];
        for mask in (0..=full).rev() {
            let count = mask.count_ones() as u64;
            let mut alternatives = Vec::new();
            if count >= a.min_items {
                alternatives.push(Expr::Empty);
            }
            if a.max_items.map_or(true, |m| count < m) {
                let lead = if mask == 0 { ws.clone() } else { sep.clone() };
                for (j, literal) in literals.iter().enumerate() {
                    if mask & (1 << j) != 0 {
                        continue;
                    }
                    if let Some(rest) = &states[mask | (1 << j)] {
                        alternatives.push(Expr::seq([lead.clone(), literal.clone(), rest.clone()]));
                    }
                }
            }
            states[mask] = match alternatives.len() {
                0 => None,
                1 => alternatives.pop(),
                _ => Some(Expr::rule(
                    &self
                        .builder
                        .add(&format!("{name}-u{mask}"), Expr::alt(alternatives)),
                )),
            };
        }
        Ok(states[0].clone())
    }

    /// `contains` with min/maxContains and min/maxItems: a state machine over (items so
    /// far, matches so far). Exact; unambiguous when the negation of `contains` is
    /// expressible.
    fn array_contains(
        &mut self,
        leaf: &Leaf,
        items: Option<Expr>,
        name: &str,
    ) -> Result<Option<Expr>, Error> {
        let a = &leaf.array;
        let pointer = a.contains[0].pointer.clone();
        let relax = |this: &mut Self, message: &str| -> Result<Option<Expr>, Error> {
            this.unsupported(&pointer, "contains", message)?;
            let mut relaxed = leaf.clone();
            relaxed.array.contains.clear();
            let items = match &relaxed.array.items {
                None => Some(this.primitive("value")),
                Some(shape) => this.lower(&shape.clone(), &this.child(name, "item"))?,
            };
            this.array_plain(&relaxed, items, name)
        };
        if a.contains.len() > 1 || !a.prefix.is_empty() || a.unique {
            return relax(
                self,
                "contains together with prefixItems, uniqueItems or another contains",
            );
        }
        let contains = a.contains[0].clone();
        if contains.min == 0 && contains.max.is_none() {
            let mut relaxed = leaf.clone();
            relaxed.array.contains.clear();
            return self.array_plain(&relaxed, items, name);
        }
        let item_shape = a.items.as_deref().cloned().unwrap_or_else(Shape::any);
        let matching = self.n.conj(&item_shape, &contains.shape, &pointer)?;
        let negated = self.n.negate(&contains.shape)?;
        let other = match &negated {
            Some(neg) => Some(self.n.conj(&item_shape, neg, &pointer)?),
            None => None,
        };
        if other.is_none() && contains.max.is_some() {
            return relax(
                self,
                "maxContains when the negation of `contains` cannot be expressed",
            );
        }
        let matching_expr = self.lower(&matching, &self.child(name, "match"))?;
        let other_expr = match &other {
            Some(shape) => self.lower(shape, &self.child(name, "other"))?,
            // Ambiguous but exact: any item, counted or not.
            None => items.clone(),
        };
        let total_cap = a.max_items.unwrap_or(a.min_items).max(1);
        let match_cap = contains.max.unwrap_or(contains.min).max(1);
        let (total_cap, match_cap) = (total_cap as usize, match_cap as usize);
        if (total_cap + 1).saturating_mul(match_cap + 1) > MAX_STATES {
            return relax(self, "contains with counts this large");
        }
        let ws = self.ws();
        let sep = self.sep();
        let mut rules = vec![vec![None::<RuleName>; match_cap + 1]; total_cap + 1];
        for (t, row) in rules.iter_mut().enumerate() {
            for (c, slot) in row.iter_mut().enumerate() {
                *slot = Some(self.builder.reserve(&format!("{name}-c{t}-{c}")));
            }
        }
        let rule = |t: usize, c: usize| rules[t][c].clone();
        for t in 0..=total_cap {
            for c in 0..=match_cap {
                let Some(this) = rule(t, c) else { continue };
                let mut alternatives = Vec::new();
                let t64 = t as u64;
                let c64 = c as u64;
                let total_ok = t64 >= a.min_items || (a.max_items.is_none() && t == total_cap);
                let match_ok = c64 >= contains.min || (contains.max.is_none() && c == match_cap);
                if total_ok && match_ok {
                    alternatives.push(Expr::Empty);
                }
                let can_add = a.max_items.map_or(true, |m| t64 < m);
                if can_add {
                    let t2 = (t + 1).min(total_cap);
                    let lead = if t == 0 { ws.clone() } else { sep.clone() };
                    if let Some(m) = &matching_expr {
                        if contains.max.map_or(true, |max| c64 < max) {
                            let c2 = (c + 1).min(match_cap);
                            if let Some(next) = rule(t2, c2) {
                                alternatives.push(Expr::seq([
                                    lead.clone(),
                                    m.clone(),
                                    Expr::rule(&next),
                                ]));
                            }
                        }
                    }
                    if let Some(o) = &other_expr {
                        if let Some(next) = rule(t2, c) {
                            alternatives.push(Expr::seq([lead, o.clone(), Expr::rule(&next)]));
                        }
                    }
                }
                self.builder.define(&this, Expr::alt(alternatives));
            }
        }
        Ok(rule(0, 0).map(|r| Expr::rule(&r)))
    }
}

/// Every plain decimal spelling of `number`: JSON Schema compares numbers by value, so
/// `const: 1` also admits `1.0` and `1.00`, and `-0` equals `0`. Exponent spellings are
/// not included (a documented restriction), except the schema's own.
fn number_encodings(number: &serde_json::Number) -> Expr {
    let text = number.to_string();
    let Some((negative, int_part, frac_part)) = plain_decimal(&text) else {
        return Expr::literal(&text);
    };
    let zeros = Expr::star(Expr::literal("0"));
    let sign = if negative {
        Expr::literal("-")
    } else if int_part == "0" && frac_part.is_empty() {
        Expr::optional(Expr::literal("-"))
    } else {
        Expr::Empty
    };
    let fraction = if frac_part.is_empty() {
        Expr::optional(Expr::seq([
            Expr::literal("."),
            Expr::plus(Expr::literal("0")),
        ]))
    } else {
        Expr::seq([Expr::literal(&format!(".{frac_part}")), zeros])
    };
    let plain = Expr::seq([sign, Expr::literal(&int_part), fraction]);
    if text.contains(['e', 'E']) {
        Expr::alt([plain, Expr::literal(&text)])
    } else {
        plain
    }
}

/// A JSON number as sign, integer digits (no leading zeros) and fraction digits (no
/// trailing zeros), when its plain form is short enough to write out.
fn plain_decimal(text: &str) -> Option<(bool, String, String)> {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
        None => (rest, 0),
    };
    if !(-400..=400).contains(&exponent) {
        return None;
    }
    let (int_digits, frac_digits) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: String = format!("{int_digits}{frac_digits}");
    let point = int_digits.len() as i64 + exponent;
    let (int_part, frac_part) = if point <= 0 {
        (
            String::new(),
            format!("{}{digits}", "0".repeat((-point) as usize)),
        )
    } else if point as usize >= digits.len() {
        (
            format!("{digits}{}", "0".repeat(point as usize - digits.len())),
            String::new(),
        )
    } else {
        (
            digits[..point as usize].to_owned(),
            digits[point as usize..].to_owned(),
        )
    };
    let int_part = int_part.trim_start_matches('0');
    let int_part = if int_part.is_empty() { "0" } else { int_part };
    let frac_part = frac_part.trim_end_matches('0');
    let is_zero = int_part == "0" && frac_part.is_empty();
    Some((
        negative && !is_zero,
        int_part.to_owned(),
        frac_part.to_owned(),
    ))
}

fn integer_body() -> Expr {
    Expr::seq([
        Expr::optional(Expr::literal("-")),
        Expr::alt([
            Expr::literal("0"),
            Expr::seq([
                Expr::class(CharClass::new([('1', '9')], false)),
                Expr::star(Expr::class(CharClass::new([('0', '9')], false))),
            ]),
        ]),
    ])
}

fn leaf_without_values(leaf: &Leaf) -> Leaf {
    let mut copy = Leaf::any(leaf.pointer.clone());
    copy.types = leaf.types;
    copy.not_values = leaf.not_values.clone();
    copy.string = leaf.string.clone();
    copy.number = leaf.number.clone();
    copy.object = leaf.object.clone();
    copy.array = leaf.array.clone();
    copy
}

fn leaf_is_unconstrained(leaf: &Leaf) -> bool {
    leaf.string_trivial() && leaf.number_trivial() && leaf.object_trivial() && leaf.array_trivial()
}

/// Whether two shapes state the same constraints (JSON pointers, which only locate
/// messages, aside). Conservative: definitions are compared by identity, and shapes nested
/// deeper than `depth` are taken as different. Every field is named, so that a new field
/// cannot be forgotten here.
fn shapes_equal(a: &Shape, b: &Shape, depth: usize) -> bool {
    if depth == 0 {
        return false;
    }
    match (a, b) {
        (Shape::Never, Shape::Never) => true,
        (Shape::Ref(a), Shape::Ref(b)) => a == b,
        (Shape::Union(a), Shape::Union(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| shapes_equal(a, b, depth - 1))
        }
        (Shape::Leaf(a), Shape::Leaf(b)) => Rc::ptr_eq(a, b) || leaves_equal(a, b, depth - 1),
        _ => false,
    }
}

fn leaves_equal(a: &Leaf, b: &Leaf, depth: usize) -> bool {
    use crate::normalize::{ArrayC, Bound, Contains, NumberC, ObjectC, StringC};
    if depth == 0 {
        return false;
    }
    let shape = |a: &Shape, b: &Shape| shapes_equal(a, b, depth - 1);
    let boxed = |a: &Option<Box<Shape>>, b: &Option<Box<Shape>>| match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => shape(a, b),
        _ => false,
    };
    let texts = |a: &[(String, JsonPointer)], b: &[(String, JsonPointer)]| {
        a.len() == b.len() && a.iter().zip(b).all(|(a, b)| a.0 == b.0)
    };
    let numbers = |a: &[(serde_json::Number, JsonPointer)],
                   b: &[(serde_json::Number, JsonPointer)]| {
        a.len() == b.len() && a.iter().zip(b).all(|(a, b)| a.0 == b.0)
    };
    let bounds = |a: &Option<Bound>, b: &Option<Bound>| match (a, b) {
        (None, None) => true,
        (Some(Bound { value, exclusive }), Some(other)) => {
            *value == other.value && *exclusive == other.exclusive
        }
        _ => false,
    };
    let Leaf {
        pointer: _,
        types,
        values,
        not_values,
        string,
        number,
        object,
        array,
    } = a;
    let StringC {
        min_length,
        max_length,
        patterns,
        formats,
        not_patterns,
        not_formats,
    } = string;
    let NumberC {
        minimum,
        maximum,
        multiple_of,
        not_multiple_of,
    } = number;
    let ObjectC {
        properties,
        required,
        pattern_properties,
        additional,
        property_names,
        min_properties,
        max_properties,
        silent,
    } = object;
    let ArrayC {
        prefix,
        items,
        min_items,
        max_items,
        contains,
        unique,
    } = array;
    *types == b.types
        && *values == b.values
        && *not_values == b.not_values
        && *min_length == b.string.min_length
        && *max_length == b.string.max_length
        && texts(patterns, &b.string.patterns)
        && texts(formats, &b.string.formats)
        && texts(not_patterns, &b.string.not_patterns)
        && texts(not_formats, &b.string.not_formats)
        && bounds(minimum, &b.number.minimum)
        && bounds(maximum, &b.number.maximum)
        && numbers(multiple_of, &b.number.multiple_of)
        && numbers(not_multiple_of, &b.number.not_multiple_of)
        && *required == b.object.required
        && *min_properties == b.object.min_properties
        && *max_properties == b.object.max_properties
        && *silent == b.object.silent
        && properties.len() == b.object.properties.len()
        && (properties.iter().zip(&b.object.properties))
            .all(|((ka, va), (kb, vb))| ka == kb && shape(va, vb))
        && pattern_properties.len() == b.object.pattern_properties.len()
        && (pattern_properties.iter().zip(&b.object.pattern_properties))
            .all(|((pa, sa), (pb, sb))| pa == pb && shape(sa, sb))
        && boxed(additional, &b.object.additional)
        && boxed(property_names, &b.object.property_names)
        && *min_items == b.array.min_items
        && *max_items == b.array.max_items
        && *unique == b.array.unique
        && prefix.len() == b.array.prefix.len()
        && prefix.iter().zip(&b.array.prefix).all(|(a, b)| shape(a, b))
        && boxed(items, &b.array.items)
        && contains.len() == b.array.contains.len()
        && contains.iter().zip(&b.array.contains).all(|(a, b)| {
            let Contains {
                shape: a_shape,
                min,
                max,
                pointer: _,
                silent,
            } = a;
            shape(a_shape, &b.shape) && *min == b.min && *max == b.max && *silent == b.silent
        })
}

/// The trie of the names [`Lowerer::string_not_in`] excludes. Nodes are in creation order,
/// so a child always comes after its parent.
struct Trie {
    nodes: Vec<TrieNode>,
    /// The parent of each node ([`NO_NODE`] for the root).
    parent: Vec<usize>,
}

/// A node of a [`Trie`]; its children are a list sorted by character.
struct TrieNode {
    ch: char,
    first_child: usize,
    next_sibling: usize,
    /// Whether a name ends here.
    terminal: bool,
    depth: usize,
}

/// No node: the end of a list of children, the root's parent.
const NO_NODE: usize = usize::MAX;

impl Trie {
    fn new(names: &[String]) -> Trie {
        let capacity = 1 + names.iter().map(|text| text.len()).sum::<usize>();
        let mut nodes: Vec<TrieNode> = Vec::with_capacity(capacity);
        let mut parent: Vec<usize> = Vec::with_capacity(capacity);
        nodes.push(TrieNode {
            ch: '\0',
            first_child: NO_NODE,
            next_sibling: NO_NODE,
            terminal: false,
            depth: 0,
        });
        parent.push(NO_NODE);
        for text in names {
            let mut node = 0;
            for ch in text.chars() {
                // Find the child for `ch`, or where to link a new one.
                let mut before = NO_NODE;
                let mut at = nodes[node].first_child;
                while at != NO_NODE && nodes[at].ch < ch {
                    before = at;
                    at = nodes[at].next_sibling;
                }
                if at != NO_NODE && nodes[at].ch == ch {
                    node = at;
                    continue;
                }
                let next = nodes.len();
                let depth = nodes[node].depth + 1;
                nodes.push(TrieNode {
                    ch,
                    first_child: NO_NODE,
                    next_sibling: at,
                    terminal: false,
                    depth,
                });
                parent.push(node);
                if before == NO_NODE {
                    nodes[node].first_child = next;
                } else {
                    nodes[before].next_sibling = next;
                }
                node = next;
            }
            nodes[node].terminal = true;
        }
        Trie { nodes, parent }
    }

    /// The children of node `i`, in character order.
    fn children(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        let first = self.nodes[i].first_child;
        std::iter::successors((first != NO_NODE).then_some(first), |&at| {
            let next = self.nodes[at].next_sibling;
            (next != NO_NODE).then_some(next)
        })
    }
}

/// `Expr::seq(items)`, with the flattened list allocated once at its final size (the
/// members of big objects make many of these).
fn seq_exact<const N: usize>(items: [Expr; N]) -> Expr {
    let len = items
        .iter()
        .map(|item| match item {
            Expr::Empty => 0,
            Expr::Seq(inner) => inner.len(),
            _ => 1,
        })
        .sum();
    let mut out = Vec::with_capacity(len);
    for item in items {
        push_flat(&mut out, item);
    }
    match out.len() {
        0 => Expr::Empty,
        1 => out.pop().unwrap_or(Expr::Empty),
        _ => Expr::Seq(out),
    }
}

/// Appends `item` to a sequence's list as [`Expr::seq`] would: the items of a sequence one by
/// one, nothing for `Empty`.
fn push_flat(items: &mut Vec<Expr>, item: Expr) {
    match item {
        Expr::Empty => {}
        Expr::Seq(inner) => items.extend(inner),
        other => items.push(other),
    }
}

/// A character of a trie of names, then the node it leads to (`child`, the choice
/// [`trie_choice`] made, or a rule): `Expr::seq` without its flattening, which has nothing to
/// do here.
fn trie_step(ch: char, child: Expr) -> Expr {
    debug_assert!(!matches!(child, Expr::Seq(_) | Expr::Empty));
    Expr::Seq(vec![Expr::Literal(json_escape_char(ch)), child])
}

/// The alternatives at a trie node (the closing quote, [`trie_step`]s and an exit rule, none
/// of them an alternation): `Expr::alt` without its flattening.
fn trie_choice(mut alternatives: Vec<Expr>) -> Expr {
    debug_assert!(!alternatives.iter().any(|a| matches!(a, Expr::Alt(_))));
    if alternatives.len() == 1 {
        alternatives.pop().unwrap_or(Expr::Empty)
    } else {
        Expr::Alt(alternatives)
    }
}

/// `lead item (sep item)*` with `lo..=hi` items in all (`hi` at least 1), optional when `lo`
/// is 0: the members of an object or the items of an array once counting is done.
fn item_run(lead: &Expr, sep: &Expr, item: &Expr, lo: u32, hi: Option<u32>) -> Expr {
    let run = Expr::seq([
        lead.clone(),
        item.clone(),
        Expr::repeat(
            Expr::seq([sep.clone(), item.clone()]),
            lo.saturating_sub(1),
            hi.map(|h| h - 1),
        ),
    ]);
    if lo == 0 {
        Expr::optional(run)
    } else {
        run
    }
}

/// Bounds past `u32` are treated as no bound: no JSON text a model writes gets that long.
fn clamp_u32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// `{name}-{suffix}`, put together without the formatting machinery: rule names are made by
/// the thousand.
pub(crate) fn dashed(name: &str, suffix: &str) -> String {
    let mut out = String::with_capacity(name.len() + 1 + suffix.len());
    out.push_str(name);
    out.push('-');
    out.push_str(suffix);
    out
}

/// `{name}{tag}{n}` (a tag such as `-s`), as [`dashed`].
fn tagged_number(name: &str, tag: &str, n: usize) -> String {
    let mut out = String::with_capacity(name.len() + tag.len() + 4);
    out.push_str(name);
    out.push_str(tag);
    gbnf::push_decimal(&mut out, n as u64);
    out
}

/// `{name}-{n}`, as [`dashed`].
pub(crate) fn dashed_number(name: &str, n: usize) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    out.push_str(name);
    out.push('-');
    gbnf::push_decimal(&mut out, n as u64);
    out
}

/// The tail of [`Lowerer::string_not_in`] at a trie node whose children are `children`:
/// a character that leaves the trie, then any characters and the closing quote.
fn not_in_tail(children: &[char], char_rule: &Expr, key_escape: &Expr) -> Expr {
    if children.is_empty() {
        return Expr::seq([Expr::plus(char_rule.clone()), Expr::literal("\"")]);
    }
    Expr::seq([
        not_in_leave(children, char_rule, key_escape),
        Expr::star(char_rule.clone()),
        Expr::literal("\""),
    ])
}

/// The first character of a key leaving the trie at a node whose children are `children`
/// (see [`not_in_tail`]): a character that is none of them, written plainly or as an escape;
/// with no children, any character (`char_rule`).
///
/// An escape that decodes to a child (`\u0069` for `i`, `\/` for `/`) must not leave: that
/// key is the name it spells, and its value must meet that property's schema. The trie takes
/// only the plain spelling of names, so such a key is refused; so is, for a shorter grammar,
/// any ASCII character written as a `\u` escape at a node with children (`key_escape`, one
/// rule for all the nodes whose children are plain ASCII, is every other escape). A `\u`
/// escape is of a character, as in `char`: a surrogate only as the high half of a pair, whose
/// low half follows; at a node with a child outside the BMP, whose escaped spelling is such a
/// pair, no pair leaves.
fn not_in_leave(children: &[char], char_rule: &Expr, key_escape: &Expr) -> Expr {
    if children.is_empty() {
        return char_rule.clone();
    }
    let mut ranges: Vec<(char, char)> = vec![('"', '"'), ('\\', '\\'), ('\0', '\u{1f}')];
    ranges.extend(children.iter().map(|&ch| (ch, ch)));
    let other_raw = Expr::class(CharClass::new(ranges, true));
    let short: Vec<char> = SHORT_ESCAPES
        .iter()
        .filter(|(_, decoded)| !children.contains(decoded))
        .map(|&(letter, _)| letter)
        .collect();
    if short.len() == SHORT_ESCAPES.len() && children.iter().all(char::is_ascii) {
        return Expr::alt([other_raw, key_escape.clone()]);
    }
    let mut excluded: Vec<[u8; 4]> = (0..0x80u16)
        .chain(0xD800..=0xDFFF)
        .chain(
            children
                .iter()
                .filter_map(|&ch| u16::try_from(u32::from(ch)).ok()),
        )
        .map(hex_units)
        .collect();
    // `hex_except` reads runs of a sorted list (a child may be below 0x80 as well).
    excluded.sort_unstable();
    let mut escapes = Vec::with_capacity(3);
    if !short.is_empty() {
        escapes.push(Expr::class(CharClass::of_chars(short, false)));
    }
    if let Some(hex) = hex_except(&excluded, 0) {
        escapes.push(Expr::seq([Expr::literal("u"), hex]));
    }
    if children.iter().all(|&ch| u32::from(ch) <= 0xFFFF) {
        escapes.push(surrogate_pair_escape());
    }
    if escapes.is_empty() {
        return other_raw;
    }
    Expr::alt([
        other_raw,
        Expr::seq([Expr::literal("\\"), Expr::alt(escapes)]),
    ])
}

/// The four hex digit values of a UTF-16 code unit.
fn hex_units(unit: u16) -> [u8; 4] {
    [12, 8, 4, 0].map(|shift| ((unit >> shift) & 0xf) as u8)
}

/// After a backslash: `u`, a high surrogate, `\u` and a low surrogate (a character outside
/// the BMP, escaped as `char` writes it).
fn surrogate_pair_escape() -> Expr {
    Expr::seq([
        Expr::literal("u"),
        hex_digits([0xd]),
        hex_digits(8..12),
        Expr::repeat(hex_digits(0..16), 2, Some(2)),
        Expr::literal("\\u"),
        hex_digits([0xd]),
        hex_digits(12..16),
        Expr::repeat(hex_digits(0..16), 2, Some(2)),
    ])
}

/// The short escapes of JSON strings and the characters they stand for.
const SHORT_ESCAPES: [(char, char); 8] = [
    ('"', '"'),
    ('\\', '\\'),
    ('/', '/'),
    ('b', '\u{8}'),
    ('f', '\u{c}'),
    ('n', '\n'),
    ('r', '\r'),
    ('t', '\t'),
];

/// The body of the `key-escape` rule: any escape of a character but a `\u` escape of an
/// ASCII character (surrogates only as pairs, as in `char`).
fn key_escape() -> Expr {
    // In increasing order, as `hex_except` needs.
    let excluded: Vec<[u8; 4]> = (0..0x80u16).chain(0xD800..=0xDFFF).map(hex_units).collect();
    let mut escapes = vec![Expr::class(CharClass::of_chars(
        SHORT_ESCAPES.map(|(letter, _)| letter),
        false,
    ))];
    escapes.extend(hex_except(&excluded, 0).map(|hex| Expr::seq([Expr::literal("u"), hex])));
    escapes.push(surrogate_pair_escape());
    Expr::seq([Expr::literal("\\"), Expr::alt(escapes)])
}

/// The hex digits `level..4` of a `\uXXXX` escape (either case) whose code unit is none of
/// `excluded` (each given by its four digit values; all share the digits before `level`);
/// `None` when every code unit is excluded.
///
/// `excluded` is sorted, so the code units sharing a digit at `level` are one run of it: each
/// level splits its slice into runs instead of filtering a copy per digit (`key-escape`
/// excludes over two thousand code units).
fn hex_except(excluded: &[[u8; 4]], level: usize) -> Option<Expr> {
    debug_assert!(excluded.windows(2).all(|pair| pair[0] <= pair[1]));
    let rest = 3 - level as u32;
    let any_rest =
        |first: Expr| Expr::seq([first, Expr::repeat(hex_digits(0..16), rest, Some(rest))]);
    if excluded.is_empty() {
        return Some(any_rest(hex_digits(0..16)));
    }
    let runs: Vec<&[[u8; 4]]> = excluded.chunk_by(|a, b| a[level] == b[level]).collect();
    let present: Vec<u8> = runs.iter().map(|run| run[0][level]).collect();
    let mut alternatives = Vec::with_capacity(present.len() + 1);
    let others: Vec<u8> = (0..16).filter(|d| !present.contains(d)).collect();
    if !others.is_empty() {
        alternatives.push(any_rest(hex_digits(others)));
    }
    if rest > 0 {
        for (run, digit) in runs.into_iter().zip(present) {
            if let Some(next) = hex_except(run, level + 1) {
                alternatives.push(Expr::seq([hex_digits([digit]), next]));
            }
        }
    }
    (!alternatives.is_empty()).then(|| Expr::alt(alternatives))
}

/// The hex digits of the given values, in both cases.
fn hex_digits(values: impl IntoIterator<Item = u8>) -> Expr {
    let values: Vec<u8> = values.into_iter().collect();
    if let [digit @ 0..=9] = values[..] {
        return Expr::literal(&char::from(b'0' + digit).to_string());
    }
    let mut chars = Vec::new();
    for value in values {
        if value < 10 {
            chars.push(char::from(b'0' + value));
        } else {
            chars.push(char::from(b'a' + value - 10));
            chars.push(char::from(b'A' + value - 10));
        }
    }
    Expr::class(CharClass::of_chars(chars, false))
}

/// The canonical JSON text of the string `text`, quotes included, as a literal.
fn json_string_literal(text: &str) -> Expr {
    // A short plain name is quoted on the stack: the literal keeps it inline, so nothing is
    // allocated (most property names are short).
    let plain = |byte: &u8| *byte >= b' ' && *byte != b'"' && *byte != b'\\';
    if text.len() + 2 <= Text::INLINE && text.as_bytes().iter().all(plain) {
        let mut quoted = [b'"'; Text::INLINE];
        quoted[1..=text.len()].copy_from_slice(text.as_bytes());
        if let Ok(json) = std::str::from_utf8(&quoted[..text.len() + 2]) {
            return Expr::Literal(Text::from(json));
        }
    }
    Expr::Literal(Text::from(json_string_text(text)))
}

/// The canonical JSON text of the string `text`, quotes included.
fn json_string_text(text: &str) -> String {
    // Most names and enum strings need no escape: then the text is the string in quotes,
    // written directly rather than through serde_json's writer (which allocates a 128-byte
    // buffer and validates the UTF-8 it wrote).
    let plain = |byte: &u8| *byte >= b' ' && *byte != b'"' && *byte != b'\\';
    if text.as_bytes().iter().all(plain) {
        let mut json = String::with_capacity(text.len() + 2);
        json.push('"');
        json.push_str(text);
        json.push('"');
        return json;
    }
    // Writing a string cannot fail.
    serde_json::to_string(text).unwrap_or_default()
}

/// How a character is written in a canonical JSON string.
fn json_escape_char(ch: char) -> Text {
    if ch >= ' ' && ch != '"' && ch != '\\' {
        return Text::from(&*ch.encode_utf8(&mut [0; 4]));
    }
    let mut text = serde_json::to_string(&ch.to_string()).unwrap_or_default();
    text.pop();
    text.remove(0);
    Text::from(text)
}

/// Errors for reference cycles that never reach structure: a definition whose schema is,
/// through references and unions only, itself.
fn check_ref_cycles(normalizer: &Normalizer) -> Result<(), Error> {
    let heads = |shape: &Shape| -> Vec<DefId> {
        let mut out = Vec::new();
        let mut stack = vec![shape];
        while let Some(shape) = stack.pop() {
            match shape {
                Shape::Ref(id) => out.push(*id),
                Shape::Union(items) => stack.extend(items.iter()),
                _ => {}
            }
        }
        out
    };
    let graph: Vec<Vec<DefId>> = normalizer
        .defs
        .iter()
        .map(|d| d.shape.as_ref().map(heads).unwrap_or_default())
        .collect();
    // Iterative three-colour DFS.
    let mut colour = vec![0u8; graph.len()];
    for start in 0..graph.len() {
        if colour[start] != 0 {
            continue;
        }
        let mut stack: Vec<(DefId, usize)> = vec![(start, 0)];
        colour[start] = 1;
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            if *next < graph[node].len() {
                let child = graph[node][*next];
                *next += 1;
                match colour[child] {
                    0 => {
                        colour[child] = 1;
                        stack.push((child, 0));
                    }
                    1 => {
                        let def = &normalizer.defs[child];
                        return Err(Error::new(
                            ErrorKind::CyclicRef {
                                reference: format!("#{}", def.pointer),
                            },
                            def.pointer.clone(),
                        ));
                    }
                    _ => {}
                }
            } else {
                colour[node] = 2;
                stack.pop();
            }
        }
    }
    Ok(())
}

/// Removes what matches nothing (rules with no finite derivation, and the alternatives
/// that use them) and what is unreachable from `root`. An unproductive root is an error.
///
/// Rules are handled by their index in the grammar: each body's references are resolved to
/// indices once, and only bodies that refer to something unproductive are rebuilt.
///
/// `refs` are the rule references of every body, in walk order, as indices (`UNDEFINED` if
/// none), as [`References::of`] finds them.
fn prune(grammar: &mut Grammar, root: &RuleName, mut refs: References) -> Result<(), Error> {
    let n = grammar.rules.len();
    let root_index = grammar
        .rules
        .get_index_of(root.as_str())
        .unwrap_or(UNDEFINED);
    let rules = &grammar.rules;
    // The least fixpoint. A few sweeps in rule order settle most grammars (rules are mostly
    // defined after what they use); if they do not, a worklist finishes: a rule is checked
    // again only when a rule it refers to has become productive (first in, first out, so
    // that a rule waits for several of its references rather than being re-walked for
    // each). Either way the result is the same least fixpoint, in linear time.
    let mut productive = vec![false; n];
    // Whether each productive rule was found so because every one of its references was
    // (and it has no empty alternation): such a body has nothing to prune, since a rule
    // never stops being productive, and need not be looked at again below.
    let mut whole = vec![false; n];
    // Whether rule `i` is productive, and whether it is so as a whole.
    let check = |i: usize, productive: &[bool]| {
        // Enough, and quick: no empty alternation and every reference productive.
        let surely = !refs.empty_alt[i]
            && (refs.of_rule(i).iter()).all(|&r| r != UNDEFINED && productive[r]);
        let found = surely || is_productive(&rules[i], refs.of_rule(i), &mut 0, productive);
        (found, surely)
    };
    let mut settled = false;
    for _ in 0..PRUNE_SWEEPS {
        let mut changed = false;
        for i in 0..n {
            if productive[i] {
                continue;
            }
            let (found, surely) = check(i, &productive);
            if found {
                productive[i] = true;
                whole[i] = surely;
                changed = true;
            }
        }
        if !changed {
            settled = true;
            break;
        }
    }
    if !settled {
        let referrers = refs.referrers(n);
        let mut queued: Vec<bool> = productive.iter().map(|&p| !p).collect();
        let mut queue: std::collections::VecDeque<usize> = (0..n).filter(|&i| queued[i]).collect();
        while let Some(i) = queue.pop_front() {
            queued[i] = false;
            if productive[i] {
                continue;
            }
            let (found, surely) = check(i, &productive);
            if !found {
                continue;
            }
            productive[i] = true;
            whole[i] = surely;
            for &j in referrers.of_rule(i) {
                if !productive[j] && !queued[j] {
                    queued[j] = true;
                    queue.push_back(j);
                }
            }
        }
    }
    if root_index == UNDEFINED || !productive[root_index] {
        return Err(Error::new(ErrorKind::Unsatisfiable, JsonPointer::root()));
    }
    // Bodies that use something unproductive lose those parts.
    let to_prune: Vec<usize> = (0..n)
        .filter(|&i| {
            productive[i]
                && !whole[i]
                && (refs
                    .of_rule(i)
                    .iter()
                    .any(|&r| r == UNDEFINED || !productive[r])
                    || refs.empty_alt[i])
        })
        .collect();
    let productive_names: HashSet<RuleName, FastHash> = if to_prune.is_empty() {
        HashSet::default()
    } else {
        (grammar.rules.keys().enumerate())
            .filter(|&(j, _)| productive[j])
            .map(|(_, name)| name.clone())
            .collect()
    };
    if !to_prune.is_empty() {
        let mut changed = vec![false; n];
        for i in to_prune {
            let body = std::mem::replace(&mut grammar.rules[i], Expr::Empty);
            grammar.rules[i] = prune_expr(body, &productive_names).unwrap_or(Expr::Empty);
            changed[i] = true;
        }
        refs = refs.rewalk(&grammar.rules, &changed);
    }
    // Keep only what the root reaches, in the original order.
    let mut keep = vec![false; n];
    let mut stack = vec![root_index];
    while let Some(i) = stack.pop() {
        if i == UNDEFINED || keep[i] || !productive[i] {
            continue;
        }
        keep[i] = true;
        stack.extend(refs.of_rule(i).iter().copied());
    }
    // A rule that only aliases another rule used nowhere else takes over its body
    // (`root ::= root-2` becomes `root ::= <body of root-2>`).
    let mut uses = vec![0usize; n];
    for i in (0..n).filter(|&i| keep[i]) {
        for &r in refs.of_rule(i) {
            if r != UNDEFINED {
                uses[r] += 1;
            }
        }
    }
    let aliases: Vec<(RuleName, RuleName)> = (0..n)
        .filter(|&i| keep[i])
        .filter_map(|i| {
            let (rule, Expr::Rule(target)) = grammar.rules.get_index(i)? else {
                return None;
            };
            let t = grammar.rules.get_index_of(target.as_str())?;
            (t != i && t != root_index && uses[t] == 1).then(|| (rule.clone(), target.clone()))
        })
        .collect();
    let mut position = 0;
    grammar.rules.retain(|_, _| {
        position += 1;
        keep[position - 1]
    });
    let pruned = &mut grammar.rules;
    // A chain `a ::= b`, `b ::= c` collapses into `a`: `consumed` says where a removed
    // alias's body went.
    // Removed rules are only marked, and dropped in one pass at the end (removing them one
    // by one would shift the rest of the map each time).
    let mut consumed: HashMap<RuleName, RuleName, FastHash> = HashMap::default();
    let mut removed: Vec<bool> = Vec::new();
    let mut any_removed = false;
    for (rule, target) in aliases {
        let mut holder = rule;
        while let Some(next) = consumed.get(&holder) {
            holder = next.clone();
        }
        if holder == target || pruned.get(&holder) != Some(&Expr::Rule(target.clone())) {
            continue;
        }
        let Some(t) = pruned.get_index_of(target.as_str()) else {
            continue;
        };
        if removed.is_empty() {
            removed = vec![false; pruned.len()];
        }
        if removed[t] {
            continue;
        }
        removed[t] = true;
        any_removed = true;
        let body = std::mem::replace(&mut pruned[t], Expr::Empty);
        pruned.insert(holder.clone(), body);
        consumed.insert(target, holder);
    }
    if any_removed {
        let mut position = 0;
        pruned.retain(|_, _| {
            position += 1;
            !removed[position - 1]
        });
    }
    Ok(())
}

/// The rule references of every body of a grammar, as rule indices in walk order, in one
/// list.
struct References {
    all: Vec<usize>,
    /// Where each rule's references start in `all` (one more entry than rules).
    starts: Vec<usize>,
    /// Whether each rule's body contains an empty alternation.
    empty_alt: Vec<bool>,
}

impl References {
    #[cfg(debug_assertions)]
    fn of(rules: &gbnf::Rules) -> References {
        let mut index: HashMap<&str, usize, FastHash> =
            HashMap::with_capacity_and_hasher(rules.len(), FastHash::default());
        for (i, name) in rules.keys().enumerate() {
            index.insert(name.as_str(), i);
        }
        let mut all = Vec::with_capacity(rules.len() * 4);
        let mut starts = Vec::with_capacity(rules.len() + 1);
        let mut empty_alt = Vec::with_capacity(rules.len());
        for body in rules.values() {
            starts.push(all.len());
            let has_empty_alt = walk_rules(body, &mut |name| {
                all.push(index.get(name.as_str()).copied().unwrap_or(UNDEFINED))
            });
            empty_alt.push(has_empty_alt);
        }
        starts.push(all.len());
        References {
            all,
            starts,
            empty_alt,
        }
    }

    /// The references the grammar builder recorded as it stored the bodies (the same as
    /// [`References::of`] finds, without walking the grammar again).
    fn recorded<'a>(
        n: usize,
        of_rule: impl Fn(usize) -> &'a [usize],
        empty_alt: impl Fn(usize) -> bool,
    ) -> References {
        // Sized first: a big grammar has tens of thousands of references, and
        // growing the list as it fills copied it over and over.
        let mut all = Vec::with_capacity((0..n).map(|i| of_rule(i).len()).sum());
        let mut starts = Vec::with_capacity(n + 1);
        for i in 0..n {
            starts.push(all.len());
            // The builder's undefined index is `UNDEFINED` too (`usize::MAX`).
            all.extend_from_slice(of_rule(i));
        }
        starts.push(all.len());
        References {
            all,
            starts,
            empty_alt: (0..n).map(empty_alt).collect(),
        }
    }

    #[cfg(debug_assertions)]
    fn same_as(&self, other: &References) -> bool {
        self.all == other.all && self.starts == other.starts && self.empty_alt == other.empty_alt
    }

    fn of_rule(&self, i: usize) -> &[usize] {
        &self.all[self.starts[i]..self.starts[i + 1]]
    }

    /// The references of `rules` after the bodies marked in `changed` were rewritten (and
    /// only those: the others keep theirs), walking only the changed bodies.
    fn rewalk(&self, rules: &gbnf::Rules, changed: &[bool]) -> References {
        let mut all = Vec::with_capacity(self.all.len());
        let mut starts = Vec::with_capacity(rules.len() + 1);
        let mut empty_alt = Vec::with_capacity(rules.len());
        for (i, body) in rules.values().enumerate() {
            starts.push(all.len());
            if changed[i] {
                let has_empty_alt = walk_rules(body, &mut |name| {
                    all.push(rules.get_index_of(name.as_str()).unwrap_or(UNDEFINED))
                });
                empty_alt.push(has_empty_alt);
            } else {
                all.extend_from_slice(self.of_rule(i));
                empty_alt.push(self.empty_alt[i]);
            }
        }
        starts.push(all.len());
        References {
            all,
            starts,
            empty_alt,
        }
    }

    /// The other way round: for each of the `n` rules, the rules whose bodies refer to it
    /// (each once), in the same layout (`empty_alt` is left empty).
    fn referrers(&self, n: usize) -> References {
        let mut starts = vec![0usize; n + 1];
        let mut last = vec![UNDEFINED; n];
        for i in 0..n {
            for &r in self.of_rule(i) {
                if r != UNDEFINED && last[r] != i {
                    last[r] = i;
                    starts[r + 1] += 1;
                }
            }
        }
        for r in 0..n {
            starts[r + 1] += starts[r];
        }
        let mut fill = starts.clone();
        let mut all = vec![0usize; starts[n]];
        last.iter_mut().for_each(|l| *l = UNDEFINED);
        for i in 0..n {
            for &r in self.of_rule(i) {
                if r != UNDEFINED && last[r] != i {
                    last[r] = i;
                    all[fill[r]] = i;
                    fill[r] += 1;
                }
            }
        }
        References {
            all,
            starts,
            empty_alt: Vec::new(),
        }
    }
}

/// The index [`prune`] gives a reference to a rule the grammar does not define.
const UNDEFINED: usize = usize::MAX;

/// How many sweeps over all rules [`prune`] makes before it switches to a worklist.
const PRUNE_SWEEPS: usize = 4;

/// Whether `expr` has a finite derivation, given which rules do; `refs` are the indices of
/// the rules `expr` references in walk order, from `*cursor` on. Every child is visited
/// (no short cut), so that the cursor stays in step with the walk.
fn is_productive(expr: &Expr, refs: &[usize], cursor: &mut usize, productive: &[bool]) -> bool {
    // Leaves are answered in the loops rather than by a call each: they are most nodes.
    let item_productive = |item: &Expr, cursor: &mut usize| match item {
        Expr::Seq(_) | Expr::Alt(_) | Expr::Repeat { .. } => {
            is_productive(item, refs, cursor, productive)
        }
        Expr::Rule(_) => {
            let r = refs.get(*cursor).copied().unwrap_or(UNDEFINED);
            *cursor += 1;
            r != UNDEFINED && productive[r]
        }
        _ => true,
    };
    match expr {
        Expr::Seq(items) => {
            let mut all = true;
            for item in items {
                all &= item_productive(item, cursor);
            }
            all
        }
        Expr::Alt(items) => {
            let mut any = false;
            for item in items {
                any |= item_productive(item, cursor);
            }
            any
        }
        Expr::Repeat { expr, min, .. } => {
            let inner = item_productive(expr, cursor);
            *min == 0 || inner
        }
        leaf => item_productive(leaf, cursor),
    }
}

/// An ECMA-262 pattern matching exactly `text`.
fn literal_pattern(text: &str) -> String {
    let mut pattern = String::from("^");
    for ch in text.chars() {
        if "^$\\.*+?()[]{}|/".contains(ch) {
            pattern.push('\\');
        }
        pattern.push(ch);
    }
    pattern.push('$');
    pattern
}

/// Calls `f` on every rule reference in `expr`, in walk order, and says whether `expr`
/// contains an empty alternation (which matches nothing).
fn walk_rules<'e>(expr: &'e Expr, f: &mut impl FnMut(&'e RuleName)) -> bool {
    match expr {
        Expr::Rule(name) => {
            f(name);
            false
        }
        Expr::Seq(items) | Expr::Alt(items) => {
            let mut empty = matches!(expr, Expr::Alt(_)) && items.is_empty();
            for item in items {
                empty |= walk_rules(item, f);
            }
            empty
        }
        Expr::Repeat { expr, .. } => walk_rules(expr, f),
        _ => false,
    }
}

fn prune_expr(expr: Expr, productive: &HashSet<RuleName, FastHash>) -> Option<Expr> {
    match expr {
        Expr::Rule(name) => productive.contains(&name).then_some(Expr::Rule(name)),
        Expr::Seq(items) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                out.push(prune_expr(item, productive)?);
            }
            Some(Expr::seq(out))
        }
        Expr::Alt(items) => {
            let out: Vec<Expr> = items
                .into_iter()
                .filter_map(|i| prune_expr(i, productive))
                .collect();
            if out.is_empty() {
                None
            } else {
                Some(Expr::alt(out))
            }
        }
        Expr::Repeat {
            expr: inner,
            min,
            max,
        } => match prune_expr(*inner, productive) {
            Some(inner) => Some(Expr::repeat(inner, min, max)),
            None if min == 0 => Some(Expr::Empty),
            None => None,
        },
        other => Some(other),
    }
}

#[cfg(test)]
mod big_key_set_tests {
    use gbnf::{Matcher, Verdict};
    use serde_json::{json, Map, Value};

    use crate::{compile, Options, Whitespace};

    /// More than [`super::BIG_KEY_SET`] names sharing prefixes and endings, names that are
    /// prefixes of others, the empty name, escapes and characters beyond ASCII.
    fn names() -> Vec<String> {
        let stems = [
            "keyword",
            "key",
            "space",
            "comma",
            "arrow",
            "block",
            "brace",
            "semi",
            "object-curly",
            "array-bracket",
        ];
        let mut names = Vec::new();
        for stem in stems {
            for ending in ["-spacing", "-style", "-newline", ""] {
                names.push(format!("{stem}{ending}"));
            }
        }
        for plugin in ["@typescript-eslint/", "vue/"] {
            for stem in stems {
                names.push(format!("{plugin}{stem}-spacing"));
            }
        }
        for odd in [
            "",
            "a\"b",
            "tab\there",
            "back\\slash",
            "é",
            "日本",
            "x\u{1F600}",
            "c\u{1}",
        ] {
            names.push(odd.to_owned());
        }
        assert!(names.len() >= super::BIG_KEY_SET);
        names
    }

    #[test]
    fn big_key_sets_exclude_exactly_the_declared_names() {
        let names = names();
        let mut properties = Map::new();
        for name in &names {
            properties.insert(name.clone(), json!({"type": "string"}));
        }
        let schema = json!({
            "type": "object",
            "properties": properties,
            "additionalProperties": {"type": "integer"},
        });
        let options = Options {
            whitespace: Whitespace::Compact,
            ..Options::default()
        };
        let compiled = compile(&schema, &options).expect("compiles");
        let matcher = Matcher::new(&compiled.grammar, "root").expect("a valid grammar");
        // Probes: every name, its prefixes, and it with a character added or changed.
        let mut probes: Vec<String> = Vec::new();
        for name in &names {
            let chars: Vec<char> = name.chars().collect();
            for end in 0..=chars.len() {
                probes.push(chars[..end].iter().collect());
            }
            for extra in ['x', '-', 's', 'é'] {
                probes.push(format!("{name}{extra}"));
                if let Some((at, _)) = name.char_indices().last() {
                    probes.push(format!("{}{extra}", &name[..at]));
                }
            }
        }
        for key in probes {
            let declared = names.contains(&key);
            let key_json = Value::String(key.clone()).to_string();
            let as_string = format!("{{{key_json}:\"v\"}}");
            let as_integer = format!("{{{key_json}:1}}");
            let accepts = |text: &str| matcher.verdict(text) == Verdict::Accept;
            assert_eq!(accepts(&as_string), declared, "{as_string}");
            assert_eq!(accepts(&as_integer), !declared, "{as_integer}");
        }
        // The automaton shares endings: far fewer rules than the trie has nodes.
        let text = gbnf::print(&compiled.grammar);
        assert!(text.contains("key-suffix"), "{text}");
    }

    /// An object with many properties written inline and also reached through a `$ref` to
    /// it is lowered once; both places accept the same values.
    #[test]
    fn a_big_object_reached_twice_is_lowered_once() {
        let mut properties = Map::new();
        for i in 0..super::SHARED_OBJECT_PROPERTIES {
            // The last one's rules (a counter for `contains`) are never shared between two
            // lowerings: lowering the object twice would write all of it twice.
            let value = if i + 1 == super::SHARED_OBJECT_PROPERTIES {
                json!({"type": "array", "contains": {"const": 63}})
            } else if i % 2 == 0 {
                json!({"type": "integer"})
            } else {
                json!({"type": "array", "items": {"enum": ["x", i]}})
            };
            properties.insert(format!("p{i}"), value);
        }
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "object", "properties": properties, "additionalProperties": false},
                "b": {"$ref": "#/properties/a"},
            },
            "required": ["a", "b"],
            "additionalProperties": false,
        });
        let options = Options {
            whitespace: Whitespace::Compact,
            ..Options::default()
        };
        let compiled = compile(&schema, &options).expect("compiles");
        let text = gbnf::print(&compiled.grammar);
        assert_eq!(text.matches("\\\"p63\\\"").count(), 2, "{text}");
        let matcher = Matcher::new(&compiled.grammar, "root").expect("a valid grammar");
        let cases = [
            (r#"{"a":{"p0":1},"b":{"p1":["x",1]}}"#, true),
            (r#"{"a":{},"b":{"p62":3,"p63":[63]}}"#, true),
            (r#"{"a":{"p1":[2]},"b":{}}"#, false),
            (r#"{"a":{},"b":{"p0":"x"}}"#, false),
            (r#"{"a":{},"b":{"q":1}}"#, false),
        ];
        for (text, valid) in cases {
            assert_eq!(matcher.verdict(text) == Verdict::Accept, valid, "{text}");
        }
    }
}
