//! Legalization: rewrites a grammar so that its printed form stays within llama.cpp's
//! repetition limits, without changing its language.
//!
//! llama.cpp (v0.5.0) refuses `x{m,…}` with `m > 2000`, silently turns `x{m,n}` with
//! `n > 2000` into `x{m,}`, and refuses a repetition when the number of rules its item
//! expands to, times the bound, exceeds 2000 (stacked repetitions multiply; a group counts
//! the rules generated inside it). Rather than re-deriving those counters, legalization
//! prints the grammar, reads the text back with the reader (which mirrors llama.cpp's
//! counters), maps each offending operator to its repetition, and fixes it:
//! - an item that is not a single element is moved into a helper rule (a rule reference
//!   counts as one);
//! - bounds over 2000 are split with helper rules `y ::= x{B}`:
//!   `x{m}` as `y{m/B} x{m%B}`, and `x{0,k}` unambiguously as
//!   `y{0,q-1} x{0,B-1} | y{q} x{0,r}` with `k = qB + r`, recursively.
//!
//! This repeats until the text is clean. A grammar that is already legal comes back
//! unchanged (after canonicalization, the identity on canonical IR).

use std::collections::HashSet;

use crate::ir::{CharClass, Expr, Grammar, RuleName};
use crate::read::{self, Mode, MAX_REPETITION};
use crate::walk;

/// Rounds of print → check → fix before giving up (each round fixes the innermost
/// offending repetitions of every rule, so real grammars need one or two).
const MAX_ROUNDS: usize = 64;

/// The grammar, canonical and rewritten to respect llama.cpp's repetition limits, given
/// the indices of the rules that are not [`surely_legal`] (the printer finds them in its
/// pass over the rules, while each rule's nodes are in cache).
///
/// llama.cpp counts per rule body (a rule reference counts as one, or more where it is the
/// name's first mention, inside a group), so only the `suspects` go through print → read →
/// fix, each as a grammar of its own (every name it mentions is then a first mention: the
/// verdict holds wherever the rule is printed); the others are kept as they are. (A 2 MB
/// grammar with one bounded string rule was printed and read back whole before.)
///
/// The result is `grammar` with the fixed rules laid over it ([`Patched`]), not a copy: a
/// 2 MB grammar with one rule to fix was cloned whole, and the copy dropped, for every print.
pub(crate) fn legalize_rules<'g>(grammar: &'g Grammar, suspects: &[usize]) -> Patched<'g> {
    if suspects.is_empty() {
        return Patched::new(grammar, Grammar::default());
    }
    // Helper rules must not take a name of any rule, in the part or not.
    let mut taken = Taken {
        grammar,
        added: HashSet::new(),
    };
    let mut patch = Grammar::default();
    for &index in suspects {
        let Some((name, body)) = grammar.rules.get_index(index) else {
            continue;
        };
        // Each rule is checked alone, so that the verdict does not depend on which other
        // rules are checked with it: a name that another part defines first counts as a
        // rule generated inside a group, as it would were that rule printed after it. So
        // a rule this fixes is left alone when the printed grammar is read and legalised
        // again, which it was not when a rule that named a rule fixed with it was checked
        // again on its own.
        let mut part = Grammar {
            rules: std::iter::once((name.clone(), canonical_expr(body))).collect(),
        };
        for _ in 0..MAX_ROUNDS {
            let printed =
                crate::print::print_patched(&Patched::new(&part, Grammar::default()), true);
            let Ok(parsed) = read::parse(&printed.text, Mode::Collect) else {
                break;
            };
            let targets: HashSet<usize> = parsed
                .limits
                .iter()
                .filter_map(|event| printed.repeats.get(&event.offset).copied())
                .collect();
            if targets.is_empty() {
                break;
            }
            fix(&mut part, &targets, &mut taken);
            part = canonicalize(&part);
        }
        patch.rules.extend(part.rules);
    }
    Patched::new(grammar, patch)
}

/// A grammar read as `base` with the rules of `patch` laid over it: a rule of both has the
/// body in `patch`, and the rules only in `patch` come after those of `base`, in their
/// order. It reads exactly as the grammar `base.clone()` with every rule of `patch` inserted
/// would, without copying `base`.
#[derive(Debug)]
pub(crate) struct Patched<'g> {
    base: &'g Grammar,
    patch: Grammar,
    /// The indices in `patch` of its rules that `base` lacks, in order.
    added: Vec<usize>,
    /// For each rule of `patch`, its position in `added` (`None`: `base` has it).
    added_at: Vec<Option<usize>>,
}

impl<'g> Patched<'g> {
    fn new(base: &'g Grammar, patch: Grammar) -> Patched<'g> {
        let mut added = Vec::new();
        let mut added_at = Vec::with_capacity(patch.rules.len());
        for (i, name) in patch.rules.keys().enumerate() {
            if base.rules.contains_key(name) {
                added_at.push(None);
            } else {
                added_at.push(Some(added.len()));
                added.push(i);
            }
        }
        Patched {
            base,
            patch,
            added,
            added_at,
        }
    }

    /// The number of rules.
    pub(crate) fn len(&self) -> usize {
        self.base.rules.len() + self.added.len()
    }

    /// The rule at `index` (the rules of `base`, then those added), with its body.
    pub(crate) fn get_index(&self, index: usize) -> Option<(&RuleName, &Expr)> {
        let n_base = self.base.rules.len();
        if index < n_base {
            let (name, body) = self.base.rules.get_index(index)?;
            if self.patch.rules.is_empty() {
                return Some((name, body));
            }
            return Some((name, self.patch.rules.get(name).unwrap_or(body)));
        }
        self.patch.rules.get_index(*self.added.get(index - n_base)?)
    }

    /// The index of rule `name`.
    pub(crate) fn index_of(&self, name: &str) -> Option<usize> {
        if let Some(index) = self.base.rules.get_index_of(name) {
            return Some(index);
        }
        let at = self.patch.rules.get_index_of(name)?;
        Some(self.base.rules.len() + self.added_at[at]?)
    }
}

/// What a node is to [`surely_legal`].
enum Seen {
    /// A leaf, and the rules it generates.
    Leaf(u64),
    /// A leaf that is not canonical.
    Bad,
    Composite,
}

/// Whether `node` is a leaf, canonical or not, or composite.
fn seen(node: &Expr) -> Seen {
    match node {
        Expr::Empty | Expr::Any | Expr::Token(_) => Seen::Leaf(0),
        Expr::Literal(text) if text.is_empty() => Seen::Bad,
        Expr::Class(class) if class.ranges().is_empty() => Seen::Bad,
        Expr::Literal(_) | Expr::Class(_) => Seen::Leaf(0),
        Expr::Rule(_) => Seen::Leaf(1),
        Expr::Seq(_) | Expr::Alt(_) | Expr::Repeat { .. } => Seen::Composite,
    }
}

/// Whether a composite node is canonical as far as it and its items go.
fn canonical(node: &Expr) -> bool {
    match node {
        Expr::Seq(items) => {
            items.len() >= 2
                && items
                    .iter()
                    .all(|item| !matches!(item, Expr::Empty | Expr::Seq(_)))
        }
        Expr::Alt(items) => {
            items.len() >= 2 && items.iter().all(|item| !matches!(item, Expr::Alt(_)))
        }
        Expr::Repeat { expr, min, max } => {
            !matches!(**expr, Expr::Empty)
                && *max != Some(0)
                && !(*min == 1 && *max == Some(1))
                && max.map_or(true, |max| *min <= max)
        }
        _ => true,
    }
}

/// The rules a finished composite node generates, or `None` past the limits.
fn composite_cost(node: &Expr, inside: u64) -> Option<u64> {
    let Expr::Repeat { expr, min, max } = node else {
        return Some(inside.saturating_add(1));
    };
    let limit = MAX_REPETITION;
    let (min, max) = (u64::from(*min), max.map(u64::from));
    let item = match **expr {
        Expr::Literal(_) | Expr::Class(_) | Expr::Any | Expr::Rule(_) | Expr::Token(_) => 1,
        _ => 1 + inside,
    };
    let total = match max {
        Some(max) if max > 0 => max,
        _ if min > 0 => min,
        _ => 1,
    };
    let n_opt = max.map_or(1, |max| max.saturating_sub(min));
    let legal =
        min <= limit && max.map_or(true, |max| max <= limit) && item.saturating_mul(total) <= limit;
    legal.then(|| inside.saturating_add(n_opt) + 1)
}

/// Whether `body` is canonical and its printed form certainly within the limits, by an
/// upper bound of llama.cpp's counters: a repeated group counts at most one rule per
/// node that may print as a group, per rule reference (a name seen first inside it) and
/// per repetition helper inside it.
///
/// The printer asks this of every rule, so it is one iterative walk that stops at the first
/// failure and keeps a frame only for composite nodes (a fold over every node cost more
/// than printing the rule).
pub(crate) fn surely_legal(body: &Expr) -> bool {
    /// An open composite node: its items from `next` on are still to be seen, and
    /// `inside` sums the rules the seen ones generate.
    struct Frame<'e> {
        node: &'e Expr,
        items: &'e [Expr],
        next: usize,
        inside: u64,
    }
    fn open(node: &Expr) -> Option<Frame<'_>> {
        canonical(node).then(|| Frame {
            node,
            items: walk::children(node),
            next: 0,
            inside: 0,
        })
    }
    let root = match seen(body) {
        Seen::Leaf(_) => return true,
        Seen::Bad => return false,
        Seen::Composite => open(body),
    };
    let Some(root) = root else {
        return false;
    };
    let mut stack = Vec::with_capacity(16);
    stack.push(root);
    while let Some(top) = stack.last_mut() {
        if let Some(item) = top.items.get(top.next) {
            top.next += 1;
            match seen(item) {
                Seen::Leaf(cost) => top.inside = top.inside.saturating_add(cost),
                Seen::Bad => return false,
                Seen::Composite => match open(item) {
                    Some(frame) => stack.push(frame),
                    None => return false,
                },
            }
            continue;
        }
        let Some(cost) = composite_cost(top.node, top.inside) else {
            return false;
        };
        stack.pop();
        if let Some(parent) = stack.last_mut() {
            parent.inside = parent.inside.saturating_add(cost);
        }
    }
    true
}

/// The grammar rebuilt with the smart constructors, with shapes llama.cpp cannot express
/// replaced by equivalents: `x{m,n}` with `n < m` and empty alternations match nothing.
pub(crate) fn canonicalize(grammar: &Grammar) -> Grammar {
    let rules = grammar
        .rules
        .iter()
        .map(|(name, body)| (name.clone(), canonical_expr(body)))
        .collect();
    Grammar { rules }
}

fn canonical_expr(expr: &Expr) -> Expr {
    let take = |kids: &mut [Expr]| -> Vec<Expr> {
        kids.iter_mut()
            .map(|kid| std::mem::replace(kid, Expr::Empty))
            .collect()
    };
    walk::fold(expr, |node, kids: &mut [Expr]| match node {
        Expr::Seq(_) => Expr::seq(take(kids)),
        Expr::Alt(_) if kids.is_empty() => Expr::Class(read::never_class()),
        Expr::Alt(_) => Expr::alt(take(kids)),
        Expr::Repeat { min, max, .. } => {
            let inner = kids
                .first_mut()
                .map_or(Expr::Empty, |kid| std::mem::replace(kid, Expr::Empty));
            match max {
                Some(max) if max < min => Expr::Class(read::never_class()),
                _ => Expr::repeat(inner, *min, *max),
            }
        }
        Expr::Literal(text) => Expr::literal(text),
        Expr::Class(class) if class.ranges().is_empty() => Expr::Class(if class.is_negated() {
            CharClass::new([('\0', char::MAX)], false)
        } else {
            read::never_class()
        }),
        other => other.clone(),
    })
}

/// The rule names in use: the grammar's, and the helpers made so far (the grammar's are
/// looked up in place rather than copied: most prints fix no rule, or one of thousands).
struct Taken<'g> {
    grammar: &'g Grammar,
    added: HashSet<String>,
}

impl Taken<'_> {
    fn contains(&self, name: &str) -> bool {
        self.grammar.rules.contains_key(name) || self.added.contains(name)
    }
}

/// Rewrites the repetitions at the given addresses, innermost first; helper rules get names
/// not in `taken` (which records them).
fn fix(grammar: &mut Grammar, targets: &HashSet<usize>, taken: &mut Taken<'_>) {
    let mut helpers: Vec<(RuleName, Expr)> = Vec::new();
    for (name, body) in grammar.rules.iter_mut() {
        let mut ctx = Ctx {
            owner: name.as_str(),
            taken,
            helpers: &mut helpers,
        };
        let mut stack: Vec<&mut Expr> = vec![body];
        while let Some(node) = stack.pop() {
            let address = &*node as *const Expr as usize;
            if targets.contains(&address) && !has_target_inside(node, targets) {
                fix_repeat(&mut ctx, node);
                continue;
            }
            match node {
                Expr::Seq(items) | Expr::Alt(items) => stack.extend(items.iter_mut()),
                Expr::Repeat { expr, .. } => stack.push(expr),
                _ => {}
            }
        }
    }
    for (name, body) in helpers {
        grammar.insert(name, body);
    }
}

fn has_target_inside(node: &Expr, targets: &HashSet<usize>) -> bool {
    let mut found = false;
    for kid in walk::children(node) {
        walk::visit(kid, |inner| {
            found |= targets.contains(&(inner as *const Expr as usize));
        });
    }
    found
}

struct Ctx<'a, 'b> {
    owner: &'a str,
    taken: &'a mut Taken<'b>,
    helpers: &'a mut Vec<(RuleName, Expr)>,
}

impl Ctx<'_, '_> {
    /// A new rule with `body`, named after the rule being fixed.
    fn helper(&mut self, body: Expr) -> Expr {
        let mut n = self.helpers.len() + 1;
        loop {
            let candidate = format!("{}-rep-{n}", self.owner);
            if !self.taken.contains(&candidate) {
                let name = RuleName::sanitize(&candidate);
                self.taken.added.insert(candidate);
                self.helpers.push((name.clone(), body));
                return Expr::Rule(name);
            }
            n += 1;
        }
    }
}

fn fix_repeat(ctx: &mut Ctx<'_, '_>, node: &mut Expr) {
    let Expr::Repeat { expr, min, max } = node else {
        return;
    };
    let (min, max) = (*min, *max);
    let inner = std::mem::replace(&mut **expr, Expr::Empty);
    let item = match inner {
        Expr::Literal(_) | Expr::Class(_) | Expr::Any | Expr::Rule(_) | Expr::Token(_) => inner,
        other => ctx.helper(other),
    };
    *node = bounded(ctx, item, min, max);
}

/// `item{min,max}` within the limits; `item` is a single element.
fn bounded(ctx: &mut Ctx<'_, '_>, item: Expr, min: u32, max: Option<u32>) -> Expr {
    let limit = MAX_REPETITION as u32;
    match max {
        None if min <= limit => Expr::repeat(item, min, None),
        None => Expr::seq([exact(ctx, item.clone(), min), Expr::star(item)]),
        Some(max) if max <= limit => Expr::repeat(item, min, Some(max)),
        Some(max) => Expr::seq([exact(ctx, item.clone(), min), up_to(ctx, item, max - min)]),
    }
}

/// `item{count}` within the limits.
fn exact(ctx: &mut Ctx<'_, '_>, item: Expr, count: u32) -> Expr {
    let limit = MAX_REPETITION as u32;
    if count <= limit {
        return Expr::repeat(item, count, Some(count));
    }
    let block = limit / 2;
    let chunk = ctx.helper(Expr::repeat(item.clone(), block, Some(block)));
    Expr::seq([
        exact(ctx, chunk, count / block),
        Expr::repeat(item, count % block, Some(count % block)),
    ])
}

/// `item{0,count}` within the limits, as an unambiguous alternation.
fn up_to(ctx: &mut Ctx<'_, '_>, item: Expr, count: u32) -> Expr {
    let limit = MAX_REPETITION as u32;
    if count <= limit {
        return Expr::repeat(item, 0, Some(count));
    }
    let block = (f64::from(count).sqrt().ceil() as u32).clamp(2, limit);
    let (q, r) = (count / block, count % block);
    let chunk = ctx.helper(Expr::repeat(item.clone(), block, Some(block)));
    Expr::alt([
        Expr::seq([
            up_to(ctx, chunk.clone(), q - 1),
            Expr::repeat(item.clone(), 0, Some(block - 1)),
        ]),
        Expr::seq([exact(ctx, chunk, q), Expr::repeat(item, 0, Some(r))]),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// [`surely_legal`] as a fold over every node, from the same per-node pieces: what the
    /// walk is checked against is its traversal (the order, the early exits, the frames).
    fn surely_legal_by_fold(body: &Expr) -> bool {
        walk::fold(body, |node, kids: &mut [(bool, u64)]| {
            let ok = kids.iter().all(|&(ok, _)| ok);
            let inside = kids
                .iter()
                .fold(0u64, |sum, &(_, cost)| sum.saturating_add(cost));
            match seen(node) {
                Seen::Leaf(cost) => (true, cost),
                Seen::Bad => (false, 0),
                Seen::Composite => match composite_cost(node, inside) {
                    Some(cost) => (ok && canonical(node), cost),
                    None => (false, 0),
                },
            }
        })
        .0
    }

    /// Expressions of every kind, canonical or not, with bounds around llama.cpp's limits.
    fn expr() -> impl Strategy<Value = Expr> {
        let leaf = prop_oneof![
            Just(Expr::Empty),
            Just(Expr::Any),
            Just(Expr::Literal(crate::ir::Text::from("ab"))),
            Just(Expr::Literal(crate::ir::Text::from(""))),
            Just(Expr::Rule(RuleName::from_checked("r"))),
            Just(Expr::Class(CharClass::new(vec![('a', 'z')], false))),
            Just(Expr::Class(CharClass::new(Vec::new(), false))),
        ];
        let bound = prop_oneof![
            Just(0u32),
            Just(1),
            Just(2),
            Just(40),
            Just(1999),
            Just(2000),
            Just(2001)
        ];
        leaf.prop_recursive(5, 64, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Expr::Seq),
                prop::collection::vec(inner.clone(), 0..5).prop_map(Expr::Alt),
                (inner, bound.clone(), prop::option::of(bound.clone())).prop_map(
                    |(expr, min, max)| Expr::Repeat {
                        expr: Box::new(expr),
                        min,
                        max,
                    }
                ),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn the_walk_agrees_with_the_fold(body in expr()) {
            prop_assert_eq!(surely_legal(&body), surely_legal_by_fold(&body));
        }
    }
}
