//! The reference backend: the annotated function itself on the host, the anchor of numerical
//! truth, always available. Also the shared step of every host backend: run a forward shim
//! through the one shim runner and lay out its outputs (canary-padded in guarded runs).

use crate::core::backend::{pad_with_canaries, Backend, BackendError, ExecRequest, Prepared};
use crate::core::decl::ShimFn;
use crate::core::device::DeviceProfile;
use crate::core::kind::BackendKind;
use crate::core::op::RegisteredOp;
use crate::core::shim::{self, Rule};
use crate::core::tensor::Tensor;
use std::sync::{Arc, OnceLock};

/// Runs a forward shim for a validated call (host backends).
pub(crate) fn run_forward(shim: ShimFn, req: &ExecRequest<'_>) -> Result<Vec<Tensor>, BackendError> {
    let outs = shim::run(req.op, shim, req.inputs, req.params, req.bound, Rule::Forward).map_err(|e| BackendError::Kernel(e.0))?;
    if req.guard == 0 {
        return Ok(outs);
    }
    outs.into_iter().map(|o| pad_with_canaries(o, req.guard)).collect()
}

/// A host function made ready: nothing to build, the shim is called directly.
pub(crate) struct ShimPrepared {
    pub(crate) hash: [u8; 32],
    pub(crate) shim: ShimFn,
}

impl Prepared for ShimPrepared {
    fn content_hash(&self) -> [u8; 32] {
        self.hash
    }
    fn execute(&self, req: &ExecRequest<'_>) -> Result<Vec<Tensor>, BackendError> {
        run_forward(self.shim, req)
    }
}

pub(crate) use crate::core::hostmem::host_memory;

/// The host device profile of `backend`, computed once.
pub(crate) fn host_profile(cell: &OnceLock<Arc<DeviceProfile>>, backend: BackendKind) -> Arc<DeviceProfile> {
    cell.get_or_init(|| Arc::new(DeviceProfile::host(backend))).clone()
}

/// The reference backend: always available, runs the annotated function.
#[derive(Default)]
pub struct ReferenceBackend {
    profile: OnceLock<Arc<DeviceProfile>>,
}

impl Backend for ReferenceBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Reference
    }
    fn availability(&self) -> Result<(), BackendError> {
        Ok(())
    }
    fn profile(&self) -> Result<Arc<DeviceProfile>, BackendError> {
        Ok(host_profile(&self.profile, BackendKind::Reference))
    }
    fn allocation_limit(&self) -> Option<u64> {
        host_memory()
    }
    fn supports(&self, _op: &RegisteredOp) -> Result<(), BackendError> {
        Ok(())
    }
    fn prepare(&self, op: &Arc<RegisteredOp>) -> Result<Arc<dyn Prepared>, BackendError> {
        Ok(Arc::new(ShimPrepared { hash: op.hash, shim: op.shims.reference }))
    }
}
