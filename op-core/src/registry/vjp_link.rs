//! Differentiable VJP ops: an op's VJP declared as an op of its own (an `#[op]` whose reference
//! is the op's VJP rule, whose arguments are the op's followed by one cotangent per output,
//! whose outputs are one gradient per float input, and whose own backward is the op's second
//! derivative), registered and linked to the op it differentiates. The tape runs forward mode
//! through it (VJP of the VJP) and second order (Hessian-vector products). This module owns the
//! link and the check that the declaration fits; it runs nothing.

use super::{OpHandle, Registry};
use crate::decl::OpDecl;
use crate::error::RegistrationError;
use crate::op::{OpSource, RegisteredOp};
use op_contract::contract::{Arg, Backward, TensorSig};

impl Registry {
    /// Registers `vjp` as the differentiable VJP op of the registered op `op` (`name` or
    /// `name@version`): its arguments must be `op`'s arguments followed by one cotangent per
    /// output of `op` (the output's dtype and dims), its outputs one gradient per float input of
    /// `op` (that input's dtype and dims), and it must declare a VJP rule or a composite graph
    /// of its own (the second derivative). Registering the same link again is a no-op; a
    /// declaration that does not fit is a typed error naming both ops.
    pub fn register_vjp_op(&self, op: &str, vjp: &'static OpDecl) -> Result<OpHandle, RegistrationError> {
        self.link_vjp_op(op, vjp, OpSource::User)
    }

    /// [`Registry::register_vjp_op`] with the registration path's source (the built-ins' own).
    pub fn link_vjp_op(&self, op: &str, vjp: &'static OpDecl, source: OpSource) -> Result<OpHandle, RegistrationError> {
        let forward = self.lookup(op).map_err(|e| RegistrationError::VjpOpMismatch {
            op: op.to_string(),
            vjp_op: vjp.rust_name.to_string(),
            reason: e.to_string(),
        })?;
        let loaded = RegisteredOp::load(vjp)?;
        let (fop, id) = (forward.op(), forward.id());
        fits(&fop, &loaded).map_err(|reason| RegistrationError::VjpOpMismatch { op: id.clone(), vjp_op: loaded.id.clone(), reason })?;
        let handle = self.register_as(vjp, source)?;
        self.inner.vjp_links.write().unwrap_or_else(|p| p.into_inner()).insert(id, handle.id());
        Ok(handle)
    }
}

impl OpHandle {
    /// The op's differentiable VJP op (registered with [`Registry::register_vjp_op`]; the
    /// built-ins have theirs), pinned to the same instance; `None` where none is registered.
    pub fn differentiable_vjp_op(&self) -> Option<OpHandle> {
        let links = self.registry.inner.vjp_links.read().unwrap_or_else(|p| p.into_inner());
        let id = links.get(&self.op().id)?.clone();
        drop(links);
        let h = self.registry.lookup(&id).ok()?;
        Some(OpHandle { member: self.member, ..h })
    }
}

/// Whether `vjp` has the signature of `op`'s VJP op and a backward of its own.
fn fits(op: &RegisteredOp, vjp: &RegisteredOp) -> Result<(), String> {
    match &vjp.contract.backward {
        Backward::None => return Err("it declares `backward = none`, so it cannot differentiate a second time".into()),
        Backward::Declared { vjp: None, .. } => {
            return Err("it declares JVP rules only; the tape differentiates a VJP op through its VJP: add `vjp(rule)`".into())
        }
        _ => {}
    }
    let (f, v) = (&op.contract.signature, &vjp.contract.signature);
    let want: Vec<Arg> = f.args.iter().cloned().chain(f.outputs.iter().cloned().map(Arg::Tensor)).collect();
    if v.args.len() != want.len() {
        return Err(format!(
            "it takes {} argument(s); the VJP op takes {} (the op's {} then one cotangent per output)",
            v.args.len(),
            want.len(),
            f.args.len()
        ));
    }
    for (k, (w, g)) in want.iter().zip(&v.args).enumerate() {
        let same = match (w, g) {
            (Arg::Tensor(a), Arg::Tensor(b)) => same_tensor(a, b),
            (Arg::Param(a), Arg::Param(b)) => a.dtype == b.dtype && a.var.is_some() == b.var.is_some(),
            _ => false,
        };
        if !same {
            return Err(format!("argument {k} (`{}`) should be {}", g.name(), describe(w)));
        }
    }
    let grads: Vec<&TensorSig> = f.differentiable_inputs().collect();
    if v.outputs.len() != grads.len() || !grads.iter().zip(&v.outputs).all(|(a, b)| same_tensor(a, b)) {
        let want = grads.iter().map(|t| describe(&Arg::Tensor((*t).clone()))).collect::<Vec<_>>().join(", ");
        return Err(format!("its outputs should be one gradient per float input of the op: {want}"));
    }
    Ok(())
}

/// Same dtype (at the primary instance), same typing by a variable or not, same dims.
fn same_tensor(a: &TensorSig, b: &TensorSig) -> bool {
    a.dtype == b.dtype && a.var.is_some() == b.var.is_some() && a.dims == b.dims
}

fn describe(a: &Arg) -> String {
    match a {
        Arg::Tensor(t) => {
            let dims: Vec<String> = t.dims.iter().map(|d| d.to_string()).collect();
            format!("a tensor `{}[{}]` like `{}`", t.var.as_deref().unwrap_or(&t.dtype.to_string()), dims.join(", "), t.name)
        }
        Arg::Param(p) => format!("a parameter `{}` like `{}`", p.var.as_deref().unwrap_or(&p.dtype.to_string()), p.name),
    }
}
