//! The host backends: `reference` (the annotated function, the anchor of numerical truth) and
//! `cpu` (the op's optional fast CPU kernel). Both run shims through a `Call` context.

use super::{pad_with_canaries, Backend, BackendKind, ExecRequest, Prepared};
use crate::decl::{Call, ShimFn};
use crate::device::DeviceProfile;
use crate::registry::RegisteredOp;
use crate::tensor::Tensor;
use std::sync::{Arc, OnceLock};

/// Runs a forward shim for a validated call.
pub(crate) fn run_forward(shim: ShimFn, req: &ExecRequest<'_>) -> Result<Vec<Tensor>, String> {
    let op = req.op;
    let mut call = Call::new(op, req.inputs, req.params, req.bound, (&[], None, &[]));
    shim(&mut call).map_err(|e| e.0)?;
    // Collected in place (same layout), so no second allocation.
    call.outputs
        .into_iter()
        .enumerate()
        .map(|(i, o)| pad_with_canaries(o.ok_or_else(|| format!("op `{}`: output {i} was not produced", op.id))?, req.guard))
        .collect()
}

struct ShimPrepared {
    hash: [u8; 32],
    shim: ShimFn,
}

impl Prepared for ShimPrepared {
    fn content_hash(&self) -> [u8; 32] {
        self.hash
    }
    fn execute(&self, req: &ExecRequest<'_>) -> Result<Vec<Tensor>, String> {
        run_forward(self.shim, req)
    }
}

fn host_profile(cell: &OnceLock<Arc<DeviceProfile>>, name: &str) -> Arc<DeviceProfile> {
    cell.get_or_init(|| Arc::new(DeviceProfile::host(name))).clone()
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
    fn availability(&self) -> Result<(), String> {
        Ok(())
    }
    fn profile(&self) -> Result<Arc<DeviceProfile>, String> {
        Ok(host_profile(&self.profile, "reference"))
    }
    fn supports(&self, _op: &RegisteredOp) -> Result<(), String> {
        Ok(())
    }
    fn prepare(&self, op: &Arc<RegisteredOp>) -> Result<Arc<dyn Prepared>, String> {
        Ok(Arc::new(ShimPrepared { hash: op.hash, shim: op.decl.reference }))
    }
}

/// The CPU backend: runs the op's `cpu = path` kernel where one is declared.
#[derive(Default)]
pub struct CpuBackend {
    profile: OnceLock<Arc<DeviceProfile>>,
}

impl Backend for CpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }
    fn availability(&self) -> Result<(), String> {
        Ok(())
    }
    fn profile(&self) -> Result<Arc<DeviceProfile>, String> {
        Ok(host_profile(&self.profile, "cpu"))
    }
    fn supports(&self, op: &RegisteredOp) -> Result<(), String> {
        op.decl.cpu.map(|_| ()).ok_or_else(|| "the op declares no `cpu` kernel".to_string())
    }
    fn prepare(&self, op: &Arc<RegisteredOp>) -> Result<Arc<dyn Prepared>, String> {
        let shim = op.decl.cpu.ok_or_else(|| "the op declares no `cpu` kernel".to_string())?;
        Ok(Arc::new(ShimPrepared { hash: op.hash, shim }))
    }
}
