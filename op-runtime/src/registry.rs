//! The registry: ops by identity (content hash) under `name@version`, idempotent and
//! thread-safe registration, verified replacement, backend settings. Built-in and user ops go
//! through exactly the same functions here; dispatch itself lives in `dispatch`.

use crate::backend::{Backend, BackendKind, CpuBackend, Prepared, ReferenceBackend};
use crate::decl::OpDecl;
use crate::error::{DispatchError, KernelRegistrationError};
use crate::plan::Plan;
use op_contract::contract::Contract;
use op_contract::identity::{hex, identity, KernelBytes};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

/// Where an op comes from (shown on cards; dispatch never looks at it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpSource {
    /// Declared inside op-runtime (`builtin/...`).
    Builtin,
    /// Declared by a user crate.
    User,
}

/// A registered op: its static description, parsed contract, identity and validation plan.
#[derive(Debug)]
pub struct RegisteredOp {
    /// The generated description.
    pub decl: &'static OpDecl,
    /// The parsed contract.
    pub contract: Contract,
    /// Identity: blake3 over contract, reference tokens and kernel bytes.
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
    /// Loads and verifies a declaration: the contract must parse and the compile-time hash must
    /// equal the hash recomputed from the embedded contract, tokens and kernel bytes.
    pub fn load(decl: &'static OpDecl) -> Result<RegisteredOp, KernelRegistrationError> {
        let contract: Contract = serde_json::from_str(decl.contract_json)
            .map_err(|e| KernelRegistrationError::BadContract { op: decl.rust_name.to_string(), reason: e.to_string() })?;
        let id = contract.id();
        let kernels: Vec<KernelBytes<'_>> =
            decl.kernels.iter().map(|k| KernelBytes { path: k.path, bytes: k.source, headers: k.headers.to_vec() }).collect();
        let actual = identity(decl.contract_json, decl.body_tokens, &kernels);
        if actual != decl.hash {
            return Err(KernelRegistrationError::IdentityMismatch { op: id, declared: hex(&decl.hash), actual: hex(&actual) });
        }
        let plan = Plan::new(&contract).map_err(|reason| KernelRegistrationError::BadContract { op: id.clone(), reason })?;
        let source = if contract.name.starts_with("builtin/") { OpSource::Builtin } else { OpSource::User };
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

/// A registry slot: the current entry for one `name@version` and its per-op state.
pub(crate) struct Slot {
    pub(crate) entry: RwLock<Arc<RegisteredOp>>,
    pub(crate) setting: RwLock<Option<BackendKind>>,
    pub(crate) prepared: Mutex<Vec<(BackendKind, Arc<dyn Prepared>)>>,
}

/// A handle to a registered op. Calls re-read the slot, so backend switches and verified
/// replacements take effect on the next call even through handles obtained before.
#[derive(Clone)]
pub struct OpHandle {
    pub(crate) registry: Registry,
    pub(crate) slot: Arc<Slot>,
}

impl OpHandle {
    /// The op as registered now.
    pub fn op(&self) -> Arc<RegisteredOp> {
        self.slot.entry.read().map(|e| e.clone()).unwrap_or_else(|p| p.into_inner().clone())
    }
    /// `name@version`.
    pub fn id(&self) -> String {
        self.op().id.clone()
    }
    /// The registry this handle belongs to.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }
}

impl std::fmt::Debug for OpHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OpHandle({})", self.id())
    }
}

/// Counters that let tests observe caching behaviour.
#[derive(Debug, Default)]
pub struct Stats {
    /// Backend `prepare` calls (kernel builds).
    pub prepares: AtomicUsize,
    /// Prepared caches dropped because an op's effective backend setting changed.
    pub invalidations: AtomicUsize,
}

pub(crate) struct Inner {
    pub(crate) slots: RwLock<HashMap<String, Arc<Slot>>>,
    pub(crate) latest: RwLock<HashMap<String, u32>>,
    pub(crate) default_backend: RwLock<Option<BackendKind>>,
    pub(crate) backends: Vec<Arc<dyn Backend>>,
    pub(crate) stats: Stats,
}

/// The op registry. Cheap to clone (shared).
#[derive(Clone)]
pub struct Registry {
    pub(crate) inner: Arc<Inner>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

fn read<T: Clone>(l: &RwLock<T>) -> T {
    l.read().map(|g| g.clone()).unwrap_or_else(|p| p.into_inner().clone())
}

impl Registry {
    /// An empty registry with every backend compiled in (reference, cpu, wgpu, cuda).
    #[allow(clippy::vec_init_then_push)] // the pushes are feature-gated
    pub fn new() -> Registry {
        let mut backends: Vec<Arc<dyn Backend>> = Vec::new();
        #[cfg(feature = "cuda")]
        backends.push(Arc::new(crate::backend::cuda::CudaBackend::default()));
        #[cfg(feature = "wgpu")]
        backends.push(Arc::new(crate::backend::wgpu::WgpuBackend::default()));
        backends.push(Arc::new(CpuBackend::default()));
        backends.push(Arc::new(ReferenceBackend::default()));
        Registry::with_backends(backends)
    }

    /// An empty registry with the given backends.
    pub fn with_backends(backends: Vec<Arc<dyn Backend>>) -> Registry {
        Registry {
            inner: Arc::new(Inner {
                slots: RwLock::new(HashMap::new()),
                latest: RwLock::new(HashMap::new()),
                default_backend: RwLock::new(None),
                backends,
                stats: Stats::default(),
            }),
        }
    }

    /// A registry holding the built-in ops.
    pub fn with_builtins() -> Registry {
        let r = Registry::new();
        crate::builtins::register_all(&r);
        r
    }

    /// Registers an op. Byte-identical content again returns the same slot (idempotent);
    /// changed content under an existing `name@version` is a `ContentChanged` error.
    pub fn register(&self, decl: &'static OpDecl) -> Result<OpHandle, KernelRegistrationError> {
        let op = RegisteredOp::load(decl)?;
        let id = op.id.clone();
        {
            let slots = self.inner.slots.read().unwrap_or_else(|p| p.into_inner());
            if let Some(slot) = slots.get(&id) {
                return self.same_or_conflict(slot, &op);
            }
        }
        let mut slots = self.inner.slots.write().unwrap_or_else(|p| p.into_inner());
        if let Some(slot) = slots.get(&id) {
            return self.same_or_conflict(slot, &op);
        }
        let (name, version) = (op.contract.name.clone(), op.contract.version);
        let slot = Arc::new(Slot { entry: RwLock::new(Arc::new(op)), setting: RwLock::new(None), prepared: Mutex::new(Vec::new()) });
        slots.insert(id, slot.clone());
        let mut latest = self.inner.latest.write().unwrap_or_else(|p| p.into_inner());
        let v = latest.entry(name).or_insert(version);
        *v = (*v).max(version);
        Ok(OpHandle { registry: self.clone(), slot })
    }

    fn same_or_conflict(&self, slot: &Arc<Slot>, op: &RegisteredOp) -> Result<OpHandle, KernelRegistrationError> {
        let cur = read(&slot.entry);
        if cur.hash == op.hash {
            Ok(OpHandle { registry: self.clone(), slot: slot.clone() })
        } else {
            Err(KernelRegistrationError::ContentChanged { op: op.id.clone(), old: cur.hash_hex(), new: op.hash_hex() })
        }
    }

    /// Re-points `name@version` at new content. The engine can always verify that the next call
    /// runs it: every call re-reads the slot's entry, and dispatch executes a prepared kernel
    /// only if it was built from that entry's content hash (a stale one is rebuilt, never run).
    /// The slot's prepared kernels are also dropped here so their memory goes with them.
    pub fn replace(&self, decl: &'static OpDecl) -> Result<OpHandle, KernelRegistrationError> {
        let op = Arc::new(RegisteredOp::load(decl)?);
        let slot = {
            let slots = self.inner.slots.read().unwrap_or_else(|p| p.into_inner());
            slots.get(&op.id).cloned().ok_or_else(|| KernelRegistrationError::NotRegistered { op: op.id.clone() })?
        };
        {
            let mut prepared = slot.prepared.lock().unwrap_or_else(|p| p.into_inner());
            let mut entry = slot.entry.write().unwrap_or_else(|p| p.into_inner());
            *entry = op;
            prepared.clear();
        }
        Ok(OpHandle { registry: self.clone(), slot })
    }

    /// Looks an op up by `name@version`, or by `name` for its latest version.
    pub fn lookup(&self, name: &str) -> Result<OpHandle, DispatchError> {
        let id = if name.contains('@') {
            name.to_string()
        } else {
            let latest = self.inner.latest.read().unwrap_or_else(|p| p.into_inner());
            match latest.get(name) {
                Some(v) => format!("{name}@{v}"),
                None => return Err(DispatchError::UnknownOp { name: name.to_string() }),
            }
        };
        let slots = self.inner.slots.read().unwrap_or_else(|p| p.into_inner());
        slots
            .get(&id)
            .map(|slot| OpHandle { registry: self.clone(), slot: slot.clone() })
            .ok_or(DispatchError::UnknownOp { name: name.to_string() })
    }

    /// Every registered op, sorted by id.
    pub fn ops(&self) -> Vec<Arc<RegisteredOp>> {
        let slots = self.inner.slots.read().unwrap_or_else(|p| p.into_inner());
        let mut v: Vec<Arc<RegisteredOp>> = slots.values().map(|s| read(&s.entry)).collect();
        v.sort_by(|a, b| a.id.cmp(&b.id));
        v
    }

    /// The backends, in priority order.
    pub fn backends(&self) -> &[Arc<dyn Backend>] {
        &self.inner.backends
    }

    /// The backend of a kind, if compiled in.
    pub fn backend(&self, kind: BackendKind) -> Option<&Arc<dyn Backend>> {
        self.inner.backends.iter().find(|b| b.kind() == kind)
    }

    /// Caching counters.
    pub fn stats(&self) -> &Stats {
        &self.inner.stats
    }

    fn effective_setting(&self, slot: &Slot) -> Option<BackendKind> {
        read(&slot.setting).or_else(|| read(&self.inner.default_backend))
    }

    fn invalidate_if_changed(&self, slot: &Slot, before: Option<BackendKind>) {
        if self.effective_setting(slot) != before {
            let mut p = slot.prepared.lock().unwrap_or_else(|p| p.into_inner());
            if !p.is_empty() {
                p.clear();
            }
            self.inner.stats.invalidations.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Sets (or clears) the backend for every op without a per-op setting. Takes effect on the
    /// next call; prepared kernels are dropped only for ops whose effective setting changed.
    pub fn set_default_backend(&self, kind: Option<BackendKind>) {
        let slots: Vec<Arc<Slot>> = self.inner.slots.read().unwrap_or_else(|p| p.into_inner()).values().cloned().collect();
        let before: Vec<Option<BackendKind>> = slots.iter().map(|s| self.effective_setting(s)).collect();
        *self.inner.default_backend.write().unwrap_or_else(|p| p.into_inner()) = kind;
        for (s, b) in slots.iter().zip(before) {
            self.invalidate_if_changed(s, b);
        }
    }

    /// Sets (or clears) one op's backend.
    pub fn set_op_backend(&self, handle: &OpHandle, kind: Option<BackendKind>) {
        let before = self.effective_setting(&handle.slot);
        *handle.slot.setting.write().unwrap_or_else(|p| p.into_inner()) = kind;
        self.invalidate_if_changed(&handle.slot, before);
    }

    pub(crate) fn setting_for(&self, slot: &Slot) -> Option<BackendKind> {
        self.effective_setting(slot)
    }
}

static GLOBAL: OnceLock<Registry> = OnceLock::new();

/// The process-wide registry, holding the built-ins.
pub fn registry() -> &'static Registry {
    GLOBAL.get_or_init(Registry::with_builtins)
}

/// Registers an op in the process-wide registry.
pub fn register(decl: &'static OpDecl) -> Result<OpHandle, KernelRegistrationError> {
    registry().register(decl)
}
