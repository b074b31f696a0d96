//! The arena compiled for the runtime: one small `Copy` op per node, children and literal
//! bytes in flat arrays, parsers that only matter to the grammar (schema, gbnf, ac) looked
//! through, and per node the bytes it can start with. The interpreter's hot loop reads only
//! this.

use crate::first::ByteSet;
use crate::node::{Node, NodeId};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Seq {
        from: u32,
        len: u32,
    },
    Choice {
        from: u32,
        len: u32,
    },
    /// `max == u32::MAX` is unbounded.
    Repeat {
        child: NodeId,
        min: u32,
        max: u32,
    },
    Peek(NodeId),
    Not(NodeId),
    Atomic(NodeId),
    /// A `rule` or `tag`: parses like the child and makes an AST node.
    Node(NodeId),
    /// A parser that parses like its child (schema, gbnf, ac).
    Pass(NodeId),
    Eps,
    Start,
    End,
    Any,
    Space,
    Literal {
        from: u32,
        len: u32,
    },
    /// Data in the arena node.
    Chars,
    StringContent(u8),
    /// Data in the arena's scanner table.
    Until,
    /// A reference that `build` left unresolved (never in a child slot).
    Fail,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Program {
    pub(crate) ops: Vec<Op>,
    /// Children of sequences and choices, with pass-through parsers looked through.
    pub(crate) kids: Vec<NodeId>,
    /// Literal bytes.
    pub(crate) bytes: Vec<u8>,
    /// Per node: the bytes at which it might not fail at once (every byte if nullable).
    pub(crate) viable: Vec<ByteSet>,
    pub(crate) root: NodeId,
    /// Whether any node is a positive lookahead (the only parser that changes the end of a
    /// `NeedMore` on its way up).
    pub(crate) has_peek: bool,
}

impl Program {
    pub(crate) fn compile(
        nodes: &[Node],
        root: NodeId,
        nullable: &[bool],
        first: &[ByteSet],
    ) -> Program {
        // Pass-through chains are acyclic: `build` rejected cycles that consume nothing.
        let target = |mut id: NodeId| -> NodeId {
            for _ in 0..nodes.len() {
                match &nodes[id.index()] {
                    Node::Schema { child, .. }
                    | Node::Gbnf { child, .. }
                    | Node::Ac { child, .. } => id = *child,
                    _ => break,
                }
            }
            id
        };
        let mut prog = Program {
            root: target(root),
            ..Program::default()
        };
        for node in nodes {
            let op = match node {
                Node::Eps => Op::Eps,
                Node::Start => Op::Start,
                Node::End => Op::End,
                Node::Any => Op::Any,
                Node::Space => Op::Space,
                Node::Literal(text) => {
                    let from = prog.bytes.len() as u32;
                    prog.bytes.extend_from_slice(text.as_bytes());
                    Op::Literal {
                        from,
                        len: text.len() as u32,
                    }
                }
                Node::Seq(children) | Node::Choice(children) => {
                    let from = prog.kids.len() as u32;
                    prog.kids
                        .extend(children.iter().map(|&child| target(child)));
                    let len = children.len() as u32;
                    if matches!(node, Node::Seq(_)) {
                        Op::Seq { from, len }
                    } else {
                        Op::Choice { from, len }
                    }
                }
                Node::Repeat { child, min, max } => Op::Repeat {
                    child: target(*child),
                    min: *min,
                    max: max.unwrap_or(u32::MAX),
                },
                Node::Peek(child) => Op::Peek(target(*child)),
                Node::Not(child) => Op::Not(target(*child)),
                Node::Atomic(child) => Op::Atomic(target(*child)),
                Node::Rule { child, .. } | Node::Tag { child, .. } => Op::Node(target(*child)),
                Node::Schema { child, .. } | Node::Gbnf { child, .. } | Node::Ac { child, .. } => {
                    Op::Pass(target(*child))
                }
                Node::Chars(_) => Op::Chars,
                Node::StringContent { delimiter } => Op::StringContent(*delimiter as u8),
                Node::Until { .. } => Op::Until,
                Node::Ref { .. } => Op::Fail,
            };
            prog.ops.push(op);
        }
        prog.has_peek = prog.ops.iter().any(|op| matches!(op, Op::Peek(_)));
        prog.viable = (0..nodes.len())
            .map(|idx| {
                if nullable[idx] {
                    ByteSet::ALL
                } else {
                    first[idx]
                }
            })
            .collect();
        prog
    }
}
