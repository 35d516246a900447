//! Per-op limits on kernel runs under test ([`RunLimits`]), kept with the registry so that
//! conformance, the generated tests and `cargo op report` read the same ones. Decides nothing:
//! conformance applies them.

use super::{OpHandle, Registry};
use crate::limits::RunLimits;

impl Registry {
    /// Sets the limits conformance runs this op's kernels under (every instance and backend),
    /// replacing the defaults ([`RunLimits::default`]) for this op only.
    pub fn set_run_limits(&self, handle: &OpHandle, limits: RunLimits) {
        let mut map = self.inner.run_limits.write().unwrap_or_else(|p| p.into_inner());
        map.insert(handle.id(), limits);
    }

    /// The limits conformance runs the op `id` (`name@version`) under: those set with
    /// [`Registry::set_run_limits`], else the defaults.
    pub fn run_limits(&self, id: &str) -> RunLimits {
        let map = self.inner.run_limits.read().unwrap_or_else(|p| p.into_inner());
        map.get(id).copied().unwrap_or_default()
    }
}
