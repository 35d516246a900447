//! Limits on a kernel run under test: where conformance runs an op's kernel (in a child
//! process or in the verifier's own), how long one case may take and how much memory the child
//! may add. Owns the policy's data and its defaults; the child process itself is
//! `verify::isolate`'s, and the per-op overrides are kept by the registry
//! ([`Registry::set_run_limits`](crate::registry::Registry::set_run_limits)).

use std::time::Duration;

/// Where conformance runs a kernel under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Isolation {
    /// A child process for every kernel that is not op-runtime's own (a user op's `cpu`
    /// kernel, or its VJP op's); the built-ins' kernels and the GPU backends (whose kernels
    /// cannot reach the host's memory, and whose waits have timeouts) run in process.
    #[default]
    Auto,
    /// A child process for every host kernel (`cpu` and reference backends), built-ins included.
    Child,
    /// In the verifier's own process: a kernel that crashes, aborts or hangs takes the verifier
    /// with it. For debugging a kernel under a debugger.
    InProcess,
}

/// Limits on one kernel run under test. A case may take
/// `max(time_floor, time_factor x the reference's time on it)`, or `time` where it is set; the
/// child may map `memory` bytes beyond what it inherited.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct RunLimits {
    /// Where the kernel runs.
    pub isolation: Isolation,
    /// The least wall time one case may take.
    pub time_floor: Duration,
    /// How many times the reference's own time on a case the kernel may take.
    pub time_factor: u32,
    /// A fixed limit per case, replacing floor and factor.
    pub time: Option<Duration>,
    /// Bytes of address space a child process may add to what it inherited.
    pub memory: u64,
}

impl Default for RunLimits {
    fn default() -> Self {
        RunLimits { isolation: Isolation::Auto, time_floor: Duration::from_secs(2), time_factor: 100, time: None, memory: 4 << 30 }
    }
}

impl RunLimits {
    /// These limits with a fixed time limit per case.
    pub fn with_time(self, limit: Duration) -> RunLimits {
        RunLimits { time: Some(limit), ..self }
    }

    /// These limits with another isolation.
    pub fn with_isolation(self, isolation: Isolation) -> RunLimits {
        RunLimits { isolation, ..self }
    }

    /// These limits with another memory limit (bytes a child may add).
    pub fn with_memory(self, bytes: u64) -> RunLimits {
        RunLimits { memory: bytes, ..self }
    }

    /// The time one case may take, given the reference's time on it.
    pub fn case_limit(&self, reference: Duration) -> Duration {
        self.time.unwrap_or_else(|| self.time_floor.max(reference.saturating_mul(self.time_factor)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_scales_from_the_reference_and_a_fixed_limit_wins() {
        let l = RunLimits::default();
        assert_eq!(l.case_limit(Duration::from_micros(3)), l.time_floor);
        assert_eq!(l.case_limit(Duration::from_millis(50)), Duration::from_secs(5));
        assert_eq!(l.with_time(Duration::from_millis(10)).case_limit(Duration::from_secs(9)), Duration::from_millis(10));
    }
}
