//! ECMA-262 patterns as automata. A pattern is translated into `regex-syntax` syntax (every
//! ECMA-specific construct rewritten explicitly), parsed to HIR, compiled to a Thompson NFA and
//! determinised over code-point intervals into a [`Dfa`].
//!
//! Semantics, as JSON Schema specifies them:
//! - A pattern matches anywhere in the string unless anchored: the language of `R` is
//!   `.* R .*` over all code points, where `^` only holds at the start and `$` only at the end
//!   (no multiline flag exists in JSON Schema).
//! - `\d` is `[0-9]`, `\w` is `[0-9A-Za-z_]`, `\s` is ECMA's white space and line terminators,
//!   `.` excludes line terminators (`\n`, `\r`, U+2028, U+2029) unless `dotall`.
//! - Patterns are read with the `u` flag: `\u{…}` is a code point, `\p{…}` a property (with
//!   `regex-syntax`'s property names), and `\uD83D\uDE00` a surrogate pair. Annex B leniencies are
//!   kept where unambiguous: a `{` that does not start a quantifier is literal, `\c` without a
//!   letter is literal, an unknown identity escape such as `\a` is the letter itself.
//! - Lookaheads right after a leading `^` are supported by intersection (and complement);
//!   other lookarounds, backreferences and word boundaries (`\b`, `\B`) are Unsupported.
//! - A lone surrogate escape matches nothing (decoded JSON strings hold no lone surrogates).

pub(crate) mod dfa;
mod hir;
mod matching;
pub(crate) mod memo;
#[cfg(test)]
pub(crate) mod testutil;

/// A `HashMap` with the fast word hasher, for the automaton builders' lookup tables (keys are
/// state sets the compiler builds; the tables are only looked up, never iterated, so the
/// hasher cannot change any output).
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, gbnf::FastHash>;

use regex_syntax::hir::{Class, Hir, HirKind, Look};

use crate::pattern::dfa::{any_char, Dfa, Ranges, State};
pub(crate) use crate::pattern::matching::pattern_accepts;
use crate::strings::LeafError;

/// The most DFA states a single pattern may determinise into.
pub(crate) const MAX_DFA_STATES: usize = 5000;
/// A budget for subset construction (NFA states and interval comparisons visited).
const MAX_DETERMINIZE_WORK: usize = 10_000_000;
/// The most NFA states a pattern may compile into (counted repetitions are unrolled).
const MAX_NFA_STATES: usize = 200_000;

/// The DFA of the decoded strings that `pattern` matches (search semantics), minimised.
///
/// Lookaheads directly after a leading `^` (`^(?=.*\d)(?!.*\s).{8,}$`, common in password
/// and naming rules) are supported: each is the language of `^(?:body)`, intersected with the
/// rest of the pattern or with its complement. Other lookarounds are Unsupported.
pub(crate) fn pattern_dfa(pattern: &str, dotall: bool) -> Result<Dfa, LeafError> {
    thread_local! {
        static MEMO: memo::Table<(String, bool), Result<Dfa, LeafError>> = Default::default();
    }
    memo::get_or_make(&MEMO, &(pattern.to_owned(), dotall), || {
        build_pattern_dfa(pattern, dotall)
    })
}

/// [`pattern_dfa`] without the memo.
fn build_pattern_dfa(pattern: &str, dotall: bool) -> Result<Dfa, LeafError> {
    let Some((lookaheads, rest)) = leading_lookaheads(pattern) else {
        return plain_pattern_dfa(pattern, dotall);
    };
    let mut dfa = plain_pattern_dfa(&format!("^{rest}"), dotall)?;
    let too_big = || {
        LeafError::unsupported(
            "pattern",
            format!("{pattern:?}: its lookaheads need too many automaton states"),
        )
    };
    for (positive, body) in lookaheads {
        let lookahead = plain_pattern_dfa(&format!("^(?:{body})"), dotall)?;
        let lookahead = if positive {
            lookahead
        } else {
            lookahead.complement()
        };
        dfa = dfa
            .intersect(&lookahead, MAX_DFA_STATES)
            .map_err(|_| too_big())?
            .minimize();
    }
    Ok(dfa)
}

/// Splits `^(?=a)(?!b)rest` into its leading lookaheads (positive?, body) and `rest`; `None`
/// when the pattern has none, or when `rest` has a top-level `|` (the lookaheads would then
/// bind to the first alternative only).
fn leading_lookaheads(pattern: &str) -> Option<(Vec<(bool, String)>, String)> {
    let chars: Vec<char> = pattern.chars().collect();
    if chars.first() != Some(&'^') {
        return None;
    }
    let mut lookaheads = Vec::new();
    let mut i = 1;
    while chars.get(i) == Some(&'(')
        && chars.get(i + 1) == Some(&'?')
        && matches!(chars.get(i + 2), Some('=' | '!'))
    {
        let close = group_end(&chars, i)?;
        let body: String = chars[i + 3..close].iter().collect();
        lookaheads.push((chars[i + 2] == '=', body));
        i = close + 1;
    }
    if lookaheads.is_empty() {
        return None;
    }
    let rest: String = chars[i..].iter().collect();
    if has_top_level_bar(&chars[i..]) {
        return None;
    }
    Some((lookaheads, rest))
}

/// The index of the `)` closing the group opened at `chars[open]`, skipping escapes and
/// classes.
fn group_end(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    let mut in_class = false;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '(' if !in_class => depth += 1,
            ')' if !in_class => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Whether `chars` has a `|` outside every group and class.
fn has_top_level_bar(chars: &[char]) -> bool {
    let mut depth = 0usize;
    let mut in_class = false;
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '(' if !in_class => depth += 1,
            ')' if !in_class => depth = depth.saturating_sub(1),
            '|' if !in_class && depth == 0 => return true,
            _ => {}
        }
        i += 1;
    }
    false
}

/// The HIR of a pattern without lookaheads: read straight from its translation when it is
/// plain, by `regex-syntax`'s parser otherwise.
fn plain_hir(pattern: &str, dotall: bool) -> Result<Hir, LeafError> {
    let translated = translate(pattern, dotall)?;
    match hir::read(&translated) {
        Some(hir) => Ok(hir),
        None => parse_translated(pattern, &translated),
    }
}

/// [`pattern_dfa`] without lookaheads.
fn plain_pattern_dfa(pattern: &str, dotall: bool) -> Result<Dfa, LeafError> {
    let hir = plain_hir(pattern, dotall)?;
    // A pattern that matches the empty string without anchors matches everywhere.
    let properties = hir.properties();
    if properties.minimum_len() == Some(0) && properties.look_set().is_empty() {
        return Ok(Dfa::lengths(0, None));
    }
    let nfa = Nfa::build(&hir, true)?;
    let dfa = nfa.determinize().map_err(|_| {
        LeafError::unsupported(
            "pattern",
            format!("{pattern:?} is too complex: it needs more than {MAX_DFA_STATES} automaton states or too much work to build"),
        )
    })?;
    Ok(dfa.minimize())
}

/// The HIR of `translated` (the translation of `pattern`) by `regex-syntax`'s parser.
fn parse_translated(pattern: &str, translated: &str) -> Result<Hir, LeafError> {
    regex_syntax::ParserBuilder::new()
        .unicode(true)
        .utf8(true)
        .nest_limit(200)
        .build()
        .parse(translated)
        .map_err(|err| {
            LeafError::invalid(
                "pattern",
                format!(
                    "{pattern:?} is not a valid regular expression: {}",
                    first_line(&err.to_string())
                ),
            )
        })
}

fn first_line(text: &str) -> String {
    // regex-syntax errors span several lines with a caret diagram; keep the message itself.
    text.lines().last().unwrap_or("").trim().to_owned()
}

/// ECMA's `\s`: white space and line terminators.
const ECMA_SPACE: &str = r"\x{9}-\x{D}\x{20}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";
const ECMA_DIGIT: &str = r"\x{30}-\x{39}";
const ECMA_WORD: &str = r"\x{30}-\x{39}\x{41}-\x{5A}\x{5F}\x{61}-\x{7A}";
const ECMA_LINE_TERMINATORS: &str = r"\x{A}\x{D}\x{2028}\x{2029}";

/// Rewrites an ECMA-262 pattern into equivalent `regex-syntax` syntax.
fn translate(pattern: &str, dotall: bool) -> Result<String, LeafError> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() * 2);
    let mut i = 0;
    while i < chars.len() {
        let ch = chars[i];
        i += 1;
        match ch {
            '\\' => {
                let Some(&next) = chars.get(i) else {
                    return Err(invalid(pattern, "it ends with a lone backslash"));
                };
                match next {
                    'd' | 'D' | 'w' | 'W' | 's' | 'S' => {
                        i += 1;
                        out.push_str(&set_escape_class(next));
                    }
                    'b' | 'B' => {
                        return Err(LeafError::unsupported(
                            "pattern",
                            format!("{pattern:?}: word boundaries (\\{next}) are not supported"),
                        ))
                    }
                    '1'..='9' | 'k' => {
                        return Err(LeafError::unsupported(
                            "pattern",
                            format!("{pattern:?}: backreferences are not supported"),
                        ))
                    }
                    'p' | 'P' => {
                        // Unicode property: copy `\p{...}` verbatim for regex-syntax.
                        let end = property_end(&chars, i)
                            .ok_or_else(|| invalid(pattern, "a \\p escape lacks its {…}"))?;
                        out.extend(&chars[i - 1..end]);
                        i = end;
                    }
                    _ => {
                        let (code, used) = char_escape(&chars, i, false)
                            .ok_or_else(|| invalid(pattern, "it has a malformed escape"))?;
                        i += used;
                        push_code(&mut out, code);
                    }
                }
            }
            '[' => {
                let (class, end) = translate_class(pattern, &chars, i)?;
                out.push_str(&class);
                i = end;
            }
            '(' => {
                if chars.get(i) == Some(&'?') {
                    let rest: String = chars[i..chars.len().min(i + 4)].iter().collect();
                    if rest.starts_with("?:") {
                        out.push_str("(?:");
                        i += 2;
                    } else if rest.starts_with("?=")
                        || rest.starts_with("?!")
                        || rest.starts_with("?<=")
                        || rest.starts_with("?<!")
                    {
                        return Err(LeafError::unsupported(
                            "pattern",
                            format!("{pattern:?}: lookarounds are not supported"),
                        ));
                    } else if rest.starts_with("?<") {
                        // Named group: the name does not matter for the language.
                        let close = chars[i..]
                            .iter()
                            .position(|&c| c == '>')
                            .ok_or_else(|| invalid(pattern, "a group name is not closed"))?;
                        i += close + 1;
                        out.push('(');
                    } else {
                        return Err(invalid(pattern, "it has an unknown group kind"));
                    }
                } else {
                    out.push('(');
                }
            }
            ')' | '|' | '*' | '+' | '?' | '^' | '$' => out.push(ch),
            '{' => match quantifier_end(&chars, i) {
                Some(end) => {
                    out.extend(&chars[i - 1..end]);
                    i = end;
                }
                None => push_code(&mut out, u32::from('{')),
            },
            '.' => {
                if dotall {
                    out.push_str(r"[\x{0}-\x{10FFFF}]");
                } else {
                    out.push_str(&format!("[^{ECMA_LINE_TERMINATORS}]"));
                }
            }
            _ => push_code(&mut out, u32::from(ch)),
        }
    }
    Ok(out)
}

fn invalid(pattern: &str, why: &str) -> LeafError {
    LeafError::invalid(
        "pattern",
        format!("{pattern:?} is not a valid ECMA-262 pattern: {why}"),
    )
}

/// `\d \D \w \W \s \S` as a bracketed class.
fn set_escape_class(letter: char) -> String {
    let body = match letter.to_ascii_lowercase() {
        'd' => ECMA_DIGIT,
        'w' => ECMA_WORD,
        _ => ECMA_SPACE,
    };
    if letter.is_ascii_uppercase() {
        format!("[^{body}]")
    } else {
        format!("[{body}]")
    }
}

/// Appends a code point as an unambiguous escape; a lone surrogate becomes an empty class.
fn push_code(out: &mut String, code: u32) {
    if (0xD800..=0xDFFF).contains(&code) {
        out.push_str(r"[^\x{0}-\x{10FFFF}]");
    } else {
        push_class_code(out, code);
    }
}

/// Writes one code point for `regex-syntax`, inside or outside a class: an ASCII letter or
/// digit as itself (it means itself in both places), anything else as `\x{…}`. Patterns of
/// case-insensitive names (`[Pp][Rr][Ee]…`) run to many kilobytes, and parsing the shorter
/// text is cheaper.
fn push_class_code(out: &mut String, code: u32) {
    use std::fmt::Write;
    match char::from_u32(code) {
        Some(ch) if ch.is_ascii_alphanumeric() => out.push(ch),
        _ => {
            let _ = write!(out, "\\x{{{code:X}}}");
        }
    }
}

/// The end (exclusive) of `{…}` after `\p` or `\P` at `chars[start]` (the letter).
fn property_end(chars: &[char], start: usize) -> Option<usize> {
    if chars.get(start + 1) != Some(&'{') {
        return None;
    }
    let close = chars[start + 1..].iter().position(|&c| c == '}')?;
    Some(start + 1 + close + 1)
}

/// If `chars[start..]` (just after `{`) is `m}`, `m,}` or `m,n}`, the index after `}`.
fn quantifier_end(chars: &[char], start: usize) -> Option<usize> {
    let mut i = start;
    let digits = |i: &mut usize| {
        let from = *i;
        while chars.get(*i).is_some_and(|c| c.is_ascii_digit()) {
            *i += 1;
        }
        *i > from
    };
    if !digits(&mut i) {
        return None;
    }
    if chars.get(i) == Some(&',') {
        i += 1;
        digits(&mut i);
    }
    (chars.get(i) == Some(&'}')).then_some(i + 1)
}

/// Decodes a character escape whose letter is at `chars[start]` (after the backslash),
/// returning the code point and how many characters it used. `in_class` makes `\b` a
/// backspace and `\-` a hyphen.
fn char_escape(chars: &[char], start: usize, in_class: bool) -> Option<(u32, usize)> {
    let letter = *chars.get(start)?;
    let hex = |from: usize, len: usize| -> Option<u32> {
        let text: String = chars.get(from..from + len)?.iter().collect();
        if text.chars().all(|c| c.is_ascii_hexdigit()) {
            u32::from_str_radix(&text, 16).ok()
        } else {
            None
        }
    };
    Some(match letter {
        't' => (0x09, 1),
        'n' => (0x0A, 1),
        'v' => (0x0B, 1),
        'f' => (0x0C, 1),
        'r' => (0x0D, 1),
        '0' if !chars.get(start + 1).is_some_and(|c| c.is_ascii_digit()) => (0, 1),
        'b' if in_class => (0x08, 1),
        'c' => match chars.get(start + 1) {
            Some(&c) if c.is_ascii_alphabetic() => (u32::from(c) % 32, 2),
            // Annex B: `\c` not followed by a letter is a literal backslash; we keep the `c`.
            _ => (u32::from('c'), 1),
        },
        'x' => match hex(start + 1, 2) {
            Some(code) => (code, 3),
            None => (u32::from('x'), 1),
        },
        'u' => {
            if chars.get(start + 1) == Some(&'{') {
                let close = chars[start + 2..].iter().position(|&c| c == '}')?;
                let text: String = chars[start + 2..start + 2 + close].iter().collect();
                let code = u32::from_str_radix(&text, 16)
                    .ok()
                    .filter(|&c| c <= 0x10FFFF)?;
                (code, close + 3)
            } else {
                let code = hex(start + 1, 4)?;
                // A surrogate pair written as two escapes is one code point.
                if (0xD800..=0xDBFF).contains(&code)
                    && chars.get(start + 5) == Some(&'\\')
                    && chars.get(start + 6) == Some(&'u')
                {
                    if let Some(low) = hex(start + 7, 4).filter(|c| (0xDC00..=0xDFFF).contains(c)) {
                        return Some((0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00), 11));
                    }
                }
                (code, 5)
            }
        }
        other => (u32::from(other), 1),
    })
}

/// Translates the class whose `[` is just before `chars[start]`; returns the class text and
/// the index after its `]`.
fn translate_class(
    pattern: &str,
    chars: &[char],
    start: usize,
) -> Result<(String, usize), LeafError> {
    let mut i = start;
    let negated = chars.get(i) == Some(&'^');
    if negated {
        i += 1;
    }
    // Items: single code points, plain hyphens (range operators) or nested set classes.
    enum Item {
        Code(u32),
        Hyphen,
        Set(String),
    }
    let mut items: Vec<Item> = Vec::new();
    let mut closed = false;
    while i < chars.len() {
        let ch = chars[i];
        i += 1;
        match ch {
            ']' => {
                closed = true;
                break;
            }
            '-' => items.push(Item::Hyphen),
            '\\' => {
                let Some(&next) = chars.get(i) else {
                    return Err(invalid(pattern, "it ends with a lone backslash"));
                };
                match next {
                    'd' | 'D' | 'w' | 'W' | 's' | 'S' => {
                        i += 1;
                        items.push(Item::Set(set_escape_class(next)));
                    }
                    'p' | 'P' => {
                        let end = property_end(chars, i)
                            .ok_or_else(|| invalid(pattern, "a \\p escape lacks its {…}"))?;
                        items.push(Item::Set(chars[i - 1..end].iter().collect()));
                        i = end;
                    }
                    '1'..='9' => {
                        // Annex B: an octal-like escape in a class; read it as the digit.
                        i += 1;
                        items.push(Item::Code(u32::from(next)));
                    }
                    _ => {
                        let (code, used) = char_escape(chars, i, true)
                            .ok_or_else(|| invalid(pattern, "it has a malformed escape"))?;
                        i += used;
                        items.push(Item::Code(code));
                    }
                }
            }
            _ => items.push(Item::Code(u32::from(ch))),
        }
    }
    if !closed {
        return Err(invalid(pattern, "a character class is not closed"));
    }
    // Resolve ranges `a-b` between two code points; any other `-` is literal (Annex B).
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    let mut sets: Vec<String> = Vec::new();
    let mut k = 0;
    while k < items.len() {
        match (&items[k], items.get(k + 1), items.get(k + 2)) {
            (Item::Set(set), _, _) => {
                sets.push(set.clone());
                k += 1;
            }
            (Item::Code(lo), Some(Item::Hyphen), Some(Item::Code(hi))) => {
                if hi < lo {
                    return Err(invalid(pattern, "a class range is out of order"));
                }
                ranges.push((*lo, *hi));
                k += 3;
            }
            (Item::Code(code), _, _) => {
                ranges.push((*code, *code));
                k += 1;
            }
            (Item::Hyphen, _, _) => {
                ranges.push((u32::from('-'), u32::from('-')));
                k += 1;
            }
        }
    }
    let mut body = String::new();
    for (lo, hi) in &ranges {
        // Surrogates cannot occur in decoded strings: clip them out of ranges.
        for (lo, hi) in clip_surrogates(*lo, *hi) {
            push_class_code(&mut body, lo);
            if lo != hi {
                body.push('-');
                push_class_code(&mut body, hi);
            }
        }
    }
    for set in &sets {
        body.push_str(set);
    }
    let class = match (negated, body.is_empty()) {
        // ECMA: `[]` matches nothing, `[^]` matches anything.
        (false, true) => r"[^\x{0}-\x{10FFFF}]".to_owned(),
        (true, true) => r"[\x{0}-\x{10FFFF}]".to_owned(),
        (false, false) => format!("[{body}]"),
        (true, false) => format!("[^{body}]"),
    };
    Ok((class, i))
}

/// Splits `lo..=hi` around the surrogate block.
pub(crate) fn clip_surrogates(lo: u32, hi: u32) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    if lo <= hi.min(0xD7FF) {
        out.push((lo, hi.min(0xD7FF)));
    }
    if lo.max(0xE000) <= hi {
        out.push((lo.max(0xE000), hi));
    }
    out
}

/// A Thompson NFA.
#[derive(Debug)]
struct Nfa {
    states: Vec<NState>,
    start: usize,
    /// Interned code-point classes that `NState::Range` refers to.
    classes: Vec<Ranges>,
    class_ids: FastMap<Ranges, usize>,
}

#[derive(Clone, Debug)]
enum NState {
    /// Consume one code point of class `.0` (an index into `Nfa::classes`), then go to `.1`.
    Range(usize, usize),
    /// Epsilon to each target.
    Split(Vec<usize>),
    /// An anchor: passable only at the start (`start: true`) or end of the string.
    Look {
        at_start: bool,
        next: usize,
    },
    Match,
}

impl Nfa {
    /// Compiles `hir`; with `search`, the pattern may match anywhere (`.* R .*`).
    fn build(hir: &Hir, search: bool) -> Result<Nfa, LeafError> {
        let mut nfa = Nfa {
            states: vec![NState::Match],
            start: 0,
            classes: Vec::new(),
            class_ids: FastMap::default(),
        };
        let accept = if search {
            // tail: Match, or any char and loop.
            let tail = nfa.push(NState::Split(Vec::new()))?;
            let any = nfa.push_range(any_char(), tail)?;
            nfa.states[tail] = NState::Split(vec![0, any]);
            tail
        } else {
            0
        };
        let entry = nfa.compile(hir, accept, 0)?;
        nfa.start = if search {
            let head = nfa.push(NState::Split(Vec::new()))?;
            let any = nfa.push_range(any_char(), head)?;
            nfa.states[head] = NState::Split(vec![entry, any]);
            head
        } else {
            entry
        };
        Ok(nfa)
    }

    /// Pushes a state that reads one code point of `ranges`.
    fn push_range(&mut self, ranges: Ranges, next: usize) -> Result<usize, LeafError> {
        let class = match self.class_ids.get(&ranges) {
            Some(&class) => class,
            None => {
                self.classes.push(ranges.clone());
                self.class_ids.insert(ranges, self.classes.len() - 1);
                self.classes.len() - 1
            }
        };
        self.push(NState::Range(class, next))
    }

    fn push(&mut self, state: NState) -> Result<usize, LeafError> {
        if self.states.len() >= MAX_NFA_STATES {
            return Err(LeafError::unsupported(
                "pattern",
                format!("the pattern unrolls into more than {MAX_NFA_STATES} automaton states"),
            ));
        }
        self.states.push(state);
        Ok(self.states.len() - 1)
    }

    /// Compiles `hir` so that it continues to `next`; returns its entry state. Depth is bounded
    /// by the parser's nest limit.
    fn compile(&mut self, hir: &Hir, next: usize, depth: u32) -> Result<usize, LeafError> {
        if depth > 1000 {
            return Err(LeafError::unsupported(
                "pattern",
                "the pattern nests too deeply",
            ));
        }
        match hir.kind() {
            HirKind::Empty => Ok(next),
            HirKind::Literal(literal) => {
                let text = String::from_utf8_lossy(&literal.0).into_owned();
                let mut target = next;
                for ch in text.chars().rev() {
                    let code = u32::from(ch);
                    target = self.push_range(vec![(code, code)], target)?;
                }
                Ok(target)
            }
            HirKind::Class(Class::Unicode(class)) => {
                let ranges: Ranges = class
                    .ranges()
                    .iter()
                    .flat_map(|r| clip_surrogates(u32::from(r.start()), u32::from(r.end())))
                    .collect();
                self.push_range(ranges, next)
            }
            HirKind::Class(Class::Bytes(class)) => {
                let ranges: Ranges = class
                    .ranges()
                    .iter()
                    .filter(|r| r.start() < 0x80)
                    .map(|r| (u32::from(r.start()), u32::from(r.end().min(0x7F))))
                    .collect();
                self.push_range(ranges, next)
            }
            HirKind::Look(look) => match look {
                Look::Start => self.push(NState::Look {
                    at_start: true,
                    next,
                }),
                Look::End => self.push(NState::Look {
                    at_start: false,
                    next,
                }),
                _ => Err(LeafError::unsupported(
                    "pattern",
                    "only the anchors ^ and $ are supported among assertions",
                )),
            },
            HirKind::Capture(capture) => self.compile(&capture.sub, next, depth + 1),
            HirKind::Concat(items) => {
                let mut target = next;
                for item in items.iter().rev() {
                    target = self.compile(item, target, depth + 1)?;
                }
                Ok(target)
            }
            HirKind::Alternation(items) => {
                let mut entries = Vec::with_capacity(items.len());
                for item in items {
                    entries.push(self.compile(item, next, depth + 1)?);
                }
                self.push(NState::Split(entries))
            }
            HirKind::Repetition(rep) => {
                let mut target = next;
                match rep.max {
                    None => {
                        let split = self.push(NState::Split(Vec::new()))?;
                        let body = self.compile(&rep.sub, split, depth + 1)?;
                        self.states[split] = NState::Split(vec![body, next]);
                        target = split;
                    }
                    Some(max) => {
                        for _ in rep.min..max {
                            let body = self.compile(&rep.sub, target, depth + 1)?;
                            target = self.push(NState::Split(vec![body, next]))?;
                        }
                    }
                }
                for _ in 0..rep.min {
                    target = self.compile(&rep.sub, target, depth + 1)?;
                }
                Ok(target)
            }
        }
    }

    /// The states reachable from `seeds` by epsilon moves that matter for the subset (ranges,
    /// anchors and the match state), sorted; `Start` anchors pass only when `at_start`, `End`
    /// anchors only when `at_end`. `scratch` holds visit stamps across calls.
    fn closure(
        &self,
        seeds: &[usize],
        at_start: bool,
        at_end: bool,
        scratch: &mut Scratch,
    ) -> Vec<usize> {
        scratch.stamp += 1;
        if scratch.seen.len() < self.states.len() {
            scratch.seen.resize(self.states.len(), 0);
        }
        let stamp = scratch.stamp;
        let mut out = std::mem::take(&mut scratch.out);
        out.clear();
        let mut stack = std::mem::take(&mut scratch.stack);
        stack.clear();
        stack.extend_from_slice(seeds);
        while let Some(state) = stack.pop() {
            if scratch.seen[state] == stamp {
                continue;
            }
            scratch.seen[state] = stamp;
            match &self.states[state] {
                NState::Split(targets) => stack.extend(targets.iter().copied()),
                NState::Look {
                    at_start: true,
                    next,
                } if at_start => stack.push(*next),
                NState::Look {
                    at_start: false,
                    next,
                } if at_end => stack.push(*next),
                _ => out.push(state),
            }
        }
        scratch.stack = stack;
        out.sort_unstable();
        let set = out.to_vec();
        scratch.out = out;
        set
    }

    /// Subset construction over code-point intervals.
    fn determinize(&self) -> Result<Dfa, dfa::TooBig> {
        // A DFA state: the closed NFA set, and whether no input has been read yet.
        type Key = (Vec<usize>, bool);
        let mut scratch = Scratch::default();
        let initial: Key = (self.closure(&[self.start], true, false, &mut scratch), true);
        let mut ids: FastMap<Key, usize> = FastMap::default();
        ids.insert(initial.clone(), 0);
        let mut order = vec![initial];
        let mut states = Vec::new();
        let mut next = 0;
        // Bounds the total work, since large NFA sets can make each DFA state expensive.
        let mut work: usize = 0;
        // Buffers reused from one DFA state to the next (cleared before each use).
        let mut group_of: FastMap<usize, usize> = FastMap::default();
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut events: Vec<(u32, bool, usize)> = Vec::new();
        let mut active: Vec<(usize, usize)> = Vec::new(); // (group, count), sorted
        let mut memo: FastMap<Vec<usize>, usize> = FastMap::default();
        let mut trans: Vec<(u32, u32, usize)> = Vec::new();
        let mut targets: Vec<usize> = Vec::new();
        while next < order.len() {
            // Explored states are never read again (`ids` keeps its own copy), so take the set
            // rather than copy it.
            let (set, at_start) = std::mem::take(&mut order[next]);
            next += 1;
            work = work.saturating_add(set.len());
            if work > MAX_DETERMINIZE_WORK {
                return Err(dfa::TooBig);
            }
            // The set is closed with `End` anchors blocked; only the anchors it holds can lead
            // further at the end, so without any it accepts exactly when it holds the match.
            let blocked_end = set.iter().any(|&state| {
                matches!(
                    self.states[state],
                    NState::Look {
                        at_start: false,
                        ..
                    }
                )
            });
            let accept = if blocked_end {
                self.closure(&set, at_start, true, &mut scratch)
                    .contains(&0)
            } else {
                set.binary_search(&0).is_ok()
            };
            // Sweep over range boundaries: +target where a range starts, -target after it ends.
            // NFA states with equal ranges (copies from counted repetitions) share one group.
            group_of.clear();
            let mut n_groups = 0;
            events.clear();
            for &state in &set {
                if let NState::Range(class, target) = self.states[state] {
                    let group = *group_of.entry(class).or_insert_with(|| {
                        for &(lo, hi) in &self.classes[class] {
                            events.push((lo, true, n_groups));
                            events.push((hi + 1, false, n_groups));
                        }
                        if groups.len() == n_groups {
                            groups.push(Vec::new());
                        }
                        groups[n_groups].clear();
                        n_groups += 1;
                        n_groups - 1
                    });
                    groups[group].push(target);
                }
            }
            events.sort_unstable();
            work = work.saturating_add(events.len());
            if work > MAX_DETERMINIZE_WORK {
                return Err(dfa::TooBig);
            }
            active.clear();
            memo.clear();
            trans.clear();
            let mut k = 0;
            while k < events.len() {
                let point = events[k].0;
                while k < events.len() && events[k].0 == point {
                    let (_, starts, group) = events[k];
                    match active.binary_search_by_key(&group, |a| a.0) {
                        Ok(i) if starts => active[i].1 += 1,
                        Ok(i) => {
                            active[i].1 -= 1;
                            if active[i].1 == 0 {
                                active.remove(i);
                            }
                        }
                        Err(i) if starts => active.insert(i, (group, 1)),
                        Err(_) => {}
                    }
                    k += 1;
                }
                if active.is_empty() || k == events.len() {
                    continue;
                }
                let (lo, hi) = (point, events[k].0 - 1);
                targets.clear();
                targets.extend(active.iter().flat_map(|a| groups[a.0].iter().copied()));
                targets.sort_unstable();
                targets.dedup();
                work = work.saturating_add(targets.len());
                if let Some(&id) = memo.get(targets.as_slice()) {
                    trans.push((lo, hi, id));
                    continue;
                }
                let key: Key = (self.closure(&targets, false, false, &mut scratch), false);
                work = work.saturating_add(key.0.len());
                if work > MAX_DETERMINIZE_WORK {
                    return Err(dfa::TooBig);
                }
                let id = match ids.get(&key) {
                    Some(&id) => id,
                    None => {
                        if order.len() >= MAX_DFA_STATES {
                            return Err(dfa::TooBig);
                        }
                        let id = order.len();
                        ids.insert(key.clone(), id);
                        order.push(key);
                        id
                    }
                };
                memo.insert(targets.clone(), id);
                trans.push((lo, hi, id));
            }
            states.push(State {
                accept,
                trans: merge(&trans),
            });
        }
        Ok(Dfa { states, start: 0 })
    }
}

/// Visit stamps and the work stack, reused across closures.
#[derive(Debug, Default)]
struct Scratch {
    seen: Vec<u32>,
    stamp: u32,
    stack: Vec<usize>,
    out: Vec<usize>,
}

fn merge(trans: &[(u32, u32, usize)]) -> Vec<(u32, u32, usize)> {
    let mut out: Vec<(u32, u32, usize)> = Vec::with_capacity(trans.len());
    for &(lo, hi, target) in trans {
        if let Some(last) = out.last_mut() {
            if last.2 == target && last.1 + 1 == lo {
                last.1 = hi;
                continue;
            }
        }
        out.push((lo, hi, target));
    }
    out
}

#[cfg(test)]
mod tests;
