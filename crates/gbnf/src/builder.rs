//! Building grammars from compilers: the builder hands out readable, unique rule names
//! and shares one rule between identical bodies, so generated grammars stay small.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

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
    /// Rules by a hash of the body they were registered with (bodies are compared on lookup,
    /// so neither a body clone nor a cryptographic hash is needed per rule).
    by_body: HashMap<u64, Vec<RuleName>>,
    /// Per base name, the suffix to try first: every smaller one is taken (rules are never
    /// removed), so numbering `item-2`, `item-3`, … costs no rescan.
    next_suffix: HashMap<String, u64>,
}

/// A fast non-cryptographic hasher (FxHash's mixing) for rule bodies.
#[derive(Default)]
struct BodyHasher(u64);

impl Hasher for BodyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

fn body_hash(body: &Expr) -> u64 {
    let mut hasher = BodyHasher::default();
    body.hash(&mut hasher);
    hasher.finish()
}

impl GrammarBuilder {
    pub fn new() -> GrammarBuilder {
        GrammarBuilder::default()
    }

    /// Defines a rule with `body`, named after `preferred` (sanitised) unless a rule with an
    /// identical body exists, whose name is returned instead.
    pub fn add(&mut self, preferred: &str, body: Expr) -> RuleName {
        let hash = body_hash(&body);
        if let Some(existing) = self.registered(hash, &body) {
            return existing.clone();
        }
        let name = self.fresh_name(preferred);
        self.by_body.entry(hash).or_default().push(name.clone());
        self.grammar.insert(name.clone(), body);
        name
    }

    /// Defines a rule with exactly this name, replacing any body it had.
    ///
    /// Use it for names that callers rely on, such as `root`. The body is not merged with
    /// other rules, but later identical bodies will reuse this name.
    pub fn add_named(&mut self, name: RuleName, body: Expr) -> RuleName {
        self.register(&name, &body);
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
        self.register(name, &body);
        self.grammar.insert(name.clone(), body);
    }

    /// Whether a rule of this exact name exists.
    pub fn contains(&self, name: &str) -> bool {
        self.grammar.rules.contains_key(name)
    }

    pub fn finish(self) -> Grammar {
        self.grammar
    }

    /// The first registered rule whose body is still `body`.
    fn registered(&self, hash: u64, body: &Expr) -> Option<&RuleName> {
        self.by_body
            .get(&hash)?
            .iter()
            .find(|name| self.grammar.get(name.as_str()) == Some(body))
    }

    /// Registers `name` as the rule for `body` unless one is registered already.
    fn register(&mut self, name: &RuleName, body: &Expr) {
        let hash = body_hash(body);
        if self.registered(hash, body).is_none() {
            self.by_body.entry(hash).or_default().push(name.clone());
        }
    }

    fn fresh_name(&mut self, preferred: &str) -> RuleName {
        let base = RuleName::sanitize(preferred);
        if !self.contains(base.as_str()) {
            return base;
        }
        let mut suffix = self.next_suffix.get(base.as_str()).copied().unwrap_or(2);
        loop {
            let candidate = RuleName::sanitize(&format!("{base}-{suffix}"));
            if !self.contains(candidate.as_str()) {
                self.next_suffix
                    .insert(base.as_str().to_owned(), suffix + 1);
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
