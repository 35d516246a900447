//! `fail/`: declarations that must not compile, each with its `.stderr` (trybuild, `tests/ui.rs`);
//! `pass/`: declarations that must compile and run (`tests/pass.rs`).
