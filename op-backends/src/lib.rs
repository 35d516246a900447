#![warn(missing_docs)]
//! Floor 1, the backends: the executors behind the core's typed seam (`core::backend`), and the
//! one list of them a default registry holds. `reference` runs the annotated function, `cpu` an
//! op's `cpu = path` kernel, `wgpu` and `cuda` its GPU kernels through one launch plan and one
//! marshalling step (`launch`). Imports only `core`.
//!
//! Adding a backend: one module here implementing `Backend`/`Prepared`, plus one line in
//! [`all`]. See `docs/ARCHITECTURE.md`.
//!
//! A crate of op-runtime (users depend on the facade, `op-runtime`); cargo enforces the floors.
//! Items marked `#[doc(hidden)]` are shared with the floors above and are not part of the API.

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
mod host;
#[cfg(any(feature = "wgpu", feature = "cuda"))]
pub mod launch;
#[cfg(any(feature = "wgpu", feature = "cuda"))]
pub mod resident;
#[cfg(any(feature = "wgpu", feature = "cuda"))]
pub mod transfers;
#[cfg(feature = "wgpu")]
pub mod wgpu;

pub use cpu::CpuBackend;
pub use host::ReferenceBackend;

use op_core::backend::Backend;
use std::sync::Arc;

/// Every backend compiled into this build, one line each. The registry orders them by
/// `BackendKind::rank` (the one priority list); the order here does not matter.
#[allow(clippy::vec_init_then_push)] // the pushes are feature-gated
pub fn all() -> Vec<Arc<dyn Backend>> {
    let mut backends: Vec<Arc<dyn Backend>> = Vec::new();
    #[cfg(feature = "cuda")]
    backends.push(Arc::new(cuda::CudaBackend::default()));
    #[cfg(feature = "wgpu")]
    backends.push(Arc::new(wgpu::WgpuBackend::default()));
    backends.push(Arc::new(CpuBackend::default()));
    backends.push(Arc::new(ReferenceBackend::default()));
    backends
}

/// Adds [`all`] to every default registry (`Registry::new`): the core gathers the backends of
/// every crate linked into the binary without naming this one.
#[linkme::distributed_slice(op_core::registry::defaults::BACKENDS)]
#[linkme(crate = linkme)]
static DEFAULT_BACKENDS: fn(&mut Vec<Arc<dyn Backend>>) = |out| out.extend(all());
