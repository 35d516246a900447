//! Whether CUDA can be used here at all (libcuda and libnvrtc load, a device exists), asked
//! before any cudarc call, and the panic containment every cudarc call runs under.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

use cudarc::driver::sys as cusys;
use cudarc::driver::CudaContext;
use cudarc::nvrtc::sys as nvsys;

use super::error::CudaError;
use super::nvrtc::nvrtc_version;

pub(super) fn probe_uncached() -> Result<(), CudaError> {
    // SAFETY: these only try to dlopen the candidate names (and close them again).
    let have_driver = guarded(|_| (), || Ok(unsafe { cusys::is_culib_present() })).unwrap_or(false);
    let have_nvrtc = guarded(|_| (), || Ok(unsafe { nvsys::is_culib_present() })).unwrap_or(false);
    let mut missing = Vec::new();
    if !have_driver {
        missing.push(format!("libcuda (the NVIDIA driver library; tried {})", candidates("cuda")));
    }
    if !have_nvrtc {
        missing.push(format!("libnvrtc (the CUDA runtime compiler; tried {})", candidates("nvrtc")));
    }
    if !missing.is_empty() {
        return Err(CudaError::Unavailable {
            reason: format!(
                "cannot load {}; install the NVIDIA driver and CUDA's NVRTC, or add their \
                 directories to LD_LIBRARY_PATH",
                missing.join(" and ")
            ),
        });
    }
    guarded(
        |msg| CudaError::Unavailable { reason: format!("cudarc panicked while probing CUDA: {msg}") },
        || {
            let count = CudaContext::device_count()
                .map_err(|e| CudaError::Unavailable { reason: format!("cuInit/cuDeviceGetCount failed: {e:?}") })?;
            if count <= 0 {
                return Err(CudaError::Unavailable { reason: "no CUDA device found".to_string() });
            }
            nvrtc_version().map(|_| ())
        },
    )
}

/// Whether libnvrtc loads (the driver and a device need not exist): `Unavailable` naming the
/// library names tried where it does not.
pub(super) fn nvrtc_loads() -> Result<(), CudaError> {
    // SAFETY: this only tries to dlopen the candidate names (and closes them again).
    if guarded(|_| (), || Ok(unsafe { nvsys::is_culib_present() })).unwrap_or(false) {
        Ok(())
    } else {
        Err(CudaError::Unavailable {
            reason: format!(
                "cannot load libnvrtc (the CUDA runtime compiler; tried {}); install CUDA's NVRTC or add its directory to LD_LIBRARY_PATH",
                candidates("nvrtc")
            ),
        })
    }
}

/// A few of the file names cudarc tries for `lib`, for error messages.
fn candidates(lib: &str) -> String {
    let all = cudarc::get_lib_name_candidates(lib);
    let mut shown: Vec<&str> = Vec::new();
    for name in &all {
        if !shown.contains(&name.as_str()) {
            shown.push(name);
        }
    }
    let n = shown.len();
    if n > 3 {
        format!("{}, ... ({n} names)", shown[..3].join(", "))
    } else {
        shown.join(", ")
    }
}

/// Runs `f`, turning a panic into the error `on_panic` builds from its message.
pub(super) fn guarded<T, E>(on_panic: impl FnOnce(String) -> E, f: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "non-string panic payload".to_string());
            Err(on_panic(msg))
        }
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::super::engine::CudaEngine;
    use super::*;

    #[test]
    fn probe_and_shared_report_missing_libraries_without_panicking() {
        // SAFETY: only dlopen attempts.
        let driver = unsafe { cusys::is_culib_present() };
        let nvrtc = unsafe { nvsys::is_culib_present() };
        let probe = catch_unwind(CudaEngine::probe).expect("probe() must not panic");
        let shared = catch_unwind(|| CudaEngine::shared().map(|_| ())).expect("shared() must not panic");
        let new = catch_unwind(|| CudaEngine::new(0).map(|_| ())).expect("new() must not panic");
        if driver && nvrtc {
            eprintln!("libcuda and libnvrtc are present; the missing-library check does not apply here");
            return;
        }
        for (what, r) in [("probe", probe), ("shared", shared), ("new", new)] {
            match r {
                Err(CudaError::Unavailable { reason }) => {
                    if !driver {
                        assert!(reason.contains("libcuda"), "{what}: reason should name libcuda: {reason}");
                    }
                    if !nvrtc {
                        assert!(reason.contains("libnvrtc"), "{what}: reason should name libnvrtc: {reason}");
                    }
                    let shown = CudaError::Unavailable { reason: reason.clone() }.to_string();
                    assert!(shown.starts_with("CUDA backend unavailable"), "{shown}");
                }
                other => panic!("{what}: expected Unavailable, got {other:?}"),
            }
        }
        // Asking again is still an error, not a panic (the answer is cached).
        assert!(matches!(CudaEngine::probe(), Err(CudaError::Unavailable { .. })));
        assert!(matches!(CudaEngine::shared(), Err(CudaError::Unavailable { .. })));
    }
}
