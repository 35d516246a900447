//! CUDA (cudarc + NVRTC): the backend, its low-level engine, the verified PTX disk cache, and
//! device-resident tensors.

pub mod backend;
pub mod engine;
pub mod ptx_cache;
pub mod resident;

pub use backend::CudaBackend;
pub use resident::CudaBuffer;
