//! Everything that can go wrong in the CUDA engine, as one typed error.

use std::path::PathBuf;

use super::ptx_cache::CacheError;

/// Everything that can go wrong in the CUDA engine.
#[derive(Clone, Debug, thiserror::Error)]
pub enum CudaError {
    /// The backend cannot be used on this machine: a library is missing, there is no device,
    /// the driver is too old, or initialisation failed.
    #[error("CUDA backend unavailable: {reason}")]
    Unavailable {
        /// What is missing or failed.
        reason: String,
    },
    /// NVRTC rejected the kernel source (or its options); `log` is NVRTC's program log.
    #[error("NVRTC failed to compile CUDA kernel `{entry}`:\n{log}")]
    Compile {
        /// The kernel entry point.
        entry: String,
        /// NVRTC's program log (or the failure's description).
        log: String,
    },
    /// The compiled module has no kernel of that name.
    #[error(
        "CUDA kernel entry `{entry}` not found in the compiled module \
         (is it declared `extern \"C\" __global__`?)"
    )]
    MissingEntry {
        /// The entry point looked up.
        entry: String,
    },
    /// The caller passed something the engine cannot launch or compile (bad launch geometry,
    /// arguments not matching the kernel's parameters, interior NUL bytes, ...).
    #[error("invalid CUDA request: {0}")]
    InvalidArgument(String),
    /// A CUDA driver call failed (or cudarc panicked) after initialisation.
    #[error("CUDA driver error: {0}")]
    Driver(String),
    /// The on-disk PTX cache could not be located or written.
    #[error("PTX cache error at {}: {cause}", path.display())]
    Cache {
        /// The cache file (empty when no cache directory could be found).
        path: PathBuf,
        /// What failed.
        cause: String,
    },
}

impl From<CacheError> for CudaError {
    fn from(e: CacheError) -> CudaError {
        CudaError::Cache { path: e.path, cause: e.cause }
    }
}
