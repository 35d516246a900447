#![warn(missing_docs)]
//! The top floor: the built-in ops, registered into every registry built with them. Built-ins are
//! declared with the same `#[op]` macro users write and registered through the same registry
//! path (labelled built-in by that path, not by their names); nothing in dispatch special-cases
//! them. They install themselves into every registry built with
//! them (`Registry::with_builtins`, the process-wide `registry()`) through op-core's installer
//! slice, so the floors below never name this crate. The tests `#[op]` generates (`testing`) live
//! here, the one floor that sees conformance, gradcheck and the built-ins together.
//!
//! A crate of op-runtime (users depend on the facade, `op-runtime`); cargo enforces the floors.
//! Items marked `#[doc(hidden)]` are shared with the floors above and are not part of the API.

mod binary;
#[cfg(test)]
mod cpu_tests;
mod elementwise;
#[cfg(test)]
mod floor_tests;
mod linalg;
mod permute;
mod reduce;
mod reduce_rows;
mod rows;
mod select;
mod shape;
mod sum64;
mod take;
mod unary;
mod vjp_ops;
mod vjp_ops_lib;
mod windows;

pub use binary::*;
pub use elementwise::*;
pub use linalg::*;
pub use permute::*;
pub use reduce::*;
pub use reduce_rows::*;
pub use rows::*;
pub use select::*;
pub use shape::*;
pub use take::*;
pub use unary::*;
pub use vjp_ops::*;
pub use vjp_ops_lib::*;
pub use windows::*;

use op_core::decl::OpDecl;
use op_core::registry::defaults::registry;
use op_core::registry::Registry;
use op_verify::gradcheck::{self, GradcheckError, GradcheckOptions, GradcheckReport};

// The `#[op]` declarations here expand to `::op_runtime::__private` paths, as in a user's
// crate; in this crate they name it.
extern crate self as op_runtime;

pub(crate) use op_core::real::Real;
pub(crate) use op_core::tensor::Element;
pub(crate) use op_macros::op;

pub mod testing;

/// Every built-in declaration.
pub fn decls() -> Vec<&'static OpDecl> {
    vec![
        &add::DECL,
        &sub::DECL,
        &mul::DECL,
        &div::DECL,
        &neg::DECL,
        &scale::DECL,
        &exp::DECL,
        &log::DECL,
        &tanh::DECL,
        &relu::DECL,
        &sum::DECL,
        &mean::DECL,
        &matmul::DECL,
        &conv1d::DECL,
        &mse_loss::DECL,
        &unfold::DECL,
        &sort_rows::DECL,
        &median_rows::DECL,
        &abs::DECL,
        &sqrt::DECL,
        &square::DECL,
        &sigmoid::DECL,
        &maximum::DECL,
        &minimum::DECL,
        &greater::DECL,
        &less::DECL,
        &equal::DECL,
        &greater_bool::DECL,
        &less_bool::DECL,
        &equal_bool::DECL,
        &where_::DECL,
        &sum_rows::DECL,
        &mean_rows::DECL,
        &max_rows::DECL,
        &min_rows::DECL,
        &argmax_rows::DECL,
        &reshape::DECL,
        &flatten::DECL,
        &transpose::DECL,
        &slice::DECL,
        &concat::DECL,
        &gather::DECL,
        &broadcast_to::DECL,
        &take_along::DECL,
        &permute3::DECL,
        &permute4::DECL,
    ]
}

/// Whether `decl` is one of the built-ins (the same function, module and identity).
pub(crate) fn is_builtin(decl: &OpDecl) -> bool {
    decls().iter().any(|b| op_verify::record::same_decl(b, decl))
}

/// Registers every built-in into `r`. A failure here is a build defect (a tampered binary); it
/// is reported on stderr and the op is left out, never a panic.
pub fn register_all(r: &Registry) {
    for d in decls() {
        if let Err(e) = r.register_builtin(d) {
            eprintln!("op-runtime: built-in {} not registered: {e}", d.rust_name);
        }
    }
    for (op, d) in vjp_ops::vjp_decls() {
        if let Err(e) = r.link_vjp_op(op, d, op_core::op::OpSource::Builtin) {
            eprintln!("op-runtime: the VJP op of built-in {op} not registered: {e}");
        }
    }
}

/// Installs the built-ins into every registry built with them (`Registry::with_builtins`, the
/// process-wide `registry()`): the core gathers installers without naming this crate.
#[linkme::distributed_slice(op_core::registry::defaults::INSTALLERS)]
#[linkme(crate = linkme)]
static INSTALL_BUILTINS: fn(&Registry) = register_all;

/// Gradcheck of a declaration with the default options; a composite op's graph resolves its
/// ops in the process-wide registry.
pub fn gradcheck(decl: &'static OpDecl) -> Result<GradcheckReport, GradcheckError> {
    gradcheck::gradcheck_with(registry(), decl, &GradcheckOptions::default())
}

/// Items the code `#[op]` generates refers to (as `::op_runtime::__private`), for the built-ins
/// declared here and, re-exported by the facade, for every user's op. Not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::__op_tests as op_tests;
    pub use crate::testing::catalog_test;
    pub use crate::testing::{conformance_test, gradcheck_test};
    pub use ::core::option::Option::{None, Some};
    pub use half::{bf16, f16};
    pub use linkme;
    pub use op_contract::contract::DType;
    pub use op_core::__op_catalog as op_catalog;
    pub use op_core::catalog::CATALOG;
    pub use op_core::decl::{Call, CompositeFn, DeclMember, KernelSource, Launch, OpDecl, ShimFn};
    pub use op_core::error::ShimError;
    pub use op_core::generated::{
        arg, call0, call1, call10, call11, call12, call2, call3, call4, call5, call6, call7, call8, call9, Dest, ShimResult, Src, DECL_BASE,
    };
    pub use op_core::real::Real;
    pub use op_core::tensor::ParamValue;
}
