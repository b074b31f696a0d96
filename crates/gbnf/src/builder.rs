//! Building grammars from compilers: the builder hands out readable, unique rule names,
//! shares one rule between identical bodies, so generated grammars stay small, and keeps
//! every rule body shallow, so that no later tree walk can overflow the stack.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};
use std::mem;

use indexmap::map::raw_entry_v1::{RawEntryApiV1, RawEntryMut};

use crate::ir::{is_rule_name_byte, Expr, Grammar, RuleName};

/// Builds a [`Grammar`] rule by rule.
///
/// - [`GrammarBuilder::add`] defines a rule from a preferred name. If a rule with the
///   same body exists already, that rule's name comes back instead, so identical bodies
///   are merged. Otherwise the name is made unique by a numeric suffix (`item`, `item-2`, …).
/// - [`GrammarBuilder::reserve`] and [`GrammarBuilder::define`] let a rule be referenced
///   before its body is known, which recursive definitions need. Reserved rules take part
///   in merging once defined.
///
/// Invariant: every body the builder stores is at most [`GrammarBuilder::MAX_DEPTH`] deep
/// (see [`Expr::depth`]). Bodies given to [`GrammarBuilder::add`],
/// [`GrammarBuilder::add_named`] and [`GrammarBuilder::define`] may be nested arbitrarily
/// deep: their deep parts are moved, without recursion, into generated rules named after
/// the rule with a `-deep` suffix (`item-deep`, `item-deep-2`, …), which describe the same
/// language. So the derived `Clone`, `Hash`, `PartialEq`, `Debug` and `Drop` of [`Expr`],
/// and every recursive walk over a built grammar, go at most that deep.
#[derive(Debug, Default)]
pub struct GrammarBuilder {
    grammar: Grammar,
    /// Rules by a hash of the body they were registered with; bodies are compared on lookup,
    /// so neither a body clone nor a cryptographic hash is needed per rule. Each hash maps to
    /// the first and last of its registrations (indices into `registrations`).
    by_body: HashMap<u64, (usize, usize), FastHash>,
    /// Every registration, in order: the rule's index in the grammar, and the next
    /// registration of the same hash (`NO_REGISTRATION` at the end of the chain).
    registrations: Vec<(usize, usize)>,
    /// For each base name, the next numeric suffix worth trying: smaller ones are taken.
    next_suffix: HashMap<RuleName, u64, FastHash>,
    /// The rule references of the stored bodies, recorded while they are hashed (see
    /// [`GrammarBuilder::finish_with_references`]).
    references: Recorder,
}

/// What [`GrammarBuilder`] records of each body it stores: the rules it references.
#[derive(Debug, Default)]
struct Recorder {
    /// Rule indices by the address of their name's text, direct-mapped (a power of two of
    /// entries of address and rule index, empty until the first rule, and grown with the
    /// grammar up to [`MAX_RECENT_SLOTS`]; growing starts it afresh): the names in bodies
    /// are mostly clones of the names the builder handed out, and a hit costs a load and a
    /// compare instead of hashing a string. Each rule goes in when it is stored and again
    /// when a reference to it misses. Only addresses of the grammar's own names go in, which
    /// no other name can come to share. (A map of every address cost more to keep than the
    /// lookups it saved over the grammar's own map.)
    recent: Vec<(usize, usize)>,
    /// The references of the body being hashed, in walk order.
    scratch: Vec<usize>,
    /// Whether that body has an empty alternation.
    scratch_empty_alt: bool,
    /// Positions in `scratch` whose name did not resolve yet, with the name.
    scratch_unresolved: Vec<(usize, RuleName)>,
    /// Every stored body's references, one span per store.
    all: Vec<usize>,
    /// Per rule index: its latest body's span in `all` and whether it has an empty
    /// alternation (`None` while the rule has no stored body).
    spans: Vec<Option<(usize, usize, bool)>>,
    /// Positions in `all` still to resolve by name, when the grammar is finished.
    unresolved: Vec<(usize, RuleName)>,
    /// Per rule index: [`name_hash`] of its name, so that a reference hashes as one word.
    name_hashes: Vec<u64>,
}

impl Recorder {
    /// Puts rule `index`, whose name (the grammar's own key) is at `address`, in its slot of
    /// [`Recorder::recent`].
    fn remember(&mut self, address: usize, index: usize) {
        // About a slot per rule: small grammars (most tool schemas) zero little, big ones
        // collide little.
        let wanted = (index + 1)
            .next_power_of_two()
            .clamp(MIN_RECENT_SLOTS, MAX_RECENT_SLOTS);
        if self.recent.len() < wanted {
            self.recent = vec![(0, 0); wanted];
        }
        let slot = recent_slot(address, self.recent.len());
        self.recent[slot] = (address, index);
    }

    fn start(&mut self) {
        self.scratch.clear();
        self.scratch_empty_alt = false;
        self.scratch_unresolved.clear();
    }

    /// Keeps what was recorded since [`Recorder::start`] as the references of rule `index`.
    fn store(&mut self, index: usize) {
        let start = self.all.len();
        for (at, name) in self.scratch_unresolved.drain(..) {
            self.unresolved.push((start + at, name));
        }
        self.all.extend_from_slice(&self.scratch);
        if self.spans.len() <= index {
            self.spans.resize(index + 1, None);
        }
        self.spans[index] = Some((start, self.all.len(), self.scratch_empty_alt));
    }
}

/// The rule references of every body of a grammar, as rule indices in walk order (depth
/// first, left to right), from [`GrammarBuilder::finish_with_references`].
#[derive(Debug, Default)]
pub struct RuleReferences {
    /// Every rule's references, rule after rule.
    all: Vec<usize>,
    /// Where each rule's references start in `all` (one more entry than rules).
    starts: Vec<usize>,
    empty_alt: Vec<bool>,
}

impl RuleReferences {
    /// The index [`RuleReferences::of_rule`] gives a reference to a rule the grammar does not
    /// define.
    pub const UNDEFINED: usize = usize::MAX;

    /// The references of rule `i` (its index in the grammar), in walk order.
    pub fn of_rule(&self, i: usize) -> &[usize] {
        &self.all[self.starts[i]..self.starts[i + 1]]
    }

    /// Whether the body of rule `i` contains an empty alternation (which matches nothing).
    pub fn has_empty_alternation(&self, i: usize) -> bool {
        self.empty_alt[i]
    }

    /// How many rules there are.
    pub fn len(&self) -> usize {
        self.empty_alt.len()
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.empty_alt.is_empty()
    }
}

/// How many entries [`Recorder::recent`] has at least and at most (powers of two).
const MIN_RECENT_SLOTS: usize = 64;
const MAX_RECENT_SLOTS: usize = 4096;

/// The slot of [`Recorder::recent`] for a name's address.
/// `slots` is the cache's length, a power of two (or 0 before the first rule, when the slot
/// is out of bounds whatever it is).
fn recent_slot(address: usize, slots: usize) -> usize {
    ((address >> 4) ^ (address >> 12)) & slots.wrapping_sub(1)
}

/// The end of a chain of registrations in [`GrammarBuilder`].
const NO_REGISTRATION: usize = usize::MAX;

/// A fast non-cryptographic hasher (FxHash's mixing) for keys the compilers make themselves
/// (rule bodies, rule names, indices), where nobody chooses collisions.
#[derive(Debug, Default)]
pub struct FastHasher(u64);

/// [`FastHasher`] for `HashMap`/`HashSet`.
pub type FastHash = BuildHasherDefault<FastHasher>;

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Eight bytes a word, the last one zero-padded. Whole words are read directly and the
        // tail byte by byte: a variable-length copy into the word was a `memcpy` call per
        // word (a million calls hashing the BFCL corpus's rule bodies).
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let mut le = [0u8; 8];
            le.copy_from_slice(word);
            self.write_u64(u64::from_le_bytes(le));
        }
        let tail = words.remainder();
        if !tail.is_empty() {
            let word = tail
                .iter()
                .enumerate()
                .fold(0u64, |word, (i, &byte)| word | u64::from(byte) << (8 * i));
            self.write_u64(word);
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

/// Appends the decimal digits of `n` to `out`: how rule names get their `-N` suffixes, here
/// and in the compilers that name rules the same way (without `format!`'s machinery).
pub fn push_decimal(out: &mut String, n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    out.extend(digits[at..].iter().map(|&d| char::from(d)));
}

/// Whether `expr` is at most `limit` deep (as [`Expr::depth`] counts), without allocating.
/// It recurses, but never more than `limit + 1` calls deep, whatever the expression.
fn within_depth(expr: &Expr, limit: usize) -> bool {
    if limit == 0 {
        return false;
    }
    match expr {
        Expr::Seq(items) | Expr::Alt(items) => items.iter().all(|i| within_depth(i, limit - 1)),
        Expr::Repeat { expr, .. } => within_depth(expr, limit - 1),
        _ => true,
    }
}

/// The hash rule bodies are registered under (bodies within [`GrammarBuilder::MAX_DEPTH`]),
/// recording the body's references in `recorder`.
fn body_hash(body: &Expr, rules: &Grammar, recorder: &mut Recorder) -> u64 {
    shallow_hash(body, GrammarBuilder::MAX_DEPTH, rules, recorder).unwrap_or(0)
}

/// A hash of `body`, or `None` if it is deeper than `limit`: one walk both checks the depth
/// and hashes, and records the body's references in `recorder` (after
/// [`Recorder::start`]). It recurses at most `limit + 1` calls deep.
fn shallow_hash(
    body: &Expr,
    limit: usize,
    rules: &Grammar,
    recorder: &mut Recorder,
) -> Option<u64> {
    let mut hasher = FastHasher::default();
    recorder.start();
    hash_within(body, limit, &mut hasher, rules, recorder).then(|| hasher.finish())
}

/// The hash of a rule name's text that a reference to it contributes to a body's hash: the
/// same whether the reference resolves to a rule (whose name's hash is kept) or not. It is
/// the hash the grammar's map of rules has of the name, so that a new rule's comes free
/// with its insertion (see [`try_insert`]).
fn name_hash(name: &str) -> u64 {
    FastHash::default().hash_one(name)
}

/// The tags that start each kind of node in a body's hash, in the top byte of a word whose
/// low bits hold the node's length (or other small field).
const TAG_SEQ: u64 = 0xf0 << 56;
const TAG_ALT: u64 = 0xf1 << 56;
const TAG_REPEAT: u64 = 0xf2 << 56;
const TAG_RULE: u64 = 0xf3 << 56;
const TAG_LITERAL: u64 = 0xf4 << 56;
const TAG_CLASS: u64 = 0xf5 << 56;
const TAG_NEGATED_CLASS: u64 = 0xf6 << 56;

fn hash_within(
    expr: &Expr,
    limit: usize,
    hasher: &mut FastHasher,
    rules: &Grammar,
    recorder: &mut Recorder,
) -> bool {
    if limit == 0 {
        return false;
    }
    match expr {
        Expr::Seq(items) | Expr::Alt(items) => {
            let is_seq = matches!(expr, Expr::Seq(_));
            let tag = if is_seq { TAG_SEQ } else { TAG_ALT };
            hasher.write_u64(tag | items.len() as u64);
            if items.is_empty() && !is_seq {
                recorder.scratch_empty_alt = true;
            }
            if !items.is_empty() && limit == 1 {
                return false;
            }
            // Leaves are hashed here rather than by a call each: they are half the nodes.
            items.iter().all(|item| match item {
                Expr::Seq(_) | Expr::Alt(_) | Expr::Repeat { .. } => {
                    hash_within(item, limit - 1, hasher, rules, recorder)
                }
                leaf => {
                    hash_leaf(leaf, hasher, rules, recorder);
                    true
                }
            })
        }
        Expr::Repeat { expr, min, max } => {
            hasher.write_u64(TAG_REPEAT | u64::from(*min));
            hasher.write_u64(max.map_or(u64::MAX, u64::from));
            hash_within(expr, limit - 1, hasher, rules, recorder)
        }
        leaf => {
            hash_leaf(leaf, hasher, rules, recorder);
            true
        }
    }
}

/// [`hash_within`] of a node without children.
#[inline(always)]
fn hash_leaf(leaf: &Expr, hasher: &mut FastHasher, rules: &Grammar, recorder: &mut Recorder) {
    match leaf {
        Expr::Rule(name) => {
            let address = name.as_str().as_ptr() as usize;
            let slot = recent_slot(address, recorder.recent.len());
            let recent = recorder.recent.get(slot).copied();
            let index = match recent {
                Some((known, index)) if known == address => index,
                _ => match rules.rules.get_index_of(name.as_str()) {
                    Some(index) => {
                        let own = rules.rules.get_index(index);
                        if own.is_some_and(|(key, _)| key.as_str().as_ptr() as usize == address) {
                            recorder.remember(address, index);
                        }
                        index
                    }
                    None => {
                        let at = recorder.scratch.len();
                        recorder.scratch_unresolved.push((at, name.clone()));
                        RuleReferences::UNDEFINED
                    }
                },
            };
            let text_hash = match recorder.name_hashes.get(index) {
                Some(&hash) => hash,
                None => name_hash(name.as_str()),
            };
            hasher.write_u64(TAG_RULE);
            hasher.write_u64(text_hash);
            recorder.scratch.push(index);
        }
        Expr::Literal(text) => {
            hasher.write_u64(TAG_LITERAL | text.len() as u64);
            hasher.write(text.as_bytes());
        }
        Expr::Class(class) => {
            let tag = if class.is_negated() {
                TAG_NEGATED_CLASS
            } else {
                TAG_CLASS
            };
            hasher.write_u64(tag | class.ranges().len() as u64);
            for &(lo, hi) in class.ranges() {
                hasher.write_u64(u64::from(lo) << 32 | u64::from(hi));
            }
        }
        // `Empty`, `Any` and tokens: the derived hash does not recurse. (Nodes with children
        // never come here.)
        other => other.hash(hasher),
    }
}

impl GrammarBuilder {
    /// The deepest rule body a built grammar contains, as measured by [`Expr::depth`].
    pub const MAX_DEPTH: usize = 48;

    pub fn new() -> GrammarBuilder {
        GrammarBuilder::default()
    }

    /// Defines a rule with `body`, named after `preferred` (sanitised) unless a rule with an
    /// identical body exists, whose name is returned instead.
    pub fn add(&mut self, preferred: &str, body: Expr) -> RuleName {
        if let Some(hash) = shallow_hash(
            &body,
            GrammarBuilder::MAX_DEPTH,
            &self.grammar,
            &mut self.references,
        ) {
            return self.add_hashed(preferred, body, hash);
        }
        let body = self.make_shallow(preferred, body);
        self.add_shallow(preferred, body)
    }

    /// [`GrammarBuilder::add`] for a body the caller keeps (a memoised one): it is copied
    /// only when no rule has it yet, so adding a body that exists costs its hash alone.
    pub fn add_cloned(&mut self, preferred: &str, body: &Expr) -> RuleName {
        if let Some(hash) = shallow_hash(
            body,
            GrammarBuilder::MAX_DEPTH,
            &self.grammar,
            &mut self.references,
        ) {
            if let Some(existing) = self.registered(hash, body) {
                return existing.clone();
            }
            return self.add_hashed(preferred, body.clone(), hash);
        }
        self.add(preferred, body.clone())
    }

    /// Defines a rule with exactly this name, replacing any body it had.
    ///
    /// Use it for names that callers rely on, such as `root`. The body is not merged with
    /// other rules, but later identical bodies will reuse this name.
    pub fn add_named(&mut self, name: RuleName, body: Expr) -> RuleName {
        let (body, hash) = self.shallow_with_hash(name.as_str(), body);
        self.register(&name, &body, hash);
        self.store_named(&name, body);
        name
    }

    /// Reserves a unique name derived from `preferred`; its body is [`Expr::Empty`] until
    /// [`GrammarBuilder::define`] sets it.
    pub fn reserve(&mut self, preferred: &str) -> RuleName {
        let (index, name, name_hash) = self.insert_fresh(preferred, Expr::Empty);
        self.note_address(index, Some(name_hash));
        name
    }

    /// Sets the body of a reserved rule.
    pub fn define(&mut self, name: &RuleName, body: Expr) {
        let (body, hash) = self.shallow_with_hash(name.as_str(), body);
        self.register(name, &body, hash);
        self.store_named(name, body);
    }

    /// Whether a rule of this exact name exists.
    pub fn contains(&self, name: &str) -> bool {
        self.grammar.rules.contains_key(name)
    }

    pub fn finish(self) -> Grammar {
        self.grammar
    }

    /// [`GrammarBuilder::finish`], with the rule references of every body, recorded while
    /// the bodies were stored (so a caller need not walk the grammar again to find them).
    pub fn finish_with_references(self) -> (Grammar, RuleReferences) {
        let GrammarBuilder {
            grammar,
            references: mut recorder,
            ..
        } = self;
        for (at, name) in recorder.unresolved.drain(..) {
            recorder.all[at] = grammar
                .rules
                .get_index_of(name.as_str())
                .unwrap_or(RuleReferences::UNDEFINED);
        }
        let n = grammar.rules.len();
        let mut references = RuleReferences {
            all: Vec::with_capacity(recorder.all.len()),
            starts: Vec::with_capacity(n + 1),
            empty_alt: Vec::with_capacity(n),
        };
        recorder.spans.resize(n, None);
        for span in &recorder.spans {
            references.starts.push(references.all.len());
            if let Some((start, end, empty_alt)) = *span {
                references.all.extend_from_slice(&recorder.all[start..end]);
                references.empty_alt.push(empty_alt);
            } else {
                references.empty_alt.push(false);
            }
        }
        references.starts.push(references.all.len());
        (grammar, references)
    }

    /// Stores `body` as rule `name` (defined or redefined in place) with the references
    /// recorded for it.
    fn store_named(&mut self, name: &RuleName, body: Expr) {
        let (index, _) = self.grammar.rules.insert_full(name.clone(), body);
        self.note_address(index, None);
        self.references.store(index);
    }

    /// Remembers where the text of rule `index`'s name is (the grammar's own key, which
    /// lives as long as the builder, so no other name can come to share its address), and,
    /// for a new rule, its name's [`name_hash`] (`hash`, when the caller knows it).
    fn note_address(&mut self, index: usize, hash: Option<u64>) {
        if let Some((key, _)) = self.grammar.rules.get_index(index) {
            let address = key.as_str().as_ptr() as usize;
            self.references.remember(address, index);
            let hashes = &mut self.references.name_hashes;
            if hashes.len() <= index {
                hashes.resize(index + 1, 0);
                let hash = hash.unwrap_or_else(|| name_hash(key.as_str()));
                debug_assert_eq!(hash, name_hash(key.as_str()));
                hashes[index] = hash;
            }
        }
    }

    /// [`GrammarBuilder::add`] for a body known to be at most [`GrammarBuilder::MAX_DEPTH`]
    /// deep, which is therefore safe to hash and clone.
    fn add_shallow(&mut self, preferred: &str, body: Expr) -> RuleName {
        let hash = body_hash(&body, &self.grammar, &mut self.references);
        self.add_hashed(preferred, body, hash)
    }

    /// [`GrammarBuilder::add_shallow`] with the body's hash known.
    fn add_hashed(&mut self, preferred: &str, body: Expr, hash: u64) -> RuleName {
        debug_assert!(body.depth() <= GrammarBuilder::MAX_DEPTH);
        if let Some(existing) = self.registered(hash, &body) {
            return existing.clone();
        }
        let (index, name, name_hash) = self.insert_fresh(preferred, body);
        self.note_address(index, Some(name_hash));
        self.references.store(index);
        self.push_registration(hash, index);
        name
    }

    /// Stores `body` as a new rule named after `preferred`: sanitised (see
    /// [`RuleName::sanitize`]) unless it is a valid name already, and made unique with a
    /// numeric suffix (`item`, `item-2`, …) if a rule has that name. Returns the rule's
    /// index, name and [`name_hash`].
    ///
    /// Each candidate name is hashed once, for the lookup, the insertion and its
    /// [`name_hash`].
    fn insert_fresh(&mut self, preferred: &str, body: Expr) -> (usize, RuleName, u64) {
        let sanitized;
        let base = if !preferred.is_empty() && preferred.bytes().all(is_rule_name_byte) {
            preferred
        } else {
            sanitized = RuleName::sanitize(preferred);
            sanitized.as_str()
        };
        // `base` is a valid name from here on: either checked above or sanitised.
        let body = match try_insert(&mut self.grammar.rules, base, body) {
            Ok(inserted) => return inserted,
            Err(body) => body,
        };
        // The base's entry is looked up once, and updated in place when it exists.
        let next = match self.next_suffix.get_mut(base) {
            Some(next) => next,
            None => self
                .next_suffix
                .entry(RuleName::from_checked(base))
                .or_insert(2),
        };
        let mut candidate = String::with_capacity(base.len() + 4);
        let mut body = body;
        loop {
            candidate.clear();
            candidate.push_str(base);
            candidate.push('-');
            push_decimal(&mut candidate, *next);
            *next += 1;
            body = match try_insert(&mut self.grammar.rules, &candidate, body) {
                Ok(inserted) => return inserted,
                Err(body) => body,
            };
        }
    }

    /// The first registered rule whose body is still `body`.
    fn registered(&self, hash: u64, body: &Expr) -> Option<&RuleName> {
        let mut at = self.by_body.get(&hash)?.0;
        while let Some(&(index, next)) = self.registrations.get(at) {
            if let Some((name, registered)) = self.grammar.rules.get_index(index) {
                if registered == body {
                    return Some(name);
                }
            }
            at = next;
        }
        None
    }

    /// `body` made shallow (see [`GrammarBuilder::make_shallow`]) and its hash, with its
    /// references recorded. A body within the depth limit, the usual case, is walked once:
    /// the hash checks the depth on the way.
    fn shallow_with_hash(&mut self, rule: &str, body: Expr) -> (Expr, u64) {
        if let Some(hash) = shallow_hash(
            &body,
            GrammarBuilder::MAX_DEPTH,
            &self.grammar,
            &mut self.references,
        ) {
            return (body, hash);
        }
        let body = self.make_shallow(rule, body);
        let hash = body_hash(&body, &self.grammar, &mut self.references);
        (body, hash)
    }

    /// Registers `name` as the rule for `body` (whose hash is `hash`) unless one is
    /// registered already.
    fn register(&mut self, name: &RuleName, body: &Expr, hash: u64) {
        if self.registered(hash, body).is_none() {
            let index = match self.grammar.rules.get_index_of(name.as_str()) {
                Some(index) => index,
                None => self.grammar.rules.len(),
            };
            self.push_registration(hash, index);
        }
    }

    /// Appends a registration of the rule at `index` (in the grammar) under `hash`.
    fn push_registration(&mut self, hash: u64, index: usize) {
        let new = self.registrations.len();
        self.registrations.push((index, NO_REGISTRATION));
        // One lookup either way: most hashes are new.
        match self.by_body.entry(hash) {
            Entry::Occupied(mut entry) => {
                let last = &mut entry.get_mut().1;
                self.registrations[*last].1 = new;
                *last = new;
            }
            Entry::Vacant(entry) => {
                entry.insert((new, new));
            }
        }
    }

    /// Returns `body` with every sub-expression that would sit deeper than
    /// [`GrammarBuilder::MAX_DEPTH`] moved into a generated rule (`<rule>-deep…`).
    ///
    /// The body is rebuilt bottom-up with an explicit stack, moving each node's children
    /// out rather than cloning them, so nothing deep is ever hashed, cloned, compared or
    /// dropped recursively. A node is hoisted as soon as it is `MAX_DEPTH` tall, so each
    /// generated body is itself within the limit and is merged with identical bodies like
    /// any other.
    fn make_shallow(&mut self, rule: &str, body: Expr) -> Expr {
        /// A node whose children are being rebuilt.
        enum Frame {
            List {
                is_alt: bool,
                done: Vec<Expr>,
                todo: std::vec::IntoIter<Expr>,
                height: usize,
            },
            Repeat {
                min: u32,
                max: Option<u32>,
            },
        }
        /// Either a node still to take apart, or a rebuilt node with its height.
        enum Step {
            Descend(Expr),
            Ascend(Expr, usize),
        }

        if within_depth(&body, GrammarBuilder::MAX_DEPTH) {
            return body;
        }
        let hoisted_name = format!("{rule}-deep");
        let mut frames: Vec<Frame> = Vec::new();
        let mut step = Step::Descend(body);
        loop {
            step = match step {
                Step::Descend(expr) => {
                    let is_alt = matches!(expr, Expr::Alt(_));
                    match expr {
                        Expr::Seq(items) | Expr::Alt(items) if !items.is_empty() => {
                            let done = Vec::with_capacity(items.len());
                            let mut todo = items.into_iter();
                            let first = todo.next().unwrap_or(Expr::Empty);
                            frames.push(Frame::List {
                                is_alt,
                                done,
                                todo,
                                height: 0,
                            });
                            Step::Descend(first)
                        }
                        Expr::Repeat { expr, min, max } => {
                            frames.push(Frame::Repeat { min, max });
                            Step::Descend(*expr)
                        }
                        leaf => Step::Ascend(leaf, 1),
                    }
                }
                Step::Ascend(expr, height) => {
                    let Some(frame) = frames.last_mut() else {
                        return expr;
                    };
                    // A child this tall would put its parent over the limit.
                    let (expr, height) = if height >= GrammarBuilder::MAX_DEPTH {
                        (Expr::Rule(self.add_shallow(&hoisted_name, expr)), 1)
                    } else {
                        (expr, height)
                    };
                    match frame {
                        Frame::List {
                            is_alt,
                            done,
                            todo,
                            height: tallest,
                        } => {
                            done.push(expr);
                            *tallest = (*tallest).max(height);
                            if let Some(next) = todo.next() {
                                Step::Descend(next)
                            } else {
                                let items = mem::take(done);
                                let rebuilt = if *is_alt {
                                    Expr::Alt(items)
                                } else {
                                    Expr::Seq(items)
                                };
                                let height = *tallest + 1;
                                frames.pop();
                                Step::Ascend(rebuilt, height)
                            }
                        }
                        &mut Frame::Repeat { min, max } => {
                            frames.pop();
                            let rebuilt = Expr::Repeat {
                                expr: Box::new(expr),
                                min,
                                max,
                            };
                            Step::Ascend(rebuilt, height + 1)
                        }
                    }
                }
            };
        }
    }
}

/// Inserts `body` as rule `name` (a valid name) unless a rule has that name, in which case
/// `body` comes back. On success, the rule's index, name and [`name_hash`] (the map's hash
/// of it).
fn try_insert(
    rules: &mut crate::ir::Rules,
    name: &str,
    body: Expr,
) -> Result<(usize, RuleName, u64), Expr> {
    let hash = rules.hasher().hash_one(name);
    match rules.raw_entry_mut_v1().from_key_hashed_nocheck(hash, name) {
        RawEntryMut::Vacant(slot) => {
            let index = slot.index();
            let name = RuleName::from_checked(name);
            slot.insert_hashed_nocheck(hash, name.clone(), body);
            Ok((index, name, hash))
        }
        RawEntryMut::Occupied(_) => Err(body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_hasher_reads_bytes_as_zero_padded_little_endian_words() {
        for len in 0..=20usize {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let mut hasher = FastHasher::default();
            hasher.write(&bytes);
            let mut expected = FastHasher::default();
            for chunk in bytes.chunks(8) {
                let mut word = [0u8; 8];
                word[..chunk.len()].copy_from_slice(chunk);
                expected.write_u64(u64::from_le_bytes(word));
            }
            assert_eq!(hasher.finish(), expected.finish(), "{len} bytes");
        }
    }

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
    fn add_cloned_agrees_with_add() {
        let bodies = [
            Expr::literal("0"),
            Expr::alt([Expr::literal("a"), Expr::literal("b")]),
            Expr::literal("0"),
            nested_choices(60),
            nested_choices(60),
        ];
        let mut by_value = GrammarBuilder::new();
        let mut by_reference = GrammarBuilder::new();
        for body in &bodies {
            let name = by_value.add("x", body.clone());
            assert_eq!(by_reference.add_cloned("x", body), name);
        }
        assert_eq!(by_value.finish(), by_reference.finish());
    }

    #[test]
    fn suffixes_skip_names_in_use() {
        let mut builder = GrammarBuilder::new();
        builder.reserve("x-3");
        let names: Vec<String> = (0..5)
            .map(|i| builder.add("x", Expr::literal(&i.to_string())).to_string())
            .collect();
        assert_eq!(names, ["x", "x-2", "x-4", "x-5", "x-6"]);
        let odd = builder.add("x y", Expr::literal("5"));
        assert_eq!(odd.as_str(), "x-y");
        let odd = builder.add("x y", Expr::literal("6"));
        assert_eq!(odd.as_str(), "x-y-2");
    }

    #[test]
    fn the_depth_check_agrees_with_depth() {
        for n in 0..30 {
            for expr in [nested_optionals(n), nested_choices(n)] {
                for limit in 0..64 {
                    assert_eq!(within_depth(&expr, limit), expr.depth() <= limit);
                }
            }
        }
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

    /// The references of each rule found by walking the grammar, as
    /// [`GrammarBuilder::finish_with_references`] records them.
    fn walked_references(grammar: &Grammar) -> Vec<(Vec<usize>, bool)> {
        fn walk(expr: &Expr, grammar: &Grammar, out: &mut Vec<usize>, empty: &mut bool) {
            match expr {
                Expr::Rule(name) => out.push(
                    grammar
                        .rules
                        .get_index_of(name.as_str())
                        .unwrap_or(RuleReferences::UNDEFINED),
                ),
                Expr::Seq(items) | Expr::Alt(items) => {
                    *empty |= matches!(expr, Expr::Alt(_)) && items.is_empty();
                    items
                        .iter()
                        .for_each(|item| walk(item, grammar, out, empty));
                }
                Expr::Repeat { expr, .. } => walk(expr, grammar, out, empty),
                _ => {}
            }
        }
        (grammar.rules.values())
            .map(|body| {
                let (mut out, mut empty) = (Vec::new(), false);
                walk(body, grammar, &mut out, &mut empty);
                (out, empty)
            })
            .collect()
    }

    #[test]
    fn recorded_references_are_the_walked_ones() {
        let mut builder = GrammarBuilder::new();
        let list = builder.reserve("list");
        let item = builder.add("item", Expr::alt([Expr::literal("a"), Expr::alt([])]));
        let same = builder.add("other", Expr::alt([Expr::literal("a"), Expr::alt([])]));
        assert_eq!(item, same);
        let elsewhere = RuleName::new("elsewhere").expect("valid name");
        let later = RuleName::new("later").expect("valid name");
        builder.define(
            &list,
            Expr::alt([
                Expr::Empty,
                Expr::seq([Expr::rule(&item), Expr::rule(&list), Expr::rule(&elsewhere)]),
            ]),
        );
        builder.add("deep", nested_choices(100));
        builder.add_named(
            RuleName::new("root").expect("valid name"),
            Expr::seq([Expr::rule(&list), Expr::rule(&later)]),
        );
        builder.add_named(later, Expr::star(Expr::rule(&item)));
        let (grammar, references) = builder.finish_with_references();
        let recorded: Vec<(Vec<usize>, bool)> = (0..references.len())
            .map(|i| {
                let refs = references.of_rule(i).to_vec();
                (refs, references.has_empty_alternation(i))
            })
            .collect();
        assert_eq!(recorded, walked_references(&grammar));
        assert!(recorded
            .iter()
            .any(|(refs, _)| refs.contains(&RuleReferences::UNDEFINED)));
    }

    #[test]
    fn names_are_sanitised() {
        let mut builder = GrammarBuilder::new();
        let name = builder.add("properties/first_name", Expr::literal("x"));
        assert_eq!(name.as_str(), "properties-first-name");
    }

    /// Runs `test` on a thread with a small stack, so that any recursion as deep as the
    /// expressions under test overflows and fails the test.
    fn on_small_stack(test: impl FnOnce() + Send + 'static) {
        let handle = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(test)
            .expect("spawn a test thread");
        assert!(handle.join().is_ok(), "the test thread panicked");
    }

    /// `"a" ( "a" ( … )? )?` nested `n` times, built without recursion: the language
    /// `a{1,n+1}`, with expression depth `2n + 1`.
    fn nested_optionals(n: usize) -> Expr {
        let mut expr = Expr::literal("a");
        for _ in 0..n {
            expr = Expr::seq([Expr::literal("a"), Expr::optional(expr)]);
        }
        expr
    }

    /// `"a" | "b" ( "a" | "b" ( … ) )` nested `n` times: alternations in sequences.
    fn nested_choices(n: usize) -> Expr {
        let mut expr = Expr::literal("a");
        for _ in 0..n {
            expr = Expr::alt([Expr::literal("a"), Expr::seq([Expr::literal("b"), expr])]);
        }
        expr
    }

    fn assert_shallow(grammar: &Grammar) {
        for (name, body) in &grammar.rules {
            let depth = body.depth();
            assert!(
                depth <= GrammarBuilder::MAX_DEPTH,
                "rule {name} is {depth} deep"
            );
        }
    }

    #[test]
    fn depth_counts_nodes_on_the_longest_path() {
        assert_eq!(Expr::literal("a").depth(), 1);
        assert_eq!(Expr::star(Expr::literal("a")).depth(), 2);
        assert_eq!(nested_optionals(3).depth(), 7);
        assert_eq!(nested_choices(3).depth(), 7);
    }

    #[test]
    fn bodies_at_the_limit_are_kept_and_deeper_ones_hoisted_once() {
        // nested_optionals(n) is 2n + 1 deep: 47 is within the limit, 49 is one over.
        let mut builder = GrammarBuilder::new();
        let within = nested_optionals(23);
        builder.add("within", within.clone());
        let grammar = builder.finish();
        assert_eq!(grammar.rules.len(), 1);
        assert_eq!(grammar.get("within"), Some(&within));

        let mut builder = GrammarBuilder::new();
        builder.add("over", nested_optionals(24));
        let grammar = builder.finish();
        assert_shallow(&grammar);
        let names: Vec<&str> = grammar.rules.keys().map(RuleName::as_str).collect();
        assert_eq!(names, ["over-deep", "over"]);
    }

    #[test]
    fn deep_bodies_are_hoisted_without_recursion() {
        on_small_stack(|| {
            let mut builder = GrammarBuilder::new();
            let optionals = builder.add("optionals", nested_optionals(10_000));
            let choices = builder.reserve("choices");
            builder.define(&choices, nested_choices(10_000));
            let root = RuleName::new("root").expect("valid name");
            builder.add_named(
                root,
                Expr::alt([Expr::rule(&optionals), Expr::rule(&choices)]),
            );
            let grammar = builder.finish();
            assert_shallow(&grammar);
            // 20,001 levels in slices of at most 48, one rule per slice.
            assert!(grammar.rules.len() > 2 * 20_001 / GrammarBuilder::MAX_DEPTH);
            let matcher = crate::Matcher::new(&grammar, "root").expect("a valid grammar");
            assert_eq!(matcher.verdict("aaaa"), crate::Verdict::Accept);
            assert_eq!(matcher.verdict("bbba"), crate::Verdict::Accept);
            assert_eq!(matcher.verdict("bbb"), crate::Verdict::Prefix);
            assert_eq!(matcher.verdict("abc"), crate::Verdict::Reject { offset: 1 });
            let text = crate::print(&grammar);
            assert_eq!(crate::read(&text).map(|read| read == grammar), Ok(true));
        });
    }

    #[test]
    fn identical_deep_bodies_share_their_rules() {
        on_small_stack(|| {
            let mut builder = GrammarBuilder::new();
            let first = builder.add("x", nested_optionals(1_000));
            let n_rules = builder.grammar.rules.len();
            let second = builder.add("y", nested_optionals(1_000));
            assert_eq!(first, second);
            assert_eq!(builder.grammar.rules.len(), n_rules);
        });
    }
}
