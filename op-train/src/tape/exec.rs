//! Driving an op's generated shims outside a backend: the reference in f64 (gradcheck), and the
//! declared VJP / JVP rules at either dtype, each through the one shim runner (`core::shim`). It validates
//! every call with the op's plan first and never chooses a backend (forward calls at the
//! declared dtype go through dispatch, not through this module). An op declared `broadcast =
//! numpy` runs its shims on its operands expanded to the broadcast shape, and its VJP's
//! gradients are summed back to each operand's shape (`core::broadcast`).

use op_contract::contract::DType;
use op_core::broadcast;
use op_core::op::RegisteredOp;
use op_core::plan::Bound;
use op_core::shim::{self, Rule};
use op_core::tensor::{Scalar, Tensor};

/// Where a tape executes its ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Forward through `OpHandle::call` at the declared dtype (any backend); backward through
    /// the declared-dtype VJP shims.
    Dispatch,
    /// Forward through the reference in f64, backward through the f64 VJP shims (gradcheck).
    ReferenceF64,
}

impl Mode {
    /// The dtype float tensors have in this mode (`None`: as declared).
    pub fn float_as(self) -> Option<DType> {
        match self {
            Mode::Dispatch => None,
            Mode::ReferenceF64 => Some(DType::f64),
        }
    }
}

/// Float parameters converted to the mode's float type (so graph builders may write either).
pub fn convert_params(op: &RegisteredOp, params: &[Scalar], mode: Mode) -> Vec<Scalar> {
    op.contract
        .signature
        .params()
        .zip(params)
        .map(|(p, s)| {
            let v = match *s {
                Scalar::F32(v) => v as f64,
                Scalar::F64(v) => v,
                other => return other,
            };
            if !p.dtype.is_float() {
                return *s;
            }
            match (mode, p.dtype) {
                (Mode::ReferenceF64, _) | (Mode::Dispatch, DType::f64) => Scalar::F64(v),
                _ => Scalar::F32(v as f32),
            }
        })
        .collect()
}

/// Validates a call at the mode's dtypes.
pub fn bind(op: &RegisteredOp, inputs: &[&Tensor], params: &[Scalar], mode: Mode) -> Result<Bound, String> {
    op.plan.validate(inputs, params, mode.float_as()).map_err(|e| e.to_string())
}

/// Shapes of the differentiable (float) tensor inputs, in order.
pub fn grad_shapes(op: &RegisteredOp, inputs: &[&Tensor]) -> Vec<Vec<usize>> {
    op.contract.signature.inputs().zip(inputs).filter(|(s, _)| s.dtype.is_float()).map(|(_, t)| t.shape().to_vec()).collect()
}

/// Indices (among tensor inputs) of the differentiable inputs.
pub fn diff_positions(op: &RegisteredOp) -> Vec<usize> {
    op.contract.signature.inputs().enumerate().filter(|(_, t)| t.dtype.is_float()).map(|(i, _)| i).collect()
}

/// A broadcasting op's inputs expanded to the call's broadcast shape; `None` where nothing is
/// expanded (the op does not broadcast, or every input has the shape already).
fn expanded(op: &RegisteredOp, inputs: &[&Tensor], bound: &Bound) -> Result<Option<Vec<Tensor>>, String> {
    match (op.plan.broadcasts(), bound.out_shapes.first()) {
        (true, Some(to)) => broadcast::expand_inputs(op, inputs, to).map_err(|e| e.to_string()),
        _ => Ok(None),
    }
}

/// Gradients of the expanded operands summed back to the shapes of `inputs` (the
/// differentiable ones, in order).
pub fn reduce_grads(op: &RegisteredOp, inputs: &[&Tensor], grads: Vec<Tensor>) -> Result<Vec<Tensor>, String> {
    let shapes = grad_shapes(op, inputs);
    grads
        .into_iter()
        .zip(shapes)
        .map(|(g, shape)| if g.shape() == shape.as_slice() { Ok(g) } else { broadcast::reduce_host(&g, &shape).map_err(|e| e.to_string()) })
        .collect()
}

/// Runs the op's f64 reference. Float inputs must be f64 tensors.
pub fn forward_f64(op: &RegisteredOp, inputs: &[&Tensor], params: &[Scalar]) -> Result<Vec<Tensor>, String> {
    let shim = op.decl.reference_f64.ok_or_else(|| no_f64(op))?;
    let params = convert_params(op, params, Mode::ReferenceF64);
    let bound = bind(op, inputs, &params, Mode::ReferenceF64)?;
    let ex = expanded(op, inputs, &bound)?;
    let refs: Vec<&Tensor> = ex.iter().flatten().collect();
    let inputs = if ex.is_some() { &refs[..] } else { inputs };
    shim::run(op, shim, inputs, &params, &bound, Rule::Forward).map_err(|e| e.0)
}

#[doc(hidden)]
pub fn no_f64(op: &RegisteredOp) -> String {
    format!(
        "op `{}`: its reference is not generic over `T: Real`, so it has no f64 instantiation; write it as `fn {}<T: Real>(..)`",
        op.id, op.decl.rust_name
    )
}

/// The instance whose rules run: at dispatch dtypes, the one the inputs bind (an op with dtype
/// variables); the op itself otherwise (the f64 rules are shared by every instance).
fn instance<'a>(op: &'a RegisteredOp, inputs: &[&Tensor], params: &[Scalar], mode: Mode) -> Result<&'a RegisteredOp, String> {
    match mode {
        Mode::Dispatch => Ok(op.member_for(inputs, params).map_err(|e| e.to_string())?.map_or(op, |m| m.as_ref())),
        Mode::ReferenceF64 => Ok(op),
    }
}

/// Runs the declared VJP (at the mode's dtype): one gradient per differentiable input.
pub fn vjp(op: &RegisteredOp, inputs: &[&Tensor], params: &[Scalar], cotangents: &[&Tensor], mode: Mode) -> Result<Vec<Tensor>, String> {
    let op = instance(op, inputs, params, mode)?;
    let shim = match mode {
        Mode::Dispatch => op.shims.vjp,
        Mode::ReferenceF64 => op.decl.vjp_f64,
    }
    .ok_or_else(|| format!("op `{}` declares no VJP at this dtype", op.id))?;
    let params = convert_params(op, params, mode);
    let bound = bind(op, inputs, &params, mode)?;
    let ex = expanded(op, inputs, &bound)?;
    let refs: Vec<&Tensor> = ex.iter().flatten().collect();
    let operands = if ex.is_some() { &refs[..] } else { inputs };
    let gs = grad_shapes(op, operands);
    if gs.is_empty() {
        return Ok(Vec::new());
    }
    let grads = shim::run(op, shim, operands, &params, &bound, Rule::Vjp { cotangents, grad_shapes: &gs }).map_err(|e| e.0)?;
    match ex {
        Some(_) => reduce_grads(op, inputs, grads),
        None => Ok(grads),
    }
}

/// Runs JVP rule `k` (for differentiable input `k`) with a tangent: one tangent per output.
pub fn jvp(
    op: &RegisteredOp,
    k: usize,
    inputs: &[&Tensor],
    params: &[Scalar],
    tangent: &Tensor,
    mode: Mode,
) -> Result<Vec<Tensor>, String> {
    let op = instance(op, inputs, params, mode)?;
    let rules = match mode {
        Mode::Dispatch => op.shims.jvp,
        Mode::ReferenceF64 => op.decl.jvp_f64,
    };
    let shim = *rules.get(k).ok_or_else(|| format!("op `{}` declares no JVP rule for differentiable input {k}", op.id))?;
    let params = convert_params(op, params, mode);
    let bound = bind(op, inputs, &params, mode)?;
    let ex = expanded(op, inputs, &bound)?;
    let (Some(ex), Some(to)) = (ex, bound.out_shapes.first()) else {
        return shim::run(op, shim, inputs, &params, &bound, Rule::Jvp { tangent }).map_err(|e| e.0);
    };
    // The tangent of an expanded operand is expanded with it.
    let tangent = match tangent.shape() == to.as_slice() {
        true => tangent.clone(),
        false => broadcast::expand_host(tangent, to).map_err(|e| e.to_string())?,
    };
    let refs: Vec<&Tensor> = ex.iter().collect();
    shim::run(op, shim, &refs, &params, &bound, Rule::Jvp { tangent: &tangent }).map_err(|e| e.0)
}
