//! JSON pointers (RFC 6901) name the place in a schema that an error or warning is about,
//! so that tools can point the user at the offending keyword.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, OnceLock};

/// A JSON pointer (cheap to clone and to extend): a list of reference tokens, displayed as
/// `/a/b` with `~` written `~0` and `/` written `~1`. The empty pointer (the whole document)
/// displays as an empty string.
///
/// It is stored as a persistent list (each pointer shares its parent), so [`JsonPointer::join`]
/// takes constant time whatever the depth: compiling a schema joins a pointer for every
/// keyword it visits, and copying the whole path each time made deep schemas quadratic.
#[derive(Clone, Default)]
pub struct JsonPointer(Option<Arc<Node>>);

struct Node {
    parent: JsonPointer,
    token: String,
    /// How many tokens the pointer has (this one included).
    len: usize,
    /// The tokens from the root, made on the first [`JsonPointer::tokens`] call.
    tokens: OnceLock<Box<[String]>>,
}

impl JsonPointer {
    /// The pointer to the whole document.
    pub fn root() -> JsonPointer {
        JsonPointer(None)
    }

    /// Parses the RFC 6901 string form (`""` or `/a/b`); `None` if it does not start with `/`
    /// or has a `~` not followed by `0` or `1`.
    pub fn parse(text: &str) -> Option<JsonPointer> {
        if text.is_empty() {
            return Some(JsonPointer::root());
        }
        let rest = text.strip_prefix('/')?;
        let mut pointer = JsonPointer::root();
        for raw in rest.split('/') {
            pointer = pointer.join(unescape_token(raw)?);
        }
        Some(pointer)
    }

    /// This pointer with one more token.
    pub fn join(&self, token: impl Into<String>) -> JsonPointer {
        JsonPointer(Some(Arc::new(Node {
            parent: self.clone(),
            token: token.into(),
            len: self.len() + 1,
            tokens: OnceLock::new(),
        })))
    }

    /// The reference tokens, unescaped.
    pub fn tokens(&self) -> &[String] {
        match &self.0 {
            None => &[],
            Some(node) => node.tokens.get_or_init(|| {
                let mut tokens: Vec<String> = self.rev_tokens().map(str::to_owned).collect();
                tokens.reverse();
                tokens.into_boxed_slice()
            }),
        }
    }

    pub fn is_root(&self) -> bool {
        self.0.is_none()
    }

    /// An identity for this pointer value (not its tokens): equal for clones, different for
    /// pointers alive at the same time that were made separately. `None` for the root.
    pub(crate) fn address(&self) -> Option<usize> {
        self.0.as_ref().map(|node| Arc::as_ptr(node) as usize)
    }

    /// The parent pointer and the last token; `None` for the root.
    pub(crate) fn split_last(&self) -> Option<(&JsonPointer, &str)> {
        self.0
            .as_deref()
            .map(|node| (&node.parent, node.token.as_str()))
    }

    /// How many tokens the pointer has.
    fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |node| node.len)
    }

    /// The tokens from the last one back to the first.
    fn rev_tokens(&self) -> impl Iterator<Item = &str> {
        let mut at = self.0.as_deref();
        std::iter::from_fn(move || {
            let node = at?;
            at = node.parent.0.as_deref();
            Some(node.token.as_str())
        })
    }

    /// The tokens from the first one, without materialising them: a short stack of
    /// references.
    pub(crate) fn forward_tokens(&self) -> Vec<&str> {
        let mut tokens: Vec<&str> = self.rev_tokens().collect();
        tokens.reverse();
        tokens
    }
}

impl PartialEq for JsonPointer {
    fn eq(&self, other: &JsonPointer) -> bool {
        if self.len() != other.len() {
            return false;
        }
        // Walk both back to their common ancestor (shared nodes compare by address).
        let (mut a, mut b) = (self.0.as_ref(), other.0.as_ref());
        loop {
            match (a, b) {
                (None, None) => return true,
                (Some(x), Some(y)) => {
                    if Arc::ptr_eq(x, y) {
                        return true;
                    }
                    if x.token != y.token {
                        return false;
                    }
                    a = x.parent.0.as_ref();
                    b = y.parent.0.as_ref();
                }
                _ => return false,
            }
        }
    }
}

impl Eq for JsonPointer {}

impl Hash for JsonPointer {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Its length, then each token from the last one back (as `eq` compares them),
        // without collecting the tokens in order first.
        state.write_usize(self.len());
        for token in self.rev_tokens() {
            token.hash(state);
        }
    }
}

impl Ord for JsonPointer {
    fn cmp(&self, other: &JsonPointer) -> Ordering {
        self.forward_tokens().cmp(&other.forward_tokens())
    }
}

impl PartialOrd for JsonPointer {
    fn partial_cmp(&self, other: &JsonPointer) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for JsonPointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("JsonPointer")
            .field(&self.forward_tokens())
            .finish()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        // Dropping a long chain would otherwise recurse once per token: unlink iteratively.
        let mut next = self.parent.0.take();
        while let Some(node) = next {
            match Arc::try_unwrap(node) {
                Ok(mut node) => next = node.parent.0.take(),
                Err(_) => break,
            }
        }
    }
}

impl fmt::Display for JsonPointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for token in self.forward_tokens() {
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
    fn splits_off_the_last_token() {
        let pointer = JsonPointer::parse("/a/b~1c").expect("a pointer");
        let (parent, last) = pointer.split_last().expect("not the root");
        assert_eq!((parent.to_string().as_str(), last), ("/a", "b/c"));
        assert!(JsonPointer::root().split_last().is_none());
    }

    #[test]
    fn round_trips_escapes() {
        let pointer = JsonPointer::root().join("a/b").join("c~d").join("");
        assert_eq!(pointer.to_string(), "/a~1b/c~0d/");
        assert_eq!(JsonPointer::parse(&pointer.to_string()), Some(pointer));
        assert_eq!(JsonPointer::parse("/a~2"), None);
        assert_eq!(JsonPointer::parse("a"), None);
    }

    #[test]
    fn compares_by_tokens() {
        let a = JsonPointer::root().join("x").join("y");
        let b = JsonPointer::parse("/x/y").unwrap_or_default();
        assert_eq!(a, b);
        assert_eq!(a.tokens(), ["x", "y"]);
        assert_ne!(a, JsonPointer::root().join("x"));
        assert!(JsonPointer::root().join("x") < a);
        assert!(a < JsonPointer::root().join("y"));
        let state = std::collections::hash_map::RandomState::new();
        assert_eq!(
            std::hash::BuildHasher::hash_one(&state, &a),
            std::hash::BuildHasher::hash_one(&state, &b)
        );
        assert_eq!(format!("{a:?}"), r#"JsonPointer(["x", "y"])"#);
    }

    #[test]
    fn deep_pointers_drop_without_recursion() {
        let mut pointer = JsonPointer::root();
        for _ in 0..200_000 {
            pointer = pointer.join("a");
        }
        assert_eq!(pointer.tokens().len(), 200_000);
        drop(pointer);
    }
}
