//! wgpu (WGSL compute): the backend and its low-level engine.

pub mod backend;
mod behaviour;
mod bind_cache;
pub mod engine;
pub mod pool;
pub mod resident;
mod wait;

pub use backend::WgpuBackend;
pub use bind_cache::BindStats;
pub use engine::{Geometry, Pipeline, Slot, SlotKind, WgpuEngine, WgpuError, WgpuRaw};
pub use pool::{PoolStats, DEFAULT_POOL_LIMIT};
pub use resident::WgpuBuffer;
