//! Random strings from a GBNF grammar, for comparing two grammars by their verdicts: random
//! derivations (with a depth budget after which only the shortest completions are taken), and
//! mutations of those strings as likely negatives.

use std::collections::HashMap;

use gbnf::{CharClass, Expr, Grammar};

/// A small deterministic generator (SplitMix64), so that every run sees the same samples.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }
}

/// Characters tried for `.` and negated classes: JSON punctuation, ASCII, and a few
/// multi-byte code points.
const CANDIDATES: &str =
    "\"\\{}[]:,. -+eE0123456789abcdefxyzABCZ_/'\t\n\r\u{0}\u{1f}\u{7f}é中😀\u{2028}";

const INFINITE: usize = usize::MAX;

/// Generates strings from one grammar.
#[derive(Debug)]
pub struct Sampler<'g> {
    grammar: &'g Grammar,
    /// The length of the shortest string each rule derives (`INFINITE` when none).
    shortest: HashMap<String, usize>,
    /// Rule depth after which derivations take the shortest completion.
    pub depth_budget: usize,
    /// Output length after which derivations take the shortest completion.
    pub length_budget: usize,
}

impl<'g> Sampler<'g> {
    pub fn new(grammar: &'g Grammar) -> Sampler<'g> {
        let mut shortest: HashMap<String, usize> = grammar
            .rules
            .keys()
            .map(|name| (name.as_str().to_owned(), INFINITE))
            .collect();
        // Fixpoint: each pass can only lower the values, and they are bounded below.
        loop {
            let mut changed = false;
            for (name, body) in &grammar.rules {
                let len = shortest_len(body, &shortest);
                if len < shortest[name.as_str()] {
                    shortest.insert(name.as_str().to_owned(), len);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        Sampler {
            grammar,
            shortest,
            depth_budget: 10,
            length_budget: 400,
        }
    }

    /// A random string derived from `root`, or `None` when the derivation needs a token or an
    /// undefined rule, or the rule derives nothing.
    pub fn sample(&self, root: &str, rng: &mut Rng) -> Option<String> {
        if self.shortest.get(root).copied().unwrap_or(INFINITE) == INFINITE {
            return None;
        }
        let mut out = String::new();
        let body = self.grammar.get(root)?;
        self.generate(body, 0, rng, &mut out).then_some(out)
    }

    fn finishing(&self, depth: usize, out: &str) -> bool {
        depth > self.depth_budget || out.len() > self.length_budget
    }

    fn generate(&self, expr: &Expr, depth: usize, rng: &mut Rng, out: &mut String) -> bool {
        // Recursion is bounded: past the budget only shortest completions are taken, and
        // those cannot revisit a rule on the same path without making the string longer
        // than the shortest, so the depth stays below budget + number of rules.
        if depth > self.depth_budget + self.grammar.rules.len() + 8 {
            return false;
        }
        match expr {
            Expr::Empty => true,
            Expr::Literal(text) => {
                out.push_str(text);
                true
            }
            Expr::Class(class) => match sample_class(class, rng) {
                Some(ch) => {
                    out.push(ch);
                    true
                }
                None => false,
            },
            Expr::Any => {
                out.push(pick_candidate(rng, |_| true).unwrap_or('a'));
                true
            }
            Expr::Rule(name) => match self.grammar.get(name.as_str()) {
                Some(body) => self.generate(body, depth + 1, rng, out),
                None => false,
            },
            Expr::Token(_) => false,
            Expr::Seq(items) => items
                .iter()
                .all(|item| self.generate(item, depth, rng, out)),
            Expr::Alt(alternatives) => {
                let finite: Vec<(&Expr, usize)> = alternatives
                    .iter()
                    .map(|alt| (alt, shortest_len(alt, &self.shortest)))
                    .filter(|&(_, len)| len != INFINITE)
                    .collect();
                if finite.is_empty() {
                    return false;
                }
                let chosen = if self.finishing(depth, out) {
                    let best = finite.iter().map(|&(_, len)| len).min().unwrap_or(0);
                    let shortest: Vec<&Expr> = finite
                        .iter()
                        .filter(|&&(_, len)| len == best)
                        .map(|&(alt, _)| alt)
                        .collect();
                    shortest[rng.below(shortest.len())]
                } else {
                    finite[rng.below(finite.len())].0
                };
                self.generate(chosen, depth, rng, out)
            }
            Expr::Repeat { expr, min, max } => {
                let min = *min as usize;
                let count = if self.finishing(depth, out) {
                    min
                } else {
                    let max = max.map_or(min + 4, |max| (max as usize).min(min + 4));
                    // Favour the bounds, where off-by-one differences show.
                    match rng.below(4) {
                        0 => min,
                        1 => max,
                        _ => min + rng.below(max - min + 1),
                    }
                };
                (0..count).all(|_| self.generate(expr, depth, rng, out))
            }
        }
    }
}

/// The shortest length (in code points) `expr` derives, given the rules' shortest lengths.
fn shortest_len(expr: &Expr, rules: &HashMap<String, usize>) -> usize {
    match expr {
        Expr::Empty => 0,
        Expr::Literal(text) => text.chars().count(),
        Expr::Class(_) | Expr::Any => 1,
        Expr::Rule(name) => rules.get(name.as_str()).copied().unwrap_or(INFINITE),
        Expr::Token(_) => INFINITE,
        Expr::Seq(items) => items
            .iter()
            .map(|item| shortest_len(item, rules))
            .fold(0, usize::saturating_add),
        Expr::Alt(alternatives) => alternatives
            .iter()
            .map(|alt| shortest_len(alt, rules))
            .min()
            .unwrap_or(INFINITE),
        Expr::Repeat { expr, min, .. } => {
            if *min == 0 {
                0
            } else {
                shortest_len(expr, rules).saturating_mul(*min as usize)
            }
        }
    }
}

fn pick_candidate(rng: &mut Rng, keep: impl Fn(char) -> bool) -> Option<char> {
    let allowed: Vec<char> = CANDIDATES.chars().filter(|&ch| keep(ch)).collect();
    if allowed.is_empty() {
        None
    } else {
        Some(allowed[rng.below(allowed.len())])
    }
}

fn sample_class(class: &CharClass, rng: &mut Rng) -> Option<char> {
    if class.is_negated() {
        return pick_candidate(rng, |ch| class.contains(ch)).or_else(|| {
            // Every candidate is excluded: scan upwards from a random point for a member.
            (0..2000u32)
                .map(|step| 0x100 + (rng.below(0x10000) as u32 + step) % 0xD000)
                .filter_map(char::from_u32)
                .find(|&ch| class.contains(ch))
        });
    }
    let ranges = class.ranges();
    if ranges.is_empty() {
        return None;
    }
    // Half the time, take a range end: boundaries are where classes differ.
    let (lo, hi) = ranges[rng.below(ranges.len())];
    let (lo, hi) = (u32::from(lo), u32::from(hi));
    let code = match rng.below(4) {
        0 => lo,
        1 => hi,
        _ => lo + (rng.next_u64() % u64::from(hi - lo + 1)) as u32,
    };
    char::from_u32(code).or(char::from_u32(lo))
}

/// A variation of `text` that is likely (not certain) to be outside the language.
pub fn mutate(text: &str, rng: &mut Rng) -> String {
    let chars: Vec<char> = text.chars().collect();
    let at = if chars.is_empty() {
        0
    } else {
        rng.below(chars.len() + 1)
    };
    let noise: Vec<char> = "\"\\{}[]:,.-+eE019 aztrue\n\u{0}é".chars().collect();
    let random_char = |rng: &mut Rng| noise[rng.below(noise.len())];
    let mut out = chars.clone();
    match rng.below(6) {
        0 if !chars.is_empty() => {
            out.remove(at.min(chars.len() - 1));
        }
        1 => out.insert(at, random_char(rng)),
        2 if !chars.is_empty() => out[at.min(chars.len() - 1)] = random_char(rng),
        3 if !chars.is_empty() => out.truncate(at.min(chars.len() - 1)),
        4 if !chars.is_empty() => {
            let from = at.min(chars.len() - 1);
            let to = (from + 1 + rng.below(8)).min(chars.len());
            let copy: Vec<char> = chars[from..to].to_vec();
            for (offset, ch) in copy.into_iter().enumerate() {
                out.insert(to + offset, ch);
            }
        }
        _ if chars.len() >= 2 => {
            let first = at.min(chars.len() - 2);
            out.swap(first, first + 1);
        }
        _ => out.push(random_char(rng)),
    }
    out.into_iter().collect()
}
