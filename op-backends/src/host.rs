//! The reference backend: the annotated function itself on the host, the anchor of numerical
//! truth, always available. Also the shared step of every host backend: run a forward shim
//! through the one shim runner and lay out its outputs (canary-padded in guarded runs).

use op_core::backend::{pad_with_canaries, Backend, BackendError, ExecRequest, Prepared};
use op_core::decl::ShimFn;
use op_core::device::DeviceProfile;
use op_core::kind::BackendKind;
use op_core::op::RegisteredOp;
use op_core::shim::{self, Rule};
use op_core::tensor::Tensor;
use std::sync::{Arc, OnceLock};

/// Runs a forward shim for a validated call (host backends).
pub fn run_forward(shim: ShimFn, req: &ExecRequest<'_>) -> Result<Vec<Tensor>, BackendError> {
    let outs = shim::run(req.op, shim, req.inputs, req.params, req.bound, Rule::Forward).map_err(|e| BackendError::Kernel(e.0.into()))?;
    if req.guard == 0 {
        return Ok(outs);
    }
    outs.into_iter().map(|o| pad_with_canaries(o, req.guard)).collect()
}

/// A host function made ready: nothing to build, the shim is called directly.
pub struct ShimPrepared {
    pub hash: [u8; 32],
    pub shim: ShimFn,
}

impl Prepared for ShimPrepared {
    fn content_hash(&self) -> [u8; 32] {
        self.hash
    }
    fn execute(&self, req: &ExecRequest<'_>) -> Result<Vec<Tensor>, BackendError> {
        run_forward(self.shim, req)
    }
}

pub use op_core::hostmem::host_memory;

/// The host device profile of `backend`, computed once.
pub fn host_profile(cell: &OnceLock<Arc<DeviceProfile>>, backend: BackendKind) -> Arc<DeviceProfile> {
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
