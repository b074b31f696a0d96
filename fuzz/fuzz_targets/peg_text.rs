//! Fuzzes the `.peg` reader and what follows it: arbitrary text must read or fail cleanly,
//! and a parser that reads must lower (eagerly and lazily) to GBNF that reads back, and parse
//! arbitrary input, all without panicking.
//!
//! Input: `.peg` text, optionally followed by a NUL byte and an input for the parser.

#![no_main]

use gbnf_peg::{lower, parse_bytes, parse_peg, LowerOptions, Options};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (source, input) = match data.iter().position(|&b| b == 0) {
        Some(split) => (&data[..split], &data[split + 1..]),
        None => (data, &[][..]),
    };
    let Ok(source) = std::str::from_utf8(source) else {
        return;
    };
    let Ok(arena) = parse_peg(source) else {
        return;
    };
    for lazy in [false, true] {
        let options = LowerOptions {
            lazy,
            ..LowerOptions::default()
        };
        if let Ok(lowered) = lower(&arena, &options) {
            let printed = gbnf::print(&lowered.grammar);
            assert!(
                gbnf::read(&printed).is_ok(),
                "printed grammar does not read:\n{printed}"
            );
        }
    }
    for partial in [false, true] {
        let _ = parse_bytes(&arena, input, &Options { partial });
    }
});
