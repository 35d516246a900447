//! wgpu (WGSL compute): the backend and its low-level engine.

pub mod backend;
pub mod engine;
pub mod resident;

pub use backend::WgpuBackend;
pub use resident::{Transfers, WgpuBuffer};
