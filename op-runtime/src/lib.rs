#![warn(missing_docs)]
//! Op runtime: declare an op with [`op`], register it, call it through one dispatch path on
//! the reference, CPU, wgpu or CUDA backends, conform its kernels, gradcheck its backward and
//! train through it. Users depend on this crate alone.
//!
//! ```
//! use op_runtime::{op, Real, Scalar, Tensor};
//!
//! /// Clamp every element to `[lo, hi]`.
//! #[op(name = "user/doc/clamp", version = 1, signature(x: f32[n], lo: f32, hi: f32) -> f32[n],
//!      category = selection, tolerance = exact, backward = none)]
//! pub fn clamp<T: Real>(x: &[T], lo: T, hi: T) -> Vec<T> {
//!     x.iter().map(|v| if *v < lo { lo } else if *v > hi { hi } else { *v }).collect()
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let clamp = op_runtime::register(&clamp::DECL)?;
//! let x = Tensor::vector(vec![-2.0f32, 0.5, 3.0]);
//! let out = clamp.call(&[&x], &[Scalar::F32(0.0), Scalar::F32(1.0)])?;
//! assert_eq!(out.outputs[0].as_slice::<f32>(), Some(&[0.0f32, 0.5, 1.0][..]));
//! println!("ran on {}", out.provenance.backend);
//! # Ok(())
//! # }
//! ```
//!
//! The crate is built in floors, each importing only those below it (see
//! `docs/ARCHITECTURE.md`): [`core`] (tensors, plans, the op description, registry and
//! dispatch, the typed backend seam), [`backends`] (reference, cpu, wgpu, cuda), [`train`] (the
//! tape and optimisers), [`verify`] (conformance, gradcheck, sharing), and on top the
//! [`builtins`] with the process-wide registry, and [`testing`] (the tests `#[op]` generates
//! and the helpers that assert a deliberately broken fixture's rejection).

extern crate self as op_runtime;

pub use op_macros::op;

pub mod backends;
pub mod builtins;
pub mod core;
pub mod testing;
pub mod train;
pub mod verify;

pub use crate::builtins::{gradcheck, register, registry};
pub use crate::core::error::DispatchError;
pub use crate::core::kind::BackendKind;
pub use crate::core::real::Real;
pub use crate::core::registry::dispatch::{CallOptions, Outcome};
pub use crate::core::registry::{OpHandle, Registry};
pub use crate::core::tensor::{Scalar, Tensor};
pub use crate::train::tape::Tape;
pub use crate::verify::conformance::conform;
/// The 16-bit float types (from `half`), for `f16`/`bf16` tensors and kernels.
pub use half::{bf16, f16};
pub use op_contract::contract::DType;

/// Items generated code refers to. Not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::__op_tests as op_tests;
    pub use crate::core::decl::{Call, CompositeFn, DeclMember, KernelSource, Launch, OpDecl, ShimFn};
    pub use crate::core::error::ShimError;
    pub use crate::core::generated::{
        arg, call0, call1, call10, call11, call12, call2, call3, call4, call5, call6, call7, call8, call9, Dest, ShimResult, Src, DECL_BASE,
    };
    pub use crate::core::real::Real;
    pub use crate::core::tensor::ParamValue;
    pub use crate::testing::{conformance_test, gradcheck_test};
    pub use ::core::option::Option::{None, Some};
    pub use half::{bf16, f16};
    pub use op_contract::contract::DType;
}
