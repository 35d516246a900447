//! Kernels conformance rejected in this process, per registry: default selection passes over
//! them (the reason in its "tried" list and in the call's provenance), an explicit choice still
//! runs them and its provenance marks the call. Conformance records a rejection through
//! [`Registry::reject_kernel`]; receipts record only success, so a stored receipt can never mark
//! a kernel rejected: the record lives in this process only. Decides no verdict.

use super::Registry;
use crate::device::DeviceProfile;
use crate::kind::BackendKind;
use crate::op::RegisteredOp;
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};

/// A kernel whose conformance failed in this process: one content and instance of an op, on
/// one backend's device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    /// The op's `name@version`.
    pub op: String,
    /// The content hash it was rejected for.
    pub content_hash: [u8; 32],
    /// The instance (`RegisteredOp::member`) it was rejected at.
    pub member: usize,
    /// The instance as text (`T = f32`); empty for an op without dtype variables.
    pub dtypes: String,
    /// The backend whose kernel was rejected.
    pub backend: BackendKind,
    /// The device it was rejected on.
    pub device: String,
    /// What conformance found (failed cases and classes of defect).
    pub summary: String,
}

impl Rejection {
    /// Why the kernel is not chosen by default, as a "tried" list and a provenance entry say it.
    pub fn reason(&self) -> String {
        let at = if self.dtypes.is_empty() { String::new() } else { format!(" at {}", self.dtypes) };
        format!(
            "its kernel{at} was rejected by conformance on this device ({}) in this process: {}; default selection passes \
             over it, `CallOptions::on(BackendKind::{:?})` still runs it",
            self.device, self.summary, self.backend
        )
    }
}

/// The registry's rejections (a handful at most: a linear scan).
#[derive(Default)]
pub struct Rejections(RwLock<Vec<Arc<Rejection>>>);

impl Rejections {
    /// The rejection of `op`'s kernel on `backend`, if conformance rejected it here.
    pub fn of(&self, op: &RegisteredOp, backend: BackendKind) -> Option<Arc<Rejection>> {
        let all = self.0.read().unwrap_or_else(|p| p.into_inner());
        all.iter().find(|r| r.backend == backend && r.member == op.member && r.content_hash == op.hash).cloned()
    }
}

impl Registry {
    /// Records that conformance rejected `op`'s kernel on `backend` (on `device`), with what it
    /// found; default selection passes over it from the next call on (the settings generation
    /// moves, so no memoised choice survives). Recording the same kernel again keeps the first.
    pub fn reject_kernel(&self, op: &RegisteredOp, backend: BackendKind, device: &DeviceProfile, summary: String) {
        {
            let mut all = self.inner.rejected.0.write().unwrap_or_else(|p| p.into_inner());
            if all.iter().any(|r| r.backend == backend && r.member == op.member && r.content_hash == op.hash) {
                return;
            }
            all.push(Arc::new(Rejection {
                op: op.id.clone(),
                content_hash: op.hash,
                member: op.member,
                dtypes: op.binding_text(),
                backend,
                device: device.to_string(),
                summary,
            }));
        }
        self.inner.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Every kernel conformance rejected in this process through this registry, in order.
    pub fn rejections(&self) -> Vec<Rejection> {
        self.inner.rejected.0.read().unwrap_or_else(|p| p.into_inner()).iter().map(|r| (**r).clone()).collect()
    }
}
