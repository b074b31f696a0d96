//! Stage one: a JSON Schema becomes a normalised [`Shape`]. References become [`Shape::Ref`]
//! to a definition table, `allOf` is merged into one [`Leaf`] per alternative, `anyOf`,
//! `oneOf` (when provably disjoint), `if`/`then`/`else` and dependencies become unions, and
//! `not` is pushed into the leaves where it is expressible. Lowering (stage two) then only
//! sees unions of leaves with per-type constraints.

use std::collections::HashMap;
use std::rc::Rc;

use gbnf::FastHash;
use indexmap::IndexMap;
use serde_json::{Number, Value};

use crate::decimal::{self, Decimal};
use crate::error::{Error, ErrorKind, Warning};
use crate::pattern::dfa::Dfa;
use crate::pointer::JsonPointer;
use crate::refs::{Documents, Draft, Target};
use crate::strings::LeafError;
use crate::value_id::ValueIds;
use crate::value_key::{self, ValueKey};
use crate::{Options, MAX_DEPTH};

/// How many alternatives a union may reach when `allOf` distributes over `anyOf`.
const MAX_BRANCHES: usize = 64;
/// The most branches of an overlapping `oneOf` that are made disjoint pairwise.
const MAX_ONE_OF_NEGATED: usize = 64;
/// The keywords `normalize_inner` handles after the schema's own constraints.
const APPLICATORS: [&str; 15] = [
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
    "unevaluatedItems",
];
/// How many schemas a compilation normalises before it looks for schemas written again
/// (`Normalizer::same`): knowing a schema's identity costs about a tenth of normalising a
/// small one, and small compilations (tool schemas) rarely repeat a schema, so below a few
/// hundred schemas looking would only cost.
const SHARE_AFTER: usize = 256;
/// How many negation steps one compilation may take.
const MAX_NEGATE_STEPS: usize = 100_000;
/// The most leaf conjunctions one `oneOf` memoises (64 branches of 64 leaves each could
/// otherwise keep millions); past it they are computed again, as without the memo.
const MAX_LEAF_CONJ_MEMO: usize = 1 << 16;

pub(crate) type DefId = usize;

/// A memoised pattern or format automaton, or why it cannot be built.
type DfaResult = Result<Rc<Dfa>, LeafError>;

/// A normalised schema.
#[derive(Clone, Debug)]
pub(crate) enum Shape {
    /// No value at all.
    Never,
    /// The schema of a definition (a `$ref` target), which may be recursive.
    Ref(DefId),
    /// Any of the alternatives (`anyOf`); two or more, none of them `Never`.
    Union(Vec<Shape>),
    /// Constraints that all hold.
    Leaf(Rc<Leaf>),
}

/// The JSON types, as bits. `NUMBER` always comes with `INTEGER` (every integer is a number).
pub(crate) mod types {
    pub const NULL: u8 = 1;
    pub const BOOLEAN: u8 = 2;
    pub const OBJECT: u8 = 4;
    pub const ARRAY: u8 = 8;
    pub const STRING: u8 = 16;
    pub const INTEGER: u8 = 32;
    pub const NUMBER: u8 = 64 | INTEGER;
    pub const ALL: u8 = NULL | BOOLEAN | OBJECT | ARRAY | STRING | NUMBER;
}

/// A conjunction of constraints. Each group applies only to values of its type.
#[derive(Clone, Debug)]
pub(crate) struct Leaf {
    /// The schema this leaf came from (the first one, when merged).
    pub pointer: JsonPointer,
    pub types: u8,
    /// `enum`/`const`: the value must be one of these.
    pub values: Option<Vec<Value>>,
    /// `not: {enum/const}`: the value must be none of these.
    pub not_values: Vec<Value>,
    pub string: StringC,
    pub number: NumberC,
    pub object: ObjectC,
    pub array: ArrayC,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct StringC {
    pub min_length: u64,
    pub max_length: Option<u64>,
    pub patterns: Vec<(String, JsonPointer)>,
    pub formats: Vec<(String, JsonPointer)>,
    /// Patterns the string must not match (from a negation).
    pub not_patterns: Vec<(String, JsonPointer)>,
    /// Known formats the string must not have (from a negation).
    pub not_formats: Vec<(String, JsonPointer)>,
}

#[derive(Clone, Debug)]
pub(crate) struct Bound {
    pub value: Number,
    pub exclusive: bool,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct NumberC {
    pub minimum: Option<Bound>,
    pub maximum: Option<Bound>,
    pub multiple_of: Vec<(Number, JsonPointer)>,
    /// Negated `multipleOf` (from `not`): the value is a multiple of none of these.
    pub not_multiple_of: Vec<(Number, JsonPointer)>,
}

/// Declared properties by name, in schema order. The names come from the schema, so they are
/// hashed with a seeded hash (foldhash's), not [`gbnf::FastHash`], whose collisions a schema
/// could choose; SipHash, the standard one, cost several percent of compiling big schemas
/// (every merge of two object leaves looks up their required names). The names are shared
/// (`Rc<str>`): a merge copies the map, and copying each name was most of that.
pub(crate) type Properties = IndexMap<Rc<str>, Shape, SeededHash>;

/// The hasher for maps and sets keyed by what a schema writes (names, pointers, values): seeded,
/// so that a schema cannot choose collisions, and much quicker than SipHash on short keys.
pub(crate) type SeededHash = foldhash::fast::RandomState;

#[derive(Clone, Debug, Default)]
pub(crate) struct ObjectC {
    pub properties: Properties,
    pub required: Vec<String>,
    pub pattern_properties: Vec<(String, Shape)>,
    /// `None`: not constrained by any `additionalProperties` (the option decides).
    pub additional: Option<Box<Shape>>,
    pub property_names: Option<Box<Shape>>,
    pub min_properties: u64,
    pub max_properties: Option<u64>,
    /// Names in `properties` that no subschema evaluated (they come from a negation, which
    /// produces no annotations), so `unevaluatedProperties` still applies to them.
    pub silent: Vec<String>,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct ArrayC {
    pub prefix: Vec<Shape>,
    /// `None`: items after the prefix are unconstrained.
    pub items: Option<Box<Shape>>,
    pub min_items: u64,
    pub max_items: Option<u64>,
    pub contains: Vec<Contains>,
    pub unique: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct Contains {
    pub shape: Shape,
    pub min: u64,
    pub max: Option<u64>,
    pub pointer: JsonPointer,
    /// From a negation: its matches are not evaluated items.
    pub silent: bool,
}

/// A `$ref` target and its normalised schema (`None` while it is being normalised).
#[derive(Debug)]
pub(crate) struct Def {
    pub pointer: JsonPointer,
    pub name: String,
    pub shape: Option<Shape>,
}

/// The normalisation context: documents, definitions and collected warnings.
pub(crate) struct Normalizer<'o, 'r> {
    pub options: &'o Options<'r>,
    pub docs: Documents<'o>,
    pub defs: Vec<Def>,
    def_index: HashMap<Target, DefId, SeededHash>,
    pub warnings: Vec<Warning>,
    depth: usize,
    /// Merges with a definition still being normalised (a recursive `$ref` beside other
    /// keywords), finished once everything is normalised: (synthetic definition, the two
    /// operands in order, where).
    pending: Vec<(DefId, Shape, Shape, JsonPointer)>,
    /// The first (innermost) schema found to admit no value: where an `Unsatisfiable` error
    /// points.
    pub first_empty: Option<JsonPointer>,
    /// Negation steps taken so far; negating recursive schemas could otherwise take
    /// exponential time.
    negate_steps: usize,
    /// Definitions made by merging two definitions, by their ids.
    merged_refs: HashMap<(DefId, DefId), DefId, FastHash>,
    /// Pattern and format automata, for checking enum values and keys, by source text.
    dfas: HashMap<(String, bool), DfaResult, SeededHash>,
    /// The same automata by the keyword they come from (the address of its pointer, kept
    /// alive here so the address stays unique, and the text to confirm): enum values are
    /// checked again at every merge, and hashing a long pattern each time was a hot spot.
    dfa_sites: HashMap<(usize, bool), (JsonPointer, String, DfaResult), FastHash>,
    /// Conjunctions of two leaves, by their addresses, while a `oneOf` is made disjoint
    /// (`None` otherwise): the overlap tests and every difference merge the same pairs of
    /// branch leaves again.
    leaf_conj: Option<HashMap<(usize, usize), LeafConj, FastHash>>,
    /// Identities of the schemas normalised so far, by what they say.
    ids: ValueIds,
    /// Schemas normalised, by their identity, their base URI and whether annotations decide
    /// validity yet: a schema written again (ESLint's rules repeat their options schemas
    /// hundreds of times) gets the same shape, and so the same rules, without being
    /// normalised again. With it, where it was first normalised.
    same: HashMap<(u64, u32, bool), (JsonPointer, Shape), FastHash>,
    /// Each use of `same`: (where the schema was normalised, where it was written again). The
    /// warnings about the first place are repeated for the others at the end.
    reused: Vec<(JsonPointer, JsonPointer)>,
    /// How many schemas `normalize` was asked for.
    schemas_seen: usize,
}

/// A memoised conjunction of two leaves.
struct LeafConj {
    /// The operands, kept alive so that their addresses (the key) stay unique.
    _operands: (Rc<Leaf>, Rc<Leaf>),
    shape: Shape,
    /// Told by [`disjoint_leaves`], which is symmetric: the answer for the swapped operands
    /// too.
    disjoint: bool,
    /// The warnings computing it gave, given again each time it is used, as recomputing it
    /// would.
    warnings: Vec<Warning>,
}

impl Shape {
    pub fn any() -> Shape {
        Shape::Leaf(Rc::new(Leaf::any(JsonPointer::root())))
    }

    fn of_types(types: u8, pointer: &JsonPointer) -> Shape {
        let mut leaf = Leaf::any(pointer.clone());
        leaf.types = types;
        Shape::Leaf(Rc::new(leaf))
    }

    pub fn is_never(&self) -> bool {
        matches!(self, Shape::Never)
    }

    pub fn is_any(&self) -> bool {
        match self {
            Shape::Leaf(leaf) => leaf.is_any(),
            _ => false,
        }
    }

    fn union(items: Vec<Shape>) -> Shape {
        let mut out = Vec::new();
        for item in items {
            match item {
                Shape::Never => {}
                Shape::Union(inner) => out.extend(inner),
                other => out.push(other),
            }
        }
        match out.len() {
            0 => Shape::Never,
            1 => out.pop().unwrap_or(Shape::Never),
            _ => Shape::Union(out),
        }
    }
}

impl Leaf {
    pub fn any(pointer: JsonPointer) -> Leaf {
        Leaf {
            pointer,
            types: types::ALL,
            values: None,
            not_values: Vec::new(),
            string: StringC::default(),
            number: NumberC::default(),
            object: ObjectC::default(),
            array: ArrayC::default(),
        }
    }

    fn is_any(&self) -> bool {
        self.types == types::ALL
            && self.values.is_none()
            && self.not_values.is_empty()
            && self.is_unconstrained()
    }

    /// No per-type constraints (types, values aside).
    fn is_unconstrained(&self) -> bool {
        self.string_trivial()
            && self.number_trivial()
            && self.object_trivial()
            && self.array_trivial()
    }

    pub fn string_trivial(&self) -> bool {
        let s = &self.string;
        s.min_length == 0
            && s.max_length.is_none()
            && s.patterns.is_empty()
            && s.formats.is_empty()
            && s.not_patterns.is_empty()
            && s.not_formats.is_empty()
    }

    pub fn number_trivial(&self) -> bool {
        let n = &self.number;
        n.minimum.is_none()
            && n.maximum.is_none()
            && n.multiple_of.is_empty()
            && n.not_multiple_of.is_empty()
    }

    pub fn object_trivial(&self) -> bool {
        let o = &self.object;
        o.properties.is_empty()
            && o.required.is_empty()
            && o.pattern_properties.is_empty()
            && o.additional.is_none()
            && o.property_names.is_none()
            && o.min_properties == 0
            && o.max_properties.is_none()
    }

    pub fn array_trivial(&self) -> bool {
        let a = &self.array;
        a.prefix.is_empty()
            && a.items.is_none()
            && a.min_items == 0
            && a.max_items.is_none()
            && a.contains.is_empty()
            && !a.unique
    }
}

impl<'o, 'r> Normalizer<'o, 'r> {
    pub fn new(root: &'o Value, options: &'o Options<'r>) -> Result<Normalizer<'o, 'r>, Error> {
        check_value_depth(root)?;
        Ok(Normalizer {
            options,
            docs: Documents::new(root),
            defs: Vec::new(),
            def_index: HashMap::default(),
            warnings: Vec::new(),
            depth: 0,
            pending: Vec::new(),
            first_empty: None,
            negate_steps: 0,
            merged_refs: HashMap::default(),
            dfas: HashMap::default(),
            dfa_sites: HashMap::default(),
            leaf_conj: None,
            ids: ValueIds::new(options.strict),
            same: HashMap::default(),
            reused: Vec::new(),
            schemas_seen: 0,
        })
    }

    /// Normalises the schema at `target` as a definition (memoised), so that references to
    /// it, recursive ones included, share one rule.
    pub fn define(
        &mut self,
        target: Target,
        name: &str,
        reference: &str,
        at: &JsonPointer,
    ) -> Result<DefId, Error> {
        if let Some(&id) = self.def_index.get(&target) {
            return Ok(id);
        }
        let doc = self.docs.document(&target);
        let Some((value, base)) = self.docs.find(&doc, &target) else {
            return Err(Error::new(
                ErrorKind::UnresolvedRef {
                    reference: reference.to_owned(),
                },
                at.clone(),
            ));
        };
        let id = self.defs.len();
        let pointer = if target.doc == 0 {
            target.pointer.clone()
        } else {
            at.clone()
        };
        self.defs.push(Def {
            pointer: pointer.clone(),
            name: name.to_owned(),
            shape: None,
        });
        self.def_index.insert(target, id);
        let shape = self.normalize(value, &pointer, &base)?;
        self.defs[id].shape = Some(shape);
        Ok(id)
    }

    /// The root schema as a definition.
    pub fn define_root(&mut self) -> Result<DefId, Error> {
        let target = Target {
            doc: 0,
            pointer: JsonPointer::root(),
        };
        let root = self.define(target, "root", "#", &JsonPointer::root())?;
        let mut done = 0;
        while done < self.pending.len() {
            if done > 1000 {
                let pointer = self.pending[done].3.clone();
                return Err(Error::new(
                    ErrorKind::Unsupported {
                        keyword: "$ref".to_owned(),
                        message: "too many merges with recursive references".to_owned(),
                    },
                    pointer,
                ));
            }
            let (id, a, b, pointer) = self.pending[done].clone();
            let shape = self.conj(&a, &b, &pointer)?;
            self.defs[id].shape = Some(shape);
            done += 1;
        }
        Ok(root)
    }

    /// Reports an assertion that cannot be enforced: an error, or a warning when lenient.
    pub fn unsupported(
        &mut self,
        pointer: &JsonPointer,
        keyword: &str,
        message: impl Into<String>,
    ) -> Result<(), Error> {
        let message = message.into();
        if self.options.lenient {
            self.warnings.push(Warning {
                pointer: pointer.clone(),
                keyword: keyword.to_owned(),
                message: format!("not enforced: {message}"),
            });
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::Unsupported {
                    keyword: keyword.to_owned(),
                    message,
                },
                pointer.clone(),
            ))
        }
    }

    fn enter(&mut self, pointer: &JsonPointer) -> Result<(), Error> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.depth -= 1;
            return Err(Error::new(
                ErrorKind::TooDeep { limit: MAX_DEPTH },
                pointer.clone(),
            ));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// Normalises one schema; a schema that says what one normalised before says, under the
    /// same base URI, gets that one's shape.
    pub fn normalize(
        &mut self,
        value: &Value,
        pointer: &JsonPointer,
        base: &str,
    ) -> Result<Shape, Error> {
        self.schemas_seen += 1;
        let key = match value {
            Value::Object(_) if self.schemas_seen > SHARE_AFTER => {
                self.ids.schema(value).map(|id| {
                    let base = self.ids.base(base);
                    (id, base, self.docs.unevaluated)
                })
            }
            _ => None,
        };
        if let Some((first, shape)) = key.and_then(|key| self.same.get(&key)) {
            self.reused.push((first.clone(), pointer.clone()));
            return Ok(shape.clone());
        }
        self.enter(pointer)?;
        let res = self.normalize_inner(value, pointer, base);
        self.leave();
        if let Ok(Shape::Never) = &res {
            if value != &Value::Bool(false) && self.first_empty.is_none() {
                self.first_empty = Some(pointer.clone());
            }
        }
        if let (Some(key), Ok(shape)) = (key, &res) {
            self.same.insert(key, (pointer.clone(), shape.clone()));
        }
        res
    }

    /// The warnings, each also for every place its schema was written again: a schema
    /// normalised once is lowered once, so until here the warnings of both stages name the
    /// first place it was written only.
    pub fn take_warnings(&mut self) -> Vec<Warning> {
        let mut warnings = std::mem::take(&mut self.warnings);
        if warnings.is_empty() || self.reused.is_empty() {
            return warnings;
        }
        // Copy each warning once, however many merges made it.
        crate::error::report_once(&mut warnings);
        // By the address of the first place's pointer: the warnings about a schema are made
        // with pointers joined onto the one it was normalised at, so they share its node.
        // Each address leads to its first entry in `reused` and `next_place` chains the
        // others in order (no list per address: there are thousands).
        let mut again: HashMap<usize, (usize, usize), FastHash> = HashMap::default();
        let mut next_place = vec![usize::MAX; self.reused.len()];
        for (i, (first, _)) in self.reused.iter().enumerate() {
            let Some(address) = first.address() else {
                continue;
            };
            match again.get_mut(&address) {
                Some((_, last)) => {
                    next_place[*last] = i;
                    *last = i;
                }
                None => {
                    again.insert(address, (i, i));
                }
            }
        }
        // Copies are checked too: a schema reused inside one that is reused later is
        // written once more under each place of the outer one.
        let mut next = 0;
        while next < warnings.len() {
            let warning = &warnings[next];
            let mut copies = Vec::new();
            // `at` is the warning's pointer with its last `up` tokens taken off.
            let mut up = 0;
            let mut at = &warning.pointer;
            loop {
                if let Some(&(first, _)) = at.address().and_then(|address| again.get(&address)) {
                    // The tokens below `at`, last first: each copy has them below its place.
                    let mut tail: Vec<&str> = Vec::with_capacity(up);
                    let mut below = &warning.pointer;
                    for _ in 0..up {
                        let Some((parent, token)) = below.split_last() else {
                            break;
                        };
                        tail.push(token);
                        below = parent;
                    }
                    let mut place = first;
                    while place != usize::MAX {
                        let pointer = (tail.iter().rev())
                            .fold(self.reused[place].1.clone(), |pointer, token| {
                                pointer.join(*token)
                            });
                        copies.push(Warning {
                            pointer,
                            keyword: warning.keyword.clone(),
                            message: warning.message.clone(),
                        });
                        place = next_place[place];
                    }
                }
                let Some((parent, _)) = at.split_last() else {
                    break;
                };
                up += 1;
                at = parent;
            }
            warnings.extend(copies);
            next += 1;
        }
        warnings
    }

    fn normalize_inner(
        &mut self,
        value: &Value,
        pointer: &JsonPointer,
        outer_base: &str,
    ) -> Result<Shape, Error> {
        let object = match value {
            Value::Bool(true) => return Ok(Shape::any()),
            Value::Bool(false) => return Ok(Shape::Never),
            Value::Object(object) => object,
            _ => {
                return Err(invalid(
                    pointer,
                    "schema",
                    "a schema must be an object or a boolean",
                ));
            }
        };
        let base = self.docs.rebase(value, outer_base);
        // Most schemas have no applicator: one pass over the keys spares looking each
        // applicator up (a hashed lookup) in every one of them.
        let has_applicators = object.keys().any(|k| APPLICATORS.contains(&k.as_str()));
        let applicator = |keyword: &str| match has_applicators {
            true => object.get(keyword),
            false => None,
        };
        let mut parts: Vec<Shape> = Vec::new();
        for keyword in ["$ref", "$dynamicRef", "$recursiveRef"] {
            let Some(reference) = applicator(keyword) else {
                continue;
            };
            let at = pointer.join(keyword);
            let Some(reference) = reference.as_str() else {
                return Err(invalid(&at, keyword, "expected a string"));
            };
            let resolver = self.options.resolver;
            let Some(target) = self.docs.resolve(reference, &base, resolver) else {
                return Err(Error::new(
                    ErrorKind::UnresolvedRef {
                        reference: reference.to_owned(),
                    },
                    at,
                ));
            };
            if keyword != "$ref" {
                let anchor = match keyword {
                    "$recursiveRef" => Some(""),
                    _ => reference
                        .rsplit_once('#')
                        .map(|(_, f)| f)
                        .filter(|f| !f.is_empty() && !f.starts_with('/')),
                };
                let declared = anchor.map_or(0, |a| {
                    self.docs.dynamic_anchors.get(a).copied().unwrap_or(0)
                });
                if declared > 1 {
                    self.unsupported(
                        &at,
                        keyword,
                        "a dynamic reference whose target depends on the dynamic scope",
                    )?;
                }
            }
            let name = ref_name(reference);
            let id = self.define(target, &name, reference, &at)?;
            if self.docs.draft == Draft::Old && keyword == "$ref" {
                return Ok(Shape::Ref(id));
            }
            parts.push(Shape::Ref(id));
        }

        let mut leaf = Leaf::any(pointer.clone());
        let mut saw_unknown: Vec<&str> = Vec::new();
        for (keyword, arg) in object {
            // Most keywords only need their pointer for an error: made when asked for.
            let at = || pointer.join(keyword.as_str());
            match keyword.as_str() {
                "type" => leaf.types = parse_types(arg, at)?,
                "enum" => {
                    let Some(values) = arg.as_array() else {
                        return Err(invalid(&at(), "enum", "expected an array"));
                    };
                    leaf.values = Some(intersect_values(leaf.values.take(), values.clone()));
                }
                "const" => {
                    leaf.values = Some(intersect_values(leaf.values.take(), vec![arg.clone()]))
                }
                "minLength" => leaf.string.min_length = non_negative(arg, at, "minLength")?,
                "maxLength" => leaf.string.max_length = Some(non_negative(arg, at, "maxLength")?),
                "pattern" => {
                    let Some(pattern) = arg.as_str() else {
                        return Err(invalid(&at(), "pattern", "expected a string"));
                    };
                    leaf.string.patterns.push((pattern.to_owned(), at()));
                }
                "format" => {
                    let Some(format) = arg.as_str() else {
                        return Err(invalid(&at(), "format", "expected a string"));
                    };
                    leaf.string.formats.push((format.to_owned(), at()));
                }
                "minimum" | "maximum" => {
                    let Some(number) = arg.as_number() else {
                        return Err(invalid(&at(), keyword, "expected a number"));
                    };
                    let flag = if keyword == "minimum" {
                        "exclusiveMinimum"
                    } else {
                        "exclusiveMaximum"
                    };
                    let exclusive = object.get(flag).and_then(Value::as_bool).unwrap_or(false);
                    let bound = Bound {
                        value: number.clone(),
                        exclusive,
                    };
                    if keyword == "minimum" {
                        leaf.number.minimum = tighter_min(leaf.number.minimum.take(), Some(bound));
                    } else {
                        leaf.number.maximum = tighter_max(leaf.number.maximum.take(), Some(bound));
                    }
                }
                "exclusiveMinimum" | "exclusiveMaximum" => match arg {
                    Value::Bool(_) => {
                        let base_keyword = if keyword == "exclusiveMinimum" {
                            "minimum"
                        } else {
                            "maximum"
                        };
                        if !object.contains_key(base_keyword) {
                            // Draft-04 flag without its bound: no effect.
                        }
                    }
                    Value::Number(number) => {
                        let bound = Bound {
                            value: number.clone(),
                            exclusive: true,
                        };
                        if keyword == "exclusiveMinimum" {
                            leaf.number.minimum =
                                tighter_min(leaf.number.minimum.take(), Some(bound));
                        } else {
                            leaf.number.maximum =
                                tighter_max(leaf.number.maximum.take(), Some(bound));
                        }
                    }
                    _ => return Err(invalid(&at(), keyword, "expected a number")),
                },
                "multipleOf" => {
                    let positive = arg
                        .as_number()
                        .and_then(Decimal::of)
                        .is_some_and(|d| !d.is_negative() && !d.is_zero());
                    let (Some(number), true) = (arg.as_number(), positive) else {
                        return Err(invalid(
                            &at(),
                            "multipleOf",
                            "expected a number greater than 0",
                        ));
                    };
                    leaf.number.multiple_of.push((number.clone(), at()));
                }
                "properties" => {
                    let at = at();
                    let Some(map) = arg.as_object() else {
                        return Err(invalid(&at, "properties", "expected an object"));
                    };
                    for (key, schema) in map {
                        let shape = self.normalize(schema, &at.join(key.as_str()), &base)?;
                        leaf.object.properties.insert(Rc::from(key.as_str()), shape);
                    }
                }
                "required" => match arg {
                    Value::Array(names) => {
                        for name in names {
                            let Some(name) = name.as_str() else {
                                return Err(invalid(
                                    &at(),
                                    "required",
                                    "expected an array of strings",
                                ));
                            };
                            if !leaf.object.required.iter().any(|r| r == name) {
                                leaf.object.required.push(name.to_owned());
                            }
                        }
                    }
                    // Draft-03 `required: true` inside a property: not a draft we support.
                    Value::Bool(_) => {
                        self.unsupported(&at(), "required", "draft-03 boolean `required`")?
                    }
                    _ => return Err(invalid(&at(), "required", "expected an array of strings")),
                },
                "additionalProperties" => {
                    let shape = self.normalize(arg, &at(), &base)?;
                    leaf.object.additional = Some(Box::new(shape));
                }
                "patternProperties" => {
                    let at = at();
                    let Some(map) = arg.as_object() else {
                        return Err(invalid(&at, "patternProperties", "expected an object"));
                    };
                    for (pattern, schema) in map {
                        let shape = self.normalize(schema, &at.join(pattern.as_str()), &base)?;
                        leaf.object
                            .pattern_properties
                            .push((pattern.clone(), shape));
                    }
                }
                "propertyNames" => {
                    let shape = self.normalize(arg, &at(), &base)?;
                    if !shape.is_any() {
                        leaf.object.property_names = Some(Box::new(shape));
                    }
                }
                "minProperties" => leaf.object.min_properties = non_negative(arg, at, keyword)?,
                "maxProperties" => {
                    leaf.object.max_properties = Some(non_negative(arg, at, keyword)?)
                }
                "items" => match arg {
                    Value::Array(schemas) => {
                        let at = at();
                        for (i, schema) in schemas.iter().enumerate() {
                            let shape = self.normalize(schema, &at.join(i.to_string()), &base)?;
                            leaf.array.prefix.push(shape);
                        }
                        if let Some(additional) = object.get("additionalItems") {
                            let shape = self.normalize(
                                additional,
                                &pointer.join("additionalItems"),
                                &base,
                            )?;
                            leaf.array.items = Some(Box::new(shape));
                        }
                    }
                    _ => {
                        let shape = self.normalize(arg, &at(), &base)?;
                        leaf.array.items = Some(Box::new(shape));
                    }
                },
                "prefixItems" => {
                    let at = at();
                    let Some(schemas) = arg.as_array() else {
                        return Err(invalid(&at, "prefixItems", "expected an array of schemas"));
                    };
                    for (i, schema) in schemas.iter().enumerate() {
                        let shape = self.normalize(schema, &at.join(i.to_string()), &base)?;
                        leaf.array.prefix.push(shape);
                    }
                }
                "additionalItems" => {
                    // Handled with `items` (it only applies after an array of `items`).
                    if !arg.is_boolean() && !arg.is_object() {
                        return Err(invalid(
                            &at(),
                            keyword,
                            "a schema must be an object or a boolean",
                        ));
                    }
                }
                "minItems" => leaf.array.min_items = non_negative(arg, at, keyword)?,
                "maxItems" => leaf.array.max_items = Some(non_negative(arg, at, keyword)?),
                "uniqueItems" => match arg {
                    Value::Bool(unique) => leaf.array.unique = *unique,
                    _ => return Err(invalid(&at(), keyword, "expected a boolean")),
                },
                "contains" => {
                    // One pointer for the schema and the keyword's record: the warnings made
                    // under it are found again by its address (`take_warnings`).
                    let at = at();
                    let shape = self.normalize(arg, &at, &base)?;
                    let min = match object.get("minContains") {
                        Some(v) => non_negative(v, || pointer.join("minContains"), "minContains")?,
                        None => 1,
                    };
                    let max = match object.get("maxContains") {
                        Some(v) => Some(non_negative(
                            v,
                            || pointer.join("maxContains"),
                            "maxContains",
                        )?),
                        None => None,
                    };
                    if max.is_some_and(|max| max < min) {
                        return Err(invalid(
                            &pointer.join("minContains"),
                            "minContains",
                            "minContains is greater than maxContains",
                        ));
                    }
                    leaf.array.contains.push(Contains {
                        shape,
                        min,
                        max,
                        pointer: at,
                        silent: false,
                    });
                }
                "minContains" | "maxContains" => {
                    non_negative(arg, at, keyword)?;
                }
                keyword if APPLICATORS.contains(&keyword) => {}
                // Annotations and identifiers.
                "$schema" | "$id" | "id" | "$anchor" | "$dynamicAnchor" | "$recursiveAnchor"
                | "$defs" | "definitions" | "$comment" | "$vocabulary" | "title"
                | "description" | "default" | "examples" | "readOnly" | "writeOnly"
                | "deprecated" | "contentEncoding" | "contentMediaType" | "contentSchema" => {}
                other => saw_unknown.push(other),
            }
        }
        if let (Some(min), Some(max)) = (&leaf.number.minimum, &leaf.number.maximum) {
            let order = decimal::compare(&min.value, &max.value);
            if order == std::cmp::Ordering::Greater {
                return Err(invalid(
                    &pointer.join("minimum"),
                    "minimum",
                    format!(
                        "the lower bound {} is greater than the upper bound {}",
                        min.value, max.value
                    ),
                ));
            }
        }
        let counts = [
            (
                leaf.string.min_length,
                leaf.string.max_length,
                "minLength",
                "maxLength",
            ),
            (
                leaf.array.min_items,
                leaf.array.max_items,
                "minItems",
                "maxItems",
            ),
            (
                leaf.object.min_properties,
                leaf.object.max_properties,
                "minProperties",
                "maxProperties",
            ),
        ];
        for (min, max, keyword, max_keyword) in counts {
            if max.is_some_and(|max| max < min) {
                return Err(invalid(
                    &pointer.join(keyword),
                    keyword,
                    format!("{keyword} is greater than {max_keyword}"),
                ));
            }
        }
        if self.options.strict {
            if let Some(keyword) = saw_unknown.first() {
                return Err(Error::new(
                    ErrorKind::Unsupported {
                        keyword: (*keyword).to_owned(),
                        message: format!("unknown keyword {keyword:?} (strict mode)"),
                    },
                    pointer.join(*keyword),
                ));
            }
        }
        // Merged properties keep the order the schema text shows: the node's own
        // `properties` go before or after its applicators as written.
        let applicators = [
            "$ref",
            "$dynamicRef",
            "$recursiveRef",
            "allOf",
            "anyOf",
            "oneOf",
            "if",
        ];
        let own_first = match object.keys().position(|k| k == "properties") {
            None => true,
            Some(position) => !object
                .keys()
                .take(position)
                .any(|k| applicators.contains(&k.as_str())),
        };
        let own_leaf = self.simplify(leaf)?;
        if own_first {
            parts.insert(0, own_leaf.clone());
        }

        if let Some(arg) = applicator("allOf") {
            let at = pointer.join("allOf");
            for (i, schema) in schema_array(arg, &at, "allOf")?.iter().enumerate() {
                parts.push(self.normalize(schema, &at.join(i.to_string()), &base)?);
            }
        }
        if let Some(arg) = applicator("anyOf") {
            let at = pointer.join("anyOf");
            let mut branches = Vec::new();
            for (i, schema) in schema_array(arg, &at, "anyOf")?.iter().enumerate() {
                branches.push(self.normalize(schema, &at.join(i.to_string()), &base)?);
            }
            let branches = self.with_annotations(branches, &at)?;
            parts.push(Shape::union(branches));
        }
        // A `not` that cannot be negated alone may still be taken away from the rest of
        // this schema (a difference, once the other keywords are merged).
        let mut not_later = None;
        if let Some(arg) = applicator("not") {
            let at = pointer.join("not");
            let shape = self.normalize(arg, &at, &base)?;
            match self.negate(&shape)? {
                Some(negated) => parts.push(negated),
                None => not_later = Some((shape, at)),
            }
        }
        if let Some(arg) = applicator("if") {
            let then = applicator("then");
            let otherwise = applicator("else");
            if then.is_none() && otherwise.is_none() && self.docs.unevaluated {
                // No assertion, but a matching `if` evaluates keys and items.
                let at = pointer.join("if");
                let condition = self.normalize(arg, &at, &base)?;
                let branches = self.with_annotations(vec![condition, Shape::any()], &at)?;
                parts.push(Shape::union(branches));
            } else if then.is_some() || otherwise.is_some() {
                let at = pointer.join("if");
                let condition = self.normalize(arg, &at, &base)?;
                let then = match then {
                    Some(v) => self.normalize(v, &pointer.join("then"), &base)?,
                    None => Shape::any(),
                };
                let otherwise = match otherwise {
                    Some(v) => self.normalize(v, &pointer.join("else"), &base)?,
                    None => Shape::any(),
                };
                let yes = self.conj(&condition, &then, &at)?;
                let no = match self.negate(&condition)? {
                    Some(negated) => Some(self.conj(&negated, &otherwise, &at)?),
                    // `else` without what `if` accepts, within this schema's own keywords.
                    None => {
                        let otherwise = self.conj(&own_leaf, &otherwise, &at)?;
                        self.minus(&otherwise, &condition, &condition, &at)?
                    }
                };
                match no {
                    Some(no) => parts.push(Shape::union(vec![yes, no])),
                    None => self.unsupported(
                        &at,
                        "if",
                        "the negation of the `if` schema cannot be expressed",
                    )?,
                }
            }
        }
        if !own_first {
            parts.push(own_leaf);
        }
        for keyword in ["dependentRequired", "dependentSchemas", "dependencies"] {
            let Some(arg) = applicator(keyword) else {
                continue;
            };
            let at = pointer.join(keyword);
            let Some(map) = arg.as_object() else {
                return Err(invalid(&at, keyword, "expected an object"));
            };
            for (trigger, dependency) in map {
                let dep_at = at.join(trigger.as_str());
                let mut present = Leaf::any(dep_at.clone());
                present.types = types::OBJECT;
                present.object.required.push(trigger.clone());
                let present = match dependency {
                    Value::Array(names) if keyword != "dependentSchemas" => {
                        for name in names {
                            let Some(name) = name.as_str() else {
                                return Err(invalid(
                                    &dep_at,
                                    keyword,
                                    "expected an array of strings",
                                ));
                            };
                            if !present.object.required.iter().any(|r| r == name) {
                                present.object.required.push(name.to_owned());
                            }
                        }
                        Shape::Leaf(Rc::new(present))
                    }
                    Value::Array(_) => return Err(invalid(&dep_at, keyword, "expected a schema")),
                    schema if keyword != "dependentRequired" => {
                        let shape = self.normalize(schema, &dep_at, &base)?;
                        self.conj(&Shape::Leaf(Rc::new(present)), &shape, &dep_at)?
                    }
                    _ => return Err(invalid(&dep_at, keyword, "expected an array of strings")),
                };
                let mut absent = Leaf::any(dep_at.clone());
                absent
                    .object
                    .properties
                    .insert(Rc::from(trigger.as_str()), Shape::Never);
                parts.push(Shape::union(vec![Shape::Leaf(Rc::new(absent)), present]));
            }
        }

        let mut shape = Shape::any();
        for part in &parts {
            shape = self.conj(&shape, part, pointer)?;
        }
        if let Some(arg) = applicator("oneOf") {
            // Disjointness is judged in the context of the other keywords (`type: object`
            // beside tagged branches makes them disjoint).
            let at = pointer.join("oneOf");
            let mut branches = Vec::new();
            let mut raw = Vec::new();
            for (i, schema) in schema_array(arg, &at, "oneOf")?.iter().enumerate() {
                let branch = self.normalize(schema, &at.join(i.to_string()), &base)?;
                let in_context = if own_first {
                    self.conj(&shape, &branch, &at)?
                } else {
                    self.conj(&branch, &shape, &at)?
                };
                if !in_context.is_never() {
                    branches.push(in_context);
                    raw.push(branch);
                }
            }
            shape = self.one_of(branches, raw, &at)?;
        }
        if let Some((excluded, at)) = not_later {
            match self.minus(&shape, &excluded, &excluded, &at)? {
                Some(rest) => shape = rest,
                None => self.unsupported(
                    &at,
                    "not",
                    "the negation of this schema cannot be expressed",
                )?,
            }
        }
        // Each leaf is one way to match, so it knows which keys and items were evaluated:
        // the rest must match the unevaluated schema (which also evaluates them, for an
        // enclosing `unevaluated*`, even when it is `true`).
        if let Some(arg) = applicator("unevaluatedProperties") {
            let at = pointer.join("unevaluatedProperties");
            let unevaluated = self.normalize(arg, &at, &base)?;
            shape = self.map_leaves(shape, &at, &mut |this, leaf| {
                let o = &mut leaf.object;
                for name in std::mem::take(&mut o.silent) {
                    if let Some(declared) = o.properties.get(name.as_str()).cloned() {
                        let both = this.conj(&declared, &unevaluated, &at)?;
                        if let Some(slot) = o.properties.get_mut(name.as_str()) {
                            *slot = both;
                        }
                    }
                }
                // `additionalProperties` has the same reach: keys neither declared nor
                // matched by a pattern.
                if o.additional.is_none() {
                    o.additional = Some(Box::new(unevaluated.clone()));
                }
                Ok(())
            })?;
        }
        if let Some(arg) = applicator("unevaluatedItems") {
            let at = pointer.join("unevaluatedItems");
            let unevaluated = self.normalize(arg, &at, &base)?;
            shape = self.map_leaves(shape, &at, &mut |_, leaf| {
                let a = &mut leaf.array;
                if a.items.is_none() {
                    // An item past the prefix is evaluated by a `contains` it matches.
                    let mut either: Vec<Shape> = a
                        .contains
                        .iter()
                        .filter(|contains| !contains.silent)
                        .map(|contains| contains.shape.clone())
                        .collect();
                    either.push(unevaluated.clone());
                    a.items = Some(Box::new(Shape::union(either)));
                }
                for contains in &mut a.contains {
                    contains.silent = false;
                }
                Ok(())
            })?;
        }
        Ok(shape)
    }

    /// The alternatives of an `anyOf` when `unevaluated*` is in play: a value that matches
    /// several branches has the keys and items of all of them evaluated, so every
    /// satisfiable conjunction of branches is an alternative too. The conjunctions are
    /// built incrementally, so disjoint branches (the common case) cost one `conj` a pair.
    fn with_annotations(
        &mut self,
        branches: Vec<Shape>,
        pointer: &JsonPointer,
    ) -> Result<Vec<Shape>, Error> {
        /// The most alternatives the conjunctions may add.
        const MAX_COMBINATIONS: usize = 64;
        if !self.docs.unevaluated || branches.len() < 2 {
            return Ok(branches);
        }
        let mut combinations: Vec<Shape> = Vec::new();
        for (i, branch) in branches.iter().enumerate() {
            let mut next = Vec::new();
            for earlier in branches[..i].iter().chain(&combinations) {
                let both = self.conj(earlier, branch, pointer)?;
                if !both.is_never() {
                    next.push(both);
                }
            }
            combinations.extend(next);
            if combinations.len() > MAX_COMBINATIONS {
                self.unsupported(
                    pointer,
                    "anyOf",
                    format!(
                        "under unevaluated*, more than {MAX_COMBINATIONS} combinations of \
                         overlapping branches would be needed"
                    ),
                )?;
                return Ok(branches);
            }
        }
        let mut out = branches;
        out.extend(combinations);
        Ok(out)
    }

    /// Applies `f` to every leaf of `shape` (references are expanded), then re-simplifies.
    fn map_leaves(
        &mut self,
        shape: Shape,
        pointer: &JsonPointer,
        f: &mut dyn FnMut(&mut Self, &mut Leaf) -> Result<(), Error>,
    ) -> Result<Shape, Error> {
        self.enter(pointer)?;
        let res = self.map_leaves_inner(shape, pointer, f);
        self.leave();
        res
    }

    fn map_leaves_inner(
        &mut self,
        shape: Shape,
        pointer: &JsonPointer,
        f: &mut dyn FnMut(&mut Self, &mut Leaf) -> Result<(), Error>,
    ) -> Result<Shape, Error> {
        match shape {
            Shape::Never => Ok(Shape::Never),
            Shape::Ref(id) => match self.defs[id].shape.clone() {
                Some(target) => self.map_leaves(target, pointer, f),
                None => {
                    self.unsupported(
                        pointer,
                        "unevaluatedProperties",
                        "unevaluated* through a recursive $ref",
                    )?;
                    Ok(Shape::Ref(id))
                }
            },
            Shape::Union(items) => {
                let mut out = Vec::new();
                for item in items {
                    out.push(self.map_leaves(item, pointer, f)?);
                }
                Ok(Shape::union(out))
            }
            Shape::Leaf(leaf) => {
                let mut leaf = Rc::unwrap_or_clone(leaf);
                f(self, &mut leaf)?;
                self.simplify(leaf)
            }
        }
    }

    /// The normalised schema of a definition, for merging; an error while it is still
    /// being normalised (a reference to an enclosing schema merged with other keywords).
    pub fn def_shape(&mut self, id: DefId, pointer: &JsonPointer) -> Result<Shape, Error> {
        match &self.defs[id].shape {
            Some(shape) => Ok(shape.clone()),
            None => Err(Error::new(
                ErrorKind::Unsupported {
                    keyword: "$ref".to_owned(),
                    message: "a recursive $ref combined with other keywords (allOf, siblings, not, oneOf)".to_owned(),
                },
                pointer.clone(),
            )),
        }
    }

    /// `oneOf`: a union when the branches are provably disjoint.
    /// `branches` are the alternatives in the context of their sibling keywords, `raw` the
    /// same alternatives alone (negating those is more often expressible).
    fn one_of(
        &mut self,
        branches: Vec<Shape>,
        raw: Vec<Shape>,
        pointer: &JsonPointer,
    ) -> Result<Shape, Error> {
        let outermost = self.leaf_conj.is_none();
        if outermost {
            self.leaf_conj = Some(HashMap::default());
        }
        let res = self.one_of_inner(branches, raw, pointer);
        if outermost {
            self.leaf_conj = None;
        }
        res
    }

    fn one_of_inner(
        &mut self,
        branches: Vec<Shape>,
        raw: Vec<Shape>,
        pointer: &JsonPointer,
    ) -> Result<Shape, Error> {
        let mut overlap = None;
        'pairs: for i in 0..branches.len() {
            for j in i + 1..branches.len() {
                // Two leaves that are plainly disjoint (a `oneOf` of `const`s, of types):
                // `conj` would answer `Never` (and keep the pair in the memo, where later
                // merges would find the answer just as quickly), so it is skipped.
                if let (Shape::Leaf(x), Shape::Leaf(y)) = (&branches[i], &branches[j]) {
                    if self.depth < MAX_DEPTH
                        && !x.is_any()
                        && !y.is_any()
                        && !Rc::ptr_eq(x, y)
                        && disjoint_leaves(x, y)
                    {
                        continue;
                    }
                }
                let both = self.conj(&branches[i], &branches[j], pointer)?;
                if !both.is_never() {
                    overlap = Some((i, j));
                    break 'pairs;
                }
            }
        }
        if overlap.is_none() {
            return Ok(Shape::union(branches));
        }
        // Exactly one: each branch without the others it overlaps, when that can be said.
        let mut alternatives = Vec::new();
        let mut stuck = None;
        'branches: for (k, branch) in branches.iter().enumerate() {
            if branches.len() > MAX_ONE_OF_NEGATED {
                break;
            }
            let mut only = branch.clone();
            for m in (0..branches.len()).filter(|&m| m != k) {
                match self.minus(&only, &raw[m], &branches[m], pointer)? {
                    Some(rest) => only = rest,
                    None => {
                        stuck = Some((k.min(m), k.max(m)));
                        break 'branches;
                    }
                }
            }
            alternatives.push(only);
        }
        if alternatives.len() == branches.len() {
            return Ok(Shape::union(alternatives));
        }
        let (i, j) = stuck.or(overlap).unwrap_or_default();
        self.unsupported(
            pointer,
            "oneOf",
            format!("branches {i} and {j} may both match a value, so `oneOf` cannot be expressed (treated as anyOf)"),
        )?;
        Ok(Shape::union(branches))
    }

    /// The values of `a` that `b` does not admit (`a ∧ ¬b`), or `None` when that cannot be
    /// expressed. `b_in_context` is `b` merged with what `a` was merged with (so `a` lies
    /// within that context): it is what overlap is judged on.
    fn minus(
        &mut self,
        a: &Shape,
        b: &Shape,
        b_in_context: &Shape,
        pointer: &JsonPointer,
    ) -> Result<Option<Shape>, Error> {
        // Differences follow references and nested properties: bounded like negation.
        self.negate_steps += 1;
        if self.depth >= MAX_DEPTH || self.negate_steps > MAX_NEGATE_STEPS {
            return Ok(None);
        }
        self.depth += 1;
        let res = self.minus_inner(a, b, b_in_context, pointer);
        self.depth -= 1;
        res
    }

    fn minus_inner(
        &mut self,
        a: &Shape,
        b: &Shape,
        b_in_context: &Shape,
        pointer: &JsonPointer,
    ) -> Result<Option<Shape>, Error> {
        if let (Shape::Ref(x), Shape::Ref(y)) = (a, b_in_context) {
            if x == y {
                return Ok(Some(Shape::Never));
            }
        }
        if self.conj(a, b_in_context, pointer)?.is_never() {
            return Ok(Some(a.clone()));
        }
        if let Some(negated) = self.negate(b)? {
            return Ok(Some(self.conj(a, &negated, pointer)?));
        }
        if let Shape::Ref(id) = a {
            return match self.defs[*id].shape.clone() {
                Some(target) => self.minus(&target, b, b_in_context, pointer),
                None => Ok(None),
            };
        }
        if let Shape::Union(items) = a {
            let mut out = Vec::new();
            for item in items {
                match self.minus(item, b, b_in_context, pointer)? {
                    Some(rest) => out.push(rest),
                    None => return Ok(None),
                }
            }
            return Ok(Some(Shape::union(out)));
        }
        match b_in_context {
            Shape::Ref(id) => match self.defs[*id].shape.clone() {
                Some(target) => self.minus(a, &target, &target, pointer),
                None => Ok(None),
            },
            // Without each alternative in turn.
            Shape::Union(items) => {
                let mut rest = a.clone();
                for item in items {
                    match self.minus(&rest, item, item, pointer)? {
                        Some(smaller) => rest = smaller,
                        None => return Ok(None),
                    }
                }
                Ok(Some(rest))
            }
            Shape::Leaf(b_leaf) => match a {
                Shape::Leaf(a_leaf) => self.minus_leaf(a_leaf, b_leaf),
                _ => Ok(None),
            },
            Shape::Never => Ok(Some(a.clone())),
        }
    }

    /// `a ∧ ¬b` for two leaves, one JSON type at a time: the types `b` leaves open need no
    /// negation, and closed objects have a difference of their own.
    fn minus_leaf(&mut self, a: &Leaf, b: &Leaf) -> Result<Option<Shape>, Error> {
        use types::*;
        if a.values.is_some() || b.values.is_some() || !b.not_values.is_empty() {
            return Ok(None);
        }
        let mut out = Vec::new();
        for group in [NULL, BOOLEAN, OBJECT, ARRAY, STRING, NUMBER] {
            let in_a = a.types & group;
            if in_a == 0 {
                continue;
            }
            let in_b = b.types & group;
            let mut a_part = a.clone();
            a_part.types = in_a;
            if in_b == 0 {
                out.push(self.simplify(a_part)?);
                continue;
            }
            let b_open = match group {
                OBJECT => b.object_trivial(),
                ARRAY => b.array_trivial(),
                STRING => b.string_trivial(),
                NUMBER => b.number_trivial(),
                _ => true,
            };
            if b_open && in_b & in_a == in_a {
                continue;
            }
            let mut b_part = b.clone();
            b_part.types = in_b;
            if let Some(negated) = self.negate(&Shape::Leaf(Rc::new(b_part.clone())))? {
                let a_part = Shape::Leaf(Rc::new(a_part));
                out.push(self.conj(&a_part, &negated, &a.pointer)?);
                continue;
            }
            match group {
                OBJECT => match self.minus_object(&a_part, &b_part)? {
                    Some(rest) => out.push(rest),
                    None => return Ok(None),
                },
                _ => return Ok(None),
            }
        }
        Ok(Some(Shape::union(out)))
    }

    /// `a ∧ ¬b` for the objects of two leaves (`a` has only the object type), key by key: a
    /// value of `a` escapes `b` by missing a key `b` requires, by a key `b` declares holding
    /// a value `b` does not admit there (a difference again, so nested objects need no
    /// negation), by its number of members, or, when `b` is closed, by a key `b` does not
    /// declare (then `a` must be closed too, so that its keys are known).
    fn minus_object(&mut self, a: &Leaf, b: &Leaf) -> Result<Option<Shape>, Error> {
        use types::OBJECT;
        let o = &b.object;
        if !o.pattern_properties.is_empty() || o.property_names.is_some() {
            return Ok(None);
        }
        let closed = |leaf: &Leaf| {
            leaf.object.pattern_properties.is_empty()
                && leaf
                    .object
                    .additional
                    .as_deref()
                    .is_some_and(Shape::is_never)
        };
        let b_closed = closed(b);
        let b_open = o.additional.as_deref().map_or(true, Shape::is_any);
        if !(b_open || b_closed && closed(a)) {
            return Ok(None);
        }
        let pointer = a.pointer.clone();
        let a_shape = Shape::Leaf(Rc::new(a.clone()));
        // Disjoint whatever the undeclared keys (tagged objects): nothing to take away.
        let mut keys_open = b.clone();
        keys_open.object.additional = None;
        if self
            .conj(&a_shape, &Shape::Leaf(Rc::new(keys_open)), &pointer)?
            .is_never()
        {
            return Ok(Some(a_shape));
        }
        let mut out = Vec::new();
        for name in &o.required {
            let mut missing = Leaf::any(pointer.clone());
            missing.types = OBJECT;
            missing
                .object
                .properties
                .insert(Rc::from(name.as_str()), Shape::Never);
            missing.object.silent.push(name.clone());
            out.push(self.conj(&a_shape, &Shape::Leaf(Rc::new(missing)), &pointer)?);
        }
        for (name, b_value) in &o.properties {
            let a_value = self.schema_of_key(&a.object, name, &pointer)?;
            let Some(bad) = self.minus(&a_value, b_value, b_value, &pointer)? else {
                return Ok(None);
            };
            if bad.is_never() {
                continue;
            }
            let mut wrong = a.clone();
            if !wrong.object.required.iter().any(|r| **r == **name) {
                wrong.object.required.push(name.to_string());
            }
            // Declared here only to hold `bad`: as evaluated as it was in `a`.
            if !self.evaluates(&a.object, name)
                && !wrong.object.silent.iter().any(|s| **s == **name)
            {
                wrong.object.silent.push(name.to_string());
            }
            wrong.object.properties.insert(name.clone(), bad);
            out.push(self.simplify(wrong)?);
        }
        if o.min_properties > 0 {
            let mut few = a.clone();
            few.object.max_properties =
                min_option(a.object.max_properties, Some(o.min_properties - 1));
            out.push(self.simplify(few)?);
        }
        if let Some(max) = o.max_properties {
            let mut many = a.clone();
            many.object.min_properties = a.object.min_properties.max(max + 1);
            out.push(self.simplify(many)?);
        }
        if b_closed {
            for name in a.object.properties.keys() {
                if !o.properties.contains_key(name) {
                    let mut with_key = a.clone();
                    if !with_key.object.required.iter().any(|r| **r == **name) {
                        with_key.object.required.push(name.to_string());
                    }
                    out.push(self.simplify(with_key)?);
                }
            }
        }
        Ok(Some(Shape::union(out)))
    }

    /// The intersection of two shapes.
    pub fn conj(&mut self, a: &Shape, b: &Shape, pointer: &JsonPointer) -> Result<Shape, Error> {
        self.enter(pointer)?;
        let res = self.conj_inner(a, b, pointer);
        self.leave();
        res
    }

    fn conj_inner(&mut self, a: &Shape, b: &Shape, pointer: &JsonPointer) -> Result<Shape, Error> {
        if a.is_any() {
            return Ok(b.clone());
        }
        if b.is_any() {
            return Ok(a.clone());
        }
        match (a, b) {
            (Shape::Never, _) | (_, Shape::Never) => Ok(Shape::Never),
            (Shape::Ref(x), Shape::Ref(y)) if x == y => Ok(a.clone()),
            (Shape::Ref(x), Shape::Ref(y))
                if self.defs[*x].shape.is_some() && self.defs[*y].shape.is_some() =>
            {
                // Two (possibly recursive) definitions: their merge is a definition of its
                // own, so that merging them again inside refers back instead of unrolling.
                if let Some(&id) = self.merged_refs.get(&(*x, *y)) {
                    return Ok(Shape::Ref(id));
                }
                let id = self.defs.len();
                let name = format!("{}-and-{}", self.defs[*x].name, self.defs[*y].name);
                self.defs.push(Def {
                    pointer: pointer.clone(),
                    name,
                    shape: None,
                });
                self.merged_refs.insert((*x, *y), id);
                let (first, second) = (self.def_shape(*x, pointer)?, self.def_shape(*y, pointer)?);
                let shape = self.conj(&first, &second, pointer)?;
                if shape.is_never() {
                    self.defs[id].shape = Some(Shape::Never);
                    return Ok(Shape::Never);
                }
                self.defs[id].shape = Some(shape);
                Ok(Shape::Ref(id))
            }
            (Shape::Ref(id), other) | (other, Shape::Ref(id)) => {
                if self.defs[*id].shape.is_none() {
                    // The definition is still being normalised (recursion): merge later,
                    // as a definition of its own.
                    let name = format!("{}-and", self.defs[*id].name);
                    let synthetic = self.defs.len();
                    self.defs.push(Def {
                        pointer: pointer.clone(),
                        name,
                        shape: None,
                    });
                    self.pending
                        .push((synthetic, a.clone(), b.clone(), pointer.clone()));
                    return Ok(Shape::Ref(synthetic));
                }
                let target = self.def_shape(*id, pointer)?;
                if matches!(a, Shape::Ref(_)) {
                    self.conj(&target, other, pointer)
                } else {
                    self.conj(other, &target, pointer)
                }
            }
            (Shape::Union(items), other) | (other, Shape::Union(items)) => {
                // Keep the operands' order: it decides the merged property order.
                let union_first = matches!(a, Shape::Union(_));
                let mut out = Vec::new();
                for item in items {
                    let both = if union_first {
                        self.conj(item, other, pointer)?
                    } else {
                        self.conj(other, item, pointer)?
                    };
                    if !both.is_never() {
                        out.push(both);
                    }
                }
                let res = Shape::union(out);
                if let Shape::Union(items) = &res {
                    if items.len() > MAX_BRANCHES {
                        return Err(Error::new(
                            ErrorKind::Unsupported {
                                keyword: "allOf".to_owned(),
                                message: format!("combining these subschemas gives more than {MAX_BRANCHES} alternatives"),
                            },
                            pointer.clone(),
                        ));
                    }
                }
                Ok(res)
            }
            (Shape::Leaf(x), Shape::Leaf(y)) => {
                if Rc::ptr_eq(x, y) {
                    // `x` and `x`: merging would only repeat each list (patterns, formats,
                    // `multipleOf`, `contains`) and re-merge every subschema with itself.
                    return Ok(a.clone());
                }
                let key = (Rc::as_ptr(x) as usize, Rc::as_ptr(y) as usize);
                if let Some(memo) = &self.leaf_conj {
                    if let Some(known) = memo.get(&key) {
                        let shape = known.shape.clone();
                        let warnings = known.warnings.clone();
                        self.warnings.extend(warnings);
                        return Ok(shape);
                    }
                    if memo
                        .get(&(key.1, key.0))
                        .is_some_and(|known| known.disjoint)
                    {
                        return Ok(Shape::Never);
                    }
                }
                let (n_warnings, n_pending) = (self.warnings.len(), self.pending.len());
                let disjoint = disjoint_leaves(x, y);
                let shape = if disjoint {
                    Shape::Never
                } else {
                    let merged = self.merge_leaves(x, y)?;
                    self.simplify(merged)?
                };
                // A merge with a definition still being normalised makes a new synthetic
                // definition each time: not memoised, so that it still does.
                if self.pending.len() == n_pending {
                    if let Some(memo) = self
                        .leaf_conj
                        .as_mut()
                        .filter(|memo| memo.len() < MAX_LEAF_CONJ_MEMO)
                    {
                        let known = LeafConj {
                            _operands: (x.clone(), y.clone()),
                            shape: shape.clone(),
                            disjoint,
                            warnings: self.warnings[n_warnings..].to_vec(),
                        };
                        memo.insert(key, known);
                    }
                }
                Ok(shape)
            }
        }
    }

    fn merge_leaves(&mut self, a: &Leaf, b: &Leaf) -> Result<Leaf, Error> {
        let pointer = a.pointer.clone();
        let values = match (&a.values, &b.values) {
            (None, None) => None,
            (Some(x), None) | (None, Some(x)) => Some(x.clone()),
            (Some(x), Some(y)) => Some(intersect_values(Some(x.clone()), y.clone())),
        };
        let mut not_values = a.not_values.clone();
        not_values.extend(b.not_values.iter().cloned());
        let mut string = a.string.clone();
        string.min_length = string.min_length.max(b.string.min_length);
        string.max_length = min_option(string.max_length, b.string.max_length);
        string.patterns.extend(b.string.patterns.iter().cloned());
        string.formats.extend(b.string.formats.iter().cloned());
        string
            .not_patterns
            .extend(b.string.not_patterns.iter().cloned());
        string
            .not_formats
            .extend(b.string.not_formats.iter().cloned());
        let mut number = a.number.clone();
        number.minimum = tighter_min(number.minimum, b.number.minimum.clone());
        number.maximum = tighter_max(number.maximum, b.number.maximum.clone());
        number
            .multiple_of
            .extend(b.number.multiple_of.iter().cloned());
        number
            .not_multiple_of
            .extend(b.number.not_multiple_of.iter().cloned());
        let object = self.merge_objects(&a.object, &b.object, &pointer)?;
        let array = self.merge_arrays(&a.array, &b.array, &pointer)?;
        Ok(Leaf {
            pointer,
            types: a.types & b.types,
            values,
            not_values,
            string,
            number,
            object,
            array,
        })
    }

    fn merge_objects(
        &mut self,
        a: &ObjectC,
        b: &ObjectC,
        pointer: &JsonPointer,
    ) -> Result<ObjectC, Error> {
        let a_trivial =
            a.properties.is_empty() && a.pattern_properties.is_empty() && a.additional.is_none();
        let b_trivial =
            b.properties.is_empty() && b.pattern_properties.is_empty() && b.additional.is_none();
        let mut out = ObjectC::default();
        if a_trivial || b_trivial {
            let (big, _) = if a_trivial { (b, a) } else { (a, b) };
            out.properties = big.properties.clone();
            out.pattern_properties = big.pattern_properties.clone();
            out.additional = big.additional.clone();
        } else {
            // `a`'s keys keep their places: its map is copied (with the keys' hashes, so they
            // are not hashed again) and each value replaced by the merged one; sized once for
            // `b`'s keys too, as growing the map key by key is most of the cost of big merges.
            out.properties = a.properties.clone();
            out.properties.reserve(b.properties.len());
            // (`schema_of_key`, without cloning a declared schema or looking a key up twice.)
            // A side that says nothing of the keys it does not declare gives them `any`, and
            // a merge with `any` is the other operand: `conj` is skipped there (its depth
            // check aside), giving what it gives (a fresh `any` for `any` merged with `any`).
            let (a_open, b_open) = (is_open(a), is_open(b));
            for (i, (name, x)) in a.properties.iter().enumerate() {
                let both = match b.properties.get(name) {
                    Some(y) => self.conj(x, y, pointer)?,
                    None if b_open => {
                        self.enter(pointer)?;
                        self.leave();
                        if x.is_any() {
                            Shape::any()
                        } else {
                            x.clone()
                        }
                    }
                    None => {
                        let y = self.schema_of_undeclared_key(b, name, pointer)?;
                        self.conj(x, &y, pointer)?
                    }
                };
                if let Some((_, merged)) = out.properties.get_index_mut(i) {
                    *merged = both;
                }
            }
            for (name, y) in &b.properties {
                if a.properties.contains_key(name) {
                    continue;
                }
                let both = if a_open {
                    self.enter(pointer)?;
                    self.leave();
                    y.clone()
                } else {
                    let x = self.schema_of_undeclared_key(a, name, pointer)?;
                    self.conj(&x, y, pointer)?
                };
                out.properties.insert(name.clone(), both);
            }
            // Undeclared keys: each side applies its patterns, and its additional schema
            // to keys none of them matches.
            let (a_patterns, b_patterns) = (
                !a.pattern_properties.is_empty(),
                !b.pattern_properties.is_empty(),
            );
            if a_patterns && b_patterns && (a.additional.is_some() || b.additional.is_some()) {
                // Lenient: the patterns are kept, the other side's additional schema is not
                // applied to keys they match.
                self.unsupported(
                    pointer,
                    "patternProperties",
                    "merging patternProperties and additionalProperties from several subschemas",
                )?;
            }
            for (patterned, other) in [(a, b), (b, a)] {
                for (pattern, shape) in &patterned.pattern_properties {
                    let shape = match (&other.additional, other.pattern_properties.is_empty()) {
                        (Some(additional), true) => self.conj(shape, additional, pointer)?,
                        _ => shape.clone(),
                    };
                    out.pattern_properties.push((pattern.clone(), shape));
                }
            }
            out.additional = match (&a.additional, &b.additional) {
                (None, None) => None,
                (Some(x), None) | (None, Some(x)) => Some(x.clone()),
                (Some(x), Some(y)) => Some(Box::new(self.conj(x, y, pointer)?)),
            };
        }
        out.required = a.required.clone();
        for name in &b.required {
            if !out.required.contains(name) {
                out.required.push(name.clone());
            }
        }
        out.property_names = match (&a.property_names, &b.property_names) {
            (None, None) => None,
            (Some(x), None) | (None, Some(x)) => Some(x.clone()),
            (Some(x), Some(y)) => Some(Box::new(self.conj(x, y, pointer)?)),
        };
        out.min_properties = a.min_properties.max(b.min_properties);
        out.max_properties = min_option(a.max_properties, b.max_properties);
        if !a.silent.is_empty() || !b.silent.is_empty() {
            let mut silent = Vec::new();
            for name in out.properties.keys() {
                if !self.evaluates(a, name) && !self.evaluates(b, name) {
                    silent.push(name.to_string());
                }
            }
            out.silent.extend(silent);
        }
        Ok(out)
    }

    /// Whether a successful match of `object` evaluates key `name` (an annotation that
    /// `unevaluatedProperties` reads): a declared, matched or additional key.
    fn evaluates(&mut self, object: &ObjectC, name: &str) -> bool {
        if object.properties.contains_key(name) {
            return !object.silent.iter().any(|silent| silent == name);
        }
        if object.additional.is_some() {
            return true;
        }
        let patterns: Vec<String> = object
            .pattern_properties
            .iter()
            .map(|(pattern, _)| pattern.clone())
            .collect();
        patterns.iter().any(|pattern| {
            // A pattern that cannot be built was reported where it was merged.
            self.text_dfa(pattern, false)
                .is_ok_and(|dfa| dfa.accepts(name))
        })
    }

    /// The schema `object` applies to the value of key `name`: its declared schema, else
    /// the schemas of the patterns it matches, else the additional schema.
    fn schema_of_key(
        &mut self,
        object: &ObjectC,
        name: &str,
        pointer: &JsonPointer,
    ) -> Result<Shape, Error> {
        if let Some(shape) = object.properties.get(name) {
            return Ok(shape.clone());
        }
        self.schema_of_undeclared_key(object, name, pointer)
    }

    /// [`Normalizer::schema_of_key`] for a key `object` does not declare.
    fn schema_of_undeclared_key(
        &mut self,
        object: &ObjectC,
        name: &str,
        pointer: &JsonPointer,
    ) -> Result<Shape, Error> {
        let mut matched: Option<Shape> = None;
        for (pattern, shape) in &object.pattern_properties {
            let dfa = match self.text_dfa(pattern, false) {
                Ok(dfa) => dfa,
                Err(err) => {
                    return Err(Error::new(
                        ErrorKind::Unsupported {
                            keyword: "patternProperties".to_owned(),
                            message: err.message,
                        },
                        pointer.clone(),
                    ))
                }
            };
            if dfa.accepts(name) {
                matched = Some(match matched {
                    None => shape.clone(),
                    Some(acc) => self.conj(&acc, shape, pointer)?,
                });
            }
        }
        Ok(matched.unwrap_or_else(|| additional_of(object)))
    }

    fn merge_arrays(
        &mut self,
        a: &ArrayC,
        b: &ArrayC,
        pointer: &JsonPointer,
    ) -> Result<ArrayC, Error> {
        let mut out = ArrayC::default();
        let n = a.prefix.len().max(b.prefix.len());
        for i in 0..n {
            let x = a.prefix.get(i).cloned().unwrap_or_else(|| items_of(a));
            let y = b.prefix.get(i).cloned().unwrap_or_else(|| items_of(b));
            out.prefix.push(self.conj(&x, &y, pointer)?);
        }
        out.items = match (&a.items, &b.items) {
            (None, None) => None,
            (Some(x), None) | (None, Some(x)) => Some(x.clone()),
            (Some(x), Some(y)) => Some(Box::new(self.conj(x, y, pointer)?)),
        };
        out.min_items = a.min_items.max(b.min_items);
        out.max_items = min_option(a.max_items, b.max_items);
        out.contains = a
            .contains
            .iter()
            .chain(b.contains.iter())
            .cloned()
            .collect();
        out.unique = a.unique || b.unique;
        Ok(out)
    }

    /// Drops the types whose constraints no value can meet, filters `values`, and turns an
    /// empty leaf into `Never`.
    pub fn simplify(&mut self, mut leaf: Leaf) -> Result<Shape, Error> {
        use types::*;
        let s = &leaf.string;
        if s.max_length.is_some_and(|max| max < s.min_length) {
            leaf.types &= !STRING;
        }
        if let (Some(min), Some(max)) = (&leaf.number.minimum, &leaf.number.maximum) {
            let order = decimal::compare(&min.value, &max.value);
            if order == std::cmp::Ordering::Greater
                || (order == std::cmp::Ordering::Equal && (min.exclusive || max.exclusive))
            {
                leaf.types &= !NUMBER;
            }
        }
        if leaf.types & OBJECT != 0 {
            let o = &mut leaf.object;
            let mut impossible = o.max_properties.is_some_and(|max| max < o.min_properties);
            for name in &o.required {
                let shape = match o.properties.get(name.as_str()) {
                    Some(shape) => Some(shape),
                    None if o.pattern_properties.is_empty() => o.additional.as_deref(),
                    None => None,
                };
                if shape.is_some_and(Shape::is_never) {
                    impossible = true;
                }
            }
            if o.max_properties
                .is_some_and(|max| (o.required.len() as u64) > max)
            {
                impossible = true;
            }
            if impossible {
                leaf.types &= !OBJECT;
            }
        }
        if leaf.types & ARRAY != 0 {
            let a = &mut leaf.array;
            if let Some(i) = a.prefix.iter().position(Shape::is_never) {
                a.max_items = min_option(a.max_items, Some(i as u64));
                a.prefix.truncate(i);
            }
            if a.items.as_deref().is_some_and(Shape::is_never) {
                a.max_items = min_option(a.max_items, Some(a.prefix.len() as u64));
            }
            if a.max_items.is_some_and(|max| max < a.min_items) {
                leaf.types &= !ARRAY;
            }
        }
        if let Some(mut kept) = leaf.values.take() {
            // Whether every kept string is known to meet the string constraints.
            let mut strings_checked = true;
            // Checked here through a hash set, once: the leaf keeps no exclusions (below).
            let not_values = std::mem::take(&mut leaf.not_values);
            let excluded = value_key::key_set(&not_values);
            // In place: enums of hundreds of values (ruff's rule codes) are common.
            kept.retain(|value| {
                if !excluded.is_empty() && excluded.contains(&ValueKey::of(value)) {
                    return false;
                }
                match self.admits_leaf(&leaf, value, 0) {
                    Some(false) => false,
                    verdict => {
                        strings_checked &= verdict.is_some() || !value.is_string();
                        true
                    }
                }
            });
            if kept.is_empty() {
                return Ok(Shape::Never);
            }
            leaf.values = Some(kept);
            if strings_checked {
                // Likewise the string constraints (a long pattern is otherwise copied
                // at every merge).
                leaf.string = StringC::default();
            }
            // The kept values are none of the excluded ones, so the exclusions say nothing
            // more: dropping them keeps leaves small when a discriminator is excluded again
            // at every step of a long `if`/`then` chain (and `not` of such a leaf becomes
            // expressible).
        }
        if leaf.types == 0 {
            return Ok(Shape::Never);
        }
        Ok(Shape::Leaf(Rc::new(leaf)))
    }

    /// The negation of `shape`, when it is expressible.
    pub fn negate(&mut self, shape: &Shape) -> Result<Option<Shape>, Error> {
        // Negation follows references, so recursive schemas need the depth check; past it
        // the negation counts as not expressible.
        self.negate_steps += 1;
        if self.depth >= MAX_DEPTH || self.negate_steps > MAX_NEGATE_STEPS {
            return Ok(None);
        }
        self.depth += 1;
        let res = self.negate_inner(shape);
        self.depth -= 1;
        res
    }

    fn negate_inner(&mut self, shape: &Shape) -> Result<Option<Shape>, Error> {
        match shape {
            Shape::Never => Ok(Some(Shape::any())),
            Shape::Ref(id) => match self.defs[*id].shape.clone() {
                Some(target) => self.negate(&target),
                // Still being normalised (recursion): not expressible here.
                None => Ok(None),
            },
            Shape::Union(items) => {
                let mut acc = Shape::any();
                for item in items {
                    let Some(negated) = self.negate(item)? else {
                        return Ok(None);
                    };
                    acc = self.conj(&acc, &negated, &JsonPointer::root())?;
                }
                Ok(Some(acc))
            }
            Shape::Leaf(leaf) => self.negate_leaf(leaf),
        }
    }

    fn negate_leaf(&mut self, leaf: &Leaf) -> Result<Option<Shape>, Error> {
        use types::*;
        let pointer = &leaf.pointer;
        if !leaf.not_values.is_empty() {
            return Ok(None);
        }
        if let Some(values) = &leaf.values {
            if !leaf.is_unconstrained() {
                return Ok(None);
            }
            let excluded: Vec<Value> = values
                .iter()
                .filter(|v| types_admit(leaf.types, v))
                .cloned()
                .collect();
            // Lowering can exclude strings, booleans and null; numbers become the open
            // intervals between them; particular arrays and objects cannot be excluded.
            if excluded.iter().any(|v| v.is_array() || v.is_object()) {
                return Ok(None);
            }
            let mut numbers: Vec<Number> = excluded
                .iter()
                .filter_map(|v| v.as_number().cloned())
                .collect();
            // Each excluded number splits the number line once more; past the cap on
            // alternatives the negation counts as not expressible (the union would be
            // refused anyway, after conjunctions with every interval).
            if numbers.len() >= MAX_BRANCHES {
                return Ok(None);
            }
            let mut negated = Leaf::any(pointer.clone());
            negated.not_values = excluded.into_iter().filter(|v| !v.is_number()).collect();
            if numbers.is_empty() {
                return Ok(Some(Shape::Leaf(Rc::new(negated))));
            }
            negated.types &= !NUMBER;
            numbers.sort_by(decimal::compare);
            let mut branches = vec![Shape::Leaf(Rc::new(negated))];
            let mut below: Option<Number> = None;
            for number in numbers {
                let mut interval = Leaf::any(pointer.clone());
                interval.types = NUMBER;
                interval.number.minimum = below.take().map(|value| Bound {
                    value,
                    exclusive: true,
                });
                interval.number.maximum = Some(Bound {
                    value: number.clone(),
                    exclusive: true,
                });
                branches.push(self.simplify(interval)?);
                below = Some(number);
            }
            let mut above = Leaf::any(pointer.clone());
            above.types = NUMBER;
            above.number.minimum = below.map(|value| Bound {
                value,
                exclusive: true,
            });
            branches.push(Shape::Leaf(Rc::new(above)));
            return Ok(Some(Shape::union(branches)));
        }
        // Values of a type outside `types`, or of a type inside it that break its constraints.
        let mut branches = Vec::new();
        let mut outside = ALL & !leaf.types;
        if leaf.types & NUMBER == INTEGER {
            // "Not an integer" is no type set: it is the numbers that are no multiple of 1.
            outside &= !NUMBER;
            let mut fractional = Leaf::any(pointer.clone());
            fractional.types = NUMBER;
            fractional
                .number
                .not_multiple_of
                .push((Number::from(1u8), pointer.join("type")));
            branches.push(Shape::Leaf(Rc::new(fractional)));
        }
        if outside != 0 {
            branches.push(Shape::of_types(outside, pointer));
        }
        if leaf.types & STRING != 0 && !leaf.string_trivial() {
            let s = &leaf.string;
            // A string escapes by any one constraint: a pattern it does not match, a format
            // it does not have, a pattern or format it must not have but has, its length.
            let string_leaf = |f: &mut dyn FnMut(&mut StringC)| {
                let mut one = Leaf::any(pointer.clone());
                one.types = STRING;
                f(&mut one.string);
                Shape::Leaf(Rc::new(one))
            };
            for entry in &s.patterns {
                branches.push(string_leaf(&mut |c| c.not_patterns.push(entry.clone())));
            }
            for entry in &s.formats {
                // An unknown format is an annotation: nothing to escape.
                if crate::formats::is_known_format(&entry.0) {
                    branches.push(string_leaf(&mut |c| c.not_formats.push(entry.clone())));
                }
            }
            for entry in &s.not_patterns {
                branches.push(string_leaf(&mut |c| c.patterns.push(entry.clone())));
            }
            for entry in &s.not_formats {
                branches.push(string_leaf(&mut |c| c.formats.push(entry.clone())));
            }
            if s.min_length > 0 {
                let mut short = Leaf::any(pointer.clone());
                short.types = STRING;
                short.string.max_length = Some(s.min_length - 1);
                branches.push(Shape::Leaf(Rc::new(short)));
            }
            if let Some(max) = s.max_length {
                let mut long = Leaf::any(pointer.clone());
                long.types = STRING;
                long.string.min_length = max + 1;
                branches.push(Shape::Leaf(Rc::new(long)));
            }
        }
        if leaf.types & NUMBER != 0 && !leaf.number_trivial() {
            let n = &leaf.number;
            let number_types = leaf.types & NUMBER;
            // Not a multiple of one of them, or a multiple of one it must not be.
            for (divisor, at) in &n.multiple_of {
                let mut other = Leaf::any(pointer.clone());
                other.types = number_types;
                other
                    .number
                    .not_multiple_of
                    .push((divisor.clone(), at.clone()));
                branches.push(Shape::Leaf(Rc::new(other)));
            }
            for (divisor, at) in &n.not_multiple_of {
                let mut multiple = Leaf::any(pointer.clone());
                multiple.types = number_types;
                multiple
                    .number
                    .multiple_of
                    .push((divisor.clone(), at.clone()));
                branches.push(Shape::Leaf(Rc::new(multiple)));
            }
            if let Some(min) = &n.minimum {
                let mut below = Leaf::any(pointer.clone());
                below.types = number_types;
                below.number.maximum = Some(Bound {
                    value: min.value.clone(),
                    exclusive: !min.exclusive,
                });
                branches.push(Shape::Leaf(Rc::new(below)));
            }
            if let Some(max) = &n.maximum {
                let mut above = Leaf::any(pointer.clone());
                above.types = number_types;
                above.number.minimum = Some(Bound {
                    value: max.value.clone(),
                    exclusive: !max.exclusive,
                });
                branches.push(Shape::Leaf(Rc::new(above)));
            }
        }
        if leaf.types & ARRAY != 0 && !leaf.array_trivial() {
            let a = &leaf.array;
            if !a.prefix.is_empty() || !a.contains.is_empty() || a.unique {
                return Ok(None);
            }
            if a.min_items > 0 {
                let mut short = Leaf::any(pointer.clone());
                short.types = ARRAY;
                short.array.max_items = Some(a.min_items - 1);
                branches.push(Shape::Leaf(Rc::new(short)));
            }
            if let Some(max) = a.max_items {
                let mut long = Leaf::any(pointer.clone());
                long.types = ARRAY;
                long.array.min_items = max + 1;
                branches.push(Shape::Leaf(Rc::new(long)));
            }
            if let Some(items) = &a.items {
                // Some item breaks the item schema: `contains: not items`.
                let Some(bad) = self.negate(items)? else {
                    return Ok(None);
                };
                let mut with_bad = Leaf::any(pointer.clone());
                with_bad.types = ARRAY;
                with_bad.array.contains.push(Contains {
                    shape: bad,
                    min: 1,
                    max: None,
                    pointer: pointer.clone(),
                    silent: true,
                });
                branches.push(Shape::Leaf(Rc::new(with_bad)));
            }
        }
        if leaf.types & OBJECT != 0 && !leaf.object_trivial() {
            let o = &leaf.object;
            if !o.pattern_properties.is_empty()
                || o.additional.as_deref().is_some_and(|extra| !extra.is_any())
                || o.property_names.is_some()
            {
                return Ok(None);
            }
            if o.min_properties > 0 {
                let mut few = Leaf::any(pointer.clone());
                few.types = OBJECT;
                few.object.max_properties = Some(o.min_properties - 1);
                branches.push(Shape::Leaf(Rc::new(few)));
            }
            if let Some(max) = o.max_properties {
                let mut many = Leaf::any(pointer.clone());
                many.types = OBJECT;
                many.object.min_properties = max + 1;
                branches.push(Shape::Leaf(Rc::new(many)));
            }
            for name in &o.required {
                let mut missing = Leaf::any(pointer.clone());
                missing.types = OBJECT;
                missing
                    .object
                    .properties
                    .insert(Rc::from(name.as_str()), Shape::Never);
                missing.object.silent.push(name.clone());
                branches.push(Shape::Leaf(Rc::new(missing)));
            }
            for (name, shape) in &o.properties {
                let Some(bad) = self.negate(shape)? else {
                    return Ok(None);
                };
                if bad.is_never() {
                    continue;
                }
                let mut wrong = Leaf::any(pointer.clone());
                wrong.types = OBJECT;
                wrong.object.required.push(name.to_string());
                wrong.object.properties.insert(name.clone(), bad);
                wrong.object.silent.push(name.to_string());
                branches.push(self.simplify(wrong)?);
            }
        }
        Ok(Some(Shape::union(branches)))
    }

    /// The automaton of a pattern (or, with `format`, of a known format) written at `site`,
    /// memoised; `None` when it cannot be built.
    fn string_dfa(&mut self, source: &str, site: &JsonPointer, format: bool) -> Option<Rc<Dfa>> {
        self.site_dfa(source, site, format).ok()
    }

    /// [`Normalizer::string_dfa`], with the reason when the automaton cannot be built.
    fn site_dfa(&mut self, source: &str, site: &JsonPointer, format: bool) -> DfaResult {
        let key = site.address().map(|address| (address, format));
        if let Some((_, text, dfa)) = key.and_then(|key| self.dfa_sites.get(&key)) {
            if text == source {
                return dfa.clone();
            }
        }
        let dfa = self.text_dfa(source, format);
        if let Some(key) = key {
            self.dfa_sites
                .insert(key, (site.clone(), source.to_owned(), dfa.clone()));
        }
        dfa
    }

    /// Whether the decoded string `text` matches `pattern`; `None` when the pattern cannot be
    /// compiled. A value is checked against the pattern's automaton when this compilation
    /// built it already, and otherwise by simulating the pattern's NFA, which is far cheaper
    /// than building the automaton for a few values (`pattern::pattern_accepts`).
    fn pattern_accepts(&mut self, pattern: &str, text: &str) -> Option<bool> {
        if let Some(dfa) = self.dfas.get(&(pattern.to_owned(), false)) {
            return dfa.as_ref().ok().map(|dfa| dfa.accepts(text));
        }
        crate::pattern::pattern_accepts(pattern, self.options.dotall, text).ok()
    }

    /// The automaton of a pattern or known format by its text, memoised.
    fn text_dfa(&mut self, source: &str, format: bool) -> DfaResult {
        let key = (source.to_owned(), format);
        if let Some(dfa) = self.dfas.get(&key) {
            return dfa.clone();
        }
        let dfa = if format {
            crate::formats::format_dfa(source).unwrap_or_else(|| {
                Err(LeafError {
                    keyword: "format",
                    kind: crate::strings::LeafErrorKind::Unsupported,
                    message: format!("unknown format {source:?}"),
                    pattern_index: None,
                })
            })
        } else {
            crate::pattern::pattern_dfa(source, self.options.dotall)
        }
        .map(Rc::new);
        self.dfas.insert(key, dfa.clone());
        dfa
    }

    /// Whether `value` satisfies `shape`; `None` when that cannot be decided here
    /// (patterns, formats, `multipleOf` on fractions, …).
    pub fn admits(&mut self, shape: &Shape, value: &Value, depth: usize) -> Option<bool> {
        if depth > MAX_DEPTH {
            return None;
        }
        match shape {
            Shape::Never => Some(false),
            Shape::Ref(id) => {
                let target = self.defs[*id].shape.clone()?;
                self.admits(&target, value, depth + 1)
            }
            Shape::Union(items) => {
                let mut unknown = false;
                for item in items {
                    match self.admits(item, value, depth + 1) {
                        Some(true) => return Some(true),
                        Some(false) => {}
                        None => unknown = true,
                    }
                }
                if unknown {
                    None
                } else {
                    Some(false)
                }
            }
            Shape::Leaf(leaf) => {
                if let Some(values) = &leaf.values {
                    if !values.iter().any(|v| json_equal(v, value)) {
                        return Some(false);
                    }
                }
                self.admits_leaf(leaf, value, depth)
            }
        }
    }

    fn admits_leaf(&mut self, leaf: &Leaf, value: &Value, depth: usize) -> Option<bool> {
        if !types_admit(leaf.types, value) {
            return Some(false);
        }
        if leaf.not_values.iter().any(|v| json_equal(v, value)) {
            return Some(false);
        }
        let mut unknown = false;
        match value {
            Value::String(text) => {
                let s = &leaf.string;
                let length = text.chars().count() as u64;
                if length < s.min_length || s.max_length.is_some_and(|max| length > max) {
                    return Some(false);
                }
                // Each pattern and known format must match, and no excluded one.
                let checks = (s.patterns.iter().map(|(p, site)| (p, site, false, true)))
                    .chain(
                        s.formats
                            .iter()
                            .filter(|(f, _)| crate::formats::is_known_format(f))
                            .map(|(f, site)| (f, site, true, true)),
                    )
                    .chain(
                        s.not_patterns
                            .iter()
                            .map(|(p, site)| (p, site, false, false)),
                    )
                    .chain(s.not_formats.iter().map(|(f, site)| (f, site, true, false)));
                for (source, site, format, wanted) in checks {
                    let matches = if format {
                        self.string_dfa(source, site, true)
                            .map(|dfa| dfa.accepts(text))
                    } else {
                        self.pattern_accepts(source, text)
                    };
                    match matches {
                        Some(matches) if matches != wanted => return Some(false),
                        Some(_) => {}
                        None => unknown = true,
                    }
                }
            }
            Value::Number(number) => {
                let n = &leaf.number;
                if let Some(min) = &n.minimum {
                    let order = decimal::compare(number, &min.value);
                    if order.is_lt() || (order.is_eq() && min.exclusive) {
                        return Some(false);
                    }
                }
                if let Some(max) = &n.maximum {
                    let order = decimal::compare(number, &max.value);
                    if order.is_gt() || (order.is_eq() && max.exclusive) {
                        return Some(false);
                    }
                }
                if !n.multiple_of.is_empty() || !n.not_multiple_of.is_empty() {
                    unknown = true;
                }
            }
            Value::Object(map) => {
                let o = leaf.object.clone();
                for name in &o.required {
                    if !map.contains_key(name) {
                        return Some(false);
                    }
                }
                let count = map.len() as u64;
                if count < o.min_properties || o.max_properties.is_some_and(|max| count > max) {
                    return Some(false);
                }
                if !o.pattern_properties.is_empty() || o.property_names.is_some() {
                    unknown = true;
                }
                for (key, item) in map {
                    let shape = match o.properties.get(key.as_str()) {
                        Some(shape) => shape.clone(),
                        None if !o.pattern_properties.is_empty() => continue,
                        None => match &o.additional {
                            Some(shape) => (**shape).clone(),
                            None if self.options.additional_properties_default => continue,
                            None => Shape::Never,
                        },
                    };
                    match self.admits(&shape, item, depth + 1) {
                        Some(false) => return Some(false),
                        None => unknown = true,
                        Some(true) => {}
                    }
                }
            }
            Value::Array(items) => {
                let a = leaf.array.clone();
                let count = items.len() as u64;
                if count < a.min_items || a.max_items.is_some_and(|max| count > max) {
                    return Some(false);
                }
                for (i, item) in items.iter().enumerate() {
                    let shape = match a.prefix.get(i) {
                        Some(shape) => shape.clone(),
                        None => match &a.items {
                            Some(shape) => (**shape).clone(),
                            None => continue,
                        },
                    };
                    match self.admits(&shape, item, depth + 1) {
                        Some(false) => return Some(false),
                        None => unknown = true,
                        Some(true) => {}
                    }
                }
                if a.unique {
                    for i in 0..items.len() {
                        for j in i + 1..items.len() {
                            if json_equal(&items[i], &items[j]) {
                                return Some(false);
                            }
                        }
                    }
                }
                if !a.contains.is_empty() {
                    unknown = true;
                }
            }
            _ => {}
        }
        if unknown {
            None
        } else {
            Some(true)
        }
    }
}

/// Rejects documents nested so deeply that even copying them would exhaust the stack
/// (cloning and dropping a `Value` recurse); the check itself uses an explicit stack.
fn check_value_depth(root: &Value) -> Result<(), Error> {
    let limit = MAX_DEPTH * 4;
    // Only arrays and objects nest: scalars (most of a schema's values) are never stacked,
    // but a container's children count as one level deeper whatever they are.
    let nests = |value: &Value| matches!(value, Value::Array(_) | Value::Object(_));
    let too_deep = || {
        Err(Error::new(
            ErrorKind::TooDeep { limit: MAX_DEPTH },
            JsonPointer::root(),
        ))
    };
    let mut stack: Vec<(&Value, usize)> = vec![(root, 0)];
    while let Some((value, depth)) = stack.pop() {
        let has_children = match value {
            Value::Array(items) => !items.is_empty(),
            Value::Object(map) => !map.is_empty(),
            _ => false,
        };
        if has_children && depth + 1 > limit {
            return too_deep();
        }
        match value {
            Value::Array(items) => {
                stack.extend(items.iter().filter(|v| nests(v)).map(|v| (v, depth + 1)))
            }
            Value::Object(map) => {
                stack.extend(map.values().filter(|v| nests(v)).map(|v| (v, depth + 1)))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Whether `a` and `b` share no type, or admit only objects and one of them requires a key
/// the other admits no value for (see [`excludes_required`]): told apart before their
/// properties are merged one by one (the merge would end in `Never` too, after merging and
/// checking everything inside). Symmetric.
fn disjoint_leaves(a: &Leaf, b: &Leaf) -> bool {
    if a.types & b.types == 0 {
        return true;
    }
    if let (Some(ours), Some(theirs)) = (&a.values, &b.values) {
        // Two sets of values (a `oneOf` of `const`s): no value in common makes the merge
        // `Never` (`simplify` keeps no value), and without objects or arrays to merge
        // (where merging could warn or make definitions) nothing else happens on the way.
        if plain_values(a) && plain_values(b) && !values_meet(ours, theirs) {
            return true;
        }
    }
    if a.types & b.types != types::OBJECT {
        return false;
    }
    excludes_required(&a.object, &b.object) || excludes_required(&b.object, &a.object)
}

/// Whether two sets of values have a value in common (as [`ValueKey`]s are equal). A few
/// values are compared pair by pair: strings directly, values of different kinds never
/// equal (each kind of value is its own kind of key).
fn values_meet(ours: &[Value], theirs: &[Value]) -> bool {
    if ours.len() * theirs.len() > 64 {
        let theirs = value_key::key_set(theirs);
        return ours.iter().any(|v| theirs.contains(&ValueKey::of(v)));
    }
    ours.iter().any(|u| {
        theirs.iter().any(|v| match (u, v) {
            (Value::String(x), Value::String(y)) => x == y,
            _ if std::mem::discriminant(u) != std::mem::discriminant(v) => false,
            _ => ValueKey::of(u) == ValueKey::of(v),
        })
    })
}

/// Whether merging `leaf` with another leaf merges no object or array constraints (so
/// [`Normalizer::merge_leaves`] has no effect beyond its result).
fn plain_values(leaf: &Leaf) -> bool {
    let (o, a) = (&leaf.object, &leaf.array);
    o.properties.is_empty()
        && o.pattern_properties.is_empty()
        && o.additional.is_none()
        && o.property_names.is_none()
        && o.silent.is_empty()
        && a.prefix.is_empty()
        && a.items.is_none()
        && a.contains.is_empty()
}

/// Whether `b` admits no value for some key that `a` requires: both declare it as sets of
/// values, and the sets are disjoint (a tagged union's branches); or, when neither has
/// `patternProperties` (so the key's merged schema is sure to be `Never` and `simplify`
/// finds the object impossible), `b` declares it as `Never` (an absent dependency trigger)
/// or is closed (`additionalProperties: false`) without declaring it.
fn excludes_required(a: &ObjectC, b: &ObjectC) -> bool {
    let no_patterns = a.pattern_properties.is_empty() && b.pattern_properties.is_empty();
    let b_closed = no_patterns && b.additional.as_deref().is_some_and(Shape::is_never);
    // One lookup per key on `b`'s side, a second only when that is a set of values.
    a.required
        .iter()
        .any(|name| match b.properties.get(name.as_str()) {
            None => b_closed,
            Some(theirs) if no_patterns && theirs.is_never() => true,
            Some(theirs) => {
                let Some(theirs) = value_set(theirs) else {
                    return false;
                };
                let Some(ours) = a.properties.get(name.as_str()).and_then(value_set) else {
                    return false;
                };
                let theirs = value_key::key_set(theirs);
                !ours.iter().any(|v| theirs.contains(&ValueKey::of(v)))
            }
        })
}

/// The values a shape admits when it is an explicit finite set (`enum`/`const` leaves and
/// unions of them).
fn value_set(shape: &Shape) -> Option<Vec<&Value>> {
    match shape {
        Shape::Never => Some(Vec::new()),
        Shape::Leaf(leaf) => leaf.values.as_ref().map(|values| values.iter().collect()),
        Shape::Union(items) => {
            let mut out = Vec::new();
            for item in items {
                match item {
                    Shape::Leaf(leaf) => out.extend(leaf.values.as_ref()?.iter()),
                    _ => return None,
                }
            }
            Some(out)
        }
        Shape::Ref(_) => None,
    }
}

/// Whether `object` leaves the keys it does not declare unconstrained (no
/// `patternProperties`, no `additionalProperties`): [`additional_of`] is `any` for them all.
fn is_open(object: &ObjectC) -> bool {
    object.pattern_properties.is_empty() && object.additional.is_none()
}

/// The schema an object applies to a property it does not declare.
fn additional_of(object: &ObjectC) -> Shape {
    match &object.additional {
        Some(shape) => (**shape).clone(),
        None => Shape::any(),
    }
}

fn items_of(array: &ArrayC) -> Shape {
    match &array.items {
        Some(shape) => (**shape).clone(),
        None => Shape::any(),
    }
}

/// Whether a value's JSON type is in `types`.
pub(crate) fn types_admit(types: u8, value: &Value) -> bool {
    let bit = match value {
        Value::Null => types::NULL,
        Value::Bool(_) => types::BOOLEAN,
        Value::Object(_) => types::OBJECT,
        Value::Array(_) => types::ARRAY,
        Value::String(_) => types::STRING,
        Value::Number(number) => {
            if Decimal::of(number).is_some_and(|d| d.is_integer()) {
                types::INTEGER
            } else {
                types::NUMBER & !types::INTEGER
            }
        }
    };
    types & bit == bit
}

/// JSON Schema equality: numbers compare by value (`1` equals `1.0`).
pub(crate) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => decimal::compare(x, y).is_eq(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

fn intersect_values(current: Option<Vec<Value>>, new: Vec<Value>) -> Vec<Value> {
    let unique = value_key::dedup(new);
    match current {
        None => unique,
        Some(current) => {
            let allowed = value_key::key_set(&current);
            unique
                .into_iter()
                .filter(|v| allowed.contains(&ValueKey::of(v)))
                .collect()
        }
    }
}

/// The type bits of a `type` keyword; `at` makes the keyword's pointer for an error (most
/// schemas have a `type`, and the pointer is only needed when it is wrong).
fn parse_types(arg: &Value, at: impl Fn() -> JsonPointer) -> Result<u8, Error> {
    let one = |name: &str| -> Result<u8, Error> {
        Ok(match name {
            "null" => types::NULL,
            "boolean" => types::BOOLEAN,
            "object" => types::OBJECT,
            "array" => types::ARRAY,
            "string" => types::STRING,
            "integer" => types::INTEGER,
            "number" => types::NUMBER,
            "any" => types::ALL,
            other => return Err(invalid(&at(), "type", format!("unknown type {other:?}"))),
        })
    };
    match arg {
        Value::String(name) => one(name),
        Value::Array(names) => {
            let mut bits = 0;
            for name in names {
                let Some(name) = name.as_str() else {
                    return Err(invalid(
                        &at(),
                        "type",
                        "expected a type name or an array of them",
                    ));
                };
                bits |= one(name)?;
            }
            Ok(bits)
        }
        _ => Err(invalid(
            &at(),
            "type",
            "expected a type name or an array of them",
        )),
    }
}

/// A non-negative integer keyword's value; `at` makes the keyword's pointer for an error.
fn non_negative(arg: &Value, at: impl Fn() -> JsonPointer, keyword: &str) -> Result<u64, Error> {
    if let Some(n) = arg.as_u64() {
        return Ok(n);
    }
    // `2.0` is a valid non-negative integer too.
    if let Some(d) = arg.as_number().and_then(Decimal::of) {
        if d.is_integer() && !d.is_negative() {
            return Ok(arg.as_f64().map_or(u64::MAX, |f| {
                if f >= u64::MAX as f64 {
                    u64::MAX
                } else {
                    f as u64
                }
            }));
        }
    }
    Err(invalid(
        &at(),
        keyword,
        format!("expected a non-negative integer, found {arg}"),
    ))
}

fn schema_array<'v>(
    arg: &'v Value,
    at: &JsonPointer,
    keyword: &str,
) -> Result<&'v Vec<Value>, Error> {
    match arg {
        Value::Array(items) if !items.is_empty() => Ok(items),
        _ => Err(invalid(
            at,
            keyword,
            "expected a non-empty array of schemas",
        )),
    }
}

fn min_option(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

fn tighter_min(a: Option<Bound>, b: Option<Bound>) -> Option<Bound> {
    match (a, b) {
        (Some(x), Some(y)) => match decimal::compare(&x.value, &y.value) {
            std::cmp::Ordering::Greater => Some(x),
            std::cmp::Ordering::Less => Some(y),
            std::cmp::Ordering::Equal => Some(Bound {
                value: x.value,
                exclusive: x.exclusive || y.exclusive,
            }),
        },
        (x, None) => x,
        (None, y) => y,
    }
}

fn tighter_max(a: Option<Bound>, b: Option<Bound>) -> Option<Bound> {
    match (a, b) {
        (Some(x), Some(y)) => match decimal::compare(&x.value, &y.value) {
            std::cmp::Ordering::Less => Some(x),
            std::cmp::Ordering::Greater => Some(y),
            std::cmp::Ordering::Equal => Some(Bound {
                value: x.value,
                exclusive: x.exclusive || y.exclusive,
            }),
        },
        (x, None) => x,
        (None, y) => y,
    }
}

pub(crate) fn invalid(at: &JsonPointer, keyword: &str, message: impl Into<String>) -> Error {
    Error::new(
        ErrorKind::Invalid {
            keyword: keyword.to_owned(),
            message: message.into(),
        },
        at.clone(),
    )
}

/// A readable rule name for a reference: its last path segment (`#/$defs/person` → `person`).
fn ref_name(reference: &str) -> String {
    let fragment = reference
        .rsplit_once('#')
        .map_or(
            reference,
            |(uri, fragment)| if fragment.is_empty() { uri } else { fragment },
        );
    let last = fragment
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or("");
    let last = last.trim_end_matches(".json");
    if last.is_empty() {
        "ref".to_owned()
    } else {
        last.to_owned()
    }
}

#[cfg(test)]
mod tests;
