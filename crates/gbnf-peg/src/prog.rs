//! The arena compiled for the runtime: one small `Copy` op per node, children and literal
//! bytes in flat arrays, parsers that only matter to the grammar (schema, gbnf, ac) looked
//! through, and per node the bytes it can start with. The interpreter's hot loop reads only
//! this. Sub-graphs shaped exactly like the builder's `json()` family are recognised here
//! (by structure, not by rule name) and their value rule compiled to [`Op::Json`], which the
//! runtime runs with a byte-level scanner (`runtime/json.rs`). Runs of two or more literals
//! and white space in a sequence (`"<tool_call>" ws "{" ws "\"name\"" ws ":" ws "\""`) are
//! compiled to one [`Op::Chain`] leaf, which a stream can suspend and resume at any byte of
//! it, and extend without running the machine (see `runtime.rs`).

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
    /// A `Node` recognised as a JSON value (index into [`Program::shapes`]): the runtime
    /// scans it byte by byte and makes exactly the nodes `Node` would.
    Json(u32),
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
    /// Literals and white space in a row (`Program::chain[from..from + len]`), parsed
    /// exactly as the sequence of those leaves would be. Its id is past the arena's nodes.
    Chain {
        from: u32,
        len: u32,
    },
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
    /// Whether any node is `start` (the only parser whose result depends on where it runs,
    /// not only on the input from there and on the end of input).
    pub(crate) has_start: bool,
    /// The recognised JSON value sub-graphs.
    pub(crate) shapes: Vec<JsonShape>,
    /// The items of every [`Op::Chain`].
    pub(crate) chain: Vec<ChainItem>,
    /// The same items as one string of bytes, for the stream's follow check: a literal's
    /// bytes, and [`FLAT_SPACE`] for white space, so that following a chain is one loop over
    /// bytes, with no state but an index, whatever its items.
    pub(crate) flat: Vec<u8>,
    /// Per item of `chain`, and one past the last: where it starts in `flat`.
    pub(crate) flat_at: Vec<u32>,
    /// Per item of `chain` that starts a chain: the index in `flat` after that chain's last
    /// literal byte (a chain stopped at or past it returns at the end of input; before it,
    /// it waits for a byte).
    pub(crate) flat_lit: Vec<u32>,
    /// The sequences that contain chains, with their ops before (for `without_json`).
    pub(crate) unchained: Vec<(NodeId, Op)>,
    /// Per op: what it returns when called at the end of input in partial mode (see
    /// [`AtEnd`]).
    pub(crate) at_end: Vec<AtEnd>,
    /// Per entry of `kids` that is a sequence's child: the [`AtEnd`] of the rest of the
    /// sequence from it (that child and those after it), so that the follow check reads
    /// what a sequence does at the end of input in one load.
    pub(crate) rest_at_end: Vec<AtEnd>,
    /// Per op: the op it parses as once `rule`, `tag`, `atomic` and pass-through wrappers are
    /// looked through (for the follow check, to which they are transparent).
    pub(crate) inner: Vec<NodeId>,
}

/// What an op returns when a partial run calls it at the end of input, where that does not
/// depend on anything but the op (the stream's follow check, `runtime/follow.rs`, reads it
/// for what comes after the leaf it stopped in).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AtEnd {
    /// It matches the empty string there (white space, an optional, an empty literal).
    Success,
    /// It needs a byte (a literal, a class run with a minimum, a JSON value): `NeedMore` at
    /// the end of input, which a partial run passes straight to the root.
    NeedMore,
    /// Anything else (a lookahead, `start`, a recursion this analysis does not follow).
    Unsure,
}

/// White space in `Program::flat`: a byte that UTF-8 never has, so no input byte equals it.
pub(crate) const FLAT_SPACE: u8 = 0xFF;

/// One element of an [`Op::Chain`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChainItem {
    /// `space`: white space, possibly none.
    Space,
    /// A literal: `Program::bytes[from..from + len]`.
    Literal { from: u32, len: u32 },
}

/// The node ids of one JSON value sub-graph, as the builder's `json()` makes it:
///
/// ```text
/// v  = rule(vc)          vc = choice(o, a, s, n, b, l)
/// o  = rule(os)          os = seq("{", space, ob)     ob = choice("}", oi)
/// oi = seq(m.., or, space, "}")   or = repeat(om, 0..)  om = seq(space, ",", space, m..)
/// m.. = key, space, ":", space, v   (a member, flattened into both sequences)
/// a  = rule(as)          as = seq("[", space, ab)     ab = choice("]", ai)
/// ai = seq(v, ar, space, "]")   ar = repeat(am, 0..)  am = seq(space, ",", space, v)
/// s, key = rule(seq("\"", string_content('"'), "\""))
/// n  = rule(seq(repeat("-", 0..=1), choice("0", seq([1-9]{1}, [0-9]{0,})),
///         repeat(seq(".", [0-9]{1,}), 0..=1),
///         repeat(seq([eE]{1}, repeat([+-]{1}, 0..=1), [0-9]{1,}), 0..=1),
///         !([0-9.eE+-]{1})))
/// b  = rule(choice("true", "false"))     l = rule("null")
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct JsonShape {
    pub(crate) v: NodeId,
    pub(crate) vc: NodeId,
    pub(crate) o: NodeId,
    pub(crate) os: NodeId,
    pub(crate) ob: NodeId,
    pub(crate) oi: NodeId,
    pub(crate) or: NodeId,
    pub(crate) om: NodeId,
    pub(crate) key: NodeId,
    pub(crate) a: NodeId,
    pub(crate) as_: NodeId,
    pub(crate) ab: NodeId,
    pub(crate) ai: NodeId,
    pub(crate) ar: NodeId,
    pub(crate) am: NodeId,
    pub(crate) s: NodeId,
    pub(crate) n: NodeId,
    pub(crate) b: NodeId,
    pub(crate) l: NodeId,
}

/// Structural checks over the compiled ops (pass-through parsers already looked through).
struct Matcher<'a> {
    prog: &'a Program,
    nodes: &'a [Node],
}

impl Matcher<'_> {
    fn op(&self, id: NodeId) -> Op {
        self.prog.ops[id.index()]
    }

    fn kids(&self, from: u32, len: u32) -> &[NodeId] {
        &self.prog.kids[from as usize..(from + len) as usize]
    }

    fn seq<const N: usize>(&self, id: NodeId) -> Option<[NodeId; N]> {
        match self.op(id) {
            Op::Seq { from, len } => self.kids(from, len).try_into().ok(),
            _ => None,
        }
    }

    fn choice<const N: usize>(&self, id: NodeId) -> Option<[NodeId; N]> {
        match self.op(id) {
            Op::Choice { from, len } => self.kids(from, len).try_into().ok(),
            _ => None,
        }
    }

    fn node(&self, id: NodeId) -> Option<NodeId> {
        match self.op(id) {
            Op::Node(child) => Some(child),
            _ => None,
        }
    }

    fn literal(&self, id: NodeId, text: &str) -> bool {
        match self.op(id) {
            Op::Literal { from, len } => {
                &self.prog.bytes[from as usize..(from + len) as usize] == text.as_bytes()
            }
            _ => false,
        }
    }

    fn space(&self, id: NodeId) -> bool {
        self.op(id) == Op::Space
    }

    fn repeat(&self, id: NodeId, min: u32, max: u32) -> Option<NodeId> {
        match self.op(id) {
            Op::Repeat {
                child,
                min: lo,
                max: hi,
            } if lo == min && hi == max => Some(child),
            _ => None,
        }
    }

    fn chars(&self, id: NodeId, pattern: &str, min: u32, max: Option<u32>) -> bool {
        let (Op::Chars, Some(Node::Chars(chars))) = (self.op(id), self.nodes.get(id.index()))
        else {
            return false;
        };
        let want = crate::node::Chars::new(pattern, min, max);
        chars.min == min
            && chars.max == max
            && !chars.is_negated()
            && chars.ranges() == want.ranges()
    }

    /// A JSON string rule.
    fn string(&self, id: NodeId) -> bool {
        let Some(Some([open, body, close])) = self.node(id).map(|c| self.seq::<3>(c)) else {
            return false;
        };
        self.literal(open, "\"")
            && self.op(body) == Op::StringContent(b'"')
            && self.literal(close, "\"")
    }

    fn number(&self, id: NodeId) -> bool {
        let check = || -> Option<()> {
            let [minus, int, frac, exp, stop] = self.seq::<5>(self.node(id)?)?;
            self.literal(self.repeat(minus, 0, 1)?, "-").then_some(())?;
            let [zero, nonzero] = self.choice::<2>(int)?;
            self.literal(zero, "0").then_some(())?;
            let [first, rest] = self.seq::<2>(nonzero)?;
            (self.chars(first, "[1-9]", 1, Some(1)) && self.chars(rest, "[0-9]", 0, None))
                .then_some(())?;
            let [dot, digits] = self.seq::<2>(self.repeat(frac, 0, 1)?)?;
            (self.literal(dot, ".") && self.chars(digits, "[0-9]", 1, None)).then_some(())?;
            let [e, sign, digits] = self.seq::<3>(self.repeat(exp, 0, 1)?)?;
            let sign = self.repeat(sign, 0, 1)?;
            (self.chars(e, "[eE]", 1, Some(1))
                && self.chars(sign, "[+-]", 1, Some(1))
                && self.chars(digits, "[0-9]", 1, None))
            .then_some(())?;
            let Op::Not(follow) = self.op(stop) else {
                return None;
            };
            self.chars(follow, "[0-9.eE+-]", 1, Some(1)).then_some(())
        };
        check().is_some()
    }

    /// `open space choice(close, seq(item.., repeat(seq(space, ",", space, item..)), space,
    /// close))` under a rule, where `item..` is the item's sequence flattened in (the
    /// builder flattens nested sequences): (rule body, choice, items seq, repeat, repeat
    /// body, the item's elements).
    #[allow(clippy::type_complexity)]
    fn delimited<const N: usize>(
        &self,
        id: NodeId,
        open: &str,
        close: &str,
    ) -> Option<(NodeId, NodeId, NodeId, NodeId, NodeId, [NodeId; N])> {
        let body = self.node(id)?;
        let [lit_open, ws, choice] = self.seq::<3>(body)?;
        (self.literal(lit_open, open) && self.space(ws)).then_some(())?;
        let [empty, items] = self.choice::<2>(choice)?;
        self.literal(empty, close).then_some(())?;
        let Op::Seq { from, len } = self.op(items) else {
            return None;
        };
        let kids = self.kids(from, len);
        (kids.len() == N + 3).then_some(())?;
        let item: [NodeId; N] = kids[..N].try_into().ok()?;
        let [more, ws3, lit_close] = kids[N..].try_into().ok()?;
        (self.space(ws3) && self.literal(lit_close, close)).then_some(())?;
        let each = self.repeat(more, 0, u32::MAX)?;
        let Op::Seq { from, len } = self.op(each) else {
            return None;
        };
        let kids = self.kids(from, len);
        (kids.len() == N + 3).then_some(())?;
        let [ws1, comma, ws2] = kids[..3].try_into().ok()?;
        (self.space(ws1) && self.literal(comma, ",") && self.space(ws2) && kids[3..] == item)
            .then_some(())?;
        Some((body, choice, items, more, each, item))
    }

    fn shape(&self, v: NodeId) -> Option<JsonShape> {
        let vc = self.node(v)?;
        let [o, a, s, n, b, l] = self.choice::<6>(vc)?;
        let (os, ob, oi, or, om, member) = self.delimited::<5>(o, "{", "}")?;
        let (as_, ab, ai, ar, am, [item]) = self.delimited::<1>(a, "[", "]")?;
        (item == v).then_some(())?;
        let [key, ws1, colon, ws2, value] = member;
        (self.string(key)
            && self.space(ws1)
            && self.literal(colon, ":")
            && self.space(ws2)
            && value == v)
            .then_some(())?;
        (self.string(s) && self.number(n)).then_some(())?;
        let [t, f] = self.choice::<2>(self.node(b)?)?;
        (self.literal(t, "true") && self.literal(f, "false")).then_some(())?;
        self.literal(self.node(l)?, "null").then_some(())?;
        Some(JsonShape {
            v,
            vc,
            o,
            os,
            ob,
            oi,
            or,
            om,
            key,
            a,
            as_,
            ab,
            ai,
            ar,
            am,
            s,
            n,
            b,
            l,
        })
    }
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
        prog.has_start = prog.ops.iter().any(|op| matches!(op, Op::Start));
        let shapes: Vec<JsonShape> = {
            let matcher = Matcher { prog: &prog, nodes };
            (0..nodes.len() as u32)
                .filter_map(|idx| matcher.shape(NodeId(idx)))
                .collect()
        };
        for (idx, shape) in shapes.iter().enumerate() {
            prog.ops[shape.v.index()] = Op::Json(idx as u32);
        }
        prog.viable = (0..nodes.len())
            .map(|idx| {
                if nullable[idx] {
                    ByteSet::ALL
                } else {
                    first[idx]
                }
            })
            .collect();
        prog.compile_chains(&shapes);
        prog.compile_flat();
        prog.shapes = shapes;
        prog.at_end = prog.compute_at_end(nodes);
        prog.compute_follow_tables();
        prog
    }

    /// `rest_at_end` and `inner` (after `at_end`).
    fn compute_follow_tables(&mut self) {
        self.rest_at_end = vec![AtEnd::Unsure; self.kids.len()];
        for op in &self.ops {
            if let Op::Seq { from, len } = *op {
                let mut rest = AtEnd::Success;
                for k in (from..from + len).rev() {
                    let kid = self.kids[k as usize];
                    rest = match self.at_end[kid.index()] {
                        AtEnd::Success => rest,
                        other => other,
                    };
                    self.rest_at_end[k as usize] = rest;
                }
            }
        }
        self.inner = (0..self.ops.len() as u32)
            .map(|idx| {
                let mut id = NodeId(idx);
                // (Wrapper cycles consume nothing, which `build` rejects; bounded anyway.)
                for _ in 0..self.ops.len() {
                    match self.ops[id.index()] {
                        Op::Node(child) | Op::Atomic(child) | Op::Pass(child) => id = child,
                        _ => break,
                    }
                }
                id
            })
            .collect();
    }

    /// [`AtEnd`] for every op, by passes over the ops until nothing changes (children usually
    /// come before their parents, so one or two), at most eight: what is still unknown then
    /// (a recursion, say) is `Unsure`, which is always a safe answer.
    fn compute_at_end(&self, nodes: &[Node]) -> Vec<AtEnd> {
        let mut at_end: Vec<Option<AtEnd>> = vec![None; self.ops.len()];
        for _ in 0..8 {
            let mut changed = false;
            for idx in 0..self.ops.len() {
                if at_end[idx].is_some() {
                    continue;
                }
                let of = |id: NodeId| at_end.get(id.index()).copied().flatten();
                let value = match self.ops[idx] {
                    Op::Eps | Op::Space | Op::End => Some(AtEnd::Success),
                    Op::Literal { len, .. } => Some(if len > 0 {
                        AtEnd::NeedMore
                    } else {
                        AtEnd::Success
                    }),
                    Op::Chain { from, len } => Some(
                        if self.chain[from as usize..(from + len) as usize]
                            .iter()
                            .any(|item| matches!(item, ChainItem::Literal { len, .. } if *len > 0))
                        {
                            AtEnd::NeedMore
                        } else {
                            AtEnd::Success
                        },
                    ),
                    // A run below its minimum, a string body, an `until`, a code point, a JSON
                    // value: each waits for a byte.
                    Op::Any | Op::StringContent(_) | Op::Until | Op::Json(_) => {
                        Some(AtEnd::NeedMore)
                    }
                    Op::Chars => Some(match nodes.get(idx) {
                        Some(Node::Chars(chars)) if chars.min > 0 => AtEnd::NeedMore,
                        Some(Node::Chars(_)) => AtEnd::Success,
                        _ => AtEnd::Unsure,
                    }),
                    Op::Repeat { min, .. } => Some(if min > 0 {
                        AtEnd::NeedMore
                    } else {
                        AtEnd::Success
                    }),
                    Op::Node(child) | Op::Atomic(child) | Op::Pass(child) => of(child),
                    // Every alternative is viable at the end of input: the first one runs.
                    Op::Choice { from, len } if len > 0 => of(self.kids[from as usize]),
                    Op::Seq { from, len } => {
                        let mut value = Some(AtEnd::Success);
                        for &kid in &self.kids[from as usize..(from + len) as usize] {
                            match of(kid) {
                                Some(AtEnd::Success) => {}
                                other => {
                                    value = other;
                                    break;
                                }
                            }
                        }
                        value
                    }
                    _ => Some(AtEnd::Unsure),
                };
                if value.is_some() {
                    at_end[idx] = value;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        at_end
            .into_iter()
            .map(|value| value.unwrap_or(AtEnd::Unsure))
            .collect()
    }

    /// Replaces every run of two or more literals and `space`s in a sequence by one
    /// [`Op::Chain`] (appended after the arena's nodes). The JSON shapes' sequences keep their
    /// children: the scanner rebuilds their frames by child index.
    fn compile_chains(&mut self, shapes: &[JsonShape]) {
        let fixed: Vec<NodeId> = shapes
            .iter()
            .flat_map(|sh| [sh.os, sh.oi, sh.om, sh.as_, sh.ai, sh.am])
            .collect();
        for idx in 0..self.ops.len() {
            let Op::Seq { from, len } = self.ops[idx] else {
                continue;
            };
            let kids = &self.kids[from as usize..(from + len) as usize];
            let chainable =
                |ops: &[Op], id: NodeId| matches!(ops[id.index()], Op::Space | Op::Literal { .. });
            let has_run = kids
                .windows(2)
                .any(|pair| pair.iter().all(|&id| chainable(&self.ops, id)));
            if !has_run || fixed.contains(&NodeId(idx as u32)) {
                continue;
            }
            let kids = kids.to_vec();
            let new_from = self.kids.len() as u32;
            let mut at = 0;
            while at < kids.len() {
                let run = kids[at..]
                    .iter()
                    .take_while(|&&id| chainable(&self.ops, id))
                    .count();
                if run < 2 {
                    self.kids.push(kids[at]);
                    at += 1;
                    continue;
                }
                let chain_from = self.chain.len() as u32;
                let mut first = ByteSet::ALL;
                for (i, &kid) in kids[at..at + run].iter().enumerate() {
                    let item = match self.ops[kid.index()] {
                        Op::Literal { from, len } => ChainItem::Literal { from, len },
                        _ => ChainItem::Space,
                    };
                    if i == 0 {
                        first = self.viable[kid.index()];
                    }
                    self.chain.push(item);
                }
                // What the chain can start with: its first item's bytes, unless that is
                // nullable (white space or an empty literal), then anything.
                let viable = match self.chain[chain_from as usize] {
                    ChainItem::Literal { len, .. } if len > 0 => first,
                    _ => ByteSet::ALL,
                };
                let id = NodeId(self.ops.len() as u32);
                self.ops.push(Op::Chain {
                    from: chain_from,
                    len: run as u32,
                });
                self.viable.push(viable);
                self.kids.push(id);
                at += run;
            }
            let new_len = self.kids.len() as u32 - new_from;
            self.unchained.push((NodeId(idx as u32), self.ops[idx]));
            self.ops[idx] = Op::Seq {
                from: new_from,
                len: new_len,
            };
        }
    }

    /// `flat`, `flat_at` and `flat_lit` from `chain` (after `compile_chains`).
    fn compile_flat(&mut self) {
        for item in &self.chain {
            self.flat_at.push(self.flat.len() as u32);
            match *item {
                ChainItem::Space => self.flat.push(FLAT_SPACE),
                ChainItem::Literal { from, len } => self
                    .flat
                    .extend_from_slice(&self.bytes[from as usize..(from + len) as usize]),
            }
        }
        self.flat_at.push(self.flat.len() as u32);
        self.flat_lit = vec![0; self.chain.len()];
        for op in &self.ops {
            if let Op::Chain { from, len } = *op {
                let start = self.flat_at[from as usize];
                let end = self.flat_at[(from + len) as usize];
                let lit = (start..end)
                    .rev()
                    .find(|&at| self.flat[at as usize] != FLAT_SPACE)
                    .map_or(start, |at| at + 1);
                self.flat_lit[from as usize] = lit;
            }
        }
    }

    /// The same program with every [`Op::Json`] turned back into the plain rule it stands
    /// for (the interpreter then parses JSON node by node), and every sequence with chains
    /// back to its leaves.
    pub(crate) fn without_json(&self, nodes: &[Node]) -> Program {
        let mut prog = self.clone();
        for &(id, op) in &self.unchained {
            prog.ops[id.index()] = op;
        }
        for op in &mut prog.ops {
            if let Op::Json(idx) = *op {
                *op = Op::Node(self.shapes[idx as usize].vc);
            }
        }
        prog.shapes.clear();
        prog.at_end = prog.compute_at_end(nodes);
        prog.compute_follow_tables();
        prog
    }
}

#[cfg(test)]
mod tests {
    use super::AtEnd;
    use crate::node::NodeId;
    use crate::Builder;

    /// What each kind of op returns when a partial run calls it at the end of input, and a
    /// sequence's rest from each of its positions (the follow check reads both).
    #[test]
    fn what_ops_return_at_the_end_of_input() {
        let mut p = Builder::new();
        let space = p.space();
        let empty = p.literal("");
        let brace = p.literal("{");
        let name = p.chars("[a-z]", 1..);
        let maybe = p.chars("[a-z]", 0..);
        let json = p.json();
        let some = p.repeat(brace, 2..);
        let any = p.repeat(brace, 0..);
        let tagged = p.tag("t", name);
        let wrapped = p.atomic(tagged);
        let first = p.choice([space, brace]);
        let ahead = p.peek(brace);
        let start = p.start();
        // A chain (`{` after white space) between a nullable run and a JSON value.
        let seq = p.seq([maybe, space, brace, json]);
        let root = p.seq([seq, wrapped, first, ahead, start, some, any, empty]);
        p.set_root(root);
        let arena = p.build().unwrap_or_else(|err| panic!("{err}"));
        let prog = &arena.prog;
        let at_end = |id: NodeId| prog.at_end[id.index()];
        // A sequence's `rest_at_end` from each of its positions.
        let rest = |id: NodeId| -> Vec<AtEnd> {
            let super::Op::Seq { from, len } = prog.ops[id.index()] else {
                panic!("not a sequence");
            };
            (from..from + len)
                .map(|k| prog.rest_at_end[k as usize])
                .collect()
        };
        for (id, want) in [
            (space, AtEnd::Success),
            (empty, AtEnd::Success),
            (brace, AtEnd::NeedMore),
            (name, AtEnd::NeedMore),
            (maybe, AtEnd::Success),
            (json, AtEnd::NeedMore),
            (some, AtEnd::NeedMore),
            (any, AtEnd::Success),
            (wrapped, AtEnd::NeedMore),
            (first, AtEnd::Success),
            (ahead, AtEnd::Unsure),
            (start, AtEnd::Unsure),
            (seq, AtEnd::NeedMore),
        ] {
            assert_eq!(at_end(id), want, "{id:?}");
        }
        // `seq`'s white space and `{` became one chain.
        assert_eq!(rest(seq), [AtEnd::NeedMore; 3]);
        let super::Op::Seq { from, .. } = prog.ops[seq.index()] else {
            panic!("not a sequence");
        };
        assert!(matches!(
            prog.ops[prog.kids[from as usize + 1].index()],
            super::Op::Chain { .. }
        ));
        // The root's rest (the builder flattened `seq` into it): the first item that needs a
        // byte decides, and the lookahead makes it unsure before it.
        use AtEnd::{NeedMore, Success, Unsure};
        // maybe, chain, json, wrapped, first, ahead, start, some, any, empty
        let want = [
            NeedMore, NeedMore, NeedMore, NeedMore, Unsure, Unsure, Unsure, NeedMore, Success,
            Success,
        ];
        assert_eq!(rest(root), want);
        // Wrappers are looked through.
        assert_eq!(prog.inner[wrapped.index()], name);
    }

    /// A chain's bytes for the follow check: each literal's bytes and a marker for white
    /// space, its items' offsets, and where its last literal byte ends.
    #[test]
    fn chains_are_flattened_to_bytes() {
        let mut p = Builder::new();
        let items = [
            p.literal("<a>"),
            p.space(),
            p.literal("é"),
            p.literal(""),
            p.space(),
            p.literal(":"),
            p.space(),
        ];
        let name = p.chars("[a-z]", 1..);
        let seq = p.seq(items.into_iter().chain([name]));
        p.set_root(seq);
        let arena = p.build().unwrap_or_else(|err| panic!("{err}"));
        let prog = &arena.prog;
        let super::Op::Seq { from, .. } = prog.ops[seq.index()] else {
            panic!("not a sequence");
        };
        let super::Op::Chain { from: items, len } = prog.ops[prog.kids[from as usize].index()]
        else {
            panic!("no chain");
        };
        assert_eq!(len, 7);
        let start = prog.flat_at[items as usize] as usize;
        let end = prog.flat_at[(items + len) as usize] as usize;
        let sp = super::FLAT_SPACE;
        assert_eq!(
            prog.flat[start..end],
            [b'<', b'a', b'>', sp, 0xC3, 0xA9, sp, b':', sp]
        );
        let at: Vec<u32> = (0..=len)
            .map(|i| prog.flat_at[(items + i) as usize] - start as u32)
            .collect();
        assert_eq!(at, [0, 3, 4, 6, 6, 7, 8, 9]);
        assert_eq!(prog.flat_lit[items as usize] as usize - start, 8);
    }
}
