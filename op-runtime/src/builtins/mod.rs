//! Built-in ops, declared with the same `#[op]` macro users write and registered through the
//! same public `Registry::register`. Nothing here is special-cased by dispatch.

mod elementwise;
mod linalg;
mod reduce;

pub use elementwise::*;
pub use linalg::*;
pub use reduce::*;

use crate::decl::OpDecl;
use crate::registry::Registry;

/// Every built-in declaration.
pub fn decls() -> [&'static OpDecl; 15] {
    [
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
    ]
}

/// Registers every built-in through the public API. A failure here is a build defect (a
/// tampered binary); it is reported on stderr and the op is left out, never a panic.
pub fn register_all(r: &Registry) {
    for d in decls() {
        if let Err(e) = r.register(d) {
            eprintln!("op-runtime: built-in {} not registered: {e}", d.rust_name);
        }
    }
}
