//! The character classes of `chars(...)`: llama.cpp's small class syntax, parsed into sorted
//! code-point ranges with an ASCII bitmap for the hot loop.

use crate::scan::ScanTable;

/// A set of code points written as a class such as `[^a-z\u00e9]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CharSet {
    /// Inclusive ranges, sorted and merged, before negation.
    pub(crate) ranges: Vec<(u32, u32)>,
    pub(crate) negated: bool,
    /// Membership of the 128 ASCII code points, negation applied.
    ascii: [u64; 2],
    /// The bytes a run of the class does not take as one-byte characters: the ASCII code
    /// points outside it and every byte from 0x80 (a stream's quick path stops at those).
    pub(crate) stops: Box<ScanTable>,
}

impl CharSet {
    /// Parses a class: optional surrounding `[` `]`, a leading `^` negates, escapes `\n \t \r
    /// \\ \] \[ \xHH \uHHHH \UHHHHHHHH`, any other `\c` is `c`, `a-b` is a range and a dash
    /// at the end is literal. Never fails: a malformed escape is taken literally.
    pub(crate) fn parse(pattern: &str) -> CharSet {
        let mut content = pattern.strip_prefix('[').unwrap_or(pattern);
        content = content.strip_suffix(']').unwrap_or(content);
        let negated = content.starts_with('^');
        if negated {
            content = &content[1..];
        }
        let chars: Vec<char> = content.chars().collect();
        let mut ranges = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let (first, len) = class_char(&chars, i);
            i += len;
            if i + 1 < chars.len() && chars[i] == '-' {
                let (last, len) = class_char(&chars, i + 1);
                i += 1 + len;
                if first <= last {
                    ranges.push((first, last));
                }
            } else {
                ranges.push((first, first));
            }
        }
        ranges.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(ranges.len());
        for (lo, hi) in ranges {
            match merged.last_mut() {
                Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
                _ => merged.push((lo, hi)),
            }
        }
        let mut ascii = [0u64; 2];
        for cp in 0..128u32 {
            let inside = merged.iter().any(|&(lo, hi)| lo <= cp && cp <= hi);
            if inside != negated {
                ascii[(cp / 64) as usize] |= 1 << (cp % 64);
            }
        }
        let mut stops = [true; 256];
        for byte in 0..128u8 {
            stops[byte as usize] = ascii[(byte / 64) as usize] & (1 << (byte % 64)) == 0;
        }
        let stops = Box::new(ScanTable::stopping_at(&stops));
        CharSet {
            ranges: merged,
            negated,
            ascii,
            stops,
        }
    }

    #[inline]
    pub(crate) fn contains_ascii(&self, byte: u8) -> bool {
        debug_assert!(byte < 128);
        self.ascii[(byte / 64) as usize] & (1 << (byte % 64)) != 0
    }

    #[inline]
    pub(crate) fn contains(&self, cp: u32) -> bool {
        if cp < 128 {
            return self.contains_ascii(cp as u8);
        }
        let inside = match self.ranges.binary_search_by(|&(lo, _)| lo.cmp(&cp)) {
            Ok(_) => true,
            Err(0) => false,
            Err(idx) => cp <= self.ranges[idx - 1].1,
        };
        inside != self.negated
    }
}

/// One (possibly escaped) character of a class at `chars[i]`: its code point and how many
/// chars it took.
fn class_char(chars: &[char], i: usize) -> (u32, usize) {
    if chars[i] != '\\' || i + 1 >= chars.len() {
        return (chars[i] as u32, 1);
    }
    let hex = |digits: usize| -> Option<u32> {
        let text = chars.get(i + 2..i + 2 + digits)?;
        text.iter()
            .try_fold(0u32, |acc, c| Some(acc * 16 + c.to_digit(16)?))
    };
    match chars[i + 1] {
        'x' => hex(2).map_or(('x' as u32, 2), |v| (v, 4)),
        'u' => hex(4).map_or(('u' as u32, 2), |v| (v, 6)),
        'U' => hex(8).map_or(('U' as u32, 2), |v| (v, 10)),
        'n' => ('\n' as u32, 2),
        't' => ('\t' as u32, 2),
        'r' => ('\r' as u32, 2),
        other => (other as u32, 2),
    }
}

#[cfg(test)]
mod tests {
    use super::CharSet;

    #[test]
    fn classes() {
        let set = CharSet::parse("[a-c\\u00e9-]");
        assert!(set.contains('b' as u32) && set.contains('-' as u32) && set.contains(0xe9));
        assert!(!set.contains('d' as u32));
        let set = CharSet::parse("[^0-9]");
        assert!(set.negated && !set.contains('5' as u32) && set.contains(0x4e00));
        let set = CharSet::parse("[\\U0001F600-\\U0001F64F]");
        assert!(set.contains(0x1F600) && !set.contains(0x1F650));
        let set = CharSet::parse("");
        assert!(set.ranges.is_empty());
        let set = CharSet::parse("[\\x4]");
        assert!(set.contains('x' as u32) && set.contains('4' as u32));
    }
}
