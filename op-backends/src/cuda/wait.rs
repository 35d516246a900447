//! Waiting for the CUDA stream, always with a limit. A wait records an event after the work
//! enqueued so far and polls it (`cuEventQuery`, which never blocks) until it completes or the
//! engine's wait timeout ([`DEFAULT_WAIT_TIMEOUT`], changed with `CudaEngine::set_wait_timeout`)
//! passes. Work that does not finish in time leaves the engine *hung*: a kernel that never ends
//! blocks the stream, so later work is refused at once ([`Stall::Hung`]) until that event
//! completes, instead of queueing behind it. `cuStreamSynchronize`, which waits without a
//! limit, is not used. It knows nothing of ops or kernels.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cudarc::driver::sys as cusys;
use cudarc::driver::{CudaEvent, CudaStream};

/// How long a wait lasts by default before it is a [`Stall::TimedOut`]: generous for any
/// correct kernel, short enough that a kernel that never ends is a verdict.
pub const DEFAULT_WAIT_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest pause between two polls of a pending event.
const MAX_PAUSE: Duration = Duration::from_millis(1);

/// Why a wait did not end with the work done (the engine's `CudaError` says it to callers).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Stall {
    /// The work did not finish within `limit`; `what` names it.
    #[error("the device timed out: {what} did not finish within {limit:?} (the kernel may never end; `CudaEngine::set_wait_timeout` changes the limit)")]
    TimedOut {
        /// The launch or transfer waited for.
        what: String,
        /// The limit it exceeded.
        limit: Duration,
    },
    /// An earlier wait timed out (on `what`) and its work is still running.
    #[error("the device is hung: it is still running {0}; nothing more runs on this engine until it finishes")]
    Hung(String),
    /// A driver call of the wait failed (the driver's error): a kernel fault surfaces here.
    #[error("{0}")]
    Driver(String),
}

/// The wait limit and the hung work, if any (shared by an engine and its device buffers).
#[derive(Debug)]
pub struct Waits {
    timeout_ns: AtomicU64,
    hung: Mutex<Option<Hang>>,
}

/// Work that did not finish within its wait: the event recorded after it.
#[derive(Debug)]
struct Hang {
    event: CudaEvent,
    what: String,
}

impl Default for Waits {
    fn default() -> Waits {
        Waits { timeout_ns: AtomicU64::new(nanos(DEFAULT_WAIT_TIMEOUT)), hung: Mutex::new(None) }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Waits {
    /// The wait timeout.
    pub fn timeout(&self) -> Duration {
        Duration::from_nanos(self.timeout_ns.load(Ordering::Relaxed))
    }

    /// Sets the wait timeout; at least 1 ms.
    pub fn set_timeout(&self, timeout: Duration) {
        self.timeout_ns.store(nanos(timeout.max(Duration::from_millis(1))), Ordering::Relaxed);
    }

    /// `Ok` unless work that timed out is still running ([`Stall::Hung`]); work that has
    /// finished since is forgotten.
    pub fn check(&self) -> Result<(), Stall> {
        let mut hung = self.hung.lock().unwrap_or_else(|p| p.into_inner());
        let Some(h) = hung.as_ref() else { return Ok(()) };
        match h.event.try_is_complete() {
            Ok(true) => {
                *hung = None;
                Ok(())
            }
            Ok(false) => Err(Stall::Hung(h.what.clone())),
            Err(e) => Err(Stall::Driver(format!("{} failed after its wait timed out: {e:?}", h.what))),
        }
    }

    /// Waits for everything enqueued on `stream` so far (`what` names it) for at most the
    /// timeout; past that the engine is hung and the wait is [`Stall::TimedOut`].
    pub fn wait(&self, stream: &CudaStream, what: &str) -> Result<(), Stall> {
        self.check()?;
        let flags = Some(cusys::CUevent_flags::CU_EVENT_DISABLE_TIMING);
        let event = stream.record_event(flags).map_err(|e| Stall::Driver(format!("cannot record an event after {what}: {e:?}")))?;
        let limit = self.timeout();
        match poll_until(&event, Instant::now() + limit) {
            Ok(true) => Ok(()),
            Ok(false) => {
                *self.hung.lock().unwrap_or_else(|p| p.into_inner()) = Some(Hang { event, what: what.to_string() });
                Err(Stall::TimedOut { what: what.to_string(), limit })
            }
            Err(e) => Err(Stall::Driver(format!("{what} failed: {e:?}"))),
        }
    }
}

/// Polls `event` until it completes (`true`) or `deadline` passes (`false`): spins briefly for
/// short kernels, then sleeps, doubling the pause up to [`MAX_PAUSE`].
fn poll_until(event: &CudaEvent, deadline: Instant) -> Result<bool, cudarc::driver::DriverError> {
    let mut pause = Duration::from_micros(1);
    loop {
        if event.try_is_complete()? {
            return Ok(true);
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(false);
        }
        if pause < Duration::from_micros(32) {
            std::thread::yield_now();
        } else {
            std::thread::sleep(pause.min(deadline - now));
        }
        pause = (pause * 2).min(MAX_PAUSE);
    }
}
