//! Waiting for the device, always with a limit. A wait on a submission gives up after the
//! engine's wait timeout ([`DEFAULT_WAIT_TIMEOUT`], changed with `WgpuEngine::set_wait_timeout`),
//! longer for many invocations (its own launch's and those submitted before it without a
//! wait); a submission that does not finish in time leaves
//! the device *hung*: a kernel that never ends blocks the queue, so later work is refused at once
//! ([`Stall::Hung`]) until that submission completes, instead of waiting behind it. It knows
//! nothing of ops or of the engine; it must not wait without a limit.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// How long a wait on a launch lasts by default before it is a [`Stall::TimedOut`]: generous
/// for any correct kernel (a software adapter included, with other launches queued before it),
/// short enough that a kernel that never ends is a verdict.
pub const DEFAULT_WAIT_TIMEOUT: Duration = Duration::from_secs(30);

/// Invocations a launch may have per wait timeout: a launch of more waits proportionally longer
/// (a launch of `2^25` invocations waits three times the timeout).
const INVOCATIONS_PER_TIMEOUT: u64 = 1 << 24;

/// Why a wait did not end with the submission done (the engine's `WgpuError` says it to callers).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Stall {
    /// The submission did not finish within `limit`; `what` names it.
    #[error("the device timed out: {what} (the kernel may never end; `WgpuEngine::set_wait_timeout` changes the limit)")]
    TimedOut {
        /// The launch or transfer, and the limit it exceeded.
        what: String,
        /// The limit.
        limit: Duration,
    },
    /// An earlier submission that timed out (named) is still running.
    #[error("the device is hung: it is still running {0}; nothing more runs on this engine until it finishes")]
    Hung(String),
    /// wgpu's poll failed (its message).
    #[error("device poll: {0}")]
    Poll(String),
    /// wgpu's poll panicked (the panic's message): the device is likely lost.
    #[error("wgpu device lost: {0}")]
    Panicked(String),
}

/// The wait limit, the invocations submitted without a wait since (launches on device tensors,
/// which a later wait waits for too), and the hung submission, if any (shared by an engine and
/// its device buffers).
#[derive(Debug)]
pub struct Waits {
    timeout_ns: AtomicU64,
    pending: AtomicU64,
    hung: Mutex<Option<Hang>>,
}

/// A submission that did not finish within its wait.
#[derive(Debug)]
struct Hang {
    submission: wgpu::SubmissionIndex,
    what: String,
}

impl Default for Waits {
    fn default() -> Waits {
        Waits { timeout_ns: AtomicU64::new(nanos(DEFAULT_WAIT_TIMEOUT)), pending: AtomicU64::new(0), hung: Mutex::new(None) }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Waits {
    /// The wait timeout (for a launch of at most [`INVOCATIONS_PER_TIMEOUT`] invocations).
    pub fn timeout(&self) -> Duration {
        Duration::from_nanos(self.timeout_ns.load(Ordering::Relaxed))
    }

    /// Sets the wait timeout; at least 1 ms.
    pub fn set_timeout(&self, timeout: Duration) {
        self.timeout_ns.store(nanos(timeout.max(Duration::from_millis(1))), Ordering::Relaxed);
    }

    /// How long a launch of `invocations` may take: the timeout once per
    /// [`INVOCATIONS_PER_TIMEOUT`] invocations begun, at least once.
    pub fn limit(&self, invocations: u64) -> Duration {
        let times = invocations.div_ceil(INVOCATIONS_PER_TIMEOUT).max(1);
        self.timeout().saturating_mul(u32::try_from(times).unwrap_or(u32::MAX))
    }

    /// Notes a launch of `invocations` submitted without a wait: the next wait, which waits for
    /// it too, may take that much longer.
    pub fn submitted(&self, invocations: u64) {
        let _ = self.pending.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |p| Some(p.saturating_add(invocations)));
    }

    /// `Ok` unless a submission that timed out is still running ([`Stall::Hung`]); one that
    /// has finished since is forgotten.
    pub fn check(&self, device: &wgpu::Device) -> Result<(), Stall> {
        let mut hung = self.hung.lock().unwrap_or_else(|p| p.into_inner());
        let Some(h) = hung.as_ref() else { return Ok(()) };
        let now = wgpu::PollType::Wait { submission_index: Some(h.submission.clone()), timeout: Some(Duration::ZERO) };
        match catch_unwind(AssertUnwindSafe(|| device.poll(now))) {
            Ok(Ok(_)) => {
                *hung = None;
                Ok(())
            }
            _ => Err(Stall::Hung(h.what.clone())),
        }
    }

    /// Waits for `submission` (`what`: a launch of `invocations`, or a transfer with 0) for at
    /// most [`Waits::limit`] of its invocations and those submitted without a wait before it;
    /// past that the device is hung and the wait is [`Stall::TimedOut`].
    pub fn wait(&self, device: &wgpu::Device, submission: wgpu::SubmissionIndex, invocations: u64, what: &str) -> Result<(), Stall> {
        let pending = self.pending.load(Ordering::Relaxed);
        let limit = self.limit(invocations.saturating_add(pending));
        let poll = wgpu::PollType::Wait { submission_index: Some(submission.clone()), timeout: Some(limit) };
        match catch_unwind(AssertUnwindSafe(|| device.poll(poll))) {
            Ok(Ok(_)) => {
                // Those launches are done (they were submitted before this one).
                let _ = self.pending.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |p| Some(p.saturating_sub(pending)));
                Ok(())
            }
            Ok(Err(wgpu::PollError::Timeout)) => {
                let what = format!("{what}, which did not finish within {limit:?}");
                *self.hung.lock().unwrap_or_else(|p| p.into_inner()) = Some(Hang { submission, what: what.clone() });
                Err(Stall::TimedOut { what, limit })
            }
            Ok(Err(e)) => Err(Stall::Poll(e.to_string())),
            Err(panic) => Err(Stall::Panicked(
                panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "panic in Device::poll".to_string()),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_grows_with_the_launch_and_the_timeout_has_a_floor() {
        let w = Waits::default();
        assert_eq!(w.limit(0), DEFAULT_WAIT_TIMEOUT);
        assert_eq!(w.limit(INVOCATIONS_PER_TIMEOUT), DEFAULT_WAIT_TIMEOUT);
        assert_eq!(w.limit(INVOCATIONS_PER_TIMEOUT + 1), DEFAULT_WAIT_TIMEOUT * 2);
        assert_eq!(w.limit(u64::MAX), DEFAULT_WAIT_TIMEOUT.saturating_mul(u32::MAX));
        w.set_timeout(Duration::ZERO);
        assert_eq!(w.timeout(), Duration::from_millis(1));
        w.set_timeout(Duration::MAX);
        assert_eq!(w.limit(1), Duration::from_nanos(u64::MAX));
    }

    #[test]
    fn launches_submitted_without_a_wait_lengthen_the_next_one() {
        let w = Waits::default();
        w.submitted(INVOCATIONS_PER_TIMEOUT);
        w.submitted(1);
        assert_eq!(w.pending.load(Ordering::Relaxed), INVOCATIONS_PER_TIMEOUT + 1);
        assert_eq!(w.limit(w.pending.load(Ordering::Relaxed)), DEFAULT_WAIT_TIMEOUT * 2);
        w.submitted(u64::MAX);
        assert_eq!(w.pending.load(Ordering::Relaxed), u64::MAX, "saturates");
    }
}
