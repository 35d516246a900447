//! Device-resident tensors on CUDA: [`CudaBuffer`] (a tensor's storage in one engine's device
//! memory) and the explicit moves: `Tensor::to_device(engine)` uploads through `Device` for
//! `CudaEngine` (implemented beside the engine), `Tensor::to_host()` reads back through
//! [`DeviceStorage`] for [`CudaBuffer`].
//! Each is one counted transfer ([`Transfers`](crate::transfers::Transfers), shared with wgpu); host-tensor calls count
//! their uploads and read-backs on the same counters. A call whose inputs are all on one
//! engine's device leaves its outputs there: nothing crosses to the host.

use super::wait::Waits;
use crate::transfers::Counters;
use cudarc::driver::{CudaSlice, CudaStream};
use op_core::device::{DeviceId, DeviceStorage};
use op_core::error::TensorError;
use op_core::kind::BackendKind;
use std::any::Any;
use std::sync::Arc;

/// What a buffer needs of its engine: the engine's identity, stream and counters.
#[derive(Debug)]
pub struct Link {
    #[doc(hidden)]
    pub id: u64,
    #[doc(hidden)]
    pub stream: Arc<CudaStream>,
    #[doc(hidden)]
    pub counters: Counters,
    /// Every wait on the stream, with its limit and the hung work.
    #[doc(hidden)]
    pub waits: Waits,
}

impl Link {
    #[doc(hidden)]
    pub fn device_id(&self) -> DeviceId {
        DeviceId { backend: BackendKind::Cuda, instance: self.id }
    }
}

/// A tensor's storage on one CUDA engine's device: at least `bytes` bytes (one byte for an
/// empty tensor: the driver allocates nothing smaller).
#[derive(Debug)]
pub struct CudaBuffer {
    slice: CudaSlice<u8>,
    bytes: u64,
    link: Arc<Link>,
}

impl CudaBuffer {
    #[doc(hidden)]
    pub fn new(slice: CudaSlice<u8>, bytes: u64, link: Arc<Link>) -> CudaBuffer {
        CudaBuffer { slice, bytes, link }
    }
    /// The device memory.
    pub fn slice(&self) -> &CudaSlice<u8> {
        &self.slice
    }
    /// The id of the engine whose device holds the buffer.
    pub fn engine_id(&self) -> u64 {
        self.link.id
    }
}

impl DeviceStorage for CudaBuffer {
    fn device(&self) -> DeviceId {
        self.link.device_id()
    }
    fn bytes(&self) -> u64 {
        self.bytes
    }
    fn read(&self) -> Result<Vec<u8>, TensorError> {
        let fail = |reason: String| TensorError::Transfer { device: self.link.device_id().to_string(), reason };
        let len = usize::try_from(self.bytes).map_err(|_| fail("the buffer does not fit the host's address space".into()))?;
        // The kernels that write this buffer first, with a limit: a copy behind a kernel that
        // never ends would wait for it without one.
        self.link.waits.wait(&self.link.stream, "the kernels before a read back").map_err(|e| fail(e.to_string()))?;
        let mut host = vec![0u8; len];
        if len > 0 {
            self.link.stream.memcpy_dtoh(&self.slice.slice(0..len), host.as_mut_slice()).map_err(|e| fail(format!("{e:?}")))?;
        }
        self.link.waits.wait(&self.link.stream, "a read back to the host").map_err(|e| fail(e.to_string()))?;
        self.link.counters.down(self.bytes);
        Ok(host)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
