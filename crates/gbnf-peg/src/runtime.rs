//! The interpreter: runs an [`Arena`] over input with an explicit stack (no recursion, so
//! input nesting depth is bounded only by memory), complete or streaming.
//!
//! Streaming works by suspension rather than re-parsing. Everything the machine does before
//! it first looks at the end of input (an "end observation") is a function of bytes that
//! appending cannot change, and does not depend on the mode either. So at that point it
//! records a snapshot: where to resume (for a scanning leaf, its scan position), and from
//! then on an undo log of the frames and pending AST children it touches. The next `feed`
//! rolls the log back and resumes with the longer input. In partial mode the machine also
//! stops at the first `NeedMore` (which can only travel straight up to the root) and builds
//! the partial AST nodes of the open frames only when `StreamParser::ast` asks for them (and
//! when a feed since only extended the leaf, as below, moves their ends instead), without
//! copying long child lists (`Machine::cut_partial`). A
//! feed therefore costs about the new bytes plus the work after the observation point, not
//! a re-parse. When the latest result is the `NeedMore` of the very leaf that took the
//! snapshot (an `until`, a string body, a literal cut short, or the JSON scanner inside a
//! string), a feed whose bytes only continue that scan skips even that: it advances the
//! leaf's saved state and returns `NeedMore` at the new end (`StreamParser::extend`).
//! The same holds for a run of white space or class chars (`space`, `chars`) that took the
//! snapshot at the end of input when the result stopped at that same end further on (a
//! tool name, then its closing quote cut short): everything after the run happened at the
//! end of input, where more bytes of the run only move the end. The status moves without a
//! run; the frames, whose offsets are now stale, are remade from the snapshot only if
//! `StreamParser::ast` asks (`Machine::stale`). Likewise an `until` that took the snapshot at
//! a delimiter cut by the end of input (prose ending in `<`), where it returned and the
//! result stopped further on: new bytes that make no delimiter there extend it as if it had
//! scanned to the end (`Ext::UntilAhead`).
//!
//! When an extension's check finds instead that the snapshot's leaf now returns before the
//! end of input (a chain that completes, an `until` that meets its delimiter), it knows what
//! the leaf returns without looking at the end: the machine is restored and goes on from that
//! return (`StreamParser::run_machine` with the leaf's result) rather than resuming the leaf,
//! which would scan the same bytes again.
//!
//! The commonest of those extensions (an `until`, a string body, a JSON string, a literal cut
//! short, alone or in a chain) are armed where the leaf takes the snapshot, with where its
//! scan stopped (`Machine::quick_at`, `Machine::quick`); so is a `space` or `chars` run where
//! a run ends with the result stopped at the end after it (`Machine::arm_run`), if its count
//! no longer matters. A feed then checks its new bytes for a byte that would stop the scan
//! (or, in a literal, for the literal's next bytes) and for UTF-8 validity, and moves the
//! scan to the new end (`StreamParser::quick`), before any of `feed`'s other bookkeeping.
//! Anything else takes `extend` or a run, which re-arm it.
//!
//! A run of literals and white space in a sequence (`"<tool_call>" ws "{" ws "\"name\""`) is
//! one leaf, [`Op::Chain`], whose saved state is the item it reached and where: it takes the
//! snapshot at any byte of the run, and a feed whose bytes only continue the run (in a
//! literal or in white space, without finishing it) moves that state on without running the
//! machine; a run that ends in white space at the end of input extends like `space`.
//!
//! Rules that `prog.rs` recognised as the builder's JSON value ([`Op::Json`]) run in the
//! byte-level scanner of `runtime/json.rs`, which makes the same nodes and hands over to the
//! frames here wherever it is unsure; it can also be where a stream resumes. When the latest
//! result is the scanner's own stop at the end of input and nothing changed since (the AST
//! was not asked for), the machine is exactly the snapshot's: the next feed calls the
//! scanner at its safe point directly, with no restore and no interpreter loop around it.
//!
//! Where a feed would run the machine (a leaf returns and the parse goes on to the next
//! part: a tool call's name after its opening literals, its arguments, the next call), the
//! follow check of `runtime/follow.rs` comes first: from the snapshot up through the frames
//! above it, it checks the new bytes as the machine would take them (sequences,
//! repetitions, chains, class runs, JSON values) without making nodes, and when it is sure
//! of the result (`NeedMore` at the end, or the root's `Match`) that is the feed's status
//! while the machine stays at the snapshot, behind the input (`Machine::behind`, `Ext::Follow`,
//! armed for `quick` too). A JSON value the scanner stopped in is followed the same way. The
//! machine reads what the check passed once, from the snapshot, when something needs it: the
//! AST, `finish`, or a feed the check is unsure of. A stream whose AST is read after every
//! feed gains nothing from that, so the check is not tried at those points when the AST was
//! read since the last one (`Machine::read`).

mod follow;
mod json;

use crate::ast::{Ast, AstId};
use crate::node::{Arena, Node, NodeId};
use crate::prog::{ChainItem, Op};
use crate::scan::{self, TrieMatch, Utf8};
use follow::Verdict;

/// How to parse.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// The input may be a prefix of the final text (llama.cpp's LENIENT): parsers that reach
    /// the end of input before they can decide return `NeedMore` instead of failing.
    pub partial: bool,
}

/// The result of the root parser.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Match,
    /// The input is a viable prefix; the end was reached before the parser could decide
    /// (only in partial mode).
    NeedMore,
    NoMatch,
    /// The parse gave up: it called more parsers than its step limit allows for an input of
    /// this length ([`StepLimit`]). Only a definition that backtracks excessively gets here.
    StepLimit,
}

/// Composite parsers a run may call, per input byte (plus one) and per node of the program;
/// and bytes it may read again after backtracking, likewise.
///
/// The interpreter does not memoise rule results, so a definition that calls a rule twice in
/// one alternative of itself (`k <- . k . k / ''`) takes time exponential in the input, and
/// one that scans to the end before it fails, at every offset (`k <- until("z") "y" / . k`),
/// quadratic time. A run stops after `STEPS_PER_BYTE × (input length + 1) × nodes` calls
/// instead, or once backtracking (a choice's next alternative, the end of a repetition on a
/// failed iteration, a lookahead) has gone back over that many bytes in all, which bounds
/// its time and memory for any definition and input. A memoising (packrat) parser evaluates
/// each parser at each offset at most once, so this lets a run evaluate every parser at every
/// offset 32 times over. The parsers in this repository's tests use at most one such unit
/// (on inputs of a few bytes; on long inputs, under 5%: the `step_limit` tests' definition
/// that parses each item up to eight times uses 4%).
pub const STEPS_PER_BYTE: u64 = 32;

/// Where a parse gave up (see [`Outcome::StepLimit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepLimit {
    /// The innermost rule that was open (`None`: no rule was).
    pub rule: Option<NodeId>,
    /// The offset of the parser that would have exceeded the limit.
    pub at: usize,
    /// The limit (of parser calls, and of bytes read again after backtracking) that the run
    /// reached.
    pub steps: u64,
}

impl StepLimit {
    /// A sentence for a person, naming the rule and the offset.
    pub fn describe(&self, arena: &Arena) -> String {
        let place = match self.rule.and_then(|id| arena.nodes.get(id.index())) {
            Some(Node::Rule { name, .. }) => format!("in rule `{name}`"),
            _ => "outside any rule".to_string(),
        };
        format!(
            "the parse gave up {place} at byte {}, at its step limit for this input ({} parser \
             calls, or bytes read again after backtracking): the definition backtracks \
             excessively, for example a rule that calls itself twice in one alternative, or \
             that scans to the end of input before it fails, at every offset",
            self.at, self.steps
        )
    }
}

/// The step limit of a run over `len` bytes (see [`STEPS_PER_BYTE`]).
fn step_budget(arena: &Arena, len: usize) -> u64 {
    STEPS_PER_BYTE
        .saturating_mul(len as u64 + 1)
        .saturating_mul(arena.prog.ops.len().max(1) as u64)
}

/// Outcome and extent of a parse, without the AST.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    pub outcome: Outcome,
    /// Byte offset where the root parser stopped (for `NoMatch`: where the failing parser
    /// stopped, as llama.cpp reports it; for `StepLimit`: [`StepLimit::at`]).
    pub end: usize,
}

/// A complete parse result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseResult {
    pub outcome: Outcome,
    pub end: usize,
    pub ast: Ast,
    /// With [`Outcome::StepLimit`]: where the parse gave up.
    pub step_limit: Option<StepLimit>,
}

/// Parses `input` from offset 0 with the root parser of `arena`.
pub fn parse(arena: &Arena, input: &str, options: &Options) -> ParseResult {
    // A `str` is valid UTF-8 throughout: no need to validate it again.
    parse_valid_up_to(arena, input.as_bytes(), input.len(), options)
}

/// Like [`parse`], for input that may not be UTF-8 (for example cut inside a code point).
pub fn parse_bytes(arena: &Arena, input: &[u8], options: &Options) -> ParseResult {
    let (valid_end, _) = scan::valid_end(input, 0);
    parse_valid_up_to(arena, input, valid_end, options)
}

/// Parses `input`, of which the first `valid_end` bytes are known to be valid UTF-8 and the
/// rest is not (or is cut inside a code point).
fn parse_valid_up_to(
    arena: &Arena,
    input: &[u8],
    valid_end: usize,
    options: &Options,
) -> ParseResult {
    let mut machine = Machine::new(arena, false);
    let res = machine.run(
        input,
        valid_end,
        options.partial,
        Control::Call(arena.prog.root, 0),
    );
    if let Some(limit) = machine.limit {
        return ParseResult {
            outcome: Outcome::StepLimit,
            end: limit.at,
            ast: Ast::default(),
            step_limit: Some(limit),
        };
    }
    let ast = machine.into_ast();
    ParseResult {
        outcome: res.outcome(),
        end: res.end,
        ast,
        step_limit: None,
    }
}

/// Parses text that arrives in chunks, each feed costing about the new bytes.
///
/// `feed` parses what has arrived in partial mode; `finish` parses it as complete input.
/// Both leave the parser ready for more `feed`s. [`StreamParser::ast`] is the AST of the
/// latest result.
#[derive(Debug)]
pub struct StreamParser<'a> {
    arena: &'a Arena,
    input: Vec<u8>,
    valid_end: usize,
    /// The input from `valid_end` on is invalid (not merely truncated).
    invalid: bool,
    machine: Machine<'a>,
    /// The latest status, reused while the result cannot change.
    status: Option<Status>,
}

/// The commonest extensions, checked on the chunk alone (see `StreamParser::quick`): what
/// the new bytes must not contain, or must be.
#[derive(Clone, Copy, Debug)]
enum Quick<'a> {
    /// A scan that goes on over the bytes its table lets through: an `until`'s body (up to a
    /// byte that starts a delimiter), or a run of white space or class chars (`Ext::Run`,
    /// where the result stopped at the end of input too) with no count left to check.
    Scan(&'a scan::ScanTable),
    Content(u8),
    JsonString,
    /// The follow check (`runtime/follow.rs`) from the snapshot, ASCII chunks only: the
    /// machine is behind the input (`Machine::behind`).
    Follow,
    /// A literal cut by the end of input: the input from the offset on is a proper prefix of
    /// the text.
    Literal(&'a [u8], usize),
    /// A chain (`Op::Chain`: the program's literal bytes, its items) that waits in one of its
    /// literals, cut by the end of input, or in white space before one. Bytes that go on in
    /// that literal are checked as for `Literal`; ASCII bytes after which it waits in a
    /// literal again (`chain_stop`) are what `extend` accepts, and move the snapshot's state
    /// there; ASCII bytes that complete it run the machine from its return, as `extend` does.
    Chain(&'a [u8], &'a [ChainItem]),
}

impl<'a> StreamParser<'a> {
    pub fn new(arena: &'a Arena) -> StreamParser<'a> {
        StreamParser {
            arena,
            input: Vec::new(),
            valid_end: 0,
            invalid: false,
            machine: Machine::new(arena, true),
            status: None,
        }
    }

    /// Appends `chunk` (any bytes; a code point may be split across chunks) and parses all
    /// input so far in partial mode.
    #[inline]
    pub fn feed(&mut self, chunk: &[u8]) -> Status {
        let old_len = self.input.len();
        scan::append(&mut self.input, chunk);
        if self.machine.quick_at == old_len {
            if let Some(status) = self.quick(chunk) {
                return status;
            }
        }
        self.feed_slow(chunk, old_len)
    }

    /// `feed` past `quick` (out of line, so that the quick path keeps few registers).
    #[inline(never)]
    fn feed_slow(&mut self, chunk: &[u8], old_len: usize) -> Status {
        self.sync_quick();
        let was_valid = self.valid_end == old_len;
        if was_valid && chunk.is_ascii() {
            self.valid_end = self.input.len();
        } else if !self.invalid {
            let (end, truncated) = scan::valid_end(&self.input, self.valid_end);
            self.valid_end = end;
            self.invalid = end < self.input.len() && !truncated;
        }
        if self.machine.ext != Ext::None {
            if let Some(status) = self.extend(old_len) {
                return status;
            }
        }
        self.go_on(None)
    }

    /// Where a feed would run the machine: the follow check first, if it is sure of the
    /// result, unless the AST was read since the last feed that got here (a reader that reads
    /// it after every feed would have the machine run at the read instead, from further back).
    /// `leaf`: what the snapshot's leaf returns, when an extension's check knows it.
    fn go_on(&mut self, leaf: Option<Res>) -> Status {
        if !std::mem::take(&mut self.machine.read) {
            if let Some(status) = self.follow() {
                return status;
            }
        }
        match leaf {
            Some(r) => self.run_machine(true, Some(r)),
            None => self.run(true),
        }
    }

    /// The follow check from the snapshot (`runtime/follow.rs`) over the input so far: the
    /// status it is sure of, the machine then behind the input (`Machine::behind`).
    fn follow(&mut self) -> Option<Status> {
        if self.invalid {
            return None;
        }
        let input = &self.input[..];
        let machine = &mut self.machine;
        let (outcome, end) = match machine.follow_verdict(input, self.valid_end) {
            Verdict::NeedMore(end) => (Outcome::NeedMore, end),
            Verdict::Match(end) => (Outcome::Match, end),
            Verdict::Unsure => return None,
        };
        machine.ext = Ext::Follow;
        machine.quick_at = usize::MAX;
        if outcome == Outcome::NeedMore {
            machine.arm_quick(Quick::Follow, end, input.len(), self.valid_end);
        }
        let status = Status { outcome, end };
        self.status = Some(status);
        Some(status)
    }

    /// The fastest path of `feed`, for the extensions that most feeds take (`Ext::Until`,
    /// `Ext::Content`, `Ext::JsonString`, and a literal cut short, alone or in a chain) when
    /// the leaf's scan stopped at the end of the valid input, the rest (if any) a code point
    /// cut short (`Machine::arm_quick`): new bytes none of which can stop the scan (or that
    /// continue the literal without finishing it) are what `extend` accepts, and they are
    /// read once, for stops and validity together; the scan moves to the new valid end.
    #[inline(always)]
    fn quick(&mut self, chunk: &[u8]) -> Option<Status> {
        let len = self.input.len();
        let machine = &mut self.machine;
        let input = &self.input[..];
        let from = machine.quick_from;
        let end = match machine.quick {
            Quick::Scan(table) => quick_table(input, from, table),
            Quick::Content(delimiter) => quick_scan(input, from, |b| b == delimiter || b == b'\\'),
            Quick::JsonString => quick_scan(input, from, |b| b == b'"' || b == b'\\'),
            Quick::Follow => {
                let ascii = from == len - chunk.len() && scan::ends_ascii(input, chunk.len());
                if !ascii {
                    None
                } else if let Some(end) = machine.follow.json_within(input, len) {
                    // (The commonest: JSON arguments that stay open.)
                    machine.behind = true;
                    Some(end)
                } else {
                    match machine.follow_verdict(input, len) {
                        Verdict::NeedMore(end) => Some(end),
                        _ => None,
                    }
                }
            }
            Quick::Literal(text, start) => continues(text, chunk, len - start).then_some(len),
            Quick::Chain(bytes, items) => match &mut machine.snapshot.control {
                Some(Control::Leaf(_, _, state)) => {
                    // Most feeds stay in the literal: checked as `Quick::Literal`.
                    let text = match items.get(state.count as usize) {
                        Some(&ChainItem::Literal { from, len: n }) => {
                            &bytes[from as usize..(from + n) as usize]
                        }
                        _ => &[],
                    };
                    if continues(text, chunk, len - state.pos) {
                        Some(len)
                    } else if scan::ends_ascii(input, chunk.len()) {
                        match chain_stop(bytes, items, input, *state, len - chunk.len()) {
                            ChainStop::End(now, true) => {
                                *state = now;
                                Some(len)
                            }
                            ChainStop::Done(end) => {
                                // It returns before the end: the machine goes on from there,
                                // as `extend` would have it.
                                self.sync_quick();
                                self.valid_end = len;
                                return Some(self.go_on(Some(res(Kind::Success, end))));
                            }
                            _ => None,
                        }
                    } else {
                        None
                    }
                }
                _ => None,
            },
        };
        let Some(end) = end else {
            machine.quick_at = usize::MAX;
            // `extend` would check the same bytes the same way for these (a run; an `until`
            // looks further: a byte that starts a delimiter may not start one there); in a
            // JSON string it goes on with the follow check.
            match machine.quick {
                Quick::Content(_) => machine.ext = Ext::None,
                Quick::Scan(_) if machine.ext == Ext::Run => machine.ext = Ext::None,
                Quick::JsonString => machine.ext = Ext::Follow,
                // Unless only the chunk's UTF-8 was in doubt (or the result is a match), the
                // machine reads it: the check was unsure.
                Quick::Follow if machine.follow.failed => machine.ext = Ext::None,
                _ => {}
            }
            return None;
        };
        // What else the extension changes is written when something reads it (`sync_quick`).
        machine.quick_synced = false;
        machine.quick_at = len;
        machine.quick_from = end;
        Some(Status {
            outcome: Outcome::NeedMore,
            end,
        })
    }

    /// Writes what the feeds that `quick` extended since the last call left unwritten (it
    /// keeps only where the scan stopped, `Machine::quick_from`): the valid end, the leaf's or
    /// the JSON string's end, and the result, `NeedMore` there. Called first by every path
    /// but `quick` that reads them.
    #[inline]
    fn sync_quick(&mut self) {
        let machine = &mut self.machine;
        if machine.quick_synced {
            return;
        }
        machine.quick_synced = true;
        let end = machine.quick_from;
        self.valid_end = end;
        match machine.quick {
            Quick::Scan(_) | Quick::Content(_) => {
                if let Some(Control::Leaf(_, _, state)) = &mut machine.snapshot.control {
                    state.pos = end;
                }
            }
            Quick::JsonString => machine.json_hint.1 = end,
            // The leaf waits at the same place (a chain's state moved in `quick`); the follow
            // check moved on.
            Quick::Literal(..) | Quick::Chain(..) | Quick::Follow => {}
        }
        machine.pending = Some(res(Kind::NeedMore, end));
        self.status = Some(Status {
            outcome: Outcome::NeedMore,
            end,
        });
    }

    /// The fast path of `feed`: the latest result was the `NeedMore` of the leaf (or JSON
    /// string) that took the snapshot, scanning to the end of input, and `Machine::ext` says
    /// which. If the bytes it has not scanned yet cannot change what it decides (none of them
    /// can stop it), resuming would only scan them and return `NeedMore` at the new end, take
    /// the same snapshot with the leaf further on, and stop: do exactly that without running
    /// the machine. If they make the leaf return before the end of input (a chain that
    /// completes, an `until` at its delimiter), run the machine from that return. `None`: take
    /// the normal path (which rescans the bytes).
    fn extend(&mut self, old_len: usize) -> Option<Status> {
        let machine = &mut self.machine;
        if self.invalid || !machine.snapshot.valid {
            return None;
        }
        let input = &self.input[..];
        let valid_end = self.valid_end;
        // What `quick` may extend next, and where the scan stopped.
        let mut quick = None;
        let end = match (machine.ext, machine.snapshot.control) {
            (Ext::Until | Ext::UntilAhead, Some(Control::Leaf(id, start, state))) => {
                let scanner = self.arena.scanners[id.index()].as_ref()?;
                // The leaf's own loop over the complete code points: a byte that starts a
                // delimiter is fine if no delimiter (not even a cut one) starts there.
                let mut pos = state.pos;
                let mut cut = None;
                while pos < valid_end {
                    pos = scanner.next_candidate(input, pos, valid_end);
                    if pos >= valid_end {
                        break;
                    }
                    match scanner.check_at(input, pos) {
                        TrieMatch::None => {}
                        // A delimiter ends it before the end of input: the machine goes on from
                        // its return, as resuming it would.
                        TrieMatch::Complete => {
                            return Some(self.go_on(Some(res(Kind::Success, pos))))
                        }
                        // A delimiter cut by the end of input: the `until` returns there, and
                        // what follows is known if it was seen after the same bytes before.
                        TrieMatch::Partial => {
                            let known = valid_end == input.len()
                                && pos > start
                                && machine.cut_seen.as_ref().is_some_and(|seen| {
                                    (seen.id, seen.start) == (id, start)
                                        && seen.bytes[..] == input[pos..]
                                        && seen.frames.iter().eq(machine.snapshot_frames())
                                });
                            if !known {
                                return None;
                            }
                            cut = Some(pos);
                            break;
                        }
                    }
                    pos += scan::width(input[pos]);
                }
                if let Some(pos) = cut {
                    // As the run that recorded `cut_seen` left it.
                    let state = LeafState { pos, count: 0 };
                    machine.snapshot.control = Some(Control::Leaf(id, start, state));
                    machine.ext = Ext::UntilAhead;
                    machine.stale = true;
                    input.len()
                } else {
                    let state = LeafState {
                        pos: valid_end,
                        count: 0,
                    };
                    machine.snapshot.control = Some(Control::Leaf(id, start, state));
                    // The frames went on past the leaf: `ast` remakes them from the snapshot.
                    machine.stale |= machine.ext == Ext::UntilAhead;
                    quick = Some((Quick::Scan(scanner.table()), valid_end));
                    valid_end
                }
            }
            (Ext::Content(delimiter), Some(Control::Leaf(id, start, state))) => {
                if input[state.pos..]
                    .iter()
                    .any(|&b| b == delimiter || b == b'\\')
                {
                    return None;
                }
                let state = LeafState {
                    pos: valid_end,
                    count: 0,
                };
                machine.snapshot.control = Some(Control::Leaf(id, start, state));
                quick = Some((Quick::Content(delimiter), valid_end));
                valid_end
            }
            (Ext::Literal, Some(Control::Leaf(id, start, _))) => {
                let Op::Literal { from, len } = self.arena.prog.ops[id.index()] else {
                    return None;
                };
                let text = &self.arena.prog.bytes[from as usize..(from + len) as usize];
                let have = input.len() - start;
                // Still a proper prefix of the literal (the old bytes were).
                if have >= text.len() || input[old_len..] != text[old_len - start..have] {
                    return None;
                }
                quick = Some((Quick::Literal(text, start), input.len()));
                input.len()
            }
            (Ext::Run, Some(Control::Leaf(id, start, state))) => {
                // The run reached the end of input and the result stopped there: more bytes
                // of the run move that end, and nothing between (all at the end of input,
                // after a first byte) decides otherwise.
                let at_end = Some(Status {
                    outcome: Outcome::NeedMore,
                    end: old_len,
                });
                let added = input.len() - old_len;
                if state.pos != old_len || old_len == 0 || self.status != at_end {
                    return None;
                }
                // The bytes a run takes: the same table its quick check reads.
                let (table, count) = match &self.arena.nodes[id.index()] {
                    Node::Chars(chars) => {
                        let count = state.count.saturating_add(added as u32);
                        if chars.max.is_some_and(|max| count > max)
                            // Below `min` the run's own `NeedMore` ended it. Reaching `min`,
                            // it returns at the end of input instead, and what follows must
                            // stop there as surely.
                            || (state.count < chars.min
                                && count >= chars.min
                                && !machine.needs_byte_after_leaf())
                        {
                            return None;
                        }
                        (chars.stops(), count)
                    }
                    Node::Space => (&SPACE_STOPS, 0),
                    _ => return None,
                };
                if !input[old_len..]
                    .iter()
                    .all(|&b| table.0[b as usize] == scan::ScanTable::ON)
                {
                    return None;
                }
                let state = LeafState {
                    pos: input.len(),
                    count,
                };
                machine.snapshot.control = Some(Control::Leaf(id, start, state));
                machine.stale = true;
                quick = run_stops(&self.arena.nodes[id.index()], count)
                    .map(|stops| (Quick::Scan(stops), input.len()));
                input.len()
            }
            (Ext::Chain, Some(Control::Leaf(id, start, state))) => {
                let Op::Chain { from, len } = self.arena.prog.ops[id.index()] else {
                    return None;
                };
                let prog = &self.arena.prog;
                let items = &prog.chain[from as usize..(from + len) as usize];
                let at_end = Some(Status {
                    outcome: Outcome::NeedMore,
                    end: old_len,
                });
                if self.status != at_end {
                    return None;
                }
                // Where it first meets the end of input now, and whether it then waits.
                let (now, waits) = match chain_stop(&prog.bytes, items, input, state, old_len) {
                    ChainStop::End(now, waits) => (now, waits),
                    // The chain returns before the end of input: the machine goes on from
                    // its return, as resuming it would.
                    ChainStop::Done(end) => return Some(self.go_on(Some(res(Kind::Success, end)))),
                    ChainStop::Fail => return None,
                };
                // At the snapshot, the chain met the end of input in a literal, or in white
                // space; then it waited for the first non-empty literal after it, if any.
                // (It still does when it waits now: the new bytes did not get past one.)
                if !waits
                    && items[state.count as usize..]
                        .iter()
                        .any(|item| matches!(item, ChainItem::Literal { len, .. } if *len > 0))
                {
                    return None;
                }
                let state = now;
                if !waits {
                    // As `Ext::Run`: the result stopped further on, at the end of input.
                    if old_len == 0 {
                        return None;
                    }
                    machine.stale = true;
                } else {
                    // It waits in a literal, or in white space before one.
                    quick = Some((Quick::Chain(&prog.bytes, items), input.len()));
                }
                machine.snapshot.control = Some(Control::Leaf(id, start, state));
                input.len()
            }
            (Ext::JsonString, Some(Control::Json { .. }))
                if !input[machine.json_hint.1..]
                    .iter()
                    .any(|&b| b == b'"' || b == b'\\') =>
            {
                machine.json_hint.1 = valid_end;
                quick = Some((Quick::JsonString, valid_end));
                valid_end
            }
            (Ext::JsonString | Ext::Follow, _) => return self.follow(),
            _ => return None,
        };
        if machine.pending.is_none() {
            // `ast` built the partial nodes since: back to the snapshot's state.
            machine.restore();
            if let Some(Control::Json { shape, next, pos }) = machine.snapshot.control {
                machine.json_pending = Some((shape, next, pos));
            }
        }
        machine.lazy = true;
        let r = res(Kind::NeedMore, end);
        machine.pending = Some(r);
        let status = Status {
            outcome: Outcome::NeedMore,
            end,
        };
        self.status = Some(status);
        if let Some((quick, at)) = quick {
            machine.arm_quick(quick, at, input.len(), valid_end);
        }
        Some(status)
    }

    /// Makes the parser ready for another output, as [`StreamParser::new`] would, but keeps
    /// the memory it holds (the input buffer, the AST's and the interpreter's vectors), so that
    /// a server that parses one output after another does not go back to the allocator for
    /// each. (With glibc's malloc, a dropped stream's memory may go back to the system and be
    /// faulted in again by the next one: `PERFORMANCE.md`, session 23.)
    pub fn reset(&mut self) {
        self.input.clear();
        self.valid_end = 0;
        self.invalid = false;
        self.status = None;
        let old = std::mem::replace(&mut self.machine, Machine::new(self.arena, true));
        self.machine.keep_buffers(old);
    }

    /// Parses all input so far as complete (strict mode).
    pub fn finish(&mut self) -> Status {
        self.sync_quick();
        self.run(false)
    }

    /// Where the stream gave up, if it did ([`Outcome::StepLimit`]); it stays so.
    pub fn step_limit(&self) -> Option<StepLimit> {
        self.machine.limit
    }

    /// How many of the AST's first nodes are fixed: an [`AstId`] below this number names the
    /// same node (parser, span, partial flag, children) in every later AST of this stream, so
    /// that a reader can keep what it made of them. The nodes made since the snapshot (the
    /// open parsers' partial nodes among them) are made again after the next feed, or keep
    /// their ids with their ends moved.
    ///
    /// The child lists of the open parsers' partial nodes, and the roots, are made of the
    /// parser's pending children (and one partial node, last), which only ever change at
    /// their end: so if such a list in a later AST has a fixed node at the same index as one
    /// of this AST's lists, the two lists are the same up to it.
    pub fn fixed_nodes(&self) -> usize {
        let snapshot = &self.machine.snapshot;
        if snapshot.valid {
            snapshot.ast_nodes
        } else {
            0
        }
    }

    /// The input received so far.
    pub fn input(&self) -> &[u8] {
        &self.input
    }

    /// The AST of the latest result (roots are the root parser's nodes). While streaming,
    /// the partial nodes of the open parsers are made here, on demand, so that a `feed`
    /// whose AST nobody reads costs only the new bytes.
    pub fn ast(&mut self) -> &Ast {
        self.sync_quick();
        self.machine.read = true;
        if self.machine.behind {
            // The machine reads from the snapshot what the follow check passed, and takes the
            // snapshot at the end.
            let status = self.status;
            self.run(true);
            debug_assert_eq!(
                self.status, status,
                "the follow check and the machine disagree"
            );
        }
        if let Some(r) = self.machine.pending.take() {
            let machine = &mut self.machine;
            let moved =
                machine.stale || (machine.ext == Ext::Run && machine.run_end != self.input.len());
            if machine.unwound && !moved {
                // Only the leaf's end moved since the last unwinding: so do its nodes'.
                let first = machine.snapshot.ast_nodes;
                for node in machine.ast.nodes.get_mut(first..).unwrap_or_default() {
                    node.end = r.end;
                }
                return &self.machine.ast;
            }
            let quick_at = machine.quick_at;
            machine.quick_at = usize::MAX;
            machine.lazy = false;
            // The JSON scanner stopped at the end of input without the interpreter's frames:
            // rebuild them and let the interpreter reach the end again, building the nodes.
            // Frames made stale by an extension (or unwound already): run again from the
            // snapshot.
            let rerun = moved || machine.unwound;
            let control = match machine.json_pending.take() {
                _ if rerun => {
                    machine.stale = false;
                    machine.restore();
                    Control::Resume
                }
                Some((shape, next, pos)) => {
                    machine.materialise(shape, next, pos, &self.input, self.valid_end, true)
                }
                None => Control::Return(r),
            };
            let res = machine.run(&self.input, self.valid_end, true, control);
            machine.set_roots();
            if machine.limit.is_some() {
                // (Only if the run that made the result came close to the limit.)
                self.finish_run(res);
            } else if !rerun
                && res == r
                && !self.arena.prog.has_peek
                && matches!(
                    machine.snapshot.control,
                    Some(Control::Leaf(..) | Control::Json { .. })
                )
            {
                // Passing the leaf's `NeedMore` up (or the JSON scanner's, from its safe point
                // to the string it stopped in) made only the open parsers' partial nodes,
                // ending at the result's end (no lookahead moved it): a later extension of
                // the leaf (or of the string's body; the follow check's go past the safe point
                // and are read by a run, `behind`) moves that end and nothing else, so `quick`
                // may stay armed.
                let first = machine.snapshot.ast_nodes;
                if machine.ast.nodes.get(first..).is_some_and(|nodes| {
                    nodes
                        .iter()
                        .all(|node| node.is_partial && node.end == r.end)
                }) {
                    machine.unwound = true;
                    machine.quick_at = quick_at;
                }
            }
        }
        &self.machine.ast
    }

    /// The latest result with its AST (a copy).
    pub fn result(&mut self) -> ParseResult {
        self.sync_quick();
        let status = self.status.unwrap_or(Status {
            outcome: Outcome::NeedMore,
            end: 0,
        });
        ParseResult {
            outcome: status.outcome,
            end: status.end,
            ast: self.ast().clone(),
            step_limit: self.machine.limit,
        }
    }

    fn run(&mut self, partial: bool) -> Status {
        if partial {
            if let Some(status) = self.resume_json() {
                return status;
            }
        }
        self.run_machine(partial, None)
    }

    /// The JSON scanner stopped at the end of input at the snapshot's safe point, and nothing
    /// has changed since (the AST was not built): resume the scanner directly.
    #[inline(always)]
    fn resume_json(&mut self) -> Option<Status> {
        let machine = &mut self.machine;
        // (The cheap checks first; the snapshot's control is compared in place.)
        let json = match machine.json_pending {
            Some(at)
                if machine.snapshot.valid
                    && machine.pending.is_some()
                    && matches!(&machine.snapshot.control,
                        Some(Control::Json { shape, next, pos }) if at == (*shape, *next, *pos)) =>
            {
                Some(at)
            }
            _ => None,
        };
        if let Some((shape, next, pos)) = json {
            // (Had `ast` built the nodes since, `extend` restored the snapshot's state.)
            debug_assert!(
                !machine.unwound
                    && machine.snapshot.frames_undo.is_empty()
                    && machine.snapshot.children_undo.is_empty()
                    && machine.snapshot.live_undo.is_empty()
                    && (machine.snapshot.json_live || machine.jstack == machine.snapshot.json)
            );
            machine.begin_run(true);
            let input = &self.input[..];
            let res = match machine.json_run(shape, next, pos, input, self.valid_end, true) {
                // The scanner's lazy stop (see `json_stop`), as `Machine::run` ends on it.
                Control::Return(r)
                    if r.kind == Kind::NeedMore
                        && machine.json_pending.is_some()
                        && !self.arena.prog.has_peek =>
                {
                    machine.pending = Some(r);
                    r
                }
                control => machine.run(input, self.valid_end, true, control),
            };
            return Some(self.finish_run(res));
        }
        None
    }

    /// Runs the machine from the snapshot (or from the start). `leaf`: what the snapshot's leaf
    /// returns when resumed, known from an extension's check of the new bytes (the leaf then
    /// returns before the end of input, without looking at it): the machine goes on from there.
    #[inline(never)]
    fn run_machine(&mut self, partial: bool, leaf: Option<Res>) -> Status {
        let machine = &mut self.machine;
        let control = if machine.snapshot.valid {
            machine.restore();
            leaf.map_or(Control::Resume, Control::Return)
        } else if let Some(status) = self.status {
            // Nothing looked at the end of input: the result is final.
            return status;
        } else {
            Control::Call(self.arena.prog.root, 0)
        };
        machine.begin_run(partial);
        let res = machine.run(&self.input, self.valid_end, partial, control);
        self.finish_run(res)
    }

    /// Ends a run that returned `res`: the status, and what `extend` and `ast` need.
    #[inline]
    fn finish_run(&mut self, res: Res) -> Status {
        let machine = &mut self.machine;
        // The extension applies only if the `NeedMore` of the leaf that set it is what
        // reached the root, unchanged (a lookahead would change its end).
        if machine.ext != Ext::None
            && (machine.pending != Some(res)
                || res.kind != Kind::NeedMore
                || self.arena.prog.has_peek)
        {
            machine.ext = Ext::None;
            machine.quick_at = usize::MAX;
        }
        if machine.pending.is_none() {
            machine.set_roots();
        }
        // A run that reached the end of input, and the result stopped there too: the next
        // feed's `quick` can check what `extend` would for `Ext::Run`.
        let len = self.input.len();
        machine.run_end = len;
        if machine.ext == Ext::Run && res.end == len && self.valid_end == len {
            machine.arm_run(self.arena, len);
        }
        // An `until` that returned at a delimiter cut by the end of input, and what followed
        // it waited at the end of input: remembered for the same `until` (and so the same
        // frames under it) and the same cut bytes (`extend`), where nothing depends on where
        // those bytes are (no `start`; no lookahead, checked above) and what followed read
        // only bytes from the cut on (it never went back before it: `Machine::rewound`). The
        // `until` matched something: what followed may have compared the cut with where the
        // `until` started (a repetition checks that its iteration moved on), and finds it
        // after it for any later cut of the same `until` too.
        if machine.ext == Ext::UntilAhead
            && res.end == self.input.len()
            && !self.arena.prog.has_start
            && !machine.rewound
        {
            if let Some(Control::Leaf(id, start, state)) = machine.snapshot.control.filter(
                |control| matches!(control, Control::Leaf(_, start, state) if state.pos > *start),
            ) {
                let bytes = &self.input[state.pos..];
                let seen = machine.cut_seen.as_ref().is_some_and(|seen| {
                    (seen.id, seen.start) == (id, start)
                        && seen.bytes[..] == *bytes
                        && seen.frames.iter().eq(machine.snapshot_frames())
                });
                if !seen {
                    machine.cut_seen = Some(CutSeen {
                        id,
                        start,
                        bytes: bytes.to_vec(),
                        frames: machine.snapshot_frames().copied().collect(),
                    });
                }
            }
        }
        let outcome = match res.kind {
            // (`Machine::give_up` left nothing for the extensions above to use.)
            Kind::Fail if machine.limit.is_some() => Outcome::StepLimit,
            _ => res.outcome(),
        };
        let status = Status {
            outcome,
            end: res.end,
        };
        self.status = Some(status);
        status
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Fail,
    Success,
    NeedMore,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Res {
    kind: Kind,
    end: usize,
}

impl Res {
    fn outcome(self) -> Outcome {
        match self.kind {
            Kind::Fail => Outcome::NoMatch,
            Kind::Success => Outcome::Match,
            Kind::NeedMore => Outcome::NeedMore,
        }
    }
}

const fn res(kind: Kind, end: usize) -> Res {
    Res { kind, end }
}

/// What `StreamParser::extend` may extend: the latest partial result is the `NeedMore` of
/// the snapshot's own leaf (an `until`, a string body, a literal cut short, or the JSON
/// scanner in a string body), which scanned to the end of input, or (`Run`, `Chain`,
/// `UntilAhead`) a `NeedMore` at the end of input further on, the leaf having returned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Ext {
    #[default]
    None,
    Until,
    /// An `until` that took the snapshot at a delimiter cut by the end of input and returned
    /// there, the result stopping further on (`<` at the end of prose): new bytes that make no
    /// delimiter of it extend it as `Until` (the frames, now stale, are remade for `ast`).
    UntilAhead,
    /// A `string_content` leaf with this delimiter.
    Content(u8),
    Literal,
    /// The JSON scanner stopped in a string body (with `Quick::JsonString`).
    JsonString,
    /// The latest result is the follow check's (`runtime/follow.rs`; then `Machine::behind`),
    /// or the JSON scanner stopped at a safe point outside a string, where it arms that check.
    Follow,
    /// A run of white space or class chars that reached the end of input, whether it ended
    /// the run (`NeedMore` below `min`) or returned and the run stopped further on, at the
    /// same end (then `Machine::stale`).
    Run,
    /// A chain of literals and white space (`Op::Chain`) that reached the end of input: in a
    /// literal (its own `NeedMore`), or in white space at its end (then as `Run`).
    Chain,
}

/// The builder's `space`: the bytes white space is made of (also the JSON scanner's and
/// `json::Ahead`'s table's, and the follow check's).
#[inline]
const fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C)
}

/// The bytes a run of white space stops at.
static SPACE_STOPS: scan::ScanTable = {
    let mut stops = [true; 256];
    let mut byte = 0;
    while byte < 256 {
        stops[byte] = !is_space(byte as u8);
        byte += 1;
    }
    scan::ScanTable::stopping_at(&stops)
};

/// For a run (`space`, `chars`) that reached the end of input with `count` items: the bytes
/// its scan stops at, if nothing but those bytes decides how it goes on (a class run past its
/// `min` with no `max`: its count no longer matters).
fn run_stops(node: &Node, count: u32) -> Option<&scan::ScanTable> {
    match node {
        Node::Space => Some(&SPACE_STOPS),
        Node::Chars(chars) if chars.max.is_none() && count >= chars.min => Some(chars.stops()),
        _ => None,
    }
}

/// Where a chain resumed by `chain_stop` stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChainStop {
    /// It first meets the end of input here (where it would take the snapshot), and then waits
    /// for a literal (`NeedMore`, true) or ends in white space at the end of input (false).
    End(LeafState, bool),
    /// It matches up to this offset without looking at the end of input.
    Done(usize),
    Fail,
}

/// Runs the chain `items` from `state` over `input` (`bytes`: the literals' text) to where it
/// first meets the end of input, or ends before it, or fails. The input before `checked` is
/// known to match (`state` is where the chain met the end of input when it was `checked`
/// long).
fn chain_stop(
    bytes: &[u8],
    items: &[ChainItem],
    input: &[u8],
    state: LeafState,
    checked: usize,
) -> ChainStop {
    let len = input.len();
    let (mut pos, mut at) = (state.pos, state.count as usize);
    // The literal `state` waits in (if it does) is known to match up to `checked`.
    if let Some(&ChainItem::Literal { from, len: n }) = items.get(at) {
        let text = &bytes[from as usize..(from + n) as usize];
        match chain_literal(text, input, pos, checked.saturating_sub(pos), at) {
            Ok(end) => pos = end,
            Err(stop) => return stop,
        }
        at += 1;
    }
    while let Some(&item) = items.get(at) {
        match item {
            ChainItem::Space => {
                while pos < len && is_space(input[pos]) {
                    pos += 1;
                }
                if pos >= len {
                    // It takes the snapshot here, and waits if a literal with bytes follows.
                    let waits = items[at + 1..]
                        .iter()
                        .any(|item| matches!(item, ChainItem::Literal { len, .. } if *len > 0));
                    let state = LeafState {
                        pos,
                        count: at as u32,
                    };
                    return ChainStop::End(state, waits);
                }
            }
            // Most literals in a chain are one byte of punctuation.
            ChainItem::Literal { from, len: 1 } => match input.get(pos) {
                Some(&byte) if Some(&byte) == bytes.get(from as usize) => pos += 1,
                Some(_) => return ChainStop::Fail,
                None => {
                    let state = LeafState {
                        pos,
                        count: at as u32,
                    };
                    return ChainStop::End(state, true);
                }
            },
            ChainItem::Literal { from, len: n } => {
                let text = &bytes[from as usize..(from + n) as usize];
                match chain_literal(text, input, pos, 0, at) {
                    Ok(end) => pos = end,
                    Err(stop) => return stop,
                }
            }
        }
        at += 1;
    }
    ChainStop::Done(pos)
}

/// `chain_stop` at its literal item `at`, `text`, from `pos`, the first `known` bytes of which
/// were compared already: the offset after it, or where the chain stops (a mismatch, or the
/// end of input inside it, where it waits).
#[inline(always)]
fn chain_literal(
    text: &[u8],
    input: &[u8],
    pos: usize,
    known: usize,
    at: usize,
) -> Result<usize, ChainStop> {
    // Byte by byte: the literals are short, and so is what a feed adds.
    let avail = (input.len() - pos).min(text.len());
    let known = known.min(avail);
    if !same(&input[pos + known..pos + avail], &text[known..avail]) {
        return Err(ChainStop::Fail);
    }
    if avail < text.len() {
        let state = LeafState {
            pos,
            count: at as u32,
        };
        return Err(ChainStop::End(state, true));
    }
    Ok(pos + text.len())
}

/// For `StreamParser::quick`: the new end of the valid input if no byte of `input[from..]`
/// (valid up to a code point cut at the end, from `from` on) stops the scan, and those bytes
/// are valid UTF-8 up to a code point cut at the end.
#[inline(always)]
fn quick_scan(input: &[u8], from: usize, stops: impl Fn(u8) -> bool) -> Option<usize> {
    let tail = &input[from..];
    if !tail.iter().any(|&b| b >= 0x80 || stops(b)) {
        return Some(input.len());
    }
    if tail.iter().any(|&b| stops(b)) {
        return None;
    }
    let (end, truncated) = scan::valid_end(input, from);
    (end == input.len() || truncated).then_some(end)
}

/// `quick_scan` for a `ScanTable`: one pass that ORs the bytes' entries (the chunks are
/// short, so no early exit); if one was not `ON`, out of line, one pass that checks both
/// whether the feed's own bytes show each `STOP` byte to start nothing (the `<` of `a <b>` in
/// an `until("<tool_call>")`) and the UTF-8 (`ScanTable::quick_verdict`).
#[inline(always)]
fn quick_table(input: &[u8], from: usize, table: &scan::ScanTable) -> Option<usize> {
    let entry = |byte: u8| table.0[byte as usize];
    let mut seen = scan::ScanTable::ON;
    // Four bytes a step: a token is about one step.
    let mut quads = input[from..].chunks_exact(4);
    for quad in &mut quads {
        seen |= entry(quad[0]) | entry(quad[1]) | entry(quad[2]) | entry(quad[3]);
    }
    for &byte in quads.remainder() {
        seen |= entry(byte);
    }
    if seen == scan::ScanTable::ON {
        return Some(input.len());
    }
    table.quick_verdict(&input[from..]).map(|n| from + n)
}

/// Whether `chunk`, the last of the `have` bytes of input seen since a literal `text` began,
/// goes on in it without finishing it: equal to the literal's bytes, and ending on one of
/// its code point boundaries (so valid UTF-8 up to the new end).
#[inline(always)]
fn continues(text: &[u8], chunk: &[u8], have: usize) -> bool {
    have < text.len() && same(chunk, &text[have - chunk.len()..have]) && (text[have] as i8) >= -0x40
}

/// Whether two short byte strings (a literal and input) are equal: a loop, which for the few
/// bytes of a literal costs less than the call to `memcmp` that `==` makes.
#[inline(always)]
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// Where a scanning leaf was when it reached the end of input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct LeafState {
    pos: usize,
    count: u32,
}

/// What the machine does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Control {
    /// Run a node at an offset.
    Call(NodeId, usize),
    /// Resume a leaf (started at the offset) from its saved state.
    Leaf(NodeId, usize, LeafState),
    /// Deliver a child's result to the top frame.
    Return(Res),
    /// The top frame (a repetition) decides whether to run its child again.
    Head,
    /// Continue from the snapshot's control (just restored). Its fields are read straight
    /// from the snapshot: a copy of the control through the stack, written with wide stores
    /// and read back field by field, stalled on store forwarding.
    Resume,
    /// Resume the JSON scanner (its open containers are in `Machine::jstack`).
    Json {
        shape: u32,
        next: json::Next,
        pos: usize,
    },
    /// Stop at the step limit: backtracking (`Machine::backtrack`) used up its share, in the
    /// parser at the offset.
    GiveUp(NodeId, usize),
}

/// An open composite parser.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Frame {
    node: NodeId,
    start: usize,
    /// Repetition: the offset after the last iteration.
    pos: usize,
    /// Sequence: the running child; choice: the running alternative; repetition: the count.
    index: u32,
    /// Length of the pending-children stack when the frame was entered.
    base: u32,
    /// Repetition: length of the pending-children stack before the running iteration.
    mark: u32,
}

/// The machine's state at the first end observation, kept as an undo log: frames and pending
/// children below the low-water marks are still the snapshot's; those the machine touched
/// since were saved (in descending order) before it changed them.
#[derive(Clone, Debug, Default)]
struct Snapshot {
    valid: bool,
    control: Option<Control>,
    frames_len: usize,
    frames_low: usize,
    frames_undo: Vec<Frame>,
    children_len: usize,
    children_low: usize,
    children_undo: Vec<AstId>,
    /// Pending children below `children_low` that an unwinding overwrote (`cut_partial`):
    /// their places and old values, in the order written.
    live_undo: Vec<(u32, AstId)>,
    ast_nodes: usize,
    ast_child_ids: usize,
    /// The JSON scanner's open containers, when `control` resumes it.
    json: Vec<json::Cont>,
    /// `json` has not been written: the machine's `jstack` is still the snapshot's (the
    /// scanner took the snapshot and returned without touching it).
    json_live: bool,
}

/// How a `NeedMore` that unwinds the frames to the root (making the open parsers' partial
/// nodes) sees the pending children: `ast.live[..top]`, then `tail`. Each open `rule` or
/// `tag` takes the pending children from its frame's base as its children, and leaves its
/// partial node in their place, as a finished child does; but the unwinding neither copies
/// nor truncates the children it passes (which would cost the length of an open array on
/// every read of a streamed AST, and as much again to restore them): see
/// `Machine::cut_partial`.
#[derive(Clone, Copy, Debug)]
struct Cut {
    /// `usize::MAX`: no cut (all of `ast.live` is pending).
    top: usize,
    tail: Option<AstId>,
    /// Where the lowest of the child lists that this unwinding left in place starts (they
    /// all start at `top` or above): if at `top`, `top` may not be written.
    live_from: usize,
}

impl Cut {
    const NONE: Cut = Cut {
        top: usize::MAX,
        tail: None,
        live_from: usize::MAX,
    };
}

/// A partial node's children are copied when there are at most this many (so that its
/// parent may write its id over them), and left in `Ast::live` when more.
const COPY_CHILDREN: usize = 8;

/// See `Machine::cut_seen`: the `until` (its node and start), the frames under it at the
/// snapshot, and the cut bytes.
#[derive(Clone, Debug)]
struct CutSeen {
    id: NodeId,
    start: usize,
    frames: Vec<Frame>,
    bytes: Vec<u8>,
}

#[derive(Debug)]
struct Machine<'a> {
    arena: &'a Arena,
    frames: Vec<Frame>,
    /// Also holds the pending children (`Ast::live`): the AST nodes made by finished
    /// children of open frames, in order.
    ast: Ast,
    /// Where a `NeedMore` that unwinds the frames has cut the pending children (see
    /// `Machine::cut_partial`).
    cut: Cut,
    /// Whether to take a snapshot at the first end observation.
    taking: bool,
    snapshot: Snapshot,
    /// Stop at the first `NeedMore` (which can only propagate to the root) and leave the
    /// unwinding, which only builds partial AST nodes, to `pending`.
    lazy: bool,
    pending: Option<Res>,
    /// With `pending`: the JSON scanner's safe point, where the unwinding starts instead
    /// (the scanner reached the end of input and returned without rebuilding frames).
    json_pending: Option<(u32, json::Next, usize)>,
    /// The JSON scanner's open containers (see `runtime/json.rs`).
    jstack: Vec<json::Cont>,
    /// (opening quote, offset): the JSON string opened there has been scanned up to the
    /// offset without closing, and the offset is one a scan can restart from (a fact about
    /// the input, which only grows). Streams resume in it instead of re-reading it.
    json_hint: (usize, usize),
    /// [from, to): white space up to the end of input as it was (a fact, likewise).
    space_hint: (usize, usize),
    /// How the latest partial result may be extended (see `StreamParser::extend`).
    ext: Ext,
    /// The frames are not those of the latest result: an extended `Ext::Run`, `Ext::Chain`
    /// or `Ext::UntilAhead` moved the end under them. `StreamParser::ast` runs from the
    /// snapshot instead.
    stale: bool,
    /// `StreamParser::ast` unwound the frames to build the latest result's partial nodes, and
    /// no run has restored them since: the nodes from the snapshot's on are those partial
    /// nodes alone, each ending where that result ended. A feed that only extends the
    /// snapshot's leaf (which leaves the frames alone: `quick`, or `extend` without a restore)
    /// changes nothing in them but that end, so the next `ast` moves the ends instead of
    /// restoring the snapshot and unwinding again. `restore` clears it.
    unwound: bool,
    /// The end of input when the machine last ran. A run (`Ext::Run`) that `quick` extended
    /// since left the frames stale as well (`quick` does not say so, to stay short).
    run_end: usize,
    /// The JSON scanner stops because a string body reached the end of input.
    json_string_stop: bool,
    /// The follow check from the snapshot (`Ext::Follow`).
    follow: follow::Follow,
    /// An `until` that returned at a delimiter cut by the end of input, after which the run
    /// gave `NeedMore` at the end of input (`StreamParser::finish_run`, `StreamParser::extend`).
    cut_seen: Option<CutSeen>,
    /// Where the leaf that took this run's snapshot was (0: none took it), and whether the
    /// run went back before that since (a choice's next alternative, the end of a
    /// repetition, a negation that succeeds). A leaf that returns there (a run at the end of
    /// input, an `until` at a cut delimiter) and whose result an extension assumes is what
    /// follows at the end must not let it go back: what followed then read bytes before the
    /// snapshot, which later input changes (`StreamParser::finish_run`).
    cut_floor: usize,
    rewound: bool,
    /// What the run may still re-read when it backtracks (see [`STEPS_PER_BYTE`]).
    backtrack_left: u64,
    /// The latest status comes from the follow check, not from a run: the machine is at the
    /// snapshot and has not read the bytes after it (`StreamParser::ast` has it read them).
    behind: bool,
    /// `StreamParser::ast` was called since the last feed that reached `StreamParser::go_on`.
    read: bool,
    /// The input length at which `quick` applies (`usize::MAX`: none), with `ext`.
    quick_at: usize,
    /// Where the scan that `quick` extends stopped (the end of the valid input).
    quick_from: usize,
    /// The state shows `quick`'s latest extension (see `StreamParser::sync_quick`).
    quick_synced: bool,
    /// How a feed of ASCII bytes may extend the latest result (`StreamParser::quick`).
    quick: Quick<'a>,
    /// A run reached the step limit (see [`STEPS_PER_BYTE`]): the frames are abandoned where
    /// they were, and a stream stays at this result.
    limit: Option<StepLimit>,
}

impl<'a> Machine<'a> {
    /// Clears what the previous run left for `feed`'s fast paths and `ast`, before a run (or
    /// the JSON scanner's resumption) that takes a new snapshot. A strict run may take the
    /// snapshot too: what precedes the first end observation does not depend on the mode;
    /// but only a partial run replaces the snapshot it resumed from.
    #[inline(always)]
    fn begin_run(&mut self, partial: bool) {
        self.cut = Cut::NONE;
        self.taking = true;
        self.lazy = partial;
        self.forget_result();
        self.cut_floor = 0;
        self.rewound = false;
        if partial {
            self.snapshot.valid = false;
        }
    }

    /// Forgets what the latest result left for `feed`'s fast paths and `ast`: its pending
    /// unwinding and its extensions.
    #[inline(always)]
    fn forget_result(&mut self) {
        self.pending = None;
        self.json_pending = None;
        self.ext = Ext::None;
        self.quick_at = usize::MAX;
        self.stale = false;
        self.behind = false;
    }

    /// The run goes back to `to` from `from`, where what it tried failed (or a lookahead
    /// ended): the bytes between were read for nothing, and may be read again. Charged to the
    /// run's backtracking budget; `false` when that is used up. Also notes going back before
    /// the snapshot's leaf (see `cut_floor`).
    #[inline(always)]
    fn backtrack(&mut self, to: usize, from: usize) -> bool {
        if to < self.cut_floor {
            self.rewound_before_snapshot();
        }
        let wasted = from.saturating_sub(to) as u64;
        match self.backtrack_left.checked_sub(wasted) {
            Some(left) => {
                self.backtrack_left = left;
                true
            }
            None => false,
        }
    }

    /// What followed the snapshot's leaf went back before it: no extension may assume that
    /// more bytes there only move the end, except `UntilAhead`'s, which scan to the end of
    /// input (then the `until`'s own `NeedMore` is the result) or take what `cut_seen`
    /// recorded (and this run is not recorded).
    #[cold]
    #[inline(never)]
    fn rewound_before_snapshot(&mut self) {
        self.rewound = true;
        if self.ext != Ext::UntilAhead {
            self.ext = Ext::None;
            self.quick_at = usize::MAX;
        }
    }

    fn new(arena: &'a Arena, taking: bool) -> Machine<'a> {
        Machine {
            arena,
            frames: Vec::new(),
            ast: Ast::default(),
            cut: Cut::NONE,
            taking,
            snapshot: Snapshot::default(),
            lazy: false,
            pending: None,
            json_pending: None,
            jstack: Vec::new(),
            json_hint: (usize::MAX, 0),
            space_hint: (0, 0),
            ext: Ext::None,
            stale: false,
            unwound: false,
            run_end: 0,
            json_string_stop: false,
            follow: follow::Follow::default(),
            cut_seen: None,
            cut_floor: 0,
            rewound: false,
            backtrack_left: 0,
            behind: false,
            read: false,
            quick_at: usize::MAX,
            quick_from: 0,
            quick_synced: true,
            quick: Quick::JsonString,
            limit: None,
        }
    }

    /// The follow check's verdict on the input so far, started at the snapshot if it was not
    /// (`Verdict::Unsure` if it cannot be); the machine is behind the input unless unsure.
    #[inline(always)]
    fn follow_verdict(&mut self, input: &[u8], valid_end: usize) -> Verdict {
        if !self.follow.armed && !self.start_follow() {
            return Verdict::Unsure;
        }
        let verdict = self.follow.check(self.arena, input, valid_end);
        if verdict != Verdict::Unsure {
            self.behind = true;
        }
        verdict
    }

    /// Starts the follow check at the snapshot: false if it cannot follow it (or failed there
    /// already).
    #[inline(never)]
    fn start_follow(&mut self) -> bool {
        let snapshot = &self.snapshot;
        let control = match snapshot.control {
            Some(control)
                if snapshot.valid
                    && !self.follow.failed
                    && !self.arena.prog.has_peek
                    && self.limit.is_none() =>
            {
                control
            }
            _ => return false,
        };
        let frames = self.frames[..snapshot.frames_low.min(self.frames.len())]
            .iter()
            .chain(snapshot.frames_undo.iter().rev());
        let conts = if snapshot.json_live {
            &self.jstack[..]
        } else {
            &snapshot.json[..]
        };
        let started = self.follow.start(self.arena, control, frames, conts);
        if !started {
            self.follow.failed = true;
        }
        started
    }

    /// Takes the vectors of `old` (emptied) for their memory.
    fn keep_buffers(&mut self, old: Machine<'a>) {
        fn emptied<T>(mut vec: Vec<T>) -> Vec<T> {
            vec.clear();
            vec
        }
        self.frames = emptied(old.frames);
        self.ast = old.ast;
        self.ast.clear();
        self.jstack = emptied(old.jstack);
        let snapshot = old.snapshot;
        self.snapshot.frames_undo = emptied(snapshot.frames_undo);
        self.snapshot.children_undo = emptied(snapshot.children_undo);
        self.snapshot.live_undo = emptied(snapshot.live_undo);
        self.snapshot.json = emptied(snapshot.json);
    }

    /// Called where the machine's behaviour starts to depend on the length of the input;
    /// `control` resumes the machine at this point.
    #[inline(always)]
    fn observe_end(&mut self, control: Control) -> bool {
        if self.taking && !self.snapshot.valid {
            self.take_snapshot(control);
            return true;
        }
        false
    }

    /// A leaf that just took the snapshot (`took`) returns `NeedMore` at the end of what it
    /// scanned: in lazy mode that ends the run, and `ext` says how to extend it.
    #[inline(always)]
    fn extensible(&mut self, took: bool, ext: Ext) {
        if took && self.lazy {
            self.ext = ext;
        }
    }

    /// With `extensible` (`ext` just set): the scan that set it stopped at `at`, and new
    /// bytes that `quick` accepts extend it, if that is the end of the valid input (with a
    /// cut code point after it, if any) or, for a literal, of the input.
    #[inline(always)]
    fn arm_quick(&mut self, quick: Quick<'a>, at: usize, len: usize, valid_end: usize) {
        let literal = matches!(quick, Quick::Literal(..) | Quick::Chain(..));
        if at == valid_end && (valid_end == len || !literal) {
            self.quick = quick;
            self.quick_at = len;
            self.quick_from = at;
        }
    }

    /// A run (`Ext::Run`) that reached the end of input (`len`), where the result stopped
    /// too: arms `quick` for what `extend` would check, where the run's bytes decide alone.
    #[inline(never)]
    fn arm_run(&mut self, arena: &'a Arena, len: usize) {
        if let Some(Control::Leaf(id, _, state)) = &self.snapshot.control {
            if state.pos == len && len > 0 {
                if let Some(stops) = run_stops(&arena.nodes[id.index()], state.count) {
                    self.arm_quick(Quick::Scan(stops), len, len, len);
                }
            }
        }
    }

    /// A chain met the end of input at `pos`, in its item `at`: where a stream resumes it.
    /// Whether it took the snapshot (and so set `ext`, if lazy).
    #[inline(always)]
    fn observe_chain_end(&mut self, id: NodeId, start: usize, pos: usize, at: usize) -> bool {
        let count = at as u32;
        let took = self.observe_end(Control::Leaf(id, start, LeafState { pos, count }));
        self.extensible(took, Ext::Chain);
        took
    }

    /// Records the snapshot (once per run). Inlined so that `control` is stored straight
    /// from registers: passed by reference, it was read back before its stores retired.
    #[inline(always)]
    fn take_snapshot(&mut self, control: Control) {
        self.follow.new_snapshot();
        let snapshot = &mut self.snapshot;
        snapshot.valid = true;
        snapshot.control = Some(control);
        snapshot.frames_len = self.frames.len();
        snapshot.frames_low = self.frames.len();
        snapshot.frames_undo.clear();
        snapshot.children_len = self.ast.live.len();
        snapshot.children_low = self.ast.live.len();
        snapshot.children_undo.clear();
        snapshot.live_undo.clear();
        snapshot.ast_nodes = self.ast.nodes.len();
        snapshot.ast_child_ids = self.ast.child_ids.len();
        if let Control::Leaf(_, _, state) = control {
            self.cut_floor = state.pos;
        }
    }

    /// Saves the top frame into the undo log if it belongs to the snapshot; call before
    /// changing or popping it.
    #[inline]
    fn touch_top(&mut self) {
        let top = self.frames.len().wrapping_sub(1);
        let snapshot = &mut self.snapshot;
        if snapshot.valid && top < snapshot.frames_low {
            snapshot.frames_undo.push(self.frames[top]);
            snapshot.frames_low = top;
        }
    }

    #[inline]
    fn top_mut(&mut self) -> Option<&mut Frame> {
        self.touch_top();
        self.frames.last_mut()
    }

    #[inline]
    fn pop_frame(&mut self) {
        self.touch_top();
        self.frames.pop();
    }

    #[inline]
    fn truncate_children(&mut self, len: usize) {
        let snapshot = &mut self.snapshot;
        if snapshot.valid && len < snapshot.children_low {
            snapshot
                .children_undo
                .extend(self.ast.live[len..snapshot.children_low].iter().rev());
            snapshot.children_low = len;
        }
        self.ast.live.truncate(len);
    }

    /// After a failure has truncated the pending children: drops the AST nodes that nothing
    /// can reach any more, so that a definition that backtracks a lot does not fill memory
    /// with the nodes of its failed attempts.
    ///
    /// The pending children are in increasing order (each is pushed when it is made, newer
    /// than everything before it), and a node's children are older than the node, so every
    /// node reachable from them is at most the newest one. The latest snapshot's nodes are
    /// kept too, even after a partial run has replaced it: a stream restores them, and
    /// `StreamParser::fixed_nodes` promises that they never change. Call it only where no
    /// node made since the last child push is held elsewhere (not between making a node and
    /// pushing it).
    #[inline]
    fn drop_dead_nodes(&mut self) {
        let live = self.ast.live.last().map_or(0, |id| id.0 as usize + 1);
        let keep = live.max(self.snapshot.ast_nodes);
        if keep < self.ast.nodes.len() {
            self.ast.truncate(keep);
        }
    }

    /// `truncate_children` for a failure, which also drops the failed nodes.
    #[inline]
    fn drop_children(&mut self, len: usize) {
        self.truncate_children(len);
        self.drop_dead_nodes();
    }

    /// How many of `ast.live` are pending, as an unwinding `NeedMore` sees them (see `Cut`).
    #[inline]
    fn cut_top(&self) -> usize {
        self.cut.top.min(self.ast.live.len())
    }

    /// A `NeedMore` unwinds through an `atomic` or a lookahead whose frame started at `base`:
    /// none of the nodes made inside it are pending any more.
    fn cut_drop(&mut self, base: usize) {
        self.cut = Cut {
            top: base.min(self.cut_top()),
            tail: None,
            live_from: self.cut.live_from,
        };
    }

    /// A `NeedMore` unwinds through a `rule` or `tag` (or JSON value) frame that started at
    /// `start` with `base` pending children: its partial node, ending at `end`, takes the
    /// pending children from `base` on, and is pending in their place.
    ///
    /// A short list is copied into `Ast::child_ids`, as a finished node's is. A long one (an
    /// open array's items) stays where it is in `Ast::live`, the node pointing at it, with
    /// the inner partial node (the tail) written just after it: over the first of the
    /// children that the tail (or a node inside it) copied. If a list left in place starts
    /// there, this list is copied instead. Nothing below the cut is truncated, so `restore`
    /// has nothing to put back but the few ids written over (`Snapshot::live_undo`).
    fn cut_partial(&mut self, node: NodeId, start: usize, end: usize, base: usize) {
        let top = self.cut_top();
        let Cut {
            tail, live_from, ..
        } = self.cut;
        let len = top - base + usize::from(tail.is_some());
        let (id, from) = if len <= COPY_CHILDREN || (tail.is_some() && live_from == top) {
            let id = self.ast.push_copied(node, start, end, (base, top), tail);
            (id, live_from)
        } else {
            let mut to = top;
            if let Some(tail) = tail {
                self.write_pending(top, tail);
                to += 1;
            }
            (self.ast.push_live(node, start, end, (base, to)), base)
        };
        self.cut = Cut {
            top: base,
            tail: Some(id),
            live_from: from,
        };
    }

    /// Writes the pending child at `at` (or appends it, at the end), keeping the old value for
    /// `restore` if it belongs to the snapshot.
    fn write_pending(&mut self, at: usize, id: AstId) {
        let live = &mut self.ast.live;
        if at == live.len() {
            live.push(id);
            return;
        }
        let snapshot = &mut self.snapshot;
        if snapshot.valid && at < snapshot.children_low {
            snapshot.live_undo.push((at as u32, live[at]));
        }
        live[at] = id;
    }

    /// The AST of a finished parse, with its roots: the pending children themselves, moved,
    /// when no partial node refers to them.
    fn into_ast(mut self) -> Ast {
        if self.cut.top == usize::MAX {
            self.ast.roots = std::mem::take(&mut self.ast.live);
        } else {
            self.set_roots();
        }
        self.ast
    }

    /// The root's nodes after a run: the pending children (as far as an unwinding left them).
    fn set_roots(&mut self) {
        let top = self.cut_top();
        let ast = &mut self.ast;
        ast.roots.clear();
        ast.roots.extend_from_slice(&ast.live[..top]);
        ast.roots.extend(self.cut.tail);
    }

    /// Whether a `Success` of the snapshot's leaf at the end of input ends the lazy run with
    /// `NeedMore` there, as its own `NeedMore` did: the frames above it up to the nearest
    /// sequence that goes on pass the result up, and that sequence's next item is a literal,
    /// or a chain holding one, which needs a byte. (A stream extends a run that reaches its
    /// `min` with it; not with lookahead, which `finish_run` checks.)
    fn needs_byte_after_leaf(&self) -> bool {
        let prog = &self.arena.prog;
        let Some(Control::Leaf(mut child, ..)) = self.snapshot.control else {
            return false;
        };
        for frame in self.snapshot_frames().rev() {
            match prog.ops[frame.node.index()] {
                Op::Node(inner) | Op::Atomic(inner) if inner == child => {}
                Op::Seq { from, len } => {
                    // The frame runs `child` itself: not a frameless wrapper around it (a
                    // negation of the leaf, run in `seq_run` without its frame, inverts it).
                    if prog.kids[(from + frame.index) as usize] != child {
                        return false;
                    }
                    if frame.index + 1 < len {
                        let next = prog.kids[(from + frame.index + 1) as usize];
                        return match prog.ops[next.index()] {
                            Op::Literal { len, .. } => len > 0,
                            Op::Chain { from, len } => prog.chain
                                [from as usize..(from + len) as usize]
                                .iter()
                                .any(|item| matches!(item, ChainItem::Literal { len, .. } if *len > 0)),
                            _ => false,
                        };
                    }
                    // The sequence ends with the leaf's item: its parent decides.
                }
                _ => return false,
            }
            child = frame.node;
        }
        false
    }

    /// The snapshot's frames, bottom first, whatever the machine did since (see `restore`).
    fn snapshot_frames(&self) -> impl DoubleEndedIterator<Item = &Frame> {
        let snapshot = &self.snapshot;
        self.frames[..snapshot.frames_low.min(self.frames.len())]
            .iter()
            .chain(snapshot.frames_undo.iter().rev())
    }

    /// Puts the machine back in the snapshot's state (which stays valid); `Control::Resume`
    /// then continues from it.
    fn restore(&mut self) {
        self.unwound = false;
        let snapshot = &mut self.snapshot;
        // (The logs are often empty: a feed that resumes at the snapshot's leaf and stops
        // again in it pops nothing below the snapshot.)
        self.frames.truncate(snapshot.frames_low);
        if !snapshot.frames_undo.is_empty() {
            snapshot.frames_undo.reverse();
            self.frames.extend_from_slice(&snapshot.frames_undo);
            snapshot.frames_undo.clear();
        }
        snapshot.frames_low = snapshot.frames_len;
        self.cut = Cut::NONE;
        while let Some((at, id)) = snapshot.live_undo.pop() {
            self.ast.live[at as usize] = id;
        }
        self.ast.live.truncate(snapshot.children_low);
        if !snapshot.children_undo.is_empty() {
            snapshot.children_undo.reverse();
            self.ast.live.extend_from_slice(&snapshot.children_undo);
            snapshot.children_undo.clear();
        }
        snapshot.children_low = snapshot.children_len;
        debug_assert_eq!(self.frames.len(), snapshot.frames_len);
        debug_assert_eq!(self.ast.live.len(), snapshot.children_len);
        self.ast.nodes.truncate(snapshot.ast_nodes);
        self.ast.child_ids.truncate(snapshot.ast_child_ids);
        self.ast.roots.clear();
        if let (Some(Control::Json { .. }), false) = (snapshot.control, snapshot.json_live) {
            self.jstack.clear();
            self.jstack.extend_from_slice(&snapshot.json);
        }
    }

    fn run(&mut self, input: &[u8], valid_end: usize, partial: bool, mut control: Control) -> Res {
        let ops = &self.arena.prog.ops;
        let mut steps = step_budget(self.arena, input.len());
        self.backtrack_left = steps;
        loop {
            control = match control {
                Control::GiveUp(id, pos) => return self.give_up(id, pos, input.len()),
                Control::Call(id, pos) => {
                    steps -= 1;
                    if steps == 0 {
                        return self.give_up(id, pos, input.len());
                    }
                    self.call(id, pos, input, valid_end, partial)
                }
                Control::Leaf(id, start, state) => {
                    Control::Return(self.leaf(id, start, Some(state), input, valid_end, partial))
                }
                Control::Head => self.head(input, valid_end, partial),
                Control::Json { shape, next, pos } => {
                    self.json_run(shape, next, pos, input, valid_end, partial)
                }
                Control::Resume => match self.snapshot.control {
                    Some(Control::Leaf(id, start, state)) => Control::Return(self.leaf(
                        id,
                        start,
                        Some(state),
                        input,
                        valid_end,
                        partial,
                    )),
                    Some(Control::Json { shape, next, pos }) => {
                        self.json_run(shape, next, pos, input, valid_end, partial)
                    }
                    Some(Control::Head) => self.head(input, valid_end, partial),
                    Some(Control::Resume) | None => Control::Call(self.arena.prog.root, 0),
                    Some(control) => control,
                },
                Control::Return(r) => {
                    if self.frames.is_empty() {
                        if self.json_pending.is_some() {
                            self.pending = Some(r);
                        }
                        return r;
                    }
                    if self.lazy && r.kind == Kind::NeedMore {
                        self.pending = Some(r);
                        // Only a lookahead changes the end on the way up: the outermost wins.
                        let peeks = if self.arena.prog.has_peek {
                            &self.frames[..]
                        } else {
                            &[]
                        };
                        let end = peeks
                            .iter()
                            .find(|frame| matches!(ops[frame.node.index()], Op::Peek(_)))
                            .map_or(r.end, |frame| frame.start);
                        return res(Kind::NeedMore, end);
                    }
                    self.ret(r, input, valid_end, partial)
                }
            };
        }
    }

    /// Stops the run at the step limit, naming the innermost open rule (or the one called).
    #[cold]
    #[inline(never)]
    fn give_up(&mut self, id: NodeId, pos: usize, len: usize) -> Res {
        let arena = self.arena;
        let rule = std::iter::once(id)
            .chain(self.frames.iter().rev().map(|frame| frame.node))
            .find(|&node| matches!(arena.nodes.get(node.index()), Some(Node::Rule { .. })));
        self.limit = Some(StepLimit {
            rule,
            at: pos,
            steps: step_budget(arena, len),
        });
        // The frames are abandoned: no AST, nothing to resume from or extend. Without a
        // snapshot, a stream's later `feed`s and `finish` return its status as it is
        // (`StreamParser::run_machine`).
        self.frames.clear();
        self.ast.live.clear();
        self.snapshot.valid = false;
        self.forget_result();
        res(Kind::Fail, pos)
    }

    fn call(
        &mut self,
        id: NodeId,
        pos: usize,
        input: &[u8],
        valid_end: usize,
        partial: bool,
    ) -> Control {
        let base = self.ast.live.len() as u32;
        let frame = Frame {
            node: id,
            start: pos,
            pos,
            index: 0,
            base,
            mark: base,
        };
        let arena = self.arena;
        let prog = &arena.prog;
        match prog.ops[id.index()] {
            Op::Seq { from, len } => {
                self.frames.push(frame);
                self.seq_run(from, len, pos, input, valid_end, partial)
            }
            Op::Choice { from, len } => {
                let children = &prog.kids[from as usize..(from + len) as usize];
                match children
                    .iter()
                    .position(|&alt| viable(arena, alt, input, pos))
                {
                    None => Control::Return(res(Kind::Fail, pos)),
                    Some(at) => {
                        self.frames.push(Frame {
                            index: at as u32,
                            ..frame
                        });
                        self.child(children[at], pos, input, valid_end, partial)
                    }
                }
            }
            Op::Repeat { child, min: 0, .. }
                if pos < input.len() && !prog.viable[child.index()].contains(input[pos]) =>
            {
                // Matches nothing at once (see `seq_run`).
                Control::Return(res(Kind::Success, pos))
            }
            Op::Repeat { .. } => {
                self.frames.push(frame);
                self.head(input, valid_end, partial)
            }
            Op::Peek(child) | Op::Not(child) | Op::Atomic(child) | Op::Node(child) => {
                self.frames.push(frame);
                self.child(child, pos, input, valid_end, partial)
            }
            Op::Pass(child) => Control::Call(child, pos),
            Op::Json(shape) => self.json_start(shape, pos, input, valid_end, partial),
            _ => Control::Return(self.leaf(id, pos, None, input, valid_end, partial)),
        }
    }

    /// Runs `child` of the frame just pushed: a leaf in place (its result delivered right
    /// away), anything else through the main loop.
    #[inline]
    fn child(
        &mut self,
        child: NodeId,
        pos: usize,
        input: &[u8],
        valid_end: usize,
        partial: bool,
    ) -> Control {
        if !self.arena.prog.ops[child.index()].is_leaf() {
            return Control::Call(child, pos);
        }
        let r = self.leaf(child, pos, None, input, valid_end, partial);
        if self.lazy && r.kind == Kind::NeedMore {
            return Control::Return(r);
        }
        self.ret(r, input, valid_end, partial)
    }

    /// The loop head of the repetition on top of the stack.
    fn head(&mut self, input: &[u8], valid_end: usize, partial: bool) -> Control {
        let arena = self.arena;
        let (frame, min) = loop {
            let Some(frame) = self.frames.last().copied() else {
                return Control::Return(res(Kind::Fail, 0));
            };
            let Op::Repeat { child, min, max } = arena.prog.ops[frame.node.index()] else {
                return Control::Return(res(Kind::Fail, frame.start));
            };
            let at_end = frame.pos >= input.len();
            if at_end {
                self.observe_end(Control::Head);
            }
            if !(frame.index < max && !at_end && viable(arena, child, input, frame.pos)) {
                break (frame, min);
            }
            let mark = self.ast.live.len() as u32;
            if let Some(top) = self.top_mut() {
                top.mark = mark;
            }
            if !arena.prog.ops[child.index()].is_leaf() {
                return Control::Call(child, frame.pos);
            }
            // A leaf child runs here rather than through the main loop.
            let r = self.leaf(child, frame.pos, None, input, valid_end, partial);
            if r.kind != Kind::Success || r.end <= frame.pos {
                return Control::Return(r);
            }
            if let Some(top) = self.top_mut() {
                top.pos = r.end;
                top.index += 1;
            }
        };
        let count = frame.index;
        let at_end = frame.pos >= input.len();
        self.pop_frame();
        if min > 0 && count < min {
            if at_end && partial {
                return Control::Return(res(Kind::NeedMore, frame.pos));
            }
            self.drop_children(frame.base as usize);
            return Control::Return(res(Kind::Fail, frame.pos));
        }
        Control::Return(res(Kind::Success, frame.pos))
    }

    /// Runs the sequence on top of the stack from its current child at `pos`, leaf children
    /// in place.
    fn seq_run(
        &mut self,
        from: u32,
        len: u32,
        mut pos: usize,
        input: &[u8],
        valid_end: usize,
        partial: bool,
    ) -> Control {
        let arena = self.arena;
        loop {
            let Some(top) = self.frames.last() else {
                return Control::Return(res(Kind::Fail, pos));
            };
            if top.index >= len {
                self.pop_frame();
                return Control::Return(res(Kind::Success, pos));
            }
            let child = arena.prog.kids[(from + top.index) as usize];
            let r = match arena.prog.ops[child.index()] {
                // An optional or star whose child cannot start here matches nothing at once:
                // its frame would be pushed and popped without touching anything else.
                Op::Repeat {
                    child: inner,
                    min: 0,
                    ..
                } if pos < input.len()
                    && !arena.prog.viable[inner.index()].contains(input[pos]) =>
                {
                    res(Kind::Success, pos)
                }
                // A negative lookahead of a leaf, run without its frame. The frame only
                // matters as a resumption point: if the leaf took the snapshot, the frame is
                // put back where the snapshot expects it and the result goes through it.
                Op::Not(inner) if arena.prog.ops[inner.index()].is_leaf() => {
                    let had_snapshot = self.snapshot.valid;
                    let r = self.leaf(inner, pos, None, input, valid_end, partial);
                    if self.snapshot.valid && !had_snapshot {
                        let base = self.ast.live.len() as u32;
                        self.frames.push(Frame {
                            node: child,
                            start: pos,
                            pos,
                            index: 0,
                            base,
                            mark: base,
                        });
                        self.snapshot.frames_len = self.frames.len();
                        self.snapshot.frames_low = self.frames.len();
                        if self.lazy && r.kind == Kind::NeedMore {
                            return Control::Return(r);
                        }
                        return self.ret(r, input, valid_end, partial);
                    }
                    if r.kind != Kind::NeedMore && !self.backtrack(pos, r.end) {
                        return Control::GiveUp(child, pos);
                    }
                    match r.kind {
                        Kind::Success => res(Kind::Fail, pos),
                        Kind::NeedMore => r,
                        Kind::Fail => res(Kind::Success, pos),
                    }
                }
                op if !op.is_leaf() => return Control::Call(child, pos),
                _ => self.leaf(child, pos, None, input, valid_end, partial),
            };
            if r.kind != Kind::Success {
                return Control::Return(r);
            }
            if let Some(top) = self.top_mut() {
                top.index += 1;
            }
            pos = r.end;
        }
    }

    /// Delivers a child's result `r` to the top frame.
    fn ret(&mut self, r: Res, input: &[u8], valid_end: usize, partial: bool) -> Control {
        let Some(frame) = self.frames.last().copied() else {
            return Control::Return(r);
        };
        let base = frame.base as usize;
        let start = frame.start;
        let arena = self.arena;
        let prog = &arena.prog;
        match prog.ops[frame.node.index()] {
            Op::Seq { from, len } => match r.kind {
                Kind::Success => {
                    if let Some(top) = self.top_mut() {
                        top.index += 1;
                    }
                    self.seq_run(from, len, r.end, input, valid_end, partial)
                }
                Kind::NeedMore => {
                    self.pop_frame();
                    Control::Return(r)
                }
                Kind::Fail => {
                    self.pop_frame();
                    self.drop_children(base);
                    Control::Return(r)
                }
            },
            Op::Choice { from, len } => {
                let children = &prog.kids[from as usize..(from + len) as usize];
                if r.kind != Kind::Fail {
                    self.pop_frame();
                    return Control::Return(r);
                }
                self.drop_children(base);
                let from = frame.index as usize + 1;
                let next = children[from.min(children.len())..]
                    .iter()
                    .position(|&alt| viable(arena, alt, input, start));
                match next {
                    Some(at) => {
                        if let Some(top) = self.top_mut() {
                            top.index = (from + at) as u32;
                        }
                        if !self.backtrack(start, r.end) {
                            return Control::GiveUp(frame.node, start);
                        }
                        Control::Call(children[from + at], start)
                    }
                    None => {
                        self.pop_frame();
                        Control::Return(res(Kind::Fail, start))
                    }
                }
            }
            Op::Repeat { min, .. } => match r.kind {
                Kind::Success if r.end > frame.pos => {
                    if let Some(top) = self.top_mut() {
                        top.pos = r.end;
                        top.index += 1;
                    }
                    self.head(input, valid_end, partial)
                }
                Kind::NeedMore => {
                    self.pop_frame();
                    Control::Return(r)
                }
                _ => {
                    // A failed or empty iteration ends the loop; its nodes are dropped.
                    self.drop_children(frame.mark as usize);
                    self.pop_frame();
                    if !self.backtrack(frame.pos, r.end) {
                        return Control::GiveUp(frame.node, frame.pos);
                    }
                    if min > 0 && frame.index < min {
                        // Not at the end of input here: the child ran and stopped before it.
                        debug_assert!(frame.pos < input.len());
                        self.drop_children(base);
                        return Control::Return(res(Kind::Fail, frame.pos));
                    }
                    Control::Return(res(Kind::Success, frame.pos))
                }
            },
            Op::Peek(_) => {
                self.pop_frame();
                if r.kind == Kind::NeedMore {
                    self.cut_drop(base);
                } else {
                    self.drop_children(base);
                }
                if !self.backtrack(start, r.end) {
                    return Control::GiveUp(frame.node, start);
                }
                Control::Return(res(r.kind, start))
            }
            Op::Not(_) => {
                self.pop_frame();
                match r.kind {
                    Kind::Success => {
                        self.drop_children(base);
                        if !self.backtrack(start, r.end) {
                            return Control::GiveUp(frame.node, start);
                        }
                        Control::Return(res(Kind::Fail, start))
                    }
                    Kind::NeedMore => Control::Return(r),
                    Kind::Fail => {
                        if !self.backtrack(start, r.end) {
                            return Control::GiveUp(frame.node, start);
                        }
                        Control::Return(res(Kind::Success, start))
                    }
                }
            }
            Op::Atomic(_) => {
                self.pop_frame();
                if r.kind == Kind::NeedMore {
                    self.cut_drop(base);
                }
                Control::Return(r)
            }
            Op::Node(_) | Op::Json(_) => {
                self.pop_frame();
                match r.kind {
                    Kind::Success => {
                        let id = self.ast.push_pending(frame.node, start, r.end, false, base);
                        self.truncate_children(base);
                        self.ast.live.push(id);
                    }
                    Kind::NeedMore => self.cut_partial(frame.node, start, r.end, base),
                    Kind::Fail => {}
                }
                Control::Return(r)
            }
            _ => {
                self.pop_frame();
                Control::Return(r)
            }
        }
    }

    /// Runs a leaf parser at `start` (resuming from `state` when given).
    fn leaf(
        &mut self,
        id: NodeId,
        start: usize,
        state: Option<LeafState>,
        input: &[u8],
        valid_end: usize,
        partial: bool,
    ) -> Res {
        let len = input.len();
        // What a leaf returns when the input ends before it can decide.
        let short = |end: usize| {
            if partial {
                res(Kind::NeedMore, end)
            } else {
                res(Kind::Fail, start)
            }
        };
        let prog = &self.arena.prog;
        match prog.ops[id.index()] {
            Op::Eps => res(Kind::Success, start),
            Op::Start => res(
                if start == 0 {
                    Kind::Success
                } else {
                    Kind::Fail
                },
                start,
            ),
            Op::End => {
                if start >= len {
                    self.observe_end(Control::Leaf(id, start, LeafState::default()));
                    res(Kind::Success, start)
                } else {
                    res(Kind::Fail, start)
                }
            }
            Op::Literal { from, len: n } => {
                let text = &prog.bytes[from as usize..(from + n) as usize];
                // Most literals are one byte of punctuation: decide without a slice compare.
                if let (&[byte], Some(&got)) = (text, input.get(start)) {
                    return if got == byte {
                        res(Kind::Success, start + 1)
                    } else {
                        res(Kind::Fail, start)
                    };
                }
                let avail = &input[start..len.min(start + text.len())];
                if avail != &text[..avail.len()] {
                    return res(Kind::Fail, start);
                }
                if avail.len() < text.len() {
                    let took = self.observe_end(Control::Leaf(id, start, LeafState::default()));
                    self.extensible(took, Ext::Literal);
                    if took && self.lazy {
                        self.arm_quick(Quick::Literal(text, start), len, len, valid_end);
                    }
                    return short(start + avail.len());
                }
                res(Kind::Success, start + text.len())
            }
            Op::Any => match scan::decode(input, start) {
                Utf8::Char { len, .. } => res(Kind::Success, start + len),
                Utf8::Incomplete => {
                    self.observe_end(Control::Leaf(id, start, LeafState::default()));
                    short(start)
                }
                Utf8::Invalid => res(Kind::Fail, start),
            },
            Op::Space => {
                let mut pos = state.map_or(start, |s| s.pos);
                // White space the JSON scanner already read to the end of input.
                if self.space_hint.0 <= pos && pos < self.space_hint.1 {
                    pos = self.space_hint.1;
                }
                while pos < len && matches!(input[pos], b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C)
                {
                    pos += 1;
                }
                if pos >= len {
                    let took =
                        self.observe_end(Control::Leaf(id, start, LeafState { pos, count: 0 }));
                    self.extensible(took, Ext::Run);
                }
                res(Kind::Success, pos)
            }
            Op::Chars => {
                let Node::Chars(chars) = &self.arena.nodes[id.index()] else {
                    return res(Kind::Fail, start);
                };
                let (mut pos, mut count) = state.map_or((start, 0), |s| (s.pos, s.count));
                loop {
                    if chars.max.is_some_and(|max| count >= max) {
                        break;
                    }
                    if pos < valid_end && input[pos] < 0x80 {
                        if !chars.contains(input[pos] as u32) {
                            break;
                        }
                        pos += 1;
                        count += 1;
                        continue;
                    }
                    match scan::decode(input, pos) {
                        Utf8::Char { len, cp } => {
                            if !chars.contains(cp) {
                                break;
                            }
                            pos += len;
                            count += 1;
                        }
                        Utf8::Incomplete => {
                            let took = self.observe_end(Control::Leaf(
                                id,
                                start,
                                LeafState { pos, count },
                            ));
                            if pos == len {
                                self.extensible(took, Ext::Run);
                            }
                            if count >= chars.min {
                                // What follows would stop at the end of input too (a literal
                                // next): a lazy run stops here, and `ast` runs from the
                                // snapshot for the nodes, as after an extension.
                                if took && self.lazy && pos == len && self.needs_byte_after_leaf() {
                                    self.stale = true;
                                    return res(Kind::NeedMore, pos);
                                }
                                return res(Kind::Success, pos);
                            }
                            return short(pos);
                        }
                        Utf8::Invalid => {
                            if count >= chars.min {
                                return res(Kind::Success, pos);
                            }
                            return res(Kind::Fail, start);
                        }
                    }
                }
                if count < chars.min {
                    if pos >= len {
                        self.observe_end(Control::Leaf(id, start, LeafState { pos, count }));
                        if partial {
                            return res(Kind::NeedMore, pos);
                        }
                    }
                    return res(Kind::Fail, pos);
                }
                res(Kind::Success, pos)
            }
            Op::StringContent(delimiter) => {
                let mut pos = state.map_or(start, |s| s.pos);
                // A JSON string body the scanner already read part of.
                let (quote, upto) = self.json_hint;
                if delimiter == b'"' && quote.wrapping_add(1) == start && pos < upto {
                    pos = upto;
                }
                loop {
                    while pos < valid_end && input[pos] != delimiter && input[pos] != b'\\' {
                        pos += 1;
                    }
                    if pos >= len {
                        let took =
                            self.observe_end(Control::Leaf(id, start, LeafState { pos, count: 0 }));
                        self.extensible(took, Ext::Content(delimiter));
                        if took && self.lazy {
                            self.arm_quick(Quick::Content(delimiter), pos, len, valid_end);
                        }
                        return if partial {
                            res(Kind::NeedMore, pos)
                        } else {
                            res(Kind::Fail, pos)
                        };
                    }
                    let byte = input[pos];
                    if byte == delimiter {
                        return res(Kind::Success, pos);
                    }
                    if byte == b'\\' {
                        let Some(&escaped) = input.get(pos + 1) else {
                            self.observe_end(Control::Leaf(id, start, LeafState { pos, count: 0 }));
                            return short(pos + 1);
                        };
                        match escaped {
                            b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => pos += 2,
                            _ if escaped == delimiter => pos += 2,
                            b'u' => {
                                for i in 0..4 {
                                    let Some(&digit) = input.get(pos + 2 + i) else {
                                        self.observe_end(Control::Leaf(
                                            id,
                                            start,
                                            LeafState { pos, count: 0 },
                                        ));
                                        return short(len);
                                    };
                                    if !digit.is_ascii_hexdigit() {
                                        return res(Kind::Fail, start);
                                    }
                                }
                                pos += 6;
                            }
                            _ => return res(Kind::Fail, start),
                        }
                        continue;
                    }
                    match scan::decode(input, pos) {
                        Utf8::Char { len, .. } => pos += len,
                        Utf8::Incomplete => {
                            let took = self.observe_end(Control::Leaf(
                                id,
                                start,
                                LeafState { pos, count: 0 },
                            ));
                            self.extensible(took, Ext::Content(delimiter));
                            if took && self.lazy {
                                self.arm_quick(Quick::Content(delimiter), pos, len, valid_end);
                            }
                            return short(pos);
                        }
                        Utf8::Invalid => return res(Kind::Fail, start),
                    }
                }
            }
            Op::Until => {
                let Some(scanner) = &self.arena.scanners[id.index()] else {
                    return res(Kind::Fail, start);
                };
                let mut pos = state.map_or(start, |s| s.pos);
                loop {
                    if pos < valid_end {
                        pos = scanner.next_candidate(input, pos, valid_end);
                    }
                    if pos >= len {
                        let took = self.observe_end(Control::Leaf(
                            id,
                            start,
                            LeafState { pos: len, count: 0 },
                        ));
                        self.extensible(took, Ext::Until);
                        if took && self.lazy {
                            self.arm_quick(Quick::Scan(scanner.table()), len, len, valid_end);
                        }
                        return res(
                            if partial {
                                Kind::NeedMore
                            } else {
                                Kind::Success
                            },
                            len,
                        );
                    }
                    let width = if pos < valid_end {
                        scan::width(input[pos])
                    } else {
                        match scan::decode(input, pos) {
                            Utf8::Char { len, .. } => len,
                            Utf8::Incomplete => {
                                let took = self.observe_end(Control::Leaf(
                                    id,
                                    start,
                                    LeafState { pos, count: 0 },
                                ));
                                self.extensible(took, Ext::Until);
                                if took && self.lazy {
                                    self.arm_quick(
                                        Quick::Scan(scanner.table()),
                                        pos,
                                        len,
                                        valid_end,
                                    );
                                }
                                return short(pos);
                            }
                            Utf8::Invalid => return res(Kind::Fail, start),
                        }
                    };
                    match scanner.check_at(input, pos) {
                        TrieMatch::Complete => return res(Kind::Success, pos),
                        TrieMatch::Partial => {
                            let took = self.observe_end(Control::Leaf(
                                id,
                                start,
                                LeafState { pos, count: 0 },
                            ));
                            self.extensible(took, Ext::UntilAhead);
                            return res(Kind::Success, pos);
                        }
                        TrieMatch::None => pos += width,
                    }
                }
            }
            Op::Chain { from, len: n } => {
                let items = &prog.chain[from as usize..(from + n) as usize];
                // `count` is the item to resume at (at its `pos`).
                let (mut pos, mut at) = state.map_or((start, 0), |s| (s.pos, s.count as usize));
                // Whether this chain took the snapshot, in white space at the end of input or
                // in the literal it then waits in: either way `quick` resumes it.
                let mut took = false;
                while let Some(&item) = items.get(at) {
                    match item {
                        ChainItem::Space => {
                            if self.space_hint.0 <= pos && pos < self.space_hint.1 {
                                pos = self.space_hint.1;
                            }
                            while pos < len && is_space(input[pos]) {
                                pos += 1;
                            }
                            if pos >= len {
                                took |= self.observe_chain_end(id, start, pos, at);
                            }
                        }
                        ChainItem::Literal { from, len: n } => {
                            let text = &prog.bytes[from as usize..(from + n) as usize];
                            let avail = &input[pos..len.min(pos + text.len())];
                            if avail != &text[..avail.len()] {
                                return res(Kind::Fail, pos);
                            }
                            if avail.len() < text.len() {
                                took |= self.observe_chain_end(id, start, pos, at);
                                if took && self.lazy {
                                    let quick = Quick::Chain(&prog.bytes, items);
                                    self.arm_quick(quick, len, len, valid_end);
                                }
                                return if partial {
                                    res(Kind::NeedMore, len)
                                } else {
                                    res(Kind::Fail, pos)
                                };
                            }
                            pos += text.len();
                        }
                    }
                    at += 1;
                }
                res(Kind::Success, pos)
            }
            // Composite nodes never get here; treat a stray one as a failure.
            _ => res(Kind::Fail, start),
        }
    }
}

impl Op {
    /// Whether the op runs to completion without frames.
    #[inline]
    fn is_leaf(self) -> bool {
        matches!(
            self,
            Op::Eps
                | Op::Start
                | Op::End
                | Op::Any
                | Op::Space
                | Op::Literal { .. }
                | Op::Chars
                | Op::StringContent(_)
                | Op::Until
                | Op::Chain { .. }
                | Op::Fail
        )
    }
}

/// Whether `id` might not fail at once at `pos` (false: its first byte cannot be there).
#[inline]
fn viable(arena: &Arena, id: NodeId, input: &[u8], pos: usize) -> bool {
    match input.get(pos) {
        None => true,
        Some(&byte) => arena.prog.viable[id.index()].contains(byte),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Builder;

    /// Reading a streamed AST copies no long child list (`Machine::cut_partial`): after
    /// every token of an array whose second item is a long open array, the child lists made
    /// since the snapshot hold a few ids a level, however many items are open. (Copied, the
    /// open array's list alone would grow to its 2,000 items.)
    #[test]
    fn ast_reads_copy_only_short_lists() {
        let mut p = Builder::new();
        let json = p.json();
        let json = p.tag("value", json);
        let end = p.end();
        let root = p.seq([json, end]);
        p.set_root(root);
        let arena = p.build().unwrap_or_else(|err| panic!("{err}"));
        let items = |n: usize| (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
        let text = format!("[[{}], [{}", items(50), items(2_000));
        for arena in [arena.without_json_fast_path(), arena] {
            let mut stream = StreamParser::new(&arena);
            let mut most = 0;
            for chunk in text.as_bytes().chunks(4) {
                stream.feed(chunk);
                let copied = stream.ast().child_ids.len() - stream.machine.snapshot.ast_child_ids;
                most = most.max(copied);
            }
            let ast = stream.ast();
            assert_eq!(
                ast.children(ast.roots()[0]).len(),
                1,
                "the partial `value` node"
            );
            assert!(most <= 64, "{most} child ids copied by one read");
        }
    }
}
