//! Compiles a [`Grammar`] into the matcher's program: one small automaton per rule, with
//! dense integer ids, so that the recognizer in `run.rs` never looks at the IR.
//!
//! Each rule body becomes a Thompson-style automaton whose edges are terminals (character
//! classes, `.`, token elements) or calls of other rules. Repetitions become loops or
//! unrolled chains, so `x*` costs no recursion at match time. Epsilon edges are then
//! removed, so that every state lists exactly the terminals and calls that can come next.
//! A call whose target is a final state without edges is a *tail call*: the recognizer
//! lets the callee finish the caller directly, like llama.cpp pops a rule reference that
//! ends its alternative, which keeps right recursion linear.

use std::collections::HashMap;

use crate::error::{Error, ErrorKind};
use crate::ir::{complement_ranges, CharClass, Expr, Grammar, RuleName, Token, TokenKind};

/// The most states a compiled grammar may have; beyond this, repetition counts are
/// almost certainly a mistake and the memory would be large.
const MAX_STATES: usize = 1 << 22;

/// The most edges a compiled grammar may have once epsilon edges are removed.
const MAX_EDGES: usize = 1 << 24;

/// A repetition is unrolled in place while (size of the repeated item) × count stays
/// below this; otherwise the item becomes a rule of its own, so that nested repetitions
/// cost the sum and not the product of their counts.
const INLINE_BUDGET: usize = 2048;

/// A rule that cannot reach itself and whose body unrolls to at most this many edges is
/// copied into its callers, which saves prediction and completion at match time.
const INLINE_RULE_SIZE: usize = 64;

/// No more rules are inlined into a rule body once its automaton has this many states,
/// so that chains of inlined rules cannot multiply sizes.
const INLINE_RULE_STATES: usize = 1024;

/// The compiled grammar.
#[derive(Debug)]
pub(crate) struct Program {
    pub(crate) states: Vec<StateInfo>,
    /// Per state, the ASCII code points after which an item in this state is the only
    /// item of the next set again, unchanged: a self-loop that no other edge shares, in a
    /// state that is neither final nor calls anything (the inside of a string, say).
    pub(crate) run_ascii: Vec<u128>,
    /// Per state, the ASCII code points some terminal edge of the state accepts.
    pub(crate) ascii_any: Vec<[u64; 2]>,
    pub(crate) scans: Vec<Scan>,
    pub(crate) calls: Vec<Call>,
    pub(crate) classes: Vec<CharClass>,
    pub(crate) rules: Vec<RuleInfo>,
    /// The start rule; always rule 0.
    pub(crate) root: u32,
}

/// One automaton state: its terminal edges are `scans[scan_lo..scan_hi]`, its calls
/// `calls[call_lo..call_hi]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StateInfo {
    pub(crate) scan_lo: u32,
    pub(crate) scan_hi: u32,
    pub(crate) call_lo: u32,
    pub(crate) call_hi: u32,
    pub(crate) is_final: bool,
}

/// A terminal edge. `ascii` answers for ASCII code points at once (bit `c` set when code
/// point `c` matches); `kind` answers for the rest and for tokens.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scan {
    pub(crate) ascii: u128,
    /// `ascii` as two words, which test faster than a `u128` shift.
    pub(crate) ascii_words: [u64; 2],
    pub(crate) kind: ScanKind,
    pub(crate) target: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScanKind {
    /// A class, by index into `Program::classes`.
    Class(u32),
    /// `.`: any code point.
    Any,
    /// `<[id]>`.
    Token(u32),
    /// `!<[id]>`: any token but this one.
    NotToken(u32),
    /// `<text>` or `!<text>`: needs a vocabulary, so it matches nothing here.
    Never,
}

/// A call of `rule`, continuing at `target` once the callee has matched.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Call {
    pub(crate) rule: u32,
    pub(crate) target: u32,
    /// `target` is final and has no edges: the callee's end is the caller's end.
    pub(crate) tail: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct RuleInfo {
    /// The grammar's name, or `name#n` for a repeated item made into a rule.
    pub(crate) name: String,
    pub(crate) start: u32,
    pub(crate) nullable: bool,
}

impl Program {
    pub(crate) fn scans_of(&self, state: u32) -> &[Scan] {
        let info = self.states[state as usize];
        &self.scans[info.scan_lo as usize..info.scan_hi as usize]
    }

    pub(crate) fn calls_of(&self, state: u32) -> &[Call] {
        let info = self.states[state as usize];
        &self.calls[info.call_lo as usize..info.call_hi as usize]
    }

    /// Whether the terminal edge `scan` accepts code point `ch`.
    #[inline]
    pub(crate) fn scan_matches(&self, scan: &Scan, ch: char) -> bool {
        let code = ch as u32;
        if code < 128 {
            return scan.ascii >> code & 1 != 0;
        }
        match scan.kind {
            ScanKind::Class(idx) => self.classes[idx as usize].contains(ch),
            ScanKind::Any => true,
            ScanKind::Token(_) | ScanKind::NotToken(_) | ScanKind::Never => false,
        }
    }
}

/// Compiles the rules reachable from `root`. Every rule of the grammar must only
/// reference defined rules (llama.cpp checks the whole grammar, so we do too).
pub(crate) fn compile(grammar: &Grammar, root: &str) -> Result<Program, Error> {
    compile_with(grammar, root, true)
}

/// [`compile`], with or without the quick refusal of rules too big to unroll (tests check
/// that it changes nothing but the time taken).
fn compile_with(grammar: &Grammar, root: &str, precheck: bool) -> Result<Program, Error> {
    let Some(root_idx) = grammar.rules.get_index_of(root) else {
        return Err(Error::new(ErrorKind::MissingStartRule {
            name: root.to_owned(),
        }));
    };
    check_references(grammar)?;

    let mut ctx = Ctx {
        grammar,
        program: Program {
            states: Vec::new(),
            run_ascii: Vec::new(),
            ascii_any: Vec::new(),
            scans: Vec::new(),
            calls: Vec::new(),
            classes: Vec::new(),
            rules: Vec::new(),
            root: 0,
        },
        rule_of_grammar_idx: HashMap::new(),
        inline_size: inline_sizes(grammar),
        bodies: Vec::new(),
        class_ids: HashMap::new(),
        n_edges: 0,
        precheck,
    };
    ctx.rule_for(root_idx);
    let mut next = 0;
    while next < ctx.bodies.len() {
        ctx.compile_rule(next)?;
        next += 1;
    }
    compute_nullable(&mut ctx.program);
    prune_dead_edges(&mut ctx.program);
    compute_runs(&mut ctx.program);
    Ok(ctx.program)
}

/// Reports the first reference (in rule order) to a rule the grammar does not define.
fn check_references(grammar: &Grammar) -> Result<(), Error> {
    for (name, body) in &grammar.rules {
        let mut stack = vec![body];
        while let Some(expr) = stack.pop() {
            match expr {
                Expr::Rule(callee) => {
                    if !grammar.rules.contains_key(callee.as_str()) {
                        return Err(Error::new(ErrorKind::UndefinedRule {
                            name: callee.to_string(),
                            rule: name.to_string(),
                        }));
                    }
                }
                Expr::Seq(items) | Expr::Alt(items) => stack.extend(items.iter().rev()),
                Expr::Repeat { expr, .. } => stack.push(expr),
                Expr::Empty | Expr::Literal(_) | Expr::Class(_) | Expr::Any | Expr::Token(_) => {}
            }
        }
    }
    Ok(())
}

struct Ctx<'g> {
    grammar: &'g Grammar,
    program: Program,
    rule_of_grammar_idx: HashMap<usize, u32>,
    /// Per grammar rule, the size of its body with inlinable rules copied in, or
    /// `usize::MAX` when it can reach itself (and so is never copied).
    inline_size: Vec<usize>,
    /// The body of each program rule, compiled in order of discovery.
    bodies: Vec<&'g Expr>,
    class_ids: HashMap<CharClass, u32>,
    n_edges: usize,
    /// Whether to refuse rules that [`Ctx::surely_too_big`] finds, before unrolling them.
    precheck: bool,
}

/// An edge label before ids are final.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Label {
    Chars(CharSet),
    Token(u32, bool),
    Never,
    Call(u32),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum CharSet {
    Any,
    /// Canonical, non-negated ranges.
    Ranges(Vec<(char, char)>),
}

/// A rule body as an automaton with epsilon edges; state 0 starts, state 1 is final.
#[derive(Default)]
struct Nfa {
    eps: Vec<Vec<u32>>,
    edges: Vec<Vec<(Label, u32)>>,
}

impl Nfa {
    fn new_state(&mut self) -> u32 {
        self.eps.push(Vec::new());
        self.edges.push(Vec::new());
        (self.eps.len() - 1) as u32
    }
}

impl<'g> Ctx<'g> {
    /// The program rule of grammar rule `idx`, queued for compilation on first use.
    fn rule_for(&mut self, idx: usize) -> u32 {
        if let Some(&id) = self.rule_of_grammar_idx.get(&idx) {
            return id;
        }
        let Some((name, body)) = self.grammar.rules.get_index(idx) else {
            return 0;
        };
        let id = self.new_rule(name.to_string(), body);
        self.rule_of_grammar_idx.insert(idx, id);
        id
    }

    fn new_rule(&mut self, name: String, body: &'g Expr) -> u32 {
        let id = self.program.rules.len() as u32;
        self.program.rules.push(RuleInfo {
            name,
            start: 0,
            nullable: false,
        });
        self.bodies.push(body);
        id
    }

    fn compile_rule(&mut self, rule: usize) -> Result<(), Error> {
        let body = self.bodies[rule];
        if self.precheck && self.surely_too_big(body) {
            return Err(self.too_big(rule));
        }
        let mut nfa = Nfa::default();
        let start = nfa.new_state();
        let end = nfa.new_state();
        let mut tasks: Vec<(&'g Expr, u32, u32)> = vec![(body, start, end)];
        while let Some((expr, from, to)) = tasks.pop() {
            if nfa.eps.len() > MAX_STATES {
                return Err(self.too_big(rule));
            }
            match expr {
                Expr::Empty => nfa.eps[from as usize].push(to),
                Expr::Literal(text) => {
                    let mut cur = from;
                    let mut chars = text.chars().peekable();
                    while let Some(ch) = chars.next() {
                        let next = if chars.peek().is_some() {
                            nfa.new_state()
                        } else {
                            to
                        };
                        nfa.edges[cur as usize]
                            .push((Label::Chars(CharSet::Ranges(vec![(ch, ch)])), next));
                        cur = next;
                    }
                    if text.is_empty() {
                        nfa.eps[from as usize].push(to);
                    }
                }
                Expr::Class(class) => {
                    nfa.edges[from as usize].push((Label::Chars(char_set(class)), to));
                }
                Expr::Any => nfa.edges[from as usize].push((Label::Chars(CharSet::Any), to)),
                Expr::Token(token) => nfa.edges[from as usize].push((token_label(token), to)),
                Expr::Rule(name) => {
                    let Some(idx) = self.grammar.rules.get_index_of(name.as_str()) else {
                        return Err(Error::new(ErrorKind::UndefinedRule {
                            name: name.to_string(),
                            rule: self.program.rules[rule].name.clone(),
                        }));
                    };
                    if let Some(body) = self.inlinable(idx, nfa.eps.len()) {
                        tasks.push((body, from, to));
                        continue;
                    }
                    let callee = self.rule_for(idx);
                    nfa.edges[from as usize].push((Label::Call(callee), to));
                }
                Expr::Seq(items) => {
                    let mut cur = from;
                    for (i, item) in items.iter().enumerate() {
                        let next = if i + 1 == items.len() {
                            to
                        } else {
                            nfa.new_state()
                        };
                        tasks.push((item, cur, next));
                        cur = next;
                    }
                    if items.is_empty() {
                        nfa.eps[from as usize].push(to);
                    }
                }
                Expr::Alt(items) => {
                    for item in items {
                        // Each alternative gets its own entry and exit, so that loops inside
                        // one alternative cannot leak into another.
                        let entry = nfa.new_state();
                        let exit = nfa.new_state();
                        nfa.eps[from as usize].push(entry);
                        nfa.eps[exit as usize].push(to);
                        tasks.push((item, entry, exit));
                    }
                }
                Expr::Repeat {
                    expr: item,
                    min,
                    max,
                } => {
                    let count = (*min as usize).max(max.map_or(0, |m| m as usize)).max(1);
                    let size = expr_size(item, INLINE_BUDGET + 1, &|name| self.rule_cost(name));
                    let item_label_rule = if size > 1 && size.saturating_mul(count) > INLINE_BUDGET
                    {
                        let name =
                            format!("{}#{}", self.program.rules[rule].name, self.bodies.len());
                        Some(self.new_rule(name, item))
                    } else {
                        None
                    };
                    if (*min as usize).saturating_add(max.map_or(1, |m| m as usize)) > MAX_STATES {
                        return Err(self.too_big(rule));
                    }
                    let copy = |nfa: &mut Nfa,
                                tasks: &mut Vec<(&'g Expr, u32, u32)>,
                                a: u32,
                                b: u32| {
                        match item_label_rule {
                            Some(callee) => nfa.edges[a as usize].push((Label::Call(callee), b)),
                            None => tasks.push((item, a, b)),
                        }
                    };
                    let mut cur = from;
                    for _ in 0..*min {
                        let next = nfa.new_state();
                        copy(&mut nfa, &mut tasks, cur, next);
                        cur = next;
                    }
                    match max {
                        None => {
                            let hub = nfa.new_state();
                            nfa.eps[cur as usize].push(hub);
                            copy(&mut nfa, &mut tasks, hub, hub);
                            nfa.eps[hub as usize].push(to);
                        }
                        Some(max) => {
                            for _ in *min..*max {
                                nfa.eps[cur as usize].push(to);
                                let next = nfa.new_state();
                                copy(&mut nfa, &mut tasks, cur, next);
                                cur = next;
                            }
                            nfa.eps[cur as usize].push(to);
                        }
                    }
                }
            }
        }
        self.add_rule_states(rule, nfa)
    }

    /// Whether unrolling `body` below is certain to stop with [`Ctx::too_big`], found in
    /// one linear pass instead of by building millions of states (nested loops multiply
    /// their copies: 10,000 nested `+` would take seconds to refuse).
    ///
    /// The pass counts the states the unrolling creates, leaving out rules it would copy
    /// in (so the count is a lower bound), and the most states one step creates. The
    /// unrolling refuses the rule when it starts a step with more than `MAX_STATES`
    /// states, so a lower bound that exceeds `MAX_STATES` by more than the largest step
    /// means it must refuse, and refusing here gives the same error. A repetition whose
    /// counts exceed `MAX_STATES` is refused when its step is reached, so it is too.
    fn surely_too_big(&self, body: &'g Expr) -> bool {
        /// Per node: its size as `expr_size` counts it (saturating), a lower bound of the
        /// states it unrolls to, and whether it holds a repetition refused outright.
        #[derive(Clone, Copy)]
        struct Count {
            size: usize,
            states: usize,
            huge: bool,
        }
        let mut largest_step = 0usize;
        let mut stack: Vec<(&Expr, bool)> = vec![(body, false)];
        let mut done: Vec<Count> = Vec::new();
        while let Some((expr, children_done)) = stack.pop() {
            if !children_done {
                stack.push((expr, true));
                match expr {
                    Expr::Seq(items) | Expr::Alt(items) => {
                        stack.extend(items.iter().map(|item| (item, false)))
                    }
                    Expr::Repeat { expr: item, .. } => stack.push((item, false)),
                    _ => {}
                }
                continue;
            }
            let count = match expr {
                Expr::Empty => Count {
                    size: 0,
                    states: 0,
                    huge: false,
                },
                Expr::Literal(text) => {
                    let chars = text.chars().count();
                    largest_step = largest_step.max(chars);
                    Count {
                        size: chars,
                        states: chars.saturating_sub(1),
                        huge: false,
                    }
                }
                Expr::Class(_) | Expr::Any | Expr::Token(_) => Count {
                    size: 1,
                    states: 0,
                    huge: false,
                },
                Expr::Rule(name) => Count {
                    size: self.rule_cost(name),
                    states: 0,
                    huge: false,
                },
                Expr::Seq(items) | Expr::Alt(items) => {
                    let n = items.len();
                    let mut sum = Count {
                        size: 0,
                        states: if matches!(expr, Expr::Seq(_)) {
                            n.saturating_sub(1)
                        } else {
                            n.saturating_mul(2)
                        },
                        huge: false,
                    };
                    largest_step = largest_step.max(sum.states);
                    for child in done.drain(done.len().saturating_sub(n)..) {
                        sum.size = sum.size.saturating_add(child.size);
                        sum.states = sum.states.saturating_add(child.states);
                        sum.huge |= child.huge;
                    }
                    sum
                }
                Expr::Repeat { min, max, .. } => {
                    let item = done.pop().unwrap_or(Count {
                        size: 0,
                        states: 0,
                        huge: false,
                    });
                    let min = *min as usize;
                    let count = min.max(max.map_or(0, |m| m as usize)).max(1);
                    let size_count = min.max(max.map_or(min, |m| m as usize)).max(1);
                    // As in `compile_rule`: a large item becomes a rule of its own, and
                    // its copies are call edges.
                    let extracted =
                        item.size > 1 && item.size.saturating_mul(count) > INLINE_BUDGET;
                    let (own, copies) = match max {
                        None => (min.saturating_add(1), min.saturating_add(1)),
                        Some(max) => {
                            let extra = (*max as usize).saturating_sub(min);
                            (min.saturating_add(extra), min.saturating_add(extra))
                        }
                    };
                    largest_step = largest_step.max(own);
                    let huge = min.saturating_add(max.map_or(1, |m| m as usize)) > MAX_STATES;
                    let item_states = if extracted { 0 } else { item.states };
                    Count {
                        size: item.size.saturating_mul(size_count),
                        states: own.saturating_add(copies.saturating_mul(item_states)),
                        huge: huge || (!extracted && item.huge),
                    }
                }
            };
            done.push(count);
        }
        let Some(total) = done.pop() else {
            return false;
        };
        // The start and final states come first.
        total.huge || total.states.saturating_add(2).saturating_sub(largest_step) > MAX_STATES
    }

    /// The body of grammar rule `idx` if it should be copied into its caller, whose
    /// automaton has `n_states` states so far.
    fn inlinable(&self, idx: usize, n_states: usize) -> Option<&'g Expr> {
        if self.inline_size[idx] > INLINE_RULE_SIZE || n_states > INLINE_RULE_STATES {
            return None;
        }
        self.grammar.rules.get_index(idx).map(|(_, body)| body)
    }

    /// The size a reference to `name` unrolls to: its inlined size, or one call edge.
    fn rule_cost(&self, name: &RuleName) -> usize {
        match self.grammar.rules.get_index_of(name.as_str()) {
            Some(idx) if self.inline_size[idx] <= INLINE_RULE_SIZE => self.inline_size[idx],
            _ => 1,
        }
    }

    fn too_big(&self, rule: usize) -> Error {
        Error::new(ErrorKind::RepetitionLimit {
            rule: self.program.rules[rule].name.clone(),
            message: "the grammar is too large to match (repetition counts multiply)".to_owned(),
        })
    }

    /// Removes epsilon edges from `nfa`, merges parallel character edges, and appends the
    /// states reachable from the start to the program.
    fn add_rule_states(&mut self, rule: usize, nfa: Nfa) -> Result<(), Error> {
        let n = nfa.eps.len();
        // Visit the states reachable from the start through real edges, computing each
        // one's epsilon closure on first visit; unreachable states (most entries of
        // alternatives) are never closed, which keeps deep nesting linear.
        let mut stamp = vec![u32::MAX; n];
        let mut stack = Vec::new();
        let mut closed_edges: Vec<Vec<(Label, u32)>> = vec![Vec::new(); n];
        let mut is_final = vec![false; n];
        let mut local_to_global = vec![u32::MAX; n];
        let mut order = vec![0u32];
        local_to_global[0] = self.program.states.len() as u32;
        let mut next = 0;
        let mut n_closed_edges = 0usize;
        while next < order.len() {
            let s = order[next] as usize;
            next += 1;
            stack.clear();
            stack.push(s as u32);
            stamp[s] = s as u32;
            let mut edges: Vec<(Label, u32)> = Vec::new();
            while let Some(t) = stack.pop() {
                if t == 1 {
                    is_final[s] = true;
                }
                edges.extend(nfa.edges[t as usize].iter().cloned());
                for &u in &nfa.eps[t as usize] {
                    if stamp[u as usize] != s as u32 {
                        stamp[u as usize] = s as u32;
                        stack.push(u);
                    }
                }
            }
            let edges = merge_edges(edges);
            n_closed_edges += edges.len();
            if self.n_edges + n_closed_edges > MAX_EDGES {
                return Err(self.too_big(rule));
            }
            for (_, target) in &edges {
                if local_to_global[*target as usize] == u32::MAX {
                    local_to_global[*target as usize] =
                        (self.program.states.len() + order.len()) as u32;
                    order.push(*target);
                }
            }
            closed_edges[s] = edges;
        }
        if self.program.states.len() + order.len() > MAX_STATES {
            return Err(self.too_big(rule));
        }
        self.program.rules[rule].start = local_to_global[0];
        for &s in &order {
            let s = s as usize;
            self.n_edges += closed_edges[s].len();
            if self.n_edges > MAX_EDGES {
                return Err(self.too_big(rule));
            }
            let scan_lo = self.program.scans.len() as u32;
            let call_lo = self.program.calls.len() as u32;
            for (label, target) in &closed_edges[s] {
                let global_target = local_to_global[*target as usize];
                let (ascii, kind) = match label {
                    Label::Call(callee) => {
                        let t = *target as usize;
                        let tail = is_final[t] && closed_edges[t].is_empty();
                        self.program.calls.push(Call {
                            rule: *callee,
                            target: global_target,
                            tail,
                        });
                        continue;
                    }
                    Label::Chars(CharSet::Any) => (u128::MAX, ScanKind::Any),
                    Label::Chars(CharSet::Ranges(ranges)) => {
                        let class = CharClass::new(ranges.iter().copied(), false);
                        let ascii = ascii_bits(&class);
                        let next_id = self.program.classes.len() as u32;
                        let id = *self.class_ids.entry(class.clone()).or_insert(next_id);
                        if id == next_id {
                            self.program.classes.push(class);
                        }
                        (ascii, ScanKind::Class(id))
                    }
                    Label::Token(id, false) => (0, ScanKind::Token(*id)),
                    Label::Token(id, true) => (0, ScanKind::NotToken(*id)),
                    Label::Never => (0, ScanKind::Never),
                };
                self.program.scans.push(Scan {
                    ascii,
                    ascii_words: [ascii as u64, (ascii >> 64) as u64],
                    kind,
                    target: global_target,
                });
            }
            self.program.states.push(StateInfo {
                scan_lo,
                scan_hi: self.program.scans.len() as u32,
                call_lo,
                call_hi: self.program.calls.len() as u32,
                is_final: is_final[s],
            });
        }
        Ok(())
    }
}

/// Deduplicates edges and merges character edges that lead to the same state into one
/// class, so that `[a-z] | [0-9]` costs one test.
fn merge_edges(mut edges: Vec<(Label, u32)>) -> Vec<(Label, u32)> {
    edges.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
    edges.dedup();
    let mut out: Vec<(Label, u32)> = Vec::with_capacity(edges.len());
    for (label, target) in edges {
        if let Some((Label::Chars(prev), prev_target)) = out.last_mut() {
            if *prev_target == target {
                if let Label::Chars(set) = &label {
                    *prev = union(prev, set);
                    continue;
                }
            }
        }
        out.push((label, target));
    }
    out
}

fn union(a: &CharSet, b: &CharSet) -> CharSet {
    match (a, b) {
        (CharSet::Ranges(x), CharSet::Ranges(y)) => {
            let merged = CharClass::new(x.iter().chain(y).copied(), false);
            CharSet::Ranges(merged.ranges().to_vec())
        }
        _ => CharSet::Any,
    }
}

/// The positive ranges of `class` (a negated class is complemented).
fn char_set(class: &CharClass) -> CharSet {
    if !class.is_negated() {
        return CharSet::Ranges(class.ranges().to_vec());
    }
    let out = complement_ranges(class.ranges());
    if out.len() == 1 && out[0] == ('\0', char::MAX) {
        return CharSet::Any;
    }
    CharSet::Ranges(out)
}

fn token_label(token: &Token) -> Label {
    match &token.kind {
        TokenKind::Id(id) => Label::Token(*id, token.negated),
        TokenKind::Text(_) => Label::Never,
    }
}

pub(crate) fn ascii_bits(class: &CharClass) -> u128 {
    let mut bits = 0u128;
    for code in 0..128u8 {
        if class.contains(code as char) {
            bits |= 1 << code;
        }
    }
    bits
}

/// The number of automaton edges `expr` unrolls to, counted up to `cap`.
/// `rule_cost` gives the size of a rule reference.
fn expr_size(expr: &Expr, cap: usize, rule_cost: &dyn Fn(&RuleName) -> usize) -> usize {
    let mut size = 0usize;
    let mut stack = vec![(expr, 1usize)];
    while let Some((expr, factor)) = stack.pop() {
        if size > cap {
            return size;
        }
        match expr {
            Expr::Empty => {}
            Expr::Literal(text) => {
                size = size.saturating_add(factor.saturating_mul(text.chars().count()))
            }
            Expr::Class(_) | Expr::Any | Expr::Token(_) => size = size.saturating_add(factor),
            Expr::Rule(name) => size = size.saturating_add(factor.saturating_mul(rule_cost(name))),
            Expr::Seq(items) | Expr::Alt(items) => {
                stack.extend(items.iter().map(|item| (item, factor)))
            }
            Expr::Repeat { expr, min, max } => {
                let count = (*min as usize)
                    .max(max.map_or(*min as usize, |m| m as usize))
                    .max(1);
                stack.push((expr, factor.saturating_mul(count)));
            }
        }
    }
    size
}

/// Marks rules that derive the empty string, by fixpoint over the automata: a rule is
/// nullable when a final state can be reached from its start through calls of nullable
/// rules only.
fn compute_nullable(program: &mut Program) {
    let mut seen = vec![u32::MAX; program.states.len()];
    let mut stack = Vec::new();
    let mut round = 0u32;
    loop {
        let mut changed = false;
        for rule in (0..program.rules.len()).rev() {
            if program.rules[rule].nullable {
                continue;
            }
            round += 1;
            let start = program.rules[rule].start;
            stack.clear();
            stack.push(start);
            seen[start as usize] = round;
            let mut nullable = false;
            while let Some(s) = stack.pop() {
                if program.states[s as usize].is_final {
                    nullable = true;
                    break;
                }
                for call in program.calls_of(s) {
                    if program.rules[call.rule as usize].nullable
                        && seen[call.target as usize] != round
                    {
                        seen[call.target as usize] = round;
                        stack.push(call.target);
                    }
                }
            }
            if nullable {
                program.rules[rule].nullable = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
}

/// Removes edges after which nothing can happen: no terminal can come next and the rule
/// cannot finish. llama.cpp drops such stacks while expanding them, so without this
/// pruning, `allowed_next` would offer code points that `advance` refuses. Only grammars
/// llama.cpp refuses (rules that only call themselves) or empty alternations have them.
fn prune_dead_edges(program: &mut Program) {
    let n = program.states.len();
    loop {
        // Least fixpoint of "a terminal can come next" and "the rule can finish", both
        // without consuming input.
        let mut prefix = vec![false; n];
        let mut finish = vec![false; n];
        let mut changed = true;
        while changed {
            changed = false;
            for state in (0..n).rev() {
                let info = program.states[state];
                let mut p = info.scan_lo != info.scan_hi;
                let mut f = info.is_final;
                for call in program.calls_of(state as u32) {
                    let callee = &program.rules[call.rule as usize];
                    let target = call.target as usize;
                    p |= prefix[callee.start as usize] || (callee.nullable && prefix[target]);
                    f |= callee.nullable && finish[target];
                }
                if p != prefix[state] || f != finish[state] {
                    prefix[state] = p;
                    finish[state] = f;
                    changed = true;
                }
            }
        }
        let alive = |state: u32| prefix[state as usize] || finish[state as usize];
        let mut scans = Vec::with_capacity(program.scans.len());
        let mut calls = Vec::with_capacity(program.calls.len());
        let mut states = Vec::with_capacity(n);
        for state in 0..n as u32 {
            let scan_lo = scans.len() as u32;
            scans.extend(
                program
                    .scans_of(state)
                    .iter()
                    .filter(|scan| alive(scan.target)),
            );
            let call_lo = calls.len() as u32;
            calls.extend(program.calls_of(state).iter().filter(|call| {
                alive(call.target) && alive(program.rules[call.rule as usize].start)
            }));
            states.push(StateInfo {
                scan_lo,
                scan_hi: scans.len() as u32,
                call_lo,
                call_hi: calls.len() as u32,
                is_final: program.states[state as usize].is_final,
            });
        }
        let removed = scans.len() != program.scans.len() || calls.len() != program.calls.len();
        program.scans = scans;
        program.calls = calls;
        program.states = states;
        if !removed {
            break;
        }
    }
}

/// Fills `Program::run_ascii` and `Program::ascii_any`.
fn compute_runs(program: &mut Program) {
    program.ascii_any = (0..program.states.len() as u32)
        .map(|state| {
            let any = program
                .scans_of(state)
                .iter()
                .fold(0u128, |acc, scan| acc | scan.ascii);
            [any as u64, (any >> 64) as u64]
        })
        .collect();
    program.run_ascii = (0..program.states.len() as u32)
        .map(|state| {
            let info = program.states[state as usize];
            if info.is_final || info.call_lo != info.call_hi {
                return 0;
            }
            let mut looping = 0u128;
            let mut leaving = 0u128;
            for scan in program.scans_of(state) {
                if scan.target == state {
                    looping |= scan.ascii;
                } else {
                    leaving |= scan.ascii;
                }
            }
            looping & !leaving
        })
        .collect();
}

/// Per grammar rule, the size of its body once the inlinable rules it references are
/// copied in (capped just above `INLINE_RULE_SIZE`), or `usize::MAX` for a rule that can
/// reach itself. Callees come before callers in Kosaraju's finishing order, so one pass
/// in that order sees every callee's size first.
fn inline_sizes(grammar: &Grammar) -> Vec<usize> {
    let (recursive, order) = recursive_rules(grammar);
    let mut sizes = vec![usize::MAX; grammar.rules.len()];
    for idx in order {
        if recursive[idx] {
            continue;
        }
        let Some((_, body)) = grammar.rules.get_index(idx) else {
            continue;
        };
        let cost = |name: &RuleName| match grammar.rules.get_index_of(name.as_str()) {
            Some(callee) if sizes[callee] <= INLINE_RULE_SIZE => sizes[callee],
            _ => 1,
        };
        sizes[idx] = expr_size(body, INLINE_RULE_SIZE + 1, &cost).min(INLINE_RULE_SIZE + 1);
    }
    sizes
}

/// Per grammar rule, whether it can reach itself through references (strongly connected
/// components by Kosaraju's algorithm, with explicit stacks), and the rules in order of
/// finishing time of the first pass.
fn recursive_rules(grammar: &Grammar) -> (Vec<bool>, Vec<usize>) {
    let n = grammar.rules.len();
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (idx, (_, body)) in grammar.rules.iter().enumerate() {
        let mut stack = vec![body];
        while let Some(expr) = stack.pop() {
            match expr {
                Expr::Rule(callee) => {
                    if let Some(callee) = grammar.rules.get_index_of(callee.as_str()) {
                        edges[idx].push(callee);
                    }
                }
                Expr::Seq(items) | Expr::Alt(items) => stack.extend(items.iter()),
                Expr::Repeat { expr, .. } => stack.push(expr),
                Expr::Empty | Expr::Literal(_) | Expr::Class(_) | Expr::Any | Expr::Token(_) => {}
            }
        }
        edges[idx].sort_unstable();
        edges[idx].dedup();
    }
    // First pass: order by finishing time.
    let mut visited = vec![false; n];
    let mut order = Vec::with_capacity(n);
    for root in 0..n {
        if visited[root] {
            continue;
        }
        visited[root] = true;
        let mut stack = vec![(root, 0usize)];
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            if let Some(&succ) = edges[node].get(*next) {
                *next += 1;
                if !visited[succ] {
                    visited[succ] = true;
                    stack.push((succ, 0));
                }
            } else {
                order.push(node);
                stack.pop();
            }
        }
    }
    // Second pass on the reversed graph, in reverse finishing order.
    let mut reversed: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (node, succs) in edges.iter().enumerate() {
        for &succ in succs {
            reversed[succ].push(node);
        }
    }
    let mut component = vec![usize::MAX; n];
    let mut sizes = Vec::new();
    for &root in order.iter().rev() {
        if component[root] != usize::MAX {
            continue;
        }
        let id = sizes.len();
        sizes.push(0usize);
        component[root] = id;
        let mut stack = vec![root];
        while let Some(node) = stack.pop() {
            sizes[id] += 1;
            for &pred in &reversed[node] {
                if component[pred] == usize::MAX {
                    component[pred] = id;
                    stack.push(pred);
                }
            }
        }
    }
    let recursive = (0..n)
        .map(|node| sizes[component[node]] > 1 || edges[node].binary_search(&node).is_ok())
        .collect();
    (recursive, order)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `levels` nested `wrap`s around `"ab"`, as the start rule, optionally behind a
    /// small rule that is copied in.
    fn nested(levels: usize, wrap: fn(Expr) -> Expr, via_rule: bool) -> Grammar {
        let mut grammar = Grammar::new();
        let mut expr = if via_rule {
            Expr::rule(&name("leaf"))
        } else {
            Expr::literal("ab")
        };
        for _ in 0..levels {
            expr = wrap(expr);
        }
        grammar.insert(name("root"), expr);
        if via_rule {
            grammar.insert(name("leaf"), Expr::literal("ab"));
        }
        grammar
    }

    fn name(text: &str) -> RuleName {
        match RuleName::new(text) {
            Ok(name) => name,
            Err(error) => panic!("{error}"),
        }
    }

    fn outcome(grammar: &Grammar, precheck: bool) -> Result<usize, Error> {
        compile_with(grammar, "root", precheck).map(|program| program.states.len())
    }

    /// Around the point where unrolling starts to refuse, the quick refusal agrees with
    /// unrolling: same programs, same errors.
    #[test]
    fn quick_refusal_agrees_with_unrolling() {
        // Each level doubles the states, so levels 19 to 21 straddle the limit; the
        // unrolling of each takes seconds in a debug build, so the range stays small.
        let mut refused = 0;
        {
            let (name, wrap): (&str, fn(Expr) -> Expr) = ("plus", Expr::plus);
            for (levels, via_rule) in [(19, true), (20, false), (21, false)] {
                let grammar = nested(levels, wrap, via_rule);
                let quick = outcome(&grammar, true);
                let slow = outcome(&grammar, false);
                assert_eq!(quick, slow, "{name} x{levels} (via rule: {via_rule})");
                refused += usize::from(quick.is_err());
            }
        }
        // Both sides of the limit are covered.
        assert!(refused > 0 && refused < 3, "{refused} refused");
    }

    /// 10,000 nested loops are refused (without unrolling them, which takes seconds).
    #[test]
    fn deeply_nested_loops_are_refused() {
        let grammar = nested(10_000, Expr::plus, false);
        let Err(error) = outcome(&grammar, true) else {
            panic!("the grammar was compiled");
        };
        assert!(
            matches!(error.kind, ErrorKind::RepetitionLimit { .. }),
            "{error}"
        );
    }
}
