//! The registry and the one call path, as one module: ops by identity (content hash) under
//! `name@version` (idempotent, thread-safe registration, verified replacement, backend
//! settings) here; a call's dispatch in `dispatch`, batched calls in `batch`. Built-in and user
//! ops go through exactly the same functions. It holds backends but never names one: which
//! backends a default registry has is decided by `backends`, the process-wide registry lives
//! with the built-ins.

pub mod batch;
pub mod defaults;
pub mod dispatch;
mod limits;
#[doc(hidden)] // the memo key, for the dispatch tests on the built-ins floor
pub mod memo;
mod rejected;
mod vjp_link;

pub use rejected::Rejection;

use crate::backend::{Backend, Prepared};
use crate::decl::OpDecl;
use crate::error::{DispatchError, RegistrationError};
use crate::kind::BackendKind;
use crate::op::{OpSource, RegisteredOp};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

/// A prepared kernel and the backend and instance (`RegisteredOp::member`) it was prepared for.
pub type PreparedFor = (BackendKind, usize, Arc<dyn Prepared>);

/// A registry slot: the current entry for one `name@version` and its per-op state.
pub struct Slot {
    #[doc(hidden)]
    pub entry: RwLock<Arc<RegisteredOp>>,
    #[doc(hidden)]
    pub setting: KindCell,
    /// Prepared kernels by backend and instance (`RegisteredOp::member`).
    pub prepared: Mutex<Vec<PreparedFor>>,
    /// The last choice of backend, memoised (see `memo::Choice`).
    pub chosen: RwLock<Option<Arc<memo::Choice>>>,
    /// The last validated call, memoised (see `memo`).
    pub memo: memo::MemoCell,
}

/// An `Option<BackendKind>` read without a lock on every call.
#[derive(Default)]
pub struct KindCell(std::sync::atomic::AtomicU8);

impl KindCell {
    #[doc(hidden)]
    pub fn get(&self) -> Option<BackendKind> {
        match self.0.load(Ordering::Acquire) {
            0 => None,
            k => BackendKind::PRIORITY.get(usize::from(k) - 1).copied(),
        }
    }
    #[doc(hidden)]
    pub fn set(&self, kind: Option<BackendKind>) {
        let code = kind.and_then(|k| BackendKind::PRIORITY.iter().position(|p| *p == k)).map_or(0, |i| i as u8 + 1);
        self.0.store(code, Ordering::Release);
    }
}

/// A handle to a registered op. Calls re-read the slot, so backend switches and verified
/// replacements take effect on the next call even through handles obtained before. A handle
/// to an op with dtype variables runs the instance its inputs bind, or, pinned to one instance
/// ([`OpHandle::at`], [`OpHandle::instances`]), that instance only.
#[derive(Clone)]
pub struct OpHandle {
    #[doc(hidden)]
    pub registry: Registry,
    #[doc(hidden)]
    pub slot: Arc<Slot>,
    /// The instance this handle is pinned to (`RegisteredOp::member`), if any.
    pub member: Option<usize>,
}

impl OpHandle {
    /// The op as registered now (the pinned instance, for a pinned handle).
    pub fn op(&self) -> Arc<RegisteredOp> {
        let entry = self.slot.entry.read().map(|e| e.clone()).unwrap_or_else(|p| p.into_inner().clone());
        match self.member.and_then(|m| entry.members.get(m)) {
            Some(m) => m.clone(),
            None => entry,
        }
    }

    /// One handle per instance of an op with dtype variables, each pinned to its instance, in
    /// declaration order; the handle itself for an op without variables.
    pub fn instances(&self) -> Vec<OpHandle> {
        let entry = self.slot.entry.read().map(|e| e.clone()).unwrap_or_else(|p| p.into_inner().clone());
        if entry.members.is_empty() {
            return vec![self.clone()];
        }
        (0..entry.members.len()).map(|m| OpHandle { member: Some(m), ..self.clone() }).collect()
    }

    /// The handle pinned to the instance binding the dtype variables to `binding` (one dtype
    /// per variable, in declaration order). `Err` names the op and the bindings it has.
    pub fn at(&self, binding: &[op_contract::contract::DType]) -> Result<OpHandle, DispatchError> {
        let entry = self.slot.entry.read().map(|e| e.clone()).unwrap_or_else(|p| p.into_inner().clone());
        let found = entry.members.iter().position(|m| m.contract.binding() == binding);
        found.map(|m| OpHandle { member: Some(m), ..self.clone() }).ok_or_else(|| DispatchError::NoInstance {
            op: entry.id.clone(),
            binding: format!("{binding:?}"),
            instances: entry
                .contract
                .instances()
                .iter()
                .map(|b| op_contract::generic::binding_text(&entry.contract.signature.dtype_vars, b))
                .collect::<Vec<_>>()
                .join("; "),
        })
    }
    /// `name@version`.
    pub fn id(&self) -> String {
        self.op().id.clone()
    }
    /// The registry this handle belongs to.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }
    /// The op's VJP op (`<name>/vjp@version`, registered with it where its backward declares
    /// VJP kernels, GPU or `cpu`; see `core::vjp_op`), pinned to the same instance; `None` where
    /// it declares none.
    pub fn vjp_op(&self) -> Option<OpHandle> {
        let op = self.op();
        if op.contract.vjp_kernels().is_empty() && op.contract.vjp_cpu_kernels().is_empty() {
            return None;
        }
        let id = format!("{}/vjp@{}", op.contract.name, op.contract.version);
        let slot = self.registry.inner.slots.read().unwrap_or_else(|p| p.into_inner()).get(&id).cloned()?;
        Some(OpHandle { registry: self.registry.clone(), slot, member: self.member })
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
    /// Calls validated afresh (a call equal to its op's memoised last call is not).
    pub validations: AtomicUsize,
}

#[doc(hidden)]
pub struct Inner {
    #[doc(hidden)]
    pub slots: RwLock<HashMap<String, Arc<Slot>>>,
    #[doc(hidden)]
    pub latest: RwLock<HashMap<String, u32>>,
    #[doc(hidden)]
    pub default_backend: KindCell,
    /// Bumped by every setting change and replacement: a slot's memoised choice of backend is
    /// valid only for the generation it was made in.
    pub generation: std::sync::atomic::AtomicU64,
    #[doc(hidden)]
    pub backends: Vec<Arc<dyn Backend>>,
    #[doc(hidden)]
    pub order: OnceLock<Vec<Arc<dyn Backend>>>,
    #[doc(hidden)]
    pub stats: Stats,
    /// Kernels conformance rejected in this process (see `rejected`).
    pub rejected: rejected::Rejections,
    /// Differentiable VJP ops by the `name@version` of the op they differentiate (see `vjp_link`).
    pub vjp_links: RwLock<HashMap<String, String>>,
    /// Limits on kernel runs under test, per op `name@version` (see `limits`).
    pub run_limits: RwLock<HashMap<String, crate::limits::RunLimits>>,
}

/// The op registry. Cheap to clone (shared).
#[derive(Clone)]
pub struct Registry {
    #[doc(hidden)]
    pub inner: Arc<Inner>,
}

fn read<T: Clone>(l: &RwLock<T>) -> T {
    l.read().map(|g| g.clone()).unwrap_or_else(|p| p.into_inner().clone())
}

/// Whether two declarations are one item: the same `DECL`, or a copy of it (`DECL` is a
/// `const`, so each crate that uses it may hold its own copy, with its own instances of the
/// shims: function addresses cannot tell one item from two). One item has one module path
/// (crate name included), one site and one function name.
fn same_item(a: &OpDecl, b: &OpDecl) -> bool {
    std::ptr::eq(a, b) || (a.module == b.module && a.site == b.site && a.rust_name == b.rust_name)
}

/// A declaration's function by module path: `crate::module::function`.
#[doc(hidden)] // for the registry tests on the built-ins floor
pub fn item_path(d: &OpDecl) -> String {
    let module = d.module.rsplit_once("::").map_or(d.module, |(parent, _)| parent);
    format!("{module}::{}", d.rust_name)
}

/// A declaration's site and function: `path:line (`crate::module::function`)`.
fn declaration(d: &OpDecl) -> String {
    format!("{} (`{}`)", d.site, item_path(d))
}

impl Registry {
    /// An empty registry with the given backends. Default selection tries them by
    /// [`BackendKind::rank`] (the one priority list, with software devices below the native
    /// CPU, see [`Registry::default_order`]); backends of equal rank keep the order given.
    pub fn with_backends(mut backends: Vec<Arc<dyn Backend>>) -> Registry {
        backends.sort_by_key(|b| b.kind().rank(false));
        Registry {
            inner: Arc::new(Inner {
                slots: RwLock::new(HashMap::new()),
                latest: RwLock::new(HashMap::new()),
                default_backend: KindCell::default(),
                generation: std::sync::atomic::AtomicU64::new(0),
                backends,
                order: OnceLock::new(),
                stats: Stats::default(),
                rejected: rejected::Rejections::default(),
                vjp_links: RwLock::new(HashMap::new()),
                run_limits: RwLock::new(HashMap::new()),
            }),
        }
    }

    /// Registers an op. Byte-identical content again returns the same slot (idempotent);
    /// changed content under an existing `name@version` is a `ContentChanged` error.
    pub fn register(&self, decl: &'static OpDecl) -> Result<OpHandle, RegistrationError> {
        self.register_as(decl, OpSource::User)
    }

    /// Registers one of op-runtime's own built-ins (the only path that labels an op built-in).
    pub fn register_builtin(&self, decl: &'static OpDecl) -> Result<OpHandle, RegistrationError> {
        self.register_as(decl, OpSource::Builtin)
    }

    /// Loads `decl` and registers it, and its VJP op where its backward declares VJP kernels
    /// (`core::vjp_op`; a VJP op that cannot be derived fails the registration).
    fn register_as(&self, decl: &'static OpDecl, source: OpSource) -> Result<OpHandle, RegistrationError> {
        let op = RegisteredOp::load_as(decl, source)?;
        let vjp = crate::vjp_op::derive(&op).transpose()?;
        let handle = self.insert(op)?;
        if let Some(v) = vjp {
            self.insert(v)?;
        }
        Ok(handle)
    }

    fn insert(&self, op: RegisteredOp) -> Result<OpHandle, RegistrationError> {
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
        let slot = Arc::new(Slot {
            entry: RwLock::new(Arc::new(op)),
            setting: KindCell::default(),
            prepared: Mutex::new(Vec::new()),
            chosen: RwLock::new(None),
            memo: memo::MemoCell::default(),
        });
        slots.insert(id, slot.clone());
        let mut latest = self.inner.latest.write().unwrap_or_else(|p| p.into_inner());
        let v = latest.entry(name).or_insert(version);
        *v = (*v).max(version);
        Ok(OpHandle { registry: self.clone(), slot, member: None })
    }

    /// The slot again for the same content declared by the same item; else a typed error
    /// naming both declarations.
    fn same_or_conflict(&self, slot: &Arc<Slot>, op: &RegisteredOp) -> Result<OpHandle, RegistrationError> {
        let cur = read(&slot.entry);
        if cur.hash == op.hash && !same_item(cur.decl, op.decl) {
            // Belt and braces: the identity covers the code it can see; two declarations it
            // cannot tell apart are still two functions, and the second must not get the
            // first one's slot (its handle would compute the first one's numbers).
            Err(RegistrationError::SameIdentityOtherItem {
                op: op.id.clone(),
                hash: op.hash_hex(),
                old: declaration(cur.decl),
                new: declaration(op.decl),
            })
        } else if cur.hash == op.hash {
            Ok(OpHandle { registry: self.clone(), slot: slot.clone(), member: None })
        } else {
            Err(RegistrationError::ContentChanged {
                op: op.id.clone(),
                old: cur.hash_hex(),
                old_site: cur.decl.site.to_string(),
                new: op.hash_hex(),
                new_site: op.decl.site.to_string(),
            })
        }
    }

    /// Re-points `name@version` at new content. The engine can always verify that the next call
    /// runs it: every call re-reads the slot's entry, and dispatch executes a prepared kernel
    /// only if it was built from that entry's content hash (a stale one is rebuilt, never run).
    /// The slot's prepared kernels are also dropped here so their memory goes with them.
    pub fn replace(&self, decl: &'static OpDecl) -> Result<OpHandle, RegistrationError> {
        let loaded = RegisteredOp::load(decl)?;
        let slot = {
            let slots = self.inner.slots.read().unwrap_or_else(|p| p.into_inner());
            slots.get(&loaded.id).cloned().ok_or_else(|| RegistrationError::NotRegistered { op: loaded.id.clone() })?
        };
        // The replacement keeps the slot's registration path (a built-in stays built-in).
        let op = RegisteredOp::load_as(decl, read(&slot.entry).source)?;
        // Its VJP op is replaced with it (or registered, if the new content declares one first).
        if let Some(vjp) = crate::vjp_op::derive(&op).transpose()? {
            let existing = self.inner.slots.read().unwrap_or_else(|p| p.into_inner()).get(&vjp.id).cloned();
            match existing {
                Some(vslot) => self.swap_entry(&vslot, vjp),
                None => drop(self.insert(vjp)?),
            }
        }
        self.swap_entry(&slot, op);
        Ok(OpHandle { registry: self.clone(), slot, member: None })
    }

    /// Points `slot` at `op`, dropping what was prepared from the old content.
    fn swap_entry(&self, slot: &Arc<Slot>, op: RegisteredOp) {
        {
            let mut prepared = slot.prepared.lock().unwrap_or_else(|p| p.into_inner());
            let mut entry = slot.entry.write().unwrap_or_else(|p| p.into_inner());
            *entry = Arc::new(op);
            prepared.clear();
        }
        slot.memo.clear();
        self.inner.generation.fetch_add(1, Ordering::AcqRel);
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
            .map(|slot| OpHandle { registry: self.clone(), slot: slot.clone(), member: None })
            .ok_or(DispatchError::UnknownOp { name: name.to_string() })
    }

    /// Every registered op, sorted by id.
    pub fn ops(&self) -> Vec<Arc<RegisteredOp>> {
        let slots = self.inner.slots.read().unwrap_or_else(|p| p.into_inner());
        let mut v: Vec<Arc<RegisteredOp>> = slots.values().map(|s| read(&s.entry)).collect();
        v.sort_by(|a, b| a.id.cmp(&b.id));
        v
    }

    /// The backends, in priority order (software devices ranked as [`BackendKind::rank`] says
    /// once known, see [`Registry::default_order`]).
    pub fn backends(&self) -> &[Arc<dyn Backend>] {
        &self.inner.backends
    }

    /// The backends in the order default selection tries them: [`BackendKind::rank`], with a
    /// backend whose device turns out to be emulated on the CPU (a software adapter) ranked
    /// below the native CPU backend. Computed on first use, so creating a registry never
    /// initialises a device.
    pub fn default_order(&self) -> &[Arc<dyn Backend>] {
        self.inner.order.get_or_init(|| {
            let mut v = self.inner.backends.clone();
            v.sort_by_key(|b| b.kind().rank(b.availability().is_ok() && b.is_software()));
            v
        })
    }

    /// The order default selection tries for `op`: [`Registry::default_order`], except that
    /// where no native CPU backend serves the op (it has no `cpu` kernel for this instance), a
    /// software adapter (a GPU emulated on the CPU, such as lavapipe) ranks below the
    /// reference too: both run on the same CPU, and the emulation only adds its overhead.
    pub fn default_order_for(&self, op: &RegisteredOp) -> Vec<&Arc<dyn Backend>> {
        let order = self.default_order();
        let native = order.iter().any(|b| b.kind() == BackendKind::Cpu && !b.is_software() && b.supports(op).is_ok());
        if native {
            return order.iter().collect();
        }
        let software = |b: &&Arc<dyn Backend>| b.availability().is_ok() && b.is_software();
        order.iter().filter(|b| !software(b)).chain(order.iter().filter(software)).collect()
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
        slot.setting.get().or_else(|| self.inner.default_backend.get())
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
        self.inner.default_backend.set(kind);
        self.inner.generation.fetch_add(1, Ordering::AcqRel);
        for (s, b) in slots.iter().zip(before) {
            self.invalidate_if_changed(s, b);
        }
    }

    /// Sets (or clears) one op's backend.
    pub fn set_op_backend(&self, handle: &OpHandle, kind: Option<BackendKind>) {
        let before = self.effective_setting(&handle.slot);
        handle.slot.setting.set(kind);
        self.inner.generation.fetch_add(1, Ordering::AcqRel);
        self.invalidate_if_changed(&handle.slot, before);
    }

    #[doc(hidden)]
    pub fn setting_for(&self, slot: &Slot) -> Option<BackendKind> {
        self.effective_setting(slot)
    }
}
