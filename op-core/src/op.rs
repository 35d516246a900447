//! A loaded op: its static description, parsed contract, verified identity and compiled
//! validation plan. Loading validates everything read from the description; it never
//! registers or runs anything.

use crate::decl::{OpDecl, ShimFn};
use crate::error::{DispatchError, RegistrationError};
use crate::kind::BackendKind;
use crate::plan::Plan;
use crate::tensor::{Scalar, Tensor};
use op_contract::contract::{Arg, Backward, Contract, DType};
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
    /// The shims this instance runs.
    pub shims: Shims,
    /// For an op with dtype variables: every instance, in declaration order, each with its
    /// contract and plan at its binding (this op itself stands for the primary instance: every
    /// variable `f32` where that is an instance, else the first). Empty otherwise.
    pub members: Vec<Arc<RegisteredOp>>,
    /// Which instance this is (0 for an op without dtype variables).
    pub member: usize,
    /// Where a call binds each dtype variable (an op with dtype variables).
    binders: Vec<Binder>,
    /// For a VJP op (`core::vjp_op`): how many of its tensor inputs are the op's own inputs
    /// (the rest are cotangents, which its reference, the VJP rule, takes apart).
    pub vjp_of: Option<usize>,
}

/// The shims one instance of an op runs (the f64 ones, shared by every instance, stay on the
/// [`OpDecl`]).
#[derive(Clone, Copy, Debug)]
pub struct Shims {
    /// The reference.
    pub reference: ShimFn,
    /// The fast CPU kernel, where it serves the instance.
    pub cpu: Option<ShimFn>,
    /// The VJP.
    pub vjp: Option<ShimFn>,
    /// The JVP rules.
    pub jvp: &'static [ShimFn],
    /// The VJP's `cpu` kernel, where it serves the instance (the VJP op's `cpu` kernel).
    pub vjp_cpu: Option<ShimFn>,
}

/// Where a call binds a dtype variable: the first tensor input or parameter it types.
#[derive(Clone, Debug)]
enum Binder {
    Input(usize, String),
    Param(usize, String),
}

impl RegisteredOp {
    /// `name@version`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The parsed contract (at this instance's binding, for an op with dtype variables).
    pub fn contract(&self) -> &Contract {
        &self.contract
    }

    /// The identity: blake3 over the canonical contract, the code the op runs and every kernel
    /// byte, placed in the declaring module.
    pub fn hash(&self) -> &[u8; 32] {
        &self.hash
    }

    /// Built-in or user.
    pub fn source(&self) -> OpSource {
        self.source
    }

    /// The description `#[op]` generated.
    pub fn decl(&self) -> &'static OpDecl {
        self.decl
    }

    /// Whether this is the VJP op of another op (`<name>/vjp`, registered with it).
    pub fn is_vjp_op(&self) -> bool {
        self.vjp_of.is_some()
    }

    /// The dim symbols a call binds, in the order conformance cases list their values.
    pub fn symbols(&self) -> &[String] {
        &self.plan.syms
    }

    /// Every instance of an op with dtype variables, in declaration order (empty otherwise).
    pub fn members(&self) -> &[Arc<RegisteredOp>] {
        &self.members
    }

    /// Loads and verifies a user declaration: the contract must parse and the compile-time hash
    /// must equal the hash recomputed from the embedded contract, tokens and kernel bytes.
    pub fn load(decl: &'static OpDecl) -> Result<RegisteredOp, RegistrationError> {
        RegisteredOp::load_as(decl, OpSource::User)
    }

    /// Loads a declaration with the source its registration path gives it (`Builtin` only
    /// from op-runtime's own built-in list, never from the op's name).
    pub fn load_as(decl: &'static OpDecl, source: OpSource) -> Result<RegisteredOp, RegistrationError> {
        let contract: Contract = serde_json::from_str(decl.contract_json)
            .map_err(|e| RegistrationError::BadContract { op: decl.rust_name.to_string(), reason: e.to_string() })?;
        let id = contract.id();
        let kernels: Vec<KernelBytes<'_>> =
            decl.kernels.iter().map(|k| KernelBytes { path: k.path, bytes: k.source, headers: k.headers.to_vec() }).collect();
        let actual = identity(decl.contract_json, decl.body_tokens, &kernels);
        if actual != decl.hash {
            return Err(RegistrationError::IdentityMismatch { op: id, declared: hex(&decl.hash), actual: hex(&actual) });
        }
        let actual = decl.identity();
        check_description(decl, &contract).map_err(|reason| RegistrationError::BadContract { op: id.clone(), reason })?;
        let (at, shims, primary) = primary(decl, &contract).map_err(|reason| RegistrationError::BadContract { op: id.clone(), reason })?;
        let mut op = RegisteredOp::instance(decl, at, actual, source, shims, primary)?;
        if contract.is_generic() {
            op.binders = binders(&contract);
            for (i, (m, b)) in decl.members.iter().zip(contract.instances()).enumerate() {
                let at = contract.instantiate(&b).map_err(|reason| RegistrationError::BadContract { op: id.clone(), reason })?;
                let shims = Shims { reference: m.reference, cpu: m.cpu, vjp: m.vjp, jvp: m.jvp, vjp_cpu: m.vjp_cpu };
                op.members.push(Arc::new(RegisteredOp::instance(decl, at, actual, source, shims, i)?));
            }
        }
        Ok(op)
    }

    /// One instance: its contract (at its binding), validation plan and shims.
    fn instance(
        decl: &'static OpDecl,
        contract: Contract,
        hash: [u8; 32],
        source: OpSource,
        shims: Shims,
        member: usize,
    ) -> Result<RegisteredOp, RegistrationError> {
        let id = contract.id();
        let plan = Plan::new(&contract).map_err(|reason| RegistrationError::BadContract { op: id.clone(), reason })?;
        let id_shared: Arc<str> = Arc::from(id.as_str());
        Ok(RegisteredOp {
            decl,
            contract,
            hash,
            id,
            id_shared,
            plan,
            source,
            shims,
            members: Vec::new(),
            member,
            binders: Vec::new(),
            vjp_of: None,
        })
    }

    /// A VJP op's instance (see `core::vjp_op`): `inputs` of its tensor inputs are the op's own.
    pub fn derived(
        decl: &'static OpDecl,
        contract: Contract,
        hash: [u8; 32],
        source: OpSource,
        shims: Shims,
        member: usize,
        inputs: usize,
    ) -> Result<RegisteredOp, RegistrationError> {
        let mut op = RegisteredOp::instance(decl, contract, hash, source, shims, member)?;
        op.vjp_of = Some(inputs);
        Ok(op)
    }

    /// Computes where calls bind the dtype variables (after the members are pushed).
    pub fn bind_members(&mut self) {
        if self.contract.is_generic() {
            self.binders = binders(&self.contract);
        }
    }

    /// The instance a call runs: `None` for an op without dtype variables (itself); else the
    /// instance whose binding the inputs' (and parameters') dtypes spell. A dtype outside its
    /// variable's set is a typed error; a call too short to bind is left to validation.
    pub fn member_for(&self, inputs: &[&Tensor], params: &[Scalar]) -> Result<Option<&Arc<RegisteredOp>>, DispatchError> {
        self.member_by(|i| inputs.get(i).map(|t| t.dtype()), params)
    }

    /// [`RegisteredOp::member_for`] from the inputs' dtypes alone (planning, before any tensor
    /// exists).
    pub fn member_for_dtypes(&self, inputs: &[DType], params: &[Scalar]) -> Result<Option<&Arc<RegisteredOp>>, DispatchError> {
        self.member_by(|i| inputs.get(i).copied(), params)
    }

    /// The member whose binding the dtypes spell. Members are in [`Contract::instances`]
    /// order (the first variable outermost), so the index is computed, not searched for.
    fn member_by(&self, input: impl Fn(usize) -> Option<DType>, params: &[Scalar]) -> Result<Option<&Arc<RegisteredOp>>, DispatchError> {
        if self.members.is_empty() {
            return Ok(None);
        }
        let mut at = 0;
        for (v, b) in self.contract.signature.dtype_vars.iter().zip(&self.binders) {
            let found = match b {
                Binder::Input(i, _) => input(*i),
                Binder::Param(i, _) => params.get(*i).map(|p| p.dtype()),
            };
            let Some(found) = found else { return Ok(self.members.first()) };
            let Some(pos) = v.members.iter().position(|m| *m == found) else {
                let what = match b {
                    Binder::Input(_, name) => format!("input `{name}`"),
                    Binder::Param(_, name) => format!("parameter `{name}`"),
                };
                let members = op_contract::generic::members_text(v);
                return Err(DispatchError::NotAMember { op: self.id.clone(), what, var: v.name.clone(), found, members });
            };
            at = at * v.members.len() + pos;
        }
        debug_assert!(at < self.members.len(), "member index {at} out of {} members", self.members.len());
        Ok(self.members.get(at).or(self.members.first()))
    }

    /// Kernel `k`'s source as a backend compiles it: for an instance of an op with dtype
    /// variables, the engine's prelude binding them (`alias T = f16;`, `typedef __half T;`,
    /// see `op_contract::generic`) and then the source; the source alone otherwise. A WGSL
    /// source has its `// @include`s expanded from the embedded headers (as the checker
    /// expanded them, see `op_contract::wgsl_include`).
    pub fn kernel_text(&self, k: usize) -> Result<String, String> {
        use op_contract::contract::KernelLang;
        let src = self.decl.kernels.get(k).ok_or_else(|| format!("kernel {k} is not embedded"))?;
        let utf8 =
            |path: &str, b: &'static [u8]| std::str::from_utf8(b).map_err(|e| format!("the kernel source `{path}` is not UTF-8: {e}"));
        let text = utf8(src.path, src.source)?;
        let (vars, binding) = (&self.contract.signature.dtype_vars, self.contract.binding());
        let lang = self.contract.kernels.get(k).map(|c| c.lang);
        let prelude = match lang {
            _ if vars.is_empty() => String::new(),
            Some(KernelLang::Wgsl) => op_contract::generic::wgsl_prelude(vars, &binding)?,
            Some(KernelLang::Cuda) => op_contract::generic::cuda_prelude(vars, &binding),
            None => String::new(),
        };
        // WGSL has no `#include`: the engine expands the checked includes; NVRTC reads CUDA's.
        match lang {
            Some(KernelLang::Wgsl) if !src.headers.is_empty() => {}
            Some(KernelLang::Wgsl | KernelLang::Cuda) | None => return Ok(format!("{prelude}{text}")),
        }
        let headers = src.headers.iter().map(|(p, b)| Ok((*p, utf8(p, b)?))).collect::<Result<Vec<_>, String>>()?;
        Ok(format!("{prelude}{}", op_contract::wgsl_include::expand(src.path, text, &headers)?))
    }

    /// The key device caches (pipelines, PTX) file this instance's kernels under: the content
    /// hash, and for an instance of an op with dtype variables the binding too (each instance
    /// compiles a different text).
    pub fn cache_hash(&self) -> [u8; 32] {
        if !self.contract.is_generic() {
            return self.hash;
        }
        let mut h = blake3::Hasher::new();
        h.update(&self.hash);
        h.update(self.member_tag().as_bytes());
        *h.finalize().as_bytes()
    }

    /// `T = f32` for an instance of an op with dtype variables, empty otherwise.
    pub fn binding_text(&self) -> String {
        self.contract.binding_text()
    }

    /// A suffix telling instances apart in names and cache keys (`-T=f16`), empty for an op
    /// without dtype variables.
    fn member_tag(&self) -> String {
        if self.contract.is_generic() {
            format!("-{}", self.binding_text().replace(' ', ""))
        } else {
            String::new()
        }
    }

    /// Lowercase hex of the content hash.
    pub fn hash_hex(&self) -> String {
        hex(&self.hash)
    }

    /// Deterministic kernel name (same in every process and machine).
    pub fn kernel_name(&self) -> String {
        match self.contract.is_generic() {
            false => format!("op_{}", &self.hash_hex()[..16]),
            true => format!("op_{}_m{}", &self.hash_hex()[..16], self.member),
        }
    }

    /// Deterministic pipeline label.
    pub fn pipeline_name(&self) -> String {
        format!("{}#{}{}", self.id, &self.hash_hex()[..16], self.member_tag())
    }

    /// Deterministic compiled-cache key.
    pub fn cache_key(&self, backend: BackendKind) -> String {
        format!("{}-{}{}", backend, self.hash_hex(), self.member_tag())
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
    // The forward kernels, then the VJP kernels (`backward = vjp(rule, kernel(...))`).
    let declared = c.kernels.len() + c.vjp_kernels().len();
    if decl.kernels.len() != declared {
        return Err(format!("the contract declares {declared} kernel(s) but {} are embedded", decl.kernels.len()));
    }
    for (k, (src, kc)) in decl.kernels.iter().zip(c.embedded_kernels()).enumerate() {
        if src.path != kc.path || src.entry.is_empty() || src.workgroup_size.contains(&0) {
            return Err(format!(
                "embedded kernel {k} (`{}`, entry `{}`, workgroup {:?}) does not match the contract's `{}`",
                src.path, src.entry, src.workgroup_size, kc.path
            ));
        }
    }
    let n_diff = sig.differentiable_inputs().count();
    match &c.backward {
        Backward::Declared { vjp, jvp, .. } => {
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
    if c.cpu_serves() != decl.cpu.is_some() {
        return Err("the contract's `cpu` kernel and the embedded one disagree".into());
    }
    if vjp_cpu_serves(c, None) != decl.vjp_cpu.is_some() {
        return Err("the contract's VJP `cpu` kernel and the embedded one disagree".into());
    }
    check_members(decl, c)
}

/// Whether a VJP `cpu` kernel serves the instance `binding` (`None`: the contract's own).
fn vjp_cpu_serves(c: &Contract, binding: Option<&[DType]>) -> bool {
    let kernels = c.vjp_cpu_kernels();
    match binding {
        _ if kernels.is_empty() => false,
        None if !c.is_generic() => true,
        None => kernels.iter().any(|k| op_contract::generic::serves(&k.dtypes, &c.signature.dtype_vars, &c.binding())),
        Some(b) => kernels.iter().any(|k| op_contract::generic::serves(&k.dtypes, &c.signature.dtype_vars, b)),
    }
}

/// The embedded instances against the contract's dtype variables: one per binding, in order,
/// each with the rules the contract declares.
/// What the op itself (a handle not pinned to an instance) stands for: for an op with dtype
/// variables, its primary instance (every variable `f32` where that is an instance, else the
/// first), so code that does not pick an instance runs the common one and refuses the others
/// by dtype; the declaration itself otherwise.
fn primary(decl: &OpDecl, contract: &Contract) -> Result<(Contract, Shims, usize), String> {
    if !contract.is_generic() {
        return Ok((
            contract.clone(),
            Shims { reference: decl.reference, cpu: decl.cpu, vjp: decl.vjp, jvp: decl.jvp, vjp_cpu: decl.vjp_cpu },
            0,
        ));
    }
    let instances = contract.instances();
    let i = instances.iter().position(|b| b.iter().all(|d| *d == DType::f32)).unwrap_or(0);
    let m = decl.members.get(i).ok_or_else(|| format!("instance {i} is not embedded"))?;
    Ok((contract.instantiate(&instances[i])?, Shims { reference: m.reference, cpu: m.cpu, vjp: m.vjp, jvp: m.jvp, vjp_cpu: m.vjp_cpu }, i))
}

fn check_members(decl: &OpDecl, c: &Contract) -> Result<(), String> {
    let instances = if c.is_generic() { c.instances() } else { Vec::new() };
    if decl.members.len() != instances.len() {
        return Err(format!("{} instance(s) embedded for {} binding(s) of the dtype variables", decl.members.len(), instances.len()));
    }
    for (m, b) in decl.members.iter().zip(&instances) {
        let text = op_contract::generic::binding_text(&c.signature.dtype_vars, b);
        if m.dtypes != b.as_slice() {
            return Err(format!("the embedded instance for `{text}` is for {:?}", m.dtypes));
        }
        let cpu = c.cpu_for(b).is_some();
        let vjp_cpu = vjp_cpu_serves(c, Some(b));
        if m.cpu.is_some() != cpu
            || m.vjp.is_some() != decl.vjp.is_some()
            || m.jvp.len() != decl.jvp.len()
            || m.vjp_cpu.is_some() != vjp_cpu
        {
            return Err(format!("the embedded rules of instance `{text}` disagree with the contract"));
        }
    }
    Ok(())
}

/// Where a call binds each dtype variable of `c`: its first tensor input (a tensor carries
/// every dtype, `f16` and `bf16` included), else its first parameter (a half-precision
/// parameter arrives as `f32`, so the checker refuses a variable bound only by parameters that
/// has such a member).
fn binders(c: &Contract) -> Vec<Binder> {
    let sig = &c.signature;
    sig.dtype_vars
        .iter()
        .map(|v| {
            let typed = |var: &Option<String>| var.as_deref() == Some(v.name.as_str());
            let (mut ti, mut pi) = (0usize, 0usize);
            let mut param = None;
            for a in &sig.args {
                match a {
                    Arg::Tensor(t) if typed(&t.var) => return Binder::Input(ti, t.name.clone()),
                    Arg::Param(p) if typed(&p.var) && param.is_none() => param = Some(Binder::Param(pi, p.name.clone())),
                    _ => {}
                }
                match a {
                    Arg::Tensor(_) => ti += 1,
                    Arg::Param(_) => pi += 1,
                }
            }
            param.unwrap_or(Binder::Input(usize::MAX, v.name.clone()))
        })
        .collect()
}
