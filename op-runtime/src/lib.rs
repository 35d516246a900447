//! Op runtime: tensors, registry, one dispatch path, backends, conformance, gradcheck, tape,
//! receipts. Re-exports [`op`] so users depend on this crate alone.

extern crate self as op_runtime;

pub use op_macros::op;

pub mod device;
pub mod gpu;
