//! Everything that can go wrong in the CUDA engine, as one typed error.

use std::path::PathBuf;

use super::ptx_cache::CacheError;
use super::wait::Stall;

/// Everything that can go wrong in the CUDA engine.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
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
    /// The device did not finish `what` within the engine's wait limit: the kernel may never
    /// end. The engine is hung until it does ([`CudaError::Hung`]).
    #[error("the device timed out: {what} did not finish within {limit:?} (the kernel may never end; `CudaEngine::set_wait_timeout` changes the limit)")]
    TimedOut {
        /// The launch or transfer waited for.
        what: String,
        /// The limit it exceeded.
        limit: std::time::Duration,
    },
    /// An earlier wait timed out and its work is still running: the stream is blocked behind
    /// it, so nothing more is enqueued until it finishes.
    #[error("the device is hung: it is still running {0}; nothing more runs on this engine until it finishes")]
    Hung(String),
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

impl From<Stall> for CudaError {
    fn from(s: Stall) -> CudaError {
        match s {
            Stall::TimedOut { what, limit } => CudaError::TimedOut { what, limit },
            Stall::Hung(what) => CudaError::Hung(what),
            Stall::Driver(msg) => CudaError::Driver(msg),
        }
    }
}
