//! The `Backend` abstraction every executor implements (reference, cpu, wgpu, cuda) and the
//! helpers they share. Dispatch chooses a backend; backends only prepare and execute.

#[cfg(feature = "cuda")]
pub mod cuda;
mod host;
#[cfg(feature = "wgpu")]
pub mod wgpu;

pub(crate) use host::run_forward;
pub use host::{CpuBackend, ReferenceBackend};

use crate::device::DeviceProfile;
use crate::plan::Bound;
use crate::registry::RegisteredOp;
use crate::tensor::{Data, Scalar, Tensor};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

/// The kinds of backend, in default priority order (first = preferred).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendKind {
    /// CUDA via cudarc + NVRTC.
    Cuda,
    /// WGSL compute via wgpu.
    Wgpu,
    /// The op's optional fast CPU kernel.
    Cpu,
    /// The annotated reference function.
    Reference,
}

impl BackendKind {
    /// All kinds in priority order.
    pub const PRIORITY: [BackendKind; 4] = [BackendKind::Cuda, BackendKind::Wgpu, BackendKind::Cpu, BackendKind::Reference];

    /// The backend's name.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Cuda => "cuda",
            BackendKind::Wgpu => "wgpu",
            BackendKind::Cpu => "cpu",
            BackendKind::Reference => "reference",
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One execution request.
pub struct ExecRequest<'a> {
    /// The op.
    pub op: &'a RegisteredOp,
    /// The validated call.
    pub bound: &'a Bound,
    /// Tensor inputs.
    pub inputs: &'a [&'a Tensor],
    /// Parameters.
    pub params: &'a [Scalar],
    /// Canary elements on each side of every output (conformance); 0 for plain calls. With
    /// `guard > 0` each output comes back flat, `guard` canaries + data + `guard` canaries.
    /// GPU backends make the guards real: wgpu binds the output as a window after an aligned
    /// front guard with the back guard inside the binding (so `arrayLength` covers it and a
    /// write past the end lands on canaries); CUDA passes a pointer `guard` elements into a
    /// buffer holding both guards.
    pub guard: usize,
}

/// An executor of ops. Implemented by the four built-in backends; dispatch never needs to know
/// which one it holds.
pub trait Backend: Send + Sync {
    /// Which backend this is.
    fn kind(&self) -> BackendKind;
    /// `Ok` if usable on this machine, else the reason (cheap after the first call).
    fn availability(&self) -> Result<(), String>;
    /// The device this backend executes on.
    fn profile(&self) -> Result<Arc<DeviceProfile>, String>;
    /// `Ok` if the op has something to run here (e.g. a kernel for this backend).
    fn supports(&self, op: &RegisteredOp) -> Result<(), String>;
    /// Builds the op's executable form (compiles kernels); the cause on failure.
    fn prepare(&self, op: &Arc<RegisteredOp>) -> Result<Arc<dyn Prepared>, String>;
}

/// An op made ready to run on one backend.
pub trait Prepared: Send + Sync {
    /// The content hash this was built from (a stale build is never executed).
    fn content_hash(&self) -> [u8; 32];
    /// Runs the op.
    fn execute(&self, req: &ExecRequest<'_>) -> Result<Vec<Tensor>, String>;
}

/// Index of the op's kernel in `lang`, if a GPU backend can run the op at all (GPU launches need
/// static output sizes); the reason otherwise.
pub(crate) fn gpu_kernel(op: &RegisteredOp, lang: op_contract::contract::KernelLang) -> Result<usize, String> {
    if let Some(class) = op.plan.shape_class() {
        return Err(format!("`output = {class}` ops run on host backends only"));
    }
    let name = match lang {
        op_contract::contract::KernelLang::Wgsl => "WGSL",
        op_contract::contract::KernelLang::Cuda => "CUDA",
    };
    op.contract.kernels.iter().position(|k| k.lang == lang).ok_or_else(|| format!("the op declares no {name} kernel"))
}

/// The value of one uniform field (WGSL) or scalar kernel parameter (CUDA).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum FieldValue {
    /// A dim, or a `u32` parameter.
    U32(u32),
    /// An `i32` parameter.
    I32(i32),
    /// An `f32` parameter.
    F32(f32),
}

/// Resolves a descriptor field of a validated call: a parameter by name, else a dim symbol.
pub(crate) fn field_value(op: &RegisteredOp, field: &str, values: &[i128], params: &[Scalar]) -> Result<FieldValue, String> {
    if let Some(pi) = op.contract.signature.params().position(|p| p.name == field) {
        return match params.get(pi).copied().ok_or_else(|| format!("parameter `{field}` was not passed"))? {
            Scalar::U32(v) => Ok(FieldValue::U32(v)),
            Scalar::I32(v) => Ok(FieldValue::I32(v)),
            Scalar::F32(v) => Ok(FieldValue::F32(v)),
            other => Err(format!("parameter `{field}` of type `{}` cannot be passed to a kernel (u32, i32 or f32 only)", other.dtype())),
        };
    }
    let k = op.plan.syms.iter().position(|s| s == field).ok_or_else(|| format!("field `{field}` is not a dim or parameter"))?;
    let v = values.get(k).copied().ok_or_else(|| format!("dim `{field}` has no value"))?;
    u32::try_from(v).map(FieldValue::U32).map_err(|_| format!("dim `{field}` = {v} does not fit a u32"))
}

/// The canary byte written around outputs in guarded runs.
pub const CANARY_BYTE: u8 = 0xA5;

/// Wraps an output in `guard` canary elements on each side (host backends, which cannot write
/// out of bounds, still return the same layout as GPU backends).
pub fn pad_with_canaries(t: Tensor, guard: usize) -> Result<Tensor, String> {
    if guard == 0 {
        return Ok(t);
    }
    let size = t.dtype().size();
    let mut bytes = vec![CANARY_BYTE; guard * size];
    bytes.extend(t.data().to_le_bytes());
    bytes.extend(std::iter::repeat_n(CANARY_BYTE, guard * size));
    let n = t.numel() + 2 * guard;
    let data = Data::from_le_bytes(t.dtype(), &bytes).map_err(|e| e.to_string())?;
    Tensor::new(vec![n], data).map_err(|e| e.to_string())
}
