//! Data-driven tests of the reader and printer: each `tests/data/gbnf-text/read/*.gbnf` is
//! read and printed (snapshot of the printed grammar), or refused (snapshot of the
//! located error). Printing must also be a fixed point and round-trip through the reader.

use std::path::PathBuf;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn check(name: &str) {
    let path = repo_root().join(format!("tests/data/gbnf-text/read/{name}.gbnf"));
    let text = std::fs::read_to_string(&path).expect("test data is readable");
    let snapshot = match gbnf::read(&text) {
        Ok(grammar) => {
            let printed = gbnf::print(&grammar);
            let reread = gbnf::read(&printed).expect("printed grammars read back");
            assert_eq!(reread, grammar, "read(print(g)) == g for {name}");
            assert_eq!(
                gbnf::print(&reread),
                printed,
                "printing is a fixed point for {name}"
            );
            format!("--- grammar (root: root) ---\n{printed}--- verdicts ---\n")
        }
        Err(error) => format!("error: {error}\n"),
    };
    insta::with_settings!({
        snapshot_path => repo_root().join("snapshots/gbnf-text/read"),
        prepend_module_to_snapshot => false,
        input_file => path,
    }, {
        insta::assert_snapshot!(name, snapshot);
    });
}

#[test]
fn basic() {
    check("basic")
}
#[test]
fn class_edges() {
    check("class-edges")
}
#[test]
fn comments_and_newlines() {
    check("comments-and-newlines")
}
#[test]
fn duplicate_rule() {
    check("duplicate-rule")
}
#[test]
fn empty_alternatives() {
    check("empty-alternatives")
}
#[test]
fn err_bar_continues() {
    check("err-bar-continues")
}
#[test]
fn err_brace_no_min() {
    check("err-brace-no-min")
}
#[test]
fn err_max_below_min() {
    check("err-max-below-min")
}
#[test]
fn err_repeat_nothing() {
    check("err-repeat-nothing")
}
#[test]
fn err_short_hex() {
    check("err-short-hex")
}
#[test]
fn err_stray_paren() {
    check("err-stray-paren")
}
#[test]
fn err_token_id() {
    check("err-token-id")
}
#[test]
fn err_unclosed_group() {
    check("err-unclosed-group")
}
#[test]
fn err_underscore() {
    check("err-underscore")
}
#[test]
fn err_unknown_escape() {
    check("err-unknown-escape")
}
#[test]
fn err_unterminated_class() {
    check("err-unterminated-class")
}
#[test]
fn err_unterminated_literal() {
    check("err-unterminated-literal")
}
#[test]
fn groups_and_order() {
    check("groups-and-order")
}
#[test]
fn literal_escapes() {
    check("literal-escapes")
}
#[test]
fn nested_repetitions() {
    check("nested-repetitions")
}
#[test]
fn non_scalar_escapes() {
    check("non-scalar-escapes")
}
#[test]
fn repetition_forms() {
    check("repetition-forms")
}
#[test]
fn tokens() {
    check("tokens")
}
