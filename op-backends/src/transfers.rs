//! Tensor data moved between the host and one GPU engine's device: the counters every engine
//! and every device buffer it made share (`Counters`), and their snapshot ([`Transfers`]),
//! which tests and benches read to prove that a device-resident chain moved nothing between
//! its calls. One type for every GPU backend (wgpu, CUDA).

use std::sync::atomic::{AtomicU64, Ordering};

/// Tensor data moved between the host and one engine's device so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Transfers {
    /// Host-to-device copies of tensor data (explicit `to_device`, inputs and guard-band
    /// initial contents uploaded by host-tensor calls).
    pub to_device: u64,
    /// Their bytes.
    pub to_device_bytes: u64,
    /// Device-to-host copies of tensor data (explicit `to_host`, outputs read back by
    /// host-tensor calls).
    pub to_host: u64,
    /// Their bytes.
    pub to_host_bytes: u64,
    /// Uniform blocks written (a call's dims and scalar parameters: a few bytes, not tensor
    /// data), counted apart.
    pub uniform_writes: u64,
    /// Their bytes.
    pub uniform_bytes: u64,
}

impl Transfers {
    /// Tensor-data bytes crossed in either direction (uniform blocks excluded).
    pub fn tensor_bytes(&self) -> u64 {
        self.to_device_bytes + self.to_host_bytes
    }
}

/// The counters, shared by an engine and every buffer it made.
#[derive(Debug, Default)]
pub struct Counters {
    to_device: AtomicU64,
    to_device_bytes: AtomicU64,
    to_host: AtomicU64,
    to_host_bytes: AtomicU64,
    uniform_writes: AtomicU64,
    uniform_bytes: AtomicU64,
}

impl Counters {
    #[doc(hidden)]
    pub fn up(&self, bytes: u64) {
        self.to_device.fetch_add(1, Ordering::Relaxed);
        self.to_device_bytes.fetch_add(bytes, Ordering::Relaxed);
    }
    #[doc(hidden)]
    pub fn down(&self, bytes: u64) {
        self.to_host.fetch_add(1, Ordering::Relaxed);
        self.to_host_bytes.fetch_add(bytes, Ordering::Relaxed);
    }
    #[doc(hidden)]
    #[cfg(feature = "wgpu")]
    pub fn uniform(&self, bytes: u64) {
        self.uniform_writes.fetch_add(1, Ordering::Relaxed);
        self.uniform_bytes.fetch_add(bytes, Ordering::Relaxed);
    }
    #[doc(hidden)]
    pub fn snapshot(&self) -> Transfers {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Transfers {
            to_device: l(&self.to_device),
            to_device_bytes: l(&self.to_device_bytes),
            to_host: l(&self.to_host),
            to_host_bytes: l(&self.to_host_bytes),
            uniform_writes: l(&self.uniform_writes),
            uniform_bytes: l(&self.uniform_bytes),
        }
    }
}
