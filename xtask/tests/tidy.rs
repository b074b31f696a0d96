//! Runs `cargo xtask tidy`'s checks as part of `cargo test`.

use std::path::Path;

#[test]
fn repository_is_tidy() {
    let problems = xtask::tidy::check(&xtask::repo_root()).expect("the repository is readable");
    assert!(
        problems.is_empty(),
        "cargo xtask tidy:\n{}",
        problems.join("\n")
    );
}

#[test]
fn tidy_reports_a_file_without_module_comment() {
    let dir = std::env::temp_dir().join(format!("xtask-tidy-{}", std::process::id()));
    let nested = dir.join("src");
    std::fs::create_dir_all(&nested).expect("temp dir");
    std::fs::write(nested.join("good.rs"), "//! Why.\nfn f() {}\n").expect("write");
    std::fs::write(nested.join("bad.rs"), "// Not a module comment.\n").expect("write");
    std::fs::create_dir_all(dir.join("target")).expect("temp dir");
    std::fs::write(dir.join("target").join("built.rs"), "fn g() {}\n").expect("write");
    let problems = xtask::tidy::check(Path::new(&dir)).expect("readable");
    std::fs::remove_dir_all(&dir).expect("cleanup");
    assert_eq!(
        problems,
        ["src/bad.rs:1:1: a Rust file must start with a `//!` comment saying why it exists"]
    );
}
