//! The workspace root package: it holds `examples/` and the cross-crate `tests/`, and its
//! documentation is the README, whose Rust blocks run as doctests (`cargo test --doc`).
#![doc = include_str!("../README.md")]
