//! The typed backend seam: what every executor implements ([`Backend`], [`Prepared`]), what it
//! is handed ([`ExecRequest`]) and how it fails ([`BackendError`]). Dispatch chooses a backend;
//! backends only prepare and execute. The concrete backends live in `backends`.

use crate::device::DeviceProfile;
pub use crate::error::{BackendError, Cause};
use crate::kind::BackendKind;
use crate::op::RegisteredOp;
use crate::plan::Bound;
use crate::tensor::{DType, Data, Scalar, Tensor};
use std::sync::Arc;

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

/// An executor of ops. Implemented by the built-in backends (and by tests); dispatch never
/// needs to know which one it holds.
pub trait Backend: Send + Sync {
    /// Which backend this is.
    fn kind(&self) -> BackendKind;
    /// `Ok` if usable on this machine (cheap after the first call).
    fn availability(&self) -> Result<(), BackendError>;
    /// The device this backend executes on.
    fn profile(&self) -> Result<Arc<DeviceProfile>, BackendError>;
    /// Whether the device is emulated in software on the CPU (a CPU-type GPU adapter such as
    /// lavapipe): default selection then ranks the backend below the native CPU backend.
    fn is_software(&self) -> bool {
        false
    }
    /// The most bytes the outputs of one call may take together on this device (host memory
    /// for host backends, device memory for GPUs); `None` if unknown. Dispatch refuses a call
    /// above it with a typed error before anything is allocated.
    fn allocation_limit(&self) -> Option<u64> {
        None
    }
    /// `Ok` if the op has something to run here (e.g. a kernel for this backend).
    fn supports(&self, op: &RegisteredOp) -> Result<(), BackendError>;
    /// Builds the op's executable form (compiles kernels, resolves the launch plan).
    fn prepare(&self, op: &Arc<RegisteredOp>) -> Result<Arc<dyn Prepared>, BackendError>;
}

/// An op made ready to run on one backend: it holds what `prepare` built (the compiled
/// pipeline or kernel and its launch plan), so a call does no lookup.
pub trait Prepared: Send + Sync {
    /// The content hash this was built from (a stale build is never executed).
    fn content_hash(&self) -> [u8; 32];
    /// Runs the op.
    fn execute(&self, req: &ExecRequest<'_>) -> Result<Vec<Tensor>, BackendError>;
}

/// The canary byte written around outputs in guarded runs.
pub const CANARY_BYTE: u8 = 0xA5;

/// The byte a guarded output of `dtype` is padded with: [`CANARY_BYTE`], except for `bool`,
/// which has no value outside `{0, 1}` (a `bool` output comes only from a host backend, which
/// cannot write out of bounds; its bands hold `false`).
pub fn canary_byte(dtype: DType) -> u8 {
    if dtype == DType::bool {
        0
    } else {
        CANARY_BYTE
    }
}

/// The bits of one canary element of `dtype` (as `Data::bits` reads an element).
pub fn canary_bits(dtype: DType) -> u64 {
    (0..dtype.size()).fold(0u64, |b, _| (b << 8) | canary_byte(dtype) as u64)
}

/// Wraps an output in `guard` canary elements on each side (host backends, which cannot write
/// out of bounds, still return the same layout as GPU backends).
pub fn pad_with_canaries(t: Tensor, guard: usize) -> Result<Tensor, BackendError> {
    if guard == 0 {
        return Ok(t);
    }
    let size = t.dtype().size();
    let too_large =
        || BackendError::TooLarge(format!("a guarded output of {} elements plus 2 x {guard} canaries overflows usize", t.numel()).into());
    let pad = guard.checked_mul(size).ok_or_else(too_large)?;
    let canary = canary_byte(t.dtype());
    let mut bytes = vec![canary; pad];
    bytes.extend(t.data().to_le_bytes());
    bytes.extend(std::iter::repeat_n(canary, pad));
    let n = t.numel().checked_add(guard.checked_mul(2).ok_or_else(too_large)?).ok_or_else(too_large)?;
    let data = Data::from_le_bytes(t.dtype(), &bytes).map_err(|e| BackendError::Kernel(e.to_string().into()))?;
    Tensor::new(vec![n], data).map_err(|e| BackendError::Kernel(e.to_string().into()))
}
