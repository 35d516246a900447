//! The guide: one chapter per module, each the text of `docs/guide/<chapter>.md`, whose Rust
//! blocks run as doctests of this crate (`cargo test --workspace --doc`). The README is the
//! overview; the chapters hold the rest.
//!
//! - [`declaring`]: the `#[op]` attribute, dtype variables and what the checker holds a
//!   declaration to.
//! - [`tolerances`]: categories (and which have kinks), tolerance classes, the ordering
//!   convention of selection ops, and what a rejection says.
//! - [`composing`]: composite backwards from the built-ins, and the generated table of
//!   built-ins.
//! - [`devices`]: dispatch, the CPU backend, device tensors and training on a GPU.
//! - [`differentiation`]: the tape's reverse mode, forward mode, second order and batches.
//! - [`interop`]: ops on candle tensors, ndarray arrays and in JAX.
//! - [`verification`]: conformance, gradcheck and `cargo op report`.
//! - [`identity`]: what an op's content hash covers, and what it does not.
//! - [`trust`]: cards, receipts, signatures, trust lists and the store.
//! - [`limitations`]: what the project does not do yet.

#[doc = include_str!("../../docs/guide/declaring.md")]
pub mod declaring {}

#[doc = include_str!("../../docs/guide/tolerances.md")]
pub mod tolerances {}

#[doc = include_str!("../../docs/guide/composing.md")]
pub mod composing {}

#[doc = include_str!("../../docs/guide/devices.md")]
pub mod devices {}

#[doc = include_str!("../../docs/guide/differentiation.md")]
pub mod differentiation {}

#[doc = include_str!("../../docs/guide/interop.md")]
pub mod interop {}

#[doc = include_str!("../../docs/guide/verification.md")]
pub mod verification {}

#[doc = include_str!("../../docs/guide/identity.md")]
pub mod identity {}

#[doc = include_str!("../../docs/guide/trust.md")]
pub mod trust {}

#[doc = include_str!("../../docs/guide/limitations.md")]
pub mod limitations {}
