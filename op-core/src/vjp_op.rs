//! The VJP op of an op whose backward declares kernels (`backward = vjp(rule, kernel(...),
//! cpu(f))`): derived at registration from the op's contract (`op_contract::vjp`), registered
//! beside it under `<name>/vjp`, its reference the op's VJP rule and its kernels (GPU and `cpu`)
//! the declared VJP kernels.
//! Dispatch, device tensors and conformance then treat a backward kernel exactly as a forward
//! one; the one runner (`core::shim`) hands the rule the op's inputs and the cotangents apart.

use crate::decl::OpDecl;
use crate::error::RegistrationError;
use crate::op::{RegisteredOp, Shims};
use std::sync::{Arc, Mutex, OnceLock};

/// The derived descriptions made so far, by the address of the op's own description: a derived
/// op needs a `&'static OpDecl` like any other, so each is made (and leaked) once per process.
static DERIVED: OnceLock<Mutex<Vec<(usize, &'static OpDecl)>>> = OnceLock::new();

/// The identity of the VJP op of the op with identity `forward` (which already covers the rule's
/// code and the VJP kernels' bytes): distinct from the op's, so receipts and caches never confuse
/// the two computations.
pub fn vjp_identity(forward: &[u8; 32]) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(b"op-runtime vjp op\0");
    h.update(forward);
    *h.finalize().as_bytes()
}

/// The VJP op of `op` (`None` where its backward declares no VJP kernels).
pub fn derive(op: &RegisteredOp) -> Option<Result<RegisteredOp, RegistrationError>> {
    if op.contract.vjp_kernels().is_empty() && op.contract.vjp_cpu_kernels().is_empty() {
        return None;
    }
    Some(build(op))
}

fn build(op: &RegisteredOp) -> Result<RegisteredOp, RegistrationError> {
    let bad = |reason: String| RegistrationError::BadContract { op: op.id.clone(), reason };
    let contract_of = |o: &RegisteredOp| o.contract.vjp_contract().unwrap_or_else(|| Err("declares no VJP kernels".into())).map_err(bad);
    let primary = contract_of(op)?;
    let json = serde_json::to_string(&primary).map_err(|e| bad(e.to_string()))?;
    let decl = derived_decl(op.decl, op.contract.kernels.len(), json).map_err(bad)?;
    let hash = vjp_identity(&op.hash);
    let inputs = op.contract.signature.inputs().count();
    let instance = |o: &RegisteredOp, contract| -> Result<RegisteredOp, RegistrationError> {
        let reference = o.shims.vjp.ok_or_else(|| bad("declares VJP kernels but embeds no VJP rule".into()))?;
        let shims = Shims { reference, cpu: o.shims.vjp_cpu, vjp: None, jvp: &[], vjp_cpu: None };
        RegisteredOp::derived(decl, contract, hash, o.source, shims, o.member, inputs)
    };
    let mut v = instance(op, primary)?;
    for m in &op.members {
        v.members.push(Arc::new(instance(m, contract_of(m)?)?));
    }
    v.bind_members();
    Ok(v)
}

/// The VJP op's description: the op's, with the VJP op's contract, the VJP kernels (embedded
/// after the op's own `forward_kernels`) as its kernels and the VJP rules as its references.
fn derived_decl(decl: &'static OpDecl, forward_kernels: usize, contract_json: String) -> Result<&'static OpDecl, String> {
    let key = decl as *const OpDecl as usize;
    let cell = DERIVED.get_or_init(|| Mutex::new(Vec::new()));
    let mut made = cell.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, d)) = made.iter().find(|(k, _)| *k == key) {
        return Ok(d);
    }
    let kernels = decl.kernels.get(forward_kernels..).ok_or("its VJP kernels are not embedded")?;
    let reference = decl.vjp.ok_or("declares VJP kernels but embeds no VJP rule")?;
    let d: &'static OpDecl = Box::leak(Box::new(OpDecl {
        contract_json: Box::leak(contract_json.into_boxed_str()),
        kernels,
        reference,
        reference_f64: decl.vjp_f64,
        cpu: decl.vjp_cpu,
        vjp: None,
        vjp_f64: None,
        vjp_cpu: None,
        jvp: &[],
        jvp_f64: &[],
        composite: None,
        members: &[],
        ..*decl
    }));
    made.push((key, d));
    Ok(d)
}
