//! The grammar IR: every compiler in the workspace lowers into these types, and the
//! printer, reader, validator and matcher all work on them.
//!
//! The IR describes languages over Unicode scalar values, exactly like llama.cpp's
//! grammar engine, which matches per code point. Token elements (`<[id]>`, `<text>` and
//! their negations) are kept as opaque elements so that grammars using them round-trip.

use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

use indexmap::IndexMap;

/// A grammar: named rules in the order they were defined.
///
/// There is no invariant tying rules together: a grammar may reference rules it does not
/// define, and may lack a start rule. [`crate::validate`] reports such problems, so that a
/// grammar can be built up (or read) first and checked afterwards.
///
/// Equality compares rules as a map: two grammars with the same rules in a different
/// order are equal. Printing orders rules for reading, not by definition order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Grammar {
    pub rules: Rules,
}

/// A grammar's rules by name, in definition order. Hashed with [`crate::FastHash`]: the
/// compilers look rules up by name for every reference they emit.
pub type Rules = IndexMap<RuleName, Expr, crate::FastHash>;

impl Grammar {
    /// An empty grammar.
    pub fn new() -> Grammar {
        Grammar::default()
    }

    /// The body of rule `name`, if the grammar defines it.
    pub fn get(&self, name: &str) -> Option<&Expr> {
        self.rules.get(name)
    }

    /// Defines (or redefines, keeping its position) rule `name`, returning the old body.
    pub fn insert(&mut self, name: RuleName, body: Expr) -> Option<Expr> {
        self.rules.insert(name, body)
    }
}

/// A rule name that llama.cpp accepts: one or more of `[a-zA-Z0-9-]`.
///
/// llama.cpp rejects underscores and everything else outside that set, so the type makes a
/// bad name unrepresentable rather than letting the printer emit it.
///
/// The text is shared (`Arc<str>`): compilers clone names for every reference they emit,
/// and a clone is a reference-count increment, not an allocation.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RuleName(Arc<str>);

impl RuleName {
    /// Checks `name` against `[a-zA-Z0-9-]+`.
    pub fn new(name: &str) -> Result<RuleName, InvalidRuleName> {
        if !name.is_empty() && name.bytes().all(is_rule_name_byte) {
            Ok(RuleName(Arc::from(name)))
        } else {
            Err(InvalidRuleName {
                name: name.to_owned(),
            })
        }
    }

    /// A name the caller has already checked against `[a-zA-Z0-9-]+` (for example
    /// with [`is_rule_name_byte`]), so that the check is not repeated.
    pub(crate) fn from_checked(name: &str) -> RuleName {
        debug_assert!(!name.is_empty() && name.bytes().all(is_rule_name_byte));
        RuleName(Arc::from(name))
    }

    /// Maps any name onto a valid one: each run of characters outside `[a-zA-Z0-9-]`
    /// becomes one `-`, and an empty result becomes `rule`.
    ///
    /// This is how names derived from schema paths or PEG rule names are made printable.
    pub fn sanitize(name: &str) -> RuleName {
        if !name.is_empty() && name.bytes().all(is_rule_name_byte) {
            return RuleName(Arc::from(name));
        }
        // Runs of good bytes are copied whole. Every byte of a non-ASCII character is
        // outside the set, so a run of bad bytes is a run of bad characters, and both ends
        // of each run fall on character boundaries.
        let mut out = String::with_capacity(name.len());
        let mut rest = name;
        while !rest.is_empty() {
            let good = rest
                .bytes()
                .position(|byte| !is_rule_name_byte(byte))
                .unwrap_or(rest.len());
            out.push_str(&rest[..good]);
            rest = &rest[good..];
            let bad = rest
                .bytes()
                .position(is_rule_name_byte)
                .unwrap_or(rest.len());
            if bad > 0 {
                out.push('-');
                rest = &rest[bad..];
            }
        }
        if out.is_empty() {
            out.push_str("rule");
        }
        RuleName(Arc::from(out))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whether `byte` may appear in a rule name.
pub fn is_rule_name_byte(byte: u8) -> bool {
    RULE_NAME_BYTES[usize::from(byte)]
}

/// [`is_rule_name_byte`] as a table: compilers check every byte of every name they make, and
/// one load per byte is cheaper than the range tests.
static RULE_NAME_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        table[byte] = b.is_ascii_alphanumeric() || b == b'-';
        byte += 1;
    }
    table
};

impl fmt::Debug for RuleName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for RuleName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Borrow<str> for RuleName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for RuleName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// A name outside `[a-zA-Z0-9-]+`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidRuleName {
    pub name: String,
}

impl fmt::Display for InvalidRuleName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid rule name {:?}: use only letters, digits and '-'",
            self.name
        )
    }
}

impl std::error::Error for InvalidRuleName {}

/// A grammar expression.
///
/// The variants are plain values; the smart constructors ([`Expr::seq`], [`Expr::alt`],
/// [`Expr::repeat`], …) build the canonical form that the reader also produces:
/// no `Seq` or `Alt` with fewer than two items, no nested `Seq` in a `Seq` or `Alt` in an
/// `Alt`, no `Empty` inside a `Seq`, and an empty `Literal` written as `Empty`.
/// Canonical form is what makes `read(print(g)) == g` hold.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Expr {
    /// Matches the empty string.
    Empty,
    /// A sequence of code points, matched one by one.
    Literal(Text),
    /// One code point from (or, negated, outside) a set.
    Class(CharClass),
    /// `.`: any one code point, newline included.
    Any,
    /// A reference to another rule.
    Rule(RuleName),
    /// A token element: matches tokens, never characters.
    Token(Token),
    /// Each item in order.
    Seq(Vec<Expr>),
    /// Any one of the alternatives.
    Alt(Vec<Expr>),
    /// `expr{min,max}`; `max: None` is unbounded.
    Repeat {
        expr: Box<Expr>,
        min: u32,
        max: Option<u32>,
    },
}

impl Expr {
    /// A literal; the empty string gives [`Expr::Empty`].
    pub fn literal(text: &str) -> Expr {
        if text.is_empty() {
            Expr::Empty
        } else {
            Expr::Literal(Text::from(text))
        }
    }

    /// A reference to rule `name`.
    pub fn rule(name: &RuleName) -> Expr {
        Expr::Rule(name.clone())
    }

    /// A canonical sequence: nested sequences are flattened, `Empty` items dropped.
    pub fn seq(items: impl IntoIterator<Item = Expr>) -> Expr {
        let mut items = items.into_iter();
        let mut out = Vec::with_capacity(items.size_hint().0);
        while let Some(item) = items.next() {
            match item {
                // Room for the items still to come as well, so that the list grows once
                // per flattened sequence rather than again at the next push.
                Expr::Seq(inner) => {
                    out.reserve(inner.len() + items.size_hint().0);
                    out.extend(inner);
                }
                Expr::Empty => {}
                other => out.push(other),
            }
        }
        match out.len() {
            0 => Expr::Empty,
            1 => out.pop().unwrap_or(Expr::Empty),
            _ => Expr::Seq(out),
        }
    }

    /// A canonical alternation: nested alternations are flattened.
    ///
    /// An empty iterator gives an empty alternation, which matches nothing; llama.cpp has
    /// no syntax for it, so producers should avoid it (the validator reports such rules).
    pub fn alt(items: impl IntoIterator<Item = Expr>) -> Expr {
        let mut items = items.into_iter();
        let mut out = Vec::with_capacity(items.size_hint().0);
        while let Some(item) = items.next() {
            match item {
                // As in `Expr::seq`: one growth per flattened alternation.
                Expr::Alt(inner) => {
                    out.reserve(inner.len() + items.size_hint().0);
                    out.extend(inner);
                }
                other => out.push(other),
            }
        }
        match out.len() {
            1 => out.pop().unwrap_or(Expr::Empty),
            _ => Expr::Alt(out),
        }
    }

    /// `expr{min,max}`, simplified where that is exact: `{1,1}` is `expr` itself, `{0,0}`
    /// and repetitions of `Empty` are `Empty`.
    pub fn repeat(expr: Expr, min: u32, max: Option<u32>) -> Expr {
        if expr == Expr::Empty || max == Some(0) {
            return Expr::Empty;
        }
        if min == 1 && max == Some(1) {
            return expr;
        }
        Expr::Repeat {
            expr: Box::new(expr),
            min,
            max,
        }
    }

    /// `expr?`
    pub fn optional(expr: Expr) -> Expr {
        Expr::repeat(expr, 0, Some(1))
    }

    /// `expr*`
    pub fn star(expr: Expr) -> Expr {
        Expr::repeat(expr, 0, None)
    }

    /// `expr+`
    pub fn plus(expr: Expr) -> Expr {
        Expr::repeat(expr, 1, None)
    }

    /// A character class expression.
    pub fn class(class: CharClass) -> Expr {
        Expr::Class(class)
    }

    /// The body of llama.cpp's bounded `space` rule: nothing, one space, or one or two
    /// newlines followed by at most 20 spaces or tabs. Bounding whitespace keeps a model
    /// from running away in it; every compiler that wants llama.cpp's default calls this.
    pub fn bounded_space() -> Expr {
        Expr::alt([
            Expr::Empty,
            Expr::literal(" "),
            Expr::seq([
                Expr::repeat(Expr::literal("\n"), 1, Some(2)),
                Expr::repeat(
                    Expr::class(CharClass::of_chars([' ', '\t'], false)),
                    0,
                    Some(20),
                ),
            ]),
        ])
    }

    /// A copy of `self` with every rule reference passed through `rename`.
    ///
    /// It recurses, so call it on bodies of built grammars, which are at most
    /// `GrammarBuilder::MAX_DEPTH` deep.
    pub fn rename_rules(&self, rename: &impl Fn(&RuleName) -> RuleName) -> Expr {
        match self {
            Expr::Rule(name) => Expr::Rule(rename(name)),
            Expr::Seq(items) => Expr::Seq(items.iter().map(|i| i.rename_rules(rename)).collect()),
            Expr::Alt(items) => Expr::Alt(items.iter().map(|i| i.rename_rules(rename)).collect()),
            Expr::Repeat { expr, min, max } => Expr::Repeat {
                expr: Box::new(expr.rename_rules(rename)),
                min: *min,
                max: *max,
            },
            other => other.clone(),
        }
    }

    /// The number of nodes on the longest path from this expression down to a leaf: a
    /// leaf (`Empty`, `Literal`, `Rule`, …) is 1 deep, `x*` on a leaf is 2 deep.
    ///
    /// Measured with an explicit stack, so it is safe on expressions of any depth, unlike
    /// the derived `Clone`, `Hash`, `PartialEq`, `Debug` and `Drop`, which recurse.
    pub fn depth(&self) -> usize {
        let mut deepest = 0;
        let mut stack = vec![(self, 1)];
        while let Some((expr, depth)) = stack.pop() {
            deepest = deepest.max(depth);
            match expr {
                Expr::Seq(items) | Expr::Alt(items) => {
                    stack.extend(items.iter().map(|item| (item, depth + 1)));
                }
                Expr::Repeat { expr, .. } => stack.push((expr, depth + 1)),
                _ => {}
            }
        }
        deepest
    }
}

/// The text of a literal: a string, stored inline when it is short.
///
/// Compilers make tens of thousands of literals per grammar (a comma, a colon, one character
/// of a key), and most are a few bytes long: inline, making or cloning one allocates
/// nothing. It compares, hashes, orders and prints exactly like the `str` it holds.
#[derive(Clone)]
pub struct Text(TextRepr);

/// How [`Text`] stores its bytes: inline up to [`Text::INLINE`] bytes (the first `len` of
/// `bytes`, always valid UTF-8), on the heap beyond.
#[derive(Clone)]
enum TextRepr {
    Inline { len: u8, bytes: [u8; Text::INLINE] },
    Heap(Box<str>),
}

impl Text {
    /// The longest text stored without an allocation: as much as fits, beside a length byte
    /// and the variant's tag, in the room [`Expr`] has for its largest variant anyway.
    pub const INLINE: usize = 30;

    pub fn as_str(&self) -> &str {
        match &self.0 {
            TextRepr::Inline { len, bytes } => {
                let bytes = &bytes[..usize::from(*len)];
                // Only ever filled from a `str`, whole: see `Text::from`.
                std::str::from_utf8(bytes).unwrap_or_default()
            }
            TextRepr::Heap(text) => text,
        }
    }

    /// The bytes of the text, without the UTF-8 check that [`Text::as_str`] makes of inline
    /// text (it cannot assume what it is given): for hashing and comparing.
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            TextRepr::Inline { len, bytes } => &bytes[..usize::from(*len)],
            TextRepr::Heap(text) => text.as_bytes(),
        }
    }

    /// The length in bytes.
    pub fn len(&self) -> usize {
        match &self.0 {
            TextRepr::Inline { len, .. } => usize::from(*len),
            TextRepr::Heap(text) => text.len(),
        }
    }

    /// Whether the text is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends `more` (as `String::push_str` does).
    pub fn push_str(&mut self, more: &str) {
        if more.is_empty() {
            return;
        }
        let mut joined = String::with_capacity(self.len() + more.len());
        joined.push_str(self);
        joined.push_str(more);
        *self = Text::from(joined.as_str());
    }
}

impl From<&str> for Text {
    fn from(text: &str) -> Text {
        if text.len() <= Text::INLINE {
            // Byte by byte: most literals are a character or two, for which a call to
            // `memcpy` costs more than the copy.
            let mut bytes = [0u8; Text::INLINE];
            for (to, from) in bytes.iter_mut().zip(text.bytes()) {
                *to = from;
            }
            Text(TextRepr::Inline {
                len: text.len() as u8,
                bytes,
            })
        } else {
            Text(TextRepr::Heap(Box::from(text)))
        }
    }
}

impl From<String> for Text {
    fn from(text: String) -> Text {
        if text.len() <= Text::INLINE {
            Text::from(text.as_str())
        } else {
            Text(TextRepr::Heap(text.into_boxed_str()))
        }
    }
}

impl std::ops::Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Text {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Text) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Text {}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl std::hash::Hash for Text {
    /// As `str` hashes: the bytes, then `0xff`.
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write(self.as_bytes());
        state.write_u8(0xff);
    }
}

impl PartialOrd for Text {
    fn partial_cmp(&self, other: &Text) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Text {
    /// Byte order, which is `str`'s order.
    fn cmp(&self, other: &Text) -> std::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of code points: sorted, disjoint, non-adjacent inclusive ranges, possibly negated.
///
/// The ranges are kept canonical so that equal sets compare equal and print the same,
/// whatever order they were written in. A negated class excludes ASCII characters only: one
/// written to exclude more is kept as the positive class of the rest (see
/// [`CharClass::new`]), which llama.cpp matches exactly when a token ends inside a character.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CharClass {
    ranges: Vec<(char, char)>,
    negated: bool,
}

impl CharClass {
    /// The class of the given ranges; reversed ranges (`hi < lo`) are empty and dropped.
    pub fn new(ranges: impl IntoIterator<Item = (char, char)>, negated: bool) -> CharClass {
        let mut ranges: Vec<(char, char)> =
            ranges.into_iter().filter(|(lo, hi)| lo <= hi).collect();
        ranges.sort_unstable();
        // Merge in place: `kept` ranges are final, the rest are still to be merged.
        let mut kept = 0;
        for idx in 0..ranges.len() {
            let (lo, hi) = ranges[idx];
            if kept > 0 && u32::from(lo) <= next_scalar(ranges[kept - 1].1) {
                if hi > ranges[kept - 1].1 {
                    ranges[kept - 1].1 = hi;
                }
                continue;
            }
            ranges[kept] = (lo, hi);
            kept += 1;
        }
        ranges.truncate(kept);
        // llama.cpp decides whether the first bytes of a character, cut by the end of a
        // token, can still match a negated class by whether *any* character they may begin
        // is excluded: after `[^\u2028]` it refuses the byte E2 that begins every character
        // from U+2000 to U+2FFF (`–`, `€`, `’`…), so a tokenizer that splits one of them can
        // never write it. The rest of the set, as a positive class, is checked exactly (a
        // prefix passes when some character it may begin is in the class). So a negated class
        // keeps its form only when all it excludes is ASCII, whose characters are one byte.
        if negated && ranges.last().is_some_and(|&(_, hi)| !hi.is_ascii()) {
            return CharClass {
                ranges: complement_ranges(&ranges),
                negated: false,
            };
        }
        CharClass { ranges, negated }
    }

    /// The class of exactly these characters.
    pub fn of_chars(chars: impl IntoIterator<Item = char>, negated: bool) -> CharClass {
        CharClass::new(chars.into_iter().map(|ch| (ch, ch)), negated)
    }

    /// The ranges as written, before negation.
    pub fn ranges(&self) -> &[(char, char)] {
        &self.ranges
    }

    pub fn is_negated(&self) -> bool {
        self.negated
    }

    /// Whether the class matches `ch`.
    pub fn contains(&self, ch: char) -> bool {
        let inside = self
            .ranges
            .binary_search_by(|&(lo, hi)| {
                if hi < ch {
                    std::cmp::Ordering::Less
                } else if ch < lo {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .is_ok();
        inside != self.negated
    }
}

/// The code points outside the canonical `ranges`.
pub(crate) fn complement_ranges(ranges: &[(char, char)]) -> Vec<(char, char)> {
    let mut out = Vec::new();
    let mut next = Some('\0');
    for &(lo, hi) in ranges {
        if let Some(start) = next {
            if start < lo {
                if let Some(end) = char_before(lo) {
                    out.push((start, end));
                }
            }
        }
        next = char_after(hi);
    }
    if let Some(start) = next {
        out.push((start, char::MAX));
    }
    out
}

/// The scalar value after `ch`, skipping the surrogates.
pub(crate) fn char_after(ch: char) -> Option<char> {
    match ch {
        '\u{D7FF}' => Some('\u{E000}'),
        _ => char::from_u32(ch as u32 + 1),
    }
}

/// The scalar value before `ch`, skipping the surrogates.
pub(crate) fn char_before(ch: char) -> Option<char> {
    match ch {
        '\u{E000}' => Some('\u{D7FF}'),
        '\0' => None,
        _ => char::from_u32(ch as u32 - 1),
    }
}

/// [`char_after`] as a number (0x110000 after the last), so that ranges on either side of
/// the surrogate gap merge.
fn next_scalar(ch: char) -> u32 {
    char_after(ch).map_or(0x11_0000, u32::from)
}

/// A llama.cpp token element. It matches a whole token, never characters.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Token {
    pub kind: TokenKind,
    /// `!<…>`: any token except this one.
    pub negated: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TokenKind {
    /// `<[123]>`: a token id.
    Id(u32),
    /// `<text>`: the token whose text is this, written between the angle brackets;
    /// resolving it needs a vocabulary.
    Text(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_inline_and_behaves_like_str() {
        for text in [
            "",
            "a",
            ",",
            "\"project\"",
            "é日本",
            &"x".repeat(Text::INLINE),
            &"y".repeat(40),
        ] {
            let inline = Text::from(text);
            let owned = Text::from(text.to_owned());
            assert_eq!(inline.as_str(), text);
            assert_eq!(inline, owned);
            assert_eq!(inline.len(), text.len());
            assert_eq!(format!("{inline:?}"), format!("{text:?}"));
            let hash = |value: &dyn Fn(&mut std::collections::hash_map::DefaultHasher)| {
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                value(&mut hasher);
                std::hash::Hasher::finish(&hasher)
            };
            assert_eq!(
                hash(&|h| std::hash::Hash::hash(&inline, h)),
                hash(&|h| std::hash::Hash::hash(text, h))
            );
            let mut joined = inline.clone();
            joined.push_str("zz");
            assert_eq!(joined.as_str(), format!("{text}zz"));
        }
        // Inline text takes no more room in an expression than a class does.
        assert_eq!(std::mem::size_of::<Text>(), 32);
        assert_eq!(std::mem::size_of::<Expr>(), 40);
    }

    #[test]
    fn sanitize_maps_each_run_of_bad_characters_to_one_dash() {
        let cases = [
            ("item-2", "item-2"),
            ("a_b", "a-b"),
            ("a__/b", "a-b"),
            ("_a_", "-a-"),
            ("ünï", "-n-"),
            ("aé_b-c", "a-b-c"),
            ("日本", "-"),
            ("", "rule"),
        ];
        for (name, want) in cases {
            assert_eq!(RuleName::sanitize(name).as_str(), want, "{name:?}");
        }
    }

    #[test]
    fn classes_are_canonical_whatever_the_written_order() {
        let written = CharClass::new(
            [('x', 'z'), ('a', 'c'), ('b', 'd'), ('e', 'e'), ('q', 'p')],
            false,
        );
        assert_eq!(written.ranges(), &[('a', 'e'), ('x', 'z')]);
        assert_eq!(written, CharClass::new([('a', 'e'), ('x', 'z')], false));
    }

    #[test]
    fn ranges_on_either_side_of_the_surrogate_gap_merge() {
        let class = CharClass::new([('\u{E000}', '\u{E001}'), ('a', '\u{D7FF}')], false);
        assert_eq!(class.ranges(), &[('a', '\u{E001}')]);
        assert!(class.contains('\u{E000}'));
        assert!(!class.contains('\u{E002}'));
    }

    #[test]
    fn negated_classes_match_the_complement() {
        let class = CharClass::of_chars(['"', '\\'], true);
        assert!(class.contains('a'));
        assert!(class.contains('\n'));
        assert!(!class.contains('"'));
    }

    #[test]
    fn negated_classes_exclude_only_ascii() {
        // ASCII exclusions keep the short negated form.
        let ascii = CharClass::new([('\0', '\u{1F}'), ('"', '"'), ('\\', '\\')], true);
        assert!(ascii.is_negated());
        // One excluded character past ASCII: the positive class of everything else.
        let wide = CharClass::new([('\n', '\n'), ('\u{2028}', '\u{2029}')], true);
        assert!(!wide.is_negated());
        assert_eq!(
            wide.ranges(),
            &[('\0', '\t'), ('\u{B}', '\u{2027}'), ('\u{202A}', char::MAX)]
        );
        for ch in [
            '\0',
            'a',
            '\u{2013}',
            '\u{20AC}',
            '\u{D7FF}',
            '\u{E000}',
            char::MAX,
        ] {
            assert!(wide.contains(ch), "{ch:?}");
        }
        for ch in ['\n', '\u{2028}', '\u{2029}'] {
            assert!(!wide.contains(ch), "{ch:?}");
        }
        // The complement skips the surrogates; excluding everything leaves nothing.
        let around = CharClass::new([('\u{D7FF}', '\u{E000}')], true);
        assert_eq!(
            around.ranges(),
            &[('\0', '\u{D7FE}'), ('\u{E001}', char::MAX)]
        );
        let nothing = CharClass::new([('\0', char::MAX)], true);
        assert!(!nothing.is_negated() && nothing.ranges().is_empty());
        // Equal sets, equal classes.
        assert_eq!(
            wide,
            CharClass::new(
                [('\0', '\t'), ('\u{B}', '\u{2027}'), ('\u{202A}', char::MAX)],
                false
            )
        );
    }
}
