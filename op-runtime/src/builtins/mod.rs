//! The top floor: the built-in ops and the process-wide registry that holds them. Built-ins are
//! declared with the same `#[op]` macro users write and registered through the same registry
//! path (labelled built-in by that path, not by their names); nothing in dispatch special-cases
//! them. Conveniences that default to the process-wide registry (`Tape::new`, `gradcheck`) live
//! here, so the floors below never name it.

mod binary;
#[cfg(test)]
mod cpu_tests;
mod elementwise;
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

use crate::core::decl::OpDecl;
use crate::core::error::KernelRegistrationError;
use crate::core::registry::{OpHandle, Registry};
use crate::train::tape::Tape;
use crate::verify::gradcheck::{self, GradcheckError, GradcheckOptions, GradcheckReport};
use std::sync::OnceLock;

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
    decls().iter().any(|b| crate::verify::record::same_decl(b, decl))
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
        if let Err(e) = r.link_vjp_op(op, d, crate::core::op::OpSource::Builtin) {
            eprintln!("op-runtime: the VJP op of built-in {op} not registered: {e}");
        }
    }
}

impl Registry {
    /// A new registry with every backend compiled in, holding the built-ins.
    pub fn with_builtins() -> Registry {
        let r = Registry::new();
        register_all(&r);
        r
    }
}

/// The process-wide registry, holding the built-ins.
pub fn registry() -> &'static Registry {
    static GLOBAL: OnceLock<Registry> = OnceLock::new();
    GLOBAL.get_or_init(Registry::with_builtins)
}

/// Registers an op in the process-wide registry.
pub fn register(decl: &'static OpDecl) -> Result<OpHandle, KernelRegistrationError> {
    registry().register(decl)
}

/// Gradcheck of a declaration with the default options; a composite op's graph resolves its
/// ops in the process-wide registry.
pub fn gradcheck(decl: &'static OpDecl) -> Result<GradcheckReport, GradcheckError> {
    gradcheck::gradcheck_with(registry(), decl, &GradcheckOptions::default())
}

impl Tape {
    /// An empty tape over the process-wide registry, running through dispatch.
    pub fn new() -> Tape {
        Tape::with_registry(registry())
    }
}

impl Default for Tape {
    fn default() -> Self {
        Tape::new()
    }
}
