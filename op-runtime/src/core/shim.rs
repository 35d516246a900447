//! The one way a generated shim runs (reference, `cpu` kernel, VJP or JVP rule): a `Call`
//! context over a validated call, the shim under `catch_unwind` (a panicking user function is
//! an error, never a crash), and its outputs or gradients collected. Used by the host backends,
//! conformance and the tape alike; it chooses nothing.

use crate::core::decl::{Call, ShimFn};
use crate::core::error::ShimError;
use crate::core::op::RegisteredOp;
use crate::core::plan::Bound;
use crate::core::tensor::{Scalar, Tensor};

/// What a shim computes besides the forward.
#[derive(Clone, Copy)]
pub(crate) enum Rule<'a> {
    /// The forward (reference or `cpu` kernel): one tensor per output.
    Forward,
    /// A VJP: one gradient per differentiable input, of these shapes.
    Vjp { cotangents: &'a [&'a Tensor], grad_shapes: &'a [Vec<usize>] },
    /// A JVP rule: one tangent per output.
    Jvp { tangent: &'a Tensor },
}

/// Runs `shim` on a call validated as `bound`; returns the outputs (forward, JVP) or the
/// gradients (VJP), each checked present.
pub(crate) fn run(
    op: &RegisteredOp,
    shim: ShimFn,
    inputs: &[&Tensor],
    params: &[Scalar],
    bound: &Bound,
    rule: Rule<'_>,
) -> Result<Vec<Tensor>, ShimError> {
    let (cotangents, tangent, grad_shapes): (&[&Tensor], Option<&Tensor>, &[Vec<usize>]) = match rule {
        Rule::Forward => (&[], None, &[]),
        Rule::Vjp { cotangents, grad_shapes } => (cotangents, None, grad_shapes),
        Rule::Jvp { tangent } => (&[], Some(tangent), &[]),
    };
    let mut call = Call::new(&op.id, &op.plan, inputs, params, bound, (cotangents, tangent, grad_shapes));
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| shim(&mut call))) {
        Ok(r) => r?,
        Err(p) => {
            let what = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
            return Err(ShimError(format!("op `{}`: the function panicked: {what}", op.id)));
        }
    }
    let (values, what) = match rule {
        Rule::Vjp { .. } => (call.grads, "gradient of differentiable input"),
        _ => (call.outputs, "output"),
    };
    let mut out = Vec::with_capacity(values.len());
    for (i, t) in values.into_iter().enumerate() {
        out.push(t.ok_or_else(|| ShimError(format!("op `{}`: {what} {i} was not produced", op.id)))?);
    }
    Ok(out)
}
