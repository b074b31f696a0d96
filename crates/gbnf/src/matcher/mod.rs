//! The matcher: decides, per code point and with llama.cpp's semantics, whether a grammar
//! accepts a string, a prefix of one, or neither, without llama.cpp's exponential cases.
//!
//! # Semantics
//!
//! The verdicts are those of llama.cpp's grammar sampler fed one code point at a time:
//! - [`Verdict::Accept`]: the start rule matches the whole input.
//! - [`Verdict::Prefix`]: not accepted, but llama.cpp would still have a live stack, i.e.
//!   some derivation continues the input with a terminal. This includes rules with no finite
//!   derivation: with `x ::= "b" x`, `"b"` is a prefix, exactly as in llama.cpp.
//! - [`Verdict::Reject`]: `offset` is the byte offset of the first code point that no live
//!   derivation accepts.
//!
//! `.` matches any code point, newline included; `[^…]` matches any code point outside the
//! set. Token elements (`<[id]>`, `!<[id]>`) never match characters; they are consumed with
//! [`MatchState::advance_token`]. A `<text>` token element (or its negation) needs a
//! vocabulary to resolve, so here it matches no token id at all.
//!
//! U+0000 is matched like any other code point. llama.cpp's *sampler* additionally refuses
//! any token whose text starts with NUL, whatever the grammar says, so a string with U+0000
//! is always rejected there even when the grammar allows it.
//!
//! Grammars that llama.cpp refuses but that are still context-free get the context-free
//! answer: left recursion (`x ::= x "a" | "b"`) is matched like any other rule, and
//! repetitions above llama.cpp's limit of 2000 keep their exact bounds. Missing start rules
//! and undefined rules are errors, as in llama.cpp.
//!
//! # Algorithm and complexity
//!
//! Each rule body is compiled into a small automaton (repetitions become loops or unrolled
//! chains; large repeated items become rules of their own, so nested counts add up instead
//! of multiplying). Small rules that cannot reach themselves are copied into their callers.
//! An Earley recognizer then runs over items `(state, origin, rule)`. Nullable rules are
//! handled as Aycock and Horspool suggest (prediction steps over them), and a call in tail
//! position lets the callee finish the caller directly, which keeps right recursion
//! (`x ::= "a" x | ""`) linear, as llama.cpp's stack popping does. Edges after which
//! nothing can happen are pruned, so [`MatchState::allowed_next`] is exact.
//!
//! - Worst case: O(n³) time and O(n²) memory in the input length n (highly ambiguous
//!   grammars), times a grammar-dependent factor. There is no exponential case:
//!   `"a"? × 50` is linear in the input.
//! - Typical: linear for JSON-like grammars, with a constant number of items per position.
//!   Runs of ASCII that keep a lone item in a self-loop (string bodies) take a byte-level
//!   fast path. llama.cpp's `json.gbnf` over a 1 MB document: about 30 MB/s of CPU time
//!   (`cargo bench -p gbnf --bench matcher`).
//! - Memory: per position, 4 bytes plus 16 bytes per rule predicted there. Clones of a
//!   [`MatchState`] share all but the last 1024 positions.
//! - A step limit bounds the time: [`Matcher::verdict`] gives up with
//!   [`Verdict::StepLimit`] past [`Matcher::default_step_limit`], which only the cubic
//!   cases reach (in under a second, where they would take hours).
//!   A match fed piece by piece ([`Matcher::start`]) has the same limit, growing with the
//!   input it has taken; [`MatchState::set_step_limit`] sets another.
//! - Inputs are limited to 2³² code points (positions are `u32`); beyond that, `advance`
//!   refuses.
//! - No recursion: compilation and matching use explicit stacks, so deep grammars and
//!   inputs cannot overflow the stack.

mod compile;
mod run;

use std::fmt;
use std::sync::Arc;

use crate::error::Error;
use crate::ir::{complement_ranges, CharClass, Grammar};
use crate::matcher::compile::{compile, Program, ScanKind};
use crate::matcher::run::Earley;

/// A grammar compiled for matching from one start rule.
///
/// Cloning is cheap (the compiled program is shared).
#[derive(Clone)]
pub struct Matcher {
    program: Arc<Program>,
}

/// llama.cpp's judgement of a whole input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// The input is in the language.
    Accept,
    /// The input is not in the language but can be continued.
    Prefix,
    /// The code point at byte `offset` cannot be accepted.
    Reject { offset: usize },
    /// The matcher gave up at the code point at byte `offset`: it used up its step limit
    /// (see [`Matcher::verdict`]), so the verdict is unknown. Only highly ambiguous grammars
    /// get here.
    StepLimit { offset: usize },
}

impl Verdict {
    /// The verdict's name as the `gbnf match` CLI and the snapshots write it: `ACCEPT`,
    /// `PREFIX`, `REJECT` or `STEP-LIMIT`.
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Accept => "ACCEPT",
            Verdict::Prefix => "PREFIX",
            Verdict::Reject { .. } => "REJECT",
            Verdict::StepLimit { .. } => "STEP-LIMIT",
        }
    }

    /// The byte offset of `Reject` and `StepLimit`.
    pub fn offset(&self) -> Option<usize> {
        match *self {
            Verdict::Accept | Verdict::Prefix => None,
            Verdict::Reject { offset } | Verdict::StepLimit { offset } => Some(offset),
        }
    }
}

/// The name, then the offset if there is one: `ACCEPT`, `REJECT 3`.
impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())?;
        match self.offset() {
            Some(offset) => write!(f, " {offset}"),
            None => Ok(()),
        }
    }
}

/// A match in progress, fed one code point or token at a time.
///
/// Cloning is cheap: the chart of past positions is kept in blocks of 1024 positions, and
/// full blocks are shared between clones, so a clone copies one pointer per block, the
/// last block and the current item set.
#[derive(Clone)]
pub struct MatchState {
    program: Arc<Program>,
    earley: Earley,
}

/// The steps [`Matcher::default_step_limit`] allows whatever the input's length.
const DEFAULT_STEPS: u64 = 1 << 24;

impl Matcher {
    /// Compiles `grammar` for matching from rule `root`.
    ///
    /// Fails with `MissingStartRule` when `root` is not defined, with `UndefinedRule` when
    /// any rule references an undefined rule, and with `RepetitionLimit` when repetitions
    /// would unroll to more than about four million automaton states.
    pub fn new(grammar: &Grammar, root: &str) -> Result<Matcher, Error> {
        Ok(Matcher {
            program: Arc::new(compile(grammar, root)?),
        })
    }

    /// The verdict on the whole of `input`, within the default step limit
    /// ([`Matcher::default_step_limit`]).
    pub fn verdict(&self, input: &str) -> Verdict {
        self.verdict_within(input, self.default_step_limit(input.len()))
    }

    /// The verdict on the whole of `input`, giving up ([`Verdict::StepLimit`]) after
    /// `step_limit` steps (`u64::MAX`: never).
    ///
    /// A step is one Earley item added to a set (by a scan, a prediction or a completion),
    /// or one waiting item that a completion finds in a long list. JSON-like grammars take
    /// a few steps a code point, or a few hundred; the cubic cases of highly ambiguous
    /// grammars take millions. The limit is checked before each code point's work, so a
    /// run passes it by at most one code point's steps.
    pub fn verdict_within(&self, input: &str, step_limit: u64) -> Verdict {
        let mut state = MatchState {
            earley: Earley::start(&self.program, input.len()),
            program: Arc::clone(&self.program),
        };
        state.earley.step_limit = step_limit;
        if let Err(offset) = state.advance_str(input) {
            if state.gave_up() {
                return Verdict::StepLimit { offset };
            }
            return Verdict::Reject { offset };
        }
        if state.is_accepting() {
            Verdict::Accept
        } else if state.can_continue() {
            Verdict::Prefix
        } else {
            Verdict::Reject {
                offset: input.len(),
            }
        }
    }

    /// The step limit of [`Matcher::verdict`] for an input of `len` bytes: 2²⁴ steps, plus
    /// for each byte 2¹² or 4 per state of the compiled grammar, whichever is more.
    ///
    /// Grammars that are not highly ambiguous match in linear time, with a bounded number
    /// of items a position: `json.gbnf` takes about 4 steps a byte. The cubic cases pass
    /// the limit in well under a second (about 13 ns a step here) where they would run for
    /// hours: `root ::= ("a" x x x)?`, `x ::= (root root){0,3}` needs 75M steps for 200
    /// `a`s and about 8× that for each doubling.
    pub fn default_step_limit(&self, len: usize) -> u64 {
        DEFAULT_STEPS.saturating_add((len as u64).saturating_mul(self.steps_per_byte()))
    }

    /// The default limit's allowance for each byte (see [`Matcher::default_step_limit`]).
    fn steps_per_byte(&self) -> u64 {
        (self.program.states.len() as u64)
            .saturating_mul(4)
            .max(1 << 12)
    }

    /// The state before any input, with the default step limit of [`Matcher::verdict`]
    /// for the input it takes: it gives up ([`MatchState::gave_up`]) once its work passes
    /// [`Matcher::default_step_limit`] of the number of code points (and tokens) taken so
    /// far, which only the cubic cases of highly ambiguous grammars reach.
    pub fn start(&self) -> MatchState {
        let mut earley = Earley::start(&self.program, 0);
        earley.step_limit = DEFAULT_STEPS;
        earley.step_allowance = self.steps_per_byte();
        MatchState {
            earley,
            program: Arc::clone(&self.program),
        }
    }
}

impl MatchState {
    /// Consumes code point `ch`. Returns false, and leaves the state unchanged, when the
    /// grammar cannot accept `ch` here, or when the step limit stops it ([`gave_up`]).
    ///
    /// [`gave_up`]: MatchState::gave_up
    pub fn advance(&mut self, ch: char) -> bool {
        self.earley.advance(&self.program, ch)
    }

    /// Consumes every code point of `text`. On failure returns the byte offset (in `text`)
    /// of the first code point that cannot be accepted; the state then reflects the text
    /// before it.
    pub fn advance_str(&mut self, text: &str) -> Result<(), usize> {
        let mut offset = 0;
        while offset < text.len() {
            offset += self
                .earley
                .advance_run(&self.program, &text.as_bytes()[offset..]);
            let Some(ch) = text[offset..].chars().next() else {
                break;
            };
            if !self.advance(ch) {
                return Err(offset);
            }
            offset += ch.len_utf8();
        }
        Ok(())
    }

    /// Consumes token `id`, which only token elements (`<[id]>`, `!<[id]>`) accept.
    /// Returns false, and leaves the state unchanged, when no token element accepts it.
    pub fn advance_token(&mut self, id: u32) -> bool {
        self.earley.advance_token(&self.program, id)
    }

    /// Gives up ([`MatchState::gave_up`]) once the work since the start passes `steps`
    /// (see [`Matcher::verdict_within`]), however long the input, instead of the default
    /// limit that grows with it (see [`Matcher::start`]); `u64::MAX`: never.
    pub fn set_step_limit(&mut self, steps: u64) {
        self.earley.step_limit = steps;
        self.earley.step_allowance = 0;
    }

    /// The work done since the start, in the steps of [`Matcher::verdict_within`].
    pub fn steps(&self) -> u64 {
        self.earley.steps()
    }

    /// Whether a call to `advance`, `advance_str` or `advance_token` stopped at the step
    /// limit. It then returned false as for a code point that cannot be accepted, but the
    /// verdict is unknown; the state is that before the call and takes nothing more.
    pub fn gave_up(&self) -> bool {
        self.earley.gave_up
    }

    /// Whether the input so far is in the language.
    pub fn is_accepting(&self) -> bool {
        self.earley.accepting
    }

    /// Whether some code point or token may come next.
    pub fn can_continue(&self) -> bool {
        self.earley.can_continue(&self.program)
    }

    /// Whether llama.cpp would still have a stack: the input so far is accepted or can be
    /// continued. Only the start state of a grammar whose start rule matches nothing (an
    /// empty alternation, which GBNF text cannot write) is not viable.
    pub fn is_viable(&self) -> bool {
        self.is_accepting() || self.can_continue()
    }

    /// Whether token `id` may come next.
    pub fn allows_token(&self, id: u32) -> bool {
        self.earley.current.items.iter().any(|item| {
            self.program
                .scans_of(item.state)
                .iter()
                .any(|scan| match scan.kind {
                    ScanKind::Token(want) => want == id,
                    ScanKind::NotToken(unwanted) => unwanted != id,
                    ScanKind::Class(_) | ScanKind::Any | ScanKind::Never => false,
                })
        })
    }

    /// The set of code points that may come next (empty when none may). The class is
    /// negated when that needs fewer ranges and excludes only ASCII (see [`CharClass::new`]).
    pub fn allowed_next(&self) -> CharClass {
        let mut ranges: Vec<(char, char)> = Vec::new();
        for item in &self.earley.current.items {
            for scan in self.program.scans_of(item.state) {
                match scan.kind {
                    ScanKind::Class(idx) => {
                        // Classes in the program are never negated.
                        ranges.extend_from_slice(self.program.classes[idx as usize].ranges());
                    }
                    ScanKind::Any => ranges.push(('\0', char::MAX)),
                    ScanKind::Token(_) | ScanKind::NotToken(_) | ScanKind::Never => {}
                }
            }
        }
        let positive = CharClass::new(ranges, false);
        let complement = complement_ranges(positive.ranges());
        if complement.len() < positive.ranges().len() || positive.ranges() == [('\0', char::MAX)] {
            CharClass::new(complement, true)
        } else {
            positive
        }
    }
}

impl fmt::Debug for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Matcher")
            .field("rules", &self.program.rules.len())
            .field("states", &self.program.states.len())
            .finish()
    }
}

impl fmt::Debug for MatchState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MatchState")
            .field("accepting", &self.earley.accepting)
            .field("items", &self.earley.current.items.len())
            .finish()
    }
}
