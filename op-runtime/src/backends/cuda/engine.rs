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
//!   is cached on disk under [`ptx_cache_key`] (content hash, source, headers, entry, options,
//!   NVRTC version and architecture) by [`PtxDiskCache`], which verifies a digest of every
//!   entry on load (a corrupt entry is counted and rebuilt, never run), publishes atomically,
//!   and is memoised in memory per key.
//! * Launches copy every buffer argument to the device, launch once with
//!   `grid = ceil(threads / block)`, synchronise, and read back the `ReadWrite` buffers.
//!
//! This module knows nothing of ops or contracts; the `cuda` backend drives it.

use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_char, c_int, CStr, CString, OsString};
use std::fs;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::sys as cusys;
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, DriverError, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::sys as nvsys;
use cudarc::nvrtc::Ptx;

use super::ptx_cache::{CacheError, PtxDiskCache};
use super::resident::{CudaBuffer, Link};
use crate::backends::transfers::{Counters, Transfers};
use crate::core::device::DeviceProfile;
use crate::core::error::TensorError;
use crate::core::files::{self, Replace};
use crate::core::placement::DeviceId;
use crate::core::tensor::{Device, Tensor};

/// PCI vendor id of NVIDIA.
pub const NVIDIA_VENDOR_ID: u32 = 0x10de;

/// Environment variable naming the PTX cache directory (used as is).
pub const CACHE_DIR_ENV: &str = "OP_CACHE_DIR";

/// Everything that can go wrong in the CUDA engine.
#[derive(Clone, Debug, thiserror::Error)]
pub enum CudaError {
    /// The backend cannot be used on this machine: a library is missing, there is no device,
    /// the driver is too old, or initialisation failed.
    #[error("CUDA backend unavailable: {reason}")]
    Unavailable {
        /// What is missing or failed.
        reason: String,
    },
    /// NVRTC rejected the kernel source (or its options); `log` is NVRTC's program log.
    #[error("NVRTC failed to compile CUDA kernel `{entry}`:\n{log}")]
    Compile {
        /// The kernel entry point.
        entry: String,
        /// NVRTC's program log (or the failure's description).
        log: String,
    },
    /// The compiled module has no kernel of that name.
    #[error(
        "CUDA kernel entry `{entry}` not found in the compiled module \
         (is it declared `extern \"C\" __global__`?)"
    )]
    MissingEntry {
        /// The entry point looked up.
        entry: String,
    },
    /// The caller passed something the engine cannot launch or compile (bad launch geometry,
    /// arguments not matching the kernel's parameters, interior NUL bytes, ...).
    #[error("invalid CUDA request: {0}")]
    InvalidArgument(String),
    /// A CUDA driver call failed (or cudarc panicked) after initialisation.
    #[error("CUDA driver error: {0}")]
    Driver(String),
    /// The on-disk PTX cache could not be located or written.
    #[error("PTX cache error at {}: {cause}", path.display())]
    Cache {
        /// The cache file (empty when no cache directory could be found).
        path: PathBuf,
        /// What failed.
        cause: String,
    },
}

impl From<CacheError> for CudaError {
    fn from(e: CacheError) -> CudaError {
        CudaError::Cache { path: e.path, cause: e.cause }
    }
}

/// One kernel argument, in the kernel's parameter order.
#[derive(Clone, Copy, Debug)]
pub enum CudaArg<'a> {
    /// A device buffer initialised from these bytes; not read back.
    Read(&'a [u8]),
    /// A device buffer initialised from these bytes (its initial contents) and read back after
    /// the launch.
    ReadWrite(&'a [u8]),
    /// A device buffer initialised from `init` (guard bands included) and read back in full
    /// after the launch; the kernel receives a pointer `offset` bytes into it, so writes before
    /// or past the output land on the canaries around it.
    Guarded {
        /// Initial contents of the whole buffer, guard bands included.
        init: &'a [u8],
        /// Byte offset of the output within the buffer.
        offset: usize,
    },
    /// A buffer already on this engine's device (a device tensor's storage); not read back.
    Device(&'a CudaSlice<u8>),
    /// A new zero-filled buffer of this many bytes (nothing uploaded), read back after the
    /// launch: a plain call's output.
    Zeroed(u64),
    /// A new zero-filled buffer of this many bytes, left on the device: [`CudaEngine::launch_resident`]
    /// returns it (a device tensor's output).
    Fresh(u64),
    /// A 32-bit unsigned scalar (`unsigned int`).
    U32(u32),
    /// A 32-bit signed scalar (`int`).
    I32(i32),
    /// A 32-bit float scalar (`float`).
    F32(f32),
}

/// A compiled, loaded kernel. Obtain with [`CudaEngine::compile`]; launch with
/// [`CudaEngine::launch`] on the same engine.
pub struct CudaKernel {
    engine_id: u64,
    key: String,
    entry: String,
    ptx: String,
    log: String,
    params: Option<Vec<PtxParam>>,
    function: CudaFunction,
}

impl CudaKernel {
    /// The kernel's entry point name.
    pub fn entry(&self) -> &str {
        &self.entry
    }
    /// The disk-cache key ([`ptx_cache_key`]) the PTX is stored under.
    pub fn cache_key(&self) -> &str {
        &self.key
    }
    /// The PTX text.
    pub fn ptx(&self) -> &str {
        &self.ptx
    }
    /// NVRTC's log (warnings) when this engine compiled the kernel; empty on a disk-cache hit.
    pub fn compile_log(&self) -> &str {
        &self.log
    }
}

impl std::fmt::Debug for CudaKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaKernel")
            .field("entry", &self.entry)
            .field("key", &self.key)
            .field("ptx_bytes", &self.ptx.len())
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

/// A CUDA device with its primary context, a stream, and the kernel caches.
pub struct CudaEngine {
    id: u64,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    profile: DeviceProfile,
    /// Architecture part of the cache key: NVRTC version, device capability, PTX target.
    arch_tag: String,
    /// `--gpu-architecture` value passed to NVRTC, e.g. `compute_90`.
    target_arch: String,
    compute_capability: (i32, i32),
    max_threads_per_block: u32,
    /// The device's block and grid limits per dimension.
    max_block: [u32; 3],
    max_grid: [u32; 3],
    cache: PtxDiskCache,
    kernels: Mutex<HashMap<String, Arc<CudaKernel>>>,
    compiles: AtomicUsize,
    /// Peak DRAM bandwidth in bytes per second (memory clock x bus width x 2), where known.
    peak_bandwidth: Option<f64>,
    /// Whether launches time their kernel with CUDA events ([`CudaEngine::set_kernel_timing`]).
    timing: AtomicBool,
    /// The last timed kernel's duration in nanoseconds (`u64::MAX`: none yet).
    last_kernel_ns: AtomicU64,
    /// What this engine's device buffers share with it (identity, stream, transfer counters).
    link: Arc<Link>,
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
        let link = Arc::new(Link { id, stream: stream.clone(), counters: Counters::default() });
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

    pub(crate) fn link(&self) -> &Arc<Link> {
        &self.link
    }

    /// A new device buffer holding `bytes` (one counted host-to-device transfer).
    pub fn upload_bytes(&self, bytes: &[u8]) -> Result<CudaBuffer, CudaError> {
        let drv = |what: &str, e: DriverError| CudaError::Driver(format!("{what}: {e:?}"));
        let slot = self.upload(&CudaArg::Read(bytes), &drv)?;
        self.stream.synchronize().map_err(|e| drv("cannot upload a tensor", e))?;
        match slot {
            Slot::Buf { dev, len, .. } => Ok(CudaBuffer::new(dev, len as u64, self.link.clone())),
            _ => Err(CudaError::InvalidArgument("an upload made no buffer".into())),
        }
    }

    /// The device's peak DRAM bandwidth in bytes per second, from its memory clock and bus width
    /// (`None` where the driver reports neither).
    pub fn peak_memory_bandwidth(&self) -> Option<f64> {
        self.peak_bandwidth
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

    /// Number of NVRTC invocations by this engine (successful or not), so tests can observe cache
    /// hits.
    pub fn compiles(&self) -> usize {
        self.compiles.load(Ordering::SeqCst)
    }

    /// PTX for (source, headers, options, entry), compiled with NVRTC for this device and cached:
    /// in memory per key, and on disk under [`ptx_cache_key`] in [`CudaEngine::cache_dir`]
    /// (published atomically). `headers` are `(include name, contents)` pairs, visible to
    /// `#include "name"` in the source. The entry must be `extern "C" __global__`.
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
            let (ptx, l) = self.nvrtc_compile(source, headers, entry, options)?;
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

    /// Runs NVRTC; returns (PTX text, program log).
    fn nvrtc_compile(
        &self,
        source: &str,
        headers: &[(String, String)],
        entry: &str,
        options: &[String],
    ) -> Result<(String, String), CudaError> {
        self.compiles.fetch_add(1, Ordering::SeqCst);
        let cstr = |s: &str, what: &str| CString::new(s).map_err(|_| CudaError::InvalidArgument(format!("{what} contains a NUL byte")));
        let src = cstr(source, "kernel source")?;
        let prog_name = cstr(&format!("{entry}.cu"), "entry name")?;
        let header_bodies = headers.iter().map(|(_, b)| cstr(b, "a header")).collect::<Result<Vec<_>, _>>()?;
        let header_names = headers.iter().map(|(n, _)| cstr(n, "a header name")).collect::<Result<Vec<_>, _>>()?;
        let body_ptrs: Vec<*const c_char> = header_bodies.iter().map(|c| c.as_ptr()).collect();
        let name_ptrs: Vec<*const c_char> = header_names.iter().map(|c| c.as_ptr()).collect();

        let mut all_options: Vec<String> = Vec::with_capacity(options.len() + 1);
        if !options.iter().any(|o| is_arch_option(o)) {
            all_options.push(format!("--gpu-architecture={}", self.target_arch));
        }
        all_options.extend(options.iter().cloned());
        let option_cstrs = all_options.iter().map(|o| cstr(o, "a compile option")).collect::<Result<Vec<_>, _>>()?;
        let option_ptrs: Vec<*const c_char> = option_cstrs.iter().map(|c| c.as_ptr()).collect();

        let mut raw: nvsys::nvrtcProgram = std::ptr::null_mut();
        let n_headers = c_int::try_from(headers.len()).map_err(|_| CudaError::InvalidArgument("too many headers".to_string()))?;
        // SAFETY: every pointer refers to a NUL-terminated CString that outlives the program
        // (they are dropped at the end of this function, after `Program`'s drop destroys it).
        let created = unsafe {
            nvsys::nvrtcCreateProgram(
                &mut raw,
                src.as_ptr(),
                prog_name.as_ptr(),
                n_headers,
                if headers.is_empty() { std::ptr::null() } else { body_ptrs.as_ptr() },
                if headers.is_empty() { std::ptr::null() } else { name_ptrs.as_ptr() },
            )
        };
        if created != nvsys::nvrtcResult::NVRTC_SUCCESS {
            return Err(CudaError::Compile {
                entry: entry.to_string(),
                log: format!("nvrtcCreateProgram failed: {}", nvrtc_error_string(created)),
            });
        }
        let program = Program(raw);

        // SAFETY: `program` is a live program; the option pointers are valid for the call.
        let compiled = unsafe { nvsys::nvrtcCompileProgram(program.0, option_ptrs.len() as c_int, option_ptrs.as_ptr()) };
        let log = program.log();
        if compiled != nvsys::nvrtcResult::NVRTC_SUCCESS {
            let log = if log.trim().is_empty() { "(NVRTC produced no log)".to_string() } else { log };
            return Err(CudaError::Compile {
                entry: entry.to_string(),
                log: format!("{log}\n[{}; options: {all_options:?}]", nvrtc_error_string(compiled)),
            });
        }
        let ptx =
            program.ptx().map_err(|e| CudaError::Compile { entry: entry.to_string(), log: format!("{log}\ncannot fetch the PTX: {e}") })?;
        drop(program);
        Ok((ptx, log))
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

    /// Launches `kernel` once with `args` in parameter order, `ceil(threads / block)` blocks
    /// along each dimension of `grid` (see [`CudaGrid`]), waits for it, and returns the final bytes of each
    /// [`CudaArg::ReadWrite`], [`CudaArg::Guarded`] and [`CudaArg::Zeroed`] argument, in order (a [`CudaArg::Fresh`]
    /// buffer is dropped: use [`CudaEngine::launch_resident`]). `threads == 0` launches nothing
    /// and returns the initial contents. Uploads and read-backs count in [`CudaEngine::transfers`].
    pub fn launch(&self, kernel: &CudaKernel, args: &[CudaArg<'_>], grid: CudaGrid) -> Result<Vec<Vec<u8>>, CudaError> {
        let drv = |what: &str, e: DriverError| CudaError::Driver(format!("{what} (kernel `{}`): {e:?}", kernel.entry));
        let slots = self.run(kernel, args, grid)?;
        guarded(
            |msg| CudaError::Driver(format!("cudarc panicked while reading `{}` back: {msg}", kernel.entry)),
            || {
                let mut out = Vec::new();
                for slot in &slots {
                    if let Slot::Buf { dev, len, read_back: true, .. } = slot {
                        let mut host = vec![0u8; *len];
                        if *len > 0 {
                            self.stream
                                .memcpy_dtoh(&dev.slice(0..*len), host.as_mut_slice())
                                .map_err(|e| drv("cannot read a buffer back", e))?;
                        }
                        self.link.counters.down(*len as u64);
                        out.push(host);
                    }
                }
                self.stream.synchronize().map_err(|e| drv("cannot read buffers back", e))?;
                drop(slots);
                // Errors cudarc recorded in destructors (frees) are reported now rather than later.
                self.ctx.check_err().map_err(|e| drv("freeing device buffers failed", e))?;
                Ok(out)
            },
        )
    }

    /// [`CudaEngine::launch`] leaving its outputs on the device: returns one buffer per
    /// [`CudaArg::Fresh`] argument, in order; nothing is read back.
    pub fn launch_resident(&self, kernel: &CudaKernel, args: &[CudaArg<'_>], grid: CudaGrid) -> Result<Vec<CudaBuffer>, CudaError> {
        let slots = self.run(kernel, args, grid)?;
        let made = slots
            .into_iter()
            .filter_map(|s| match s {
                Slot::Buf { dev, len, fresh: true, .. } => Some(CudaBuffer::new(dev, len as u64, self.link.clone())),
                _ => None,
            })
            .collect();
        self.ctx.check_err().map_err(|e| CudaError::Driver(format!("kernel `{}`: {e:?}", kernel.entry)))?;
        Ok(made)
    }

    /// Checks, uploads and launches, then waits for the kernel: the arguments on the device.
    fn run<'a>(&self, kernel: &CudaKernel, args: &[CudaArg<'a>], launch: CudaGrid) -> Result<Vec<Slot<'a>>, CudaError> {
        if kernel.engine_id != self.id {
            return Err(CudaError::InvalidArgument(format!("kernel `{}` was compiled by a different CudaEngine", kernel.entry)));
        }
        let grid = launch_grid(launch, self.max_threads_per_block, self.max_block, self.max_grid)?;
        if let Some(params) = &kernel.params {
            check_args_against_params(&kernel.entry, params, args)?;
        }
        guarded(
            |msg| CudaError::Driver(format!("cudarc panicked while launching `{}`: {msg}", kernel.entry)),
            || {
                let drv = |what: &str, e: DriverError| CudaError::Driver(format!("{what} (kernel `{}`): {e:?}", kernel.entry));
                let slots = args.iter().map(|a| self.upload(a, &drv)).collect::<Result<Vec<Slot>, CudaError>>()?;
                if !grid.contains(&0) {
                    let b = launch.block;
                    let cfg = LaunchConfig { grid_dim: (grid[0], grid[1], grid[2]), block_dim: (b[0], b[1], b[2]), shared_mem_bytes: 0 };
                    self.launch_slots(kernel, &slots, cfg, &drv)?;
                }
                // Kernel faults surface here (and are sticky: the context is unusable afterwards).
                self.stream.synchronize().map_err(|e| drv("kernel execution failed", e))?;
                Ok(slots)
            },
        )
    }

    /// One argument on the device: a buffer uploaded (empty ones get a 1-byte allocation so the
    /// kernel sees a valid pointer; the driver refuses zero-sized ones) or a scalar.
    fn upload<'a>(&self, arg: &CudaArg<'a>, drv: &impl Fn(&str, DriverError) -> CudaError) -> Result<Slot<'a>, CudaError> {
        Ok(match *arg {
            CudaArg::Device(slice) => Slot::Borrowed(slice),
            CudaArg::Fresh(bytes) | CudaArg::Zeroed(bytes) => {
                let len = usize::try_from(bytes).map_err(|_| CudaError::InvalidArgument(format!("a {bytes}-byte output does not fit")))?;
                let dev = self.stream.alloc_zeros::<u8>(len.max(1)).map_err(|e| drv(&format!("cannot allocate a {len}-byte output"), e))?;
                let fresh = matches!(arg, CudaArg::Fresh(_));
                Slot::Buf { dev, len, read_back: !fresh, offset: 0, fresh }
            }
            CudaArg::Read(bytes) | CudaArg::ReadWrite(bytes) | CudaArg::Guarded { init: bytes, .. } => {
                let offset = match *arg {
                    CudaArg::Guarded { offset, .. } if offset < bytes.len() => offset,
                    CudaArg::Guarded { offset, .. } => {
                        return Err(CudaError::InvalidArgument(format!("guard offset {offset} is outside a {}-byte buffer", bytes.len())))
                    }
                    _ => 0,
                };
                let dev = if bytes.is_empty() { self.stream.alloc_zeros::<u8>(1) } else { self.stream.clone_htod(bytes) }
                    .map_err(|e| drv(&format!("cannot upload a {}-byte buffer", bytes.len()), e))?;
                self.link.counters.up(bytes.len() as u64);
                Slot::Buf { dev, len: bytes.len(), read_back: !matches!(arg, CudaArg::Read(_)), offset, fresh: false }
            }
            CudaArg::U32(v) => Slot::U32(v),
            CudaArg::I32(v) => Slot::I32(v),
            CudaArg::F32(v) => Slot::F32(v),
        })
    }

    /// Enqueues the kernel on `slots` (guarded buffers passed as views starting `offset` bytes
    /// in); with timing on, between two events whose interval it records once the kernel ends.
    fn launch_slots(
        &self,
        kernel: &CudaKernel,
        slots: &[Slot<'_>],
        cfg: LaunchConfig,
        drv: &impl Fn(&str, DriverError) -> CudaError,
    ) -> Result<(), CudaError> {
        let views: Vec<Option<cudarc::driver::CudaView<'_, u8>>> = slots
            .iter()
            .map(|s| match s {
                Slot::Buf { dev, offset, .. } if *offset > 0 => Some(dev.slice(*offset..)),
                _ => None,
            })
            .collect();
        let mut builder = self.stream.launch_builder(&kernel.function);
        for (slot, view) in slots.iter().zip(&views) {
            match (slot, view) {
                (_, Some(v)) => builder.arg(v),
                (Slot::Buf { dev, .. }, None) => builder.arg(dev),
                (Slot::Borrowed(dev), None) => builder.arg(*dev),
                (Slot::U32(v), None) => builder.arg(v),
                (Slot::I32(v), None) => builder.arg(v),
                (Slot::F32(v), None) => builder.arg(v),
            };
        }
        let event = |what: &str| {
            self.stream
                .record_event(Some(cusys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(|e| drv(&format!("cannot record the {what} event"), e))
        };
        let start = if self.timing.load(Ordering::Relaxed) { Some(event("start")?) } else { None };
        // SAFETY: the arguments were checked against the kernel's PTX parameter list where it
        // could be parsed (count and sizes); buffers and scalars live in `slots`, which the caller
        // keeps untouched until the stream has been synchronised.
        unsafe { builder.launch(cfg) }.map_err(|e| drv("cuLaunchKernel failed", e))?;
        if let Some(start) = start {
            let end = event("end")?;
            let ms = start.elapsed_ms(&end).map_err(|e| drv("kernel execution failed", e))?;
            self.last_kernel_ns.store((f64::from(ms) * 1e6) as u64, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// One kernel argument on the device (see [`CudaEngine::launch`]): a buffer this launch made
/// (`fresh`: a new output to keep on the device), one a device tensor owns, or a scalar.
enum Slot<'a> {
    Buf { dev: CudaSlice<u8>, len: usize, read_back: bool, offset: usize, fresh: bool },
    Borrowed(&'a CudaSlice<u8>),
    U32(u32),
    I32(i32),
    F32(f32),
}

impl CudaEngine {
    /// Tensor data moved between the host and this engine's device so far (explicit moves and
    /// host-tensor calls' uploads and read-backs).
    pub fn transfers(&self) -> Transfers {
        self.link().counters.snapshot()
    }
}

impl Device for CudaEngine {
    fn id(&self) -> DeviceId {
        self.link().device_id()
    }
    fn upload(&self, t: &Tensor) -> Result<Tensor, TensorError> {
        crate::backends::resident::upload_to(self.link().device_id(), t, |bytes| self.upload_bytes(bytes).map_err(|e| e.to_string()))
    }
}

// ---------------------------------------------------------------------------------------------
// NVRTC helpers

/// The largest PTX or program log read from NVRTC (256 MiB): a size past it is not believed
/// (a stub library reports garbage), so nothing here allocates what a broken library claims.
const MAX_NVRTC_OUTPUT: usize = 256 << 20;

/// Owns an `nvrtcProgram`; destroys it on drop.
struct Program(nvsys::nvrtcProgram);

impl Program {
    fn log(&self) -> String {
        let mut size: usize = 0;
        // SAFETY: live program; out-parameter.
        if unsafe { nvsys::nvrtcGetProgramLogSize(self.0, &mut size) } != nvsys::nvrtcResult::NVRTC_SUCCESS {
            return String::new();
        }
        if size > MAX_NVRTC_OUTPUT {
            return format!("(NVRTC reported a {size}-byte log; not read: is the loaded libnvrtc a stub?)");
        }
        let mut buf = vec![0u8; size.max(1)];
        // SAFETY: `buf` holds `size` bytes as NVRTC asked for.
        if unsafe { nvsys::nvrtcGetProgramLog(self.0, buf.as_mut_ptr() as *mut c_char) } != nvsys::nvrtcResult::NVRTC_SUCCESS {
            return String::new();
        }
        c_buffer_to_string(buf)
    }

    fn ptx(&self) -> Result<String, String> {
        let mut size: usize = 0;
        // SAFETY: live, compiled program; out-parameter.
        let r = unsafe { nvsys::nvrtcGetPTXSize(self.0, &mut size) };
        if r != nvsys::nvrtcResult::NVRTC_SUCCESS {
            return Err(nvrtc_error_string(r));
        }
        if size > MAX_NVRTC_OUTPUT {
            return Err(format!("NVRTC reported a {size}-byte PTX, more than any kernel's: is the loaded libnvrtc a stub?"));
        }
        let mut buf = vec![0u8; size.max(1)];
        // SAFETY: `buf` holds `size` bytes as NVRTC asked for.
        let r = unsafe { nvsys::nvrtcGetPTX(self.0, buf.as_mut_ptr() as *mut c_char) };
        if r != nvsys::nvrtcResult::NVRTC_SUCCESS {
            return Err(nvrtc_error_string(r));
        }
        let ptx = c_buffer_to_string(buf);
        if ptx.trim().is_empty() {
            return Err("NVRTC returned empty PTX".to_string());
        }
        Ok(ptx)
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: destroys the program created by nvrtcCreateProgram exactly once.
            let _ = unsafe { nvsys::nvrtcDestroyProgram(&mut self.0) };
        }
    }
}

/// Bytes up to the first NUL, as (lossy) UTF-8; the result never contains a NUL.
fn c_buffer_to_string(mut buf: Vec<u8>) -> String {
    if let Some(n) = buf.iter().position(|&b| b == 0) {
        buf.truncate(n);
    }
    String::from_utf8_lossy(&buf).into_owned()
}

fn nvrtc_error_string(r: nvsys::nvrtcResult) -> String {
    // SAFETY: nvrtcGetErrorString returns a static string (or null).
    let p = unsafe { nvsys::nvrtcGetErrorString(r) };
    if p.is_null() {
        format!("{r:?}")
    } else {
        // SAFETY: non-null, NUL-terminated static string.
        format!("{r:?}: {}", unsafe { CStr::from_ptr(p) }.to_string_lossy())
    }
}

fn nvrtc_version() -> Result<(i32, i32), CudaError> {
    let (mut major, mut minor): (c_int, c_int) = (0, 0);
    // SAFETY: out-parameters; libnvrtc is loaded (probe checked it).
    let r = unsafe { nvsys::nvrtcVersion(&mut major, &mut minor) };
    if r != nvsys::nvrtcResult::NVRTC_SUCCESS {
        return Err(CudaError::Unavailable { reason: format!("nvrtcVersion failed: {r:?}") });
    }
    Ok((major, minor))
}

/// The virtual architectures NVRTC can target (e.g. `[50, 52, ..., 90]`); empty when unknown.
fn nvrtc_supported_archs() -> Vec<i32> {
    let mut n: c_int = 0;
    // SAFETY: out-parameter.
    if unsafe { nvsys::nvrtcGetNumSupportedArchs(&mut n) } != nvsys::nvrtcResult::NVRTC_SUCCESS || n <= 0 {
        return Vec::new();
    }
    let mut archs = vec![0 as c_int; n as usize];
    // SAFETY: `archs` has room for the `n` entries NVRTC reported.
    if unsafe { nvsys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) } != nvsys::nvrtcResult::NVRTC_SUCCESS {
        return Vec::new();
    }
    archs
}

/// The PTX target for a device of compute capability `device_cc` (major*10+minor): the newest
/// architecture NVRTC supports that is not newer than the device (PTX JIT-compiles forward, never
/// backward). With no list, the device's own capability.
pub fn choose_ptx_arch(device_cc: i32, supported: &[i32]) -> Option<i32> {
    if supported.is_empty() {
        return Some(device_cc);
    }
    supported.iter().copied().filter(|&a| a <= device_cc).max()
}

fn is_arch_option(o: &str) -> bool {
    o.starts_with("-arch") || o.starts_with("--gpu-architecture")
}

fn validate_compile_inputs(source: &str, headers: &[(String, String)], entry: &str, options: &[String]) -> Result<(), CudaError> {
    let is_ident = !entry.is_empty()
        && !entry.starts_with(|c: char| c.is_ascii_digit())
        && entry.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if !is_ident {
        return Err(CudaError::InvalidArgument(format!("kernel entry {entry:?} is not a C identifier")));
    }
    let nul = |s: &str| s.as_bytes().contains(&0);
    if nul(source) {
        return Err(CudaError::InvalidArgument(format!("source of kernel `{entry}` contains a NUL byte")));
    }
    for (name, body) in headers {
        if name.is_empty() || nul(name) || nul(body) {
            return Err(CudaError::InvalidArgument(format!(
                "header {name:?} of kernel `{entry}` has an empty name or contains a NUL byte"
            )));
        }
    }
    if let Some(o) = options.iter().find(|o| nul(o)) {
        return Err(CudaError::InvalidArgument(format!("compile option {o:?} contains a NUL byte")));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Probing and panic containment

fn probe_uncached() -> Result<(), CudaError> {
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
fn guarded<T, E>(on_panic: impl FnOnce(String) -> E, f: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
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

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// PCI device (product) id from sysfs, via the device's PCI domain/bus/slot.
fn pci_device_id(ctx: &CudaContext) -> Option<u32> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let a = |attr| ctx.attribute(attr).ok();
    let domain = a(cusys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?;
    let bus = a(cusys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?;
    let slot = a(cusys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?;
    let dir = PathBuf::from(format!("/sys/bus/pci/devices/{domain:04x}:{bus:02x}:{slot:02x}.0"));
    let vendor = parse_pci_hex(&fs::read_to_string(dir.join("vendor")).ok()?)?;
    if vendor != NVIDIA_VENDOR_ID {
        return None;
    }
    parse_pci_hex(&fs::read_to_string(dir.join("device")).ok()?)
}

/// Parses a sysfs PCI id such as `0x2335\n`.
fn parse_pci_hex(s: &str) -> Option<u32> {
    let s = s.trim();
    let s = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).unwrap_or(s);
    u32::from_str_radix(s, 16).ok()
}

// ---------------------------------------------------------------------------------------------
// Launch validation

/// The shape of a launch: invocations and threads per block along x, y and z (y and z: 1 for
/// a 1-D launch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CudaGrid {
    /// Invocations along x, y and z.
    pub threads: [u64; 3],
    /// Threads per block along x, y and z.
    pub block: [u32; 3],
}

impl CudaGrid {
    /// A 1-D launch of `threads` invocations in blocks of `block`.
    pub fn linear(threads: u64, block: u32) -> CudaGrid {
        CudaGrid { threads: [threads, 1, 1], block: [block, 1, 1] }
    }
}

/// Blocks along x, y and z for `g`, within the device's limits (threads per block in all and
/// per dimension, blocks per dimension); an extent of 0 gives 0 blocks there (nothing runs).
fn launch_grid(g: CudaGrid, max_threads: u32, max_block: [u32; 3], max_grid: [u32; 3]) -> Result<[u32; 3], CudaError> {
    let b = g.block;
    let total = b.iter().fold(1u64, |t, &d| t.saturating_mul(u64::from(d)));
    if b.contains(&0) || total > u64::from(max_threads) || (0..3).any(|d| b[d] > max_block[d]) {
        return Err(CudaError::InvalidArgument(format!(
            "block size {b:?} out of range: every dimension at least 1, at most {max_block:?}, {max_threads} threads in all"
        )));
    }
    let mut grid = [0u32; 3];
    for d in 0..3 {
        let n = g.threads[d].div_ceil(u64::from(b[d]));
        if n > u64::from(max_grid[d]) {
            return Err(CudaError::InvalidArgument(format!(
                "{} threads along {} in blocks of {} need {n} blocks, more than the device's grid limit of {}",
                g.threads[d],
                ["x", "y", "z"][d],
                b[d],
                max_grid[d]
            )));
        }
        grid[d] = n as u32;
    }
    Ok(grid)
}

/// One kernel parameter as declared in PTX.
#[derive(Clone, Debug, PartialEq, Eq)]
struct PtxParam {
    /// PTX type, e.g. `.u64`, `.f32`, `.b8`.
    ty: String,
    /// Size in bytes (element size times array length).
    bytes: u64,
}

/// The parameter list of `.entry <entry>(...)` in `ptx`; `None` when it cannot be found or
/// parsed (the caller then skips argument checking).
fn ptx_entry_params(ptx: &str, entry: &str) -> Option<Vec<PtxParam>> {
    let mut rest = ptx;
    let list = loop {
        let at = rest.find(".entry")?;
        let after = &rest[at + ".entry".len()..];
        rest = after;
        let trimmed = after.trim_start();
        if trimmed.len() == after.len() {
            continue; // `.entry` must be followed by whitespace
        }
        if let Some(tail) = trimmed.strip_prefix(entry) {
            if let Some(tail) = tail.trim_start().strip_prefix('(') {
                break &tail[..tail.find(')')?];
            }
        }
    };
    let mut params = Vec::new();
    for decl in list.split(',') {
        let decl = decl.trim();
        if decl.is_empty() {
            continue;
        }
        let mut tokens = decl.split_whitespace();
        if tokens.next()? != ".param" {
            return None;
        }
        let mut ty: Option<&str> = None;
        let mut name: Option<&str> = None;
        let mut skip_next = false;
        for t in tokens {
            if skip_next {
                skip_next = false;
                continue;
            }
            if t == ".align" {
                skip_next = true;
            } else if ty.is_none() && ptx_type_bits(t).is_some() {
                ty = Some(t);
            } else if t.starts_with('.') {
                // `.ptr`, state spaces (`.global`, ...): annotations only.
            } else {
                name = Some(t);
            }
        }
        let ty = ty?;
        let name = name?;
        let count = match name.find('[') {
            Some(open) => name[open + 1..].strip_suffix(']')?.trim().parse::<u64>().ok()?,
            None => 1,
        };
        params.push(PtxParam { ty: ty.to_string(), bytes: ptx_type_bits(ty)? / 8 * count });
    }
    Some(params)
}

fn ptx_type_bits(t: &str) -> Option<u64> {
    let t = t.strip_prefix('.')?;
    let (kind, bits) = t.split_at(1);
    if !matches!(kind, "u" | "s" | "b" | "f") {
        return None;
    }
    match bits {
        "8" | "16" | "32" | "64" => bits.parse().ok(),
        _ => None,
    }
}

fn check_args_against_params(entry: &str, params: &[PtxParam], args: &[CudaArg<'_>]) -> Result<(), CudaError> {
    let describe = || params.iter().map(|p| format!("{} ({} bytes)", p.ty, p.bytes)).collect::<Vec<_>>().join(", ");
    if params.len() != args.len() {
        return Err(CudaError::InvalidArgument(format!(
            "kernel `{entry}` takes {} parameter(s) [{}] but {} argument(s) were given",
            params.len(),
            describe(),
            args.len()
        )));
    }
    for (i, (p, a)) in params.iter().zip(args).enumerate() {
        let (want, what) = match a {
            CudaArg::Read(_)
            | CudaArg::ReadWrite(_)
            | CudaArg::Guarded { .. }
            | CudaArg::Device(_)
            | CudaArg::Fresh(_)
            | CudaArg::Zeroed(_) => (8, "a buffer (device pointer)"),
            CudaArg::U32(_) | CudaArg::I32(_) | CudaArg::F32(_) => (4, "a 4-byte scalar"),
        };
        let float_mismatch = match a {
            CudaArg::F32(_) => p.ty.starts_with(".u") || p.ty.starts_with(".s"),
            // A buffer is a device pointer: an integer-typed 64-bit parameter.
            CudaArg::Read(_)
            | CudaArg::ReadWrite(_)
            | CudaArg::Guarded { .. }
            | CudaArg::Device(_)
            | CudaArg::Fresh(_)
            | CudaArg::Zeroed(_)
            | CudaArg::U32(_)
            | CudaArg::I32(_) => p.ty.starts_with(".f"),
        };
        if p.bytes != want || float_mismatch {
            return Err(CudaError::InvalidArgument(format!(
                "argument {i} of kernel `{entry}` is {what} ({a:?}) but the parameter is {} ({} bytes); \
                 parameters: [{}]",
                p.ty,
                p.bytes,
                describe()
            )));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Disk cache

/// The disk-cache key (64 hex digits): blake3 over a length-prefixed encoding of the content
/// hash, the source, every header (name, bytes) in order, the entry, every option in order, and
/// `arch` (NVRTC version and target architecture). Pure.
pub fn ptx_cache_key(
    content_hash: &[u8; 32],
    source: &str,
    headers: &[(String, String)],
    entry: &str,
    options: &[String],
    arch: &str,
) -> String {
    fn field(h: &mut blake3::Hasher, bytes: &[u8]) {
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    }
    let mut h = blake3::Hasher::new_derive_key("op-runtime 2024 cuda ptx cache key v1");
    h.update(content_hash);
    field(&mut h, source.as_bytes());
    h.update(&(headers.len() as u64).to_le_bytes());
    for (name, body) in headers {
        field(&mut h, name.as_bytes());
        field(&mut h, body.as_bytes());
    }
    field(&mut h, entry.as_bytes());
    h.update(&(options.len() as u64).to_le_bytes());
    for o in options {
        field(&mut h, o.as_bytes());
    }
    field(&mut h, arch.as_bytes());
    h.finalize().to_hex().to_string()
}

/// The PTX cache directory from the environment: `$OP_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/op-runtime/ptx`, else `~/.cache/op-runtime/ptx`.
pub fn default_ptx_cache_dir() -> Option<PathBuf> {
    resolve_ptx_cache_dir(
        std::env::var_os(CACHE_DIR_ENV),
        std::env::var_os("XDG_CACHE_HOME"),
        std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE")),
    )
}

/// Pure form of [`default_ptx_cache_dir`]. Empty values count as unset; a relative
/// `XDG_CACHE_HOME` is ignored, as the XDG spec requires.
pub fn resolve_ptx_cache_dir(op_cache_dir: Option<OsString>, xdg_cache_home: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    let set = |v: Option<OsString>| v.filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = set(op_cache_dir) {
        return Some(dir);
    }
    if let Some(xdg) = set(xdg_cache_home).filter(|p| p.is_absolute()) {
        return Some(xdg.join("op-runtime").join("ptx"));
    }
    set(home).map(|h| h.join(".cache").join("op-runtime").join("ptx"))
}

/// Writes `bytes` to `path` atomically and durably ([`files::write_atomic`]): a temporary file
/// with an unpredictable name, created exclusively (never through a symlink), synced, renamed
/// over `path`, then the directory synced. Readers see either the old file or the complete new
/// one; the temporary file is removed on failure. Pure filesystem code.
pub fn publish_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    files::write_atomic(path, bytes, Replace::Yes, 0o644)
}

/// Facts a CUDA device profile is made of.
#[derive(Clone, Debug)]
pub(crate) struct CudaFacts {
    pub(crate) name: String,
    pub(crate) uuid: String,
    pub(crate) compute_capability: (i32, i32),
    /// `cuDriverGetVersion` (e.g. 12080).
    pub(crate) driver_api: i32,
    /// The kernel driver's build (e.g. `550.54.15`), where the platform reports it.
    pub(crate) driver_build: Option<String>,
    pub(crate) nvrtc: (i32, i32),
    pub(crate) ptx_target: i32,
    pub(crate) device_id: u32,
}

/// The exact profile of a CUDA device: the model part (name, compute capability, driver API
/// and build, NVRTC, PTX target, PCI ids) and the UUID as the instance. Pure.
pub(crate) fn cuda_profile(f: CudaFacts) -> DeviceProfile {
    let (cc_major, cc_minor) = f.compute_capability;
    let api = format!("{}.{}", f.driver_api / 1000, (f.driver_api % 1000) / 10);
    let build = f.driver_build.clone().unwrap_or_else(|| "unknown".to_string());
    let mut details = BTreeMap::new();
    details.insert("compute_capability".to_string(), format!("{cc_major}.{cc_minor}"));
    details.insert("driver_api".to_string(), api.clone());
    details.insert("driver_build".to_string(), build.clone());
    details.insert("nvrtc".to_string(), format!("{}.{}", f.nvrtc.0, f.nvrtc.1));
    details.insert("ptx_target".to_string(), format!("compute_{}", f.ptx_target));
    DeviceProfile {
        backend: "cuda".to_string(),
        adapter: f.name,
        driver: format!(
            "CUDA driver {api}, build {build} (NVRTC {}.{}, compute capability {cc_major}.{cc_minor}, PTX compute_{})",
            f.nvrtc.0, f.nvrtc.1, f.ptx_target
        ),
        vendor_id: NVIDIA_VENDOR_ID,
        device_id: f.device_id,
        details,
        instance: Some(f.uuid),
    }
}

/// `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, as `nvidia-smi -L` shows a device UUID.
pub(crate) fn format_uuid(b: &[u8; 16]) -> String {
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("GPU-{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
}

/// The driver build from `/proc/driver/nvidia/version` (its `NVRM version` line, e.g.
/// `NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar 5 ...`). Pure.
pub(crate) fn parse_nvidia_driver_build(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.trim_start().starts_with("NVRM version"))?;
    line.split_whitespace()
        .find(|t| {
            let parts: Vec<&str> = t.split('.').collect();
            parts.len() >= 2 && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(str::to_string)
}

// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch_dir(tag: &str) -> PathBuf {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "op-runtime-cuda-{tag}-{}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
        ));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn dir_entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    // ---- without a GPU -----------------------------------------------------------------------

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

    fn key_with(hash: u8, source: &str, headers: &[(&str, &str)], entry: &str, options: &[&str], arch: &str) -> String {
        let headers: Vec<(String, String)> = headers.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        let options: Vec<String> = options.iter().map(|s| s.to_string()).collect();
        ptx_cache_key(&[hash; 32], source, &headers, entry, &options, arch)
    }

    #[test]
    fn cache_key_is_stable_and_sensitive_to_every_input() {
        let base = || key_with(1, "src", &[("a.cuh", "int x;")], "k", &["-DX=1"], "nvrtc-12.8/sm_90/compute_90");
        let k = base();
        assert_eq!(k, base(), "same inputs, same key");
        assert_eq!(k.len(), 64);
        assert!(k.chars().all(|c| c.is_ascii_hexdigit()));

        let variants = [
            ("content hash", key_with(2, "src", &[("a.cuh", "int x;")], "k", &["-DX=1"], "nvrtc-12.8/sm_90/compute_90")),
            ("source", key_with(1, "src ", &[("a.cuh", "int x;")], "k", &["-DX=1"], "nvrtc-12.8/sm_90/compute_90")),
            ("header bytes", key_with(1, "src", &[("a.cuh", "int y;")], "k", &["-DX=1"], "nvrtc-12.8/sm_90/compute_90")),
            ("header name", key_with(1, "src", &[("b.cuh", "int x;")], "k", &["-DX=1"], "nvrtc-12.8/sm_90/compute_90")),
            ("no header", key_with(1, "src", &[], "k", &["-DX=1"], "nvrtc-12.8/sm_90/compute_90")),
            ("entry", key_with(1, "src", &[("a.cuh", "int x;")], "k2", &["-DX=1"], "nvrtc-12.8/sm_90/compute_90")),
            ("options", key_with(1, "src", &[("a.cuh", "int x;")], "k", &["-DX=2"], "nvrtc-12.8/sm_90/compute_90")),
            ("no options", key_with(1, "src", &[("a.cuh", "int x;")], "k", &[], "nvrtc-12.8/sm_90/compute_90")),
            ("arch", key_with(1, "src", &[("a.cuh", "int x;")], "k", &["-DX=1"], "nvrtc-12.8/sm_80/compute_80")),
            ("nvrtc version", key_with(1, "src", &[("a.cuh", "int x;")], "k", &["-DX=1"], "nvrtc-12.4/sm_90/compute_90")),
        ];
        let mut seen = std::collections::HashSet::new();
        seen.insert(k.clone());
        for (what, v) in &variants {
            assert_ne!(&k, v, "changing the {what} must change the key");
            assert!(seen.insert(v.clone()), "changing the {what} collided with another variant");
        }

        // Field boundaries are unambiguous.
        assert_ne!(key_with(1, "s", &[("a", "bc")], "k", &[], "x"), key_with(1, "s", &[("ab", "c")], "k", &[], "x"));
        assert_ne!(key_with(1, "s", &[], "k", &["-a -b"], "x"), key_with(1, "s", &[], "k", &["-a", "-b"], "x"));
        assert_ne!(key_with(1, "s", &[], "k", &["ab"], "x"), key_with(1, "s", &[], "ka", &["b"], "x"));
        assert_ne!(key_with(1, "s", &[("a", "b"), ("c", "d")], "k", &[], "x"), key_with(1, "s", &[("c", "d"), ("a", "b")], "k", &[], "x"),);
    }

    #[test]
    fn publish_atomically_leaves_only_the_target() {
        let dir = scratch_dir("publish");
        let path = dir.join("nested").join("k.ptx");
        publish_atomically(&path, b"first").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"first");
        publish_atomically(&path, b"second, longer contents").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second, longer contents");
        publish_atomically(&path, b"").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"");
        assert_eq!(dir_entries(path.parent().unwrap()), vec!["k.ptx".to_string()]);

        // A failing publish (the target is a directory) cleans up its temporary file.
        let blocked = dir.join("blocked");
        fs::create_dir_all(blocked.join("occupied")).unwrap();
        assert!(publish_atomically(&blocked, b"x").is_err() || blocked.is_file());
        assert!(dir_entries(&dir).iter().all(|e| !e.ends_with(".tmp")), "{:?}", dir_entries(&dir));
        assert!(publish_atomically(Path::new("/"), b"x").is_err());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn concurrent_publishes_leave_a_complete_file() {
        let dir = scratch_dir("concurrent");
        let path = dir.join("same.ptx");
        const LEN: usize = 256 * 1024;
        for round in 0..4u8 {
            let readers_done = std::sync::atomic::AtomicBool::new(false);
            std::thread::scope(|s| {
                // A reader that must never observe a partial file.
                s.spawn(|| {
                    while !readers_done.load(Ordering::Relaxed) {
                        if let Ok(bytes) = fs::read(&path) {
                            assert_eq!(bytes.len(), LEN, "a reader saw a partial file");
                            assert!(bytes.iter().all(|&b| b == bytes[0]), "a reader saw mixed contents");
                        }
                    }
                });
                let writers: Vec<_> = (0..8u8)
                    .map(|t| {
                        let path = &path;
                        s.spawn(move || {
                            let bytes = vec![round.wrapping_mul(8).wrapping_add(t); LEN];
                            for _ in 0..4 {
                                publish_atomically(path, &bytes).unwrap();
                            }
                        })
                    })
                    .collect();
                for w in writers {
                    w.join().unwrap();
                }
                readers_done.store(true, Ordering::Relaxed);
            });
            let bytes = fs::read(&path).unwrap();
            assert_eq!(bytes.len(), LEN);
            let first = bytes[0];
            assert!((round * 8..round * 8 + 8).contains(&first), "contents come from one of this round's writers");
            assert!(bytes.iter().all(|&b| b == first), "file mixes contents of several writers");
            assert_eq!(dir_entries(&dir), vec!["same.ptx".to_string()], "temporary files left behind");
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn cuda_profiles_are_exact() {
        let facts = CudaFacts {
            name: "NVIDIA H200".into(),
            uuid: format_uuid(&[0xab; 16]),
            compute_capability: (9, 0),
            driver_api: 12080,
            driver_build: Some("570.86.15".into()),
            nvrtc: (12, 8),
            ptx_target: 90,
            device_id: 0x2335,
        };
        let p = cuda_profile(facts.clone());
        assert_eq!(p.instance.as_deref(), Some("GPU-abababab-abab-abab-abab-abababababab"));
        for (k, v) in [("compute_capability", "9.0"), ("driver_api", "12.8"), ("driver_build", "570.86.15"), ("nvrtc", "12.8")] {
            assert_eq!(p.details[k], v, "{k}");
        }
        assert!(p.driver.contains("570.86.15") && p.driver.contains("NVRTC 12.8"), "{}", p.driver);
        // Another card of the same model: same model, other instance. Any other fact: another model.
        let twin = cuda_profile(CudaFacts { uuid: format_uuid(&[1; 16]), ..facts.clone() });
        assert!(p.same_model(&twin) && p != twin);
        for other in [
            CudaFacts { driver_build: Some("570.86.16".into()), ..facts.clone() },
            CudaFacts { nvrtc: (12, 9), ..facts.clone() },
            CudaFacts { compute_capability: (9, 1), ..facts.clone() },
            CudaFacts { driver_api: 12090, ..facts.clone() },
            CudaFacts { name: "NVIDIA H100".into(), ..facts.clone() },
        ] {
            assert!(!p.same_model(&cuda_profile(other.clone())), "{other:?}");
        }
        let proprietary =
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\nGCC version:  gcc version 12.2.0\n";
        assert_eq!(parse_nvidia_driver_build(proprietary).as_deref(), Some("550.54.15"));
        let open = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build  (dvs-builder@U16)  Thu Jan 23\n";
        assert_eq!(parse_nvidia_driver_build(open).as_deref(), Some("570.86.15"));
        assert_eq!(parse_nvidia_driver_build("garbage \u{ff}"), None);
        assert_eq!(parse_nvidia_driver_build("NVRM version: x86_64 ..1 1."), None);
    }

    #[test]
    fn cache_dir_resolution() {
        let os = |s: &str| Some(OsString::from(s));
        assert_eq!(resolve_ptx_cache_dir(os("/c"), os("/x"), os("/h")), Some(PathBuf::from("/c")));
        assert_eq!(resolve_ptx_cache_dir(os(""), os("/x"), os("/h")), Some(PathBuf::from("/x/op-runtime/ptx")));
        assert_eq!(resolve_ptx_cache_dir(None, os("rel"), os("/h")), Some(PathBuf::from("/h/.cache/op-runtime/ptx")));
        assert_eq!(resolve_ptx_cache_dir(None, None, os("/h")), Some(PathBuf::from("/h/.cache/op-runtime/ptx")));
        assert_eq!(resolve_ptx_cache_dir(None, None, None), None);
    }

    #[test]
    fn arch_choice_clamps_to_nvrtc() {
        let archs = [50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90];
        assert_eq!(choose_ptx_arch(90, &archs), Some(90));
        assert_eq!(choose_ptx_arch(100, &archs), Some(90));
        assert_eq!(choose_ptx_arch(88, &archs), Some(87));
        assert_eq!(choose_ptx_arch(35, &archs), None);
        assert_eq!(choose_ptx_arch(90, &[]), Some(90));
        assert!(is_arch_option("-arch=compute_80") && is_arch_option("--gpu-architecture=sm_90"));
        assert!(!is_arch_option("-DARCH=1"));
    }

    const SAMPLE_PTX: &str = r#"//
// Generated by NVIDIA NVVM Compiler
//
// Compiler Build ID: CL-34097967
// Cuda compilation tools, release 12.4, V12.4.131
// Based on NVVM 7.0.1
//

.version 8.4
.target sm_90
.address_size 64

	// .globl	add_more
	// .globl	add

.visible .entry add_more(
	.param .u64 add_more_param_0
)
{
	ret;
}
.visible .entry add(
	.param .u64 .ptr .global .align 4 add_param_0,
	.param .u64 add_param_1,
	.param .u64 add_param_2,
	.param .f32 add_param_3,
	.param .u32 add_param_4,
	.param .u32 add_param_5
)
{
	ret;
}
.visible .entry noargs()
{
	ret;
}
.visible .entry with_struct(
	.param .align 8 .b8 with_struct_param_0[24]
)
{
	ret;
}
"#;

    #[test]
    fn ptx_parameter_lists_are_parsed_and_checked() {
        let p = |ty: &str, bytes| PtxParam { ty: ty.to_string(), bytes };
        let add = ptx_entry_params(SAMPLE_PTX, "add").expect("add is declared");
        assert_eq!(add, vec![p(".u64", 8), p(".u64", 8), p(".u64", 8), p(".f32", 4), p(".u32", 4), p(".u32", 4)]);
        assert_eq!(ptx_entry_params(SAMPLE_PTX, "add_more"), Some(vec![p(".u64", 8)]));
        assert_eq!(ptx_entry_params(SAMPLE_PTX, "noargs"), Some(vec![]));
        assert_eq!(ptx_entry_params(SAMPLE_PTX, "with_struct"), Some(vec![p(".b8", 24)]));
        assert_eq!(ptx_entry_params(SAMPLE_PTX, "missing"), None);
        assert_eq!(ptx_entry_params(SAMPLE_PTX, "ad"), None);

        let buf = [0u8; 4];
        let good =
            [CudaArg::Read(&buf), CudaArg::Read(&buf), CudaArg::ReadWrite(&buf), CudaArg::F32(1.0), CudaArg::I32(-1), CudaArg::U32(4)];
        check_args_against_params("add", &add, &good).unwrap();
        let err = check_args_against_params("add", &add, &good[..5]).unwrap_err();
        assert!(matches!(&err, CudaError::InvalidArgument(m) if m.contains("takes 6 parameter")), "{err}");
        let mut swapped = good;
        swapped.swap(2, 3);
        assert!(matches!(check_args_against_params("add", &add, &swapped), Err(CudaError::InvalidArgument(_))));
        let mut int_for_float = good;
        int_for_float[3] = CudaArg::U32(1);
        assert!(matches!(check_args_against_params("add", &add, &int_for_float), Err(CudaError::InvalidArgument(_))));
        let f64_param = [PtxParam { ty: ".f64".to_string(), bytes: 8 }];
        assert!(check_args_against_params("d", &f64_param, &[CudaArg::Read(&buf)]).is_err());
    }

    #[test]
    fn launch_geometry_is_validated() {
        let (mb, mg) = ([1024, 1024, 64], [65535, 65535, 65535]);
        let grid = |t: u64, b: u32, mg: [u32; 3]| launch_grid(CudaGrid::linear(t, b), 1024, mb, mg);
        assert_eq!(grid(1000, 256, mg).unwrap(), [4, 1, 1]);
        assert_eq!(grid(1024, 256, mg).unwrap(), [4, 1, 1]);
        assert_eq!(grid(0, 256, mg).unwrap(), [0, 1, 1]);
        assert!(matches!(grid(10, 0, mg), Err(CudaError::InvalidArgument(_))));
        assert!(matches!(grid(10, 2048, mg), Err(CudaError::InvalidArgument(_))));
        assert!(matches!(grid(u64::MAX, 1, [u32::MAX; 3]), Err(CudaError::InvalidArgument(_))));
        // 2-D and 3-D: blocks per dimension, the block's total and its z limit.
        let g2 = CudaGrid { threads: [100, 33, 1], block: [16, 16, 1] };
        assert_eq!(launch_grid(g2, 1024, mb, mg).unwrap(), [7, 3, 1]);
        let g3 = CudaGrid { threads: [8, 8, 130], block: [4, 4, 64] };
        assert_eq!(launch_grid(g3, 1024, mb, mg).unwrap(), [2, 2, 3]);
        let too_many = CudaGrid { threads: [1, 1, 1], block: [64, 32, 1] };
        assert!(matches!(launch_grid(too_many, 1024, mb, mg), Err(CudaError::InvalidArgument(_))));
        let deep = CudaGrid { threads: [1, 1, 1], block: [1, 1, 128] };
        assert!(matches!(launch_grid(deep, 1024, mb, mg), Err(CudaError::InvalidArgument(_))));
        let tall = CudaGrid { threads: [1, 65536 * 16, 1], block: [1, 16, 1] };
        assert!(matches!(launch_grid(tall, 1024, mb, mg), Err(CudaError::InvalidArgument(_))));
        let huge = CudaGrid { threads: [1, 1, 1], block: [u32::MAX; 3] };
        assert!(matches!(launch_grid(huge, 1024, mb, mg), Err(CudaError::InvalidArgument(_))), "no overflow panic");
    }

    #[test]
    fn compile_inputs_are_validated() {
        assert!(validate_compile_inputs("s", &[], "add_f32", &[]).is_ok());
        for bad in ["", "1x", "a-b", "a b", "a\0"] {
            assert!(matches!(validate_compile_inputs("s", &[], bad, &[]), Err(CudaError::InvalidArgument(_))), "{bad:?}");
        }
        assert!(validate_compile_inputs("s\0", &[], "k", &[]).is_err());
        assert!(validate_compile_inputs("s", &[("h".into(), "\0".into())], "k", &[]).is_err());
        assert!(validate_compile_inputs("s", &[("".into(), "x".into())], "k", &[]).is_err());
        assert!(validate_compile_inputs("s", &[], "k", &["-D\0".into()]).is_err());
        assert_eq!(parse_pci_hex("0x2335\n"), Some(0x2335));
        assert_eq!(parse_pci_hex("10de"), Some(0x10de));
        assert_eq!(parse_pci_hex("zz"), None);
        assert_eq!(c_buffer_to_string(b"abc\0\0".to_vec()), "abc");
    }

    // ---- with a GPU (skipped unless CUDA is present; OP_REQUIRE_CUDA=1 makes them fail) ------

    fn require_cuda() -> bool {
        std::env::var(crate::testing::REQUIRE_CUDA_ENV).map(|v| v == "1").unwrap_or(false)
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

    #[test]
    fn gpu_add_kernel_end_to_end() {
        let cache = scratch_dir("gpu-e2e");
        let Some(engine) = gpu_engine("gpu_add_kernel_end_to_end", &cache) else { return };
        let profile = engine.profile();
        assert_eq!(profile.backend, "cuda");
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
        let _ = fs::remove_dir_all(&cache);
    }

    #[test]
    fn gpu_second_compile_hits_the_caches() {
        let cache = scratch_dir("gpu-cache");
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
        let _ = fs::remove_dir_all(&cache);
    }

    #[test]
    fn gpu_compile_errors_carry_the_nvrtc_log() {
        let cache = scratch_dir("gpu-error");
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
        let _ = fs::remove_dir_all(&cache);
    }
}
