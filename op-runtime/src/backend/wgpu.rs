//! The wgpu backend: runs an op's WGSL kernel through the shared `WgpuEngine`, binding buffers
//! and the uniform block as the op's descriptor says (inputs read-only storage, outputs
//! read-write storage, one 4-byte uniform field per dim or param in descriptor order), with
//! `ceil(threads / workgroup_size)` workgroups. Pipelines are built in `prepare` and cached by
//! (content hash, device) in the engine. Guarded runs (conformance) bind each output as a
//! window after an aligned front guard, with the back guard inside the binding, so a write
//! past the end lands on canaries instead of being clamped by wgpu's bounds checks.

use super::{field_value, gpu_kernel, Backend, BackendKind, ExecRequest, FieldValue, Prepared};
use crate::device::DeviceProfile;
use crate::gpu::wgpu_engine::{Slot, SlotKind, WgpuEngine};
use crate::plan::IExpr;
use crate::registry::RegisteredOp;
use crate::tensor::{Data, Scalar, Tensor};
use op_contract::contract::{Binding, KernelLang};
use std::sync::{Arc, OnceLock};

/// The wgpu backend.
#[derive(Default)]
pub struct WgpuBackend {
    profile: OnceLock<Result<Arc<DeviceProfile>, String>>,
}

fn engine() -> Result<&'static WgpuEngine, String> {
    WgpuEngine::shared().map_err(|e| e.to_string())
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
        gpu_kernel(op, KernelLang::Wgsl).map(|_| ())
    }
    fn prepare(&self, op: &Arc<RegisteredOp>) -> Result<Arc<dyn Prepared>, String> {
        let k = gpu_kernel(op, KernelLang::Wgsl)?;
        let src = op.decl.kernels.get(k).ok_or("the op's WGSL source is not embedded")?;
        let source = std::str::from_utf8(src.source).map_err(|e| format!("the WGSL source `{}` is not UTF-8: {e}", src.path))?;
        // Build the pipeline now (cached by content hash on this device), so compilation and
        // validation errors surface from `prepare`, never from a later call.
        let kinds = slot_kinds(op, k)?;
        engine()?.prepare(op.hash, source, src.entry, &kinds).map_err(|e| e.to_string())?;
        let threads = op.plan.compile(&op.contract.kernels[k].threads).ok_or("launch geometry `threads` uses an unbound symbol")?;
        Ok(Arc::new(WgpuPrepared { hash: op.hash, kernel: k, threads }))
    }
}

/// The slot kinds of kernel `k`'s bindings: inputs read-only, outputs read-write, uniform.
fn slot_kinds(op: &RegisteredOp, k: usize) -> Result<Vec<SlotKind>, String> {
    let outputs = &op.contract.signature.outputs;
    op.contract.kernels[k]
        .bindings
        .iter()
        .map(|b| match b {
            Binding::Buffer { name, .. } if outputs.iter().any(|o| &o.name == name) => Ok(SlotKind::ReadWrite),
            Binding::Buffer { name, .. } if op.contract.signature.inputs().any(|t| &t.name == name) => Ok(SlotKind::Read),
            Binding::Buffer { name, .. } => Err(format!("binding `{name}` names no tensor of the signature")),
            Binding::Uniform { .. } => Ok(SlotKind::Uniform),
        })
        .collect()
}

/// Where a guarded output lives in its device buffer: `front` bytes before the data (a multiple
/// of the storage offset alignment, at least the front guard), `data` bytes, then the back
/// guard; the binding window starts at `front` and covers data and back guard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GuardLayout {
    pub front: u64,
    pub data: u64,
    pub guard: u64,
    pub total: u64,
    pub window: u64,
}

impl GuardLayout {
    pub(crate) fn new(data: u64, guard: u64, align: u64) -> GuardLayout {
        let align = align.max(4);
        let front = guard.div_ceil(align) * align;
        let window = (data + guard).div_ceil(4) * 4;
        GuardLayout { front, data, guard, total: front + window, window }
    }
    /// The bytes returned to the caller: `guard` canary bytes, data, `guard` canary bytes.
    pub(crate) fn visible<'a>(&self, all: &'a [u8]) -> Option<&'a [u8]> {
        let start = usize::try_from(self.front - self.guard).ok()?;
        let end = usize::try_from(self.front + self.data + self.guard).ok()?;
        all.get(start..end)
    }
}

struct WgpuPrepared {
    hash: [u8; 32],
    kernel: usize,
    /// Launch geometry, compiled once.
    threads: IExpr,
}

/// An input's bytes: borrowed where the host is little-endian and the storage is 32-bit (the
/// common case: no copy of large inputs), else encoded.
fn input_bytes(t: &Tensor) -> std::borrow::Cow<'_, [u8]> {
    #[cfg(target_endian = "little")]
    match t.data() {
        Data::F32(v) => return std::borrow::Cow::Borrowed(bytemuck::cast_slice(v)),
        Data::U32(v) => return std::borrow::Cow::Borrowed(bytemuck::cast_slice(v)),
        Data::I32(v) => return std::borrow::Cow::Borrowed(bytemuck::cast_slice(v)),
        _ => {}
    }
    std::borrow::Cow::Owned(t.data().to_le_bytes())
}

/// The uniform block: one 4-byte field per dim (u32) or param, in descriptor order.
pub(crate) fn uniform_bytes(op: &RegisteredOp, fields: &[String], values: &[i128], params: &[Scalar]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(fields.len() * 4);
    for f in fields {
        out.extend_from_slice(&match field_value(op, f, values, params)? {
            FieldValue::U32(v) => v.to_le_bytes(),
            FieldValue::I32(v) => v.to_le_bytes(),
            FieldValue::F32(v) => v.to_le_bytes(),
        });
    }
    Ok(out)
}

impl Prepared for WgpuPrepared {
    fn content_hash(&self) -> [u8; 32] {
        self.hash
    }
    fn execute(&self, req: &ExecRequest<'_>) -> Result<Vec<Tensor>, String> {
        let op = req.op;
        let kernel = op.contract.kernels.get(self.kernel).ok_or("kernel index out of range")?;
        let src = op.decl.kernels.get(self.kernel).ok_or("the op's WGSL source is not embedded")?;
        let source = std::str::from_utf8(src.source).map_err(|e| e.to_string())?;
        let engine = engine()?;
        let align = engine.storage_offset_alignment();
        let inputs: Vec<&str> = op.contract.signature.inputs().map(|t| t.name.as_str()).collect();
        let outputs: Vec<&str> = op.contract.signature.outputs.iter().map(|t| t.name.as_str()).collect();
        enum Owned<'t> {
            Read(std::borrow::Cow<'t, [u8]>),
            Out { bytes: Vec<u8>, len: usize, index: usize, layout: Option<GuardLayout> },
            Uniform(Vec<u8>),
        }
        let mut owned: Vec<Owned> = Vec::with_capacity(kernel.bindings.len());
        for b in &kernel.bindings {
            match b {
                Binding::Buffer { name, .. } => {
                    if let Some(i) = inputs.iter().position(|n| n == name) {
                        let t = req.inputs.get(i).ok_or_else(|| format!("input `{name}` missing"))?;
                        owned.push(Owned::Read(input_bytes(t)));
                    } else if let Some(o) = outputs.iter().position(|n| n == name) {
                        let dtype = op.contract.signature.outputs[o].dtype;
                        let numel = crate::tensor::checked_numel(&req.bound.out_shapes[o]).ok_or("output size overflows")?;
                        let data = (numel as u64).checked_mul(dtype.size() as u64).ok_or("output size overflows")?;
                        if req.guard == 0 {
                            let len = usize::try_from(data).map_err(|_| "output too large")?;
                            owned.push(Owned::Out { bytes: Vec::new(), len, index: o, layout: None });
                        } else {
                            let guard = (req.guard as u64).checked_mul(dtype.size() as u64).ok_or("guard too large")?;
                            let layout = GuardLayout::new(data, guard, align);
                            let len = usize::try_from(layout.total).map_err(|_| "output too large")?;
                            owned.push(Owned::Out { bytes: vec![super::CANARY_BYTE; len], len, index: o, layout: Some(layout) });
                        }
                    } else {
                        return Err(format!("binding `{name}` names no tensor"));
                    }
                }
                Binding::Uniform { fields } => owned.push(Owned::Uniform(uniform_bytes(op, fields, &req.bound.values, req.params)?)),
            }
        }
        let threads = self.threads.eval(&req.bound.values).ok_or("launch geometry `threads` cannot be evaluated")?;
        let threads = u64::try_from(threads).map_err(|_| format!("launch geometry `threads` = {threads} is negative"))?;
        let slots: Vec<Slot<'_>> = owned
            .iter()
            .map(|o| match o {
                Owned::Read(b) => Slot::Read(b),
                Owned::Uniform(b) => Slot::Uniform(b),
                Owned::Out { len, layout: None, .. } => Slot::Output { len: *len },
                Owned::Out { bytes, layout: Some(l), .. } => Slot::Guarded { init: bytes, offset: l.front, size: l.window },
            })
            .collect();
        let read = engine.run(op.hash, source, src.entry, src.workgroup_size, &slots, threads).map_err(|e| e.to_string())?;
        let mut outs: Vec<Option<Tensor>> = vec![None; outputs.len()];
        let mut it = read.into_iter();
        for o in &owned {
            if let Owned::Out { index, layout, .. } = o {
                let bytes = it.next().ok_or("missing readback")?;
                let dtype = op.contract.signature.outputs[*index].dtype;
                let (bytes, shape) = match layout {
                    None => (&bytes[..], req.bound.out_shapes[*index].clone()),
                    Some(l) => {
                        let v = l.visible(&bytes).ok_or("guarded readback is shorter than its layout")?;
                        (v, vec![v.len() / dtype.size()])
                    }
                };
                let data = Data::from_le_bytes(dtype, bytes).map_err(|e| e.to_string())?;
                outs[*index] = Some(Tensor::new(shape, data).map_err(|e| e.to_string())?);
            }
        }
        outs.into_iter().enumerate().map(|(i, t)| t.ok_or_else(|| format!("output `{}` is not bound by the kernel", outputs[i]))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::GuardLayout;

    #[test]
    fn guard_layout_aligns_front_and_covers_back() {
        let l = GuardLayout::new(12, 64, 256);
        assert_eq!((l.front, l.window, l.total), (256, 76, 332));
        let all: Vec<u8> = (0..332u32).map(|i| i as u8).collect();
        assert_eq!(l.visible(&all).map(|v| v.len()), Some(64 + 12 + 64));
        let l = GuardLayout::new(0, 4, 256);
        assert_eq!((l.front, l.window), (256, 4));
    }
}
