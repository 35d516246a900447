//! The one way a generated shim runs (reference, `cpu` kernel, VJP or JVP rule): a `Call`
//! context over a validated call, the shim under `catch_unwind` (a panicking user function is
//! an error, never a crash), and its outputs or gradients collected. Used by the host backends,
//! conformance and the tape alike; it chooses nothing.

use crate::decl::{Call, ShimFn};
use crate::error::ShimError;
use crate::op::RegisteredOp;
use crate::plan::Bound;
use crate::tensor::{Scalar, Tensor};

/// What a shim computes besides the forward.
#[derive(Clone, Copy)]
pub enum Rule<'a> {
    /// The forward (reference or `cpu` kernel): one tensor per output.
    Forward,
    /// A VJP: one gradient per differentiable input, of these shapes.
    #[doc(hidden)]
    Vjp { cotangents: &'a [&'a Tensor], grad_shapes: &'a [Vec<usize>] },
    /// A JVP rule: one tangent per output.
    #[doc(hidden)]
    Jvp { tangent: &'a Tensor },
}

/// How a shim run failed: the function panicked (its message), or returned an error.
#[derive(Debug)]
pub enum Failure {
    /// The function panicked.
    Panicked(String),
    /// The function (or collecting its results) returned an error.
    Error(ShimError),
}

/// Runs `shim` on a call validated as `bound`; returns the outputs (forward, JVP) or the
/// gradients (VJP), each checked present.
pub fn run(
    op: &RegisteredOp,
    shim: ShimFn,
    inputs: &[&Tensor],
    params: &[Scalar],
    bound: &Bound,
    rule: Rule<'_>,
) -> Result<Vec<Tensor>, ShimError> {
    run_telling_panics(op, shim, inputs, params, bound, rule).map_err(|f| match f {
        Failure::Panicked(what) => ShimError(format!("op `{}`: the function panicked: {what}", op.id)),
        Failure::Error(e) => e,
    })
}

/// [`run`], telling a panic apart from an error (conformance reports a reference that panics
/// on an admissible shape as a defect of the declaration).
pub fn run_telling_panics(
    op: &RegisteredOp,
    shim: ShimFn,
    inputs: &[&Tensor],
    params: &[Scalar],
    bound: &Bound,
    rule: Rule<'_>,
) -> Result<Vec<Tensor>, Failure> {
    if let (Some(own), Rule::Forward) = (op.vjp_of, rule) {
        return run_vjp_op(op, shim, inputs, params, bound, own);
    }
    let (cotangents, tangent, grad_shapes): (&[&Tensor], Option<&Tensor>, &[Vec<usize>]) = match rule {
        Rule::Forward => (&[], None, &[]),
        Rule::Vjp { cotangents, grad_shapes } => (cotangents, None, grad_shapes),
        Rule::Jvp { tangent } => (&[], Some(tangent), &[]),
    };
    let mut call = Call::new(&op.id, &op.plan, inputs, params, bound, (cotangents, tangent, grad_shapes));
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| shim(&mut call))) {
        Ok(r) => r.map_err(Failure::Error)?,
        Err(p) => {
            let what = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
            return Err(Failure::Panicked(what));
        }
    }
    match rule {
        Rule::Vjp { .. } => call.take(true, grad_shapes.len()),
        _ => call.take(false, bound.out_shapes.len()),
    }
    .map_err(Failure::Error)
}

/// A VJP op's forward (`core::vjp_op`): its reference is the op's VJP rule, handed the op's
/// `own` inputs as inputs, the rest as cotangents, and the VJP op's outputs as gradient shapes.
fn run_vjp_op(
    op: &RegisteredOp,
    shim: ShimFn,
    inputs: &[&Tensor],
    params: &[Scalar],
    bound: &Bound,
    own: usize,
) -> Result<Vec<Tensor>, Failure> {
    if own > inputs.len() {
        let e = ShimError(format!("op `{}`: {} tensor input(s) given, the VJP op takes more than {own}", op.id, inputs.len()));
        return Err(Failure::Error(e));
    }
    let (forward, cotangents) = inputs.split_at(own);
    let grad_shapes: Vec<Vec<usize>> = bound.out_shapes.iter().map(|s| s.to_vec()).collect();
    run_telling_panics(op, shim, forward, params, bound, Rule::Vjp { cotangents, grad_shapes: &grad_shapes })
}
