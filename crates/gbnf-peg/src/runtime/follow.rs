//! The follow check: what the parse result is after the input that arrived since the
//! stream's snapshot, decided without running the machine, where that is certain.
//!
//! A stream's feeds mostly cross the fixed parts of a definition: a tool call's literals,
//! its name, its JSON arguments, the next call. The machine would take a run for each feed
//! that crosses from one part to the next (restore the snapshot, interpret up to the next
//! leaf that meets the end of input, take the snapshot again), and a complete parse takes
//! the same interpreter steps once. This check follows those parts instead, from the
//! snapshot's leaf up through the frames above it: sequences, repetitions, `rule`, `tag`
//! and `atomic` (which only make nodes), and the leaves that decide byte by byte (chains of
//! literals and white space, literals, class runs, white space, `end`, and JSON values,
//! through [`Ahead`]). While every byte continues what the machine would do, the result is
//! `NeedMore` at the end of input (in a partial run a `NeedMore` goes straight to the root),
//! or `Match` where the root would end there. The machine stays at the snapshot, behind the
//! input (`Machine::behind`), until something needs it: the AST, `finish`, or a feed the
//! check is unsure of. That run reads from the snapshot everything the check passed, once,
//! as a complete parse would.
//!
//! The check commits only what does not depend on where the input ends (a literal compared
//! with its bytes, a class run stopped by a byte outside it, a repetition that goes on
//! because its next byte is viable). Where a leaf waits for more (a run reaching the end, a
//! literal cut, a repetition's head at the end) it stops; what happens at the end of input
//! from there is read off, without changing the state, from the frames above and from
//! `Program::at_end`, what each op returns when called at the end of input. So the state is
//! always that of the input checked so far, and the next feed goes on from it.
//!
//! Unsure, the check says so and the machine runs: a choice or a lookahead above the leaf
//! (a choice's alternatives are not followed), a leaf it does not know (`until`, a string
//! body, `any`, `start`), a byte that makes something fail (backtracking is the machine's),
//! a code point cut by the end of input outside a JSON string.

use super::json::{Ahead, AheadStop, Cont, Next};
use super::{is_space, same, viable, Control, Frame};
use crate::node::{Arena, Node, NodeId};
use crate::prog::{AtEnd, Op, FLAT_SPACE};
use crate::scan::{self, Utf8};

/// The check's answer about the input up to the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// A partial run from the snapshot would return `NeedMore` here.
    NeedMore(usize),
    /// The root would match up to the end of input, here.
    Match(usize),
    /// Only the machine can tell.
    Unsure,
}

/// A frame above the current item: what runs after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Up {
    /// A sequence: `kids[from + next]` runs next.
    Seq { from: u32, len: u32, next: u32 },
    /// A repetition of `child` with `count` iterations done, the running one from `iter`.
    Repeat {
        child: NodeId,
        min: u32,
        max: u32,
        count: u32,
        iter: usize,
    },
}

/// Where the check is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Cur {
    /// A chain, followed in `Program::flat`: at index `k` of it, which ends at `end`; its
    /// last literal byte ends at `lit`.
    Chain {
        k: u32,
        end: u32,
        lit: u32,
    },
    /// A literal (`Program::bytes[from..from + len]`) that started at `start`.
    Literal {
        from: u32,
        len: u32,
        start: usize,
    },
    /// A class run with `count` code points taken.
    Chars {
        id: NodeId,
        count: u32,
    },
    Space,
    End,
    /// A JSON value, in `Follow::ahead`.
    Json,
    /// The repetition on top of `up` decides whether to run its child again.
    Head,
    /// The current item returned: the frame on top of `up` goes on.
    #[default]
    Done,
}

/// What the frames above the current item do at the end of input once it returns there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tail {
    NeedMore,
    Match,
    Unsure,
}

impl Tail {
    fn at(self, len: usize) -> Verdict {
        match self {
            Tail::NeedMore => Verdict::NeedMore(len),
            Tail::Match => Verdict::Match(len),
            Tail::Unsure => Verdict::Unsure,
        }
    }
}

/// Why `Cur` stopped consuming: `Park` (it waits for a byte past the end) or a verdict.
enum Step {
    Park,
    Verdict(Verdict),
}

/// The follow check's state for the stream's current snapshot (see the module's comment).
#[derive(Clone, Debug, Default)]
pub(super) struct Follow {
    /// `start` has been called for the current snapshot and did not fail; cleared when a
    /// run takes a new snapshot.
    pub(super) armed: bool,
    /// The check was unsure for the current snapshot: the machine runs instead.
    pub(super) failed: bool,
    /// The input before this offset has been checked.
    pos: usize,
    cur: Cur,
    up: Vec<Up>,
    /// `up` goes down to the root (else below it is a frame the check does not follow).
    rooted: bool,
    /// What the frames in `up` do at the end of input once the current item returns there
    /// (`Follow::tail`), while `up` has not changed.
    tail: Option<Tail>,
    ahead: Ahead,
    /// The snapshot the state was started from (its control, how many frames it had, and
    /// its open JSON containers), while the state is that of the input since then
    /// (`has_state`). A snapshot taken again at the same point (reading the AST runs the
    /// machine to the end of input, which may stop at the same point: inside an open JSON
    /// value, say) goes on from where the check stopped rather than checking the open part
    /// again on every feed. The same control means the same frames: a snapshot is where a
    /// parse of the input first meets its end, and the path there reads only bytes before
    /// it, which later input does not change (the count is compared as well, for the cost of
    /// a comparison).
    has_state: bool,
    origin: Option<(Control, usize)>,
    origin_open: Vec<bool>,
}

/// Structural steps (a call, a frame's return) a check may take a byte checked, plus a
/// constant: a bound on the loop whatever the definition (its steps consume bytes, except
/// descents into a node's first item, which the definition's depth bounds, and returns).
const STEPS_PER_BYTE: usize = 64;

impl Follow {
    /// A run took a new snapshot: `start` again before checking.
    #[inline(always)]
    pub(super) fn new_snapshot(&mut self) {
        self.armed = false;
        self.failed = false;
    }

    /// Starts the check at the snapshot (`control`, with `frames` bottom first and the
    /// scanner's open containers `conts`), or goes on with the check started there. False if
    /// the snapshot's leaf is one the check does not follow.
    pub(super) fn start<'f>(
        &mut self,
        arena: &Arena,
        control: Control,
        frames: impl DoubleEndedIterator<Item = &'f Frame> + Clone,
        conts: &[Cont],
    ) -> bool {
        let prog = &arena.prog;
        let depth = frames.clone().count();
        if self.has_state
            && self.origin == Some((control, depth))
            && conts
                .iter()
                .map(|c| c.obj)
                .eq(self.origin_open.iter().copied())
        {
            self.armed = true;
            return true;
        }
        self.has_state = false;
        self.up.clear();
        self.tail = None;
        self.rooted = true;
        for frame in frames.clone().rev() {
            match prog.ops[frame.node.index()] {
                Op::Seq { from, len } => self.up.push(Up::Seq {
                    from,
                    len,
                    next: frame.index + 1,
                }),
                Op::Repeat { child, min, max } => self.up.push(Up::Repeat {
                    child,
                    min,
                    max,
                    count: frame.index,
                    iter: frame.pos,
                }),
                // They only make nodes (or drop them) on the way up.
                Op::Node(_) | Op::Atomic(_) | Op::Json(_) | Op::Pass(_) => {}
                _ => {
                    self.rooted = false;
                    break;
                }
            }
        }
        self.up.reverse();
        let (cur, pos) = match control {
            Control::Leaf(id, start, state) => match prog.ops[id.index()] {
                // The leaf waits in its item `state.count`, which began at `state.pos` (a
                // literal is compared again from its first byte).
                Op::Chain { from, len } => (chain(prog, from, len, state.count), state.pos),
                Op::Literal { from, len } => (Cur::Literal { from, len, start }, start),
                Op::Chars => (
                    Cur::Chars {
                        id,
                        count: state.count,
                    },
                    state.pos,
                ),
                Op::Space => (Cur::Space, state.pos),
                Op::End => (Cur::End, start),
                _ => return false,
            },
            Control::Json { next, pos, .. } => {
                self.ahead.start(next, pos, conts);
                (Cur::Json, pos)
            }
            // The repetition on top of the frames, at the offset after its last iteration.
            Control::Head => match frames.clone().next_back() {
                Some(frame) if matches!(prog.ops[frame.node.index()], Op::Repeat { .. }) => {
                    (Cur::Head, frame.pos)
                }
                _ => return false,
            },
            _ => return false,
        };
        self.cur = cur;
        self.pos = pos;
        self.origin = Some((control, depth));
        self.origin_open.clear();
        self.origin_open.extend(conts.iter().map(|c| c.obj));
        self.has_state = true;
        self.armed = true;
        true
    }

    /// Checks the input from where the last check stopped: `input` is valid UTF-8 up to
    /// `valid_end`, and the rest (if any) a code point cut by the end of input.
    #[inline]
    pub(super) fn check(&mut self, arena: &Arena, input: &[u8], valid_end: usize) -> Verdict {
        if valid_end == input.len() {
            if let Some(verdict) = self.within(arena, input) {
                return verdict;
            }
        }
        self.check_slow(arena, input, valid_end)
    }

    /// `check` for the commonest feeds, all valid with no code point cut: bytes that go on in
    /// the current item (a JSON value that stays open, a literal that stays cut, a class run
    /// or white space), or that end it and go on in the next items of the same sequence (a
    /// tool call's name after its opening literals). `None`: the general path, from where
    /// this one stopped (a repetition's head, a sequence's end, a code point past ASCII in a
    /// class run).
    ///
    /// It takes the same steps as `consume` for those items, and answers where an item waits
    /// as `at_end` would, without the general path's bookkeeping (the step bound, parking,
    /// the cut code point). One state machine for both, inlined into the quick path, was
    /// measured 7% slower on the bench's call-dense stream (`PERFORMANCE.md`, session 24);
    /// the streaming proptests check both paths against fresh parses.
    #[inline(always)]
    fn within(&mut self, arena: &Arena, input: &[u8]) -> Option<Verdict> {
        let len = input.len();
        let prog = &arena.prog;
        loop {
            let from = self.pos;
            match self.cur {
                Cur::Json => match self.ahead.run(input, len) {
                    AheadStop::Inside => {
                        self.pos = len;
                        return Some(Verdict::NeedMore(len));
                    }
                    AheadStop::Closed(end) => {
                        self.pos = end;
                        self.cur = Cur::Done;
                    }
                    AheadStop::Unsure => return Some(self.fail()),
                },
                Cur::Chain { k, end, lit } => match flat_run(&prog.flat, k, end, input, from) {
                    // A literal cut (or white space before one: it waits for a byte), or
                    // white space at the end of input.
                    FlatStop::End(k) => {
                        self.pos = len;
                        self.cur = Cur::Chain { k, end, lit };
                        return Some(if k < lit {
                            Verdict::NeedMore(len)
                        } else {
                            self.tail(arena, len).at(len)
                        });
                    }
                    FlatStop::Done(end) => {
                        self.pos = end;
                        self.cur = Cur::Done;
                    }
                    FlatStop::Fail => return Some(self.fail()),
                },
                Cur::Chars { id, count } => {
                    let Node::Chars(chars) = &arena.nodes[id.index()] else {
                        return None;
                    };
                    if chars.max.is_some() {
                        return None;
                    }
                    let stops = chars.stops();
                    let run = input[from..len]
                        .iter()
                        .take_while(|&&b| stops.0[b as usize] == scan::ScanTable::ON)
                        .count();
                    let count = count.saturating_add(run as u32);
                    let pos = from + run;
                    self.cur = Cur::Chars { id, count };
                    self.pos = pos;
                    if pos == len {
                        return Some(if count < chars.min {
                            Verdict::NeedMore(len)
                        } else {
                            self.tail(arena, len).at(len)
                        });
                    }
                    // An ASCII byte outside the class ends the run; past ASCII, the general
                    // path decodes.
                    if input[pos] >= 0x80 {
                        return None;
                    }
                    if count < chars.min {
                        return Some(self.fail());
                    }
                    self.cur = Cur::Done;
                }
                Cur::Space => {
                    let run = input[from..len]
                        .iter()
                        .take_while(|&&b| is_space(b))
                        .count();
                    self.pos = from + run;
                    if self.pos == len {
                        return Some(self.tail(arena, len).at(len));
                    }
                    self.cur = Cur::Done;
                }
                // The next item of the sequence on top, if there is one.
                Cur::Done => match self.up.last_mut() {
                    Some(Up::Seq { from, len, next }) if *next < *len => {
                        let kid = prog.kids[(*from + *next) as usize];
                        *next += 1;
                        self.tail = None;
                        match self.enter(prog, kid, self.pos) {
                            Some(cur) => self.cur = cur,
                            None => return Some(self.fail()),
                        }
                    }
                    _ => return None,
                },
                _ => return None,
            }
        }
    }

    /// `within` for a JSON value that stays open (valid input, no code point cut), the
    /// commonest feed of all: the offset of the end of input then (`NeedMore` there), else
    /// `None`, the check left where `check` goes on (after the value, if it closed).
    #[inline(always)]
    pub(super) fn json_within(&mut self, input: &[u8], len: usize) -> Option<usize> {
        if !self.armed || self.cur != Cur::Json {
            return None;
        }
        match self.ahead.run(input, len) {
            AheadStop::Inside => {
                self.pos = len;
                Some(len)
            }
            AheadStop::Closed(end) => {
                self.pos = end;
                self.cur = Cur::Done;
                None
            }
            AheadStop::Unsure => {
                self.fail();
                None
            }
        }
    }

    /// The check was unsure: the machine runs from the snapshot, which it keeps.
    fn fail(&mut self) -> Verdict {
        self.failed = true;
        self.armed = false;
        self.has_state = false;
        Verdict::Unsure
    }

    /// `check` past `within`.
    #[inline(never)]
    fn check_slow(&mut self, arena: &Arena, input: &[u8], valid_end: usize) -> Verdict {
        let verdict = match self.consume(arena, input, valid_end) {
            Step::Verdict(verdict) => verdict,
            Step::Park if self.pos == input.len() => self.at_end(arena, input.len()),
            // A code point cut by the end of input: in a JSON string's body the scanner
            // stops before it with `NeedMore`; elsewhere the machine decides.
            Step::Park => match self.cur {
                Cur::Json if self.pos == valid_end && self.ahead.in_string() => {
                    Verdict::NeedMore(valid_end)
                }
                _ => Verdict::Unsure,
            },
        };
        if verdict == Verdict::Unsure {
            return self.fail();
        }
        verdict
    }

    /// Calls `id` at `pos`: the item it starts with, the sequences and repetitions it opens on
    /// the way pushed (`None`: one the check does not follow).
    #[inline(always)]
    fn enter(&mut self, prog: &crate::prog::Program, mut id: NodeId, pos: usize) -> Option<Cur> {
        // (Each step descends into a first child; the definition's depth bounds them, and
        // `build` rejects a cycle that consumes nothing.)
        for _ in 0..prog.ops.len() {
            id = prog.inner[id.index()];
            return Some(match prog.ops[id.index()] {
                Op::Seq { len: 0, .. } | Op::Eps => Cur::Done,
                Op::Seq { from, len } => {
                    self.up.push(Up::Seq { from, len, next: 1 });
                    id = prog.kids[from as usize];
                    continue;
                }
                Op::Repeat { child, min, max } => {
                    self.up.push(Up::Repeat {
                        child,
                        min,
                        max,
                        count: 0,
                        iter: pos,
                    });
                    Cur::Head
                }
                Op::Chain { from, len } => chain(prog, from, len, 0),
                Op::Literal { from, len } => Cur::Literal {
                    from,
                    len,
                    start: pos,
                },
                Op::Chars => Cur::Chars { id, count: 0 },
                Op::Space => Cur::Space,
                Op::End => Cur::End,
                Op::Json(_) => {
                    self.ahead.start(Next::Value, pos, &[]);
                    Cur::Json
                }
                _ => return None,
            });
        }
        None
    }

    /// Goes through the input as the machine would, committing what does not depend on
    /// where the input ends, up to where the current item waits for a byte past it (`Park`).
    fn consume(&mut self, arena: &Arena, input: &[u8], valid_end: usize) -> Step {
        let prog = &arena.prog;
        let len = input.len();
        let mut pos = self.pos;
        let mut cur = self.cur;
        // (The frames may change.)
        self.tail = None;
        let mut steps = (valid_end - pos.min(valid_end) + 1).saturating_mul(STEPS_PER_BYTE);
        let step = 'check: loop {
            steps -= 1;
            if steps == 0 {
                break Step::Verdict(Verdict::Unsure);
            }
            cur = match cur {
                // The current item returned at `pos`: the frames above go on, up to the next
                // item (or a repetition's head), in one step.
                Cur::Done => loop {
                    match self.up.last_mut() {
                        Some(Up::Seq { from, len, next }) => {
                            if *next < *len {
                                let kid = prog.kids[(*from + *next) as usize];
                                *next += 1;
                                match self.enter(prog, kid, pos) {
                                    Some(cur) => break cur,
                                    None => break 'check Step::Verdict(Verdict::Unsure),
                                }
                            }
                            self.up.pop();
                        }
                        Some(Up::Repeat { count, iter, .. }) => {
                            // An iteration that took nothing ends the loop (and drops its
                            // nodes): the machine's to do.
                            if pos <= *iter {
                                break 'check Step::Verdict(Verdict::Unsure);
                            }
                            *count += 1;
                            break Cur::Head;
                        }
                        // The root returned before the end of input (or exactly at it).
                        None if self.rooted && pos == len => {
                            break 'check Step::Verdict(Verdict::Match(len))
                        }
                        None => break 'check Step::Verdict(Verdict::Unsure),
                    }
                },
                Cur::Head => {
                    let Some(&mut Up::Repeat {
                        child,
                        min,
                        max,
                        count,
                        ref mut iter,
                    }) = self.up.last_mut()
                    else {
                        break Step::Verdict(Verdict::Unsure);
                    };
                    if pos >= valid_end {
                        break Step::Park;
                    }
                    if count < max && viable(arena, child, input, pos) {
                        *iter = pos;
                        match self.enter(prog, child, pos) {
                            Some(cur) => cur,
                            None => break Step::Verdict(Verdict::Unsure),
                        }
                    } else if count >= min {
                        self.up.pop();
                        Cur::Done
                    } else {
                        break Step::Verdict(Verdict::Unsure);
                    }
                }
                // (The chain reads up to the end of input: white space stops before a code
                // point cut there, and a literal compares its bytes as the leaf does.)
                Cur::Chain { k, end, lit } => match flat_run(&prog.flat, k, end, input, pos) {
                    FlatStop::Done(end) => {
                        pos = end;
                        Cur::Done
                    }
                    FlatStop::End(k) => {
                        pos = len;
                        cur = Cur::Chain { k, end, lit };
                        break Step::Park;
                    }
                    FlatStop::Fail => break Step::Verdict(Verdict::Unsure),
                },
                Cur::Literal {
                    from,
                    len: n,
                    start,
                } => {
                    let text = &prog.bytes[from as usize..(from + n) as usize];
                    match literal(text, input, start, pos) {
                        Ok(end) => {
                            pos = end;
                            Cur::Done
                        }
                        Err(Some(end)) => {
                            pos = end;
                            break Step::Park;
                        }
                        Err(None) => break Step::Verdict(Verdict::Unsure),
                    }
                }
                Cur::Chars { id, mut count } => {
                    let Node::Chars(chars) = &arena.nodes[id.index()] else {
                        break Step::Verdict(Verdict::Unsure);
                    };
                    let stops = chars.stops();
                    let mut parked = false;
                    loop {
                        if chars.max.is_some_and(|max| count >= max) {
                            break;
                        }
                        if pos >= valid_end {
                            parked = true;
                            break;
                        }
                        let byte = input[pos];
                        if byte < 0x80 {
                            if stops.0[byte as usize] != scan::ScanTable::ON {
                                break;
                            }
                            pos += 1;
                        } else {
                            match scan::decode(input, pos) {
                                Utf8::Char { len, cp } if chars.contains(cp) => pos += len,
                                _ => break,
                            }
                        }
                        count += 1;
                    }
                    if parked {
                        cur = Cur::Chars { id, count };
                        break Step::Park;
                    }
                    if count < chars.min {
                        break Step::Verdict(Verdict::Unsure);
                    }
                    Cur::Done
                }
                Cur::Space => {
                    while pos < valid_end && is_space(input[pos]) {
                        pos += 1;
                    }
                    if pos >= valid_end {
                        break Step::Park;
                    }
                    Cur::Done
                }
                Cur::End => {
                    if pos >= len {
                        break Step::Park;
                    }
                    break Step::Verdict(Verdict::Unsure);
                }
                Cur::Json => match self.ahead.run(input, valid_end) {
                    AheadStop::Closed(end) => {
                        pos = end;
                        Cur::Done
                    }
                    AheadStop::Inside => {
                        pos = valid_end;
                        break Step::Park;
                    }
                    AheadStop::Unsure => break Step::Verdict(Verdict::Unsure),
                },
            };
        };
        self.cur = cur;
        self.pos = pos;
        step
    }

    /// What a partial run returns from the parked state at the end of input (`len`), read
    /// without changing the state: the current item at the end, then each frame's items
    /// after it (`Program::at_end`), then each repetition's head at the end.
    fn at_end(&mut self, arena: &Arena, len: usize) -> Verdict {
        // Whether the current item returns (matches) at the end of input.
        let (returns, below) = match self.cur {
            Cur::Chain { k, lit, .. } => (k >= lit, self.up.len()),
            Cur::Literal { .. } | Cur::Json => (false, self.up.len()),
            Cur::Chars { id, count } => match &arena.nodes[id.index()] {
                Node::Chars(chars) => (count >= chars.min, self.up.len()),
                _ => return Verdict::Unsure,
            },
            Cur::Space | Cur::End => (true, self.up.len()),
            // The repetition on top stops at the end of input.
            Cur::Head => match self.up.last() {
                Some(&Up::Repeat { min, count, .. }) => (count >= min, self.up.len() - 1),
                _ => return Verdict::Unsure,
            },
            Cur::Done => return Verdict::Unsure,
        };
        if !returns {
            return Verdict::NeedMore(len);
        }
        if below == self.up.len() {
            return self.tail(arena, len).at(len);
        }
        self.walk(arena, below, len)
    }

    /// What the frames in `up` do at the end of input once the current item returns there.
    /// Kept while `up` does not change, unless a repetition's running iteration began at
    /// the check's offset (it would be empty if the item returned there).
    #[inline]
    fn tail(&mut self, arena: &Arena, len: usize) -> Tail {
        if let Some(tail) = self.tail {
            return tail;
        }
        let tail = match self.walk(arena, self.up.len(), len) {
            Verdict::NeedMore(_) => Tail::NeedMore,
            Verdict::Match(_) => Tail::Match,
            Verdict::Unsure => Tail::Unsure,
        };
        let pos = self.pos;
        if self
            .up
            .iter()
            .all(|up| !matches!(up, Up::Repeat { iter, .. } if *iter >= pos))
        {
            self.tail = Some(tail);
        }
        tail
    }

    /// What the frames `up[..below]` do at the end of input (`len`) once the item above them
    /// returns there.
    fn walk(&self, arena: &Arena, mut below: usize, len: usize) -> Verdict {
        let prog = &arena.prog;
        while below > 0 {
            below -= 1;
            match self.up[below] {
                Up::Seq { from, len: n, next } if next < n => {
                    match prog.rest_at_end[(from + next) as usize] {
                        AtEnd::Success => {}
                        AtEnd::NeedMore => return Verdict::NeedMore(len),
                        AtEnd::Unsure => return Verdict::Unsure,
                    }
                }
                Up::Seq { .. } => {}
                Up::Repeat {
                    min, count, iter, ..
                } => {
                    // Its iteration returned at the end of input; then the head stops there.
                    // (It must have taken something: the end of input is past where it began.)
                    if iter >= len {
                        return Verdict::Unsure;
                    }
                    if count + 1 < min {
                        return Verdict::NeedMore(len);
                    }
                }
            }
        }
        if self.rooted {
            Verdict::Match(len)
        } else {
            Verdict::Unsure
        }
    }
}

/// A literal `text` that started at `start`, compared from `pos` (the bytes before were):
/// the offset after it, or `Err(Some(end of input))` where the input ends inside it, or
/// `Err(None)` where a byte differs.
#[inline(always)]
fn literal(text: &[u8], input: &[u8], start: usize, pos: usize) -> Result<usize, Option<usize>> {
    let end = input.len().min(start + text.len());
    if !same(&input[pos..end], &text[pos - start..end - start]) {
        return Err(None);
    }
    if end < start + text.len() {
        return Err(Some(end));
    }
    Ok(end)
}

/// The follow state at item `at` of the chain `Program::chain[from..from + len]`.
#[inline(always)]
fn chain(prog: &crate::prog::Program, from: u32, len: u32, at: u32) -> Cur {
    Cur::Chain {
        k: prog.flat_at[(from + at) as usize],
        end: prog.flat_at[(from + len) as usize],
        lit: prog.flat_lit[from as usize],
    }
}

/// Where following a chain's bytes stopped.
enum FlatStop {
    /// It returned here.
    Done(usize),
    /// At the end of input, at this index of `Program::flat`.
    End(u32),
    /// A byte that neither goes on in it nor ends its white space: it fails there.
    Fail,
}

/// Follows the chain's bytes `flat[k..end]` over `input` from `pos`: each literal byte must
/// be the input's, and white space ([`FLAT_SPACE`]) takes every space byte there is, as the
/// chain's leaf does.
#[inline(always)]
fn flat_run(flat: &[u8], mut k: u32, end: u32, input: &[u8], mut pos: usize) -> FlatStop {
    while k < end {
        let Some(&byte) = input.get(pos) else {
            return FlatStop::End(k);
        };
        let want = flat[k as usize];
        if byte == want {
            pos += 1;
            k += 1;
        } else if want == FLAT_SPACE {
            if is_space(byte) {
                pos += 1;
            } else {
                k += 1;
            }
        } else {
            return FlatStop::Fail;
        }
    }
    FlatStop::Done(pos)
}
