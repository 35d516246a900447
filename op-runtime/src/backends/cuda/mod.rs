//! CUDA (cudarc + NVRTC): the backend, its low-level engine, and the verified PTX disk cache.

pub mod backend;
pub mod engine;
pub mod ptx_cache;

pub use backend::CudaBackend;
