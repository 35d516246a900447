//! CUDA engine: cudarc (driver API) + NVRTC.
//!
//! * Library presence is checked before any cudarc call: cudarc is built with dynamic loading
//!   and panics on first use when `libcuda`/`libnvrtc` cannot be loaded, so [`CudaEngine::probe`]
//!   asks cudarc's `is_culib_present` first and turns a missing library into
//!   [`CudaError::Unavailable`]. As a second line of defence every call into cudarc runs under
//!   `catch_unwind`, so a panic inside cudarc (a missing symbol in an old library, ...) becomes a
//!   typed error as well.
//! * Kernels are compiled to PTX by NVRTC, with headers passed in memory (`nvrtcCreateProgram`'s
//!   header list), for the device's compute capability (clamped to what NVRTC supports). The PTX
//!   is cached on disk under `ptx_cache_key` (content hash, source, headers, entry, options,
//!   NVRTC version and architecture) by `PtxDiskCache`, which verifies a digest of every
//!   entry on load (a corrupt entry is counted and rebuilt, never run), publishes atomically,
//!   and is memoised in memory per key.
//! * Launches copy every buffer argument to the device, launch once with
//!   `grid = ceil(threads / block)`, synchronise, and read back the `ReadWrite` buffers.
//!
//! This module holds the engine and its compile path; NVRTC (`nvrtc`), probing (`probe`), the
//! device profile (`profile`), kernels and their PTX parameters (`kernel`), the grid (`grid`),
//! launches (`launch`) and the disk cache (`ptx_cache`) live beside it. It knows nothing of ops
//! or contracts; the `cuda` backend drives it.

use std::collections::HashMap;
use std::ffi::c_int;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::sys as cusys;
use cudarc::driver::{CudaContext, CudaFunction, CudaStream, DriverError};
use cudarc::nvrtc::Ptx;

use super::error::CudaError;
use super::kernel::{ptx_entry_params, CudaKernel};
use super::nvrtc::{self, choose_ptx_arch, nvrtc_supported_archs, nvrtc_version, validate_compile_inputs};
use super::probe::{guarded, lock, probe_uncached};
use super::profile::{cuda_profile, format_uuid, parse_nvidia_driver_build, pci_device_id, CudaFacts};
use super::ptx_cache::{default_ptx_cache_dir, ptx_cache_key, PtxDiskCache};
use super::resident::Link;
use super::wait::Waits;
use crate::transfers::Counters;
use op_core::device::DeviceId;
use op_core::device::DeviceProfile;
use op_core::error::TensorError;
use op_core::tensor::Device;
use op_core::tensor::Tensor;

/// A CUDA device with its primary context, a stream, and the kernel caches.
pub struct CudaEngine {
    pub(super) id: u64,
    pub(super) ctx: Arc<CudaContext>,
    pub(super) stream: Arc<CudaStream>,
    pub(super) profile: DeviceProfile,
    /// Architecture part of the cache key: NVRTC version, device capability, PTX target.
    pub(super) arch_tag: String,
    /// `--gpu-architecture` value passed to NVRTC, e.g. `compute_90`.
    pub(super) target_arch: String,
    pub(super) compute_capability: (i32, i32),
    pub(super) max_threads_per_block: u32,
    /// The device's block and grid limits per dimension.
    pub(super) max_block: [u32; 3],
    pub(super) max_grid: [u32; 3],
    pub(super) cache: PtxDiskCache,
    pub(super) kernels: Mutex<HashMap<String, Arc<CudaKernel>>>,
    pub(super) compiles: AtomicUsize,
    /// Peak DRAM bandwidth in bytes per second (memory clock x bus width x 2), where known.
    pub(super) peak_bandwidth: Option<f64>,
    /// Whether launches time their kernel with CUDA events ([`CudaEngine::set_kernel_timing`]).
    pub(super) timing: AtomicBool,
    /// The last timed kernel's duration in nanoseconds (`u64::MAX`: none yet).
    pub(super) last_kernel_ns: AtomicU64,
    /// What this engine's device buffers share with it (identity, stream, transfer counters).
    pub(super) link: Arc<Link>,
}

impl std::fmt::Debug for CudaEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaEngine")
            .field("profile", &self.profile)
            .field("arch", &self.arch_tag)
            .field("cache_dir", &self.cache.dir())
            .finish_non_exhaustive()
    }
}

/// Compiles with NVRTC alone (no driver, no device) for the newest virtual architecture it
/// supports up to `compute_90`; returns the PTX. `Unavailable` where libnvrtc does not load.
pub(super) fn compile_for_newest(source: &str, headers: &[(String, String)], entry: &str, options: &[String]) -> Result<String, CudaError> {
    super::probe::nvrtc_loads()?;
    guarded(
        |msg| CudaError::Unavailable { reason: format!("cudarc panicked while compiling `{entry}` with NVRTC: {msg}") },
        || {
            validate_compile_inputs(source, headers, entry, options)?;
            let arch = choose_ptx_arch(90, &nvrtc_supported_archs()).unwrap_or(90);
            nvrtc::compile(&format!("compute_{arch}"), source, headers, entry, options).map(|(ptx, _log)| ptx)
        },
    )
}

impl CudaEngine {
    /// Checks libcuda and libnvrtc can be loaded and a device exists; a typed
    /// [`CudaError::Unavailable`] otherwise. Never panics. The answer is computed once per process.
    pub fn probe() -> Result<(), CudaError> {
        static PROBE: OnceLock<Result<(), CudaError>> = OnceLock::new();
        PROBE.get_or_init(probe_uncached).clone()
    }

    /// The process-wide engine on device 0 (created on first use; a failure is remembered).
    pub fn shared() -> Result<&'static CudaEngine, CudaError> {
        static SHARED: OnceLock<Result<CudaEngine, CudaError>> = OnceLock::new();
        SHARED.get_or_init(|| CudaEngine::new(0)).as_ref().map_err(Clone::clone)
    }

    /// A new engine on device `ordinal` (the device's primary context), caching PTX in the
    /// default directory ([`default_ptx_cache_dir`]). Prefer [`CudaEngine::shared`].
    pub fn new(ordinal: usize) -> Result<CudaEngine, CudaError> {
        Self::probe()?;
        guarded(
            |msg| CudaError::Unavailable { reason: format!("cudarc panicked while initialising device {ordinal}: {msg}") },
            || Self::init(ordinal),
        )
    }

    /// Replaces the PTX cache directory (builder style).
    pub fn with_cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache = PtxDiskCache::new(Some(dir.into()));
        self
    }

    fn init(ordinal: usize) -> Result<CudaEngine, CudaError> {
        let unavailable = |what: &str, e: DriverError| CudaError::Unavailable { reason: format!("{what}: {e:?}") };
        let count = CudaContext::device_count().map_err(|e| unavailable("cuInit/cuDeviceGetCount failed", e))?;
        if ordinal >= count.max(0) as usize {
            return Err(CudaError::Unavailable { reason: format!("no CUDA device with ordinal {ordinal} ({count} device(s) visible)") });
        }
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| unavailable(&format!("cannot create the primary context of CUDA device {ordinal}"), e))?;
        // One stream, synchronised at the end of every launch: cudarc's per-buffer events for
        // multi-stream tracking are not needed (and would cost two cuEventCreate per buffer).
        // SAFETY: every buffer this engine allocates is used on `stream` only and is freed after
        // the stream has been synchronised.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();

        let attr = |a: cusys::CUdevice_attribute, what: &str| {
            ctx.attribute(a).map_err(|e| unavailable(&format!("cannot query {what} of CUDA device {ordinal}"), e))
        };
        let name = ctx.name().map_err(|e| unavailable("cuDeviceGetName failed", e))?;
        let (cc_major, cc_minor) = ctx.compute_capability().map_err(|e| unavailable("cannot query compute capability", e))?;
        let max_threads_per_block = attr(cusys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max threads per block")?;
        use cusys::CUdevice_attribute as A;
        let mut max_grid = [0u32; 3];
        let mut max_block = [0u32; 3];
        for (d, (g, b)) in [
            (A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X),
            (A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
            (A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z),
        ]
        .into_iter()
        .enumerate()
        {
            max_grid[d] = attr(g, "max grid dimension")?.max(1) as u32;
            max_block[d] = attr(b, "max block dimension")?.max(1) as u32;
        }
        let clock_khz = ctx.attribute(cusys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE).ok();
        let bus_bits = ctx.attribute(cusys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH).ok();
        let peak_bandwidth = match (clock_khz, bus_bits) {
            (Some(k), Some(b)) if k > 0 && b > 0 => Some(2.0 * f64::from(k) * 1e3 * f64::from(b) / 8.0),
            _ => None,
        };

        let mut driver_version: c_int = 0;
        // SAFETY: plain out-parameter call; the driver library is loaded (probe checked it).
        unsafe { cusys::cuDriverGetVersion(&mut driver_version) }.result().map_err(|e| unavailable("cuDriverGetVersion failed", e))?;
        let (nvrtc_major, nvrtc_minor) = nvrtc_version()?;
        let device_cc = cc_major * 10 + cc_minor;
        let target = choose_ptx_arch(device_cc, &nvrtc_supported_archs()).ok_or_else(|| CudaError::Unavailable {
            reason: format!(
                "NVRTC {nvrtc_major}.{nvrtc_minor} supports no architecture at or below the device's \
                 compute capability {cc_major}.{cc_minor}"
            ),
        })?;

        let device_id = pci_device_id(&ctx).unwrap_or(ordinal as u32);
        let uuid = ctx.uuid().map_err(|e| unavailable("cuDeviceGetUuid failed", e))?;
        let uuid = format_uuid(&uuid.bytes.map(|b| b as u8));
        let build = fs::read_to_string("/proc/driver/nvidia/version").ok().and_then(|t| parse_nvidia_driver_build(&t));
        let profile = cuda_profile(CudaFacts {
            name,
            uuid,
            compute_capability: (cc_major, cc_minor),
            driver_api: driver_version,
            driver_build: build,
            nvrtc: (nvrtc_major, nvrtc_minor),
            ptx_target: target,
            device_id,
        });
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let link = Arc::new(Link { id, stream: stream.clone(), counters: Counters::default(), waits: Waits::default() });
        Ok(CudaEngine {
            id,
            link,
            ctx,
            stream,
            profile,
            arch_tag: format!("nvrtc-{nvrtc_major}.{nvrtc_minor}/sm_{device_cc}/compute_{target}"),
            target_arch: format!("compute_{target}"),
            compute_capability: (cc_major, cc_minor),
            max_threads_per_block: max_threads_per_block.max(1) as u32,
            max_block,
            max_grid,
            cache: PtxDiskCache::new(default_ptx_cache_dir()),
            kernels: Mutex::new(HashMap::new()),
            compiles: AtomicUsize::new(0),
            peak_bandwidth,
            timing: AtomicBool::new(false),
            last_kernel_ns: AtomicU64::new(u64::MAX),
        })
    }

    #[doc(hidden)]
    pub fn link(&self) -> &Arc<Link> {
        &self.link
    }

    /// The device's peak DRAM bandwidth in bytes per second, from its memory clock and bus width
    /// (`None` where the driver reports neither).
    pub fn peak_memory_bandwidth(&self) -> Option<f64> {
        self.peak_bandwidth
    }

    /// How long a wait for this engine's device lasts before it is [`CudaError::TimedOut`]:
    /// 30 s unless set. Every wait (after a launch, before a read back) polls an event with this
    /// limit; none waits without one.
    pub fn wait_timeout(&self) -> std::time::Duration {
        self.link.waits.timeout()
    }

    /// Sets [`CudaEngine::wait_timeout`] (at least 1 ms) for every later wait on this engine and
    /// its device tensors. After a wait times out the engine refuses new work
    /// ([`CudaError::Hung`]) until the late kernel finishes.
    pub fn set_wait_timeout(&self, timeout: std::time::Duration) {
        self.link.waits.set_timeout(timeout);
    }

    /// Times every following launch's kernel with a pair of CUDA events (off by default: two
    /// events per launch). Read the result with [`CudaEngine::last_kernel_seconds`].
    pub fn set_kernel_timing(&self, on: bool) {
        self.timing.store(on, Ordering::Relaxed);
    }

    /// The device time of the last kernel launched while timing was on (transfers excluded).
    pub fn last_kernel_seconds(&self) -> Option<f64> {
        match self.last_kernel_ns.load(Ordering::Relaxed) {
            u64::MAX => None,
            ns => Some(ns as f64 * 1e-9),
        }
    }

    /// The device this engine runs on: backend `cuda`, device name, driver API version and driver
    /// build, NVRTC version, compute capability and PTX target, vendor 0x10de, PCI device id where
    /// the platform exposes it (else the ordinal), and the device UUID as the instance.
    pub fn profile(&self) -> &DeviceProfile {
        &self.profile
    }

    /// The device's compute capability (major, minor).
    pub fn compute_capability(&self) -> (i32, i32) {
        self.compute_capability
    }

    /// The directory PTX is cached in (`None` when none could be determined; compiles then fail
    /// with [`CudaError::Cache`]).
    pub fn cache_dir(&self) -> Option<&Path> {
        self.cache.dir()
    }

    /// Number of corrupt PTX cache entries this engine found (each was rebuilt, never run).
    pub fn corrupt_cache_entries(&self) -> usize {
        self.cache.corrupt_entries()
    }

    /// The last corrupt PTX cache entry found and why (a digest mismatch, a truncated file, ...).
    pub fn last_cache_corruption(&self) -> Option<String> {
        self.cache.last_corruption()
    }

    /// Number of NVRTC invocations by this engine (successful or not), so tests can observe cache
    /// hits.
    pub fn compiles(&self) -> usize {
        self.compiles.load(Ordering::SeqCst)
    }

    /// PTX for (source, headers, options, entry), compiled with NVRTC for this device and cached:
    /// in memory per key, and on disk in [`CudaEngine::cache_dir`] under a key of all of them
    /// and the device's architecture (published atomically). `headers` are `(include name,
    /// contents)` pairs, visible to `#include "name"` in the source. The entry must be `extern "C" __global__`.
    pub fn compile(
        &self,
        content_hash: [u8; 32],
        source: &str,
        headers: &[(String, String)],
        entry: &str,
        options: &[String],
    ) -> Result<Arc<CudaKernel>, CudaError> {
        validate_compile_inputs(source, headers, entry, options)?;
        let key = ptx_cache_key(&content_hash, source, headers, entry, options, &self.arch_tag);
        if let Some(kernel) = lock(&self.kernels).get(&key) {
            return Ok(kernel.clone());
        }
        let kernel = guarded(
            |msg| CudaError::Driver(format!("cudarc panicked while compiling/loading kernel `{entry}`: {msg}")),
            || self.compile_uncached(&key, source, headers, entry, options),
        )?;
        // Another thread may have compiled the same key meanwhile; keep the first one.
        Ok(lock(&self.kernels).entry(key).or_insert_with(|| Arc::new(kernel)).clone())
    }

    fn compile_uncached(
        &self,
        key: &str,
        source: &str,
        headers: &[(String, String)],
        entry: &str,
        options: &[String],
    ) -> Result<CudaKernel, CudaError> {
        let mut log = String::new();
        let mut rejected: Option<CudaError> = None;
        let accept = |ptx: &str| match self.load(ptx, entry) {
            Ok(function) => Ok(Some((ptx.to_string(), function))),
            // An entry the driver refuses (stale for this driver): rebuild and replace it; if
            // the fresh PTX is refused too, report the driver's own error.
            Err(e @ (CudaError::Driver(_) | CudaError::MissingEntry { .. })) => {
                rejected = Some(e);
                Ok(None)
            }
            Err(other) => Err(other),
        };
        let build = || {
            self.compiles.fetch_add(1, Ordering::SeqCst);
            let (ptx, l) = nvrtc::compile(&self.target_arch, source, headers, entry, options)?;
            log = l;
            Ok(ptx)
        };
        let result = self.cache.get_or_build(key, accept, build);
        match result? {
            Some(((ptx, function), _origin)) => Ok(self.kernel(key, entry, ptx, log, function)),
            None => Err(rejected.unwrap_or_else(|| CudaError::Driver(format!("freshly built PTX for `{entry}` was rejected")))),
        }
    }

    fn kernel(&self, key: &str, entry: &str, ptx: String, log: String, function: CudaFunction) -> CudaKernel {
        CudaKernel {
            engine_id: self.id,
            key: key.to_string(),
            entry: entry.to_string(),
            params: ptx_entry_params(&ptx, entry),
            ptx,
            log,
            function,
        }
    }

    /// Loads PTX into this engine's context and looks the entry up.
    fn load(&self, ptx: &str, entry: &str) -> Result<CudaFunction, CudaError> {
        // `Ptx::from_src` is NUL-terminated by cudarc (which unwraps on an interior NUL:
        // the cache's `decode_entry` and `Program::ptx` guarantee there is none).
        let module = self.ctx.load_module(Ptx::from_src(ptx.to_string())).map_err(|e| {
            let hint = if e.0 == cusys::CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION {
                format!(
                    " (the PTX was produced by a newer NVRTC than this driver can JIT; {} — \
                     update the driver or use an NVRTC no newer than the driver)",
                    self.profile.driver
                )
            } else {
                String::new()
            };
            CudaError::Driver(format!("cuModuleLoadData failed for kernel `{entry}`: {e:?}{hint}"))
        })?;
        module.load_function(entry).map_err(|e| {
            if e.0 == cusys::CUresult::CUDA_ERROR_NOT_FOUND {
                CudaError::MissingEntry { entry: entry.to_string() }
            } else {
                CudaError::Driver(format!("cuModuleGetFunction failed for `{entry}`: {e:?}"))
            }
        })
    }
}

impl Device for CudaEngine {
    fn id(&self) -> DeviceId {
        self.link().device_id()
    }
    fn upload(&self, t: &Tensor) -> Result<Tensor, TensorError> {
        crate::resident::upload_to(self.link().device_id(), t, |bytes| self.upload_bytes(bytes).map_err(|e| e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::super::grid::CudaGrid;
    use super::super::launch::CudaArg;
    use super::*;

    /// A scratch directory, removed when the guard drops (also when a test panics or skips).
    fn scratch_dir(tag: &str) -> tempfile::TempDir {
        tempfile::Builder::new().prefix(&format!("op-runtime-cuda-{tag}-")).tempdir().unwrap()
    }

    fn dir_entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    // ---- with a GPU (skipped unless CUDA is present; OP_REQUIRE_CUDA=1 makes them fail) ------

    fn require_cuda() -> bool {
        std::env::var(op_core::require::REQUIRE_CUDA_ENV).map(|v| v == "1").unwrap_or(false)
    }

    /// A fresh engine on device 0 with its own cache directory, or `None` (test skipped).
    fn gpu_engine(test: &str, cache: &Path) -> Option<CudaEngine> {
        match CudaEngine::new(0) {
            Ok(engine) => Some(engine.with_cache_dir(cache)),
            Err(e) if require_cuda() => panic!("{test}: OP_REQUIRE_CUDA=1 but CUDA is unavailable: {e}"),
            Err(e) => {
                eprintln!("skipping {test}: {e}");
                None
            }
        }
    }

    const ADD_HEADER: (&str, &str) = ("op_add.cuh", "__device__ inline float op_add(float x, float y) { return x + y; }\n");
    const ADD_SRC: &str = r#"#include "op_add.cuh"
extern "C" __global__ void axpb(const float* a, const float* b, float* out, float alpha, int bias,
                                 unsigned int n, float* acc) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = op_add(a[i] * alpha, b[i]) + (float)bias;
        acc[i] = acc[i] + 1.0f;
    }
}
"#;

    fn add_headers() -> Vec<(String, String)> {
        vec![(ADD_HEADER.0.to_string(), ADD_HEADER.1.to_string())]
    }

    fn f32_bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn f32s(b: &[u8]) -> Vec<f32> {
        b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
    }

    fn run_axpb(engine: &CudaEngine, kernel: &CudaKernel, n: usize) {
        let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let b: Vec<f32> = (0..n).map(|i| 2.0 * i as f32).collect();
        let acc: Vec<f32> = (0..n).map(|i| 10.0 * i as f32).collect();
        let (a, b, out, acc) = (f32_bytes(&a), f32_bytes(&b), vec![0u8; n * 4], f32_bytes(&acc));
        let args = [
            CudaArg::Read(&a),
            CudaArg::Read(&b),
            CudaArg::ReadWrite(&out),
            CudaArg::F32(3.0),
            CudaArg::I32(-7),
            CudaArg::U32(n as u32),
            CudaArg::ReadWrite(&acc),
        ];
        let results = engine.launch(kernel, &args, CudaGrid::linear(n as u64, 256)).expect("launch");
        assert_eq!(results.len(), 2, "one result per ReadWrite argument");
        let out = f32s(&results[0]);
        let acc = f32s(&results[1]);
        for i in 0..n {
            assert_eq!(out[i], 3.0 * i as f32 + 2.0 * i as f32 - 7.0, "out[{i}]");
            assert_eq!(acc[i], 10.0 * i as f32 + 1.0, "acc[{i}]");
        }
    }

    /// Spins for `mcycles` million SM clock cycles, then writes 1 to `out[0]`.
    const SPIN_SRC: &str = r#"extern "C" __global__ void spin(unsigned int mcycles, float* out) {
    long long start = clock64();
    long long cycles = (long long)mcycles * 1000000LL;
    while (clock64() - start < cycles) { }
    out[0] = 1.0f;
}
"#;

    #[test]
    fn gpu_wait_times_out_then_refuses_until_the_late_kernel_ends() {
        let scratch = scratch_dir("gpu-wait");
        let Some(engine) = gpu_engine("gpu_wait_times_out_then_refuses_until_the_late_kernel_ends", scratch.path()) else { return };
        let kernel = engine.compile([9; 32], SPIN_SRC, &[], "spin", &[]).expect("compile");
        let out = vec![0u8; 4];
        let spin = |mcycles: u32| engine.launch(&kernel, &[CudaArg::U32(mcycles), CudaArg::ReadWrite(&out)], CudaGrid::linear(1, 1));
        engine.set_wait_timeout(std::time::Duration::from_millis(50));
        // About 1.5 s at 2 GHz: thirty times the limit.
        let late = spin(3000).expect_err("a kernel running past the wait limit");
        assert!(matches!(late, CudaError::TimedOut { .. }), "{late}");
        assert!(late.to_string().starts_with("the device timed out: kernel `spin`"), "{late}");
        let refused = spin(0).expect_err("the engine is hung while the late kernel runs");
        assert!(matches!(refused, CudaError::Hung(_)), "{refused}");
        engine.set_wait_timeout(std::time::Duration::from_secs(30));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let done = loop {
            match spin(0) {
                Ok(r) => break r,
                Err(CudaError::Hung(_)) if std::time::Instant::now() < deadline => std::thread::sleep(std::time::Duration::from_millis(50)),
                Err(e) => panic!("after the late kernel: {e}"),
            }
        };
        assert_eq!(f32s(&done[0]), [1.0], "the engine runs work again once the late kernel ended");
    }

    #[test]
    fn gpu_add_kernel_end_to_end() {
        let scratch = scratch_dir("gpu-e2e");
        let cache = scratch.path().to_path_buf();
        let Some(engine) = gpu_engine("gpu_add_kernel_end_to_end", &cache) else { return };
        let profile = engine.profile();
        assert_eq!(profile.backend, op_core::kind::BackendKind::Cuda);
        assert_eq!(profile.vendor_id, 0x10de);
        assert!(!profile.adapter.is_empty());
        println!("profile: {profile}");

        let kernel = engine.compile([7; 32], ADD_SRC, &add_headers(), "axpb", &[]).expect("compile");
        assert!(kernel.ptx().contains(".entry axpb"), "{}", kernel.ptx());
        assert_eq!(kernel.params.as_ref().map(Vec::len), Some(7), "PTX parameters parsed: {:?}", kernel.params);
        run_axpb(&engine, &kernel, 1000); // not a multiple of the block size
        run_axpb(&engine, &kernel, 1);

        // Zero threads: nothing runs; ReadWrite buffers come back unchanged (also empty ones).
        let init = f32_bytes(&[5.0]);
        let none: [u8; 0] = [];
        let res = engine
            .launch(
                &kernel,
                &[
                    CudaArg::Read(&none),
                    CudaArg::Read(&none),
                    CudaArg::ReadWrite(&none),
                    CudaArg::F32(1.0),
                    CudaArg::I32(0),
                    CudaArg::U32(0),
                    CudaArg::ReadWrite(&init),
                ],
                CudaGrid::linear(0, 128),
            )
            .expect("empty launch");
        assert_eq!(res, vec![Vec::<u8>::new(), init.clone()]);

        // Wrong arguments are refused before anything reaches the driver.
        let err = engine.launch(&kernel, &[CudaArg::U32(1)], CudaGrid::linear(1, 1)).unwrap_err();
        assert!(matches!(err, CudaError::InvalidArgument(_)), "{err}");
        let err = engine.launch(&kernel, &[], CudaGrid::linear(1, 0)).unwrap_err();
        assert!(matches!(err, CudaError::InvalidArgument(_)), "{err}");
    }

    #[test]
    fn gpu_second_compile_hits_the_caches() {
        let scratch = scratch_dir("gpu-cache");
        let cache = scratch.path().to_path_buf();
        let Some(engine) = gpu_engine("gpu_second_compile_hits_the_caches", &cache) else { return };
        let headers = add_headers();
        let k1 = engine.compile([9; 32], ADD_SRC, &headers, "axpb", &[]).expect("compile");
        assert_eq!(engine.compiles(), 1);
        let k2 = engine.compile([9; 32], ADD_SRC, &headers, "axpb", &[]).expect("memo hit");
        assert_eq!(engine.compiles(), 1, "second compile must hit the in-memory cache");
        assert!(Arc::ptr_eq(&k1, &k2));
        assert_eq!(dir_entries(&cache), vec![format!("{}.ptx", k1.cache_key())], "exactly the published PTX, no temporary files");

        // A second engine (fresh memo) finds the PTX on disk and runs it.
        let other = CudaEngine::new(0).expect("second engine").with_cache_dir(&cache);
        let k3 = other.compile([9; 32], ADD_SRC, &headers, "axpb", &[]).expect("disk hit");
        assert_eq!(other.compiles(), 0, "second engine must hit the disk cache");
        assert_eq!(k3.ptx(), k1.ptx());
        run_axpb(&other, &k3, 300);

        // Changing a header byte or an option recompiles.
        let mut changed = headers.clone();
        changed[0].1.push(' ');
        other.compile([9; 32], ADD_SRC, &changed, "axpb", &[]).expect("header change");
        assert_eq!(other.compiles(), 1);
        other.compile([9; 32], ADD_SRC, &headers, "axpb", &["-DUNUSED=1".to_string()]).expect("option change");
        assert_eq!(other.compiles(), 2);

        // A damaged cache file is recompiled and replaced.
        fs::write(cache.join(format!("{}.ptx", k1.cache_key())), "garbage").unwrap();
        let third = CudaEngine::new(0).expect("third engine").with_cache_dir(&cache);
        let k4 = third.compile([9; 32], ADD_SRC, &headers, "axpb", &[]).expect("recompile");
        assert_eq!(third.compiles(), 1);
        run_axpb(&third, &k4, 10);
    }

    #[test]
    fn gpu_compile_errors_carry_the_nvrtc_log() {
        let scratch = scratch_dir("gpu-error");
        let cache = scratch.path().to_path_buf();
        let Some(engine) = gpu_engine("gpu_compile_errors_carry_the_nvrtc_log", &cache) else { return };
        let bad = "extern \"C\" __global__ void broken(float* x) { x[0] = undefined_symbol; }";
        match engine.compile([1; 32], bad, &[], "broken", &[]) {
            Err(CudaError::Compile { entry, log }) => {
                assert_eq!(entry, "broken");
                assert!(log.contains("undefined_symbol"), "log should quote the error: {log}");
                assert!(log.to_lowercase().contains("error"), "{log}");
            }
            other => panic!("expected CudaError::Compile, got {other:?}"),
        }
        assert_eq!(engine.compiles(), 1);
        assert!(dir_entries(&cache).is_empty(), "nothing is cached for a failed compile");

        // A missing header is a compile error as well.
        let needs_header = "#include \"absent.cuh\"\nextern \"C\" __global__ void k() {}";
        assert!(matches!(engine.compile([2; 32], needs_header, &[], "k", &[]), Err(CudaError::Compile { .. })));

        // An entry that is not in the module is a typed error.
        let ok = "extern \"C\" __global__ void present(float* x) { x[0] = 1.0f; }";
        match engine.compile([3; 32], ok, &[], "absent", &[]) {
            Err(CudaError::MissingEntry { entry }) => assert_eq!(entry, "absent"),
            other => panic!("expected CudaError::MissingEntry, got {other:?}"),
        }
    }
}
