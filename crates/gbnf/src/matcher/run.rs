//! The Earley recognizer over the compiled automata: item sets, prediction, completion
//! with the Aycock–Horspool treatment of nullable rules, tail calls, and scanning.
//!
//! An item is `(state, origin, ret)`: the automaton is in `state`, the rule instance began
//! at set `origin`, and when it finishes, rule `ret` has been matched from `origin` (`ret`
//! is the state's own rule unless the item was reached through tail calls). Only what
//! completion needs is kept for past sets: the *waiters*, items stopped in front of a
//! non-tail call. Sets that predicted nothing keep nothing.

use std::sync::Arc;

use crate::matcher::compile::{Program, ScanKind};

/// Marks an empty slot in the dedup hash table.
const EMPTY: u32 = u32::MAX;

/// Waiter lists longer than this are searched by bisection rather than scanned.
const BISECT_LIMIT: usize = 8;

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

/// Sets per chart block. Full blocks are frozen and shared between clones of a state.
const BLOCK_SETS: usize = 1024;

/// The waiters of every set, in blocks of `BLOCK_SETS` sets. Full blocks are immutable and
/// shared (`Arc`), so cloning a state copies one pointer per block plus the last block.
#[derive(Clone, Debug)]
pub(crate) struct Chart {
    frozen: Vec<Arc<Block>>,
    tail: Block,
    /// Waiters in all blocks, for the size limit.
    n_waiters: usize,
}

/// Set `i` of a block owns `waiters[bounds[i]..bounds[i + 1]]`; the set under
/// construction owns `waiters[bounds.last()..]`.
#[derive(Clone, Debug)]
struct Block {
    waiters: Vec<Waiter>,
    bounds: Vec<u32>,
}

impl Block {
    fn with_capacity(sets: usize, waiters: usize) -> Block {
        let mut bounds = Vec::with_capacity(sets + 1);
        bounds.push(0);
        Block {
            waiters: Vec::with_capacity(waiters),
            bounds,
        }
    }
}

impl Chart {
    fn new(capacity: usize) -> Chart {
        let tail = Block::with_capacity(capacity.min(BLOCK_SETS), 0);
        Chart {
            frozen: Vec::with_capacity(capacity / BLOCK_SETS + 1),
            tail,
            n_waiters: 0,
        }
    }

    /// The id the next set will get.
    #[inline]
    fn next_id(&self) -> u32 {
        (self.frozen.len() * BLOCK_SETS + self.tail.bounds.len() - 1) as u32
    }

    /// Where the set under construction begins.
    fn mark(&self) -> usize {
        *self.tail.bounds.last().unwrap_or(&0) as usize
    }

    #[inline]
    fn push(&mut self, waiter: Waiter) {
        self.tail.waiters.push(waiter);
    }

    /// Drops the set under construction.
    fn discard(&mut self) {
        let mark = self.mark();
        self.tail.waiters.truncate(mark);
    }

    /// Ends the set under construction, its waiters sorted by rule so that large sets
    /// can be searched by bisection.
    #[inline]
    fn commit(&mut self) {
        let mark = self.mark();
        let set_waiters = &mut self.tail.waiters[mark..];
        self.n_waiters += set_waiters.len();
        if set_waiters.len() > 1 {
            set_waiters.sort_unstable_by_key(|waiter| waiter.rule);
        }
        self.tail.bounds.push(self.tail.waiters.len() as u32);
        self.freeze_if_full();
    }

    /// Commits `n` sets without waiters.
    fn commit_empty(&mut self, mut n: usize) {
        while n > 0 {
            let room = BLOCK_SETS + 1 - self.tail.bounds.len();
            let take = n.min(room);
            let end = self.tail.waiters.len() as u32;
            self.tail.bounds.resize(self.tail.bounds.len() + take, end);
            n -= take;
            self.freeze_if_full();
        }
    }

    #[inline]
    fn freeze_if_full(&mut self) {
        if self.tail.bounds.len() > BLOCK_SETS {
            self.freeze();
        }
    }

    #[cold]
    fn freeze(&mut self) {
        if self.tail.bounds.len() > BLOCK_SETS {
            // The next block will likely need as much room as this one.
            let next = Block::with_capacity(BLOCK_SETS, self.tail.waiters.len());
            let full = std::mem::replace(&mut self.tail, next);
            self.frozen.push(Arc::new(full));
        }
    }

    /// The waiters of committed set `set`.
    #[inline]
    fn waiters_of(&self, set: u32) -> &[Waiter] {
        let block_idx = set as usize / BLOCK_SETS;
        let local = set as usize % BLOCK_SETS;
        let block = match self.frozen.get(block_idx) {
            Some(block) => block,
            None => &self.tail,
        };
        match (block.bounds.get(local), block.bounds.get(local + 1)) {
            (Some(&lo), Some(&hi)) => &block.waiters[lo as usize..hi as usize],
            _ => &[],
        }
    }

    fn n_sets(&self) -> usize {
        self.next_id() as usize
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
    /// Work done so far: items added to a set (by a scan, a prediction or a completion),
    /// and the waiters that completions find in long lists (`BISECT_LIMIT`).
    steps: u64,
    /// The most steps allowed; past it, the current step gives up (`gave_up`). It grows by
    /// `step_allowance` with each position taken.
    pub(crate) step_limit: u64,
    pub(crate) step_allowance: u64,
    /// A step was abandoned at the step limit: the state is that before it, and its
    /// verdict unknown.
    pub(crate) gave_up: bool,
}

impl Earley {
    /// The state before any input, with room for `capacity` code points.
    pub(crate) fn start(program: &Program, capacity: usize) -> Earley {
        let mut earley = Earley {
            chart: Chart::new(capacity),
            current: ItemSet::default(),
            accepting: false,
            next: ItemSet::default(),
            steps: 0,
            step_limit: u64::MAX,
            step_allowance: 0,
            gave_up: false,
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
        let code = ch as u32;
        if code < 128 {
            // Most items cannot take a given ASCII code point: one bit test per item.
            let (word, bit) = ((code / 64) as usize, code % 64);
            for item in &self.current.items {
                if program.ascii_any[item.state as usize][word] >> bit & 1 == 0 {
                    continue;
                }
                for scan in program.scans_of(item.state) {
                    if scan.ascii_words[word] >> bit & 1 != 0 {
                        self.next.insert(Item {
                            state: scan.target,
                            origin: item.origin,
                            ret: item.ret,
                        });
                    }
                }
            }
            return self.finish_step(program);
        }
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
        if self.steps > self.step_limit {
            return 0;
        }
        let run = program.run_ascii[item.state as usize];
        if run == 0 {
            return 0;
        }
        let n = bytes
            .iter()
            .position(|&byte| byte >= 128 || run >> byte & 1 == 0)
            .unwrap_or(bytes.len());
        let room = (u32::MAX as usize - 1).saturating_sub(self.chart.n_sets());
        let n = n.min(room);
        if n > 0 {
            self.steps += n as u64;
            self.step_limit = (n as u64)
                .saturating_mul(self.step_allowance)
                .saturating_add(self.step_limit);
            self.chart.commit_empty(n);
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

    /// Work done so far, in the units of `step_limit`.
    pub(crate) fn steps(&self) -> u64 {
        self.steps
    }

    fn finish_step(&mut self, program: &Program) -> bool {
        // Set ids and waiter offsets are u32: refuse input beyond them rather than wrap.
        let full = self.chart.n_sets() >= u32::MAX as usize - 1
            || self.chart.n_waiters >= (u32::MAX / 2) as usize;
        if self.next.items.is_empty() || full {
            return false;
        }
        if self.steps > self.step_limit {
            self.gave_up = true;
            return false;
        }
        let (accepting, alive) = self.close(program);
        if !accepting && !alive {
            self.chart.discard();
            return false;
        }
        self.accepting = accepting;
        self.commit();
        self.step_limit = self.step_limit.saturating_add(self.step_allowance);
        true
    }

    /// Makes `next` the current set and records its waiters in the chart.
    fn commit(&mut self) {
        self.chart.commit();
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
        // Waiters looked at in long lists, counted apart from `steps` so that the count stays
        // in a register. The limit is checked before each closure, not inside it: checks in
        // this loop cost about 3% of the matcher's time on JSON, and a run past the limit
        // overshoots it by one position's work at most.
        let mut looked: u64 = 0;
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
                self.chart.push(Waiter {
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
                let waiters = self.chart.waiters_of(item.origin);
                let first = if waiters.len() > BISECT_LIMIT {
                    // Long lists are what make a set's work grow with the input (the cubic
                    // cases): their waiters of this rule count as steps. Short ones cost a
                    // bounded amount per item, already counted.
                    let first = waiters.partition_point(|waiter| waiter.rule < item.ret);
                    let n = waiters[first..].partition_point(|waiter| waiter.rule == item.ret);
                    looked += n as u64 + 1;
                    first
                } else {
                    0
                };
                for waiter in &waiters[first..] {
                    if waiter.rule == item.ret {
                        self.next.insert(Item {
                            state: waiter.target,
                            origin: waiter.origin,
                            ret: waiter.ret,
                        });
                    } else if waiter.rule > item.ret {
                        break;
                    }
                }
            }
        }
        // (No overflow: a u64 of steps is far beyond any run's time.)
        self.steps += idx as u64 + looked;
        (accepting, alive)
    }
}
