//! Which copy of the process this is: a child forked to run a kernel under test
//! (`verify::isolate`) has none of its parent's threads, so anything that started threads
//! (the CPU backend's pool) starts them again when the generation it started them in is not the
//! current one. Owns the generation counter only.

use std::sync::atomic::{AtomicU64, Ordering};

static GENERATION: AtomicU64 = AtomicU64::new(0);

/// The process generation: 0 in a process as started, one more in each forked child.
pub fn generation() -> u64 {
    GENERATION.load(Ordering::Acquire)
}

/// Marks this process a forked child (called first thing after `fork` in the child).
pub fn entered_child() {
    GENERATION.fetch_add(1, Ordering::AcqRel);
}
