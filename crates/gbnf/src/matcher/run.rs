//! The Earley recognizer over the compiled automata: item sets, prediction, completion
//! with the Aycock–Horspool treatment of nullable rules, tail calls, and scanning.
//!
//! An item is `(state, origin, ret)`: the automaton is in `state`, the rule instance began
//! at set `origin`, and when it finishes, rule `ret` has been matched from `origin` (`ret`
//! is the state's own rule unless the item was reached through tail calls). Only what
//! completion needs is kept for past sets: the *waiters*, items stopped in front of a
//! non-tail call. Sets that predicted nothing keep nothing.

use crate::matcher::compile::{Program, ScanKind};

/// Marks an empty slot in the dedup hash table.
const EMPTY: u32 = u32::MAX;

/// Sets at most this large are deduplicated by a linear scan instead of the hash table.
const LINEAR_LIMIT: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Item {
    pub(crate) state: u32,
    pub(crate) origin: u32,
    pub(crate) ret: u32,
}

/// An item of a past set that waits for `rule` to be matched; it then continues at
/// `target` as `(target, origin, ret)`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Waiter {
    rule: u32,
    target: u32,
    origin: u32,
    ret: u32,
}

/// The waiters of every set: set `i` owns `waiters[bounds[i]..bounds[i + 1]]`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Chart {
    waiters: Vec<Waiter>,
    bounds: Vec<u32>,
}

impl Chart {
    /// The id the next set will get.
    fn next_id(&self) -> u32 {
        (self.bounds.len() - 1) as u32
    }
}

/// An item set under construction, deduplicated linearly while small and by an
/// open-addressing table once large.
#[derive(Debug, Default)]
pub(crate) struct ItemSet {
    pub(crate) items: Vec<Item>,
    slots: Vec<u32>,
    hashed: bool,
}

impl Clone for ItemSet {
    fn clone(&self) -> ItemSet {
        ItemSet {
            items: self.items.clone(),
            slots: Vec::new(),
            hashed: false,
        }
    }
}

impl ItemSet {
    pub(crate) fn clear(&mut self) {
        self.items.clear();
        self.hashed = false;
    }

    /// Adds `item` unless present; returns whether it was added.
    #[inline(always)]
    fn insert(&mut self, item: Item) -> bool {
        if !self.hashed {
            if self.items.contains(&item) {
                return false;
            }
            self.items.push(item);
            if self.items.len() > LINEAR_LIMIT {
                self.rehash(64);
            }
            return true;
        }
        self.insert_hashed(item)
    }

    #[inline(never)]
    fn insert_hashed(&mut self, item: Item) -> bool {
        let mask = self.slots.len() - 1;
        let mut slot = hash(item) & mask;
        loop {
            let idx = self.slots[slot];
            if idx == EMPTY {
                break;
            }
            if self.items[idx as usize] == item {
                return false;
            }
            slot = (slot + 1) & mask;
        }
        self.slots[slot] = self.items.len() as u32;
        self.items.push(item);
        if self.items.len() * 2 > self.slots.len() {
            self.rehash(self.slots.len() * 2);
        }
        true
    }

    fn rehash(&mut self, capacity: usize) {
        self.slots.clear();
        self.slots.resize(capacity, EMPTY);
        let mask = capacity - 1;
        for (idx, item) in self.items.iter().enumerate() {
            let mut slot = hash(*item) & mask;
            while self.slots[slot] != EMPTY {
                slot = (slot + 1) & mask;
            }
            self.slots[slot] = idx as u32;
        }
        self.hashed = true;
    }
}

#[inline]
fn hash(item: Item) -> usize {
    let key = (item.state as u64) << 32 ^ (item.origin as u64) ^ (item.ret as u64).rotate_left(17);
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize
}

/// The recognizer's state after some input: the chart of past sets, the current set,
/// and whether the input so far is in the language.
#[derive(Clone, Debug)]
pub(crate) struct Earley {
    chart: Chart,
    pub(crate) current: ItemSet,
    pub(crate) accepting: bool,
    next: ItemSet,
}

impl Earley {
    /// The state before any input, with room for `capacity` code points.
    pub(crate) fn start(program: &Program, capacity: usize) -> Earley {
        let mut bounds = Vec::with_capacity(capacity.saturating_add(1));
        bounds.push(0);
        let mut earley = Earley {
            chart: Chart {
                waiters: Vec::with_capacity(capacity / 4),
                bounds,
            },
            current: ItemSet::default(),
            accepting: false,
            next: ItemSet::default(),
        };
        let root = program.root;
        let start = program.rules[root as usize].start;
        earley.next.insert(Item {
            state: start,
            origin: 0,
            ret: root,
        });
        let (accepting, _) = earley.close(program);
        earley.accepting = accepting || program.rules[root as usize].nullable;
        earley.commit();
        earley
    }

    /// Consumes code point `ch`; on failure nothing changes.
    pub(crate) fn advance(&mut self, program: &Program, ch: char) -> bool {
        self.next.clear();
        for item in &self.current.items {
            for scan in program.scans_of(item.state) {
                if program.scan_matches(scan, ch) {
                    self.next.insert(Item {
                        state: scan.target,
                        origin: item.origin,
                        ret: item.ret,
                    });
                }
            }
        }
        self.finish_step(program)
    }

    /// Consumes the longest prefix of `bytes` (ASCII only) that keeps a lone item in a
    /// self-loop, as inside a string; returns how many bytes it consumed. Each consumed
    /// byte gets an empty set in the chart, as `advance` would give it.
    #[inline]
    pub(crate) fn advance_run(&mut self, program: &Program, bytes: &[u8]) -> usize {
        let [item] = self.current.items[..] else {
            return 0;
        };
        let run = program.run_ascii[item.state as usize];
        if run == 0 {
            return 0;
        }
        let n = bytes
            .iter()
            .position(|&byte| byte >= 128 || run >> byte & 1 == 0)
            .unwrap_or(bytes.len());
        if n > 0 {
            let mark = self.chart.waiters.len() as u32;
            self.chart.bounds.resize(self.chart.bounds.len() + n, mark);
            self.accepting = false;
        }
        n
    }

    /// Consumes token `id`; on failure nothing changes.
    pub(crate) fn advance_token(&mut self, program: &Program, id: u32) -> bool {
        self.next.clear();
        for item in &self.current.items {
            for scan in program.scans_of(item.state) {
                let matches = match scan.kind {
                    ScanKind::Token(want) => want == id,
                    ScanKind::NotToken(unwanted) => unwanted != id,
                    ScanKind::Class(_) | ScanKind::Any | ScanKind::Never => false,
                };
                if matches {
                    self.next.insert(Item {
                        state: scan.target,
                        origin: item.origin,
                        ret: item.ret,
                    });
                }
            }
        }
        self.finish_step(program)
    }

    /// Whether some terminal (character or token) may come next.
    pub(crate) fn can_continue(&self, program: &Program) -> bool {
        self.current
            .items
            .iter()
            .any(|item| !program.scans_of(item.state).is_empty())
    }

    fn finish_step(&mut self, program: &Program) -> bool {
        if self.next.items.is_empty() {
            return false;
        }
        let mark = self.chart.waiters.len();
        let (accepting, alive) = self.close(program);
        if !accepting && !alive {
            self.chart.waiters.truncate(mark);
            return false;
        }
        self.accepting = accepting;
        self.commit();
        true
    }

    /// Makes `next` the current set and records its waiters in the chart.
    fn commit(&mut self) {
        self.chart.bounds.push(self.chart.waiters.len() as u32);
        std::mem::swap(&mut self.current, &mut self.next);
    }

    /// Runs prediction and completion over `next` until no new items appear. Returns
    /// whether the start rule has matched all input and whether any item can scan.
    fn close(&mut self, program: &Program) -> (bool, bool) {
        let cur = self.chart.next_id();
        let root = program.root;
        let mut accepting = false;
        let mut alive = false;
        let mut idx = 0;
        while idx < self.next.items.len() {
            let item = self.next.items[idx];
            idx += 1;
            let info = program.states[item.state as usize];
            if info.scan_lo != info.scan_hi {
                alive = true;
            }
            for call in &program.calls[info.call_lo as usize..info.call_hi as usize] {
                let callee = &program.rules[call.rule as usize];
                if call.tail {
                    self.next.insert(Item {
                        state: callee.start,
                        origin: item.origin,
                        ret: item.ret,
                    });
                    continue;
                }
                self.chart.waiters.push(Waiter {
                    rule: call.rule,
                    target: call.target,
                    origin: item.origin,
                    ret: item.ret,
                });
                self.next.insert(Item {
                    state: callee.start,
                    origin: cur,
                    ret: call.rule,
                });
                if callee.nullable {
                    self.next.insert(Item {
                        state: call.target,
                        origin: item.origin,
                        ret: item.ret,
                    });
                }
            }
            // A completion over an empty span needs no work: the rule is nullable, and
            // whoever predicted it here has already stepped over it.
            if info.is_final && item.origin != cur {
                if item.ret == root && item.origin == 0 {
                    accepting = true;
                }
                let lo = self.chart.bounds[item.origin as usize] as usize;
                let hi = self.chart.bounds[item.origin as usize + 1] as usize;
                for j in lo..hi {
                    let waiter = self.chart.waiters[j];
                    if waiter.rule == item.ret {
                        self.next.insert(Item {
                            state: waiter.target,
                            origin: waiter.origin,
                            ret: waiter.ret,
                        });
                    }
                }
            }
        }
        (accepting, alive)
    }
}
