//! The byte-level JSON fast path: a value rule that `prog.rs` recognised as the builder's
//! `json()` family ([`Op::Json`]) is scanned here with an explicit stack of open containers
//! instead of node by node, making exactly the AST nodes the interpreter would, in the same
//! order.
//!
//! The scanner only follows the happy path. It moves between "safe points" (a value about to
//! start, an object member right after its key, a container right after an item), where
//! every AST node made so far is final. On anything else (a byte it does not expect, the end
//! of input, a code point it cannot vouch for) it rebuilds the interpreter frames that the
//! interpreter would hold at the last safe point ("materialises" them) and lets the
//! interpreter carry on from there, so failures, `NeedMore`, partial nodes and lookahead at
//! the end of input are the interpreter's own.
//!
//! When it is the scanner that first reaches the end of input, the stream's snapshot is
//! taken at the safe point with a copy of the container stack, and the next feed resumes the
//! scanner there ([`Control::Json`]): JSON that streams in is scanned, not interpreted.

use super::{res, Control, Ext, Frame, Kind, Machine, Quick};
use crate::node::NodeId;
use crate::prog::{JsonShape, Op};
use crate::scan::{self, Utf8};

/// Containers deeper than this make the scanner leave the snapshot to the interpreter (its
/// copy costs the depth on every feed).
const MAX_SNAPSHOT_DEPTH: usize = 32;

/// Where the scanner is, at a safe point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Next {
    /// A value starts here (in the innermost container, or the scanned value itself).
    Value,
    /// Right after an object key (made).
    AfterKey,
    /// Right after an item of the innermost container (made).
    AfterValue,
}

/// An open object or array, with what it takes to rebuild its interpreter frames.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Cont {
    obj: bool,
    /// Where its value rule started, and the pending-children length there.
    start: usize,
    base: u32,
    /// Where the first item starts (after the bracket and white space).
    first: usize,
    /// Items finished.
    items: u32,
    /// Where the repetition of further items started (after the first item), and the
    /// pending-children length there.
    rep_start: usize,
    rep_base: u32,
    /// Where the running iteration (`ws "," ws item`) started, and the pending-children
    /// length there.
    it_start: usize,
    it_base: u32,
}

#[inline]
fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C)
}

/// Why a token could not be scanned: `Some(end)` when the scan reached the end of input,
/// with the end of the `NeedMore` the interpreter would return (the end of input, or where
/// a code point is cut), `None` for anything else.
type Stop = Option<usize>;

/// The body of a string from `pos` (just after the opening quote, or where an earlier scan
/// of it stopped at the end of input): the offset after the closing quote, or where to
/// resume (an offset the scan can restart from: the end of input or a cut escape).
#[inline]
fn scan_string(input: &[u8], mut pos: usize, valid_end: usize) -> Result<usize, (Stop, usize)> {
    let len = input.len();
    loop {
        while pos < valid_end && input[pos] != b'"' && input[pos] != b'\\' {
            pos += 1;
        }
        let Some(&byte) = input.get(pos) else {
            return Err((Some(len), pos));
        };
        match byte {
            b'"' => return Ok(pos + 1),
            b'\\' => {
                match input.get(pos + 1) {
                    None => return Err((Some(len), pos)),
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => pos += 2,
                    Some(b'u') => {
                        for i in 0..4 {
                            match input.get(pos + 2 + i) {
                                None => return Err((Some(len), pos)),
                                Some(digit) if digit.is_ascii_hexdigit() => {}
                                Some(_) => return Err((None, pos)),
                            }
                        }
                        pos += 6;
                    }
                    Some(_) => return Err((None, pos)),
                }
                if pos > len {
                    return Err((Some(len), len));
                }
            }
            // Past the validated prefix: the interpreter decides.
            _ => {
                // A code point cut by the end of input: `NeedMore` there, as the leaf says.
                return match scan::decode(input, pos) {
                    Utf8::Incomplete => Err((Some(pos), pos)),
                    _ => Err((None, pos)),
                };
            }
        }
    }
}

#[inline]
fn digits(input: &[u8], mut pos: usize) -> usize {
    while pos < input.len() && input[pos].is_ascii_digit() {
        pos += 1;
    }
    pos
}

/// At least one digit at `pos`: the offset after the digits.
#[inline]
fn some_digits(input: &[u8], pos: usize) -> Result<usize, Stop> {
    match input.get(pos) {
        None => Err(Some(input.len())),
        Some(byte) if byte.is_ascii_digit() => Ok(digits(input, pos + 1)),
        Some(_) => Err(None),
    }
}

/// A number starting at `pos`, with the rule's negative lookahead on the byte after it.
#[inline]
fn scan_number(input: &[u8], mut pos: usize, valid_end: usize) -> Result<usize, Stop> {
    if input[pos] == b'-' {
        pos += 1;
    }
    match input.get(pos) {
        None => return Err(Some(input.len())),
        Some(b'0') => pos += 1,
        Some(b'1'..=b'9') => pos = digits(input, pos + 1),
        Some(_) => return Err(None),
    }
    let Some(&byte) = input.get(pos) else {
        return Err(Some(input.len()));
    };
    if byte == b'.' {
        pos = some_digits(input, pos + 1)?;
    }
    let Some(&byte) = input.get(pos) else {
        return Err(Some(input.len()));
    };
    if byte == b'e' || byte == b'E' {
        pos += 1;
        if let Some(b'+' | b'-') = input.get(pos) {
            pos += 1;
        }
        pos = some_digits(input, pos)?;
    }
    match input.get(pos) {
        None => Err(Some(input.len())),
        Some(b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') => Err(None),
        Some(&byte) if byte >= 0x80 && pos >= valid_end => match scan::decode(input, pos) {
            Utf8::Incomplete => Err(Some(pos)),
            _ => Err(None),
        },
        Some(_) => Ok(pos),
    }
}

#[inline]
fn scan_literal(input: &[u8], pos: usize, text: &[u8]) -> Result<usize, Stop> {
    let avail = &input[pos..input.len().min(pos + text.len())];
    if avail != &text[..avail.len()] {
        Err(None)
    } else if avail.len() < text.len() {
        Err(Some(input.len()))
    } else {
        Ok(pos + text.len())
    }
}

impl Machine<'_> {
    /// Runs the JSON value rule of `shape` at `pos`.
    pub(super) fn json_start(
        &mut self,
        shape: u32,
        pos: usize,
        input: &[u8],
        valid_end: usize,
        partial: bool,
    ) -> Control {
        self.save_jstack();
        self.jstack.clear();
        self.json_run(shape, Next::Value, pos, input, valid_end, partial)
    }

    /// Call before `jstack` changes: if it is still the snapshot's, copies it there.
    #[inline]
    fn save_jstack(&mut self) {
        if self.snapshot.json_live {
            self.snapshot.json_live = false;
            if self.snapshot.valid {
                self.snapshot.json.clear();
                self.snapshot.json.extend_from_slice(&self.jstack);
            }
        }
    }

    /// Scans from the safe point (`next`, `pos`) with the containers in `jstack`.
    pub(super) fn json_run(
        &mut self,
        shape: u32,
        mut next: Next,
        mut pos: usize,
        input: &[u8],
        valid_end: usize,
        partial: bool,
    ) -> Control {
        self.save_jstack();
        let arena = self.arena;
        let sh = &arena.prog.shapes[shape as usize];
        // On a stop, hand over to the interpreter at the safe point (`next`, `pos`), from one
        // place after the loop (where `json_stop` is inlined).
        macro_rules! stop {
            ($stop:expr) => {
                break $stop
            };
        }
        // A string opened at `$open`, resumed where an earlier scan of it stopped.
        macro_rules! string {
            ($open:expr) => {{
                let open = $open;
                let from = if self.json_hint.0 == open {
                    self.json_hint.1
                } else {
                    open + 1
                };
                match scan_string(input, from, valid_end) {
                    Ok(end) => end,
                    Err((stop, at)) => {
                        if stop.is_some() {
                            self.json_hint = (open, at);
                            // Cut at the end of input or of the valid UTF-8 (not in an
                            // escape): more body bytes extend it (`StreamParser::extend`).
                            self.json_string_stop = stop == Some(at);
                        }
                        stop!(stop)
                    }
                }
            }};
        }
        macro_rules! check {
            ($e:expr) => {
                match $e {
                    Ok(v) => v,
                    Err(stop) => stop!(stop),
                }
            };
        }
        let stop: Stop = loop {
            // A finished value: its rule node and the value node, at `start..end`.
            let (inner, start, end) = match next {
                Next::Value => {
                    let Some(&byte) = input.get(pos) else {
                        stop!(Some(input.len()))
                    };
                    match byte {
                        b'{' | b'[' => {
                            let obj = byte == b'{';
                            let first = self.skip_space(input, pos + 1);
                            let Some(&byte) = input.get(first) else {
                                stop!(Some(input.len()))
                            };
                            let close = if obj { b'}' } else { b']' };
                            let base = self.children.len() as u32;
                            if byte == close {
                                let rule = if obj { sh.o } else { sh.a };
                                let id = self.ast.push(rule, pos, first + 1, false, &[]);
                                (id, pos, first + 1)
                            } else if obj {
                                if byte != b'"' {
                                    stop!(None)
                                }
                                let end = string!(first);
                                self.jstack.push(Cont {
                                    obj,
                                    start: pos,
                                    base,
                                    first,
                                    ..Cont::default()
                                });
                                let id = self.ast.push(sh.key, first, end, false, &[]);
                                self.children.push(id);
                                next = Next::AfterKey;
                                pos = end;
                                continue;
                            } else {
                                self.jstack.push(Cont {
                                    obj,
                                    start: pos,
                                    base,
                                    first,
                                    ..Cont::default()
                                });
                                pos = first;
                                continue;
                            }
                        }
                        b'"' => {
                            let end = string!(pos);
                            (self.ast.push(sh.s, pos, end, false, &[]), pos, end)
                        }
                        b'-' | b'0'..=b'9' => {
                            let end = check!(scan_number(input, pos, valid_end));
                            (self.ast.push(sh.n, pos, end, false, &[]), pos, end)
                        }
                        b't' | b'f' | b'n' => {
                            let (text, rule): (&[u8], NodeId) = match byte {
                                b't' => (b"true", sh.b),
                                b'f' => (b"false", sh.b),
                                _ => (b"null", sh.l),
                            };
                            let end = check!(scan_literal(input, pos, text));
                            (self.ast.push(rule, pos, end, false, &[]), pos, end)
                        }
                        _ => stop!(None),
                    }
                }
                Next::AfterKey => {
                    let colon = self.skip_space(input, pos);
                    let Some(&byte) = input.get(colon) else {
                        stop!(Some(input.len()))
                    };
                    if byte != b':' {
                        stop!(None)
                    }
                    // The white space must end before the input does: a safe point is a
                    // decision that more input cannot change.
                    let value = self.skip_space(input, colon + 1);
                    if value >= input.len() {
                        stop!(Some(input.len()))
                    }
                    next = Next::Value;
                    pos = value;
                    continue;
                }
                Next::AfterValue => {
                    let at = self.skip_space(input, pos);
                    let Some(&byte) = input.get(at) else {
                        stop!(Some(input.len()))
                    };
                    let Some(top) = self.jstack.last().copied() else {
                        stop!(None)
                    };
                    if byte == b',' {
                        let item = self.skip_space(input, at + 1);
                        if item >= input.len() {
                            stop!(Some(input.len()))
                        }
                        if top.obj {
                            if input[item] != b'"' {
                                stop!(None)
                            }
                            let end = string!(item);
                            let it_base = self.children.len() as u32;
                            if let Some(top) = self.jstack.last_mut() {
                                top.it_start = pos;
                                top.it_base = it_base;
                            }
                            let id = self.ast.push(sh.key, item, end, false, &[]);
                            self.children.push(id);
                            next = Next::AfterKey;
                            pos = end;
                        } else {
                            let it_base = self.children.len() as u32;
                            if let Some(top) = self.jstack.last_mut() {
                                top.it_start = pos;
                                top.it_base = it_base;
                            }
                            next = Next::Value;
                            pos = item;
                        }
                        continue;
                    }
                    if byte != if top.obj { b'}' } else { b']' } {
                        stop!(None)
                    }
                    self.jstack.pop();
                    let base = top.base as usize;
                    let rule = if top.obj { sh.o } else { sh.a };
                    let id = self
                        .ast
                        .push(rule, top.start, at + 1, false, &self.children[base..]);
                    self.truncate_children(base);
                    (id, top.start, at + 1)
                }
            };
            let id = self.ast.push(sh.v, start, end, false, &[inner]);
            self.children.push(id);
            let items = self.children.len() as u32;
            let Some(top) = self.jstack.last_mut() else {
                return Control::Return(res(Kind::Success, end));
            };
            top.items += 1;
            if top.items == 1 {
                top.rep_start = end;
                top.rep_base = items;
            }
            next = Next::AfterValue;
            pos = end;
        };
        self.json_stop(shape, next, pos, stop, input, valid_end, partial)
    }

    /// The offset after the white space at `pos`. White space that runs to the end of input
    /// is remembered, so that a stream does not re-read a long run on every feed.
    #[inline]
    fn skip_space(&mut self, input: &[u8], from: usize) -> usize {
        let mut pos = from;
        let (hint_from, hint_to) = self.space_hint;
        if hint_from <= pos && pos < hint_to {
            pos = hint_to;
        }
        while pos < input.len() && is_space(input[pos]) {
            pos += 1;
        }
        if pos >= input.len() && pos > from {
            let start = if hint_from <= from && from < hint_to {
                hint_from
            } else {
                from
            };
            self.space_hint = (start, pos);
        }
        pos
    }

    /// Hands over to the interpreter at the safe point (`next`, `pos`); first takes the
    /// stream's snapshot there if the scan reached the end of input.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn json_stop(
        &mut self,
        shape: u32,
        next: Next,
        pos: usize,
        stop: Stop,
        input: &[u8],
        valid_end: usize,
        partial: bool,
    ) -> Control {
        let at_end = stop.is_some();
        let string_stop = std::mem::take(&mut self.json_string_stop);
        if at_end && self.taking && !self.snapshot.valid && self.jstack.len() <= MAX_SNAPSHOT_DEPTH
        {
            self.take_snapshot(Control::Json { shape, next, pos });
            // `jstack` stays the snapshot's until it changes (see `save_jstack`).
            self.snapshot.json_live = true;
            if string_stop {
                // (Lazy: the `NeedMore` below ends the run.)
                self.extensible(true, Ext::JsonString);
                if self.lazy {
                    let at = self.json_hint.1;
                    self.arm_quick(Quick::JsonString, at, input.len(), valid_end);
                }
            }
        }
        // (Only once someone has taken the snapshot: a stream that never looked at the end
        // of input would keep its result.)
        if let (Some(end), true, true) = (stop, self.lazy, self.snapshot.valid) {
            // Partial and lazy: from a safe point, every path that reaches the end of input
            // inside a value returns `NeedMore` there (a leaf cut short, a number's lookahead,
            // a literal after white space), and `NeedMore` travels straight up. The frames
            // are only needed to build partial nodes, which `StreamParser::ast` does on
            // demand from `json_pending`.
            self.json_pending = Some((shape, next, pos));
            return Control::Return(res(Kind::NeedMore, end));
        }
        self.materialise(shape, next, pos, input, valid_end, partial)
    }

    fn push_frame(
        &mut self,
        node: NodeId,
        start: usize,
        pos: usize,
        index: u32,
        base: u32,
        mark: u32,
    ) {
        self.frames.push(Frame {
            node,
            start,
            pos,
            index,
            base,
            mark,
        });
    }

    /// Pushes the frames the interpreter would hold at the safe point (`next`, `pos`) and
    /// returns what it would do next. Empties `jstack`.
    pub(super) fn materialise(
        &mut self,
        shape: u32,
        next: Next,
        pos: usize,
        input: &[u8],
        valid_end: usize,
        partial: bool,
    ) -> Control {
        self.save_jstack();
        let arena = self.arena;
        let sh: &JsonShape = &arena.prog.shapes[shape as usize];
        let depth = self.jstack.len();
        let mut stack = std::mem::take(&mut self.jstack);
        let mut control = None;
        for (level, c) in stack.drain(..).enumerate() {
            let top = level + 1 == depth;
            let (start, base) = (c.start, c.base);
            let (rule, body, choice, items, rep, each) = if c.obj {
                (sh.o, sh.os, sh.ob, sh.oi, sh.or, sh.om)
            } else {
                (sh.a, sh.as_, sh.ab, sh.ai, sh.ar, sh.am)
            };
            let alt = if c.obj { 0 } else { 1 };
            self.push_frame(sh.v, start, start, 0, base, base);
            self.push_frame(sh.vc, start, start, alt, base, base);
            self.push_frame(rule, start, start, 0, base, base);
            self.push_frame(body, start, start, 2, base, base);
            self.push_frame(choice, c.first, c.first, 1, base, base);
            // Object items are members (`key ws ":" ws value`), flattened into the items
            // sequence (from index 0) and the repetition's body (from index 3).
            let (value_at, rep_at) = if c.obj { (4, 5) } else { (0, 1) };
            if top && next == Next::AfterValue {
                self.push_frame(items, c.first, c.first, rep_at, base, base);
                if c.items == 1 {
                    control = Some(self.json_seq_run(items, pos, input, valid_end, partial));
                } else {
                    self.push_frame(rep, c.rep_start, pos, c.items - 1, c.rep_base, c.it_base);
                    control = Some(Control::Head);
                }
                break;
            }
            // An item in progress (for an object: its key made).
            let after_key = top && next == Next::AfterKey;
            let offset = if after_key { 1 } else { value_at };
            let seq = if c.items == 0 {
                self.push_frame(items, c.first, c.first, offset, base, base);
                items
            } else {
                self.push_frame(items, c.first, c.first, rep_at, base, base);
                let (it_start, it_base) = (c.it_start, c.it_base);
                self.push_frame(rep, c.rep_start, it_start, c.items - 1, c.rep_base, it_base);
                self.push_frame(each, it_start, it_start, 3 + offset, it_base, it_base);
                each
            };
            if after_key {
                control = Some(self.json_seq_run(seq, pos, input, valid_end, partial));
                break;
            }
        }
        self.jstack = stack;
        if let Some(control) = control {
            return control;
        }
        // A value starts at `pos`: its rule frame, and its choice runs as it would.
        let base = self.children.len() as u32;
        self.push_frame(sh.v, pos, pos, 0, base, base);
        Control::Call(sh.vc, pos)
    }

    /// `seq_run` for the sequence `id` on top of the stack.
    fn json_seq_run(
        &mut self,
        id: NodeId,
        pos: usize,
        input: &[u8],
        valid_end: usize,
        partial: bool,
    ) -> Control {
        match self.arena.prog.ops[id.index()] {
            Op::Seq { from, len } => self.seq_run(from, len, pos, input, valid_end, partial),
            _ => Control::Return(res(Kind::Fail, pos)),
        }
    }
}
