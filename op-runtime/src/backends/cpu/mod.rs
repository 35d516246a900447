//! The CPU backend: runs an op's `cpu = path` kernel on the host, over the CPU's cores. Owns
//! the backend (a thread pool per backend: all cores by default, or
//! [`CpuBackend::with_threads`]) and the toolkit `cpu` kernels are written with: [`par`] (work
//! split into chunks that do not depend on the thread count), [`simd`] (portable vectors, the
//! instruction set chosen at run time), [`math`] (vector `exp`/`ln`/`tanh`), and the built-ins'
//! kernels (`kernels`). Must not fall back silently: an op without a `cpu` kernel is
//! `Unsupported` here (the reference runs it only when chosen).
//!
//! A kernel starts on the calling thread; the chunks of a [`par::for_each_chunk`] call large
//! enough to split run on this backend's pool, so a small call never hands anything to another
//! thread, and the thread count never changes a result. A user's kernel written with `par` and
//! `simd` is as fast as a built-in's (`examples/windowed_median/median_cpu.rs`).

pub(crate) mod kernels;
pub mod math;
pub mod par;
pub mod simd;
pub mod simd64;

/// Output buffers for kernels: [`hostmem::with_capacity`] and [`hostmem::zeroed`] advise large
/// ones for transparent huge pages (one page fault per 2 MiB instead of per 4 KiB).
pub use crate::core::hostmem;

use super::host::{host_profile, run_forward};
use crate::core::backend::{Backend, BackendError, ExecRequest, Prepared};
use crate::core::decl::ShimFn;
use crate::core::device::DeviceProfile;
use crate::core::kind::BackendKind;
use crate::core::op::RegisteredOp;
use crate::core::tensor::Tensor;
use std::sync::{Arc, OnceLock};

/// The CPU backend.
pub struct CpuBackend {
    threads: usize,
    pool: OnceLock<Result<Arc<rayon::ThreadPool>, BackendError>>,
    profile: OnceLock<Arc<DeviceProfile>>,
}

impl Default for CpuBackend {
    fn default() -> Self {
        CpuBackend::with_threads(0)
    }
}

impl CpuBackend {
    /// A CPU backend running kernels on `threads` threads (`0`: one per available core).
    pub fn with_threads(threads: usize) -> CpuBackend {
        CpuBackend { threads, pool: OnceLock::new(), profile: OnceLock::new() }
    }

    /// The number of threads kernels run on.
    pub fn threads(&self) -> usize {
        match self.pool() {
            Ok(p) => p.current_num_threads(),
            Err(_) => 1,
        }
    }

    fn pool(&self) -> Result<Arc<rayon::ThreadPool>, BackendError> {
        self.pool
            .get_or_init(|| {
                let n = if self.threads == 0 { std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) } else { self.threads };
                rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .thread_name(|i| format!("op-cpu-{i}"))
                    .build()
                    .map(Arc::new)
                    .map_err(|e| BackendError::Unavailable(format!("cannot start {n} CPU worker threads: {e}")))
            })
            .clone()
    }
}

fn no_kernel(op: &RegisteredOp) -> BackendError {
    BackendError::Unsupported(match op.contract.cpu {
        Some(_) => format!("the op's `cpu` kernel does not serve `{}` (no silent conversion: run another backend)", op.binding_text()),
        None => "the op declares no `cpu` kernel".into(),
    })
}

impl Backend for CpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }
    fn availability(&self) -> Result<(), BackendError> {
        self.pool().map(|_| ())
    }
    fn profile(&self) -> Result<Arc<DeviceProfile>, BackendError> {
        Ok(host_profile(&self.profile, BackendKind::Cpu))
    }
    fn allocation_limit(&self) -> Option<u64> {
        super::host::host_memory()
    }
    fn supports(&self, op: &RegisteredOp) -> Result<(), BackendError> {
        op.shims.cpu.map(|_| ()).ok_or_else(|| no_kernel(op))
    }
    fn prepare(&self, op: &Arc<RegisteredOp>) -> Result<Arc<dyn Prepared>, BackendError> {
        let shim = op.shims.cpu.ok_or_else(|| no_kernel(op))?;
        Ok(Arc::new(CpuPrepared { hash: op.hash, shim, pool: self.pool()? }))
    }
}

struct CpuPrepared {
    hash: [u8; 32],
    shim: ShimFn,
    pool: Arc<rayon::ThreadPool>,
}

impl Prepared for CpuPrepared {
    fn content_hash(&self) -> [u8; 32] {
        self.hash
    }
    fn execute(&self, req: &ExecRequest<'_>) -> Result<Vec<Tensor>, BackendError> {
        // On the calling thread; only chunks of a call large enough to split go to the pool.
        par::run_in(&self.pool, || run_forward(self.shim, req))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configured_thread_count_is_the_pools() {
        assert_eq!(CpuBackend::with_threads(1).threads(), 1);
        assert_eq!(CpuBackend::with_threads(3).threads(), 3);
        assert!(CpuBackend::default().threads() >= 1);
    }
}
