//! Languages of object keys as automata, so that `patternProperties` can be enforced
//! exactly: the keys an object may use are partitioned by which patterns they match and
//! whether they are declared, and each part gets its own value schema.

use gbnf::{Expr, GrammarBuilder};

use crate::pattern::dfa::{any_char, Dfa, State};
use crate::strings::{json_chars, CharRules, Escapes};

/// The most states a key automaton may reach.
pub(crate) const MAX_KEY_STATES: usize = 5000;

/// The keys equal to one of `names`.
pub(crate) fn names(names: &[String]) -> Dfa {
    let mut states = vec![State {
        accept: false,
        trans: Vec::new(),
    }];
    for name in names {
        let mut state = 0;
        for ch in name.chars() {
            let code = u32::from(ch);
            let existing = states[state]
                .trans
                .iter()
                .find(|&&(lo, _, _)| lo == code)
                .map(|&(_, _, target)| target);
            state = match existing {
                Some(target) => target,
                None => {
                    states.push(State {
                        accept: false,
                        trans: Vec::new(),
                    });
                    let target = states.len() - 1;
                    states[state].trans.push((code, code, target));
                    states[state].trans.sort_unstable();
                    target
                }
            };
        }
        states[state].accept = true;
    }
    Dfa { states, start: 0 }
}

/// Every key `dfa` rejects.
pub(crate) fn complement(dfa: &Dfa) -> Dfa {
    let dead = dfa.states.len();
    let mut states: Vec<State> = Vec::with_capacity(dead + 1);
    for state in &dfa.states {
        let mut trans = state.trans.clone();
        for (lo, hi) in gaps(&state.trans) {
            trans.push((lo, hi, dead));
        }
        trans.sort_unstable();
        states.push(State {
            accept: !state.accept,
            trans,
        });
    }
    states.push(State {
        accept: true,
        trans: any_char()
            .into_iter()
            .map(|(lo, hi)| (lo, hi, dead))
            .collect(),
    });
    Dfa {
        states,
        start: dfa.start,
    }
}

/// The JSON text of a key in `dfa` (quotes included), or `None` when there is none.
pub(crate) fn key_expr(
    builder: &mut GrammarBuilder,
    chars: &mut CharRules,
    name: &str,
    dfa: &Dfa,
) -> Option<Expr> {
    let dfa = dfa.trim();
    if dfa.is_empty() {
        return None;
    }
    minimal_key_expr(builder, chars, name, &dfa.minimize())
}

/// [`key_expr`] of an automaton `Dfa::minimize` made (minimising it again would give it
/// back unchanged).
pub(crate) fn minimal_key_expr(
    builder: &mut GrammarBuilder,
    chars: &mut CharRules,
    name: &str,
    dfa: &Dfa,
) -> Option<Expr> {
    if dfa.is_empty() {
        return None;
    }
    let mut encode = |builder: &mut GrammarBuilder, ranges: &[(u32, u32)]| {
        json_chars(builder, chars, name, ranges, Escapes::All)
    };
    let body = dfa.to_expr(builder, name, &mut encode, &Expr::literal("\""));
    Some(Expr::seq([Expr::literal("\""), body]))
}

/// The code points (surrogates excluded) no transition of `trans` covers.
fn gaps(trans: &[(u32, u32, usize)]) -> Vec<(u32, u32)> {
    let mut covered: Vec<(u32, u32)> = trans.iter().map(|&(lo, hi, _)| (lo, hi)).collect();
    covered.sort_unstable();
    let mut out = Vec::new();
    for (lo, hi) in any_char() {
        let mut next = lo;
        for &(c_lo, c_hi) in &covered {
            if c_hi < next || c_lo > hi {
                continue;
            }
            if c_lo > next {
                out.push((next, c_lo - 1));
            }
            next = next.max(c_hi.saturating_add(1));
        }
        if next <= hi {
            out.push((next, hi));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complement_of_names() {
        let dfa = names(&["ab".to_owned(), "a".to_owned()]);
        assert!(dfa.accepts("a") && dfa.accepts("ab") && !dfa.accepts("abc"));
        let other = complement(&dfa);
        assert!(!other.accepts("a") && !other.accepts("ab"));
        assert!(
            other.accepts("")
                && other.accepts("abc")
                && other.accepts("b")
                && other.accepts("\u{10FFFF}")
        );
    }
}
