//! Fuzzes the reader: any text either fails to read, or reads into a grammar whose printed
//! form reads back to the same grammar (and prints identically).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(grammar) = gbnf::read(text) else {
        return;
    };
    let printed = gbnf::print(&grammar);
    let reread = match gbnf::read(&printed) {
        Ok(reread) => reread,
        Err(error) => panic!("printed grammar does not read: {error}\n{printed}"),
    };
    assert_eq!(
        gbnf::print(&reread),
        printed,
        "printing is not a fixed point"
    );
    // Legalization only ever adds helper rules; without them the round trip is exact.
    if reread.rules.len() == grammar.rules.len() {
        assert_eq!(reread, grammar, "read(print(g)) != g\n{printed}");
    }
});
