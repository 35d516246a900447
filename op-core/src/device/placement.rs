//! Where a tensor's elements live: on the host (the default), or on a device as storage a GPU
//! backend owns. Core knows devices only through two seams: [`DeviceStorage`] (a buffer on a
//! device, which can be read back) and [`crate::tensor::Device`] (something a host tensor can be
//! moved to; it lives beside `Tensor`, which it produces, so that this module never depends on
//! tensors).
//! Nothing is ever moved implicitly: [`crate::tensor::Tensor::to_device`] and
//! [`crate::tensor::Tensor::to_host`] are the only transfers, and a call that finds a
//! tensor on a device its backend cannot use fails with `BackendError::Placement`.

use crate::error::TensorError;
use crate::kind::BackendKind;
use std::any::Any;
use std::fmt;

/// Which device instance: a backend kind and the instance's process-unique id (two engines on
/// the same adapter are two devices: their buffers cannot be bound by each other).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeviceId {
    /// The backend owning the storage.
    pub backend: BackendKind,
    /// The instance within the process (e.g. which `WgpuEngine`).
    pub instance: u64,
}

impl fmt::Display for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} device #{}", self.backend, self.instance)
    }
}

/// Where a tensor lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Placement {
    /// Host memory (every backend's inputs by default; the only placement host backends take).
    Host,
    /// Storage on a device.
    Device(DeviceId),
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Placement::Host => write!(f, "the host"),
            Placement::Device(d) => write!(f, "{d}"),
        }
    }
}

/// A tensor's elements in a device's memory, owned by a GPU backend. Reading it back is an
/// explicit, counted transfer.
pub trait DeviceStorage: Send + Sync + fmt::Debug + Any {
    /// The device holding the storage.
    fn device(&self) -> DeviceId;
    /// The bytes of data (the device buffer may be padded beyond them).
    fn bytes(&self) -> u64;
    /// Copies the data back to the host (exactly [`DeviceStorage::bytes`] bytes, little-endian),
    /// counted by the device as one device-to-host transfer.
    fn read(&self) -> Result<Vec<u8>, TensorError>;
    /// For the owning backend to recover its concrete type.
    fn as_any(&self) -> &dyn Any;
}
