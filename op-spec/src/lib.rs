#![warn(missing_docs)]
//! The three grammars of `#[op]` (shape signature, buffer-binding descriptor, backward
//! representation): a typed model, the parser, the checker and the canonical encoding used for
//! identity. A normal library on `proc-macro2`/`syn`, so every rule is unit-testable; the
//! `op-macros` crate is a thin wrapper and `op-runtime` loads the span-free [`contract`].

pub mod canon;
/// The span-free contract (re-exported from `op-contract`, the leaf crate the runtime reads).
pub use op_contract::contract;
pub mod check;
pub mod closure;
pub mod ctxt;
pub mod model;
pub mod nvrtc;
pub mod parse;
pub mod plan;
pub mod reference;
pub mod wgsl;
pub mod wgsl_launch;
