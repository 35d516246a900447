//! The engine's pool of device-tensor buffers. A dropped device tensor's buffer returns here
//! (by its padded size) instead of being freed, and the next device tensor of that size takes
//! it: a training step or a chain called again allocates nothing after its first run. The
//! pool keeps at most [`BufferPool::limit`] bytes (beyond that a returned buffer is freed), and
//! [`BufferPool::trim`] frees everything it holds. A reused buffer still holds its last
//! tensor's bytes: whoever takes one clears it (the engine does, on the device, before the
//! kernel that writes it), so outputs start at zero as fresh ones do.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

/// Bytes the pool keeps by default (256 MiB); `WgpuEngine::set_pool_limit` changes it.
pub const DEFAULT_POOL_LIMIT: u64 = 256 << 20;

/// What the pool has done so far, for tests and benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Device-tensor buffers created because the pool had none of the size.
    pub created: u64,
    /// Buffers taken from the pool instead of created.
    pub reused: u64,
    /// Buffers of dropped device tensors kept for reuse.
    pub returned: u64,
    /// Buffers freed instead of kept (the pool was full) or by a trim.
    pub freed: u64,
    /// Bytes held now.
    pub held_bytes: u64,
}

#[derive(Debug, Default)]
struct Inner {
    free: HashMap<u64, Vec<wgpu::Buffer>>,
    limit: u64,
    stats: PoolStats,
}

/// Free device-tensor buffers of one device, by size (see the module doc).
#[derive(Debug)]
pub struct BufferPool {
    inner: Mutex<Inner>,
}

impl Default for BufferPool {
    fn default() -> BufferPool {
        BufferPool { inner: Mutex::new(Inner { limit: DEFAULT_POOL_LIMIT, ..Inner::default() }) }
    }
}

impl BufferPool {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Every critical section leaves the pool consistent, so a poisoned lock is recovered.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A free buffer of exactly `size` bytes (the most recently returned), or `None`; the
    /// caller then creates one and reports it with [`BufferPool::note_created`].
    pub fn take(&self, size: u64) -> Option<wgpu::Buffer> {
        let mut p = self.lock();
        let buffer = p.free.get_mut(&size)?.pop()?;
        p.stats.reused += 1;
        p.stats.held_bytes -= size;
        Some(buffer)
    }

    /// Counts a buffer created because [`BufferPool::take`] had none.
    pub fn note_created(&self) {
        self.lock().stats.created += 1;
    }

    /// Keeps `buffer` for reuse, or frees it if that would exceed the limit.
    pub fn give(&self, buffer: wgpu::Buffer) {
        let size = buffer.size();
        let mut p = self.lock();
        if p.stats.held_bytes.saturating_add(size) > p.limit {
            p.stats.freed += 1;
            return;
        }
        p.stats.held_bytes += size;
        p.stats.returned += 1;
        p.free.entry(size).or_default().push(buffer);
    }

    /// Frees every buffer held.
    pub fn trim(&self) {
        let mut p = self.lock();
        let n: usize = p.free.values().map(Vec::len).sum();
        p.free.clear();
        p.stats.freed += n as u64;
        p.stats.held_bytes = 0;
    }

    /// The most bytes the pool keeps.
    pub fn limit(&self) -> u64 {
        self.lock().limit
    }

    /// Sets the most bytes the pool keeps (`0`: none, every dropped buffer is freed), freeing
    /// what it holds if that is more.
    pub fn set_limit(&self, bytes: u64) {
        let over = {
            let mut p = self.lock();
            p.limit = bytes;
            p.stats.held_bytes > bytes
        };
        if over {
            self.trim();
        }
    }

    /// What the pool has done so far.
    pub fn stats(&self) -> PoolStats {
        self.lock().stats
    }
}
