//! The validator: refuses exactly the grammars llama.cpp refuses, and warns about the rest.
//!
//! Errors, in llama.cpp's order: syntax, repetition limits (text only: printing legalizes
//! IR), no rules, undefined rule, missing start rule, left recursion.
//!
//! Left recursion is decided as llama.cpp (v0.5.0) decides it, on its expanded rules:
//! a rule "may be empty" only if one of its alternatives is syntactically empty after
//! expansion (`x*`, `x?` and `""`-only alternatives are; a group or rule that merely
//! derives the empty string is not), and a cycle through leftmost references, skipping
//! references to rules that may be empty, is left recursion. So `[x]**` is refused while
//! `([x]*)*` loads, exactly as in llama.cpp. For IR, the expanded rules are those of the
//! printed (legalized) text.
//!
//! Warnings: rules unreachable from the start rule, rules with an empty language (no
//! finite derivation), and (text only) rules defined more than once.
//!
//! Left recursion through a rule that derives the empty string without a syntactically
//! empty alternative (`root ::= a root "x" | "y"`, `a ::= b`, `b ::= "" | "z"`) passes
//! llama.cpp's check, and llama.cpp then hangs expanding its stacks. `check` and
//! `validate` accept it too, as llama.cpp does, with a `HiddenLeftRecursion` warning: the
//! same cycle search, with every rule that derives the empty string skipped.
//!
//! Undefined rules are also decided as llama.cpp decides them: a name mentioned only in
//! a definition that a later one replaced is not an error, but one mentioned in a group
//! or repetition of a replaced definition is (llama.cpp keeps those generated rules).

use std::collections::{HashMap, HashSet, VecDeque};

use crate::error::{Error, ErrorKind, Location, Warning, WarningKind};
use crate::ir::{Expr, Grammar};
use crate::read::{self, AElem, Graph, Mode};
use crate::walk;

/// Checks `grammar` with start rule `root` as llama.cpp would when loading
/// `print(grammar)`: repetitions are never an error here, since printing legalizes them.
pub fn validate(grammar: &Grammar, root: &str) -> Result<Vec<Warning>, Error> {
    if grammar.rules.is_empty() {
        return Err(Error::new(ErrorKind::NoRules));
    }
    for (name, body) in &grammar.rules {
        if let Some(missing) = first_undefined(grammar, body) {
            return Err(Error::new(ErrorKind::UndefinedRule {
                name: missing,
                rule: name.as_str().to_owned(),
            }));
        }
    }
    if !grammar.rules.contains_key(root) {
        return Err(Error::new(ErrorKind::MissingStartRule {
            name: root.to_owned(),
        }));
    }
    let printed = crate::print::print(grammar);
    let mut hidden = None;
    if let Ok(parsed) = read::parse(&printed, Mode::Analyze) {
        if let Some(cycle) = left_recursion(&parsed.graph) {
            return Err(Error::new(ErrorKind::LeftRecursion {
                cycle: cycle_names(&parsed.graph, &cycle),
            }));
        }
        hidden = hidden_left_recursion(&parsed.graph).map(|cycle| Warning {
            kind: WarningKind::HiddenLeftRecursion {
                cycle: cycle_names(&parsed.graph, &cycle),
            },
            location: None,
        });
    }
    let mut out: Vec<Warning> = hidden.into_iter().collect();
    out.extend(warnings(grammar, root).into_iter().map(|kind| Warning {
        kind,
        location: None,
    }));
    Ok(out)
}

/// Reads and validates `text` with start rule `root`; errors and warnings are located at
/// the offending reference, operator or definition.
pub fn check(text: &str, root: &str) -> Result<(Grammar, Vec<Warning>), Error> {
    let parsed = read::parse(text, Mode::Check)?;
    let locator = Locator::new(text);
    let grammar = parsed.grammar;
    if grammar.rules.is_empty() {
        return Err(Error::new(ErrorKind::NoRules));
    }
    if let Some(name) = parsed.undefined {
        let (offset, rule) = parsed.first_refs.get(&name).cloned().unwrap_or_default();
        return Err(Error::at(
            ErrorKind::UndefinedRule { name, rule },
            locator.at(offset),
        ));
    }
    if !grammar.rules.contains_key(root) {
        return Err(Error::new(ErrorKind::MissingStartRule {
            name: root.to_owned(),
        }));
    }
    if let Some(cycle) = left_recursion(&parsed.graph) {
        let offset = cycle
            .first()
            .map_or(0, |&node| parsed.graph.nodes[node as usize].offset);
        return Err(Error::at(
            ErrorKind::LeftRecursion {
                cycle: cycle_names(&parsed.graph, &cycle),
            },
            locator.at(offset),
        ));
    }
    let mut last_definition: HashMap<&str, usize> = HashMap::new();
    let mut out = Vec::new();
    if let Some(cycle) = hidden_left_recursion(&parsed.graph) {
        let offset = cycle
            .first()
            .map_or(0, |&node| parsed.graph.nodes[node as usize].offset);
        out.push(Warning {
            kind: WarningKind::HiddenLeftRecursion {
                cycle: cycle_names(&parsed.graph, &cycle),
            },
            location: Some(locator.at(offset)),
        });
    }
    for (name, offset) in &parsed.definitions {
        if last_definition.insert(name.as_str(), *offset).is_some() {
            out.push(Warning {
                kind: WarningKind::DuplicateRule { rule: name.clone() },
                location: Some(locator.at(*offset)),
            });
        }
    }
    for (offset, kind) in parsed.warnings {
        out.push(Warning {
            kind,
            location: Some(locator.at(offset)),
        });
    }
    for kind in warnings(&grammar, root) {
        let rule = match &kind {
            WarningKind::UnreachableRule { rule }
            | WarningKind::EmptyLanguage { rule }
            | WarningKind::DuplicateRule { rule }
            | WarningKind::RepetitionMaxDropped { rule, .. }
            | WarningKind::WideNegatedClass { rule, .. } => rule.as_str(),
            WarningKind::HiddenLeftRecursion { .. } => continue,
        };
        let location = last_definition.get(rule).map(|&offset| locator.at(offset));
        out.push(Warning { kind, location });
    }
    Ok((grammar, out))
}

/// The first rule `body` references that `grammar` does not define.
fn first_undefined(grammar: &Grammar, body: &Expr) -> Option<String> {
    let mut missing = None;
    walk::visit(body, |node| {
        if let Expr::Rule(name) = node {
            if missing.is_none() && !grammar.rules.contains_key(name.as_str()) {
                missing = Some(name.as_str().to_owned());
            }
        }
    });
    missing
}

/// Whether each node may be empty in llama.cpp's sense.
fn may_be_empty(graph: &Graph) -> Vec<bool> {
    let mut empty: Vec<bool> = graph
        .nodes
        .iter()
        .map(|node| !node.aux && node.alts.iter().any(Vec::is_empty))
        .collect();
    // An auxiliary node only refers to nodes created before it.
    for (index, node) in graph.nodes.iter().enumerate() {
        if node.aux {
            empty[index] = node.alts.iter().any(|alt| {
                alt.iter().all(|elem| match elem {
                    AElem::Term => false,
                    AElem::Ref(target) => empty.get(*target as usize).copied().unwrap_or(false),
                })
            });
        }
    }
    empty
}

/// Whether each node derives the empty string.
fn nullable(graph: &Graph) -> Vec<bool> {
    let mut nullable = vec![false; graph.nodes.len()];
    let mut changed = true;
    while changed {
        changed = false;
        for (index, node) in graph.nodes.iter().enumerate() {
            if nullable[index] {
                continue;
            }
            let derives_empty = node.alts.iter().any(|alt| {
                alt.iter().all(|elem| match elem {
                    AElem::Term => false,
                    AElem::Ref(target) => nullable.get(*target as usize).copied().unwrap_or(false),
                })
            });
            if derives_empty {
                nullable[index] = true;
                changed = true;
            }
        }
    }
    nullable
}

/// A cycle of leftmost references (first node repeated at the end), as llama.cpp's
/// `llama_grammar_detect_left_recursion` finds it, with an explicit stack.
pub(crate) fn left_recursion(graph: &Graph) -> Option<Vec<u32>> {
    cycle_through(graph, &may_be_empty(graph))
}

/// Left recursion that llama.cpp's check misses (through rules that derive the empty
/// string without an empty alternative) and that hangs it: a cycle of leftmost
/// references in which some reference is followed by more of its alternative, so each
/// round pushes a continuation and llama.cpp's stack set never stops growing. (A cycle of
/// tail references, like `([x]*)*`, revisits the same stacks and terminates.) Call it
/// after [`left_recursion`] found none.
fn hidden_left_recursion(graph: &Graph) -> Option<Vec<u32>> {
    let nullable = nullable(graph);
    // Leftmost references, with whether each leaves a continuation behind.
    let n_nodes = graph.nodes.len();
    let mut edges: Vec<Vec<(u32, bool)>> = vec![Vec::new(); n_nodes];
    for (index, node) in graph.nodes.iter().enumerate() {
        for alt in &node.alts {
            for (position, elem) in alt.iter().enumerate() {
                let AElem::Ref(target) = *elem else {
                    break;
                };
                if (target as usize) < n_nodes {
                    edges[index].push((target, position + 1 < alt.len()));
                }
                if !nullable.get(target as usize).copied().unwrap_or(false) {
                    break;
                }
            }
        }
    }
    let component = strongly_connected(&edges);
    let (from, to) = edges.iter().enumerate().find_map(|(from, out)| {
        out.iter()
            .find(|&&(to, grows)| grows && component[from] == component[to as usize])
            .map(|&(to, _)| (from as u32, to))
    })?;
    // The way back from `to` to `from`, inside their component (breadth-first).
    let mut parent: HashMap<u32, u32> = HashMap::new();
    let mut queue = VecDeque::from([to]);
    let mut seen: HashSet<u32> = HashSet::from([to]);
    while let Some(node) = queue.pop_front() {
        if node == from {
            break;
        }
        for &(next, _) in &edges[node as usize] {
            if component[next as usize] == component[from as usize] && seen.insert(next) {
                parent.insert(next, node);
                queue.push_back(next);
            }
        }
    }
    let mut back = vec![from];
    let mut node = from;
    while node != to {
        node = *parent.get(&node)?;
        back.push(node);
    }
    back.push(from);
    back.reverse();
    Some(back)
}

/// The strongly connected component of each node (Kosaraju, with explicit stacks).
fn strongly_connected(edges: &[Vec<(u32, bool)>]) -> Vec<usize> {
    let n_nodes = edges.len();
    let mut order = Vec::with_capacity(n_nodes);
    let mut visited = vec![false; n_nodes];
    for start in 0..n_nodes {
        if visited[start] {
            continue;
        }
        visited[start] = true;
        let mut stack = vec![(start, 0usize)];
        while let Some((node, next)) = stack.last_mut() {
            match edges[*node].get(*next) {
                Some(&(target, _)) => {
                    *next += 1;
                    if !visited[target as usize] {
                        visited[target as usize] = true;
                        stack.push((target as usize, 0));
                    }
                }
                None => {
                    order.push(*node);
                    stack.pop();
                }
            }
        }
    }
    let mut reverse: Vec<Vec<usize>> = vec![Vec::new(); n_nodes];
    for (from, out) in edges.iter().enumerate() {
        for &(to, _) in out {
            reverse[to as usize].push(from);
        }
    }
    let mut component = vec![usize::MAX; n_nodes];
    for (id, &start) in order.iter().rev().enumerate() {
        if component[start] != usize::MAX {
            continue;
        }
        component[start] = id;
        let mut stack = vec![start];
        while let Some(node) = stack.pop() {
            for &from in &reverse[node] {
                if component[from] == usize::MAX {
                    component[from] = id;
                    stack.push(from);
                }
            }
        }
    }
    component
}

/// A cycle of leftmost references, where a reference to a node marked in `empty` lets
/// the next element of its alternative be leftmost too.
fn cycle_through(graph: &Graph, empty: &[bool]) -> Option<Vec<u32>> {
    let edges = |node: u32| -> Vec<u32> {
        let mut out = Vec::new();
        for alt in &graph.nodes[node as usize].alts {
            for elem in alt {
                let AElem::Ref(target) = *elem else {
                    break;
                };
                out.push(target);
                if !empty.get(target as usize).copied().unwrap_or(false) {
                    break;
                }
            }
        }
        out
    };
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Color {
        White,
        Gray,
        Black,
    }
    let n_nodes = graph.nodes.len();
    let mut color = vec![Color::White; n_nodes];
    for start in 0..n_nodes as u32 {
        if color[start as usize] != Color::White {
            continue;
        }
        color[start as usize] = Color::Gray;
        let mut stack: Vec<(u32, Vec<u32>, usize)> = vec![(start, edges(start), 0)];
        while let Some((node, targets, next)) = stack.last_mut() {
            let Some(&target) = targets.get(*next) else {
                color[*node as usize] = Color::Black;
                stack.pop();
                continue;
            };
            *next += 1;
            match color.get(target as usize).copied() {
                Some(Color::White) => {
                    color[target as usize] = Color::Gray;
                    let target_edges = edges(target);
                    stack.push((target, target_edges, 0));
                }
                Some(Color::Gray) => {
                    let from = stack.iter().position(|(n, _, _)| *n == target).unwrap_or(0);
                    let mut cycle: Vec<u32> = stack[from..].iter().map(|(n, _, _)| *n).collect();
                    cycle.push(target);
                    return Some(cycle);
                }
                _ => {}
            }
        }
    }
    None
}

/// The user rules along a cycle of nodes (generated nodes named after their rule).
fn cycle_names(graph: &Graph, cycle: &[u32]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for &node in cycle {
        let owner = graph.nodes.get(node as usize).map_or(node, |n| n.owner);
        let name = graph.names.get(&owner).cloned().unwrap_or_default();
        if names.last() != Some(&name) {
            names.push(name);
        }
    }
    if names.len() == 1 {
        names.push(names[0].clone());
    }
    names
}

/// Unreachable rules, then rules with an empty language, each in definition order.
fn warnings(grammar: &Grammar, root: &str) -> Vec<WarningKind> {
    let mut out = Vec::new();
    let mut reached: HashSet<&str> = HashSet::new();
    let mut queue: VecDeque<&str> = VecDeque::new();
    if let Some((name, _)) = grammar.rules.get_key_value(root) {
        reached.insert(name.as_str());
        queue.push_back(name.as_str());
    }
    while let Some(name) = queue.pop_front() {
        let Some(body) = grammar.rules.get(name) else {
            continue;
        };
        walk::visit(body, |node| {
            if let Expr::Rule(target) = node {
                if let Some((key, _)) = grammar.rules.get_key_value(target.as_str()) {
                    if reached.insert(key.as_str()) {
                        queue.push_back(key.as_str());
                    }
                }
            }
        });
    }
    for name in grammar.rules.keys() {
        if !reached.contains(name.as_str()) {
            out.push(WarningKind::UnreachableRule {
                rule: name.as_str().to_owned(),
            });
        }
    }
    let productive = productive(grammar);
    for (index, name) in grammar.rules.keys().enumerate() {
        if !productive[index] {
            out.push(WarningKind::EmptyLanguage {
                rule: name.as_str().to_owned(),
            });
        }
    }
    out
}

/// Whether each rule (by index) has a finite derivation, by a worklist fixpoint.
fn productive(grammar: &Grammar) -> Vec<bool> {
    let n_rules = grammar.rules.len();
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); n_rules];
    for (index, body) in grammar.rules.values().enumerate() {
        let mut seen = HashSet::new();
        walk::visit(body, |node| {
            if let Expr::Rule(target) = node {
                if let Some(target) = grammar.rules.get_index_of(target.as_str()) {
                    if seen.insert(target) {
                        users[target].push(index);
                    }
                }
            }
        });
    }
    let mut productive = vec![false; n_rules];
    let mut queue: Vec<usize> = (0..n_rules).rev().collect();
    while let Some(index) = queue.pop() {
        if productive[index] {
            continue;
        }
        let Some((_, body)) = grammar.rules.get_index(index) else {
            continue;
        };
        let ok = walk::fold(body, |node, kids: &mut [bool]| match node {
            Expr::Empty | Expr::Literal(_) | Expr::Any | Expr::Token(_) => true,
            Expr::Class(class) => !class_is_empty(class),
            Expr::Rule(name) => grammar
                .rules
                .get_index_of(name.as_str())
                .is_some_and(|target| productive[target]),
            Expr::Seq(_) => kids.iter().all(|&kid| kid),
            Expr::Alt(_) => kids.iter().any(|&kid| kid),
            Expr::Repeat { min, .. } => *min == 0 || kids.first().copied().unwrap_or(false),
        });
        if ok {
            productive[index] = true;
            queue.extend(users[index].iter().copied());
        }
    }
    productive
}

fn class_is_empty(class: &crate::ir::CharClass) -> bool {
    let full = class.ranges() == [('\0', char::MAX)];
    if class.is_negated() {
        full
    } else {
        class.ranges().is_empty()
    }
}

/// Offsets → locations in one text, without rescanning it for every warning.
struct Locator<'a> {
    text: &'a str,
    line_starts: Vec<usize>,
}

impl<'a> Locator<'a> {
    fn new(text: &'a str) -> Locator<'a> {
        let mut line_starts = vec![0];
        line_starts.extend(
            text.bytes()
                .enumerate()
                .filter(|&(_, byte)| byte == b'\n')
                .map(|(i, _)| i + 1),
        );
        Locator { text, line_starts }
    }

    fn at(&self, offset: usize) -> Location {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.line_starts.partition_point(|&start| start <= offset);
        let line_start = self.line_starts[line.saturating_sub(1)];
        Location {
            offset,
            line: line as u32,
            column: self.text[line_start..offset].chars().count() as u32 + 1,
        }
    }
}
