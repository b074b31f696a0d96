//! A fast hasher for the automaton builders' lookup tables (subset construction, product
//! automata, explored states). Their keys are sets of state numbers built by the compiler, and
//! the standard SipHash cost more than the rest of a subset step; these tables are only looked
//! up, never iterated, so the hasher cannot change any output.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` with [`FastHasher`].
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// A multiply-rotate word hasher (the scheme of rustc's `FxHasher`): a few instructions per
/// word, good enough for keys that are not chosen by an adversary.
#[derive(Default, Clone, Copy)]
pub(crate) struct FastHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FastHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, value: u8) {
        self.add(u64::from(value));
    }

    fn write_u16(&mut self, value: u16) {
        self.add(u64::from(value));
    }

    fn write_u32(&mut self, value: u32) {
        self.add(u64::from(value));
    }

    fn write_u64(&mut self, value: u64) {
        self.add(value);
    }

    fn write_usize(&mut self, value: usize) {
        self.add(value as u64);
    }

    fn finish(&self) -> u64 {
        self.hash
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_keys_hash_equal_and_distinct_keys_are_told_apart() {
        let mut map: FastMap<Vec<usize>, usize> = FastMap::default();
        for n in 0..1000usize {
            map.insert(vec![n, n * 7, n % 13], n);
        }
        assert_eq!(map.len(), 1000);
        for n in 0..1000usize {
            assert_eq!(map.get(&vec![n, n * 7, n % 13]), Some(&n));
        }
        assert_eq!(map.get(&vec![1, 2, 3]), None);
    }
}
