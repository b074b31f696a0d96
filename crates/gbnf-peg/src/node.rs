//! The arena of parser nodes: the value that `Builder::build` produces, that the runtime
//! interprets, that `lower` turns into GBNF and that serialises to JSON.

use indexmap::IndexMap;

use crate::class::CharSet;

/// The index of a node in an [`Arena`] (or in the [`crate::Builder`] that makes it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The position of the node in [`Arena::nodes`].
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One parser. Children are other nodes of the same arena.
///
/// Semantics follow llama.cpp's `common_peg_*` parsers (see the crate documentation).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Node {
    /// Matches nothing and succeeds.
    Eps,
    /// Succeeds only at offset 0.
    Start,
    /// Succeeds only at the end of input.
    End,
    /// Matches these bytes exactly.
    Literal(String),
    /// Every child in order.
    Seq(Vec<NodeId>),
    /// The first child that does not fail (ordered choice).
    Choice(Vec<NodeId>),
    /// `child` between `min` and `max` times (`None` = unbounded), greedily.
    Repeat {
        child: NodeId,
        min: u32,
        max: Option<u32>,
    },
    /// Positive lookahead (`&p`): the child's outcome, consuming nothing.
    Peek(NodeId),
    /// Negative lookahead (`!p`).
    Not(NodeId),
    /// One UTF-8 code point.
    Any,
    /// Zero or more ASCII white-space bytes (C `isspace`).
    Space,
    /// Code points of a class, between `min` and `max` of them.
    Chars(Chars),
    /// The body of a JSON-like string up to (not including) the unescaped `delimiter`.
    StringContent { delimiter: char },
    /// Everything up to (not including) the first of the delimiters; with no delimiters,
    /// everything (`rest`).
    Until { delimiters: Vec<String> },
    /// Parses like `child`; lowers to the JSON schema (unless it delegates).
    Schema {
        child: NodeId,
        name: String,
        schema: serde_json::Value,
        raw: bool,
    },
    /// A named rule: parses like `child` and makes an AST node named `name`.
    Rule {
        name: String,
        child: NodeId,
        trigger: bool,
    },
    /// A reference to a rule by name. After `build`, no child slot or root points at a `Ref`:
    /// they point at the `Rule` node itself.
    Ref { name: String },
    /// Parses like `child`, but drops the AST nodes under it when it needs more input.
    Atomic(NodeId),
    /// Parses like `child` and makes an AST node carrying `tag`.
    Tag { tag: String, child: NodeId },
    /// Parses like `child`; lowers to `grammar` verbatim.
    Gbnf { child: NodeId, grammar: String },
    /// Parses like `child`; lowers to "everything up to and including the first delimiter".
    Ac {
        child: NodeId,
        delimiters: Vec<String>,
    },
}

/// A `chars` parser: the class as written, and the set of code points it denotes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chars {
    /// The class as the user wrote it (llama.cpp lowers it verbatim).
    pub pattern: String,
    pub min: u32,
    pub max: Option<u32>,
    set: CharSet,
}

impl Chars {
    /// Parses `pattern` as notes §1.3 describe (never fails: odd syntax is taken literally).
    pub fn new(pattern: &str, min: u32, max: Option<u32>) -> Chars {
        Chars {
            pattern: pattern.to_owned(),
            min,
            max,
            set: CharSet::parse(pattern),
        }
    }

    /// Whether the class starts with `^`.
    pub fn is_negated(&self) -> bool {
        self.set.negated
    }

    /// The ranges of the class as written (inclusive, before negation, sorted and merged).
    pub fn ranges(&self) -> &[(u32, u32)] {
        &self.set.ranges
    }

    /// Whether code point `cp` belongs to the class (negation applied).
    pub fn contains(&self, cp: u32) -> bool {
        self.set.contains(cp)
    }

    /// The bytes that a run of the class stops at (see `CharSet::stops`).
    pub(crate) fn stops(&self) -> &crate::scan::ScanTable {
        &self.set.stops
    }
}

impl Node {
    /// The children of the node, in order.
    pub fn children(&self) -> &[NodeId] {
        match self {
            Node::Seq(children) | Node::Choice(children) => children,
            Node::Repeat { child, .. }
            | Node::Peek(child)
            | Node::Not(child)
            | Node::Schema { child, .. }
            | Node::Rule { child, .. }
            | Node::Atomic(child)
            | Node::Tag { child, .. }
            | Node::Gbnf { child, .. }
            | Node::Ac { child, .. } => std::slice::from_ref(child),
            _ => &[],
        }
    }

    pub(crate) fn children_mut(&mut self) -> &mut [NodeId] {
        match self {
            Node::Seq(children) | Node::Choice(children) => children,
            Node::Repeat { child, .. }
            | Node::Peek(child)
            | Node::Not(child)
            | Node::Schema { child, .. }
            | Node::Rule { child, .. }
            | Node::Atomic(child)
            | Node::Tag { child, .. }
            | Node::Gbnf { child, .. }
            | Node::Ac { child, .. } => std::slice::from_mut(child),
            _ => &mut [],
        }
    }
}

/// A built, checked set of parsers.
///
/// Invariants (established by `Builder::build` and `Arena::from_json`):
/// - every child id and the root are valid indices;
/// - no child slot and not the root points at a [`Node::Ref`]; every `Ref` names a rule;
/// - every entry of `rules` points at a [`Node::Rule`] with that name;
/// - no rule can reach itself without consuming input (no left recursion).
#[derive(Clone, Debug, PartialEq)]
pub struct Arena {
    pub(crate) nodes: Vec<Node>,
    pub(crate) rules: IndexMap<String, NodeId>,
    pub(crate) root: NodeId,
    /// Per node: the compiled scanner of `Until` nodes (empty for other nodes).
    pub(crate) scanners: Vec<Option<crate::scan::UntilScanner>>,
    /// Per node: whether it can succeed without consuming input.
    pub(crate) nullable: Vec<bool>,
    /// Per node: the bytes its first consumed byte can be.
    pub(crate) first: Vec<crate::first::ByteSet>,
    /// The runtime's compiled form.
    pub(crate) prog: crate::prog::Program,
}

impl Arena {
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    /// Rule name → its `Rule` node, in order of definition.
    pub fn rules(&self) -> &IndexMap<String, NodeId> {
        &self.rules
    }

    /// The `Rule` node named `name`.
    pub fn rule(&self, name: &str) -> Option<NodeId> {
        self.rules.get(name).copied()
    }

    pub fn root(&self) -> NodeId {
        self.root
    }

    /// The node ids in `0..len`.
    pub fn ids(&self) -> impl Iterator<Item = NodeId> {
        (0..self.nodes.len() as u32).map(NodeId)
    }

    /// A copy whose runtime parses JSON values node by node instead of with the byte-level
    /// scanner, and runs of literals and white space leaf by leaf instead of as one chain.
    /// Results are identical; tests compare the two.
    #[doc(hidden)]
    pub fn without_json_fast_path(&self) -> Arena {
        Arena {
            prog: self.prog.without_json(&self.nodes),
            ..self.clone()
        }
    }

    /// How many JSON value sub-graphs the runtime scans byte by byte.
    #[doc(hidden)]
    pub fn json_fast_paths(&self) -> usize {
        self.prog.shapes.len()
    }
}
