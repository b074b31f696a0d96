//! Fuzzes the validator: `check` never panics, agrees with `read` on syntax, and a grammar
//! that `validate` accepts prints as text that `check` accepts (what llama.cpp loads).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let checked = gbnf::check(text, "root");
    let read = gbnf::read(text);
    if checked.is_ok() {
        assert!(read.is_ok(), "check accepts what read refuses");
    }
    let Ok(grammar) = read else {
        return;
    };
    if gbnf::validate(&grammar, "root").is_ok() {
        let printed = gbnf::print(&grammar);
        if let Err(error) = gbnf::check(&printed, "root") {
            panic!(
                "validate accepts a grammar whose printed form check refuses: {error}\n{printed}"
            );
        }
    }
});
