//! The `#[op]` compile-time contract: every rule has a declaration in `fail/` that must not
//! compile (its `.stderr` is the expected diagnostic), and `pass/` holds declarations that must
//! compile and run. Regenerate with `TRYBUILD=overwrite cargo test -p ui-tests`, then read
//! every changed `.stderr`.
//!
//! The two kinds are separate `TestCases`: trybuild checks a set with no pass case in one
//! `cargo check --keep-going` over every file (both cores, one dependency resolution), while a
//! set that holds a pass case is built file by file, a `cargo clean` and a `cargo build` each
//! (three seconds a file here: ten minutes for the fail cases alone).

#[test]
fn fail() {
    trybuild::TestCases::new().compile_fail("fail/*.rs");
}

#[test]
fn pass() {
    trybuild::TestCases::new().pass("pass/*.rs");
}
