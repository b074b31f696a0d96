//! A tiny recognizer for test grammars, so leaf tests do not depend on the matcher branch:
//! computes the set of end offsets of an expression from a start offset (memoised per rule and
//! offset). Only for tests: it recurses, and assumes no left recursion.

use std::collections::{BTreeSet, HashMap};

use gbnf::{Expr, Grammar};

pub(crate) struct Recognizer<'a> {
    grammar: &'a Grammar,
    chars: Vec<char>,
    memo: HashMap<(String, usize), BTreeSet<usize>>,
}

impl<'a> Recognizer<'a> {
    /// Whether `expr` (with rules from `grammar`) matches all of `text`.
    pub(crate) fn matches(grammar: &'a Grammar, expr: &Expr, text: &str) -> bool {
        let mut recognizer = Recognizer {
            grammar,
            chars: text.chars().collect(),
            memo: HashMap::new(),
        };
        let ends = recognizer.ends(expr, 0);
        ends.contains(&recognizer.chars.len())
    }

    fn ends(&mut self, expr: &Expr, start: usize) -> BTreeSet<usize> {
        let mut out = BTreeSet::new();
        match expr {
            Expr::Empty => {
                out.insert(start);
            }
            Expr::Literal(text) => {
                let lit: Vec<char> = text.chars().collect();
                if self.chars.get(start..start + lit.len()) == Some(&lit[..]) {
                    out.insert(start + lit.len());
                }
            }
            Expr::Class(class) => {
                if self.chars.get(start).is_some_and(|&c| class.contains(c)) {
                    out.insert(start + 1);
                }
            }
            Expr::Any => {
                if start < self.chars.len() {
                    out.insert(start + 1);
                }
            }
            Expr::Token(_) => {}
            Expr::Rule(name) => {
                let key = (name.as_str().to_owned(), start);
                if let Some(done) = self.memo.get(&key) {
                    return done.clone();
                }
                let body = self
                    .grammar
                    .get(name.as_str())
                    .expect("undefined rule")
                    .clone();
                let result = self.ends(&body, start);
                self.memo.insert(key, result.clone());
                return result;
            }
            Expr::Seq(items) => {
                let mut current = BTreeSet::from([start]);
                for item in items {
                    let mut next = BTreeSet::new();
                    for &pos in &current {
                        next.extend(self.ends(item, pos));
                    }
                    current = next;
                }
                return current;
            }
            Expr::Alt(items) => {
                for item in items {
                    out.extend(self.ends(item, start));
                }
            }
            Expr::Repeat { expr, min, max } => {
                let mut current = BTreeSet::from([start]);
                let mut count = 0u32;
                let mut seen = BTreeSet::new();
                loop {
                    if count >= *min {
                        out.extend(current.iter().copied());
                    }
                    if max.is_some_and(|max| count >= max) || current.is_empty() {
                        break;
                    }
                    let mut next = BTreeSet::new();
                    for &pos in &current {
                        next.extend(self.ends(expr, pos));
                    }
                    count += 1;
                    if count > *min {
                        next.retain(|p| seen.insert(*p));
                    }
                    current = next;
                }
            }
        }
        out
    }
}

/// A lowered leaf ready to test: the grammar with `root` bound to the leaf's expression, its
/// printed text (checked to read back and validate), and a matcher.
pub(crate) struct Lowered {
    pub grammar: Grammar,
    pub text: String,
    expr: Expr,
    matcher: gbnf::Matcher,
}

impl Lowered {
    pub(crate) fn new(builder: gbnf::GrammarBuilder, expr: Expr) -> Lowered {
        let mut grammar = builder.finish();
        let root = gbnf::RuleName::new("root").expect("valid name");
        grammar.insert(root, expr.clone());
        let text = gbnf::print(&grammar);
        if let Err(err) = gbnf::check(&text, "root") {
            panic!("the printed grammar does not validate: {err}\n{text}");
        }
        let matcher = gbnf::Matcher::new(&grammar, "root").expect("matcher");
        Lowered {
            grammar,
            text,
            expr,
            matcher,
        }
    }

    /// Whether the grammar accepts `input`, by the matcher; cross-checked with the recognizer.
    pub(crate) fn accepts(&self, input: &str) -> bool {
        let by_matcher = self.matcher.verdict(input) == gbnf::Verdict::Accept;
        let by_recognizer = Recognizer::matches(&self.grammar, &self.expr, input);
        assert_eq!(
            by_matcher, by_recognizer,
            "matcher and recognizer disagree on {input:?}\n{}",
            self.text
        );
        by_matcher
    }
}
