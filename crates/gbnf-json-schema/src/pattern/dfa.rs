//! Deterministic automata over code-point intervals: the one mechanism behind patterns,
//! formats, lengths and number ranges. Languages are intersected by product, minimised, and
//! printed as a right-linear grammar (one rule per state that needs one), which is exact and
//! unambiguous.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::hash::Hash;

use super::FastMap;

use gbnf::{Expr, GrammarBuilder};

/// Code points as numbers; surrogates never occur in transitions.
pub(crate) type Ranges = Vec<(u32, u32)>;

/// Every Unicode scalar value.
pub(crate) fn any_char() -> Ranges {
    vec![(0, 0xD7FF), (0xE000, 0x10FFFF)]
}

/// A DFA. State `start` is the initial state; a missing transition rejects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Dfa {
    pub states: Vec<State>,
    pub start: usize,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct State {
    pub accept: bool,
    /// Sorted, disjoint `(lo, hi, target)` intervals.
    pub trans: Vec<(u32, u32, usize)>,
}

/// Turns the code points of one transition into the expression matching their encoding.
pub(crate) type Encode<'a> = dyn FnMut(&mut GrammarBuilder, &[(u32, u32)]) -> Expr + 'a;

/// A state's class and its transitions to classes, during minimisation.
type Signature = (usize, Vec<(u32, u32, usize)>);

/// The automaton would exceed the state cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TooBig;

impl Dfa {
    /// The language of exactly the empty string.
    pub fn epsilon() -> Dfa {
        Dfa {
            states: vec![State {
                accept: true,
                trans: Vec::new(),
            }],
            start: 0,
        }
    }

    /// Strings of `min..=max` code points (any code points); `max: None` is unbounded.
    /// The caller keeps `max` (or `min`) small: one state per count.
    pub fn lengths(min: u64, max: Option<u64>) -> Dfa {
        let last = max.unwrap_or(min);
        let mut states = Vec::new();
        for count in 0..=last {
            let accept = min <= count && max.map_or(true, |max| count <= max);
            let trans = if count < last {
                transitions_to(&any_char(), count as usize + 1)
            } else if max.is_none() {
                transitions_to(&any_char(), count as usize)
            } else {
                Vec::new()
            };
            states.push(State { accept, trans });
        }
        Dfa { states, start: 0 }
    }

    /// Explores the automaton whose states are the values reachable from `start` by `step`
    /// over the characters of `alphabet`; fails past `cap` states.
    ///
    /// `alphabet` is a list of disjoint classes `(lo, hi)` whose characters the caller knows to
    /// step every state alike: each class is stepped once, with `lo`, and the transition
    /// covers all of it.
    pub fn explore<S: Clone + Eq + Hash>(
        start: S,
        alphabet: &[(char, char)],
        cap: usize,
        mut step: impl FnMut(&S, char) -> Option<S>,
        mut accept: impl FnMut(&S) -> bool,
    ) -> Result<Dfa, TooBig> {
        let mut ids: FastMap<S, usize> = FastMap::default();
        let mut order: Vec<S> = vec![start.clone()];
        ids.insert(start, 0);
        let mut states = Vec::new();
        let mut next = 0;
        // The classes in code-point order, so that transitions come out sorted.
        let mut sorted = alphabet.to_vec();
        sorted.sort_unstable();
        while next < order.len() {
            let current = order[next].clone();
            next += 1;
            let mut trans: Vec<(u32, u32, usize)> = Vec::new();
            for &(ch, last) in &sorted {
                let Some(target) = step(&current, ch) else {
                    continue;
                };
                let id = state_id(&mut ids, &mut order, &target, cap)?;
                let (lo, hi) = (u32::from(ch), u32::from(last));
                match trans.last_mut() {
                    Some(prev) if prev.2 == id && prev.1 + 1 == lo => prev.1 = hi,
                    _ => trans.push((lo, hi, id)),
                }
            }
            states.push(State {
                accept: accept(&current),
                trans,
            });
        }
        Ok(Dfa { states, start: 0 })
    }

    /// The product automaton: strings in both languages.
    pub fn intersect(&self, other: &Dfa, cap: usize) -> Result<Dfa, TooBig> {
        let mut ids: FastMap<(usize, usize), usize> = FastMap::default();
        let mut order = vec![(self.start, other.start)];
        ids.insert((self.start, other.start), 0);
        let mut states = Vec::new();
        let mut next = 0;
        while next < order.len() {
            let (a, b) = order[next];
            next += 1;
            let mut trans = Vec::new();
            let (ta, tb) = (&self.states[a].trans, &other.states[b].trans);
            let (mut i, mut j) = (0, 0);
            while i < ta.len() && j < tb.len() {
                let (alo, ahi, at) = ta[i];
                let (blo, bhi, bt) = tb[j];
                let lo = alo.max(blo);
                let hi = ahi.min(bhi);
                if lo <= hi {
                    let id = state_id(&mut ids, &mut order, &(at, bt), cap)?;
                    trans.push((lo, hi, id));
                }
                if ahi < bhi {
                    i += 1;
                } else {
                    j += 1;
                }
            }
            states.push(State {
                accept: self.states[a].accept && other.states[b].accept,
                trans: merge_adjacent(trans),
            });
        }
        Ok(Dfa { states, start: 0 })
    }

    /// The same language with every state total: missing transitions go to an explicit
    /// rejecting sink.
    pub fn complete(&self) -> Dfa {
        let sink = self.states.len();
        let mut states: Vec<State> = self
            .states
            .iter()
            .map(|state| {
                let mut trans = state.trans.clone();
                let mut next = 0u32;
                let mut gaps = Vec::new();
                for &(lo, hi, _) in &state.trans {
                    if next < lo {
                        gaps.push((next, lo - 1));
                    }
                    next = hi + 1;
                }
                if next <= 0x10FFFF {
                    gaps.push((next, 0x10FFFF));
                }
                for (lo, hi) in gaps {
                    for (lo, hi) in crate::pattern::clip_surrogates(lo, hi) {
                        trans.push((lo, hi, sink));
                    }
                }
                State {
                    accept: state.accept,
                    trans: merge_adjacent(trans),
                }
            })
            .collect();
        states.push(State {
            accept: false,
            trans: transitions_to(&any_char(), sink),
        });
        Dfa {
            states,
            start: self.start,
        }
    }

    /// Every string (of code points) not in the language.
    pub fn complement(&self) -> Dfa {
        let mut dfa = self.complete();
        for state in &mut dfa.states {
            state.accept = !state.accept;
        }
        dfa.minimize()
    }

    /// Strings in either language.
    pub fn union(&self, other: &Dfa, cap: usize) -> Result<Dfa, TooBig> {
        Ok(self
            .complement()
            .intersect(&other.complement(), cap)?
            .complement())
    }

    /// Strings in any of `dfas`, by one subset product over all of them (not minimised).
    /// Folding [`Dfa::union`] over many automata (the 48 keywords a name must not be) built
    /// and minimised a growing product at every step; this explores the product once.
    pub fn union_all(dfas: &[Dfa], cap: usize) -> Result<Dfa, TooBig> {
        // A product state: the live (automaton, state) pairs, sorted by automaton.
        type Members = Vec<(usize, usize)>;
        let start: Members = dfas
            .iter()
            .enumerate()
            .map(|(at, d)| (at, d.start))
            .collect();
        let mut ids: FastMap<Members, usize> = FastMap::default();
        let mut order: Vec<Members> = vec![start.clone()];
        ids.insert(start, 0);
        let mut states = Vec::new();
        let mut cuts: Vec<u32> = Vec::new();
        let mut cursor: Vec<usize> = Vec::new();
        let mut targets: Members = Vec::new();
        let mut next = 0;
        while next < order.len() {
            let members = order[next].clone();
            next += 1;
            // The elementary intervals: between any two boundaries of any member's transitions,
            // every member goes to one state or nowhere.
            cuts.clear();
            for &(dfa, state) in &members {
                for &(lo, hi, _) in &dfas[dfa].states[state].trans {
                    cuts.push(lo);
                    cuts.push(hi + 1);
                }
            }
            cuts.sort_unstable();
            cuts.dedup();
            cursor.clear();
            cursor.resize(members.len(), 0);
            let mut trans = Vec::new();
            for window in cuts.windows(2) {
                let (lo, hi) = (window[0], window[1] - 1);
                targets.clear();
                for (at, &(dfa, state)) in members.iter().enumerate() {
                    let edges = &dfas[dfa].states[state].trans;
                    while cursor[at] < edges.len() && edges[cursor[at]].1 < lo {
                        cursor[at] += 1;
                    }
                    if let Some(&(from, _, target)) = edges.get(cursor[at]) {
                        if from <= lo {
                            targets.push((dfa, target));
                        }
                    }
                }
                if targets.is_empty() {
                    continue;
                }
                let id = state_id(&mut ids, &mut order, &targets, cap)?;
                trans.push((lo, hi, id));
            }
            states.push(State {
                accept: members
                    .iter()
                    .any(|&(dfa, state)| dfas[dfa].states[state].accept),
                trans: merge_adjacent(trans),
            });
        }
        Ok(Dfa { states, start: 0 })
    }

    /// The shortest and longest string lengths in the language (`None`: unbounded), for a
    /// trimmed, non-empty automaton.
    pub fn length_range(&self) -> (u64, Option<u64>) {
        let n = self.states.len();
        // Shortest: breadth-first search to an accepting state.
        let mut distance = vec![u64::MAX; n];
        distance[self.start] = 0;
        let mut queue = VecDeque::from([self.start]);
        let mut shortest = u64::MAX;
        while let Some(state) = queue.pop_front() {
            if self.states[state].accept {
                shortest = shortest.min(distance[state]);
            }
            for &(_, _, target) in &self.states[state].trans {
                if distance[target] == u64::MAX {
                    distance[target] = distance[state] + 1;
                    queue.push_back(target);
                }
            }
        }
        // Longest: unbounded on a cycle; else the longest path in topological order (Kahn).
        let mut in_degree = vec![0usize; n];
        for state in &self.states {
            for &(_, _, target) in &state.trans {
                in_degree[target] += 1;
            }
        }
        let mut ready: Vec<usize> = (0..n).filter(|&s| in_degree[s] == 0).collect();
        let mut longest = vec![0u64; n];
        let mut best = 0u64;
        let mut visited = 0;
        while let Some(state) = ready.pop() {
            visited += 1;
            if self.states[state].accept {
                best = best.max(longest[state]);
            }
            for &(_, _, target) in &self.states[state].trans {
                longest[target] = longest[target].max(longest[state] + 1);
                in_degree[target] -= 1;
                if in_degree[target] == 0 {
                    ready.push(target);
                }
            }
        }
        let longest = (visited == n).then_some(best);
        (shortest, longest)
    }

    /// Whether the language is empty.
    pub fn is_empty(&self) -> bool {
        let live = self.live_states();
        !live[self.start]
    }

    /// For each state, whether an accepting state is reachable from it.
    fn live_states(&self) -> Vec<bool> {
        let n = self.states.len();
        let (start, sources) = reverse_edges(self);
        let mut live: Vec<bool> = self.states.iter().map(|s| s.accept).collect();
        let mut stack: Vec<usize> = (0..n).filter(|&s| live[s]).collect();
        while let Some(state) = stack.pop() {
            for &source in &sources[start[state]..start[state + 1]] {
                if !live[source] {
                    live[source] = true;
                    stack.push(source);
                }
            }
        }
        live
    }

    /// Removes states that cannot reach an accepting state, and unreachable ones; an empty
    /// language becomes a single rejecting state.
    pub fn trim(&self) -> Dfa {
        self.trimmed().into_owned()
    }

    /// [`Dfa::trim`], borrowing `self` when trimming would rebuild it unchanged (every state
    /// live, already in breadth-first order, transitions merged): most automata fresh from
    /// subset construction are, and copying them cost a tenth of pattern compilation.
    fn trimmed(&self) -> Cow<'_, Dfa> {
        let live = self.live_states();
        if !live[self.start] {
            return Cow::Owned(Dfa {
                states: vec![State {
                    accept: false,
                    trans: Vec::new(),
                }],
                start: 0,
            });
        }
        // Renumber in breadth-first order from the start, so output order is stable.
        let mut ids = vec![usize::MAX; self.states.len()];
        let mut order = vec![self.start];
        ids[self.start] = 0;
        let mut next = 0;
        while next < order.len() {
            let state = order[next];
            next += 1;
            for &(_, _, target) in &self.states[state].trans {
                if live[target] && ids[target] == usize::MAX {
                    ids[target] = order.len();
                    order.push(target);
                }
            }
        }
        let unchanged = order.len() == self.states.len()
            && order.iter().enumerate().all(|(at, &old)| at == old)
            && self.states.iter().all(|state| {
                state.trans.iter().all(|t| live[t.2])
                    && state
                        .trans
                        .windows(2)
                        .all(|w| w[0].1 < w[1].0 && (w[0].2 != w[1].2 || w[0].1 + 1 < w[1].0))
            });
        if unchanged {
            return Cow::Borrowed(self);
        }
        let states = order
            .iter()
            .map(|&old| State {
                accept: self.states[old].accept,
                trans: merge_adjacent(
                    self.states[old]
                        .trans
                        .iter()
                        .filter(|t| live[t.2])
                        .map(|&(lo, hi, target)| (lo, hi, ids[target]))
                        .collect(),
                ),
            })
            .collect();
        Cow::Owned(Dfa { states, start: 0 })
    }

    /// The minimal equivalent DFA (trimmed, then partition refinement).
    pub fn minimize(&self) -> Dfa {
        let dfa = self.trimmed();
        if dfa.states.len() == 1 && !dfa.states[0].accept {
            return dfa.into_owned();
        }
        let (class, n_classes) = refine_classes(&dfa);
        dfa.quotient(&class, n_classes)
    }

    /// The automaton whose states are the classes of `class`.
    fn quotient(&self, class: &[usize], n_classes: usize) -> Dfa {
        let dfa = self;
        // Build the quotient, numbering classes in breadth-first order from the start.
        let mut ids = vec![usize::MAX; n_classes];
        let mut representative = Vec::new();
        let mut queue = VecDeque::from([dfa.start]);
        ids[class[dfa.start]] = 0;
        representative.push(dfa.start);
        while let Some(state) = queue.pop_front() {
            for &(_, _, target) in &dfa.states[state].trans {
                if ids[class[target]] == usize::MAX {
                    ids[class[target]] = representative.len();
                    representative.push(target);
                    queue.push_back(target);
                }
            }
        }
        let states = representative
            .iter()
            .map(|&old| State {
                accept: dfa.states[old].accept,
                trans: merge_adjacent(
                    dfa.states[old]
                        .trans
                        .iter()
                        .map(|&(lo, hi, target)| (lo, hi, ids[class[target]]))
                        .collect(),
                ),
            })
            .collect();
        Dfa { states, start: 0 }
    }

    /// Whether the automaton accepts `text` (used by tests and by callers that check a value).
    pub fn accepts(&self, text: &str) -> bool {
        let mut state = self.start;
        for ch in text.chars() {
            let code = u32::from(ch);
            let Some(&(_, _, target)) = self.states[state]
                .trans
                .iter()
                .find(|&&(lo, hi, _)| lo <= code && code <= hi)
            else {
                return false;
            };
            state = target;
        }
        self.states[state].accept
    }

    /// Prints the (trimmed) automaton as a right-linear grammar and returns the expression for
    /// the start state. `encode` turns the code points of one transition into the expression
    /// that matches their encoding; `on_accept` is appended where a string may end.
    ///
    /// States get their own rule (named `<name>-<state>`) when several transitions enter them or
    /// they lie on a cycle; the others are inlined into their only predecessor, up to a
    /// nesting depth, so that simple languages print as simple expressions.
    pub fn to_expr(
        &self,
        builder: &mut GrammarBuilder,
        name: &str,
        encode: &mut Encode<'_>,
        on_accept: &Expr,
    ) -> Expr {
        let n = self.states.len();
        let grouped: Vec<Vec<(usize, Ranges)>> = self.states.iter().map(group_by_target).collect();
        let mut in_degree = vec![0usize; n];
        for edges in &grouped {
            for (target, _) in edges {
                in_degree[*target] += 1;
            }
        }
        let mut needs_rule: Vec<bool> = (0..n)
            .map(|s| in_degree[s] >= 2 || (s == self.start && in_degree[s] >= 1))
            .collect();
        // Bound inlining depth: walk from the start and give a rule to any state that would be
        // nested too deep.
        const MAX_INLINE_DEPTH: usize = 24;
        let mut depth = vec![usize::MAX; n];
        let mut stack = vec![(self.start, 0usize)];
        while let Some((state, d)) = stack.pop() {
            if depth[state] != usize::MAX {
                continue;
            }
            let d = if needs_rule[state] || d > MAX_INLINE_DEPTH {
                needs_rule[state] = needs_rule[state] || state != self.start;
                0
            } else {
                d
            };
            depth[state] = d;
            for (target, _) in &grouped[state] {
                stack.push((*target, d + 1));
            }
        }
        let mut names = vec![None; n];
        let mut order: Vec<usize> = (0..n).filter(|&s| needs_rule[s]).collect();
        order.sort_unstable();
        for &state in &order {
            names[state] = Some(builder.reserve(&crate::lower::dashed_number(name, state)));
        }
        let mut encoded: FastMap<Ranges, Expr> = FastMap::default();
        let mut bodies: Vec<Option<Expr>> = vec![None; n];
        let mut built = vec![false; n];
        // Build bodies bottom-up without recursion: a state's body needs the bodies of the
        // inlined successors first. Inlined states form a forest (in-degree 1, depth-bounded),
        // so each inlined body has exactly one user and is moved into it, not copied (copying
        // made long chains of inlined states quadratic).
        let mut pending: Vec<(usize, bool)> = (0..n).map(|s| (s, false)).collect();
        while let Some((state, expanded)) = pending.pop() {
            if built[state] {
                continue;
            }
            if !expanded {
                pending.push((state, true));
                for (target, _) in &grouped[state] {
                    if names[*target].is_none() && !built[*target] {
                        pending.push((*target, false));
                    }
                }
                continue;
            }
            built[state] = true;
            let mut alternatives = Vec::with_capacity(grouped[state].len() + 1);
            for (target, ranges) in &grouped[state] {
                let head = match encoded.get(ranges) {
                    Some(expr) => expr.clone(),
                    None => {
                        let expr = encode(builder, ranges);
                        encoded.insert(ranges.clone(), expr.clone());
                        expr
                    }
                };
                let tail = match &names[*target] {
                    Some(rule) => Expr::rule(rule),
                    None => bodies[*target].take().unwrap_or(Expr::Empty),
                };
                alternatives.push(concat([head, tail]));
            }
            if self.states[state].accept {
                alternatives.push(on_accept.clone());
            }
            bodies[state] = Some(Expr::alt(alternatives));
        }
        for &state in &order {
            if let (Some(rule), Some(body)) = (&names[state], bodies[state].take()) {
                builder.define(rule, body);
            }
        }
        match &names[self.start] {
            Some(rule) => Expr::rule(rule),
            None => bodies[self.start].take().unwrap_or(Expr::Empty),
        }
    }
}

/// A sequence in which adjacent literals are merged, for readable output.
pub(crate) fn concat(items: impl IntoIterator<Item = Expr>) -> Expr {
    fn push(out: &mut Vec<Expr>, part: Expr) {
        if let (Some(Expr::Literal(last)), Expr::Literal(text)) = (out.last_mut(), &part) {
            last.push_str(text);
            return;
        }
        out.push(part);
    }
    let items = items.into_iter();
    let mut out: Vec<Expr> = Vec::with_capacity(items.size_hint().0);
    for item in items {
        match item {
            Expr::Seq(parts) => {
                out.reserve(parts.len());
                for part in parts {
                    push(&mut out, part);
                }
            }
            Expr::Empty => {}
            other => push(&mut out, other),
        }
    }
    // `out` is already what `Expr::seq` would build unless a sequence held an empty or a
    // nested sequence (only when built by hand); moving it through again costs a vector.
    if out
        .iter()
        .any(|part| matches!(part, Expr::Empty | Expr::Seq(_)))
    {
        return Expr::seq(out);
    }
    match out.len() {
        0 => Expr::Empty,
        1 => out.pop().unwrap_or(Expr::Empty),
        _ => Expr::Seq(out),
    }
}

/// Equivalence classes by Moore's refinement: simple, but one round per distinguishing
/// length; kept to cross-check [`refine_classes`].
#[cfg(test)]
fn moore_classes(dfa: &Dfa) -> (Vec<usize>, usize) {
    let n = dfa.states.len();
    let mut class: Vec<usize> = dfa.states.iter().map(|s| usize::from(s.accept)).collect();
    let mut n_classes = 0;
    loop {
        let mut signatures: std::collections::HashMap<Signature, usize> =
            std::collections::HashMap::new();
        let mut next_class = vec![0; n];
        for state in 0..n {
            let trans = merge_adjacent(
                dfa.states[state]
                    .trans
                    .iter()
                    .map(|&(lo, hi, target)| (lo, hi, class[target]))
                    .collect(),
            );
            let key = (class[state], trans);
            let len = signatures.len();
            next_class[state] = *signatures.entry(key).or_insert(len);
        }
        let count = signatures.len();
        class = next_class;
        if count == n_classes {
            return (class, count);
        }
        n_classes = count;
    }
}

/// Equivalence classes by partition refinement with splitters (Hopcroft-style, for partial
/// automata): a block is split by which intervals lead each member into the splitter. Every
/// new piece becomes a splitter, which keeps it correct without a completed transition table.
fn refine_classes(dfa: &Dfa) -> (Vec<usize>, usize) {
    let n = dfa.states.len();
    let (pred_start, predecessors) = reverse_edges(dfa);
    let mut block_of = vec![0usize; n];
    // Where each state is in its block's member list.
    let mut position = vec![0usize; n];
    let mut blocks: Vec<Vec<usize>> = Vec::new();
    for accept in [true, false] {
        let members: Vec<usize> = (0..n).filter(|&s| dfa.states[s].accept == accept).collect();
        if members.is_empty() {
            continue;
        }
        for (at, &state) in members.iter().enumerate() {
            block_of[state] = blocks.len();
            position[state] = at;
        }
        blocks.push(members);
    }
    let mut in_work = vec![true; blocks.len()];
    let mut work: VecDeque<usize> = (0..blocks.len()).collect();
    let mut mark = vec![0u32; n];
    let mut candidate = vec![0u32; n];
    let mut stamp = 0u32;
    let mut signatures: Vec<(u32, u32)> = Vec::new();
    let mut spans: Vec<(usize, usize, usize)> = Vec::new();
    // The predecessors of the splitter, with their blocks (one buffer for every splitter).
    let mut by_block: Vec<(usize, usize)> = Vec::new();
    while let Some(splitter) = work.pop_front() {
        in_work[splitter] = false;
        stamp += 1;
        for &state in &blocks[splitter] {
            mark[state] = stamp;
        }
        // Predecessors of the splitter, grouped by their block.
        by_block.clear();
        for &target in &blocks[splitter] {
            for &source in &predecessors[pred_start[target]..pred_start[target + 1]] {
                if candidate[source] != stamp {
                    candidate[source] = stamp;
                    by_block.push((block_of[source], source));
                }
            }
        }
        by_block.sort_unstable();
        let mut start = 0;
        while start < by_block.len() {
            let block = by_block[start].0;
            let end = start + by_block[start..].partition_point(|p| p.0 == block);
            let members = start..end;
            start = end;
            if blocks[block].len() == 1 {
                // A single state cannot be split.
                continue;
            }
            // Split the block by each candidate's intervals into the splitter; the members
            // that are not candidates (no transition into it) stay together. Signatures go
            // into one flat buffer and are grouped by sorting (the order of the pieces does
            // not matter: classes are numbered by state at the end).
            signatures.clear();
            spans.clear();
            for &(_, state) in &by_block[members] {
                let from = signatures.len();
                for &(lo, hi, target) in &dfa.states[state].trans {
                    if mark[target] == stamp {
                        match signatures[from..].last_mut() {
                            Some(last) if last.1.checked_add(1) == Some(lo) => last.1 = hi,
                            _ => signatures.push((lo, hi)),
                        }
                    }
                }
                spans.push((from, signatures.len(), state));
            }
            let first = &signatures[spans[0].0..spans[0].1];
            let all_same = spans
                .iter()
                .all(|&(from, to, _)| &signatures[from..to] == first);
            if all_same && spans.len() == blocks[block].len() {
                continue;
            }
            let mut pieces: Vec<Vec<usize>> = Vec::new();
            if all_same {
                pieces.push(spans.iter().map(|&(_, _, state)| state).collect());
            } else {
                spans.sort_by(|a, b| {
                    signatures[a.0..a.1]
                        .cmp(&signatures[b.0..b.1])
                        .then(a.2.cmp(&b.2))
                });
                let mut i = 0;
                while i < spans.len() {
                    let key = &signatures[spans[i].0..spans[i].1];
                    let mut piece = Vec::new();
                    while i < spans.len() && &signatures[spans[i].0..spans[i].1] == key {
                        piece.push(spans[i].2);
                        i += 1;
                    }
                    pieces.push(piece);
                }
            }
            if spans.len() == blocks[block].len() {
                // Every member is a candidate: the first piece stays in the block.
                pieces.remove(0);
            }
            // Move the pieces out of the block, in time proportional to their size (not the
            // block's: a large block touched by many small splitters made this quadratic).
            let mut parts = vec![block];
            for piece in pieces {
                let id = blocks.len();
                for &state in &piece {
                    let at = position[state];
                    blocks[block].swap_remove(at);
                    if let Some(&moved) = blocks[block].get(at) {
                        position[moved] = at;
                    }
                    block_of[state] = id;
                }
                for (at, &state) in piece.iter().enumerate() {
                    position[state] = at;
                }
                blocks.push(piece);
                in_work.push(false);
                parts.push(id);
            }
            // Hopcroft's rule: a block waiting to be a splitter is replaced by all its parts;
            // a block already used needs all but its largest part (the states that reach the
            // largest part are told apart by the block and the others). Queuing every part
            // made automata with one sink that everything reaches (key complements)
            // quadratic: each split re-scanned all the sink's predecessors.
            let skip = if in_work[block] {
                Some(block)
            } else {
                parts
                    .iter()
                    .copied()
                    .max_by(|&a, &b| blocks[a].len().cmp(&blocks[b].len()).then(b.cmp(&a)))
            };
            for part in parts {
                if Some(part) != skip && !in_work[part] {
                    in_work[part] = true;
                    work.push_back(part);
                }
            }
        }
    }
    let mut ids = vec![usize::MAX; blocks.len()];
    let mut count = 0;
    let mut class = vec![0usize; n];
    for state in 0..n {
        let block = block_of[state];
        if ids[block] == usize::MAX {
            ids[block] = count;
            count += 1;
        }
        class[state] = ids[block];
    }
    (class, count)
}

/// The reversed edges of `dfa` in one array, not one vector per state: the states with a
/// transition into `t` are `sources[start[t]..start[t + 1]]`, ascending, each once.
fn reverse_edges(dfa: &Dfa) -> (Vec<usize>, Vec<usize>) {
    let n = dfa.states.len();
    let mut last = vec![usize::MAX; n];
    let mut start = vec![0usize; n + 1];
    for (source, state) in dfa.states.iter().enumerate() {
        for &(_, _, target) in &state.trans {
            if last[target] != source {
                last[target] = source;
                start[target + 1] += 1;
            }
        }
    }
    for at in 0..n {
        start[at + 1] += start[at];
    }
    let mut fill = start.clone();
    let mut sources = vec![0usize; start[n]];
    last.fill(usize::MAX);
    for (source, state) in dfa.states.iter().enumerate() {
        for &(_, _, target) in &state.trans {
            if last[target] != source {
                last[target] = source;
                sources[fill[target]] = source;
                fill[target] += 1;
            }
        }
    }
    (start, sources)
}

/// Transitions on `ranges` to `target`.
fn transitions_to(ranges: &[(u32, u32)], target: usize) -> Vec<(u32, u32, usize)> {
    ranges.iter().map(|&(lo, hi)| (lo, hi, target)).collect()
}

/// Sorts and merges touching intervals with the same target, in place (one vector per state:
/// The number of the product state `key` in an exploration (`ids` by key, `order` by number),
/// numbering it next if it is new; fails past `cap` states.
fn state_id<K: Clone + Eq + Hash>(
    ids: &mut FastMap<K, usize>,
    order: &mut Vec<K>,
    key: &K,
    cap: usize,
) -> Result<usize, TooBig> {
    if let Some(&id) = ids.get(key) {
        return Ok(id);
    }
    if order.len() >= cap {
        return Err(TooBig);
    }
    let id = order.len();
    ids.insert(key.clone(), id);
    order.push(key.clone());
    Ok(id)
}

/// the automaton operations make one for every state they build).
fn merge_adjacent(mut trans: Vec<(u32, u32, usize)>) -> Vec<(u32, u32, usize)> {
    trans.sort_unstable();
    let mut kept = 0;
    for at in 0..trans.len() {
        let (lo, hi, target) = trans[at];
        if kept > 0 {
            let last = &mut trans[kept - 1];
            if last.2 == target && last.1.checked_add(1) == Some(lo) {
                last.1 = hi;
                continue;
            }
        }
        trans[kept] = (lo, hi, target);
        kept += 1;
    }
    trans.truncate(kept);
    trans
}

/// The transitions of `state` grouped by target, targets in order of first interval.
fn group_by_target(state: &State) -> Vec<(usize, Ranges)> {
    let mut out: Vec<(usize, Ranges)> = Vec::new();
    for &(lo, hi, target) in &state.trans {
        match out.iter_mut().find(|(t, _)| *t == target) {
            Some((_, ranges)) => ranges.push((lo, hi)),
            None => out.push((target, vec![(lo, hi)])),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn lengths_and_intersection() {
        let a = Dfa::lengths(2, Some(4));
        let b = Dfa::lengths(3, None);
        let both = a.intersect(&b, 100).unwrap().minimize();
        assert!(!both.accepts("ab"));
        assert!(both.accepts("abc"));
        assert!(both.accepts("abcd"));
        assert!(!both.accepts("abcde"));
        assert_eq!(both.states.len(), 5);
        let none = Dfa::lengths(5, None).intersect(&a, 100).unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn minimisation_merges_equivalent_states() {
        // Two copies of "any string of even length" minimise to two states.
        let dfa = Dfa::explore(
            0u8,
            &[('a', 'a'), ('b', 'b')],
            10,
            |s, _| Some((s + 1) % 4),
            |s| s % 2 == 0,
        )
        .unwrap();
        assert_eq!(dfa.states.len(), 4);
        let min = dfa.minimize();
        assert_eq!(min.states.len(), 2);
        assert!(min.accepts("abab"));
        assert!(!min.accepts("aba"));
    }

    #[test]
    fn hopcroft_agrees_with_moore() {
        let mut seed = 5u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for round in 0..3000 {
            // Small automata, then larger ones with a state most others reach (like the
            // sink of a key complement), where the splitter bookkeeping matters.
            let n = 1 + next(if round < 1000 { 12 } else { 40 }) as usize;
            let sink = round % 2 == 0;
            let table: Vec<[Option<usize>; 3]> = (0..n)
                .map(|_| {
                    [0, 1, 2].map(|_| match next(4) {
                        0 => None,
                        1 if sink => Some(n - 1),
                        _ => Some(next(n as u64) as usize),
                    })
                })
                .collect();
            let accept: Vec<bool> = (0..n).map(|_| next(3) == 0).collect();
            let dfa = Dfa::explore(
                0usize,
                &[('a', 'a'), ('b', 'b'), ('c', 'c')],
                100,
                |&s, ch| table[s][(ch as u8 - b'a') as usize],
                |&s| accept[s],
            )
            .unwrap()
            .trim();
            if dfa.states.len() == 1 && !dfa.states[0].accept {
                continue;
            }
            let (_, moore) = moore_classes(&dfa);
            let (_, hopcroft) = refine_classes(&dfa);
            assert_eq!(moore, hopcroft, "{dfa:?}");
            let min = dfa.minimize();
            for text in ["", "a", "ab", "abc", "cab", "aaaa", "bcbc", "ccc"] {
                assert_eq!(min.accepts(text), dfa.accepts(text));
            }
        }
    }

    #[test]
    fn union_all_agrees_with_folded_unions() {
        let words = ["if", "in", "is", "int", "for", "", "i"];
        let dfas: Vec<Dfa> = words
            .iter()
            .map(|word| {
                let chars: Vec<char> = word.chars().collect();
                Dfa::explore(
                    0usize,
                    &['f', 'i', 'n', 'o', 'r', 's', 't'].map(|ch| (ch, ch)),
                    10,
                    |&at, ch| (chars.get(at) == Some(&ch)).then_some(at + 1),
                    |&at| at == chars.len(),
                )
                .unwrap()
                .minimize()
            })
            .collect();
        for count in 1..=dfas.len() {
            let all = Dfa::union_all(&dfas[..count], 100).unwrap().minimize();
            let folded = dfas[1..count]
                .iter()
                .fold(dfas[0].clone(), |acc, dfa| acc.union(dfa, 100).unwrap());
            assert_eq!(all, folded, "{count}");
            for text in ["", "i", "if", "in", "int", "into", "for", "fo", "s", "is"] {
                assert_eq!(all.accepts(text), words[..count].contains(&text), "{text}");
            }
            assert_eq!(all.complement(), folded.complement());
        }
        assert_eq!(Dfa::union_all(&dfas, 3), Err(TooBig));
    }

    #[test]
    fn concat_merges_literals_and_stays_canonical() {
        let rule = Expr::Rule(gbnf::RuleName::sanitize("r"));
        assert_eq!(
            concat([
                Expr::literal("a"),
                Expr::seq([Expr::literal("b"), rule.clone()]),
                Expr::Empty,
                Expr::literal("c"),
            ]),
            Expr::Seq(vec![Expr::literal("ab"), rule.clone(), Expr::literal("c")])
        );
        assert_eq!(
            concat([Expr::Empty, Expr::literal("x")]),
            Expr::literal("x")
        );
        assert_eq!(concat([Expr::Empty]), Expr::Empty);
        // A sequence built by hand, holding an empty and a nested sequence, is flattened.
        let odd = Expr::Seq(vec![Expr::Empty, Expr::Seq(vec![rule.clone(), Expr::Any])]);
        assert_eq!(
            concat([odd, Expr::Any]),
            Expr::Seq(vec![rule, Expr::Any, Expr::Any])
        );
    }

    #[test]
    fn complement_and_union() {
        let ab = Dfa::explore(
            0u8,
            &[('a', 'a'), ('b', 'b')],
            10,
            |s, ch| match (s, ch) {
                (0, 'a') => Some(1),
                (1, 'b') => Some(2),
                _ => None,
            },
            |s| *s == 2,
        )
        .unwrap();
        let not_ab = ab.complement();
        assert!(!not_ab.accepts("ab"));
        assert!(not_ab.accepts(""));
        assert!(not_ab.accepts("abc"));
        assert!(not_ab.accepts("é"));
        let short = Dfa::lengths(0, Some(1));
        let either = ab.union(&short, 100).unwrap();
        for (text, expected) in [
            ("", true),
            ("x", true),
            ("ab", true),
            ("ba", false),
            ("abc", false),
        ] {
            assert_eq!(either.accepts(text), expected, "{text}");
        }
    }
}
