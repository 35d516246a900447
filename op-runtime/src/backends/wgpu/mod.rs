//! wgpu (WGSL compute): the backend and its low-level engine.

pub mod backend;
pub mod engine;

pub use backend::WgpuBackend;
