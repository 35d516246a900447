//! The workspace root package: it exists to hold `examples/` and the cross-crate `tests/`.
