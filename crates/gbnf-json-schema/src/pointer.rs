//! JSON pointers (RFC 6901) name the place in a schema that an error or warning is about,
//! so that tools can point the user at the offending keyword.

use std::fmt;
use std::sync::Arc;

/// A JSON pointer (cheap to clone): a list of reference tokens, displayed as `/a/b` with `~` written `~0`
/// and `/` written `~1`. The empty pointer (the whole document) displays as an empty string.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JsonPointer(Arc<Vec<String>>);

impl JsonPointer {
    /// The pointer to the whole document.
    pub fn root() -> JsonPointer {
        JsonPointer(Arc::default())
    }

    /// Parses the RFC 6901 string form (`""` or `/a/b`); `None` if it does not start with `/`
    /// or has a `~` not followed by `0` or `1`.
    pub fn parse(text: &str) -> Option<JsonPointer> {
        if text.is_empty() {
            return Some(JsonPointer::root());
        }
        let rest = text.strip_prefix('/')?;
        let mut tokens = Vec::new();
        for raw in rest.split('/') {
            tokens.push(unescape_token(raw)?);
        }
        Some(JsonPointer(Arc::new(tokens)))
    }

    /// This pointer with one more token.
    pub fn join(&self, token: impl Into<String>) -> JsonPointer {
        let mut tokens = Vec::with_capacity(self.0.len() + 1);
        tokens.extend(self.0.iter().cloned());
        tokens.push(token.into());
        JsonPointer(Arc::new(tokens))
    }

    /// The reference tokens, unescaped.
    pub fn tokens(&self) -> &[String] {
        &self.0
    }

    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for JsonPointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for token in self.0.iter() {
            f.write_str("/")?;
            for ch in token.chars() {
                match ch {
                    '~' => f.write_str("~0")?,
                    '/' => f.write_str("~1")?,
                    _ => fmt::Write::write_char(f, ch)?,
                }
            }
        }
        Ok(())
    }
}

fn unescape_token(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(ch) = chars.next() {
        if ch == '~' {
            match chars.next() {
                Some('0') => out.push('~'),
                Some('1') => out.push('/'),
                _ => return None,
            }
        } else {
            out.push(ch);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_escapes() {
        let pointer = JsonPointer::root().join("a/b").join("c~d").join("");
        assert_eq!(pointer.to_string(), "/a~1b/c~0d/");
        assert_eq!(JsonPointer::parse(&pointer.to_string()), Some(pointer));
        assert_eq!(JsonPointer::parse("/a~2"), None);
        assert_eq!(JsonPointer::parse("a"), None);
    }
}
