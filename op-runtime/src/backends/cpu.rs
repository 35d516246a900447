//! The CPU backend: runs an op's `cpu = path` kernel on the host, over the CPU's cores. Each
//! backend owns a thread pool (all cores by default, or [`CpuBackend::with_threads`]); a kernel
//! runs inside it, so the parallel helpers below ([`for_each_chunk`], [`par_map_blocks`]) use
//! that many threads. Ops without a `cpu` kernel are `Unsupported` here (the reference runs
//! them), never silently rerouted.
//!
//! Kernel authors split work with [`for_each_chunk`] (outputs in contiguous chunks: any split
//! of an exact op gives identical results) or [`par_map_blocks`] (fixed-size blocks whose
//! partial results are combined in a fixed order: reductions give the same bits for any thread
//! count). Inputs smaller than the grain never touch the pool.

use super::host::{host_profile, run_forward};
use crate::core::backend::{Backend, BackendError, ExecRequest, Prepared};
use crate::core::decl::ShimFn;
use crate::core::device::DeviceProfile;
use crate::core::kind::BackendKind;
use crate::core::op::RegisteredOp;
use crate::core::tensor::Tensor;
use rayon::prelude::*;
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
        Ok(host_profile(&self.profile, "cpu"))
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
        // A single-threaded pool runs the kernel on the calling thread: no hand-off at all.
        if self.pool.current_num_threads() == 1 {
            return run_forward(self.shim, req);
        }
        self.pool.install(|| run_forward(self.shim, req))
    }
}

/// Runs `f(offset, chunk)` over contiguous chunks of `out` (each at least `grain` elements,
/// `offset` its position in `out`) on the current thread pool: the CPU backend's when called
/// from a `cpu` kernel. `out.len() <= grain` runs inline on the calling thread.
pub fn for_each_chunk<T: Send>(out: &mut [T], grain: usize, f: impl Fn(usize, &mut [T]) + Sync + Send) {
    let grain = grain.max(1);
    if out.len() <= grain || rayon::current_num_threads() == 1 {
        f(0, out);
        return;
    }
    // A few chunks per thread for balance, never smaller than the grain.
    let chunks = (rayon::current_num_threads() * 4).min(out.len().div_ceil(grain)).max(1);
    let size = out.len().div_ceil(chunks).max(grain);
    out.par_chunks_mut(size).enumerate().for_each(|(k, c)| f(k * size, c));
}

/// Maps `f` over the blocks `[k * block, min((k + 1) * block, len))` of `0..len` in parallel and
/// returns the results in block order. The blocks depend on `len` and `block` only, never on
/// the thread count, so a reduction that combines them in order gives the same bits on any
/// number of threads. A single block runs inline.
pub fn par_map_blocks<R: Send>(len: usize, block: usize, f: impl Fn(std::ops::Range<usize>) -> R + Sync + Send) -> Vec<R> {
    let block = block.max(1);
    let n = len.div_ceil(block).max(1);
    let range = |k: usize| k * block..((k + 1) * block).min(len);
    if n == 1 || rayon::current_num_threads() == 1 {
        return (0..n).map(|k| f(range(k))).collect();
    }
    (0..n).into_par_iter().map(|k| f(range(k))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_pool<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool").install(f)
    }

    #[test]
    fn chunks_cover_the_output_once_with_their_offsets_on_any_thread_count() {
        for threads in [1, 2, 3] {
            for len in [0, 1, 15, 16, 17, 1000, 4097] {
                let mut out = vec![usize::MAX; len];
                in_pool(threads, || for_each_chunk(&mut out, 16, |off, c| c.iter_mut().enumerate().for_each(|(i, v)| *v = off + i)));
                assert_eq!(out, (0..len).collect::<Vec<_>>(), "threads {threads}, len {len}");
            }
        }
    }

    #[test]
    fn blocks_do_not_depend_on_the_thread_count() {
        let sum = |threads| in_pool(threads, || par_map_blocks(10_000, 4096, |r| (r.start, r.end)));
        assert_eq!(sum(1), vec![(0, 4096), (4096, 8192), (8192, 10_000)]);
        assert_eq!(sum(1), sum(2));
        assert_eq!(in_pool(2, || par_map_blocks(0, 8, |r| r.len())), vec![0]);
    }

    #[test]
    fn the_configured_thread_count_is_the_pools() {
        assert_eq!(CpuBackend::with_threads(1).threads(), 1);
        assert_eq!(CpuBackend::with_threads(3).threads(), 3);
        assert!(CpuBackend::default().threads() >= 1);
    }
}
