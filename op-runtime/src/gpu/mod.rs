//! Low-level GPU engines: device discovery, kernel compilation caches, buffer upload, launch and
//! readback. They know nothing of ops or contracts; the backends in `backend` drive them.

#[cfg(feature = "cuda")]
pub mod cuda_engine;
#[cfg(feature = "wgpu")]
pub mod wgpu_engine;
