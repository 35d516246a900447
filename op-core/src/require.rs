//! The environment variables that turn an unavailable GPU backend from a printed skip into a
//! failure in tests (read by the tests `#[op]` generates and the GPU engines' own unit tests;
//! library code paths never read them).

/// Env variable that turns a missing wgpu adapter into a test failure (set by CI).
pub const REQUIRE_GPU_ENV: &str = "OP_REQUIRE_GPU_ADAPTER";
/// Env variable that turns an unavailable CUDA backend into a failure for ops with a CUDA
/// kernel (set on a machine with an NVIDIA GPU, so a skip cannot hide a broken install).
pub const REQUIRE_CUDA_ENV: &str = "OP_REQUIRE_CUDA";
