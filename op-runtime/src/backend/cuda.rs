//! The CUDA backend: compiles an op's CUDA kernel with NVRTC (PTX cached on disk under the
//! content hash) and launches it with buffers and scalars in the descriptor's parameter order.

use super::{field_value, gpu_kernel, Backend, BackendKind, ExecRequest, FieldValue, Prepared};
use crate::device::DeviceProfile;
use crate::gpu::cuda_engine::{CudaArg, CudaEngine, CudaKernel};
use crate::plan::IExpr;
use crate::registry::RegisteredOp;
use crate::tensor::{Data, Tensor};
use op_contract::contract::{Binding, KernelLang};
use std::sync::{Arc, OnceLock};

/// The CUDA backend.
#[derive(Default)]
pub struct CudaBackend {
    profile: OnceLock<Result<Arc<DeviceProfile>, String>>,
}

fn engine() -> Result<&'static CudaEngine, String> {
    CudaEngine::shared().map_err(|e| e.to_string())
}

impl Backend for CudaBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }
    fn availability(&self) -> Result<(), String> {
        self.profile().map(|_| ())
    }
    fn profile(&self) -> Result<Arc<DeviceProfile>, String> {
        self.profile.get_or_init(|| engine().map(|e| Arc::new(e.profile().clone()))).clone()
    }
    fn supports(&self, op: &RegisteredOp) -> Result<(), String> {
        gpu_kernel(op, KernelLang::Cuda).map(|_| ())
    }
    fn prepare(&self, op: &Arc<RegisteredOp>) -> Result<Arc<dyn Prepared>, String> {
        let k = gpu_kernel(op, KernelLang::Cuda)?;
        let src = &op.decl.kernels[k];
        let source = String::from_utf8(src.source.to_vec()).map_err(|e| e.to_string())?;
        // Headers are visible under the name the source includes them by (relative to its dir).
        let dir = std::path::Path::new(src.path).parent().map(|p| p.to_string_lossy().to_string()).unwrap_or_default();
        let headers: Vec<(String, String)> = src
            .headers
            .iter()
            .map(|(p, b)| {
                let name = p.strip_prefix(&format!("{dir}/")).unwrap_or(p).to_string();
                (name, String::from_utf8_lossy(b).to_string())
            })
            .collect();
        let kernel = engine()?.compile(op.hash, &source, &headers, src.entry, &[]).map_err(|e| e.to_string())?;
        let threads = op.plan.compile(&op.contract.kernels[k].threads).ok_or("launch geometry `threads` uses an unbound symbol")?;
        Ok(Arc::new(CudaPrepared { hash: op.hash, kernel_index: k, kernel, block: src.workgroup_size[0], threads }))
    }
}

struct CudaPrepared {
    hash: [u8; 32],
    kernel_index: usize,
    kernel: Arc<CudaKernel>,
    block: u32,
    /// Launch geometry, compiled once.
    threads: IExpr,
}

impl Prepared for CudaPrepared {
    fn content_hash(&self) -> [u8; 32] {
        self.hash
    }
    fn execute(&self, req: &ExecRequest<'_>) -> Result<Vec<Tensor>, String> {
        let op = req.op;
        let kernel = &op.contract.kernels[self.kernel_index];
        let inputs: Vec<&str> = op.contract.signature.inputs().map(|t| t.name.as_str()).collect();
        let outputs: Vec<&str> = op.contract.signature.outputs.iter().map(|t| t.name.as_str()).collect();
        enum A {
            R(Vec<u8>),
            RW(Vec<u8>, usize, usize),
            U32(u32),
            I32(i32),
            F32(f32),
        }
        let mut owned = Vec::new();
        for b in &kernel.bindings {
            match b {
                Binding::Buffer { name, .. } => {
                    if let Some(i) = inputs.iter().position(|n| n == name) {
                        owned.push(A::R(req.inputs[i].data().to_le_bytes()));
                    } else if let Some(o) = outputs.iter().position(|n| n == name) {
                        let dtype = op.contract.signature.outputs[o].dtype;
                        // Guarded: guard canaries, data, guard canaries; the kernel gets a pointer
                        // past the front guard (see `CudaArg::Guarded`).
                        let n = req.bound.out_shapes[o].iter().product::<usize>() + 2 * req.guard;
                        owned.push(A::RW(vec![super::CANARY_BYTE; n * dtype.size()], o, req.guard * dtype.size()));
                    }
                }
                Binding::Uniform { fields } => {
                    for f in fields {
                        owned.push(match field_value(op, f, &req.bound.values, req.params)? {
                            FieldValue::U32(v) => A::U32(v),
                            FieldValue::I32(v) => A::I32(v),
                            FieldValue::F32(v) => A::F32(v),
                        });
                    }
                }
            }
        }
        let args: Vec<CudaArg<'_>> = owned
            .iter()
            .map(|a| match a {
                A::R(b) => CudaArg::Read(b),
                A::RW(b, _, 0) => CudaArg::ReadWrite(b),
                A::RW(b, _, offset) => CudaArg::Guarded { init: b, offset: *offset },
                A::U32(v) => CudaArg::U32(*v),
                A::I32(v) => CudaArg::I32(*v),
                A::F32(v) => CudaArg::F32(*v),
            })
            .collect();
        let threads = self.threads.eval(&req.bound.values).ok_or("launch geometry `threads` cannot be evaluated")?;
        let threads = u64::try_from(threads).map_err(|_| format!("launch geometry `threads` = {threads} is negative"))?;
        let read = engine()?.launch(&self.kernel, &args, threads, self.block).map_err(|e| e.to_string())?;
        let mut outs: Vec<Option<Tensor>> = vec![None; outputs.len()];
        let mut it = read.into_iter();
        for a in &owned {
            if let A::RW(_, o, _) = a {
                let bytes = it.next().ok_or("missing readback")?;
                let data = Data::from_le_bytes(op.contract.signature.outputs[*o].dtype, &bytes).map_err(|e| e.to_string())?;
                let shape = if req.guard > 0 { vec![data.len()] } else { req.bound.out_shapes[*o].clone() };
                outs[*o] = Some(Tensor::new(shape, data).map_err(|e| e.to_string())?);
            }
        }
        outs.into_iter().enumerate().map(|(i, t)| t.ok_or_else(|| format!("output `{}` is not bound by the kernel", outputs[i]))).collect()
    }
}
