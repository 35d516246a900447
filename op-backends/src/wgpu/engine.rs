//! Low-level wgpu engine: adapter discovery, WGSL pipeline cache, buffer upload, one compute
//! dispatch and readback. It knows nothing of ops or contracts: a caller hands it WGSL source,
//! an entry point, a workgroup size, the binding slots and a thread count.
//!
//! Every wgpu call that can raise a GPU error runs inside error scopes
//! (validation, out-of-memory, internal) on the calling thread, so such errors come back as
//! typed [`WgpuError`]s instead of being logged or turning into wgpu's default panic. An
//! uncaptured-error handler is installed as well (wgpu's default one panics); errors it sees
//! are recorded and can be drained with [`WgpuEngine::take_uncaptured_errors`].

use super::behaviour::{self, Behaviour};
use super::bind_cache::{BindCache, BindCounters, BindStats, Binding};
use super::pool::PoolStats;
use super::resident::{padded, Link, Transfers, WgpuBuffer, TENSOR_USAGE};
use super::wait::Stall;
use op_core::decl::Launch;
use op_core::device::DeviceProfile;
use op_core::error::TensorError;
use op_core::kind::BackendKind;
use op_core::placement::DeviceId;
use op_core::tensor::{Device, Tensor};
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// Most uncaptured error messages kept for [`WgpuEngine::take_uncaptured_errors`].
const MAX_UNCAPTURED: usize = 64;

/// One slot of a launch, in binding order (`@group(0) @binding(i)`).
#[derive(Clone, Copy, Debug)]
pub enum Slot<'a> {
    /// A read-only storage buffer (`var<storage, read>`).
    Read(&'a [u8]),
    /// A read-write storage buffer (`var<storage, read_write>`): these are its initial contents
    /// (e.g. guard-band canaries); its final contents are read back after the launch, in full.
    ReadWrite(&'a [u8]),
    /// A uniform buffer (`var<uniform>`), padded to a multiple of 16 bytes.
    Uniform(&'a [u8]),
    /// A read-write storage buffer initialised with `init` (all of it: guard bands included)
    /// but bound only at `offset .. offset + size`, so the kernel's `arrayLength` covers that
    /// window. Used for guard bands: `offset` (a multiple of
    /// [`WgpuEngine::storage_offset_alignment`]) skips the front guard, `size` includes the back
    /// guard, so a write past the end lands on canaries instead of being dropped by wgpu's
    /// bounds checks. The whole buffer is read back.
    Guarded {
        /// Initial contents of the whole buffer, guard bands included.
        init: &'a [u8],
        /// Byte offset of the bound window (skips the front guard).
        offset: u64,
        /// Byte size of the bound window (includes the back guard).
        size: u64,
    },
    /// A read-write storage buffer of `len` bytes whose initial contents do not matter (wgpu
    /// zero-fills it; nothing is uploaded); read back after the launch. For plain outputs.
    Output {
        /// Size in bytes.
        len: usize,
    },
    /// A uniform buffer already on the device (from the engine's uniform buffers, kept by
    /// a prepared kernel for calls with the same dims and parameters): nothing written.
    UniformBuffer(&'a wgpu::Buffer),
    /// A read-only storage buffer already on the device (a device tensor's): bound as it is,
    /// nothing uploaded.
    Resident {
        /// The buffer (of this engine's device).
        buffer: &'a wgpu::Buffer,
        /// Bytes of data in it.
        bytes: u64,
    },
}

impl<'a> Slot<'a> {
    fn kind(&self) -> SlotKind {
        match self {
            Slot::Read(_) | Slot::Resident { .. } => SlotKind::Read,
            Slot::ReadWrite(_) => SlotKind::ReadWrite,
            Slot::Uniform(_) | Slot::UniformBuffer(_) => SlotKind::Uniform,
            Slot::Guarded { .. } | Slot::Output { .. } => SlotKind::ReadWrite,
        }
    }

    fn len(&self) -> usize {
        match *self {
            Slot::Output { len } => len,
            Slot::Resident { bytes, .. } => usize::try_from(bytes).unwrap_or(usize::MAX),
            Slot::UniformBuffer(b) => usize::try_from(b.size()).unwrap_or(usize::MAX),
            s => s.bytes().len(),
        }
    }

    fn bytes(&self) -> &'a [u8] {
        match *self {
            Slot::Read(b) | Slot::ReadWrite(b) | Slot::Uniform(b) => b,
            Slot::Guarded { init, .. } => init,
            Slot::Output { .. } | Slot::Resident { .. } | Slot::UniformBuffer(_) => &[],
        }
    }

    fn read_back(&self) -> bool {
        matches!(self, Slot::ReadWrite(_) | Slot::Guarded { .. } | Slot::Output { .. })
    }
}

/// The launch of one dispatch: workgroup size, invocations, and the kernel's launch
/// convention. A flat kernel gets `ceil(threads / wg)` workgroups along x (and along y and z
/// for a 2-D or 3-D launch, `yz`); a linear one a 2-D grid of rows (`row` workgroups wide, the
/// device's per-dimension limit by default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// `@workgroup_size`: `[x, 1, 1]` for 1-D launches.
    pub wg: [u32; 3],
    /// Invocations to launch (along x).
    pub threads: u64,
    /// Invocations along y and z: `[1, 1]` for a 1-D launch.
    pub yz: [u64; 2],
    /// How the kernel indexes its invocations.
    pub launch: Launch,
    /// Row width in workgroups for linear kernels (`None`: as wide as the device allows).
    /// Conformance launches narrow rows so a wrong linearisation fails on small cases.
    pub row: Option<u32>,
}

impl Geometry {
    /// A flat launch of `threads` invocations in workgroups of `wg`.
    pub fn flat(wg: [u32; 3], threads: u64) -> Geometry {
        Geometry { wg, threads, yz: [1, 1], launch: Launch::Flat, row: None }
    }

    /// Whether the launch has no invocation (an extent is 0).
    pub fn is_empty(&self) -> bool {
        self.threads == 0 || self.yz.contains(&0)
    }
}

/// The binding kind of a [`Slot`], without its contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SlotKind {
    /// A read-only storage buffer.
    Read,
    /// A read-write storage buffer.
    ReadWrite,
    /// A uniform buffer.
    Uniform,
}

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

/// A compiled compute pipeline with its bind-group layout, as `prepare` built it. Held by the
/// backend's prepared kernel, so a call finds it without a lookup.
pub struct Pipeline {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    kinds: Vec<SlotKind>,
    source: String,
    /// Bind groups of calls on device tensors, by the buffers they bind.
    binds: BindCache,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline").field("kinds", &self.kinds).finish_non_exhaustive()
    }
}

/// Pipelines by key, then by entry point (a Vec: kernels have one or a few entries, and this
/// avoids allocating a `String` per lookup).
type PipelineCache = HashMap<[u8; 32], Vec<(String, Arc<Pipeline>)>>;

/// The wgpu engine: one adapter, one device and queue, and a pipeline cache.
pub struct WgpuEngine {
    _instance: wgpu::Instance,
    _adapter: wgpu::Adapter,
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    limits: wgpu::Limits,
    features: wgpu::Features,
    profile: DeviceProfile,
    pipelines: Mutex<PipelineCache>,
    built: AtomicUsize,
    uncaptured: Arc<Mutex<Vec<String>>>,
    lost: Arc<Mutex<Option<String>>>,
    lost_flag: Arc<AtomicBool>,
    /// Identity, transfer counters and the buffer pool, shared with the engine's device buffers.
    link: Arc<Link>,
    /// Bind groups built and reused for calls on device tensors.
    binds: BindCounters,
}

impl std::fmt::Debug for WgpuEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WgpuEngine")
            .field("profile", &self.profile)
            .field("pipelines_built", &self.pipelines_built())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves the data consistent (single inserts/pushes), so a poisoned
    // lock is recovered rather than turned into an error.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn no_adapter_hint(detail: &str) -> String {
    format!(
        "{detail}. wgpu was built with backends {:?}. On a machine without a GPU install Mesa's \
         software Vulkan driver (lavapipe): `apt-get install mesa-vulkan-drivers` \
         (Debian/Ubuntu); check with `vulkaninfo --summary` or VK_ICD_FILENAMES",
        wgpu::Instance::enabled_backend_features()
    )
}

/// Preference of an adapter type: hardware first, software (CPU) last.
fn rank(t: wgpu::DeviceType) -> u8 {
    match t {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    }
}

fn round_up(n: u64, to: u64) -> u64 {
    n.div_ceil(to).max(1) * to
}

/// The adapter to use: hardware before software (`rank`), `WGPU_ADAPTER_NAME` (the variable
/// wgpu's own helpers read) picking one by name, and an explicit fallback request last.
fn choose_adapter(instance: &wgpu::Instance) -> Result<wgpu::Adapter, WgpuError> {
    let mut adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
    adapters.sort_by_key(|a| rank(a.get_info().device_type));
    if let Some(want) = std::env::var("WGPU_ADAPTER_NAME").ok().filter(|s| !s.is_empty()) {
        let names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
        let want_lc = want.to_lowercase();
        adapters.retain(|a| a.get_info().name.to_lowercase().contains(&want_lc));
        if adapters.is_empty() {
            return Err(WgpuError::NoAdapter { hint: format!("WGPU_ADAPTER_NAME={want:?} matches none of the adapters {names:?}") });
        }
    }
    match adapters.into_iter().next() {
        Some(a) => Ok(a),
        None => {
            // Ask once more, explicitly for a fallback (software) adapter.
            let opts = wgpu::RequestAdapterOptions { force_fallback_adapter: true, ..Default::default() };
            pollster::block_on(instance.request_adapter(&opts)).map_err(|e| WgpuError::NoAdapter { hint: no_adapter_hint(&e.to_string()) })
        }
    }
}

/// Errors the device reports outside an error scope: recorded (wgpu's default handler panics),
/// and a device-lost flag with its reason.
type ErrorWatch = (Arc<Mutex<Vec<String>>>, Arc<Mutex<Option<String>>>, Arc<AtomicBool>);

fn watch_errors(device: &wgpu::Device) -> ErrorWatch {
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

/// The device profile of an adapter: name, driver (and driver info), PCI ids.
fn wgpu_profile(info: &wgpu::AdapterInfo) -> DeviceProfile {
    let driver = match (info.driver.trim(), info.driver_info.trim()) {
        ("", "") => format!("{:?}", info.backend),
        (d, "") => d.to_string(),
        ("", i) => i.to_string(),
        (d, i) => format!("{d} ({i})"),
    };
    let mut details = std::collections::BTreeMap::new();
    details.insert("api".to_string(), format!("{:?}", info.backend));
    details.insert("device_type".to_string(), format!("{:?}", info.device_type));
    // The machine, and the adapter's PCI slot where the platform reports one.
    let instance = op_core::device::machine_fingerprint().map(|m| match info.device_pci_bus_id.trim() {
        "" => m.to_string(),
        bus => format!("{m}/pci {bus}"),
    });
    DeviceProfile {
        backend: BackendKind::Wgpu,
        adapter: info.name.clone(),
        driver,
        vendor_id: info.vendor,
        device_id: info.device,
        details,
        instance,
    }
}

/// wgpu's own objects behind a [`WgpuEngine`] ([`WgpuEngine::raw`]): the device, its queue, the
/// adapter's description, the device's limits and enabled features.
#[derive(Clone, Copy)]
pub struct WgpuRaw<'e>(&'e WgpuEngine);

impl<'e> WgpuRaw<'e> {
    /// The device.
    pub fn device(self) -> &'e wgpu::Device {
        &self.0.device
    }
    /// The queue.
    pub fn queue(self) -> &'e wgpu::Queue {
        &self.0.queue
    }
    /// wgpu's description of the adapter (device type, backend, driver).
    pub fn adapter_info(self) -> &'e wgpu::AdapterInfo {
        &self.0.info
    }
    /// The device's limits (the adapter's own).
    pub fn limits(self) -> &'e wgpu::Limits {
        &self.0.limits
    }
    /// The features enabled on the device.
    pub fn features(self) -> wgpu::Features {
        self.0.features
    }
}

impl WgpuEngine {
    /// Discovers an adapter on any backend wgpu was built with (Vulkan here), preferring a
    /// hardware one and falling back to a CPU/software one (lavapipe), then creates a device
    /// with the adapter's own limits (so large storage buffers work).
    pub fn new() -> Result<Self, WgpuError> {
        WgpuEngine::with_optional_features(wgpu::Features::SHADER_F16)
    }

    /// [`WgpuEngine::new`] enabling none of the optional features (`shader-f16`): an engine that
    /// refuses `f16` kernels as a device without the feature would.
    pub fn minimal() -> Result<Self, WgpuError> {
        WgpuEngine::with_optional_features(wgpu::Features::empty())
    }

    /// [`WgpuEngine::new`] enabling only those of `optional` the adapter has.
    pub fn with_optional_features(optional: wgpu::Features) -> Result<Self, WgpuError> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = choose_adapter(&instance)?;
        let info = adapter.get_info();
        let limits = adapter.limits();
        // Optional features the adapter has are enabled, so kernels needing them run here.
        let features = adapter.features() & optional;
        let desc = wgpu::DeviceDescriptor {
            label: Some("op-runtime wgpu engine"),
            required_features: features,
            required_limits: limits.clone(),
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&desc))
            .map_err(|e| WgpuError::RequestDevice(format!("{e} (adapter {:?})", info.name)))?;
        let limits = device.limits();
        let features = device.features();
        let (uncaptured, lost, lost_flag) = watch_errors(&device);
        let profile = wgpu_profile(&info);
        let link = Arc::new(Link::new(&device, &queue));
        let mut engine = WgpuEngine {
            _instance: instance,
            _adapter: adapter,
            device,
            queue,
            info,
            limits,
            features,
            profile,
            pipelines: Mutex::new(HashMap::new()),
            built: AtomicUsize::new(0),
            uncaptured,
            lost,
            lost_flag,
            link,
            binds: BindCounters::default(),
        };
        // What the adapter does with loops that never end and writes past a binding is part of
        // the profile (`untested.*`: what conformance cannot test here). The probes' transfers
        // are the engine's own: a fresh link starts the counters at zero.
        let measured = engine.measure_behaviour().map_err(|e| e.to_string());
        engine.profile.details.extend(behaviour::untested(&measured));
        engine.link = Arc::new(Link::new(&engine.device, &engine.queue));
        Ok(engine)
    }

    /// Runs the probes of `behaviour` (pipelines built outside the cache).
    fn measure_behaviour(&self) -> Result<Behaviour, WgpuError> {
        let kinds = [SlotKind::ReadWrite, SlotKind::Uniform];
        let run = |source: &str, slot: Slot<'_>, uniform: u32| -> Result<Vec<u8>, WgpuError> {
            let pipeline = self.build(source, "main", &kinds)?;
            let mut out = self.run_pipeline(&pipeline, Geometry::flat([1, 1, 1], 1), &[slot, Slot::Uniform(&uniform.to_le_bytes())])?;
            out.pop().ok_or_else(|| WgpuError::Map("a behaviour probe read back nothing".into()))
        };
        let turns = run(behaviour::LOOP_PROBE, Slot::ReadWrite(&[0; 4]), behaviour::LOOP_TURNS)?;
        let init = [0u8; behaviour::PAST_BINDING_BUFFER];
        let window = Slot::Guarded { init: &init, offset: 0, size: behaviour::PAST_BINDING_WINDOW };
        let past = run(behaviour::PAST_BINDING_PROBE, window, behaviour::PAST_BINDING_AT)?;
        Ok(Behaviour::from_probes(&turns, &past))
    }

    /// A process-wide shared engine, created once (the outcome, error included, is cached).
    pub fn shared() -> Result<&'static WgpuEngine, WgpuError> {
        static SHARED: OnceLock<Result<WgpuEngine, WgpuError>> = OnceLock::new();
        SHARED.get_or_init(WgpuEngine::new).as_ref().map_err(Clone::clone)
    }

    /// The device profile: backend `wgpu`, adapter name, driver (+ driver info), PCI ids, API and
    /// device type, and the machine (with the PCI slot where reported) as the instance.
    pub fn profile(&self) -> &DeviceProfile {
        &self.profile
    }

    /// wgpu's own objects behind the engine, for code that drives wgpu directly (benchmarks
    /// against hand-written wgpu programs). Only through this accessor is wgpu's version part of
    /// this crate's API.
    pub fn raw(&self) -> WgpuRaw<'_> {
        WgpuRaw(self)
    }

    /// Whether WGSL kernels may use `f16` (`enable f16;`) here: the adapter has `shader-f16`.
    pub fn supports_f16(&self) -> bool {
        self.features.contains(wgpu::Features::SHADER_F16)
    }

    /// The alignment a [`Slot::Guarded`] offset must have
    /// (`min_storage_buffer_offset_alignment`, usually 256 bytes).
    pub fn storage_offset_alignment(&self) -> u64 {
        u64::from(self.limits.min_storage_buffer_offset_alignment.max(4))
    }

    /// Builds (or finds in the cache) the pipeline for `(key, entry)` with this slot layout,
    /// without running anything: compilation and validation errors surface here. The caller
    /// keeps the pipeline and launches it with [`WgpuEngine::run_pipeline`].
    pub fn prepare(&self, key: [u8; 32], source: &str, entry: &str, kinds: &[SlotKind]) -> Result<Arc<Pipeline>, WgpuError> {
        self.check_lost()?;
        self.pipeline(key, source, entry, kinds)
    }

    /// Tensor data moved between the host and this engine's device so far (every upload and
    /// readback: explicit `to_device` / `to_host` and those of calls on host tensors).
    pub fn transfers(&self) -> Transfers {
        self.link.counters.snapshot()
    }

    #[doc(hidden)]
    pub fn link(&self) -> &Arc<Link> {
        &self.link
    }

    /// What the device-tensor buffer pool has done so far (buffers created, reused, returned,
    /// freed; bytes held). See [`WgpuEngine::set_pool_limit`].
    pub fn pool_stats(&self) -> PoolStats {
        self.link.pool.stats()
    }

    /// Bind groups built and reused for calls on device tensors so far.
    pub fn bind_stats(&self) -> BindStats {
        self.binds.snapshot()
    }

    /// Sets how many bytes of dropped device tensors' buffers the engine keeps for reuse
    /// (default [`super::pool::DEFAULT_POOL_LIMIT`]; `0` keeps none), freeing what it holds
    /// beyond that.
    pub fn set_pool_limit(&self, bytes: u64) {
        self.link.pool.set_limit(bytes);
        self.forget_bind_groups();
    }

    /// Frees every pooled buffer and forgets every cached bind group (which hold their
    /// buffers), so device memory of dropped tensors goes back to the driver now.
    pub fn trim(&self) {
        self.link.pool.trim();
        self.forget_bind_groups();
    }

    /// Forgets every pipeline's cached bind groups (the buffers they hold go with them unless
    /// something else holds them).
    fn forget_bind_groups(&self) {
        for entries in lock(&self.pipelines).values() {
            for (_, pipeline) in entries {
                pipeline.binds.clear();
            }
        }
    }

    /// A device-tensor buffer of `size` bytes: a pooled one (`true`: it holds stale bytes) or
    /// a new, zero-filled one. Call inside an error scope.
    fn tensor_buffer(&self, size: u64, label: Option<&str>, mapped: bool) -> (wgpu::Buffer, bool) {
        if let Some(b) = self.link.pool.take(size) {
            return (b, true);
        }
        self.link.pool.note_created();
        let desc = wgpu::BufferDescriptor { label, size, usage: TENSOR_USAGE, mapped_at_creation: mapped };
        (self.device.create_buffer(&desc), false)
    }

    /// A new device buffer holding `bytes` (one counted host-to-device transfer).
    pub fn upload_bytes(&self, bytes: &[u8]) -> Result<WgpuBuffer, WgpuError> {
        self.check_lost()?;
        let size = padded(bytes.len() as u64);
        let limit = self.limits.max_storage_buffer_binding_size.min(self.limits.max_buffer_size);
        if size > limit {
            return Err(WgpuError::TooLarge { what: "device tensor (storage buffer bytes)".into(), requested: size, limit });
        }
        let (buffer, failed) = self.scoped("upload", || {
            let (buffer, pooled) = self.tensor_buffer(size, Some("op-runtime tensor"), true);
            if pooled {
                // The whole buffer is written: the padding too, so no stale byte stays. Straight
                // into the queue's staging memory (no intermediate copy of the tensor).
                match std::num::NonZeroU64::new(size).and_then(|s| self.queue.write_buffer_with(&buffer, 0, s)) {
                    Some(mut view) => {
                        view.slice(..bytes.len()).copy_from_slice(bytes);
                        view.slice(bytes.len()..).fill(0);
                    }
                    None => {
                        let mut data = bytes.to_vec();
                        data.resize(size as usize, 0);
                        self.queue.write_buffer(&buffer, 0, &data);
                    }
                }
                return (buffer, None);
            }
            let failed = match buffer.get_mapped_range_mut(..) {
                Ok(mut view) => {
                    view.slice(..bytes.len()).copy_from_slice(bytes);
                    None
                }
                Err(e) => Some(e.to_string()),
            };
            buffer.unmap();
            (buffer, failed)
        })?;
        if let Some(e) = failed {
            return Err(WgpuError::Map(format!("upload mapping failed: {e}")));
        }
        self.link.counters.up(bytes.len() as u64);
        Ok(WgpuBuffer::new(buffer, bytes.len() as u64, self.link.clone()))
    }

    /// A uniform buffer holding `bytes` (padded to 16), for [`Slot::UniformBuffer`]; counted
    /// as one uniform write.
    pub fn uniform_buffer(&self, bytes: &[u8]) -> Result<wgpu::Buffer, WgpuError> {
        self.check_lost()?;
        let size = round_up(bytes.len().max(1) as u64, 16);
        if size > self.limits.max_uniform_buffer_binding_size {
            let limit = self.limits.max_uniform_buffer_binding_size;
            return Err(WgpuError::TooLarge { what: "uniform buffer bytes".into(), requested: size, limit });
        }
        let buffer = self.scoped("uniform", || {
            let desc = wgpu::BufferDescriptor {
                label: None,
                size,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            };
            let buffer = self.device.create_buffer(&desc);
            self.queue.write_buffer(&buffer, 0, bytes);
            buffer
        })?;
        self.link.counters.uniform(bytes.len() as u64);
        Ok(buffer)
    }

    /// Whether the adapter is a CPU/software one (e.g. lavapipe).
    pub fn is_software(&self) -> bool {
        self.info.device_type == wgpu::DeviceType::Cpu
    }

    /// How many pipelines have been compiled so far (cache misses that built successfully).
    pub fn pipelines_built(&self) -> usize {
        self.built.load(Ordering::Relaxed)
    }

    /// Drains the GPU errors that escaped every error scope (should stay empty).
    pub fn take_uncaptured_errors(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.uncaptured))
    }

    /// Runs `f` inside validation, out-of-memory and internal error scopes on this thread and
    /// turns a captured error into a typed one.
    fn scoped<T>(&self, what: &str, f: impl FnOnce() -> T) -> Result<T, WgpuError> {
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
    fn check_lost(&self) -> Result<(), WgpuError> {
        if self.lost_flag.load(Ordering::Acquire) {
            let msg = lock(&self.lost).clone().unwrap_or_default();
            return Err(WgpuError::DeviceLost(msg));
        }
        self.link.waits.check(&self.device).map_err(WgpuError::from)
    }

    /// Finds or builds the pipeline for `(key, entry)`.
    fn pipeline(&self, key: [u8; 32], source: &str, entry: &str, kinds: &[SlotKind]) -> Result<Arc<Pipeline>, WgpuError> {
        let check = |p: &Arc<Pipeline>| -> Result<Arc<Pipeline>, WgpuError> {
            if p.kinds != kinds {
                return Err(WgpuError::KeyMismatch {
                    entry: entry.to_string(),
                    detail: format!("cached with slots {:?}, called with {:?}", p.kinds, kinds),
                });
            }
            if p.source != source {
                return Err(WgpuError::KeyMismatch { entry: entry.to_string(), detail: "cached with a different WGSL source".to_string() });
            }
            Ok(Arc::clone(p))
        };
        if let Some(entries) = lock(&self.pipelines).get(&key) {
            if let Some((_, p)) = entries.iter().find(|(e, _)| e == entry) {
                return check(p);
            }
        }
        // Built outside the lock; a concurrent build of the same key keeps the first insert.
        let built = Arc::new(self.build(source, entry, kinds)?);
        self.built.fetch_add(1, Ordering::Relaxed);
        let mut cache = lock(&self.pipelines);
        let entries = cache.entry(key).or_default();
        if let Some((_, p)) = entries.iter().find(|(e, _)| e == entry) {
            return check(p);
        }
        entries.push((entry.to_string(), Arc::clone(&built)));
        Ok(built)
    }

    /// Compiles a pipeline (uncached, uncounted: [`WgpuEngine::pipelines_built`] counts the
    /// cache's builds).
    fn build(&self, source: &str, entry: &str, kinds: &[SlotKind]) -> Result<Pipeline, WgpuError> {
        let count = kinds.iter().filter(|k| **k != SlotKind::Uniform).count() as u64;
        let max = u64::from(self.limits.max_storage_buffers_per_shader_stage);
        if count > max {
            return Err(WgpuError::TooLarge { what: "storage buffer slots".into(), requested: count, limit: max });
        }
        let count = kinds.len() as u64 - count;
        let max = u64::from(self.limits.max_uniform_buffers_per_shader_stage);
        if count > max {
            return Err(WgpuError::TooLarge { what: "uniform buffer slots".into(), requested: count, limit: max });
        }
        let module = self.scoped("shader module", || {
            self.device
                .create_shader_module(wgpu::ShaderModuleDescriptor { label: Some(entry), source: wgpu::ShaderSource::Wgsl(source.into()) })
        })?;
        let (layout, pipeline) = self.scoped("compute pipeline", || {
            let entries: Vec<wgpu::BindGroupLayoutEntry> = kinds
                .iter()
                .enumerate()
                .map(|(i, k)| wgpu::BindGroupLayoutEntry {
                    binding: i as u32,
                    visibility: wgpu::ShaderStages::COMPUTE,
                    ty: wgpu::BindingType::Buffer {
                        ty: match k {
                            SlotKind::Read => wgpu::BufferBindingType::Storage { read_only: true },
                            SlotKind::ReadWrite => wgpu::BufferBindingType::Storage { read_only: false },
                            SlotKind::Uniform => wgpu::BufferBindingType::Uniform,
                        },
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                })
                .collect();
            let layout = self.device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some(entry), entries: &entries });
            let pipeline_layout = self.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(entry),
                bind_group_layouts: &[Some(&layout)],
                immediate_size: 0,
            });
            let pipeline = self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some(entry),
                compilation_options: wgpu::PipelineCompilationOptions::default(),
                cache: None,
            });
            (layout, pipeline)
        })?;
        Ok(Pipeline { pipeline, layout, kinds: kinds.to_vec(), source: source.to_string(), binds: BindCache::default() })
    }

    /// Runs `entry` of `source` over `threads` invocations with workgroup size `wg` (only
    /// `wg[0]` may differ from 1), binding `slots` as `@group(0) @binding(i)`. Returns the final
    /// bytes of each [`Slot::ReadWrite`] slot, in order, each exactly as long as its input.
    ///
    /// The pipeline is cached by `(key, entry)`: `key` must identify the source (e.g. the op's
    /// content hash); a key reused with another source or slot layout is a
    /// [`WgpuError::KeyMismatch`]. Dispatches `ceil(threads / wg[0])` workgroups in x; more than
    /// the device allows is [`WgpuError::TooLarge`]. `threads == 0` dispatches nothing and
    /// returns the ReadWrite slots' initial contents (the pipeline is still built/validated).
    pub fn run(
        &self,
        key: [u8; 32],
        source: &str,
        entry: &str,
        wg: [u32; 3],
        slots: &[Slot<'_>],
        threads: u64,
    ) -> Result<Vec<Vec<u8>>, WgpuError> {
        self.check_lost()?;
        // Launch geometry and buffer sizes are refused before anything is compiled.
        let geometry = Geometry::flat(wg, threads);
        self.grid(geometry)?;
        self.slot_sizes(slots)?;
        let kinds: Vec<SlotKind> = slots.iter().map(Slot::kind).collect();
        let pipeline = self.pipeline(key, source, entry, &kinds)?;
        self.run_pipeline(&pipeline, geometry, slots)
    }

    /// Runs a pipeline from [`WgpuEngine::prepare`] (see [`WgpuEngine::run`]); the slots must
    /// have the kinds it was prepared with.
    pub fn run_pipeline(&self, pipeline: &Pipeline, geometry: Geometry, slots: &[Slot<'_>]) -> Result<Vec<Vec<u8>>, WgpuError> {
        self.check_lost()?;
        if slots.len() != pipeline.kinds.len() || slots.iter().zip(&pipeline.kinds).any(|(s, k)| s.kind() != *k) {
            let kinds: Vec<SlotKind> = slots.iter().map(Slot::kind).collect();
            return Err(WgpuError::KeyMismatch {
                entry: String::new(),
                detail: format!("prepared with slots {:?}, called with {kinds:?}", pipeline.kinds),
            });
        }
        let groups = self.grid(geometry)?;
        let sizes = self.slot_sizes(slots)?;
        if geometry.is_empty() {
            return Ok(slots
                .iter()
                .filter(|s| s.read_back())
                .map(|s| match s {
                    Slot::Output { len } => vec![0u8; *len],
                    s => s.bytes().to_vec(),
                })
                .collect());
        }
        let bound = self.bind(pipeline, slots, &sizes, true)?;
        let (submission, maps) = self.dispatch(pipeline, &bound, Some(groups), &sizes)?;
        self.wait(submission, geometry)?;
        self.read_back(&bound, maps, slots)
    }

    /// Runs a pipeline with every output kept on the device: inputs are [`Slot::Resident`]
    /// buffers (or uploaded slots), each [`Slot::Output`] becomes a new zero-filled device
    /// buffer the kernel writes, returned in slot order without any readback. The launch is
    /// submitted, not waited for (the queue orders later launches and reads after it).
    pub fn run_resident(&self, pipeline: &Pipeline, geometry: Geometry, slots: &[Slot<'_>]) -> Result<Vec<WgpuBuffer>, WgpuError> {
        self.check_lost()?;
        if slots.iter().any(|s| matches!(s, Slot::ReadWrite(_) | Slot::Guarded { .. })) || slots.len() != pipeline.kinds.len() {
            return Err(WgpuError::InvalidLaunch("a resident launch takes resident or read inputs, uniforms and plain outputs".into()));
        }
        if slots.iter().zip(&pipeline.kinds).any(|(s, k)| s.kind() != *k) {
            let kinds: Vec<SlotKind> = slots.iter().map(Slot::kind).collect();
            return Err(WgpuError::KeyMismatch {
                entry: String::new(),
                detail: format!("prepared with slots {:?}, called with {kinds:?}", pipeline.kinds),
            });
        }
        let groups = self.grid(geometry)?;
        let sizes = self.slot_sizes(slots)?;
        let bound = self.bind(pipeline, slots, &sizes, false)?;
        if !geometry.is_empty() || !bound.clear.is_empty() {
            self.dispatch(pipeline, &bound, (!geometry.is_empty()).then_some(groups), &sizes)?;
            self.link.waits.submitted(invocations(geometry));
        }
        Ok(slots
            .iter()
            .zip(bound.buffers)
            .filter_map(|(s, b)| match s {
                Slot::Output { len } => Some(WgpuBuffer::new(b, *len as u64, self.link.clone())),
                _ => None,
            })
            .collect())
    }

    /// The workgroups to dispatch, `[x, y, z]`, for a launch within the device's limits: flat
    /// kernels `ceil(threads / wg)` along each dimension; linear ones in rows (see `Geometry`).
    pub fn grid(&self, g: Geometry) -> Result<[u32; 3], WgpuError> {
        self.check_workgroup(g.wg)?;
        let max_groups = u64::from(self.limits.max_compute_workgroups_per_dimension);
        let (wg, threads) = (g.wg, [g.threads, g.yz[0], g.yz[1]]);
        if g.launch == Launch::Flat {
            let mut groups = [0u32; 3];
            for d in 0..3 {
                let n = threads[d].div_ceil(u64::from(wg[d]));
                if n > max_groups {
                    let hint = if d == 0 && g.yz == [1, 1] {
                        "; a kernel that linearises its index over rows with `@builtin(num_workgroups)` launches any number"
                    } else {
                        ""
                    };
                    let what = format!("workgroups in {} ({} threads / workgroup {}{hint})", ["x", "y", "z"][d], threads[d], wg[d]);
                    return Err(WgpuError::TooLarge { what, requested: n, limit: max_groups });
                }
                groups[d] = n as u32;
            }
            return Ok(groups);
        }
        if g.yz != [1, 1] || wg[1] != 1 || wg[2] != 1 {
            return Err(WgpuError::InvalidLaunch("a 2-D or 3-D launch indexes each dimension itself: it is not linearised in rows".into()));
        }
        let groups = g.threads.div_ceil(u64::from(wg[0]));
        let width = u64::from(g.row.unwrap_or(u32::MAX).max(1)).min(max_groups).min(groups.max(1));
        let rows = groups.div_ceil(width);
        if rows > max_groups {
            return Err(WgpuError::TooLarge {
                what: format!("rows of {width} workgroups ({} threads / workgroup {})", g.threads, wg[0]),
                requested: rows,
                limit: max_groups,
            });
        }
        Ok([width as u32, rows as u32, 1])
    }

    /// A workgroup size within the device's limits: every dimension at least 1 and at most its
    /// limit, and their product at most the invocations per workgroup.
    fn check_workgroup(&self, wg: [u32; 3]) -> Result<(), WgpuError> {
        let l = &self.limits;
        if wg.contains(&0) {
            return Err(WgpuError::InvalidLaunch(format!("workgroup size {wg:?}: every dimension must be at least 1")));
        }
        let max = [l.max_compute_workgroup_size_x, l.max_compute_workgroup_size_y, l.max_compute_workgroup_size_z];
        if let Some(d) = (0..3).find(|&d| wg[d] > max[d]) {
            return Err(WgpuError::TooLarge {
                what: format!("workgroup size in {}", ["x", "y", "z"][d]),
                requested: u64::from(wg[d]),
                limit: u64::from(max[d]),
            });
        }
        let total = wg.iter().fold(1u64, |t, &d| t.saturating_mul(u64::from(d)));
        if total > u64::from(l.max_compute_invocations_per_workgroup) {
            let limit = u64::from(l.max_compute_invocations_per_workgroup);
            return Err(WgpuError::TooLarge { what: format!("invocations per workgroup {wg:?}"), requested: total, limit });
        }
        Ok(())
    }

    /// Each slot's (padded) buffer size, checked against the device's limits before any GPU work.
    fn slot_sizes(&self, slots: &[Slot<'_>]) -> Result<Vec<u64>, WgpuError> {
        let mut sizes = Vec::with_capacity(slots.len());
        for (i, s) in slots.iter().enumerate() {
            let len = s.len() as u64;
            let (size, limit, what) = match s {
                Slot::Uniform(_) | Slot::UniformBuffer(_) => (round_up(len, 16), self.limits.max_uniform_buffer_binding_size, "uniform"),
                Slot::Guarded { offset, size, .. } => {
                    let align = self.storage_offset_alignment();
                    if offset % align != 0 || *size == 0 || size % 4 != 0 || offset.checked_add(*size).is_none_or(|end| end > len) {
                        return Err(WgpuError::InvalidLaunch(format!(
                            "slot {i}: guarded window {offset}..+{size} must lie inside its {len}-byte buffer, with the \
                             offset a multiple of {align} and the size a non-zero multiple of 4"
                        )));
                    }
                    if *size > self.limits.max_storage_buffer_binding_size {
                        return Err(WgpuError::TooLarge {
                            what: format!("slot {i} (storage binding bytes)"),
                            requested: *size,
                            limit: self.limits.max_storage_buffer_binding_size,
                        });
                    }
                    (round_up(len, 4), self.limits.max_buffer_size, "storage")
                }
                _ => (round_up(len, 4), self.limits.max_storage_buffer_binding_size, "storage"),
            };
            let limit = limit.min(self.limits.max_buffer_size);
            if size > limit {
                return Err(WgpuError::TooLarge { what: format!("slot {i} ({what} buffer bytes)"), requested: size, limit });
            }
            sizes.push(size);
        }
        Ok(sizes)
    }

    /// Creates and uploads the buffers, the staging buffers of read-back slots (where
    /// `readback`; else outputs are device-tensor buffers, pooled ones listed to be cleared, and
    /// the bind group may be a cached one) and the bind group. Resident slots bind their own
    /// buffer.
    fn bind(&self, pipeline: &Pipeline, slots: &[Slot<'_>], sizes: &[u64], readback: bool) -> Result<Bound, WgpuError> {
        let (buffers, staging, clear, group, failed) = self.scoped("bind group", || {
            let mut buffers = Vec::with_capacity(slots.len());
            let mut staging = Vec::new();
            let mut clear = Vec::new();
            let mut map_failed = None;
            for (i, (s, &size)) in slots.iter().zip(sizes).enumerate() {
                if let Slot::Resident { buffer, .. } | Slot::UniformBuffer(buffer) = s {
                    buffers.push((*buffer).clone());
                    continue;
                }
                if let (Slot::Output { len }, false) = (s, readback) {
                    let (buffer, pooled) = self.tensor_buffer(padded(*len as u64), None, false);
                    if pooled {
                        clear.push(i);
                    }
                    buffers.push(buffer);
                    continue;
                }
                let usage = match s {
                    Slot::Read(_) => wgpu::BufferUsages::STORAGE,
                    Slot::ReadWrite(_) | Slot::Guarded { .. } | Slot::Output { .. } => {
                        wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC
                    }
                    Slot::Uniform(_) => wgpu::BufferUsages::UNIFORM,
                    Slot::Resident { .. } => wgpu::BufferUsages::STORAGE,
                    Slot::UniformBuffer(_) => wgpu::BufferUsages::UNIFORM,
                };
                let bytes = s.bytes();
                match s {
                    _ if bytes.is_empty() => {}
                    Slot::Uniform(_) => self.link.counters.uniform(bytes.len() as u64),
                    _ => self.link.counters.up(bytes.len() as u64),
                }
                let buffer =
                    self.device.create_buffer(&wgpu::BufferDescriptor { label: None, size, usage, mapped_at_creation: !bytes.is_empty() });
                if !bytes.is_empty() {
                    match buffer.get_mapped_range_mut(..) {
                        Ok(mut view) => view.slice(..bytes.len()).copy_from_slice(bytes),
                        Err(e) => map_failed = Some(format!("slot {i}: {e}")),
                    }
                    buffer.unmap();
                }
                if s.read_back() {
                    let st = self.device.create_buffer(&wgpu::BufferDescriptor {
                        label: None,
                        size,
                        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                        mapped_at_creation: false,
                    });
                    staging.push((i, st));
                }
                buffers.push(buffer);
            }
            // Host-tensor calls bind new buffers every time: their bind group is not cached.
            let group = readback.then(|| self.bind_group(pipeline, &windows(&buffers, slots)));
            (buffers, staging, clear, group, map_failed)
        })?;
        if let Some(e) = failed {
            return Err(WgpuError::Map(format!("upload mapping failed: {e}")));
        }
        let bind_group = match group {
            Some(g) => g,
            None => {
                let make = |key: &[Binding]| self.scoped("bind group", || self.bind_group(pipeline, key));
                let key = windows(&buffers, slots);
                // Only a call binding nothing but device tensors' buffers and cached uniforms
                // can recur; caching any other would keep its one-off buffers alive. Without a
                // pool no output buffer recurs either.
                let recurs = slots.iter().all(|s| matches!(s, Slot::Resident { .. } | Slot::UniformBuffer(_) | Slot::Output { .. }));
                if recurs && self.link.pool.limit() > 0 {
                    pipeline.binds.get_or_make(key, &self.binds, make)?
                } else {
                    self.binds.note_built();
                    make(&key)?
                }
            }
        };
        Ok(Bound { buffers, staging, clear, bind_group })
    }

    /// A new bind group binding each `(buffer, offset, size)` (`size` 0: the whole buffer) at
    /// its index. Call inside an error scope.
    fn bind_group(&self, pipeline: &Pipeline, windows: &[Binding]) -> wgpu::BindGroup {
        let entries: Vec<wgpu::BindGroupEntry> = windows
            .iter()
            .enumerate()
            .map(|(i, (b, offset, size))| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: match std::num::NonZeroU64::new(*size) {
                    Some(size) => wgpu::BindingResource::Buffer(wgpu::BufferBinding { buffer: b, offset: *offset, size: Some(size) }),
                    None => b.as_entire_binding(),
                },
            })
            .collect();
        self.device.create_bind_group(&wgpu::BindGroupDescriptor { label: None, layout: &pipeline.layout, entries: &entries })
    }

    /// Encodes the clearing of pooled outputs, the dispatch (none for `None`: an empty launch)
    /// and the copies to staging, submits, and requests the staging maps.
    fn dispatch(
        &self,
        pipeline: &Pipeline,
        bound: &Bound,
        groups: Option<[u32; 3]>,
        sizes: &[u64],
    ) -> Result<(wgpu::SubmissionIndex, MapReceiver), WgpuError> {
        let (tx, rx) = mpsc::channel();
        let submission = self.scoped("dispatch", || {
            let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
            for &i in &bound.clear {
                encoder.clear_buffer(&bound.buffers[i], 0, None);
            }
            if let Some([x, y, z]) = groups {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes: None });
                pass.set_pipeline(&pipeline.pipeline);
                pass.set_bind_group(0, &bound.bind_group, &[]);
                pass.dispatch_workgroups(x, y, z);
            }
            for (i, st) in &bound.staging {
                encoder.copy_buffer_to_buffer(&bound.buffers[*i], 0, st, 0, sizes[*i]);
            }
            let index = self.queue.submit(Some(encoder.finish()));
            for (n, (_, st)) in bound.staging.iter().enumerate() {
                let tx = tx.clone();
                st.map_async(wgpu::MapMode::Read, .., move |r| {
                    let _ = tx.send((n, r));
                });
            }
            index
        })?;
        Ok((submission, rx))
    }

    /// Waits for the submission of a launch of `geometry`, for at most the engine's wait limit
    /// for its invocations (`wait::Waits`): past it, `TimedOut` and the device is hung. A
    /// panic inside wgpu's poll becomes `DeviceLost`.
    fn wait(&self, submission: wgpu::SubmissionIndex, geometry: Geometry) -> Result<(), WgpuError> {
        let invocations = invocations(geometry);
        let what = format!("a launch of {invocations} invocation(s)");
        match self.link.waits.wait(&self.device, submission, invocations, &what) {
            Err(Stall::Panicked(msg)) => {
                self.check_lost()?;
                Err(WgpuError::DeviceLost(msg))
            }
            other => other.map_err(WgpuError::from),
        }
    }

    /// How long a wait on the device lasts before it is a [`WgpuError::TimedOut`], for a launch
    /// of up to 2^24 invocations: 30 s unless set. A wait lasts this long per 2^24 invocations
    /// begun, counting the launches on device tensors submitted before it without a wait (a
    /// readback waits for them too).
    pub fn wait_timeout(&self) -> std::time::Duration {
        self.link.waits.timeout()
    }

    /// Sets [`WgpuEngine::wait_timeout`] (at least 1 ms) for every later wait on this engine and
    /// its device tensors: longer for kernels known to run long, shorter to give up sooner on a
    /// kernel that may never end. After a wait times out the engine refuses new work
    /// ([`WgpuError::Hung`]) until the late launch finishes.
    pub fn set_wait_timeout(&self, timeout: std::time::Duration) {
        self.link.waits.set_timeout(timeout);
    }

    /// The read-back slots' bytes, once every staging map has completed.
    fn read_back(&self, bound: &Bound, rx: MapReceiver, slots: &[Slot<'_>]) -> Result<Vec<Vec<u8>>, WgpuError> {
        // Map callbacks run on whichever thread polls the device: another thread's poll may have
        // taken them and still be running them when our wait returns, so wait for each one
        // (bounded), polling again meanwhile.
        let mut mapped = vec![false; bound.staging.len()];
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while mapped.iter().any(|m| !m) && std::time::Instant::now() < deadline {
            match rx.recv_timeout(std::time::Duration::from_millis(2)) {
                Ok((n, Ok(()))) => mapped[n] = true,
                Ok((n, Err(e))) => return Err(WgpuError::Map(format!("map_async of read-write slot {}: {e}", bound.staging[n].0))),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    self.check_lost()?;
                    let _ = catch_unwind(AssertUnwindSafe(|| self.device.poll(wgpu::PollType::Poll)));
                }
            }
        }
        let mut out = Vec::with_capacity(bound.staging.len());
        for (n, (i, st)) in bound.staging.iter().enumerate() {
            if !mapped[n] {
                self.check_lost()?;
                return Err(WgpuError::Map(format!("read-write slot {i}: map callback did not run after the device wait")));
            }
            let len = slots[*i].len();
            let bytes = {
                let view = st.get_mapped_range(..).map_err(|e| WgpuError::Map(format!("read-write slot {i}: {e}")))?;
                view[..len].to_vec()
            };
            st.unmap();
            self.link.counters.down(bytes.len() as u64);
            out.push(bytes);
        }
        Ok(out)
    }
}

/// `Tensor::to_device(&engine)`: one counted upload into a new buffer of this engine's device.
impl Device for WgpuEngine {
    fn id(&self) -> DeviceId {
        self.link().device_id()
    }
    fn upload(&self, t: &Tensor) -> Result<Tensor, TensorError> {
        crate::resident::upload_to(self.link().device_id(), t, |bytes| self.upload_bytes(bytes).map_err(|e| e.to_string()))
    }
}

/// The invocations of a launch.
fn invocations(g: Geometry) -> u64 {
    g.threads.saturating_mul(g.yz[0]).saturating_mul(g.yz[1])
}

/// What each slot binds: its buffer and window (`size` 0: the whole buffer).
fn windows(buffers: &[wgpu::Buffer], slots: &[Slot<'_>]) -> Vec<Binding> {
    buffers
        .iter()
        .zip(slots)
        .map(|(b, s)| match *s {
            Slot::Guarded { offset, size, .. } => (b.clone(), offset, size),
            _ => (b.clone(), 0, 0),
        })
        .collect()
}

/// The device objects of one launch: buffers in slot order, staging buffers of the read-back
/// slots (with their slot index), the slots whose (pooled) buffers must be cleared before the
/// kernel runs, and the bind group.
struct Bound {
    buffers: Vec<wgpu::Buffer>,
    staging: Vec<(usize, wgpu::Buffer)>,
    clear: Vec<usize>,
    bind_group: wgpu::BindGroup,
}

/// Receives `(staging index, map result)` from the staging buffers' map callbacks.
type MapReceiver = mpsc::Receiver<(usize, Result<(), wgpu::BufferAsyncError>)>;

#[cfg(test)]
mod tests {
    use super::*;

    fn engine() -> Option<&'static WgpuEngine> {
        match WgpuEngine::shared() {
            Ok(e) => Some(e),
            Err(e) => {
                use op_core::require::REQUIRE_GPU_ENV;
                if std::env::var(REQUIRE_GPU_ENV).as_deref() == Ok("1") {
                    panic!("{REQUIRE_GPU_ENV}=1 but no wgpu engine: {e}");
                }
                eprintln!("skipping wgpu test: {e}");
                None
            }
        }
    }

    fn key(tag: &str) -> [u8; 32] {
        *blake3::hash(tag.as_bytes()).as_bytes()
    }

    const ADD: &str = r#"
struct Params { n: u32 }
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

@compute @workgroup_size(64)
fn add(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= params.n) { return; }
    out[i] = a[i] + b[i];
}
"#;

    fn bytes_to<T: bytemuck::Pod>(b: &[u8]) -> Vec<T> {
        b.chunks_exact(std::mem::size_of::<T>()).map(bytemuck::pod_read_unaligned).collect()
    }

    fn f32s(v: &[f32]) -> Vec<u8> {
        bytemuck::cast_slice(v).to_vec()
    }

    fn run_add(e: &WgpuEngine, k: [u8; 32], n: usize) -> Vec<f32> {
        let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let b: Vec<f32> = (0..n).map(|i| 0.5 * i as f32 + 1.0).collect();
        let out = vec![-7.0f32; n];
        let params = (n as u32).to_le_bytes();
        let res = e
            .run(
                k,
                ADD,
                "add",
                [64, 1, 1],
                &[Slot::Read(&f32s(&a)), Slot::Read(&f32s(&b)), Slot::ReadWrite(&f32s(&out)), Slot::Uniform(&params)],
                n as u64,
            )
            .expect("add kernel runs");
        assert_eq!(res.len(), 1);
        assert_eq!(res[0].len(), n * 4);
        let got: Vec<f32> = bytes_to(&res[0]);
        for i in 0..n {
            assert_eq!(got[i], a[i] + b[i], "index {i}");
        }
        got
    }

    /// All of `buffer`'s bytes (padding included), copied to a staging buffer and mapped.
    fn read_all(e: &WgpuEngine, buffer: &wgpu::Buffer) -> Vec<u8> {
        let usage = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
        let st = e.device.create_buffer(&wgpu::BufferDescriptor { label: None, size: buffer.size(), usage, mapped_at_creation: false });
        let mut enc = e.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        enc.copy_buffer_to_buffer(buffer, 0, &st, 0, buffer.size());
        e.queue.submit(Some(enc.finish()));
        st.map_async(wgpu::MapMode::Read, .., |r| r.expect("maps"));
        e.device.poll(wgpu::PollType::wait_indefinitely()).expect("poll");
        st.get_mapped_range(..).expect("mapped").to_vec()
    }

    #[test]
    fn an_upload_into_a_pooled_buffer_leaves_no_stale_byte_in_its_padding() {
        let Some(_) = engine() else { return };
        let e = WgpuEngine::new().expect("engine");
        // 20 bytes of 0xff leave a 20-byte buffer in the pool; 19 bytes reuse it (padded to 20):
        // the padding byte is zero again, as in a fresh buffer (a kernel binds all 20).
        drop(e.upload_bytes(&[0xff; 20]).expect("dirty"));
        let t = e.upload_bytes(&[7; 19]).expect("upload");
        assert_eq!(e.pool_stats().reused, 1, "the upload took the pooled buffer");
        let mut want = vec![7u8; 19];
        want.push(0);
        assert_eq!(read_all(&e, t.buffer()), want);
    }

    #[test]
    fn engine_is_send_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<WgpuEngine>();
    }

    #[test]
    fn add_kernel_runs() {
        let Some(e) = engine() else { return };
        run_add(e, key("add-kernel-runs"), 1000);
        run_add(e, key("add-kernel-runs"), 1);
        assert!(e.take_uncaptured_errors().is_empty());
    }

    #[test]
    fn add_kernel_one_million() {
        let Some(e) = engine() else { return };
        run_add(e, key("add-kernel-1m"), 1 << 20);
    }

    #[test]
    fn pipeline_cache_counter() {
        let Some(e) = engine() else { return };
        // Other tests build pipelines concurrently: look at this key only, via the delta of a
        // second call being zero.
        let k = key("pipeline-cache-counter");
        run_add(e, k, 100);
        run_add(e, k, 33);
        // A fresh engine (not shared with the concurrently running tests) observes the counter
        // exactly.
        let fresh = WgpuEngine::new().expect("second engine");
        run_add(&fresh, k, 10);
        assert_eq!(fresh.pipelines_built(), 1);
        run_add(&fresh, k, 20);
        assert_eq!(fresh.pipelines_built(), 1);
    }

    #[test]
    fn invalid_wgsl_is_validation_error() {
        let Some(e) = engine() else { return };
        let src = "@compute @workgroup_size(1) fn main() { let x: u32 = ; }";
        let err = e.run(key("invalid-wgsl"), src, "main", [1, 1, 1], &[], 1).expect_err("invalid WGSL");
        eprintln!("invalid WGSL -> {err}");
        match &err {
            WgpuError::Validation { what, message } => {
                assert_eq!(what, "shader module");
                assert!(!message.is_empty());
            }
            other => panic!("expected Validation, got {other:?}"),
        }
        // Not cached: a second call fails again the same way.
        let err2 = e.run(key("invalid-wgsl"), src, "main", [1, 1, 1], &[], 1).expect_err("still invalid");
        assert!(matches!(err2, WgpuError::Validation { .. }));
        assert!(e.take_uncaptured_errors().is_empty());
    }

    #[test]
    fn layout_mismatch_is_validation_error() {
        let Some(e) = engine() else { return };
        // The shader declares a read_write buffer, the caller binds it read-only.
        let src = "@group(0) @binding(0) var<storage, read_write> x: array<u32>;\n\
                   @compute @workgroup_size(1) fn main() { x[0] = 1u; }";
        let err = e.run(key("layout-mismatch"), src, "main", [1, 1, 1], &[Slot::Read(&[0; 4])], 1).expect_err("mismatch");
        eprintln!("layout mismatch -> {err}");
        match err {
            WgpuError::Validation { what, .. } => assert_eq!(what, "compute pipeline"),
            other => panic!("expected Validation, got {other:?}"),
        }
        // Missing entry point.
        let err = e.run(key("missing-entry"), src, "nope", [1, 1, 1], &[Slot::ReadWrite(&[0; 4])], 1).expect_err("entry");
        assert!(matches!(err, WgpuError::Validation { .. }), "{err:?}");
    }

    #[test]
    fn guard_band_writes_are_observable() {
        let Some(e) = engine() else { return };
        // Writes out[i + 1]: with n threads over an n + 1 element buffer (n outputs + one guard
        // canary), the canary changes.
        let src = r#"
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(64)
fn shifted(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= 10u) { return; }
    out[i + 1u] = i + 100u;
}
"#;
        let canary = 0xDEAD_BEEFu32;
        let init = vec![canary; 11];
        let res = e.run(key("guard-band"), src, "shifted", [64, 1, 1], &[Slot::ReadWrite(bytemuck::cast_slice(&init))], 10).expect("runs");
        let got: Vec<u32> = bytes_to(&res[0]);
        assert_eq!(got.len(), 11);
        assert_eq!(got[0], canary, "element 0 is never written");
        assert_eq!(got[10], 109, "the guard element (last) was overwritten and is observable");
    }

    #[test]
    fn guarded_slot_binds_a_window_and_reads_back_everything() {
        let Some(e) = engine() else { return };
        // Writes out[i + 1] for i < n: the last write lands one past the output. Bound as a
        // window after an aligned front guard, with the back guard inside the binding, that
        // write reaches the canaries instead of being clamped or dropped by bounds checks.
        let src = r#"
struct P { n: u32 }
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var<uniform> p: P;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.n) { return; }
    out[i + 1u] = arrayLength(&out);
}
"#;
        let align = e.storage_offset_alignment();
        assert!(align >= 4 && align.is_power_of_two());
        let canary = 0xA5A5_A5A5u32;
        let (n, guard) = (10u64, 4u64);
        let front = align; // >= the guard's 16 bytes
        let total = front + (n + guard) * 4;
        let init = vec![0xA5u8; total as usize];
        let res = e
            .run(
                key("guarded-window"),
                src,
                "main",
                [64, 1, 1],
                &[Slot::Guarded { init: &init, offset: front, size: (n + guard) * 4 }, Slot::Uniform(&(n as u32).to_le_bytes())],
                n,
            )
            .expect("runs");
        assert_eq!(res[0].len(), total as usize, "the whole buffer comes back");
        let words: Vec<u32> = bytes_to(&res[0]);
        let base = (front / 4) as usize;
        assert!(words[..base].iter().all(|w| *w == canary), "nothing before the window is touched");
        assert_eq!(words[base], canary, "out[0] is never written by this kernel");
        assert_eq!(words[base + 1], (n + guard) as u32, "arrayLength covers data and back guard");
        assert_eq!(words[base + n as usize], (n + guard) as u32, "the write past the end lands on the first back canary");
        assert_eq!(words[base + n as usize + 1], canary);
        // A misaligned or out-of-range window is a typed error, not a panic.
        let err = e
            .run(
                key("guarded-window"),
                src,
                "main",
                [64, 1, 1],
                &[Slot::Guarded { init: &init, offset: 4, size: 8 }, Slot::Uniform(&[0; 4])],
                1,
            )
            .expect_err("misaligned");
        assert!(matches!(err, WgpuError::InvalidLaunch(_)), "{err:?}");
        let err = e
            .run(
                key("guarded-window"),
                src,
                "main",
                [64, 1, 1],
                &[Slot::Guarded { init: &init, offset: front, size: total }, Slot::Uniform(&[0; 4])],
                1,
            )
            .expect_err("past the buffer");
        assert!(matches!(err, WgpuError::InvalidLaunch(_)), "{err:?}");
    }

    #[test]
    fn prepare_builds_once_and_reports_validation_errors() {
        let Some(_) = engine() else { return };
        let fresh = WgpuEngine::new().expect("engine");
        let kinds = [SlotKind::Read, SlotKind::Read, SlotKind::ReadWrite, SlotKind::Uniform];
        fresh.prepare(key("prepare"), ADD, "add", &kinds).expect("builds");
        fresh.prepare(key("prepare"), ADD, "add", &kinds).expect("cached");
        assert_eq!(fresh.pipelines_built(), 1);
        let err = fresh.prepare(key("prepare-bad"), "fn (", "main", &[]).expect_err("invalid");
        assert!(matches!(err, WgpuError::Validation { .. }), "{err:?}");
    }

    #[test]
    fn odd_sizes_are_padded_and_trimmed() {
        let Some(e) = engine() else { return };
        let src = r#"
@group(0) @binding(0) var<storage, read> a: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<storage, read_write> empty: array<u32>;
@compute @workgroup_size(1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    out[0] = a[0] + 1u;
    empty[0] = 5u;
}
"#;
        let res = e
            .run(
                key("odd-sizes"),
                src,
                "main",
                [1, 1, 1],
                &[Slot::Read(&[1, 0, 0]), Slot::ReadWrite(&[9, 9, 9, 9, 9, 9]), Slot::ReadWrite(&[])],
                1,
            )
            .expect("runs");
        assert_eq!(res, vec![vec![2, 0, 0, 0, 9, 9], vec![]]);
    }

    #[test]
    fn zero_threads_returns_initial_contents() {
        let Some(e) = engine() else { return };
        let init = f32s(&[1.0, 2.0, 3.0]);
        let res = e
            .run(
                key("zero-threads"),
                ADD,
                "add",
                [64, 1, 1],
                &[Slot::Read(&[]), Slot::Read(&[]), Slot::ReadWrite(&init), Slot::Uniform(&0u32.to_le_bytes())],
                0,
            )
            .expect("zero threads");
        assert_eq!(res, vec![init]);
    }

    #[test]
    fn too_many_workgroups_is_typed_error() {
        let Some(e) = engine() else { return };
        let max = u64::from(e.raw().limits().max_compute_workgroups_per_dimension);
        let threads = (max + 1) * 64;
        let err = e
            .run(
                key("too-many"),
                ADD,
                "add",
                [64, 1, 1],
                &[Slot::Read(&[]), Slot::Read(&[]), Slot::ReadWrite(&[]), Slot::Uniform(&[0; 4])],
                threads,
            )
            .expect_err("too many workgroups");
        match err {
            WgpuError::TooLarge { requested, limit, .. } => {
                assert_eq!(requested, max + 1);
                assert_eq!(limit, max);
            }
            other => panic!("expected TooLarge, got {other:?}"),
        }
        // A 2-D workgroup beyond the device's invocations per workgroup, and an empty dimension.
        let err = e.run(key("too-many"), ADD, "add", [1024, 1024, 1], &[], 1).expect_err("huge 2-D workgroup");
        assert!(matches!(err, WgpuError::TooLarge { .. }), "{err:?}");
        let err = e.run(key("too-many"), ADD, "add", [8, 0, 1], &[], 1).expect_err("empty workgroup dimension");
        assert!(matches!(err, WgpuError::InvalidLaunch(_)), "{err:?}");
        let err = e.run(key("too-many"), ADD, "add", [u32::MAX, u32::MAX, 2], &[], 1).expect_err("no overflow panic");
        assert!(matches!(err, WgpuError::TooLarge { .. }), "{err:?}");
    }

    #[test]
    fn linear_launches_run_in_rows() {
        let Some(e) = engine() else { return };
        let max = e.raw().limits().max_compute_workgroups_per_dimension;
        let lin = |threads: u64, row: Option<u32>| e.grid(Geometry { wg: [64, 1, 1], threads, yz: [1, 1], launch: Launch::Linear, row });
        // Within one row: a single row of exactly the workgroups needed.
        assert_eq!(lin(1000, None).expect("fits"), [16, 1, 1]);
        // Past the per-dimension limit: full rows, as many as needed.
        let groups = u64::from(max) * 3 + 5;
        assert_eq!(lin(groups * 64, None).expect("fits"), [max, 4, 1]);
        // Narrow rows (conformance): one workgroup per row.
        assert_eq!(lin(1000, Some(1)).expect("fits"), [1, 16, 1]);
        // A flat kernel past the limit is refused; a linear one past max x max too.
        assert!(matches!(e.grid(Geometry::flat([64, 1, 1], groups * 64)), Err(WgpuError::TooLarge { .. })));
        let too_many = (u64::from(max) * u64::from(max) + 1) * 64;
        assert!(matches!(lin(too_many, None), Err(WgpuError::TooLarge { .. })));
        // A 2-D launch: ceil(extent / size) workgroups along each dimension; a linear kernel
        // is never launched over several dimensions; one dimension past the limit is refused.
        let grid = |wg: [u32; 3], threads: u64, yz: [u64; 2]| e.grid(Geometry { wg, threads, yz, launch: Launch::Flat, row: None });
        assert_eq!(grid([8, 8, 1], 77, [300, 1]).expect("fits"), [10, 38, 1]);
        assert_eq!(grid([4, 4, 4], 13, [9, 5]).expect("fits"), [4, 3, 2]);
        assert!(matches!(grid([8, 8, 1], 1, [(u64::from(max) + 1) * 8, 1]), Err(WgpuError::TooLarge { .. })));
        let linear_2d = Geometry { wg: [8, 8, 1], threads: 8, yz: [8, 1], launch: Launch::Linear, row: None };
        assert!(matches!(e.grid(linear_2d), Err(WgpuError::InvalidLaunch(_))));
        assert!(matches!(lin(too_many / 64, Some(1)), Err(WgpuError::TooLarge { .. })));
    }

    #[test]
    fn buffer_over_limit_is_typed_error() {
        let Some(e) = engine() else { return };
        let limit = e.raw().limits().max_storage_buffer_binding_size.min(e.raw().limits().max_buffer_size);
        if limit > 1 << 30 {
            eprintln!("storage binding limit {limit} B too large to exceed in a test; skipped");
            return;
        }
        let big = vec![0u8; limit as usize + 1]; // zeroed: not touched, never uploaded
        let err = e.run(key("too-big"), ADD, "add", [64, 1, 1], &[Slot::Read(&big)], 1).expect_err("over limit");
        match err {
            WgpuError::TooLarge { requested, limit: l, .. } => {
                assert_eq!(requested, limit + 4);
                assert_eq!(l, limit);
            }
            other => panic!("expected TooLarge, got {other:?}"),
        }
        let uniform = vec![0u8; e.raw().limits().max_uniform_buffer_binding_size as usize + 1];
        let err = e.run(key("too-big"), ADD, "add", [64, 1, 1], &[Slot::Uniform(&uniform)], 1).expect_err("uniform over limit");
        assert!(matches!(err, WgpuError::TooLarge { .. }), "{err:?}");
    }

    #[test]
    fn key_reuse_with_other_source_is_refused() {
        let Some(e) = engine() else { return };
        let a = "@compute @workgroup_size(1) fn main() {}";
        let b = "@compute @workgroup_size(2) fn main() {}";
        e.run(key("key-reuse"), a, "main", [1, 1, 1], &[], 1).expect("a runs");
        let err = e.run(key("key-reuse"), b, "main", [2, 1, 1], &[], 1).expect_err("b refused");
        assert!(matches!(err, WgpuError::KeyMismatch { .. }), "{err:?}");
    }

    #[test]
    fn concurrent_runs() {
        let Some(e) = engine() else { return };
        std::thread::scope(|s| {
            for t in 0..4 {
                s.spawn(move || {
                    for _ in 0..5 {
                        run_add(e, key("concurrent"), 257 + t);
                    }
                    // An invalid shader on this thread does not leak into others.
                    let err = e.run(key(&format!("bad{t}")), "fn (", "main", [1, 1, 1], &[], 1).expect_err("bad");
                    assert!(matches!(err, WgpuError::Validation { .. }));
                });
            }
        });
    }

    /// Compares `run` with a minimal hand-written wgpu program (same device, pipeline built
    /// once) on a 1M-element add. Run with
    /// `cargo test --release -p op-runtime --lib gpu::wgpu_engine -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn bench_vs_minimal_wgpu() {
        use wgpu::util::DeviceExt;
        let Some(e) = engine() else { return };
        let n = 1usize << 20;
        let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let b: Vec<f32> = (0..n).map(|i| 2.0 * i as f32).collect();
        let out = vec![0f32; n];
        let (ab, bb, ob) = (f32s(&a), f32s(&b), f32s(&out));
        let params = {
            let mut p = (n as u32).to_le_bytes().to_vec();
            p.resize(16, 0);
            p
        };
        let k = key("bench-add");
        let engine_once = || {
            e.run(k, ADD, "add", [64, 1, 1], &[Slot::Read(&ab), Slot::Read(&bb), Slot::ReadWrite(&ob), Slot::Uniform(&params)], n as u64)
                .expect("engine run")
                .remove(0)
        };

        let d = &e.device;
        let q = &e.queue;
        let module = d.create_shader_module(wgpu::ShaderModuleDescriptor { label: None, source: wgpu::ShaderSource::Wgsl(ADD.into()) });
        let pipeline = d.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: None,
            layout: None,
            module: &module,
            entry_point: Some("add"),
            compilation_options: Default::default(),
            cache: None,
        });
        let bgl = pipeline.get_bind_group_layout(0);
        let minimal_once = || {
            let s = wgpu::BufferUsages::STORAGE;
            let ba = d.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: None, contents: &ab, usage: s });
            let bbuf = d.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: None, contents: &bb, usage: s });
            let bo = d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: None,
                contents: &ob,
                usage: s | wgpu::BufferUsages::COPY_SRC,
            });
            let bp = d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: None,
                contents: &params,
                usage: wgpu::BufferUsages::UNIFORM,
            });
            let st = d.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size: ob.len() as u64,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let bg = d.create_bind_group(&wgpu::BindGroupDescriptor {
                label: None,
                layout: &bgl,
                entries: &[
                    wgpu::BindGroupEntry { binding: 0, resource: ba.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 1, resource: bbuf.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 2, resource: bo.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 3, resource: bp.as_entire_binding() },
                ],
            });
            let mut enc = d.create_command_encoder(&Default::default());
            {
                let mut pass = enc.begin_compute_pass(&Default::default());
                pass.set_pipeline(&pipeline);
                pass.set_bind_group(0, &bg, &[]);
                pass.dispatch_workgroups((n as u32).div_ceil(64), 1, 1);
            }
            enc.copy_buffer_to_buffer(&bo, 0, &st, 0, ob.len() as u64);
            q.submit(Some(enc.finish()));
            st.map_async(wgpu::MapMode::Read, .., |r| r.expect("map"));
            d.poll(wgpu::PollType::wait_indefinitely()).expect("poll");
            let v = st.get_mapped_range(..).expect("range").to_vec();
            st.unmap();
            v
        };
        assert_eq!(engine_once(), minimal_once());
        let time = |f: &dyn Fn() -> Vec<u8>| {
            let mut t: Vec<f64> = (0..30)
                .map(|_| {
                    let s = std::time::Instant::now();
                    std::hint::black_box(f());
                    s.elapsed().as_secs_f64()
                })
                .collect();
            t.sort_by(f64::total_cmp);
            t[t.len() / 2]
        };
        for round in 0..2 {
            let m = time(&minimal_once);
            let en = time(&engine_once);
            eprintln!("round {round}: minimal {:.3} ms, engine {:.3} ms, ratio {:.3}", m * 1e3, en * 1e3, en / m);
        }
    }

    #[test]
    fn profile_names_the_adapter() {
        let Some(e) = engine() else { return };
        let p = e.profile();
        assert_eq!(p.backend, BackendKind::Wgpu);
        assert!(!p.adapter.is_empty());
        assert!(!p.driver.is_empty());
        let l = e.raw().limits();
        eprintln!(
            "wgpu profile: {p} ({:?}, {:?}); limits: storage binding {} B, buffer {} B, workgroups/dim {}, wg x {}",
            e.raw().adapter_info().device_type,
            e.raw().adapter_info().backend,
            l.max_storage_buffer_binding_size,
            l.max_buffer_size,
            l.max_compute_workgroups_per_dimension,
            l.max_compute_workgroup_size_x
        );
    }
}
