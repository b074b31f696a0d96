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
//! scanner there ([`Control::Json`]): JSON that streams in is scanned, not interpreted. Past
//! that point the stream's follow check (`runtime/follow.rs`) takes the JSON that comes in
//! with [`Ahead`], and the scanner reads it when the machine catches up.

use super::{is_space, res, Control, Ext, Frame, Kind, Machine, Quick};
use crate::node::NodeId;
use crate::prog::{JsonShape, Op};
use crate::scan::{self, Utf8};

/// Containers deeper than this make the scanner leave the snapshot to the interpreter (its
/// copy costs the depth on every feed).
const MAX_SNAPSHOT_DEPTH: usize = 32;

/// [`Ahead`] follows at most this many open containers (a stack of bits); deeper, it is
/// unsure.
const MAX_AHEAD_DEPTH: u32 = 64;

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
    pub(super) obj: bool,
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
                            let base = self.ast.live.len() as u32;
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
                                self.ast.live.push(id);
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
                            let it_base = self.ast.live.len() as u32;
                            if let Some(top) = self.jstack.last_mut() {
                                top.it_start = pos;
                                top.it_base = it_base;
                            }
                            let id = self.ast.push(sh.key, item, end, false, &[]);
                            self.ast.live.push(id);
                            next = Next::AfterKey;
                            pos = end;
                        } else {
                            let it_base = self.ast.live.len() as u32;
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
                    let id = self.ast.push_pending(rule, top.start, at + 1, false, base);
                    self.truncate_children(base);
                    (id, top.start, at + 1)
                }
            };
            let id = self.ast.push(sh.v, start, end, false, &[inner]);
            self.ast.live.push(id);
            let items = self.ast.live.len() as u32;
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
            self.json_snapshot(shape, next, pos, string_stop, input.len(), valid_end);
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

    /// `json_stop`'s snapshot at the safe point, with how a stream may extend it (once per
    /// run at most, so out of the scanner's loop).
    #[inline(never)]
    fn json_snapshot(
        &mut self,
        shape: u32,
        next: Next,
        pos: usize,
        string_stop: bool,
        len: usize,
        valid_end: usize,
    ) {
        self.take_snapshot(Control::Json { shape, next, pos });
        // `jstack` stays the snapshot's until it changes (see `save_jstack`).
        self.snapshot.json_live = true;
        // (Lazy: the `NeedMore` that follows ends the run.)
        if string_stop {
            self.extensible(true, Ext::JsonString);
            if self.lazy {
                let at = self.json_hint.1;
                self.arm_quick(Quick::JsonString, at, len, valid_end);
            }
        } else {
            self.extensible(true, Ext::Follow);
            if self.lazy {
                self.arm_quick(Quick::Follow, len, len, valid_end);
            }
        }
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
        let base = self.ast.live.len() as u32;
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

/// The states of the viability check ([`Ahead`]): what it expects next.
mod st {
    // The states whose bytes `skip_run` passes by comparisons come first, so that one
    // comparison tells the others apart: a string's body (values, keys), then a number's
    // digits (integer, fraction, exponent).
    /// A string body (values; keys).
    pub(super) const STR: u8 = 0;
    pub(super) const KEY_STR: u8 = 1;
    /// In a number's integer digits, its fraction, its exponent.
    pub(super) const INT: u8 = 2;
    pub(super) const FRAC: u8 = 3;
    pub(super) const EXP: u8 = 4;
    /// The states below this are the ones `skip_run` passes runs of.
    pub(super) const RUNS: u8 = 5;
    /// A value, inside a container (after white space).
    pub(super) const VALUE: u8 = 5;
    /// The value the scanner was asked for: only `{` or `[` (a scalar would end it).
    pub(super) const TOP: u8 = 6;
    /// Right after `{`: white space, a key or `}`.
    pub(super) const OBJECT_FIRST: u8 = 7;
    /// Right after `[`: white space, a value or `]`.
    pub(super) const ARRAY_FIRST: u8 = 8;
    /// After `,` in an object: white space, then a key.
    pub(super) const KEY: u8 = 9;
    /// After a key: white space, then `:`.
    pub(super) const COLON: u8 = 10;
    /// After an item: white space, then `,` or the closing bracket.
    pub(super) const AFTER: u8 = 11;
    /// In a string (values; keys): after a backslash; after `\u` and 0 to 3 hex digits.
    pub(super) const STR_ESCAPE: u8 = 12;
    pub(super) const STR_HEX: u8 = 13; // ..= 16
    pub(super) const KEY_ESCAPE: u8 = 17;
    pub(super) const KEY_HEX: u8 = 18; // ..= 21
    /// In a number: after `-`, a leading `0`, after `.`, after `e`, after its sign.
    pub(super) const MINUS: u8 = 22;
    pub(super) const ZERO: u8 = 23;
    pub(super) const DOT: u8 = 24;
    pub(super) const E: u8 = 25;
    pub(super) const SIGN: u8 = 26;
    /// In `true` (3 states), `false` (4), `null` (3): the next byte of the literal.
    pub(super) const TRUE: u8 = 27;
    pub(super) const FALSE: u8 = 30;
    pub(super) const NULL: u8 = 34;
    pub(super) const COUNT: usize = 37;
    /// Unsure of every byte (no transitions): `Ahead` cannot follow the containers.
    pub(super) const DEAD: u8 = 0x7F;

    /// Set in a state inside an object (clear: inside an array, or at the top).
    pub(super) const KIND_BIT: u8 = 64;

    /// Transitions at or above this are actions on the container stack.
    pub(super) const ACTION: u8 = 0xF0;
    pub(super) const OPEN_OBJECT: u8 = 0xF0;
    pub(super) const OPEN_ARRAY: u8 = 0xF1;
    /// The bracket that closes the innermost container (the table checks its kind).
    pub(super) const CLOSE: u8 = 0xF2;
    /// Unsure: the scanner decides.
    pub(super) const FAIL: u8 = 0xFF;
}

/// `TABLE[byte][state]`: the next state or an action. A state is a base state (`st`) with
/// the innermost container's kind in bit `st::KIND_BIT` (set: an object), so that a `,` or
/// a closing bracket after an item is a plain transition or a failure in the table, and the
/// loop touches the container stack only to open and close. A column for every `u8`, so that
/// `Ahead::run`'s loop indexes it by the state with neither a mask nor a bounds check (the
/// columns it never reaches are never loaded). Indexed by the byte first: the byte's row is
/// found without waiting for the state, and each lookup waits on the one before only for the
/// state added to that row (indexed by the state first, each lookup also waited on the
/// state's shift by 256).
static TABLE: [[u8; COLUMNS]; 256] = table();
const COLUMNS: usize = 256;
const _: () = assert!(
    st::COUNT <= st::KIND_BIT as usize && (st::COUNT | st::KIND_BIT as usize) < st::DEAD as usize,
    "the kind bit is above every base state, and the dead state above both kinds"
);

/// The transitions of the scanner's grammar (`json_run`, `scan_string`, `scan_number`,
/// `scan_literal`, `skip_space`), byte by byte, for both kinds of innermost container.
const fn table() -> [[u8; COLUMNS]; 256] {
    let mut t = [[st::FAIL; COLUMNS]; 256];
    let mut kind = 0;
    while kind < 2 {
        let base = base_table(kind == 1);
        let mut state = 0;
        while state < st::COUNT {
            let mut b = 0;
            while b < 256 {
                let next = base[state][b];
                t[b][state | (kind * st::KIND_BIT as usize)] = if next < st::ACTION {
                    next | (kind as u8 * st::KIND_BIT)
                } else {
                    next
                };
                b += 1;
            }
            state += 1;
        }
        kind += 1;
    }
    t
}

/// The base states' transitions inside an object (`object`) or an array.
const fn base_table(object: bool) -> [[u8; 256]; st::COUNT] {
    use st::*;
    let mut t = [[FAIL; 256]; COUNT];
    let mut b = 0usize;
    while b < 256 {
        let byte = b as u8;
        let space = is_space(byte);
        // The first byte of a value inside a container.
        let value = match byte {
            b'{' => OPEN_OBJECT,
            b'[' => OPEN_ARRAY,
            b'"' => STR,
            b'-' => MINUS,
            b'0' => ZERO,
            b'1'..=b'9' => INT,
            b't' => TRUE,
            b'f' => FALSE,
            b'n' => NULL,
            _ => FAIL,
        };
        t[VALUE as usize][b] = if space { VALUE } else { value };
        t[TOP as usize][b] = match byte {
            b'{' => OPEN_OBJECT,
            b'[' => OPEN_ARRAY,
            _ => FAIL,
        };
        t[OBJECT_FIRST as usize][b] = match byte {
            _ if space => OBJECT_FIRST,
            b'"' => KEY_STR,
            b'}' => CLOSE,
            _ => FAIL,
        };
        t[ARRAY_FIRST as usize][b] = match byte {
            _ if space => ARRAY_FIRST,
            b']' => CLOSE,
            _ => value,
        };
        t[KEY as usize][b] = match byte {
            _ if space => KEY,
            b'"' => KEY_STR,
            _ => FAIL,
        };
        t[COLON as usize][b] = match byte {
            _ if space => COLON,
            b':' => VALUE,
            _ => FAIL,
        };
        let after = match byte {
            _ if space => AFTER,
            b',' if object => KEY,
            b',' => VALUE,
            b'}' if object => CLOSE,
            b']' if !object => CLOSE,
            _ => FAIL,
        };
        t[AFTER as usize][b] = after;
        // Strings: any byte but `"` and `\` (valid UTF-8: the input is checked up to there).
        let escape = matches!(byte, b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't');
        let hex = byte.is_ascii_hexdigit();
        let mut key = 0;
        while key < 2 {
            let (body, esc, hex0, end) = if key == 0 {
                (STR, STR_ESCAPE, STR_HEX, AFTER)
            } else {
                (KEY_STR, KEY_ESCAPE, KEY_HEX, COLON)
            };
            t[body as usize][b] = match byte {
                b'"' => end,
                b'\\' => esc,
                _ => body,
            };
            t[esc as usize][b] = match byte {
                b'u' => hex0,
                _ if escape => body,
                _ => FAIL,
            };
            let mut digit = 0;
            while digit < 4 {
                t[(hex0 + digit) as usize][b] = if !hex {
                    FAIL
                } else if digit == 3 {
                    body
                } else {
                    hex0 + digit + 1
                };
                digit += 1;
            }
            key += 1;
        }
        // Numbers; a number ends before a byte that cannot continue it and is not one of
        // `[0-9.eE+-]` (the scanner's lookahead), which is then read as after an item.
        let digit = byte.is_ascii_digit();
        let ends = if matches!(byte, b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') {
            FAIL
        } else {
            after
        };
        t[MINUS as usize][b] = match byte {
            b'0' => ZERO,
            b'1'..=b'9' => INT,
            _ => FAIL,
        };
        t[ZERO as usize][b] = match byte {
            b'.' => DOT,
            b'e' | b'E' => E,
            _ => ends,
        };
        t[INT as usize][b] = match byte {
            _ if digit => INT,
            b'.' => DOT,
            b'e' | b'E' => E,
            _ => ends,
        };
        t[DOT as usize][b] = if digit { FRAC } else { FAIL };
        t[FRAC as usize][b] = match byte {
            _ if digit => FRAC,
            b'e' | b'E' => E,
            _ => ends,
        };
        t[E as usize][b] = match byte {
            _ if digit => EXP,
            b'+' | b'-' => SIGN,
            _ => FAIL,
        };
        t[SIGN as usize][b] = if digit { EXP } else { FAIL };
        t[EXP as usize][b] = if digit { EXP } else { ends };
        // Literals: the bytes after the first.
        let mut lit = 0;
        while lit < 3 {
            let (first, text): (u8, &[u8]) = match lit {
                0 => (TRUE, b"rue"),
                1 => (FALSE, b"alse"),
                _ => (NULL, b"ull"),
            };
            let mut i = 0;
            while i < text.len() {
                let last = i + 1 == text.len();
                t[(first as usize) + i][b] = if byte != text[i] {
                    FAIL
                } else if last {
                    AFTER
                } else {
                    first + i as u8 + 1
                };
                i += 1;
            }
            lit += 1;
        }
        b += 1;
    }
    t
}

/// A viability check of JSON, for the stream's follow check (`runtime/follow.rs`): the
/// state of the scanner's grammar (the builder's `json()`) over the bytes checked so far,
/// one table lookup a byte (`TABLE`), kept between feeds, with no nodes made. It follows
/// exactly what the scanner would accept on its way to the end of input, so that a value
/// still open there leaves the parse result `NeedMore` at the end of input (the scanner
/// would stop there with the interpreter's own `NeedMore`: `json_stop`); it says when the
/// value closes, and is unsure of anything it does not expect (a top-level scalar, a code
/// point cut outside a string, containers deeper than `MAX_AHEAD_DEPTH`), which the
/// scanner then decides.
#[derive(Clone, Debug, Default)]
pub(super) struct Ahead {
    /// The input before this offset has been checked.
    pos: usize,
    state: u8,
    /// The open containers as a stack of bits, innermost in bit 0 (set: an object), and
    /// how many there are.
    open: u64,
    depth: u32,
}

/// Where [`Ahead::run`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AheadStop {
    /// At the end of what it was given, inside the value.
    Inside,
    /// The value closed; the byte after it is at this offset.
    Closed(usize),
    /// Something the check does not expect: the scanner decides.
    Unsure,
}

impl Ahead {
    /// Starts the check at a safe point of the scanner (`next`, `pos`) with its open
    /// containers (outermost first): those of the snapshot, or none for a value that starts
    /// at `pos`.
    pub(super) fn start(&mut self, next: Next, pos: usize, conts: &[Cont]) {
        self.pos = pos;
        if conts.len() > MAX_AHEAD_DEPTH as usize {
            // (The scanner takes no snapshot so deep.)
            self.state = st::DEAD;
            return;
        }
        self.open = conts.iter().fold(0, |open, c| (open << 1) | c.obj as u64);
        self.depth = conts.len() as u32;
        let base = match next {
            Next::Value if conts.is_empty() => st::TOP,
            Next::Value => st::VALUE,
            Next::AfterKey => st::COLON,
            Next::AfterValue => st::AFTER,
        };
        self.state = base | kind_bit(self.open);
    }

    /// Checks `input` from where the last check stopped to `end` (the input is valid UTF-8 up
    /// to there).
    #[inline(always)]
    pub(super) fn run(&mut self, input: &[u8], end: usize) -> AheadStop {
        let mut state = self.state;
        let mut i = self.pos;
        while i < end {
            let byte = input[i];
            i += 1;
            let next = TABLE[byte as usize][state as usize];
            if next < st::ACTION {
                state = next;
                // Each lookup waits on the one before; the bytes that keep the state are
                // passed by comparisons instead, which do not wait on each other.
                i = skip_run(next & !st::KIND_BIT, input, i, end);
                continue;
            }
            state = match next {
                st::OPEN_OBJECT | st::OPEN_ARRAY if self.depth < MAX_AHEAD_DEPTH => {
                    let obj = next == st::OPEN_OBJECT;
                    self.open = (self.open << 1) | obj as u64;
                    self.depth += 1;
                    if obj {
                        st::OBJECT_FIRST | st::KIND_BIT
                    } else {
                        st::ARRAY_FIRST
                    }
                }
                st::CLOSE if self.depth > 1 => {
                    self.open >>= 1;
                    self.depth -= 1;
                    st::AFTER | kind_bit(self.open)
                }
                st::CLOSE if self.depth == 1 => {
                    self.depth = 0;
                    self.pos = i;
                    return AheadStop::Closed(i);
                }
                _ => return AheadStop::Unsure,
            };
        }
        self.state = state;
        self.pos = end;
        AheadStop::Inside
    }

    /// Whether the check stopped in a string's body (where a code point cut by the end of
    /// input leaves the scanner's `NeedMore` before it).
    pub(super) fn in_string(&self) -> bool {
        let base = self.state & !st::KIND_BIT;
        base == st::STR || base == st::KEY_STR
    }
}

/// The end of the run of bytes from `i` (before `end`) that keep `Ahead` in the base state
/// `base` and are cheap to recognise: a string's body (up to a quote or a backslash), a
/// number's digits. (White space between tokens too, tried in session 23: Ahead alone took
/// 15% less time, but the streams more instructions and more time; a run of it is mostly
/// one byte.)
#[inline(always)]
fn skip_run(base: u8, input: &[u8], mut i: usize, end: usize) -> usize {
    if base < st::RUNS {
        if base <= st::KEY_STR {
            while i < end && input[i] != b'"' && input[i] != b'\\' {
                i += 1;
            }
        } else {
            while i < end && input[i].is_ascii_digit() {
                i += 1;
            }
        }
    }
    i
}

/// The kind bit of a state inside the innermost of the containers `open` (bit 0 set: an
/// object; none open: clear).
#[inline(always)]
fn kind_bit(open: u64) -> u8 {
    ((open & 1) as u8) << st::KIND_BIT.trailing_zeros()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte that `skip_run` passes keeps its state in the table, in every state and
    /// inside both kinds of container.
    #[test]
    fn skipped_bytes_keep_the_state() {
        for kind in [0, st::KIND_BIT] {
            for base in 0..st::COUNT as u8 {
                let state = base | kind;
                for byte in 0..=255u8 {
                    if skip_run(base, &[byte], 0, 1) == 1 {
                        assert_eq!(
                            TABLE[byte as usize][state as usize], state,
                            "{state} {byte}"
                        );
                    }
                }
            }
        }
    }
}
