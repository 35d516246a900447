//! How the engine's failures become typed: [`WgpuError`], the error scopes every wgpu call
//! that can raise a GPU error runs in, the handler of the errors that escape them, and the
//! device-lost watch.

use super::super::wait::Stall;
use super::{lock, WgpuEngine};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Most uncaptured error messages kept for [`WgpuEngine::take_uncaptured_errors`].
const MAX_UNCAPTURED: usize = 64;

/// Errors of the wgpu engine. Cloneable so the process-wide [`WgpuEngine::shared`] result can be
/// handed out repeatedly.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WgpuError {
    /// No adapter on any backend wgpu was built with.
    #[error("no wgpu adapter available: {hint}")]
    NoAdapter {
        /// What was found and how to get an adapter.
        hint: String,
    },
    /// The adapter refused to create a device.
    #[error("wgpu request_device failed: {0}")]
    RequestDevice(String),
    /// A GPU validation error, caught with an error scope. `what` names the stage
    /// (`shader module`, `compute pipeline`, `bind group`, `dispatch`, ...).
    #[error("wgpu validation error in {what}: {message}")]
    Validation {
        /// The stage.
        what: String,
        /// wgpu's message.
        message: String,
    },
    /// The GPU ran out of memory during `what`.
    #[error("wgpu out of memory in {what}: {message}")]
    OutOfMemory {
        /// The stage.
        what: String,
        /// wgpu's message.
        message: String,
    },
    /// An internal wgpu/driver error during `what`.
    #[error("wgpu internal error in {what}: {message}")]
    Internal {
        /// The stage.
        what: String,
        /// wgpu's message.
        message: String,
    },
    /// Mapping the readback buffer failed, or waiting for the device failed.
    #[error("wgpu buffer map / readback failed: {0}")]
    Map(String),
    /// A request exceeds a device limit; nothing was truncated.
    #[error("{what}: {requested} exceeds the device limit {limit}")]
    TooLarge {
        /// The quantity that exceeds the limit.
        what: String,
        /// The amount requested.
        requested: u64,
        /// The device limit.
        limit: u64,
    },
    /// A launch geometry the engine does not support (e.g. `wg[1] != 1`, `wg[0] == 0`).
    #[error("invalid launch: {0}")]
    InvalidLaunch(String),
    /// The pipeline cached under this key was built for different slots or source: the key
    /// must cover the source and its binding layout.
    #[error("pipeline cache key mismatch for entry `{entry}`: {detail}")]
    KeyMismatch {
        /// The kernel entry point.
        entry: String,
        /// What differs from the cached pipeline.
        detail: String,
    },
    /// The device was lost (driver reset, crash); the engine cannot be used any more.
    #[error("wgpu device lost: {0}")]
    DeviceLost(String),
    /// The device did not finish `what` within its wait limit: the kernel may never end. The
    /// device is hung until it does ([`WgpuError::Hung`]).
    #[error("the device timed out: {what} (the kernel may never end; `WgpuEngine::set_wait_timeout` changes the limit)")]
    TimedOut {
        /// The launch or transfer waited for, and the limit it exceeded.
        what: String,
        /// The limit.
        limit: std::time::Duration,
    },
    /// An earlier wait timed out and its submission is still running: the device's queue is
    /// blocked behind it, so nothing more is submitted until it finishes.
    #[error("the device is hung: it is still running {0}; nothing more runs on this engine until it finishes")]
    Hung(String),
}

impl From<Stall> for WgpuError {
    fn from(s: Stall) -> WgpuError {
        match s {
            Stall::TimedOut { what, limit } => WgpuError::TimedOut { what, limit },
            Stall::Hung(what) => WgpuError::Hung(what),
            Stall::Poll(msg) => WgpuError::Map(format!("device poll: {msg}")),
            Stall::Panicked(msg) => WgpuError::DeviceLost(msg),
        }
    }
}

/// Errors the device reports outside an error scope: recorded (wgpu's default handler panics),
/// and a device-lost flag with its reason.
pub(super) type ErrorWatch = (Arc<Mutex<Vec<String>>>, Arc<Mutex<Option<String>>>, Arc<AtomicBool>);

pub(super) fn watch_errors(device: &wgpu::Device) -> ErrorWatch {
    let uncaptured = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&uncaptured);
    device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
        let mut v = lock(&sink);
        if v.len() >= MAX_UNCAPTURED {
            v.remove(0);
        }
        v.push(e.to_string());
    }));
    let lost = Arc::new(Mutex::new(None));
    let lost_flag = Arc::new(AtomicBool::new(false));
    let (l, flag) = (Arc::clone(&lost), Arc::clone(&lost_flag));
    device.set_device_lost_callback(move |reason, msg| {
        *lock(&l) = Some(format!("{reason:?}: {msg}"));
        flag.store(true, Ordering::Release);
    });
    (uncaptured, lost, lost_flag)
}

impl WgpuEngine {
    /// Drains the GPU errors that escaped every error scope (should stay empty).
    pub fn take_uncaptured_errors(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.uncaptured))
    }

    /// Runs `f` inside validation, out-of-memory and internal error scopes on this thread and
    /// turns a captured error into a typed one.
    pub(super) fn scoped<T>(&self, what: &str, f: impl FnOnce() -> T) -> Result<T, WgpuError> {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let internal = self.device.push_error_scope(wgpu::ErrorFilter::Internal);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let out = f();
        // Scopes must be popped in reverse order of pushing.
        let v = pollster::block_on(validation.pop());
        let i = pollster::block_on(internal.pop());
        let o = pollster::block_on(oom.pop());
        let what = what.to_string();
        if let Some(e) = v {
            return Err(WgpuError::Validation { what, message: e.to_string() });
        }
        if let Some(e) = o {
            return Err(WgpuError::OutOfMemory { what, message: e.to_string() });
        }
        if let Some(e) = i {
            return Err(WgpuError::Internal { what, message: e.to_string() });
        }
        Ok(out)
    }

    /// `Ok` unless the device is lost or hung (a launch that timed out is still running).
    pub(super) fn check_lost(&self) -> Result<(), WgpuError> {
        if self.lost_flag.load(Ordering::Acquire) {
            let msg = lock(&self.lost).clone().unwrap_or_default();
            return Err(WgpuError::DeviceLost(msg));
        }
        self.link.waits.check(&self.device).map_err(WgpuError::from)
    }
}
