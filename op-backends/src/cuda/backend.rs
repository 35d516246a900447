//! The CUDA backend: compiles an op's CUDA kernel with NVRTC (PTX cached on disk under the
//! content hash) and launches it with buffers and scalars in the descriptor's parameter order,
//! marshalled through the same launch plan as wgpu. Plain calls zero-fill outputs; guarded runs
//! surround them with canaries.

use super::resident::CudaBuffer;
use super::{CudaArg, CudaEngine, CudaError, CudaGrid, CudaKernel};
use crate::launch::{Arg, FieldValue, LaunchPlan};
use crate::resident;
use op_contract::contract::KernelLang;
use op_core::backend::{Backend, BackendError, Cause, ExecRequest, Prepared, CANARY_BYTE};
use op_core::device::DeviceProfile;
use op_core::kind::BackendKind;
use op_core::op::RegisteredOp;
use op_core::tensor::Device;
use op_core::tensor::Tensor;
use std::sync::{Arc, OnceLock};

/// The CUDA backend.
#[derive(Default)]
pub struct CudaBackend {
    profile: OnceLock<Result<Arc<DeviceProfile>, BackendError>>,
}

fn engine() -> Result<&'static CudaEngine, BackendError> {
    CudaEngine::shared().map_err(BackendError::from)
}

impl From<CudaError> for BackendError {
    /// Its category, with the `CudaError` itself as the cause ([`Cause::error`]).
    fn from(e: CudaError) -> BackendError {
        match e {
            CudaError::Unavailable { .. } => BackendError::Unavailable(Cause::of(e)),
            CudaError::Compile { .. } | CudaError::MissingEntry { .. } | CudaError::Cache { .. } => BackendError::Compile(Cause::of(e)),
            CudaError::InvalidArgument(_) => BackendError::Marshal(Cause::of(e)),
            CudaError::Driver(_) | CudaError::TimedOut { .. } | CudaError::Hung(_) => BackendError::Launch(Cause::of(e)),
        }
    }
}

impl Backend for CudaBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }
    fn availability(&self) -> Result<(), BackendError> {
        self.profile().map(|_| ())
    }
    fn profile(&self) -> Result<Arc<DeviceProfile>, BackendError> {
        self.profile.get_or_init(|| engine().map(|e| Arc::new(e.profile().clone()))).clone()
    }
    fn supports(&self, op: &RegisteredOp) -> Result<(), BackendError> {
        crate::launch::gpu_kernel(op, KernelLang::Cuda).map(|_| ())
    }
    fn prepare(&self, op: &Arc<RegisteredOp>) -> Result<Arc<dyn Prepared>, BackendError> {
        let plan = LaunchPlan::new(op, KernelLang::Cuda)?;
        let p = program(op, plan.kernel)?;
        let kernel = engine()?.compile(op.cache_hash(), &p.source, &p.headers, p.entry, &p.options)?;
        Ok(Arc::new(CudaPrepared { hash: op.hash, plan, kernel, block: p.block }))
    }
}

/// What NVRTC is handed for kernel `k` of `op`: the instance's source (prelude included), its
/// headers under the names the source includes them by (relative to its directory), the entry,
/// and the options (`op_contract::cuda_headers`: the toolkit's include directory for the
/// half-precision headers; their absence is a compile error naming the remedy).
struct Program {
    source: String,
    headers: Vec<(String, String)>,
    entry: &'static str,
    options: Vec<String>,
    /// Threads per block along x, y and z.
    block: [u32; 3],
}

fn program(op: &RegisteredOp, k: usize) -> Result<Program, BackendError> {
    let src = op.decl.kernels.get(k).ok_or_else(|| BackendError::Unsupported("the op's CUDA source is not embedded".into()))?;
    let source = op.kernel_text(k).map_err(|m| BackendError::Compile(m.into()))?;
    let options = op_contract::cuda_headers::nvrtc_options(&source)
        .map_err(|e| BackendError::Compile(format!("op `{}`: CUDA kernel `{}`: {e}", op.id, src.entry).into()))?;
    let dir = std::path::Path::new(src.path).parent().map(|p| p.to_string_lossy().to_string()).unwrap_or_default();
    let headers = src
        .headers
        .iter()
        .map(|(p, b)| {
            let name = p.strip_prefix(&format!("{dir}/")).unwrap_or(p).to_string();
            (name, String::from_utf8_lossy(b).to_string())
        })
        .collect();
    Ok(Program { source, headers, entry: src.entry, options, block: src.workgroup_size })
}

/// Compiles `op`'s CUDA kernel for this instance with NVRTC alone, no device or driver needed
/// (for a machine without a GPU, such as CI's): for the newest architecture NVRTC supports up
/// to compute capability 9.0, with exactly the source, headers and options a launch would use.
/// Returns the PTX. `Err(Unavailable)` where libnvrtc does not load; `Err(Compile)` with
/// NVRTC's log where the kernel does not compile; `Err(Unsupported)` where the instance has
/// no CUDA kernel.
pub fn compile_without_device(op: &RegisteredOp) -> Result<String, BackendError> {
    let plan = LaunchPlan::new(op, KernelLang::Cuda)?;
    let p = program(op, plan.kernel)?;
    super::engine::compile_for_newest(&p.source, &p.headers, p.entry, &p.options).map_err(BackendError::from)
}

struct CudaPrepared {
    hash: [u8; 32],
    plan: LaunchPlan,
    kernel: Arc<CudaKernel>,
    /// Threads per block along x, y and z.
    block: [u32; 3],
}

impl Prepared for CudaPrepared {
    fn content_hash(&self) -> [u8; 32] {
        self.hash
    }
    /// Host tensors in, host tensors out; or, when any input is a device tensor, every input on
    /// this engine's device and the outputs left there (nothing read back). Mixed host and
    /// device inputs are refused with `Placement` (no implicit copy).
    fn execute(&self, req: &ExecRequest<'_>) -> Result<Vec<Tensor>, BackendError> {
        if req.inputs.iter().any(|t| !t.is_host()) {
            return self.execute_resident(req);
        }
        let (args, threads) = self.plan.marshal(req)?;
        // Output buffers: zero-filled on the device for plain calls (nothing uploaded); guard
        // canaries, data canaries (zeros for an accumulating output), guard canaries in guarded
        // runs (the kernel gets a pointer past the front guard).
        let mut outs: Vec<(usize, Vec<u8>, usize)> = Vec::new();
        for a in &args {
            if let Arg::Output { index, data, guard, accumulate } = *a {
                if guard == 0 {
                    outs.push((index, Vec::new(), 0));
                    continue;
                }
                let total = data.checked_add(2 * guard).and_then(|t| usize::try_from(t).ok());
                let total = total.ok_or_else(|| {
                    BackendError::TooLarge(format!("output {index}: {data} bytes plus guards do not fit this host's address space").into())
                })?;
                let mut init = vec![CANARY_BYTE; total];
                if accumulate {
                    // An accumulating output starts at zero; only its guards hold canaries.
                    init[guard as usize..guard as usize + data as usize].fill(0);
                }
                outs.push((index, init, guard as usize));
            }
        }
        let mut o = outs.iter();
        let mut cargs: Vec<CudaArg<'_>> = Vec::with_capacity(args.len());
        for a in &args {
            match a {
                Arg::Input(b) => cargs.push(CudaArg::Read(b)),
                Arg::Output { data, .. } => match o.next() {
                    Some((_, _, 0)) => cargs.push(CudaArg::Zeroed(*data)),
                    Some((_, init, guard)) => cargs.push(CudaArg::Guarded { init, offset: *guard }),
                    None => return Err(BackendError::Marshal("an output slot has no buffer".into())),
                },
                Arg::Scalars(v) => cargs.extend(v.iter().map(|f| match *f {
                    FieldValue::U32(x) => CudaArg::U32(x),
                    FieldValue::I32(x) => CudaArg::I32(x),
                    FieldValue::F32(x) => CudaArg::F32(x),
                })),
            }
        }
        let read = engine()?.launch(&self.kernel, &cargs, CudaGrid { threads, block: self.block })?;
        let reads = outs.iter().map(|(index, _, _)| *index).zip(read).collect();
        self.plan.outputs(req, reads)
    }
}

impl CudaPrepared {
    /// [`Prepared::execute`] on device tensors: inputs bound in place, zero-filled outputs
    /// allocated on the device and returned as device tensors.
    fn execute_resident(&self, req: &ExecRequest<'_>) -> Result<Vec<Tensor>, BackendError> {
        let engine = engine()?;
        let inputs: Vec<&CudaBuffer> = resident::inputs_on(req, Device::id(engine))?;
        let (args, threads) = self.plan.marshal(req)?;
        let mut outs = Vec::new();
        let mut cargs: Vec<CudaArg<'_>> = Vec::with_capacity(args.len());
        for (a, input) in args.iter().zip(self.plan.slot_inputs()) {
            match (a, input) {
                (Arg::Input(_), Some(i)) => cargs.push(CudaArg::Device(inputs[i].slice())),
                (Arg::Input(_), None) => return Err(BackendError::Marshal("an input slot without an input".into())),
                (Arg::Output { index, data, .. }, _) => {
                    outs.push(*index);
                    cargs.push(CudaArg::Fresh(*data));
                }
                (Arg::Scalars(v), _) => cargs.extend(v.iter().map(|f| match *f {
                    FieldValue::U32(x) => CudaArg::U32(x),
                    FieldValue::I32(x) => CudaArg::I32(x),
                    FieldValue::F32(x) => CudaArg::F32(x),
                })),
            }
        }
        let made = engine.launch_resident(&self.kernel, &cargs, CudaGrid { threads, block: self.block })?;
        resident::device_outputs(req, outs, made)
    }
}

#[cfg(test)]
mod tests {
    use super::{BackendError, Cause, CudaError};

    #[test]
    fn a_cuda_error_becomes_its_category_with_the_cuda_error_as_its_cause() {
        let e = BackendError::from(CudaError::Unavailable { reason: "no libcuda".into() });
        assert!(matches!(e, BackendError::Unavailable(_)), "{e:?}");
        assert_eq!(e.to_string(), "CUDA backend unavailable: no libcuda");
        let cause = e.cause().and_then(Cause::error).and_then(|c| c.downcast_ref::<CudaError>());
        assert!(matches!(cause, Some(CudaError::Unavailable { reason }) if reason == "no libcuda"), "{cause:?}");
    }
}
