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

pub mod kernels;
pub mod math;
pub mod par;
mod prefetch;
pub mod simd;
pub mod simd64;
#[cfg(test)]
mod simd_tests;

/// Output buffers for kernels: [`hostmem::with_capacity`] and [`hostmem::zeroed`] advise large
/// ones for transparent huge pages (one page fault per 2 MiB instead of per 4 KiB).
pub use op_core::hostmem;

use super::host::{host_profile, run_forward};
use op_core::backend::{Backend, BackendError, ExecRequest, Prepared};
use op_core::decl::ShimFn;
use op_core::device::DeviceProfile;
use op_core::kind::BackendKind;
use op_core::op::RegisteredOp;
use op_core::tensor::Tensor;
use std::sync::{Arc, OnceLock};

/// The CPU backend.
pub struct CpuBackend {
    pool: Arc<PoolCell>,
    profile: OnceLock<Arc<DeviceProfile>>,
}

/// The backend's thread pool, started once per process generation (`core::process`): a child
/// forked to run a kernel under test has none of its parent's threads, so it starts its own.
/// A started pool, or why it could not start.
type Pool = Result<Arc<rayon::ThreadPool>, BackendError>;

struct PoolCell {
    threads: usize,
    /// The pool of the process as started (generation 0): no lock on the call path.
    first: OnceLock<Pool>,
    /// The pool of a forked child, with the generation it was started in.
    child: std::sync::Mutex<Option<(u64, Pool)>>,
}

impl PoolCell {
    fn new(threads: usize) -> PoolCell {
        PoolCell { threads, first: OnceLock::new(), child: std::sync::Mutex::new(None) }
    }

    fn get(&self) -> Result<Arc<rayon::ThreadPool>, BackendError> {
        let generation = op_core::process::generation();
        if generation == 0 {
            return self.first.get_or_init(|| start_pool(self.threads)).clone();
        }
        let mut slot = self.child.lock().unwrap_or_else(|p| p.into_inner());
        match &*slot {
            Some((g, pool)) if *g == generation => pool.clone(),
            _ => {
                let pool = start_pool(self.threads);
                *slot = Some((generation, pool.clone()));
                pool
            }
        }
    }
}

fn start_pool(threads: usize) -> Result<Arc<rayon::ThreadPool>, BackendError> {
    let n = if threads == 0 { std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) } else { threads };
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("op-cpu-{i}"))
        .build()
        .map(Arc::new)
        .map_err(|e| BackendError::Unavailable(format!("cannot start {n} CPU worker threads: {e}").into()))
}

impl Default for CpuBackend {
    fn default() -> Self {
        CpuBackend::with_threads(0)
    }
}

impl CpuBackend {
    /// A CPU backend running kernels on `threads` threads (`0`: one per available core).
    pub fn with_threads(threads: usize) -> CpuBackend {
        CpuBackend { pool: Arc::new(PoolCell::new(threads)), profile: OnceLock::new() }
    }

    /// The number of threads kernels run on.
    pub fn threads(&self) -> usize {
        match self.pool() {
            Ok(p) => p.current_num_threads(),
            Err(_) => 1,
        }
    }

    fn pool(&self) -> Result<Arc<rayon::ThreadPool>, BackendError> {
        self.pool.get()
    }
}

fn no_kernel(op: &RegisteredOp) -> BackendError {
    BackendError::Unsupported(
        match op.contract.cpu {
            Some(_) => format!("the op's `cpu` kernel does not serve `{}` (no silent conversion: run another backend)", op.binding_text()),
            None => "the op declares no `cpu` kernel".into(),
        }
        .into(),
    )
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
        self.pool()?;
        Ok(Arc::new(CpuPrepared { hash: op.hash, shim, pool: self.pool.clone() }))
    }
}

struct CpuPrepared {
    hash: [u8; 32],
    shim: ShimFn,
    pool: Arc<PoolCell>,
}

impl Prepared for CpuPrepared {
    fn content_hash(&self) -> [u8; 32] {
        self.hash
    }
    fn execute(&self, req: &ExecRequest<'_>) -> Result<Vec<Tensor>, BackendError> {
        // On the calling thread; only chunks of a call large enough to split go to the pool.
        par::run_in(&self.pool.get()?, || run_forward(self.shim, req))
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
