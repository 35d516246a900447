//! The CPU backend: runs an op's `cpu = path` kernel on the host. Ops without one are
//! `Unsupported` here (the reference backend runs them), never silently rerouted.

use super::host::{host_profile, ShimPrepared};
use crate::core::backend::{Backend, BackendError, Prepared};
use crate::core::device::DeviceProfile;
use crate::core::kind::BackendKind;
use crate::core::op::RegisteredOp;
use std::sync::{Arc, OnceLock};

/// The CPU backend.
#[derive(Default)]
pub struct CpuBackend {
    profile: OnceLock<Arc<DeviceProfile>>,
}

fn no_kernel() -> BackendError {
    BackendError::Unsupported("the op declares no `cpu` kernel".into())
}

impl Backend for CpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }
    fn availability(&self) -> Result<(), BackendError> {
        Ok(())
    }
    fn profile(&self) -> Result<Arc<DeviceProfile>, BackendError> {
        Ok(host_profile(&self.profile, "cpu"))
    }
    fn allocation_limit(&self) -> Option<u64> {
        super::host::host_memory()
    }
    fn supports(&self, op: &RegisteredOp) -> Result<(), BackendError> {
        op.decl.cpu.map(|_| ()).ok_or_else(no_kernel)
    }
    fn prepare(&self, op: &Arc<RegisteredOp>) -> Result<Arc<dyn Prepared>, BackendError> {
        let shim = op.decl.cpu.ok_or_else(no_kernel)?;
        Ok(Arc::new(ShimPrepared { hash: op.hash, shim }))
    }
}
