//! The AST a parse produces: one node per `rule` and `tag` that matched (or matched a prefix
//! while streaming), stored flat with children as ranges.

use crate::node::{Arena, Node, NodeId};

/// The index of a node in an [`Ast`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AstId(pub u32);

/// What a `rule` or `tag` parser matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AstNode {
    /// The `Rule` or `Tag` parser that made this node.
    pub parser: NodeId,
    /// Byte span in the input.
    pub start: usize,
    pub end: usize,
    /// The parser needed more input: the span is the prefix seen so far.
    pub is_partial: bool,
    children: (u32, u32),
}

/// The nodes of one parse. Nodes of abandoned alternatives may stay in `nodes` (until the
/// parser drops them, see `Machine::drop_dead_nodes`) but are not reachable from `roots`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ast {
    pub(crate) nodes: Vec<AstNode>,
    pub(crate) child_ids: Vec<AstId>,
    pub(crate) roots: Vec<AstId>,
}

/// Whether a node came from a `rule` or a `tag`, with its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Label<'a> {
    Rule(&'a str),
    Tag(&'a str),
}

impl Ast {
    /// The top-level nodes of the result, in order.
    pub fn roots(&self) -> &[AstId] {
        &self.roots
    }

    pub fn node(&self, id: AstId) -> &AstNode {
        &self.nodes[id.0 as usize]
    }

    pub fn children(&self, id: AstId) -> &[AstId] {
        let (from, to) = self.node(id).children;
        &self.child_ids[from as usize..to as usize]
    }

    /// The rule name or tag of a node.
    pub fn label<'a>(&self, arena: &'a Arena, id: AstId) -> Label<'a> {
        match arena.node(self.node(id).parser) {
            Node::Rule { name, .. } => Label::Rule(name),
            Node::Tag { tag, .. } => Label::Tag(tag),
            _ => Label::Tag(""),
        }
    }

    /// How many nodes the AST stores, reachable from the roots or not: those of failed
    /// alternatives that the parser could not drop yet (a stream keeps the ones made before
    /// its latest snapshot) are counted too.
    pub fn stored_len(&self) -> usize {
        self.nodes.len()
    }

    /// The nodes reachable from the roots, depth-first pre-order (iterative).
    pub fn visit(&self) -> Vec<AstId> {
        let mut out = Vec::new();
        let mut stack: Vec<AstId> = self.roots.iter().rev().copied().collect();
        while let Some(id) = stack.pop() {
            out.push(id);
            stack.extend(self.children(id).iter().rev().copied());
        }
        out
    }

    /// Keeps the first `len` nodes and the child lists they own (a node's list is appended
    /// when it is made, so the lists are in node order too).
    pub(crate) fn truncate(&mut self, len: usize) {
        let ids = match len.checked_sub(1) {
            Some(last) => self.nodes[last].children.1 as usize,
            None => 0,
        };
        self.nodes.truncate(len);
        self.child_ids.truncate(ids);
    }

    pub(crate) fn push(
        &mut self,
        parser: NodeId,
        start: usize,
        end: usize,
        is_partial: bool,
        children: &[AstId],
    ) -> AstId {
        let from = self.child_ids.len() as u32;
        self.child_ids.extend_from_slice(children);
        let id = AstId(self.nodes.len() as u32);
        self.nodes.push(AstNode {
            parser,
            start,
            end,
            is_partial,
            children: (from, self.child_ids.len() as u32),
        });
        id
    }
}
