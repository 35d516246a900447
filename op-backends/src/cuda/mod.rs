//! CUDA (cudarc + NVRTC): the backend, its low-level engine (split by concern: probing, NVRTC,
//! kernels and their PTX parameters, the grid, launches, the device profile), the verified PTX
//! disk cache, and device-resident tensors.

pub mod backend;
pub mod engine;
mod error;
mod grid;
mod kernel;
mod launch;
mod nvrtc;
mod probe;
mod profile;
mod ptx_cache;
pub mod resident;
mod wait;

pub use backend::{compile_without_device, CudaBackend};
pub use engine::CudaEngine;
pub use error::CudaError;
pub use grid::CudaGrid;
pub use kernel::CudaKernel;
pub use launch::CudaArg;
pub use profile::NVIDIA_VENDOR_ID;
pub use ptx_cache::{default_ptx_cache_dir, CACHE_DIR_ENV};
pub use resident::CudaBuffer;
