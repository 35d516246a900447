//! A loaded op: its static description, parsed contract, verified identity and compiled
//! validation plan. Loading validates everything read from the description; it never
//! registers or runs anything.

use crate::core::decl::OpDecl;
use crate::core::error::KernelRegistrationError;
use crate::core::kind::BackendKind;
use crate::core::plan::Plan;
use op_contract::contract::{Backward, Contract};
use op_contract::identity::{hex, identity, KernelBytes};
use std::sync::Arc;

/// Where an op comes from (shown on cards; dispatch never looks at it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpSource {
    /// Registered by op-runtime's own built-in list.
    Builtin,
    /// Registered through the public API (any user crate).
    User,
}

/// A registered op: its static description, parsed contract, identity and validation plan.
#[derive(Debug)]
pub struct RegisteredOp {
    /// The generated description.
    pub decl: &'static OpDecl,
    /// The parsed contract.
    pub contract: Contract,
    /// Identity: the code identity (blake3 over contract, code tokens and kernel bytes) placed in
    /// the declaring module (`op_contract::identity::placed`).
    pub hash: [u8; 32],
    /// `name@version`.
    pub id: String,
    /// `name@version`, shared (provenance entries point at it instead of copying).
    pub id_shared: Arc<str>,
    /// Compiled validation rules.
    pub plan: Plan,
    /// Built-in or user.
    pub source: OpSource,
}

impl RegisteredOp {
    /// Loads and verifies a user declaration: the contract must parse and the compile-time hash
    /// must equal the hash recomputed from the embedded contract, tokens and kernel bytes.
    pub fn load(decl: &'static OpDecl) -> Result<RegisteredOp, KernelRegistrationError> {
        RegisteredOp::load_as(decl, OpSource::User)
    }

    /// Loads a declaration with the source its registration path gives it (`Builtin` only
    /// from op-runtime's own built-in list, never from the op's name).
    pub(crate) fn load_as(decl: &'static OpDecl, source: OpSource) -> Result<RegisteredOp, KernelRegistrationError> {
        let contract: Contract = serde_json::from_str(decl.contract_json)
            .map_err(|e| KernelRegistrationError::BadContract { op: decl.rust_name.to_string(), reason: e.to_string() })?;
        let id = contract.id();
        let kernels: Vec<KernelBytes<'_>> =
            decl.kernels.iter().map(|k| KernelBytes { path: k.path, bytes: k.source, headers: k.headers.to_vec() }).collect();
        let actual = identity(decl.contract_json, decl.body_tokens, &kernels);
        if actual != decl.hash {
            return Err(KernelRegistrationError::IdentityMismatch { op: id, declared: hex(&decl.hash), actual: hex(&actual) });
        }
        let actual = decl.identity();
        check_description(decl, &contract).map_err(|reason| KernelRegistrationError::BadContract { op: id.clone(), reason })?;
        let plan = Plan::new(&contract).map_err(|reason| KernelRegistrationError::BadContract { op: id.clone(), reason })?;
        let id_shared: Arc<str> = Arc::from(id.as_str());
        Ok(RegisteredOp { decl, contract, hash: actual, id, id_shared, plan, source })
    }

    /// Lowercase hex of the content hash.
    pub fn hash_hex(&self) -> String {
        hex(&self.hash)
    }

    /// Deterministic kernel name (same in every process and machine).
    pub fn kernel_name(&self) -> String {
        format!("op_{}", &self.hash_hex()[..16])
    }

    /// Deterministic pipeline label.
    pub fn pipeline_name(&self) -> String {
        format!("{}#{}", self.id, &self.hash_hex()[..16])
    }

    /// Deterministic compiled-cache key.
    pub fn cache_key(&self, backend: BackendKind) -> String {
        format!("{}-{}", backend, self.hash_hex())
    }
}

/// Checks what a description says against itself, so nothing read from it later can panic or
/// mislead: a hand-built (or corrupted) `OpDecl` is a typed error at registration. The macro
/// only emits descriptions that pass.
fn check_description(decl: &OpDecl, c: &Contract) -> Result<(), String> {
    if c.version == 0 {
        return Err("version 0; versions start at 1".into());
    }
    let sig = &c.signature;
    if sig.outputs.is_empty() {
        return Err("it declares no output".into());
    }
    let mut names: Vec<&str> = sig.args.iter().map(|a| a.name()).chain(sig.outputs.iter().map(|o| o.name.as_str())).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!("the name `{}` is declared twice", w[0]));
    }
    for (k, con) in sig.constraints.iter().enumerate() {
        if con.terms.is_empty() || con.terms.len() != con.ops.len() + 1 {
            return Err(format!(
                "constraint {k} has {} term(s) and {} comparison(s); a chain needs one more term than comparisons",
                con.terms.len(),
                con.ops.len()
            ));
        }
    }
    if decl.kernels.len() != c.kernels.len() {
        return Err(format!("the contract declares {} kernel(s) but {} are embedded", c.kernels.len(), decl.kernels.len()));
    }
    for (k, (src, kc)) in decl.kernels.iter().zip(&c.kernels).enumerate() {
        if src.path != kc.path || src.entry.is_empty() || src.workgroup_size.contains(&0) {
            return Err(format!(
                "embedded kernel {k} (`{}`, entry `{}`, workgroup {:?}) does not match the contract's `{}`",
                src.path, src.entry, src.workgroup_size, kc.path
            ));
        }
    }
    let n_diff = sig.differentiable_inputs().count();
    match &c.backward {
        Backward::Declared { vjp, jvp } => {
            if vjp.is_some() != decl.vjp.is_some() {
                return Err("the contract's VJP and the embedded VJP shim disagree".into());
            }
            if jvp.len() != decl.jvp.len() || (!jvp.is_empty() && jvp.len() != n_diff) {
                return Err(format!(
                    "{} JVP rule(s) declared, {} embedded, for {n_diff} differentiable input(s)",
                    jvp.len(),
                    decl.jvp.len()
                ));
            }
        }
        Backward::None | Backward::Composite { .. } if decl.vjp.is_some() || !decl.jvp.is_empty() => {
            return Err("backward rules are embedded but the contract declares none".into());
        }
        _ => {}
    }
    if c.cpu.is_some() != decl.cpu.is_some() {
        return Err("the contract's `cpu` kernel and the embedded one disagree".into());
    }
    Ok(())
}
