//! Whether one string matches a pattern, without the pattern's DFA.
//!
//! Checking `enum` values against a `pattern` needs only a yes or no per value, and schemas
//! generated from APIs pair hundreds of patterns with enums (`^([Pp][Rr][Ee][Ss][Ee][Nn][Tt]|…)$`
//! beside `enum: ["Present", …]`): determinising and minimising each pattern's automaton was
//! most of such a schema's compile time. Here the pattern's NFA (the one the DFA would be built
//! from, with the same anchors and search semantics) is simulated over the string instead, one
//! set of states per character. Patterns with leading lookaheads, which the NFA does not
//! express, still go through their DFA.

use std::rc::Rc;

use super::dfa::Dfa;
use super::{leading_lookaheads, memo, pattern_dfa, plain_hir, NState, Nfa};
use crate::strings::LeafError;

/// Whether the decoded string `text` matches `pattern` (search semantics, as
/// [`super::pattern_dfa`]'s automaton accepts it); an error where that automaton would be one
/// (an invalid or unsupported pattern).
pub(crate) fn pattern_accepts(pattern: &str, dotall: bool, text: &str) -> Result<bool, LeafError> {
    thread_local! {
        static MEMO: memo::Table<(String, bool), Result<Rc<Matcher>, LeafError>> =
            Default::default();
    }
    let matcher = memo::get_or_make(&MEMO, &(pattern.to_owned(), dotall), || {
        Matcher::new(pattern, dotall).map(Rc::new)
    })?;
    Ok(matcher.accepts(text))
}

/// How a pattern is checked.
#[derive(Debug)]
enum Matcher {
    /// The pattern matches every string (it matches the empty string, unanchored).
    All,
    Nfa(Nfa),
    /// Leading lookaheads: the automaton.
    Dfa(Dfa),
}

impl Matcher {
    fn new(pattern: &str, dotall: bool) -> Result<Matcher, LeafError> {
        if leading_lookaheads(pattern).is_some() {
            return pattern_dfa(pattern, dotall).map(Matcher::Dfa);
        }
        let hir = plain_hir(pattern, dotall)?;
        let properties = hir.properties();
        if properties.minimum_len() == Some(0) && properties.look_set().is_empty() {
            return Ok(Matcher::All);
        }
        Nfa::build(&hir, true).map(Matcher::Nfa)
    }

    fn accepts(&self, text: &str) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Dfa(dfa) => dfa.accepts(text),
            Matcher::Nfa(nfa) => nfa_accepts(nfa, text),
        }
    }
}

/// The NFA simulated over `text`: after each character, the states the subset construction
/// would put in its DFA state (epsilon moves followed, anchors passable only at the start or
/// the end, as `Nfa::closure` does), so the verdict is the DFA's.
fn nfa_accepts(nfa: &Nfa, text: &str) -> bool {
    let mut walk = Walk {
        seen: vec![0; nfa.states.len()],
        stamp: 0,
        stack: Vec::new(),
    };
    let mut set = Vec::new();
    walk.close(nfa, &[nfa.start], true, false, &mut set);
    let mut at_start = true;
    let mut seeds = Vec::new();
    for ch in text.chars() {
        let code = u32::from(ch);
        seeds.clear();
        for &state in &set {
            if let NState::Range(class, target) = nfa.states[state] {
                if nfa.classes[class]
                    .iter()
                    .any(|&(lo, hi)| lo <= code && code <= hi)
                {
                    seeds.push(target);
                }
            }
        }
        if seeds.is_empty() {
            return false;
        }
        walk.close(nfa, &seeds, false, false, &mut set);
        at_start = false;
    }
    let mut last = Vec::new();
    walk.close(nfa, &set, at_start, true, &mut last);
    last.contains(&0)
}

/// Visit stamps and a stack for [`nfa_accepts`]'s closures.
struct Walk {
    seen: Vec<u32>,
    stamp: u32,
    stack: Vec<usize>,
}

impl Walk {
    /// Replaces `out` with the states reachable from `seeds` by epsilon moves (unsorted).
    fn close(
        &mut self,
        nfa: &Nfa,
        seeds: &[usize],
        at_start: bool,
        at_end: bool,
        out: &mut Vec<usize>,
    ) {
        self.stamp += 1;
        out.clear();
        self.stack.clear();
        self.stack.extend_from_slice(seeds);
        while let Some(state) = self.stack.pop() {
            if self.seen[state] == self.stamp {
                continue;
            }
            self.seen[state] = self.stamp;
            match &nfa.states[state] {
                NState::Split(targets) => self.stack.extend(targets.iter().copied()),
                NState::Look {
                    at_start: true,
                    next,
                } if at_start => self.stack.push(*next),
                NState::Look {
                    at_start: false,
                    next,
                } if at_end => self.stack.push(*next),
                _ => out.push(state),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The simulation agrees with the pattern's DFA on strings around each pattern's language.
    #[test]
    fn agrees_with_the_automaton() {
        let patterns = [
            "^([Pp][Rr][Ee][Ss][Ee][Nn][Tt]|[Aa][Bb][Ss][Ee][Nn][Tt])$",
            "^[a-z]+$",
            "ab",
            "^ab",
            "ab$",
            "a*",
            "^$",
            "^(?:a|b)*c{2,3}$",
            r"\d{3}-\d{4}",
            r"^\p{Lu}\w*$",
            "^.{2}$",
            "(^a|b$)",
            "^(?=.*\\d)[a-z0-9]{3,}$",
            "^(?!ab)",
            "x|^$",
        ];
        let texts = [
            "",
            "a",
            "b",
            "ab",
            "ba",
            "abc",
            "cab",
            "Present",
            "ABSENT",
            "presentx",
            "abcc",
            "bbccc",
            "c",
            "123-4567",
            "x123-4567y",
            "Élan",
            "élan",
            "\n",
            "a\nb",
            "ab1",
            "abc1",
            "x",
            "é😀",
        ];
        for pattern in patterns {
            for dotall in [false, true] {
                let dfa = pattern_dfa(pattern, dotall).expect("pattern compiles");
                for text in texts {
                    assert_eq!(
                        pattern_accepts(pattern, dotall, text).expect("pattern compiles"),
                        dfa.accepts(text),
                        "{pattern:?} on {text:?} (dotall {dotall})"
                    );
                }
            }
        }
    }

    #[test]
    fn errors_are_the_automatons() {
        assert!(pattern_accepts("(?<=a)b", false, "ab").is_err());
        assert!(pattern_accepts("(", false, "").is_err());
    }
}
