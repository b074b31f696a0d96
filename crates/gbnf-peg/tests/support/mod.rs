//! Helpers shared by the lowering tests: a deterministic sampler of strings from a grammar
//! (to compare grammars by what they accept), and the standard snapshot format for grammars.

#![allow(dead_code)]

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use gbnf::{Expr, Grammar, Matcher, Verdict};

/// The repository root (two levels above this crate).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A small xorshift generator: tests must be reproducible, so no OS randomness.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Characters that matter to a grammar: those of its literals and class bounds, plus a few
/// that usually do not.
pub fn alphabet(grammar: &Grammar) -> Vec<char> {
    let mut chars: BTreeSet<char> = "a<>/\n \"\\{}x0".chars().collect();
    let mut stack: Vec<&Expr> = grammar.rules.values().collect();
    while let Some(expr) = stack.pop() {
        match expr {
            Expr::Literal(text) => chars.extend(text.chars()),
            Expr::Class(class) => {
                for &(lo, hi) in class.ranges() {
                    chars.insert(lo);
                    chars.insert(hi);
                }
            }
            Expr::Seq(items) | Expr::Alt(items) => stack.extend(items),
            Expr::Repeat { expr, .. } => stack.push(expr),
            _ => {}
        }
    }
    chars.into_iter().collect()
}

/// The length of the shortest string each rule derives (`usize::MAX` for none), by fixpoint.
pub fn shortest(grammar: &Grammar) -> HashMap<String, usize> {
    let mut lengths: HashMap<String, usize> = HashMap::new();
    loop {
        let mut changed = false;
        for (name, body) in &grammar.rules {
            let length = expr_shortest(body, &lengths);
            let entry = lengths
                .entry(name.as_str().to_owned())
                .or_insert(usize::MAX);
            if length < *entry {
                *entry = length;
                changed = true;
            }
        }
        if !changed {
            return lengths;
        }
    }
}

fn expr_shortest(expr: &Expr, lengths: &HashMap<String, usize>) -> usize {
    match expr {
        Expr::Empty | Expr::Token(_) => 0,
        Expr::Literal(text) => text.chars().count(),
        Expr::Class(_) | Expr::Any => 1,
        Expr::Rule(name) => lengths.get(name.as_str()).copied().unwrap_or(usize::MAX),
        Expr::Seq(items) => items
            .iter()
            .map(|item| expr_shortest(item, lengths))
            .fold(0usize, |acc, len| acc.saturating_add(len)),
        Expr::Alt(items) => items
            .iter()
            .map(|item| expr_shortest(item, lengths))
            .min()
            .unwrap_or(usize::MAX),
        Expr::Repeat { expr, min, .. } => {
            expr_shortest(expr, lengths).saturating_mul(*min as usize)
        }
    }
}

/// One random string derived from `start`, or `None` if the derivation grew too large.
/// Past 40 characters the derivation steers to the shortest completions, so that grammars
/// whose strings must end with a marker (such as `ac`) still yield samples.
pub fn derive(grammar: &Grammar, start: &str, alphabet: &[char], rng: &mut Rng) -> Option<String> {
    let lengths = shortest(grammar);
    let mut out = String::new();
    let mut stack: Vec<&Expr> = vec![grammar.get(start)?];
    let mut steps = 0;
    while let Some(expr) = stack.pop() {
        steps += 1;
        if steps > 20_000 || out.len() > 400 {
            return None;
        }
        let wrap_up = out.chars().count() > 40;
        match expr {
            Expr::Empty | Expr::Token(_) => {}
            Expr::Literal(text) => out.push_str(text),
            Expr::Any => out.push(alphabet[rng.below(alphabet.len())]),
            Expr::Class(class) => {
                let inside: Vec<char> = alphabet
                    .iter()
                    .copied()
                    .filter(|&ch| class.contains(ch))
                    .collect();
                if inside.is_empty() {
                    return None;
                }
                out.push(inside[rng.below(inside.len())]);
            }
            Expr::Rule(name) => stack.push(grammar.get(name.as_str())?),
            Expr::Seq(items) => stack.extend(items.iter().rev()),
            Expr::Alt(items) => {
                if items.is_empty() {
                    return None;
                }
                let pick = if wrap_up {
                    (0..items.len())
                        .min_by_key(|&idx| expr_shortest(&items[idx], &lengths))
                        .unwrap_or(0)
                } else {
                    rng.below(items.len())
                };
                stack.push(&items[pick]);
            }
            Expr::Repeat { expr, min, max } => {
                let max = max.unwrap_or(min + 3).min(min + 3);
                let count = if wrap_up {
                    *min as usize
                } else {
                    *min as usize + rng.below((max - min + 1) as usize)
                };
                for _ in 0..count {
                    stack.push(expr);
                }
            }
        }
    }
    Some(out)
}

/// Strings near the language of `grammars`: derivations and their mutations (truncated, a
/// character inserted or removed), deduplicated and sorted.
pub fn samples(grammars: &[&Grammar], n_derivations: usize, seed: u64) -> Vec<String> {
    let mut rng = Rng::new(seed);
    let mut alphabet_set: BTreeSet<char> = BTreeSet::new();
    for grammar in grammars {
        alphabet_set.extend(alphabet(grammar));
    }
    let alphabet: Vec<char> = alphabet_set.into_iter().collect();
    let mut out: BTreeSet<String> = BTreeSet::new();
    out.insert(String::new());
    for grammar in grammars {
        for _ in 0..n_derivations {
            let Some(text) = derive(grammar, "root", &alphabet, &mut rng) else {
                continue;
            };
            let chars: Vec<char> = text.chars().collect();
            let cut = rng.below(chars.len() + 1);
            out.insert(chars[..cut].iter().collect());
            let mut inserted = chars.clone();
            inserted.insert(
                rng.below(chars.len() + 1),
                alphabet[rng.below(alphabet.len())],
            );
            out.insert(inserted.into_iter().collect());
            if !chars.is_empty() {
                let mut removed = chars.clone();
                removed.remove(rng.below(chars.len()));
                out.insert(removed.into_iter().collect());
            }
            out.insert(text);
        }
    }
    out.into_iter().collect()
}

/// The verdict line of the snapshot format.
pub fn verdict_line(verdict: Verdict, sample: &str) -> String {
    let json = serde_json::Value::String(sample.to_owned()).to_string();
    format!("{verdict}\t{json}")
}

/// The grammar section and verdicts section of a snapshot.
pub fn grammar_snapshot(grammar: &Grammar, samples: &[String]) -> String {
    let matcher = match Matcher::new(grammar, "root") {
        Ok(matcher) => matcher,
        Err(error) => panic!(
            "the matcher refuses the grammar: {error}\n{}",
            gbnf::print(grammar)
        ),
    };
    let mut out = String::new();
    out.push_str("--- grammar (root: root) ---\n");
    out.push_str(&gbnf::print(grammar));
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("--- verdicts ---\n");
    for sample in samples {
        out.push_str(&verdict_line(matcher.verdict(sample), sample));
        out.push('\n');
    }
    out
}
