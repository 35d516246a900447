//! The `#[op]` compile-time contract: every rule has a declaration in `fail/` that must not
//! compile (its `.stderr` is the expected diagnostic). Regenerate with
//! `TRYBUILD=overwrite cargo test -p ui-tests --test ui`, then read every changed `.stderr`.
//!
//! trybuild checks the whole set in one `cargo check --keep-going` over every file (both cores,
//! one dependency resolution). The declarations that must compile and run are `pass/`, run by
//! `tests/pass.rs` as modules of one ordinary test binary: a trybuild set holding a pass case is
//! built file by file, a `cargo clean` and a `cargo build` each, its dependencies built again in
//! trybuild's own target directory.

#[test]
fn fail() {
    trybuild::TestCases::new().compile_fail("fail/*.rs");
}
