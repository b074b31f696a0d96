//! Data-driven tests of the validator: each `tests/data/gbnf-text/validate/*.gbnf` goes
//! through `check` (start rule `root`, or the one named by a first line `# root: name`);
//! the snapshot shows the located error, or the warnings and the printed grammar. The
//! verdict of `validate` on the IR is shown too, since it can differ (repetition limits
//! are legalized by printing).

use std::path::PathBuf;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn check(name: &str) {
    let path = repo_root().join(format!("tests/data/gbnf-text/validate/{name}.gbnf"));
    let text = std::fs::read_to_string(&path).expect("test data is readable");
    let root = text
        .lines()
        .next()
        .and_then(|line| line.strip_prefix("# root: "))
        .unwrap_or("root")
        .trim()
        .to_owned();
    let mut snapshot = String::new();
    match gbnf::check(&text, &root) {
        Err(error) => snapshot.push_str(&format!("check: error: {error}\n")),
        Ok((_, warnings)) => {
            snapshot.push_str("check: ok\n");
            for warning in warnings {
                snapshot.push_str(&format!("warning: {warning}\n"));
            }
        }
    }
    match gbnf::read(&text) {
        Err(_) => {}
        Ok(grammar) => {
            match gbnf::validate(&grammar, &root) {
                Err(error) => snapshot.push_str(&format!("validate: error: {error}\n")),
                Ok(warnings) => {
                    snapshot.push_str(&format!("validate: ok, {} warnings\n", warnings.len()))
                }
            }
            // A grammar that hangs llama.cpp has no grammar section: `cargo xtask
            // llama-compat` loads every snapshot grammar into llama.cpp.
            let hangs = matches!(
                gbnf::validate(&grammar, &root).as_deref(),
                Ok(warnings) if warnings
                    .iter()
                    .any(|w| matches!(w.kind, gbnf::WarningKind::HiddenLeftRecursion { .. }))
            );
            if gbnf::validate(&grammar, &root).is_ok() && !hangs {
                let printed = gbnf::print(&grammar);
                snapshot.push_str(&format!(
                    "--- grammar (root: {root}) ---\n{printed}--- verdicts ---\n"
                ));
            }
        }
    }
    insta::with_settings!({
        snapshot_path => repo_root().join("snapshots/gbnf-text/validate"),
        prepend_module_to_snapshot => false,
        input_file => path,
    }, {
        insta::assert_snapshot!(name, snapshot);
    });
}

#[test]
fn bounded_repeat_of_optional_loads() {
    check("bounded-repeat-of-optional-loads")
}
#[test]
fn group_counts_new_names() {
    check("group-counts-new-names")
}
#[test]
fn group_repetition_over_limit() {
    check("group-repetition-over-limit")
}
#[test]
fn group_skips_known_names() {
    check("group-skips-known-names")
}
#[test]
fn literal_counts_once() {
    check("literal-counts-once")
}
#[test]
fn llamacpp_custom_root() {
    check("llamacpp-custom-root")
}
#[test]
fn llamacpp_default_root_missing() {
    check("llamacpp-default-root-missing")
}
#[test]
fn llamacpp_hard_left_recursion() {
    check("llamacpp-hard-left-recursion")
}
#[test]
fn llamacpp_medium_left_recursion() {
    check("llamacpp-medium-left-recursion")
}
#[test]
fn llamacpp_missing_referenced_rule() {
    check("llamacpp-missing-referenced-rule")
}
#[test]
fn llamacpp_missing_root() {
    check("llamacpp-missing-root")
}
#[test]
fn llamacpp_nullable_left_recursion() {
    check("llamacpp-nullable-left-recursion")
}
#[test]
fn llamacpp_requested_root_absent() {
    check("llamacpp-requested-root-absent")
}
#[test]
fn llamacpp_simple_left_recursion() {
    check("llamacpp-simple-left-recursion")
}
#[test]
fn max_over_limit_degrades() {
    check("max-over-limit-degrades")
}
#[test]
fn no_rules() {
    check("no-rules")
}
#[test]
fn repetition_min_over_limit() {
    check("repetition-min-over-limit")
}
#[test]
fn stacked_repetition_at_limit() {
    check("stacked-repetition-at-limit")
}
#[test]
fn stacked_repetition_over_limit() {
    check("stacked-repetition-over-limit")
}
#[test]
fn star_of_group_star_loads() {
    check("star-of-group-star-loads")
}
#[test]
fn star_of_nullable_group_left_recursion() {
    check("star-of-nullable-group-left-recursion")
}
#[test]
fn star_of_optional_left_recursion() {
    check("star-of-optional-left-recursion")
}
#[test]
fn star_of_star_left_recursion() {
    check("star-of-star-left-recursion")
}
#[test]
fn unreachable_left_recursion() {
    check("unreachable-left-recursion")
}
#[test]
fn unreachable_undefined() {
    check("unreachable-undefined")
}
#[test]
fn max_over_limit_warns() {
    check("max-over-limit-warns")
}
#[test]
fn negated_class_past_ascii() {
    check("negated-class-past-ascii")
}
#[test]
fn warnings() {
    check("warnings")
}
#[test]
fn redefined_group_keeps_reference() {
    check("redefined-group-keeps-reference")
}
#[test]
fn redefined_repetition_keeps_reference() {
    check("redefined-repetition-keeps-reference")
}
#[test]
fn redefined_reference_below_defined_id() {
    check("redefined-reference-below-defined-id")
}
#[test]
fn redefined_reference_dropped() {
    check("redefined-reference-dropped")
}
#[test]
fn hidden_left_recursion() {
    check("hidden-left-recursion")
}
#[test]
fn hidden_left_recursion_optional() {
    check("hidden-left-recursion-optional")
}
