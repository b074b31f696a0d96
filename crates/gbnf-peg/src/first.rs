//! FIRST sets: for each node, the bytes its first consumed byte can be. The runtime uses them
//! to skip choice alternatives and repetition iterations that would fail at once, which does
//! not change any result (a skipped parser would fail without reaching the end of input, and
//! choices and repetitions discard the end of a failed child).

use crate::node::Node;

/// A set of bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ByteSet([u64; 4]);

impl ByteSet {
    pub(crate) const ALL: ByteSet = ByteSet([u64::MAX; 4]);

    #[inline]
    pub(crate) fn contains(&self, byte: u8) -> bool {
        self.0[(byte / 64) as usize] & (1 << (byte % 64)) != 0
    }

    fn insert(&mut self, byte: u8) {
        self.0[(byte / 64) as usize] |= 1 << (byte % 64);
    }

    fn union(&mut self, other: &ByteSet) -> bool {
        let before = self.0;
        for (mine, theirs) in self.0.iter_mut().zip(other.0) {
            *mine |= theirs;
        }
        before != self.0
    }
}

/// FIRST sets of every node (least fixpoint), given which nodes are nullable. A nullable
/// node is never skipped, so its own set does not matter.
pub(crate) fn first_sets(nodes: &[Node], nullable: &[bool]) -> Vec<ByteSet> {
    let mut first = vec![ByteSet::default(); nodes.len()];
    // Leaves first: their sets do not depend on other nodes.
    for (idx, node) in nodes.iter().enumerate() {
        first[idx] = match node {
            Node::Literal(text) => {
                let mut set = ByteSet::default();
                if let Some(&byte) = text.as_bytes().first() {
                    set.insert(byte);
                }
                set
            }
            // Nullable leaves that consume input: a sequence that starts with one goes on to
            // its next child, but the sequence can start with these bytes too (without them,
            // `(space "," value)*` was skipped at `1 , 2`).
            Node::Any | Node::StringContent { .. } | Node::Until { .. } => ByteSet::ALL,
            Node::Space => {
                let mut set = ByteSet::default();
                for byte in [b' ', b'\t', b'\n', b'\r', 0x0B, 0x0C] {
                    set.insert(byte);
                }
                set
            }
            Node::Chars(chars) => {
                let mut set = ByteSet::default();
                for byte in 0..=255u8 {
                    if byte >= 0x80 || chars.contains(byte as u32) {
                        set.insert(byte);
                    }
                }
                set
            }
            _ => ByteSet::default(),
        };
    }
    loop {
        let mut changed = false;
        for (idx, node) in nodes.iter().enumerate() {
            let mut set = first[idx];
            match node {
                Node::Seq(children) => {
                    for child in children {
                        set.union(&first[child.index()]);
                        if !nullable[child.index()] {
                            break;
                        }
                    }
                }
                Node::Choice(_)
                | Node::Repeat { .. }
                | Node::Schema { .. }
                | Node::Rule { .. }
                | Node::Atomic(_)
                | Node::Tag { .. }
                | Node::Gbnf { .. }
                | Node::Ac { .. } => {
                    for child in node.children() {
                        set.union(&first[child.index()]);
                    }
                }
                _ => continue,
            }
            if set != first[idx] {
                first[idx] = set;
                changed = true;
            }
        }
        if !changed {
            return first;
        }
    }
}
