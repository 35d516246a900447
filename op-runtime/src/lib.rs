#![warn(missing_docs)]
//! Op runtime: tensors, registry, one dispatch path, backends, conformance, gradcheck, tape,
//! receipts. Re-exports [`op`] so users depend on this crate alone.
//!
//! ```ignore
//! use op_runtime::{op, Real, Tensor};
//! let h = op_runtime::register(&my_op::DECL)?;
//! let out = h.call(&[&Tensor::vector(vec![1.0f32, 2.0])], &[])?.output();  // Option<Tensor>
//! ```

extern crate self as op_runtime;

pub use op_macros::op;

pub mod backend;
pub mod batch;
pub mod builtins;
pub mod conformance;
mod decl;
pub mod device;
pub mod dispatch;
pub mod error;
pub mod gpu;
pub mod gradcheck;
pub mod plan;
pub mod provenance;
mod real;
pub mod receipt;
pub mod registry;
pub mod sharing;
pub mod tape;
pub mod tensor;

pub use backend::BackendKind;
pub use batch::{BatchError, BatchOutcome};
pub use decl::{Call, OpDecl};
pub use device::DeviceProfile;
pub use dispatch::{CallOptions, Outcome};
pub use error::{DispatchError, KernelCompilationError, KernelFallbackExhaustedError, KernelRegistrationError, TensorError};
pub use op_contract::contract::{Contract, DType};
pub use provenance::{ProvenanceEntry, ProvenanceRecord};
pub use real::Real;
pub use registry::{register, registry, OpHandle, OpSource, RegisteredOp, Registry};
pub use tensor::{Data, Element, Scalar, Tensor};

/// Items generated code refers to. Not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::conformance::generated_test as conformance_test;
    pub use crate::decl::{Call, CompositeFn, KernelSource, OpDecl, ShimFn};
    pub use crate::error::ShimError;
    pub use crate::gradcheck::generated_test as gradcheck_test;
    pub use half::{bf16, f16};
}
