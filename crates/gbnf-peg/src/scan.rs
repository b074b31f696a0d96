//! Byte-level helpers of the runtime's leaves: UTF-8 decoding with llama.cpp's
//! complete / incomplete / invalid distinction, and the delimiter trie of `until`.

use crate::node::Node;

/// The code point at an offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Utf8 {
    /// A code point of `len` bytes.
    Char { len: usize, cp: u32 },
    /// The input ends inside a sequence that is valid so far (or at the offset itself).
    Incomplete,
    /// Not UTF-8 (bad lead byte, bad continuation, overlong, surrogate, > U+10FFFF).
    Invalid,
}

/// Decodes the code point at `pos`.
pub(crate) fn decode(input: &[u8], pos: usize) -> Utf8 {
    let Some(&lead) = input.get(pos) else {
        return Utf8::Incomplete;
    };
    let (len, min_second, max_second, init) = match lead {
        0x00..=0x7F => {
            return Utf8::Char {
                len: 1,
                cp: lead as u32,
            }
        }
        0xC2..=0xDF => (2, 0x80, 0xBF, (lead & 0x1F) as u32),
        0xE0 => (3, 0xA0, 0xBF, (lead & 0x0F) as u32),
        0xE1..=0xEC | 0xEE..=0xEF => (3, 0x80, 0xBF, (lead & 0x0F) as u32),
        0xED => (3, 0x80, 0x9F, (lead & 0x0F) as u32),
        0xF0 => (4, 0x90, 0xBF, (lead & 0x07) as u32),
        0xF1..=0xF3 => (4, 0x80, 0xBF, (lead & 0x07) as u32),
        0xF4 => (4, 0x80, 0x8F, (lead & 0x07) as u32),
        _ => return Utf8::Invalid,
    };
    let mut cp = init;
    for i in 1..len {
        let Some(&byte) = input.get(pos + i) else {
            return Utf8::Incomplete;
        };
        let (lo, hi) = if i == 1 {
            (min_second, max_second)
        } else {
            (0x80, 0xBF)
        };
        if !(lo <= byte && byte <= hi) {
            return Utf8::Invalid;
        }
        cp = (cp << 6) | (byte & 0x3F) as u32;
    }
    Utf8::Char { len, cp }
}

/// The length of the UTF-8 sequence led by `lead`, for text known to be valid.
#[inline]
pub(crate) fn width(lead: u8) -> usize {
    match lead {
        0x00..=0xDF if lead < 0x80 => 1,
        0x00..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    }
}

/// The length of the longest valid UTF-8 prefix of `input[from..]`, plus `from`, and whether
/// the rest is only a truncated sequence (so more input may make it valid).
#[inline]
pub(crate) fn valid_end(input: &[u8], from: usize) -> (usize, bool) {
    let tail = &input[from..];
    // A stream's token: a loop costs less than `from_utf8`'s setup.
    if tail.len() <= SHORT {
        let (end, truncated) = short_valid_end(tail);
        return (from + end, truncated);
    }
    match std::str::from_utf8(tail) {
        Ok(_) => (input.len(), false),
        Err(err) => (from + err.valid_up_to(), err.error_len().is_none()),
    }
}

/// Inputs up to this long are validated by `short_valid_end`.
const SHORT: usize = 16;

/// `valid_end` of a short input from its start, with an automaton over byte classes (the
/// ranges of the Unicode standard's table 3-7: no overlong forms, surrogates or code points
/// past U+10FFFF). No branch depends on the bytes: a stream's tokens of text in several
/// scripts made a sequence-by-sequence loop mispredict about twice a token, which cost more
/// than its instructions. The automaton is shift-based (`utf8::ROW`): a state is a bit
/// offset, and a byte's step is one shift of a word that depends on the byte alone, so the
/// chain from one byte's state to the next is a shift, not a table load.
#[inline(never)]
fn short_valid_end(bytes: &[u8]) -> (usize, bool) {
    let mut state = utf8::at(utf8::ACCEPT);
    // The end of the last complete sequence: `valid_up_to`, if the automaton rejects later
    // or stops inside a sequence.
    let mut complete = 0;
    for (at, &byte) in bytes.iter().enumerate() {
        state = utf8::ROW[byte as usize] >> state & utf8::MASK;
        if state == utf8::at(utf8::ACCEPT) {
            complete = at + 1;
        }
    }
    if state == utf8::at(utf8::ACCEPT) {
        (bytes.len(), false)
    } else {
        (complete, state != utf8::at(utf8::REJECT))
    }
}

/// The tables of `short_valid_end`'s automaton.
mod utf8 {
    /// Between sequences (the start state).
    pub(super) const ACCEPT: u8 = 0;
    /// Invalid: the state stays there.
    pub(super) const REJECT: u8 = 1;
    /// Inside a sequence: 1, 2 or 3 continuation bytes to come.
    const TAIL1: u8 = 2;
    const TAIL2: u8 = 3;
    const TAIL3: u8 = 4;
    /// After a lead whose second byte has a narrower range: E0 (A0..BF), ED (80..9F),
    /// F0 (90..BF), F4 (80..8F).
    const AFTER_E0: u8 = 5;
    const AFTER_ED: u8 = 6;
    const AFTER_F0: u8 = 7;
    const AFTER_F4: u8 = 8;

    // Byte classes: ASCII; the continuation bytes in three ranges; bytes that never occur;
    // and the leads, by what they expect next.
    const ASCII: u8 = 0;
    const CONT_80: u8 = 1;
    const CONT_90: u8 = 2;
    const CONT_A0: u8 = 3;
    const NEVER: u8 = 4;
    const LEAD2: u8 = 5;
    const LEAD_E0: u8 = 6;
    const LEAD3: u8 = 7;
    const LEAD_ED: u8 = 8;
    const LEAD_F0: u8 = 9;
    const LEAD4: u8 = 10;
    const LEAD_F4: u8 = 11;
    const CLASSES: usize = 12;

    const CLASS: [u8; 256] = {
        let mut class = [NEVER; 256];
        let mut byte = 0;
        while byte < 256 {
            class[byte] = match byte {
                0x00..=0x7F => ASCII,
                0x80..=0x8F => CONT_80,
                0x90..=0x9F => CONT_90,
                0xA0..=0xBF => CONT_A0,
                0xC2..=0xDF => LEAD2,
                0xE0 => LEAD_E0,
                0xE1..=0xEC | 0xEE..=0xEF => LEAD3,
                0xED => LEAD_ED,
                0xF0 => LEAD_F0,
                0xF1..=0xF3 => LEAD4,
                0xF4 => LEAD_F4,
                _ => NEVER,
            };
            byte += 1;
        }
        class
    };

    const NEXT: [[u8; CLASSES]; 9] = {
        let mut next = [[REJECT; CLASSES]; 9];
        next[ACCEPT as usize][ASCII as usize] = ACCEPT;
        next[ACCEPT as usize][LEAD2 as usize] = TAIL1;
        next[ACCEPT as usize][LEAD_E0 as usize] = AFTER_E0;
        next[ACCEPT as usize][LEAD3 as usize] = TAIL2;
        next[ACCEPT as usize][LEAD_ED as usize] = AFTER_ED;
        next[ACCEPT as usize][LEAD_F0 as usize] = AFTER_F0;
        next[ACCEPT as usize][LEAD4 as usize] = TAIL3;
        next[ACCEPT as usize][LEAD_F4 as usize] = AFTER_F4;
        let mut cont = CONT_80;
        while cont <= CONT_A0 {
            next[TAIL1 as usize][cont as usize] = ACCEPT;
            next[TAIL2 as usize][cont as usize] = TAIL1;
            next[TAIL3 as usize][cont as usize] = TAIL2;
            cont += 1;
        }
        next[AFTER_E0 as usize][CONT_A0 as usize] = TAIL1;
        next[AFTER_ED as usize][CONT_80 as usize] = TAIL1;
        next[AFTER_ED as usize][CONT_90 as usize] = TAIL1;
        next[AFTER_F0 as usize][CONT_90 as usize] = TAIL2;
        next[AFTER_F0 as usize][CONT_A0 as usize] = TAIL2;
        next[AFTER_F4 as usize][CONT_80 as usize] = TAIL2;
        next
    };

    /// A state's bit offset in a `ROW` word.
    pub(super) const fn at(state: u8) -> u64 {
        state as u64 * 6
    }
    pub(super) const MASK: u64 = 63;

    /// `ROW[byte]` holds, at each state's offset, the offset of the state after `byte`.
    pub(super) static ROW: [u64; 256] = {
        let mut row = [0u64; 256];
        let mut byte = 0;
        while byte < 256 {
            let mut state = 0;
            while state < NEXT.len() {
                let next = NEXT[state][CLASS[byte] as usize];
                row[byte] |= at(next) << at(state as u8);
                state += 1;
            }
            byte += 1;
        }
        row
    };
}

/// How the delimiters of an `until` relate to the input at one offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TrieMatch {
    None,
    /// The input ends inside a delimiter.
    Partial,
    /// A delimiter (the shortest one) starts here.
    Complete,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct TrieNode {
    /// Sorted by byte.
    edges: Vec<(u8, u32)>,
    is_word: bool,
}

/// The compiled delimiters of an `until` node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UntilScanner {
    trie: Vec<TrieNode>,
    /// Bytes that start a delimiter.
    first: [bool; 256],
    /// `first` as the quick path's table.
    table: ScanTable,
    /// The only byte that starts a delimiter, when there is exactly one.
    single: Option<u8>,
    any_first: bool,
}

impl UntilScanner {
    pub(crate) fn for_node(node: &Node) -> Option<UntilScanner> {
        let Node::Until { delimiters } = node else {
            return None;
        };
        let mut trie = vec![TrieNode {
            edges: Vec::new(),
            is_word: false,
        }];
        let mut first = [false; 256];
        for delimiter in delimiters {
            let bytes = delimiter.as_bytes();
            let Some(&lead) = bytes.first() else {
                continue;
            };
            first[lead as usize] = true;
            let mut current = 0usize;
            for &byte in bytes {
                let edges = &trie[current].edges;
                current = match edges.binary_search_by_key(&byte, |&(b, _)| b) {
                    Ok(at) => edges[at].1 as usize,
                    Err(at) => {
                        let next = trie.len();
                        trie[current].edges.insert(at, (byte, next as u32));
                        trie.push(TrieNode {
                            edges: Vec::new(),
                            is_word: false,
                        });
                        next
                    }
                };
            }
            trie[current].is_word = true;
        }
        let firsts: Vec<u8> = (0..=255u8).filter(|&b| first[b as usize]).collect();
        let mut table = ScanTable::stopping_at(&first);
        // What may come second after a byte that starts a delimiter: every byte if a
        // delimiter is that byte alone.
        let mut second = [false; 256];
        for delimiter in delimiters {
            match delimiter.as_bytes() {
                [] => {}
                [_] => second = [true; 256],
                [_, next, ..] => second[*next as usize] = true,
            }
        }
        table.1 = second;
        Some(UntilScanner {
            trie,
            single: if firsts.len() == 1 {
                Some(firsts[0])
            } else {
                None
            },
            any_first: !firsts.is_empty(),
            first,
            table,
        })
    }

    /// The quick path's table: stops at the bytes that start a delimiter.
    pub(crate) fn table(&self) -> &ScanTable {
        &self.table
    }

    /// The first offset in `from..to` whose byte starts a delimiter, or `to`.
    #[inline]
    pub(crate) fn next_candidate(&self, input: &[u8], from: usize, to: usize) -> usize {
        if !self.any_first {
            return to;
        }
        let hay = &input[from..to];
        let found = match self.single {
            Some(byte) => find_byte(byte, hay),
            None => hay.iter().position(|&b| self.first[b as usize]),
        };
        found.map_or(to, |at| from + at)
    }

    /// Whether a delimiter starts at `pos` (llama.cpp stops at the first complete word).
    pub(crate) fn check_at(&self, input: &[u8], pos: usize) -> TrieMatch {
        let mut current = 0usize;
        for &byte in &input[pos..] {
            let edges = &self.trie[current].edges;
            match edges.binary_search_by_key(&byte, |&(b, _)| b) {
                Ok(at) => current = edges[at].1 as usize,
                Err(_) => return TrieMatch::None,
            }
            if self.trie[current].is_word {
                return TrieMatch::Complete;
            }
        }
        if current == 0 {
            TrieMatch::None
        } else {
            TrieMatch::Partial
        }
    }
}

/// What a scan does at each byte, as a table: one load a byte in `StreamParser`'s quick
/// path, which ORs the entries of a feed's bytes together and decides once. For the body of
/// an `until` (`STOP`: the bytes that start a delimiter), and for a run of white space or of
/// class chars (`STOP`: the bytes the run does not take, and every byte from 0x80).
///
/// The second array is for a `STOP` byte that a later byte of the same feed shows to start
/// nothing: the bytes that may come second in what a `STOP` byte starts (for an `until`, the
/// second bytes of its delimiters; every byte where a `STOP` byte is a stop on its own).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ScanTable(pub(crate) [u8; 256], pub(crate) [bool; 256]);

impl ScanTable {
    /// The scan goes on.
    pub(crate) const ON: u8 = 0;
    /// The scan may stop here (decided elsewhere).
    pub(crate) const STOP: u8 = 1;
    /// A byte of a code point of two bytes or more: the scan goes on if the UTF-8 is valid.
    pub(crate) const WIDE: u8 = 2;

    /// The table that stops at `stops` and goes on over every other valid code point.
    pub(crate) const fn stopping_at(stops: &[bool; 256]) -> ScanTable {
        let mut table = [ScanTable::ON; 256];
        let mut byte = 0;
        while byte < 256 {
            table[byte] = if stops[byte] {
                ScanTable::STOP
            } else if byte >= 0x80 {
                ScanTable::WIDE
            } else {
                ScanTable::ON
            };
            byte += 1;
        }
        ScanTable(table, [true; 256])
    }

    /// For `StreamParser`'s quick path, a feed's bytes (with a code point cut before them,
    /// if any) that are not all `ON`: the length of their valid UTF-8 prefix, if every `STOP`
    /// byte among them is followed in them by a byte that cannot come second in what it
    /// starts (an `until`'s `<` followed by `b` starts no `<tool_call>`, so the scan goes on
    /// over it as the leaf would), and the rest is a code point cut by the end; else `None`.
    ///
    /// One pass and no branch on the bytes: in a stream's prose, which feeds have a `STOP`
    /// byte and which a code point of several bytes is unpredictable, and branching on each
    /// (two checks, each out of line) cost more (`PERFORMANCE.md`, session 26). The UTF-8
    /// automaton is `short_valid_end`'s.
    #[inline(never)]
    pub(crate) fn quick_verdict(&self, bytes: &[u8]) -> Option<usize> {
        let Some((&last, rest)) = bytes.split_last() else {
            return Some(0);
        };
        let mut starts = self.0[last as usize] & ScanTable::STOP;
        let mut state = utf8::at(utf8::ACCEPT);
        let mut complete = 0;
        for (at, (&byte, &next)) in rest.iter().zip(&bytes[1..]).enumerate() {
            starts |= self.0[byte as usize] & ScanTable::STOP & self.1[next as usize] as u8;
            state = utf8::ROW[byte as usize] >> state & utf8::MASK;
            complete = if state == utf8::at(utf8::ACCEPT) {
                at + 1
            } else {
                complete
            };
        }
        state = utf8::ROW[last as usize] >> state & utf8::MASK;
        let end = if state == utf8::at(utf8::ACCEPT) {
            bytes.len()
        } else {
            complete
        };
        (starts == 0 && state != utf8::at(utf8::REJECT)).then_some(end)
    }
}

impl std::fmt::Debug for ScanTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let stops = (0..=255u8).filter(|&b| self.0[b as usize] == ScanTable::STOP);
        f.debug_set().entries(stops).finish()
    }
}

/// The first index of `needle` in `hay`: eight bytes at a time (SWAR), no allocation.
#[inline]
pub(crate) fn find_byte(needle: u8, hay: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let pattern = LO * needle as u64;
    let mut chunks = hay.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word) ^ pattern;
        let found = x.wrapping_sub(LO) & !x & HI;
        if found != 0 {
            return Some(offset + (found.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| b == needle)
        .map(|at| offset + at)
}

/// Whether the last `n` bytes of `input` are ASCII. A token is a few bytes, and `is_ascii` on a
/// short slice is a loop over them: up to 8, one word that ends at the end of input is tested
/// at once, its bytes before the last `n` masked off.
#[inline(always)]
pub(crate) fn ends_ascii(input: &[u8], n: usize) -> bool {
    const HI: u64 = 0x8080_8080_8080_8080;
    let len = input.len();
    match input.get(len.wrapping_sub(8)..) {
        Some(word) if (1..=8).contains(&n) => {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(word);
            u64::from_le_bytes(bytes) & (HI << (8 * (8 - n))) == 0
        }
        _ => input[len - n.min(len)..].is_ascii(),
    }
}

/// Appends `chunk` to `input`. A token is a few bytes, and copying a slice whose length is
/// known only at run time calls `memcpy`, whose call and size dispatch cost more than the
/// copy: about 15 instructions of the ~90 that an ASCII token's whole feed takes. Up to 8
/// bytes, the length selects a copy of that fixed size instead (one jump through a table).
#[inline(always)]
pub(crate) fn append(input: &mut Vec<u8>, chunk: &[u8]) {
    #[inline(always)]
    fn fixed<const N: usize>(input: &mut Vec<u8>, chunk: &[u8]) {
        if let Ok(bytes) = <&[u8; N]>::try_from(chunk) {
            input.extend_from_slice(bytes);
        }
    }
    match chunk.len() {
        1 => input.push(chunk[0]),
        2 => fixed::<2>(input, chunk),
        3 => fixed::<3>(input, chunk),
        4 => fixed::<4>(input, chunk),
        5 => fixed::<5>(input, chunk),
        6 => fixed::<6>(input, chunk),
        7 => fixed::<7>(input, chunk),
        8 => fixed::<8>(input, chunk),
        _ => input.extend_from_slice(chunk),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A feed's stop bytes that the next byte of the same feed shows to start no delimiter
    /// do not stop the quick path; one at the end of the feed, or followed by what may come
    /// second, does; and a delimiter of one byte stops it wherever it is. The same pass checks
    /// the UTF-8: a code point cut at the end leaves the valid prefix, invalid bytes fail.
    #[test]
    fn quick_verdicts() {
        let until = |delimiters: &[&str]| {
            let node = Node::Until {
                delimiters: delimiters.iter().map(|d| d.to_string()).collect(),
            };
            UntilScanner::for_node(&node).unwrap_or_else(|| panic!("no scanner"))
        };
        let tool = until(&["<tool_call>", "</tool_call>"]);
        let table = tool.table();
        for (bytes, verdict) in [
            (&b"a <b>"[..], Some(5)),
            (b"x < y", Some(5)),
            (b"<<b", Some(3)),
            (b"a <", None),
            (b"<tool", None),
            (b"a </", None),
            (b"<b <t", None),
            (b"no stop", Some(7)),
            ("r\u{e9}s".as_bytes(), Some(4)),
            (b"r\xc3", Some(1)),
            (b"\xe4\xbd", Some(0)),
            (b"\xf0\x9f\x9a\x80", Some(4)),
            (b"a\xf0\x9f\x9a", Some(1)),
            (b"<b\xc3", Some(2)),
            (b"<\xc3", Some(1)),
            (b"<t\xc3", None),
            (b"a\xff", None),
            (b"\xc3a", None),
            (b"\xed\xa0\x80", None),
            (b"\xc0\x80", None),
        ] {
            assert_eq!(table.quick_verdict(bytes), verdict, "{bytes:?}");
        }
        let single = until(&["<", "<tool_call>"]);
        assert_eq!(single.table().quick_verdict(b"a <b"), None);
        // A run's stops are stops.
        let mut stops = [false; 256];
        stops[b' ' as usize] = true;
        assert_eq!(ScanTable::stopping_at(&stops).quick_verdict(b"a b"), None);
    }

    /// `short_valid_end`, and `quick_verdict` on a table with no stops, against the standard
    /// library: every input of one or two bytes, and every input of three and four bytes over
    /// the bytes where the ranges change.
    #[test]
    fn short_valid_end_is_from_utf8s() {
        fn std_end(bytes: &[u8]) -> (usize, bool) {
            match std::str::from_utf8(bytes) {
                Ok(_) => (bytes.len(), false),
                Err(err) => (err.valid_up_to(), err.error_len().is_none()),
            }
        }
        let mut inputs: Vec<Vec<u8>> = Vec::new();
        for a in 0..=255u8 {
            inputs.push(vec![a]);
            for b in 0..=255u8 {
                inputs.push(vec![a, b]);
            }
        }
        let edges = [
            0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0,
            0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF,
        ];
        for &a in &edges {
            for &b in &edges {
                for &c in &edges {
                    inputs.push(vec![a, b, c]);
                    for &d in &edges {
                        inputs.push(vec![a, b, c, d]);
                        inputs.push(vec![b'x', a, b, c, d]);
                    }
                }
            }
        }
        inputs.push("aé你🚀".as_bytes().to_vec());
        let no_stops = ScanTable::stopping_at(&[false; 256]);
        for input in &inputs {
            assert_eq!(short_valid_end(input), std_end(input), "{input:02X?}");
            let (end, truncated) = std_end(input);
            let verdict = (end == input.len() || truncated).then_some(end);
            assert_eq!(no_stops.quick_verdict(input), verdict, "{input:02X?}");
            for from in 0..=input.len() {
                let (end, truncated) = std_end(&input[from..]);
                assert_eq!(
                    valid_end(input, from),
                    (from + end, truncated),
                    "{input:02X?}"
                );
            }
        }
    }

    #[test]
    fn utf8() {
        assert_eq!(decode(b"a", 0), Utf8::Char { len: 1, cp: 97 });
        assert_eq!(decode("é".as_bytes(), 0), Utf8::Char { len: 2, cp: 0xe9 });
        assert_eq!(decode(b"\xE4\xBD", 0), Utf8::Incomplete);
        assert_eq!(decode(b"", 0), Utf8::Incomplete);
        assert_eq!(decode(b"\xC3\x28", 0), Utf8::Invalid);
        assert_eq!(decode(b"\xC0\x80", 0), Utf8::Invalid);
        assert_eq!(decode(b"\xED\xA0\x80", 0), Utf8::Invalid);
        assert_eq!(
            decode("🚀".as_bytes(), 0),
            Utf8::Char {
                len: 4,
                cp: 0x1F680
            }
        );
    }

    #[test]
    fn find() {
        let hay = b"0123456789abcdef<ghij";
        for (i, &b) in hay.iter().enumerate() {
            assert_eq!(find_byte(b, hay), Some(i));
        }
        assert_eq!(find_byte(b'z', hay), None);
    }

    #[test]
    fn trie() {
        let node = Node::Until {
            delimiters: vec!["</tag>".into(), "<x".into()],
        };
        let scanner = UntilScanner::for_node(&node).unwrap_or_else(|| unreachable!());
        assert_eq!(scanner.check_at(b"a</tag>", 1), TrieMatch::Complete);
        assert_eq!(scanner.check_at(b"a</ta", 1), TrieMatch::Partial);
        assert_eq!(scanner.check_at(b"a<y", 1), TrieMatch::None);
        assert_eq!(scanner.check_at(b"<x", 0), TrieMatch::Complete);
        assert_eq!(scanner.next_candidate(b"abc<", 0, 4), 3);
    }

    #[test]
    fn ends_ascii_reads_only_the_last_bytes() {
        let input = b"\xff\xffabcdefgh\xe9z";
        for len in 0..=input.len() {
            for n in 0..=len + 2 {
                let want = input[len - n.min(len)..len].is_ascii();
                assert_eq!(ends_ascii(&input[..len], n), want, "{len} {n}");
            }
        }
    }

    #[test]
    fn append_copies_every_length() {
        let source: Vec<u8> = (1..=20).collect();
        for n in 0..=source.len() {
            let mut input = b"ab".to_vec();
            append(&mut input, &source[..n]);
            assert_eq!(input[2..], source[..n], "{n} bytes");
            assert_eq!(input[..2], *b"ab");
        }
    }
}
