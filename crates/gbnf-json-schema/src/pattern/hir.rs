//! A direct reader from the translated pattern text to `regex-syntax`'s HIR, for the plain
//! subset the translation writes (code points, bracketed classes of code points and ranges,
//! groups, alternation, quantifiers, `^` and `$`).
//!
//! `regex-syntax` parses to an AST first and then translates it, and its bracketed classes
//! are costly: the case-insensitive names of large schemas (`^([Pp][Rr][Ee][Ss]…)$`, hundreds
//! of kilobytes of them) spent most of their automaton time there. The HIR built here uses the
//! same smart constructors as `regex-syntax`'s translator, so it describes the same language.
//! Anything outside the subset (a `\p{…}` property, an error, a deep nesting) gives `None`,
//! and the caller parses with `regex-syntax` as before, errors included.

use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, Hir, Look, Repetition};

/// How deep groups may nest here; deeper patterns go to `regex-syntax` and its nest limit.
const MAX_GROUP_DEPTH: usize = 64;

/// The HIR of `text` (output of `translate`), or `None` when it is outside the plain subset.
pub(crate) fn read(text: &str) -> Option<Hir> {
    let mut reader = Reader {
        bytes: text.as_bytes(),
        at: 0,
    };
    let hir = reader.alternation(0)?;
    (reader.at == reader.bytes.len()).then_some(hir)
}

/// The state of one [`read`].
struct Reader<'t> {
    bytes: &'t [u8],
    at: usize,
}

impl Reader<'_> {
    /// Alternatives separated by `|`, up to a `)` or the end (neither consumed).
    fn alternation(&mut self, depth: usize) -> Option<Hir> {
        let mut alternatives = vec![self.concat(depth)?];
        while self.peek() == Some(b'|') {
            self.at += 1;
            alternatives.push(self.concat(depth)?);
        }
        Some(if alternatives.len() == 1 {
            alternatives.pop()?
        } else {
            Hir::alternation(alternatives)
        })
    }

    /// Quantified atoms up to a `|`, a `)` or the end.
    fn concat(&mut self, depth: usize) -> Option<Hir> {
        let mut items: Vec<Hir> = Vec::new();
        while let Some(byte) = self.peek() {
            let atom = match byte {
                b'|' | b')' => break,
                b'(' => {
                    if depth >= MAX_GROUP_DEPTH {
                        return None;
                    }
                    self.at += 1;
                    if self.bytes[self.at..].starts_with(b"?:") {
                        self.at += 2;
                    } else if self.peek() == Some(b'?') {
                        return None;
                    }
                    let inner = self.alternation(depth + 1)?;
                    if self.peek() != Some(b')') {
                        return None;
                    }
                    self.at += 1;
                    inner
                }
                b'^' | b'$' => {
                    self.at += 1;
                    let look = Hir::look(if byte == b'^' { Look::Start } else { Look::End });
                    // A quantified anchor is left to `regex-syntax`.
                    if matches!(self.peek(), Some(b'*' | b'+' | b'?' | b'{')) {
                        return None;
                    }
                    items.push(look);
                    continue;
                }
                b'[' => {
                    self.at += 1;
                    self.class()?
                }
                _ => {
                    let code = self.code()?;
                    let ch = char::from_u32(code)?;
                    let mut buffer = [0u8; 4];
                    Hir::literal(ch.encode_utf8(&mut buffer).as_bytes())
                }
            };
            items.push(self.quantified(atom)?);
        }
        Some(Hir::concat(items))
    }

    /// `atom` with the quantifier that follows it, if any.
    fn quantified(&mut self, atom: Hir) -> Option<Hir> {
        let (min, max) = match self.peek() {
            Some(b'*') => (0, None),
            Some(b'+') => (1, None),
            Some(b'?') => (0, Some(1)),
            Some(b'{') => {
                self.at += 1;
                let min = self.number()?;
                let max = if self.peek() == Some(b',') {
                    self.at += 1;
                    if self.peek() == Some(b'}') {
                        None
                    } else {
                        Some(self.number()?)
                    }
                } else {
                    Some(min)
                };
                if self.peek() != Some(b'}') || max.is_some_and(|max| max < min) {
                    return None;
                }
                // The common step below passes the `}`.
                (min, max)
            }
            _ => return Some(atom),
        };
        self.at += 1;
        let lazy = self.peek() == Some(b'?');
        if lazy {
            self.at += 1;
        }
        // A quantifier right after another is left to `regex-syntax` (it rejects most).
        if matches!(self.peek(), Some(b'*' | b'+' | b'?' | b'{')) {
            return None;
        }
        Some(Hir::repetition(Repetition {
            min,
            max,
            greedy: !lazy,
            sub: Box::new(atom),
        }))
    }

    /// A bracketed class after its `[`, through its `]`.
    fn class(&mut self) -> Option<Hir> {
        let negated = self.peek() == Some(b'^');
        if negated {
            self.at += 1;
        }
        let mut ranges: Vec<ClassUnicodeRange> = Vec::new();
        loop {
            if self.peek()? == b']' {
                self.at += 1;
                break;
            }
            let lo = self.code()?;
            let hi = if self.peek() == Some(b'-') && self.bytes.get(self.at + 1) != Some(&b']') {
                self.at += 1;
                self.code()?
            } else {
                lo
            };
            if hi < lo {
                return None;
            }
            ranges.push(ClassUnicodeRange::new(
                char::from_u32(lo)?,
                char::from_u32(hi)?,
            ));
        }
        let mut class = ClassUnicode::new(ranges);
        if negated {
            class.negate();
        }
        Some(Hir::class(Class::Unicode(class)))
    }

    /// One code point as the translation writes it: an ASCII letter or digit, or `\x{…}`.
    fn code(&mut self) -> Option<u32> {
        let byte = self.peek()?;
        if byte.is_ascii_alphanumeric() {
            self.at += 1;
            return Some(u32::from(byte));
        }
        if !self.bytes[self.at..].starts_with(b"\\x{") {
            return None;
        }
        let start = self.at + 3;
        let len = self.bytes[start..].iter().position(|&b| b == b'}')?;
        let digits = std::str::from_utf8(&self.bytes[start..start + len]).ok()?;
        let code = u32::from_str_radix(digits, 16).ok()?;
        self.at = start + len + 1;
        Some(code)
    }

    /// A decimal number (a quantifier bound).
    fn number(&mut self) -> Option<u32> {
        let start = self.at;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
        std::str::from_utf8(&self.bytes[start..self.at])
            .ok()?
            .parse()
            .ok()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::translate;

    /// The HIR `regex-syntax` parses from `text`.
    fn parsed(text: &str) -> Hir {
        regex_syntax::ParserBuilder::new()
            .unicode(true)
            .utf8(true)
            .build()
            .parse(text)
            .unwrap_or_else(|err| panic!("{text}: {err}"))
    }

    /// The translation of the ECMA pattern `pattern`.
    fn translated(pattern: &str) -> String {
        translate(pattern, false).unwrap_or_else(|err| panic!("{pattern}: {err:?}"))
    }

    #[test]
    fn reads_the_plain_subset_as_regex_syntax_does() {
        for pattern in [
            r"^(?:[Pp][Rr][Ee][Ss][Ee][Nn][Tt]|[Aa][Bb][Ss][Ee][Nn][Tt])$",
            r"^[a-zA-Z_][a-zA-Z0-9_]*$",
            r"^(?:ab|a)c?d+e*f{2}g{2,}h{1,3}?$",
            r"[^\n]\..\d\W\s[-a-]x{",
            r"(?:|a)(?:)x",
            r"[]",
            r"[^]",
            r"\u{1F600}\uD83D",
        ] {
            let text = translated(pattern);
            assert_eq!(read(&text), Some(parsed(&text)), "{pattern} as {text}");
        }
        // Capturing groups are read as plain groups: the capture does not change the language.
        assert_eq!(
            read(&translated("(a)(b|c)")),
            Some(parsed(&translated("(?:a)(?:b|c)")))
        );
    }

    #[test]
    fn leaves_everything_else_to_regex_syntax() {
        for text in [
            r"\p{L}", r"a**", r"(?i)a", r"(a", r"a)", r"^*", r"a{3,2}", r"[a", r"*a", "_",
        ] {
            assert_eq!(read(text), None, "{text}");
        }
    }
}
