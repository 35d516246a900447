//! What a `BurnOp` shares with the backward steps it registers in burn's graph: the op, its
//! parameters and call options, and the log of what its calls ran (provenance, the last
//! backward's typed error). It calls the registry and the tape's pullback and records; it
//! converts nothing and never talks to burn.

use crate::error::Error;
use op_runtime::provenance::{ProvenanceEntry, ProvenanceRecord};
use op_runtime::{CallOptions, OpHandle, Scalar, Tape, Tensor};
use std::sync::Mutex;

/// What the calls made for a [`crate::BurnOp`] ran.
#[derive(Debug, Default)]
pub(crate) struct Log {
    /// The last forward call's entry.
    pub forward: Option<ProvenanceEntry>,
    /// The last backward's dispatched calls (empty where the VJP rule ran on the host).
    pub backward: Option<ProvenanceRecord>,
    /// Every entry since `recording(true)`, in order, when recording.
    pub all: Option<ProvenanceRecord>,
    /// The typed error of the last failed backward step (burn's backward returns no error).
    pub error: Option<Error>,
}

/// What the op's backward steps share with the `BurnOp` they came from.
pub(crate) struct Shared {
    pub handle: OpHandle,
    pub params: Vec<Scalar>,
    pub options: CallOptions,
    /// The op's `name@version`.
    pub name: String,
    pub log: Mutex<Log>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}({:?})", self.name, self.params)
    }
}

impl Shared {
    pub(crate) fn log(&self) -> std::sync::MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Calls the op through the registry on runtime tensors; records the call's provenance.
    pub(crate) fn dispatch(&self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, Error> {
        let out = self.handle.call_with(inputs, &self.params, self.options)?;
        let mut log = self.log();
        if let Some(all) = log.all.as_mut() {
            all.push(out.provenance.clone());
        }
        log.forward = Some(out.provenance);
        Ok(out.outputs)
    }

    /// The tape's pullback of one call (the op's VJP op, VJP rule or composite graph, as
    /// `Tape::backward` runs it); records the dispatched calls it made.
    pub(crate) fn pullback(&self, inputs: Vec<Tensor>, cotangent: Tensor) -> Result<Vec<Option<Tensor>>, Error> {
        let mut tape = Tape::with_registry(self.handle.registry());
        tape.set_call_options(self.options);
        let pb = tape.pullback(&self.handle, inputs, &self.params, vec![cotangent])?;
        let mut log = self.log();
        if let Some(all) = log.all.as_mut() {
            all.entries.extend(pb.provenance.entries.iter().cloned());
        }
        log.backward = Some(pb.provenance);
        Ok(pb.grads)
    }
}
