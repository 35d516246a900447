//! The wgpu backend: runs an op's WGSL kernel through the shared `WgpuEngine`, binding buffers
//! and the uniform block as the op's descriptor says. Pipelines are cached by content hash.

use super::{Backend, BackendKind, ExecRequest, Prepared};
use crate::device::DeviceProfile;
use crate::gpu::wgpu_engine::{Slot, WgpuEngine};
use crate::registry::RegisteredOp;
use crate::tensor::{Data, Scalar, Tensor};
use op_spec::contract::{Binding, KernelLang};
use std::sync::{Arc, OnceLock};

/// The wgpu backend.
#[derive(Default)]
pub struct WgpuBackend {
    profile: OnceLock<Result<Arc<DeviceProfile>, String>>,
}

fn engine() -> Result<&'static WgpuEngine, String> {
    WgpuEngine::shared().map_err(|e| e.to_string())
}

/// Index of the op's WGSL kernel.
pub(crate) fn wgsl_kernel(op: &RegisteredOp) -> Option<usize> {
    op.contract.kernels.iter().position(|k| k.lang == KernelLang::Wgsl)
}

impl Backend for WgpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Wgpu
    }
    fn availability(&self) -> Result<(), String> {
        self.profile().map(|_| ())
    }
    fn profile(&self) -> Result<Arc<DeviceProfile>, String> {
        self.profile.get_or_init(|| engine().map(|e| Arc::new(e.profile().clone()))).clone()
    }
    fn supports(&self, op: &RegisteredOp) -> Result<(), String> {
        wgsl_kernel(op).map(|_| ()).ok_or_else(|| "the op declares no WGSL kernel".to_string())
    }
    fn prepare(&self, op: &Arc<RegisteredOp>) -> Result<Arc<dyn Prepared>, String> {
        let k = wgsl_kernel(op).ok_or_else(|| "the op declares no WGSL kernel".to_string())?;
        let src = std::str::from_utf8(op.decl.kernels[k].source).map_err(|e| e.to_string())?;
        // Build the pipeline now so compilation errors surface from `prepare`.
        let p = WgpuPrepared { hash: op.hash, kernel: k };
        let slots = p.dummy_slots(op);
        let slot_refs: Vec<Slot<'_>> = slots.iter().map(|(kind, b)| kind.slot(b)).collect();
        engine()?.run(op.hash, src, op.decl.kernels[k].entry, op.decl.kernels[k].workgroup_size, &slot_refs, 0).map_err(|e| e.to_string())?;
        Ok(Arc::new(p))
    }
}

#[derive(Clone, Copy)]
enum K {
    R,
    RW,
    U,
}

impl K {
    fn slot<'a>(&self, b: &'a [u8]) -> Slot<'a> {
        match self {
            K::R => Slot::Read(b),
            K::RW => Slot::ReadWrite(b),
            K::U => Slot::Uniform(b),
        }
    }
}

struct WgpuPrepared {
    hash: [u8; 32],
    kernel: usize,
}

/// The uniform block: one 4-byte field per dim (u32) or param, in descriptor order.
pub(crate) fn uniform_bytes(op: &RegisteredOp, fields: &[String], values: &[i128], params: &[Scalar]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(fields.len() * 4);
    let param_names: Vec<&str> = op.contract.signature.params().map(|p| p.name.as_str()).collect();
    for f in fields {
        if let Some(pi) = param_names.iter().position(|p| p == f) {
            let b = match params[pi] {
                Scalar::U32(v) => v.to_le_bytes(),
                Scalar::I32(v) => v.to_le_bytes(),
                Scalar::F32(v) => v.to_le_bytes(),
                other => return Err(format!("parameter `{f}` of type `{}` cannot be passed in a uniform block", other.dtype())),
            };
            out.extend_from_slice(&b);
        } else {
            let k = op.plan.syms.iter().position(|s| s == f).ok_or_else(|| format!("uniform field `{f}` is not a symbol"))?;
            let v = u32::try_from(values[k]).map_err(|_| format!("dim `{f}` = {} does not fit the uniform's u32", values[k]))?;
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    Ok(out)
}

impl WgpuPrepared {
    fn dummy_slots(&self, op: &RegisteredOp) -> Vec<(K, Vec<u8>)> {
        op.contract.kernels[self.kernel]
            .bindings
            .iter()
            .map(|b| match b {
                Binding::Buffer { name, .. } if op.contract.signature.outputs.iter().any(|o| &o.name == name) => (K::RW, vec![0u8; 4]),
                Binding::Buffer { .. } => (K::R, vec![0u8; 4]),
                Binding::Uniform { fields } => (K::U, vec![0u8; fields.len().max(1) * 4]),
            })
            .collect()
    }
}

impl Prepared for WgpuPrepared {
    fn content_hash(&self) -> [u8; 32] {
        self.hash
    }
    fn execute(&self, req: &ExecRequest<'_>) -> Result<Vec<Tensor>, String> {
        let op = req.op;
        let kernel = &op.contract.kernels[self.kernel];
        let src = &op.decl.kernels[self.kernel];
        let source = std::str::from_utf8(src.source).map_err(|e| e.to_string())?;
        let inputs: Vec<&str> = op.contract.signature.inputs().map(|t| t.name.as_str()).collect();
        let outputs: Vec<&str> = op.contract.signature.outputs.iter().map(|t| t.name.as_str()).collect();
        let mut owned: Vec<(K, Vec<u8>, Option<usize>)> = Vec::new();
        for b in &kernel.bindings {
            match b {
                Binding::Buffer { name, .. } => {
                    if let Some(i) = inputs.iter().position(|n| n == name) {
                        owned.push((K::R, req.inputs[i].data().to_le_bytes(), None));
                    } else if let Some(o) = outputs.iter().position(|n| n == name) {
                        let dtype = op.contract.signature.outputs[o].dtype;
                        let n = req.bound.out_shapes[o].iter().product::<usize>() + 2 * req.guard;
                        owned.push((K::RW, vec![super::CANARY_BYTE; n * dtype.size()], Some(o)));
                    } else {
                        return Err(format!("binding `{name}` names no tensor"));
                    }
                }
                Binding::Uniform { fields } => owned.push((K::U, uniform_bytes(op, fields, &req.bound.values, req.params)?, None)),
            }
        }
        if req.guard > 0 {
            return Err("guarded runs on wgpu are not supported by this build".to_string());
        }
        let threads = op.plan.eval(&kernel.threads, req.bound).ok_or("launch geometry `threads` cannot be evaluated")?;
        let threads = u64::try_from(threads).map_err(|_| format!("launch geometry `threads` = {threads} is negative"))?;
        let slots: Vec<Slot<'_>> = owned.iter().map(|(k, b, _)| k.slot(b)).collect();
        let read = engine()?.run(op.hash, source, src.entry, src.workgroup_size, &slots, threads).map_err(|e| e.to_string())?;
        let mut outs: Vec<Option<Tensor>> = vec![None; outputs.len()];
        let mut it = read.into_iter();
        for (_, _, o) in owned.iter() {
            if let Some(o) = o {
                let bytes = it.next().ok_or("missing readback")?;
                let dtype = op.contract.signature.outputs[*o].dtype;
                let data = Data::from_le_bytes(dtype, &bytes).map_err(|e| e.to_string())?;
                let shape = if req.guard > 0 { vec![data.len()] } else { req.bound.out_shapes[*o].clone() };
                outs[*o] = Some(Tensor::new(shape, data).map_err(|e| e.to_string())?);
            }
        }
        outs.into_iter().enumerate().map(|(i, t)| t.ok_or_else(|| format!("output `{}` is not bound by the kernel", outputs[i]))).collect()
    }
}
