//! The span-free contract of an op and its canonical identity: what `#[op]` emits into the
//! binary and what the runtime reads back. A leaf crate (serde, serde_json and blake3 only), so
//! the runtime never links the compile-time checker (syn, naga) that produces it.

#![warn(missing_docs)]

pub mod contract;
pub mod cuda_headers;
pub mod generic;
pub mod identity;
pub mod sample;
pub mod vjp;
pub mod wgsl_include;

pub use contract::Contract;
