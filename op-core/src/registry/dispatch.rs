//! The one dispatch path, shared by built-in and user ops: lookup -> validate -> output shapes
//! -> choose backend -> (prepare) -> execute -> provenance entry. Backend order: per-call choice
//! > per-op setting > global default > available backends by priority. No silent fallback.

use super::memo::{CallKey, Choice, Memo};
use super::{OpHandle, Registry, Slot};
use crate::backend::{Backend, BackendError, ExecRequest, Prepared};
use crate::broadcast;
use crate::device::Placement;
use crate::error::{DispatchError, KernelCompilationError, KernelFallbackExhaustedError};
use crate::kind::BackendKind;
use crate::op::RegisteredOp;
use crate::plan::Bound;
use crate::provenance::ProvenanceEntry;
use crate::tensor::{Scalar, Tensor};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A chosen backend with the op's prepared kernel on it, and what selection says about it.
struct Chosen<'a> {
    backend: &'a Arc<dyn Backend>,
    prepared: Arc<dyn Prepared>,
    /// Why the kernel is one conformance rejected in this process (an explicit choice only).
    rejected: Option<Arc<str>>,
    /// The rejected kernels default selection passed over, and why.
    passed_over: Option<Arc<str>>,
}

/// Per-call options.
#[derive(Clone, Copy, Debug, Default)]
pub struct CallOptions {
    /// Run on exactly this backend (an error if it cannot), overriding every setting.
    pub backend: Option<BackendKind>,
}

impl CallOptions {
    /// Options choosing a backend.
    pub fn on(kind: BackendKind) -> Self {
        CallOptions { backend: Some(kind) }
    }
}

/// The result of a call: outputs and the call's provenance entry.
#[derive(Debug)]
pub struct Outcome {
    /// The outputs, in signature order.
    pub outputs: Vec<Tensor>,
    /// What ran: op, content hash, backend, device.
    pub provenance: ProvenanceEntry,
}

impl Outcome {
    /// The first output (every op declares at least one); `None` only if there is none.
    pub fn output(self) -> Option<Tensor> {
        self.outputs.into_iter().next()
    }
}

impl OpHandle {
    /// Calls the op with default backend selection. Inputs that live on a device run on that
    /// device's backend (before any per-op or global setting); a device tensor the chosen
    /// backend cannot use is a typed `BackendError::Placement`, never an implicit copy.
    pub fn call(&self, inputs: &[&Tensor], params: &[Scalar]) -> Result<Outcome, DispatchError> {
        self.call_with(inputs, params, CallOptions::default())
    }

    /// Calls the op with options.
    pub fn call_with(&self, inputs: &[&Tensor], params: &[Scalar], opts: CallOptions) -> Result<Outcome, DispatchError> {
        self.registry.dispatch(&self.slot, self.member, inputs, params, opts, 0)
    }

    /// Runs on one backend with `guard` canary elements around each output (conformance).
    pub fn call_guarded(
        &self,
        inputs: &[&Tensor],
        params: &[Scalar],
        backend: BackendKind,
        guard: usize,
    ) -> Result<Outcome, DispatchError> {
        self.registry.dispatch(&self.slot, self.member, inputs, params, CallOptions::on(backend), guard)
    }
}

impl Registry {
    /// Calls an op by name (`name` or `name@version`).
    pub fn call(&self, name: &str, inputs: &[&Tensor], params: &[Scalar]) -> Result<Outcome, DispatchError> {
        self.lookup(name)?.call(inputs, params)
    }

    /// The one call path. A call equal to the slot's memoised one (see `memo`) reuses its
    /// instance, validation and backend; any other call resolves and validates afresh.
    pub fn dispatch(
        &self,
        slot: &Arc<Slot>,
        pinned: Option<usize>,
        inputs: &[&Tensor],
        params: &[Scalar],
        opts: CallOptions,
        guard: usize,
    ) -> Result<Outcome, DispatchError> {
        // The generation is read before the entry and settings, so a memo never outlives them.
        let generation = self.inner.generation.load(Ordering::Acquire);
        // Inputs on a device choose that device's backend unless the call names one.
        let placed = inputs.iter().find_map(|t| match t.placement() {
            Placement::Device(d) => Some(d.backend),
            Placement::Host => None,
        });
        let key = CallKey { generation, strict: opts.backend.or(placed).or_else(|| self.setting_for(slot)), pinned };
        let memo = match slot.memo.get(&key, inputs, params) {
            Some(m) if placed.is_some() => check_placement(&m.op, inputs, m.choice.kind).map(|()| m)?,
            Some(m) => m,
            None => self.resolve(slot, key, placed.is_some(), inputs, params)?,
        };
        let (op, c) = (&memo.op, &memo.choice);
        // An op declared `broadcast = numpy` runs on its operands expanded to one shape.
        let expanded = match op.plan.broadcasts() {
            true => memo.bound.out_shapes.first().map(|to| broadcast::expand_inputs(op, inputs, to)).transpose()?.flatten(),
            false => None,
        };
        let expanded_refs: Vec<&Tensor> = expanded.iter().flatten().collect();
        let inputs = if expanded.is_some() { &expanded_refs[..] } else { inputs };
        let req = ExecRequest { op, bound: &memo.bound, inputs, params, guard };
        let outputs = c.prepared.execute(&req).map_err(|source| DispatchError::Execution { op: op.id.clone(), backend: c.kind, source })?;
        let provenance = ProvenanceEntry::new(op, c.kind, c.device.clone()).noting(c.rejected.clone(), c.passed_over.clone());
        Ok(Outcome { outputs, provenance })
    }

    /// A call the memo does not hold: the instance, validation, backend choice, placement (when
    /// an input is on a device) and allocation checks, memoised once they all pass.
    fn resolve(&self, slot: &Slot, key: CallKey, placed: bool, inputs: &[&Tensor], params: &[Scalar]) -> Result<Arc<Memo>, DispatchError> {
        self.inner.stats.validations.fetch_add(1, Ordering::Relaxed);
        let entry: Arc<RegisteredOp> = slot.entry.read().map(|e| e.clone()).unwrap_or_else(|p| p.into_inner().clone());
        // An op with dtype variables runs the instance the inputs' dtypes bind (or the one the
        // handle is pinned to: validation then refuses inputs of other dtypes).
        let op: &Arc<RegisteredOp> = match key.pinned.and_then(|m| entry.members.get(m)) {
            Some(m) => m,
            None => entry.member_for(inputs, params)?.unwrap_or(&entry),
        };
        let bound = op.plan.validate(inputs, params, None)?;
        let c = self.choice(slot, op, key.strict, key.generation)?;
        if placed {
            // Only a device tensor can be on the wrong side of the chosen backend.
            check_placement(op, inputs, c.kind)?;
        }
        check_allocation(op, &bound, c.kind, c.limit)?;
        let memo = Arc::new(Memo::new(key, inputs, params, op.clone(), bound, c));
        slot.memo.set(memo.clone());
        Ok(memo)
    }

    /// The slot's memoised choice if it was made for this content, this strict setting and the
    /// current generation of settings; else a fresh choice, memoised.
    fn choice(
        &self,
        slot: &Slot,
        op: &Arc<RegisteredOp>,
        strict: Option<BackendKind>,
        generation: u64,
    ) -> Result<Arc<Choice>, DispatchError> {
        if let Some(c) = slot.chosen.read().unwrap_or_else(|p| p.into_inner()).as_ref() {
            if c.strict == strict && c.generation == generation && c.member == op.member && c.prepared.content_hash() == op.hash {
                return Ok(c.clone());
            }
        }
        let Chosen { backend, prepared, rejected, passed_over } = self.choose(slot, op, strict)?;
        let device =
            backend.profile().map_err(|reason| DispatchError::Unavailable { op: op.id.clone(), backend: backend.kind(), reason })?;
        let c = Arc::new(Choice {
            strict,
            generation,
            member: op.member,
            kind: backend.kind(),
            prepared,
            device,
            limit: backend.allocation_limit(),
            rejected,
            passed_over,
        });
        *slot.chosen.write().unwrap_or_else(|p| p.into_inner()) = Some(c.clone());
        Ok(c)
    }

    /// Chooses the backend and its prepared kernel. A strict choice (per call, per op, global
    /// setting, or where the inputs live) runs what it names, a kernel conformance rejected in
    /// this process included (marked for the provenance); default selection passes over such a
    /// kernel, saying why in its "tried" list and in the provenance of the call it makes.
    fn choose<'a>(&'a self, slot: &Slot, op: &Arc<RegisteredOp>, strict: Option<BackendKind>) -> Result<Chosen<'a>, DispatchError> {
        if let Some(kind) = strict {
            let b = self.backend(kind).ok_or_else(|| DispatchError::Unavailable {
                op: op.id.clone(),
                backend: kind,
                reason: BackendError::Unavailable("not compiled into this build".into()),
            })?;
            b.supports(op).map_err(|reason| DispatchError::Unsupported { op: op.id.clone(), backend: kind, reason })?;
            b.availability().map_err(|reason| DispatchError::Unavailable { op: op.id.clone(), backend: kind, reason })?;
            let prepared = self.prepared(slot, op, b)?;
            let rejected = self.inner.rejected.of(op, kind).map(|r| Arc::from(r.reason()));
            return Ok(Chosen { backend: b, prepared, rejected, passed_over: None });
        }
        let mut tried: Vec<(BackendKind, BackendError)> = Vec::new();
        for b in self.default_order_for(op) {
            if let Err(why) = b.supports(op) {
                tried.push((b.kind(), why));
                continue;
            }
            if let Err(why) = b.availability() {
                tried.push((b.kind(), why));
                continue;
            }
            if let Some(r) = self.inner.rejected.of(op, b.kind()) {
                tried.push((b.kind(), BackendError::Rejected(r.reason().into())));
                continue;
            }
            let prepared = self.prepared(slot, op, b)?;
            let passed_over: Vec<String> =
                tried.iter().filter(|(_, why)| matches!(why, BackendError::Rejected(_))).map(|(k, why)| format!("{k}: {why}")).collect();
            let passed_over = (!passed_over.is_empty()).then(|| Arc::from(passed_over.join("; ")));
            return Ok(Chosen { backend: b, prepared, rejected: None, passed_over });
        }
        Err(KernelFallbackExhaustedError { op: op.id.clone(), tried }.into())
    }

    /// The slot's prepared kernel for a backend, built if absent or stale.
    fn prepared(&self, slot: &Slot, op: &Arc<RegisteredOp>, b: &Arc<dyn Backend>) -> Result<Arc<dyn Prepared>, DispatchError> {
        let kind = b.kind();
        {
            let cache = slot.prepared.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((_, _, p)) = cache.iter().find(|(k, m, p)| *k == kind && *m == op.member && p.content_hash() == op.hash) {
                return Ok(p.clone());
            }
        }
        self.inner.stats.prepares.fetch_add(1, Ordering::Relaxed);
        match b.prepare(op) {
            Ok(p) if p.content_hash() == op.hash => {
                let mut cache = slot.prepared.lock().unwrap_or_else(|p| p.into_inner());
                cache.retain(|(k, m, _)| !(*k == kind && *m == op.member));
                cache.push((kind, op.member, p.clone()));
                Ok(p)
            }
            Ok(_) => {
                Err(self.compilation_error(op, kind, BackendError::Compile("the backend built a kernel for different content".into())))
            }
            Err(cause) => Err(self.compilation_error(op, kind, cause)),
        }
    }

    fn compilation_error(&self, op: &RegisteredOp, failed: BackendKind, cause: BackendError) -> DispatchError {
        let remaining = self
            .backends()
            .iter()
            .filter(|b| {
                b.kind() != failed && b.supports(op).is_ok() && b.availability().is_ok() && self.inner.rejected.of(op, b.kind()).is_none()
            })
            .map(|b| b.kind())
            .collect();
        KernelCompilationError { op: op.id.clone(), backend: failed, cause: Box::new(cause), remaining }.into()
    }
}

/// Refuses a device tensor passed to a backend of another kind (a host backend, or another
/// device's): nothing is ever copied implicitly. Which instance of the backend's device the
/// tensor is on is the backend's to check.
fn check_placement(op: &RegisteredOp, inputs: &[&Tensor], kind: BackendKind) -> Result<(), DispatchError> {
    for (t, decl) in inputs.iter().zip(op.contract.signature.inputs()) {
        let Placement::Device(d) = t.placement() else { continue };
        if d.backend == kind {
            continue;
        }
        let runs = match kind {
            BackendKind::Reference | BackendKind::Cpu => "runs on the host".to_string(),
            other => format!("runs on its own {other} device"),
        };
        let reason = format!(
            "input `{}` lives on {d}, and the {kind} backend {runs}: move it with `to_host()` (or `to_device`) first, \
             or call the op on {} (no implicit copy)",
            decl.name, d.backend
        );
        return Err(DispatchError::Execution { op: op.id.clone(), backend: kind, source: BackendError::Placement(reason.into()) });
    }
    Ok(())
}

/// Refuses a call whose outputs together exceed what the backend can allocate, before anything
/// is allocated (a 4 TiB matmul output is a typed error, not an aborted process).
fn check_allocation(op: &RegisteredOp, bound: &Bound, kind: BackendKind, limit: Option<u64>) -> Result<(), DispatchError> {
    let Some(limit) = limit else { return Ok(()) };
    let mut total: u128 = 0;
    for (o, shape) in op.contract.signature.outputs.iter().zip(&bound.out_shapes) {
        let bytes = shape.iter().fold(o.dtype.size() as u128, |acc, &d| acc.saturating_mul(d as u128));
        total = total.saturating_add(bytes);
        if total > limit as u128 {
            return Err(DispatchError::OutputTooLarge {
                op: op.id.clone(),
                output: o.name.clone(),
                shape: shape.to_vec(),
                dtype: o.dtype,
                limit: format!("{limit} bytes for this call's outputs on {kind} ({})", limit_source(kind)),
            });
        }
    }
    Ok(())
}

fn limit_source(kind: BackendKind) -> &'static str {
    match kind {
        BackendKind::Reference | BackendKind::Cpu => "the host's physical memory",
        BackendKind::Wgpu | BackendKind::Cuda => "the device's memory",
    }
}
