//! Device profiles: which physical device (and driver) a kernel ran on. Receipts are bound to
//! a profile; this module only describes devices, it never chooses one.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Identifies the device and driver a backend executes on.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DeviceProfile {
    /// Backend kind: `reference`, `cpu`, `wgpu`, `cuda`.
    pub backend: String,
    /// Adapter or device name, e.g. `llvmpipe (LLVM 15.0.6, 256 bits)`.
    pub adapter: String,
    /// Driver name and version.
    pub driver: String,
    /// PCI vendor id (0 where none applies).
    pub vendor_id: u32,
    /// PCI device id (0 where none applies).
    pub device_id: u32,
}

impl DeviceProfile {
    /// The profile of host CPU backends (reference and cpu).
    pub fn host(backend: &str) -> Self {
        DeviceProfile {
            backend: backend.to_string(),
            adapter: format!("host {}-{}", std::env::consts::ARCH, std::env::consts::OS),
            driver: format!("rustc {}", option_env!("CARGO_PKG_RUST_VERSION").filter(|s| !s.is_empty()).unwrap_or("stable")),
            vendor_id: 0,
            device_id: 0,
        }
    }
}

impl fmt::Display for DeviceProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} on {} ({}, {:04x}:{:04x})", self.backend, self.adapter, self.driver, self.vendor_id, self.device_id)
    }
}
