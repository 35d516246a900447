//! Gradcheck on the reference path in f64 with kink skipping and a negative control.
//! (Being built: issue 5.)

use crate::decl::OpDecl;

/// The test `#[op]` generates for every differentiable declaration. (Being built: issue 5.)
pub fn generated_test(decl: &'static OpDecl) {
    let _ = decl;
}
