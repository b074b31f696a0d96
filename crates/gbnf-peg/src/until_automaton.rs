//! The exact GBNF for `until(delimiters…)`: the complement of "contains a delimiter",
//! built as an Aho–Corasick automaton over code points with one rule per state.
//!
//! A pattern like `( [^<] | "<" [^/] | … )*` is not exact when a delimiter overlaps
//! itself (`\n</parameter>\n`), so, like llama.cpp since mid-2026, we build the
//! Aho–Corasick automaton of the delimiters and emit one rule per non-accepting state:
//!
//! - an empty alternative (the text may stop in any state),
//! - for each non-root, non-accepting target state, the class of the characters that lead
//!   there followed by the target's rule,
//! - the negation of every character that has an explicit transition, back to the start.
//!
//! Characters that would complete a delimiter lead to an accepting state, which has no
//! rule, so they get no alternative: the language is exactly the strings that contain no
//! delimiter. The [`AutomatonKind::ThroughFirstDelimiter`] variant (llama.cpp's `ac`)
//! drops the empty alternatives and lets the completing characters end the rule instead:
//! "everything up to and including the first delimiter".

use std::collections::{BTreeMap, VecDeque};

use gbnf::{CharClass, Expr, GrammarBuilder, RuleName};

/// Which language the automaton rules describe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum AutomatonKind {
    /// Strings that contain none of the delimiters (`until`).
    Until,
    /// Strings that end with their first occurrence of a delimiter (`ac`).
    ThroughFirstDelimiter,
}

/// Adds the rules for the automaton of `delimiters` to `builder`, naming them after
/// `prefix` (`prefix`, `prefix-01`, `prefix-02`, …), and returns the expression to use in
/// place of the parser.
///
/// No delimiters means "anything": `.*` for `until`, nothing for the other kind (which
/// could never end). An empty delimiter occurs at once, so the result is the empty string.
pub(crate) fn lower_automaton(
    builder: &mut GrammarBuilder,
    prefix: &str,
    delimiters: &[String],
    kind: AutomatonKind,
) -> Expr {
    if delimiters.is_empty() {
        return match kind {
            AutomatonKind::Until => Expr::star(Expr::Any),
            AutomatonKind::ThroughFirstDelimiter => crate::lower::never(),
        };
    }
    let automaton = Automaton::new(delimiters);
    if automaton.states[0].accepting {
        return Expr::Empty;
    }
    // Reserve every rule name first: the bodies reference each other.
    let mut names: Vec<Option<RuleName>> = vec![None; automaton.states.len()];
    for (state_idx, state) in automaton.states.iter().enumerate() {
        if state.accepting {
            continue;
        }
        let preferred = if state_idx == 0 {
            prefix.to_owned()
        } else {
            format!("{prefix}-{state_idx:02}")
        };
        names[state_idx] = Some(builder.reserve(&preferred));
    }
    for (state_idx, state) in automaton.states.iter().enumerate() {
        let Some(name) = &names[state_idx] else {
            continue;
        };
        debug_assert!(!state.accepting);
        let transitions = automaton.transitions(state_idx);
        let mut alternatives = Vec::new();
        if kind == AutomatonKind::Until {
            alternatives.push(Expr::Empty);
        }
        // Group the explicit characters by target; BTreeMap keeps targets in state order.
        let mut by_target: BTreeMap<usize, Vec<char>> = BTreeMap::new();
        for (&ch, &target) in &transitions {
            by_target.entry(target).or_default().push(ch);
        }
        if kind == AutomatonKind::ThroughFirstDelimiter {
            let completing: Vec<char> = by_target
                .iter()
                .filter(|(target, _)| automaton.states[**target].accepting)
                .flat_map(|(_, chars)| chars.iter().copied())
                .collect();
            if !completing.is_empty() {
                alternatives.push(Expr::class(CharClass::of_chars(completing, false)));
            }
        }
        for (target, chars) in &by_target {
            let Some(target_name) = &names[*target] else {
                continue;
            };
            alternatives.push(Expr::seq([
                Expr::class(CharClass::of_chars(chars.iter().copied(), false)),
                Expr::rule(target_name),
            ]));
        }
        let start_name = names[0].as_ref().unwrap_or(name);
        alternatives.push(Expr::seq([
            Expr::class(CharClass::of_chars(transitions.keys().copied(), true)),
            Expr::rule(start_name),
        ]));
        builder.define(name, Expr::alt(alternatives));
    }
    match &names[0] {
        Some(start) => Expr::rule(start),
        None => Expr::Empty,
    }
}

/// An Aho–Corasick automaton over code points. State 0 is the start; states are numbered
/// in the order the trie creates them (delimiter by delimiter), as llama.cpp numbers them.
#[derive(Debug)]
struct Automaton {
    states: Vec<State>,
}

#[derive(Debug, Default)]
struct State {
    next: BTreeMap<char, usize>,
    fail: usize,
    /// A delimiter ends here, possibly as a suffix reached through failure links.
    accepting: bool,
}

impl Automaton {
    fn new(delimiters: &[String]) -> Automaton {
        let mut states = vec![State::default()];
        for delimiter in delimiters {
            let mut current = 0;
            for ch in delimiter.chars() {
                current = match states[current].next.get(&ch) {
                    Some(&next) => next,
                    None => {
                        states.push(State::default());
                        let created = states.len() - 1;
                        states[current].next.insert(ch, created);
                        created
                    }
                };
            }
            states[current].accepting = true;
        }
        // Failure links in breadth-first order, so a state's link is final before its
        // children's links are computed from it.
        let mut queue: VecDeque<usize> = states[0].next.values().copied().collect();
        while let Some(state_idx) = queue.pop_front() {
            let children: Vec<(char, usize)> = states[state_idx]
                .next
                .iter()
                .map(|(&ch, &child)| (ch, child))
                .collect();
            for (ch, child) in children {
                let mut fallback = states[state_idx].fail;
                let fail = loop {
                    if let Some(&target) = states[fallback].next.get(&ch) {
                        break target;
                    }
                    if fallback == 0 {
                        break 0;
                    }
                    fallback = states[fallback].fail;
                };
                states[child].fail = fail;
                if states[fail].accepting {
                    states[child].accepting = true;
                }
                queue.push_back(child);
            }
        }
        Automaton { states }
    }

    /// The full transition function from `state_idx`, restricted to the characters that
    /// do not lead back to the start state.
    fn transitions(&self, state_idx: usize) -> BTreeMap<char, usize> {
        let mut out = BTreeMap::new();
        let mut current = state_idx;
        loop {
            for (&ch, &target) in &self.states[current].next {
                // The deepest state on the failure chain wins, so do not overwrite.
                out.entry(ch).or_insert(target);
            }
            if current == 0 {
                break;
            }
            current = self.states[current].fail;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contains_delimiter(text: &str, delimiters: &[String]) -> bool {
        delimiters.iter().any(|d| text.contains(d.as_str()))
    }

    /// Runs the automaton's rules as a DFA on `text`: in `Until` mode the text is in the
    /// language iff no step falls off the rules.
    fn run_until(grammar: &gbnf::Grammar, start: &str, text: &str) -> bool {
        let mut rule = start.to_owned();
        for ch in text.chars() {
            let Some(Expr::Alt(alternatives)) = grammar.get(&rule) else {
                return false;
            };
            let mut next = None;
            for alternative in alternatives {
                if let Expr::Seq(items) = alternative {
                    if let [Expr::Class(class), Expr::Rule(target)] = items.as_slice() {
                        if class.contains(ch) {
                            next = Some(target.as_str().to_owned());
                            break;
                        }
                    }
                }
            }
            match next {
                Some(target) => rule = target,
                None => return false,
            }
        }
        true
    }

    fn check_exact(delimiters: &[&str], alphabet: &[char], max_len: usize) {
        let delimiters: Vec<String> = delimiters.iter().map(|d| (*d).to_owned()).collect();
        let mut builder = GrammarBuilder::new();
        let start = lower_automaton(&mut builder, "until-0", &delimiters, AutomatonKind::Until);
        let Expr::Rule(start) = start else {
            panic!("expected a rule, got {start:?}");
        };
        let grammar = builder.finish();
        // Every string over the alphabet up to max_len.
        let mut frontier = vec![String::new()];
        for _ in 0..max_len {
            let mut next = Vec::new();
            for text in &frontier {
                for &ch in alphabet {
                    let mut longer = text.clone();
                    longer.push(ch);
                    next.push(longer);
                }
            }
            for text in &next {
                assert_eq!(
                    run_until(&grammar, start.as_str(), text),
                    !contains_delimiter(text, &delimiters),
                    "{text:?} with {delimiters:?}"
                );
            }
            frontier = next;
        }
    }

    #[test]
    fn single_delimiter_is_exact() {
        check_exact(&["aab"], &['a', 'b', 'c'], 7);
    }

    #[test]
    fn self_overlapping_delimiter_is_exact() {
        check_exact(&["abab"], &['a', 'b', 'c'], 8);
        check_exact(&["\nx\n"], &['\n', 'x', 'y'], 7);
    }

    #[test]
    fn several_delimiters_with_suffix_outputs_are_exact() {
        check_exact(&["abc", "b"], &['a', 'b', 'c'], 6);
        check_exact(&["ab", "ba", "aaa"], &['a', 'b'], 8);
    }

    #[test]
    fn state_names_follow_trie_order() {
        let delimiters: Vec<String> = ["ab", "cd", "ef"].iter().map(|d| (*d).to_owned()).collect();
        let mut builder = GrammarBuilder::new();
        lower_automaton(&mut builder, "until-0", &delimiters, AutomatonKind::Until);
        let names: Vec<String> = builder
            .finish()
            .rules
            .keys()
            .map(|name| name.as_str().to_owned())
            .collect();
        assert_eq!(names, ["until-0", "until-0-01", "until-0-03", "until-0-05"]);
    }

    #[test]
    fn empty_delimiter_matches_nothing_more() {
        let mut builder = GrammarBuilder::new();
        let expr = lower_automaton(&mut builder, "u", &[String::new()], AutomatonKind::Until);
        assert_eq!(expr, Expr::Empty);
    }
}
