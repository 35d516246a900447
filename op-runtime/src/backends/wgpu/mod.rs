//! wgpu (WGSL compute): the backend and its low-level engine.

pub mod backend;
mod bind_cache;
pub mod engine;
pub mod pool;
pub mod resident;

pub use backend::WgpuBackend;
pub use bind_cache::BindStats;
pub use pool::PoolStats;
pub use resident::{Transfers, WgpuBuffer};
