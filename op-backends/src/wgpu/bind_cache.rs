//! Bind groups a pipeline keeps for calls on device tensors, keyed by exactly the buffers (and
//! windows) they bind. A call binding the same buffers as an earlier one (a chain or a training
//! step called again, its outputs taken from the buffer pool in the same order) reuses that
//! call's bind group instead of creating one. The key holds the buffers themselves, so a key's
//! buffer cannot be freed and its identity reused by another buffer while the entry lives.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Bind groups each pipeline keeps (most recently used last).
const BIND_CACHE: usize = 8;

/// One binding of a key: the buffer, and the bound window (`offset`, `size`; `0` = all of it).
pub type Binding = (wgpu::Buffer, u64, u64);

/// A pipeline's cached bind groups (see the module doc).
#[derive(Debug, Default)]
pub struct BindCache {
    entries: Mutex<Vec<(Vec<Binding>, wgpu::BindGroup)>>,
}

/// Bind groups created and reused for calls on device tensors, engine-wide (created counts
/// those built outside the cache too).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BindStats {
    /// Bind groups created for calls on device tensors.
    pub built: u64,
    /// Calls that reused a cached bind group.
    pub reused: u64,
}

/// The engine's [`BindStats`] counters.
#[derive(Debug, Default)]
pub struct BindCounters {
    built: AtomicU64,
    reused: AtomicU64,
}

impl BindCounters {
    /// Counts a bind group built outside the cache (a call whose buffers cannot recur).
    pub fn note_built(&self) {
        self.built.fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> BindStats {
        BindStats { built: self.built.load(Ordering::Relaxed), reused: self.reused.load(Ordering::Relaxed) }
    }
}

impl BindCache {
    fn lock(&self) -> MutexGuard<'_, Vec<(Vec<Binding>, wgpu::BindGroup)>> {
        // Single removes and pushes leave the list consistent: a poisoned lock is recovered.
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The bind group binding `key`: the cached one, or `make`'s (then cached, evicting the
    /// least recently used beyond [`BIND_CACHE`]). `make`'s error is returned and nothing cached.
    pub fn get_or_make<E>(
        &self,
        key: Vec<Binding>,
        counters: &BindCounters,
        make: impl FnOnce(&[Binding]) -> Result<wgpu::BindGroup, E>,
    ) -> Result<wgpu::BindGroup, E> {
        {
            let mut entries = self.lock();
            if let Some(k) = entries.iter().position(|(b, _)| *b == key) {
                let hit = entries.remove(k);
                let group = hit.1.clone();
                entries.push(hit);
                counters.reused.fetch_add(1, Ordering::Relaxed);
                return Ok(group);
            }
        }
        let group = make(&key)?;
        counters.built.fetch_add(1, Ordering::Relaxed);
        let mut entries = self.lock();
        if entries.len() >= BIND_CACHE {
            entries.remove(0);
        }
        entries.push((key, group.clone()));
        Ok(group)
    }

    /// Forgets every cached bind group (and so the buffers they hold).
    pub fn clear(&self) {
        self.lock().clear();
    }
}
