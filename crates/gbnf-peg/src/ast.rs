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
    /// A range of `Ast::child_ids`, or with [`LIVE`] set in its start, of `Ast::live`.
    children: (u32, u32),
}

/// Marks a child range that lies in `Ast::live` (see there).
const LIVE: u32 = 1 << 31;

/// The nodes of one parse. Nodes of abandoned alternatives may stay in `nodes` (until the
/// parser drops them, see `Machine::drop_dead_nodes`) but are not reachable from `roots`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ast {
    pub(crate) nodes: Vec<AstNode>,
    /// The child lists of complete nodes (and of short partial ones), each appended when its
    /// node is made.
    pub(crate) child_ids: Vec<AstId>,
    /// The parser's stack of pending children: the nodes made by finished children of the
    /// open parsers, in order. The partial nodes of a streamed result take their (long)
    /// child lists straight from it rather than copying them, so that reading the AST after
    /// every token does not cost the length of an open array each time: see
    /// `Machine::cut_partial`.
    pub(crate) live: Vec<AstId>,
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
        if from & LIVE != 0 {
            &self.live[(from & !LIVE) as usize..to as usize]
        } else {
            &self.child_ids[from as usize..to as usize]
        }
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

    /// Empties it, keeping the vectors' memory.
    pub(crate) fn clear(&mut self) {
        self.nodes.clear();
        self.child_ids.clear();
        self.live.clear();
        self.roots.clear();
    }

    /// Keeps the first `len` nodes and the child lists they own (a node's list is appended
    /// when it is made, so the lists are in node order too).
    pub(crate) fn truncate(&mut self, len: usize) {
        // (A node whose list is in `live` owns none of `child_ids`.)
        let ids = self.nodes[..len]
            .iter()
            .rev()
            .find(|node| node.children.0 & LIVE == 0)
            .map_or(0, |node| node.children.1 as usize);
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
        let first = self.child_ids.len() as u32;
        self.child_ids.extend_from_slice(children);
        let children = (first, self.child_ids.len() as u32);
        self.push_node(parser, start, end, is_partial, children)
    }

    /// `push` with the pending children from `base` on (`live[base..]`) as its children.
    #[inline]
    pub(crate) fn push_pending(
        &mut self,
        parser: NodeId,
        start: usize,
        end: usize,
        is_partial: bool,
        base: usize,
    ) -> AstId {
        let pending = (base, self.live.len());
        self.push_from_live(parser, start, end, is_partial, pending, None)
    }

    /// A partial node whose children are `live[from..to]` and then `tail`, copied.
    pub(crate) fn push_copied(
        &mut self,
        parser: NodeId,
        start: usize,
        end: usize,
        range: (usize, usize),
        tail: Option<AstId>,
    ) -> AstId {
        self.push_from_live(parser, start, end, true, range, tail)
    }

    #[inline(always)]
    fn push_from_live(
        &mut self,
        parser: NodeId,
        start: usize,
        end: usize,
        is_partial: bool,
        (from, to): (usize, usize),
        tail: Option<AstId>,
    ) -> AstId {
        let first = self.child_ids.len() as u32;
        self.child_ids.extend_from_slice(&self.live[from..to]);
        self.child_ids.extend(tail);
        let children = (first, self.child_ids.len() as u32);
        self.push_node(parser, start, end, is_partial, children)
    }

    /// A partial node whose children are `live[from..to]`, left there: that part of `live`
    /// must not change while the node is in the AST.
    pub(crate) fn push_live(
        &mut self,
        parser: NodeId,
        start: usize,
        end: usize,
        (from, to): (usize, usize),
    ) -> AstId {
        debug_assert!(from <= to && to <= self.live.len() && (to as u64) < u64::from(LIVE));
        self.push_node(parser, start, end, true, (from as u32 | LIVE, to as u32))
    }

    #[inline]
    fn push_node(
        &mut self,
        parser: NodeId,
        start: usize,
        end: usize,
        is_partial: bool,
        children: (u32, u32),
    ) -> AstId {
        // (2³¹ child ids are 8 GiB: memory runs out long before the flag is reached.)
        debug_assert!(self.child_ids.len() < LIVE as usize);
        let id = AstId(self.nodes.len() as u32);
        self.nodes.push(AstNode {
            parser,
            start,
            end,
            is_partial,
            children,
        });
        id
    }
}
