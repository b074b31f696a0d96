//! A small per-thread memo for pure leaf computations (pattern automata, number automata, the
//! JSON encodings of code-point sets), so that compiling many schemas that share leaves (tool
//! schemas: `{"type": "string"}`, `{"type": "integer", "minimum": 0}`) builds each one once.
//!
//! Only values that do not depend on a `GrammarBuilder` are memoised. Each memo holds at most
//! `CAP` entries and is cleared when it fills, so memory stays bounded.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::Hash;
use std::thread::LocalKey;

/// The most entries one memo keeps before it is cleared.
pub(crate) const CAP: usize = 512;

/// A thread-local memo table. Keys are the compiler's own values (patterns, constraints,
/// code-point sets), so the fast hasher suffices; the table is never iterated.
pub(crate) type Table<K, V> = RefCell<HashMap<K, V, gbnf::FastHash>>;

/// The value for `key` in `table`, computing it with `make` on a miss.
pub(crate) fn get_or_make<K, V>(
    table: &'static LocalKey<Table<K, V>>,
    key: &K,
    make: impl FnOnce() -> V,
) -> V
where
    K: Hash + Eq + Clone + 'static,
    V: Clone + 'static,
{
    if let Some(value) = table.with(|t| t.borrow().get(key).cloned()) {
        return value;
    }
    let value = make();
    table.with(|t| {
        let mut t = t.borrow_mut();
        if t.len() >= CAP {
            t.clear();
        }
        t.insert(key.clone(), value.clone());
    });
    value
}
