//! A catalog entry: what a listing shows of one op linked into a binary (name, version,
//! identity, category, tolerance, kernels per backend with their hashes, its card), derived from
//! its description by loading it, never by registering it.

use crate::sharing::{LocalDevices, OpCard};
use op_contract::contract::{Contract, CpuKernel, KernelLang};
use op_contract::generic::{binding_text, serves};
use op_core::catalog::decls;
use op_core::decl::OpDecl;
use op_core::error::RegistrationError;
use op_core::kind::BackendKind;
use op_core::op::{OpSource, RegisteredOp};
use op_core::receipt::Receipt;
use op_core::trust::TrustList;
use serde::{Deserialize, Serialize};

/// One kernel of an op, as a listing shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelInfo {
    /// The backend that runs it.
    pub backend: BackendKind,
    /// What runs: `reference`, the `cpu` kernel's path, or the kernel file.
    pub kernel: String,
    /// The source language of a GPU kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<KernelLang>,
    /// blake3 of a GPU kernel's source (hex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blake3: Option<String>,
    /// The instances it serves (`T = f32`), for an op with dtype variables.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dtypes: Vec<String>,
    /// A kernel of the op's VJP op (it runs, and is conformed, as `<name>/vjp`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub vjp: bool,
}

/// One op of the catalog.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CatalogEntry {
    /// `name@version`.
    pub id: String,
    /// Namespaced name.
    pub name: String,
    /// Contract version.
    pub version: u32,
    /// The op's identity: the content hash registration gives it (hex), as `OpHandle`'s.
    pub identity: String,
    /// Built-in or user.
    pub source: OpSource,
    /// Semantic category.
    pub category: String,
    /// Tolerance class.
    pub tolerance: String,
    /// The Rust function.
    pub rust_name: String,
    /// Where it is declared (`path:line`, relative to its crate).
    pub site: String,
    /// The declaring module.
    pub module: String,
    /// Every instance of an op with dtype variables (`T = f16`); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<String>,
    /// The reference, the `cpu` kernels and the GPU kernels, in card order, then the VJP op's
    /// `cpu` kernels.
    pub kernels: Vec<KernelInfo>,
    /// The canonical contract (JSON).
    pub contract: serde_json::Value,
    /// The op's card without receipts (trust is decided by whoever reads it, for its devices).
    pub card: OpCard,
    /// Receipts for this content found in a store (filled by the reader that has one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub receipts: Vec<Receipt>,
}

impl CatalogEntry {
    /// The entry of `decl` as `source` (built-in or user: the label comes from who registers
    /// it, as registration's does): it is loaded (its identity re-checked), not registered.
    pub fn of(decl: &'static OpDecl, source: OpSource) -> Result<CatalogEntry, RegistrationError> {
        Ok(CatalogEntry::of_op(&RegisteredOp::load_as(decl, source)?))
    }

    /// The entry of a loaded op.
    pub fn of_op(op: &RegisteredOp) -> CatalogEntry {
        let card = OpCard::of(op, &[], &LocalDevices::new(), &TrustList::new());
        let c = &op.contract;
        CatalogEntry {
            id: op.id.clone(),
            name: c.name.clone(),
            version: c.version,
            identity: op.hash_hex(),
            source: op.source,
            category: c.category.name().to_string(),
            tolerance: c.tolerance.to_string(),
            rust_name: op.decl.rust_name.to_string(),
            site: op.decl.site.to_string(),
            module: op.decl.module.to_string(),
            instances: card.instances.clone(),
            kernels: kernels(&card).into_iter().chain(vjp_cpu_kernels(c)).collect(),
            contract: serde_json::from_str(op.decl.contract_json).unwrap_or(serde_json::Value::Null),
            card,
            receipts: Vec::new(),
        }
    }

    /// The kernels one backend runs.
    pub fn kernels_on(&self, backend: BackendKind) -> impl Iterator<Item = &KernelInfo> {
        self.kernels.iter().filter(move |k| k.backend == backend)
    }
}

/// The kernels of a card: the reference, the `cpu` kernels, each GPU kernel.
fn kernels(card: &OpCard) -> Vec<KernelInfo> {
    let plain = |backend, kernel: &str, dtypes: &[String]| KernelInfo {
        backend,
        kernel: kernel.to_string(),
        language: None,
        blake3: None,
        dtypes: dtypes.to_vec(),
        vjp: false,
    };
    let mut out = vec![plain(BackendKind::Reference, "reference", &card.instances)];
    out.extend(card.cpu.iter().map(|p| plain(BackendKind::Cpu, p, &card.cpu_dtypes)));
    out.extend(card.cpu_more.iter().map(|m| plain(BackendKind::Cpu, &m.path, &m.dtypes)));
    out.extend(card.kernels.iter().map(|k| KernelInfo {
        backend: BackendKind::for_kernel(k.language),
        kernel: k.path.clone(),
        language: Some(k.language),
        blake3: Some(k.blake3.clone()),
        dtypes: k.dtypes.clone(),
        vjp: k.backward,
    }));
    out
}

/// The `cpu` kernels of the op's VJP op (`backward = vjp(rule, ..., cpu(...))`), each with the
/// instances it serves.
fn vjp_cpu_kernels(c: &Contract) -> Vec<KernelInfo> {
    let served = |k: &CpuKernel| -> Vec<String> {
        if !c.is_generic() {
            return Vec::new();
        }
        let vars = &c.signature.dtype_vars;
        c.instances().iter().filter(|b| serves(&k.dtypes, vars, b)).map(|b| binding_text(vars, b)).collect()
    };
    c.vjp_cpu_kernels()
        .iter()
        .map(|k| KernelInfo {
            backend: BackendKind::Cpu,
            kernel: k.path.clone(),
            language: None,
            blake3: None,
            dtypes: served(k),
            vjp: true,
        })
        .collect()
}

/// The catalog entry of every op linked into this binary that loads (an op that does not is a
/// tampered build, left out with its error), sorted by id then identity; `builtins` are the
/// descriptions op-runtime registers as built-ins.
pub fn entries(builtins: &[&'static OpDecl]) -> (Vec<CatalogEntry>, Vec<RegistrationError>) {
    let (mut ok, mut failed) = (Vec::new(), Vec::new());
    for d in decls() {
        let source = if builtins.iter().any(|b| same_decl(b, d)) { OpSource::Builtin } else { OpSource::User };
        match CatalogEntry::of(d, source) {
            Ok(e) => ok.push(e),
            Err(e) => failed.push(e),
        }
    }
    ok.sort_by(|a, b| (&a.id, &a.identity).cmp(&(&b.id, &b.identity)));
    ok.dedup_by(|a, b| a.id == b.id && a.identity == b.identity);
    (ok, failed)
}

/// Whether `candidate` is the description `decl` names: the same function in the same module
/// with the same identity (descriptions are constants, so addresses do not identify them).
pub fn same_decl(candidate: &OpDecl, decl: &OpDecl) -> bool {
    candidate.rust_name == decl.rust_name && candidate.module == decl.module && candidate.identity() == decl.identity()
}
