//! Building grammars from compilers: the builder hands out readable, unique rule names
//! and shares one rule between identical bodies, so generated grammars stay small.

use std::collections::HashMap;

use crate::ir::{Expr, Grammar, RuleName};

/// Builds a [`Grammar`] rule by rule.
///
/// - [`GrammarBuilder::add`] defines a rule from a preferred name. If a rule with the
///   same body exists already, that rule's name comes back instead, so identical bodies
///   are merged. Otherwise the name is made unique by a numeric suffix (`item`, `item-2`, …).
/// - [`GrammarBuilder::reserve`] and [`GrammarBuilder::define`] let a rule be referenced
///   before its body is known, which recursive definitions need. Reserved rules take part
///   in merging once defined.
#[derive(Debug, Default)]
pub struct GrammarBuilder {
    grammar: Grammar,
    by_body: HashMap<Expr, RuleName>,
}

impl GrammarBuilder {
    pub fn new() -> GrammarBuilder {
        GrammarBuilder::default()
    }

    /// Defines a rule with `body`, named after `preferred` (sanitised) unless a rule with an
    /// identical body exists, whose name is returned instead.
    pub fn add(&mut self, preferred: &str, body: Expr) -> RuleName {
        if let Some(existing) = self.by_body.get(&body) {
            return existing.clone();
        }
        let name = self.fresh_name(preferred);
        self.by_body.insert(body.clone(), name.clone());
        self.grammar.insert(name.clone(), body);
        name
    }

    /// Defines a rule with exactly this name, replacing any body it had.
    ///
    /// Use it for names that callers rely on, such as `root`. The body is not merged with
    /// other rules, but later identical bodies will reuse this name.
    pub fn add_named(&mut self, name: RuleName, body: Expr) -> RuleName {
        self.by_body.entry(body.clone()).or_insert_with(|| name.clone());
        self.grammar.insert(name.clone(), body);
        name
    }

    /// Reserves a unique name derived from `preferred`; its body is [`Expr::Empty`] until
    /// [`GrammarBuilder::define`] sets it.
    pub fn reserve(&mut self, preferred: &str) -> RuleName {
        let name = self.fresh_name(preferred);
        self.grammar.insert(name.clone(), Expr::Empty);
        name
    }

    /// Sets the body of a reserved rule.
    pub fn define(&mut self, name: &RuleName, body: Expr) {
        self.by_body.entry(body.clone()).or_insert_with(|| name.clone());
        self.grammar.insert(name.clone(), body);
    }

    /// Whether a rule of this exact name exists.
    pub fn contains(&self, name: &str) -> bool {
        self.grammar.rules.contains_key(name)
    }

    pub fn finish(self) -> Grammar {
        self.grammar
    }

    fn fresh_name(&self, preferred: &str) -> RuleName {
        let base = RuleName::sanitize(preferred);
        if !self.contains(base.as_str()) {
            return base;
        }
        let mut suffix = 2u64;
        loop {
            let candidate = RuleName::sanitize(&format!("{base}-{suffix}"));
            if !self.contains(candidate.as_str()) {
                return candidate;
            }
            suffix += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_bodies_share_a_rule() {
        let mut builder = GrammarBuilder::new();
        let a = builder.add("digit", Expr::literal("0"));
        let b = builder.add("other", Expr::literal("0"));
        let c = builder.add("digit", Expr::literal("1"));
        assert_eq!(a, b);
        assert_eq!(c.as_str(), "digit-2");
        assert_eq!(builder.finish().rules.len(), 2);
    }

    #[test]
    fn reserved_names_allow_recursion() {
        let mut builder = GrammarBuilder::new();
        let list = builder.reserve("list");
        let body = Expr::alt([
            Expr::Empty,
            Expr::seq([Expr::literal("a"), Expr::rule(&list)]),
        ]);
        builder.define(&list, body.clone());
        let grammar = builder.finish();
        assert_eq!(grammar.get("list"), Some(&body));
    }

    #[test]
    fn names_are_sanitised() {
        let mut builder = GrammarBuilder::new();
        let name = builder.add("properties/first_name", Expr::literal("x"));
        assert_eq!(name.as_str(), "properties-first-name");
    }
}
