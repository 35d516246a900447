//! The `#[op]` compile-time contract: every rule has a declaration in `fail/` that must not
//! compile (its `.stderr` is the expected diagnostic), and `pass/` holds declarations that must
//! compile and run. Regenerate with `TRYBUILD=overwrite cargo test -p ui-tests`, then read
//! every changed `.stderr`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("fail/*.rs");
    t.pass("pass/*.rs");
}
