//! What a `CandleOp` shares with the candle hooks it hands out: the op, its parameters and call
//! options, and the log of what its calls ran (provenance, the last hook's typed error). It
//! calls the registry and records; it converts nothing and never talks to candle.

use crate::error::Error;
use op_runtime::provenance::{ProvenanceEntry, ProvenanceRecord};
use op_runtime::{CallOptions, OpHandle, Scalar, Tensor};
use std::sync::Mutex;

/// What the calls made for a [`crate::CandleOp`] ran.
#[derive(Debug, Default)]
pub(crate) struct Log {
    /// The last forward call's entry.
    pub forward: Option<ProvenanceEntry>,
    /// The last backward's dispatched calls (empty where the VJP rule ran on the host).
    pub backward: Option<ProvenanceRecord>,
    /// Every entry since `recording(true)`, in order, when recording.
    pub all: Option<ProvenanceRecord>,
    /// The typed error of the last failed hook (candle carries only its text).
    pub error: Option<Error>,
}

/// What the op's hooks share with the `CandleOp` they came from.
pub(crate) struct Shared {
    pub handle: OpHandle,
    pub params: Vec<Scalar>,
    pub options: CallOptions,
    /// The op's `name@version`, interned (candle's hooks name an op by `&'static str`).
    pub name: &'static str,
    pub log: Mutex<Log>,
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
}
