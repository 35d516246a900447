//! Low-level wgpu engine: adapter discovery, WGSL pipeline cache, buffer upload, one compute
//! dispatch and readback. It knows nothing of ops or contracts: a caller hands it WGSL source,
//! an entry point, a workgroup size, the binding slots and a thread count.
//!
//! Every wgpu call that can raise a GPU error runs inside error scopes
//! (validation, out-of-memory, internal) on the calling thread, so such errors come back as
//! typed [`WgpuError`]s instead of being logged or turning into wgpu's default panic. An
//! uncaptured-error handler is installed as well (wgpu's default one panics); errors it sees
//! are recorded and can be drained with [`WgpuEngine::take_uncaptured_errors`].

//!
//! This file holds the engine itself (its device, queue and counters, buffers for device
//! tensors and uniforms); the rest is in modules by what each owns: `adapter` (which adapter,
//! its profile), `error` (typed errors, error scopes, the device-lost watch), `pipeline` (the
//! pipeline cache and compilation), `slot` (what a launch binds, its geometry) and `launch`
//! (grid, bind groups, dispatch, wait, readback).

mod adapter;
mod error;
mod launch;
mod pipeline;
mod slot;

pub use error::WgpuError;
pub use pipeline::Pipeline;
pub use slot::{Geometry, Slot, SlotKind};

use super::behaviour::{self, Behaviour};
use super::bind_cache::{BindCounters, BindStats};
use super::pool::PoolStats;
use super::resident::{padded, Link, Transfers, WgpuBuffer, TENSOR_USAGE};
use adapter::{choose_adapter, wgpu_profile};
use error::watch_errors;
use op_core::device::DeviceId;
use op_core::device::DeviceProfile;
use op_core::error::TensorError;
use op_core::tensor::Device;
use op_core::tensor::Tensor;
use pipeline::PipelineCache;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

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

fn round_up(n: u64, to: u64) -> u64 {
    n.div_ceil(to).max(1) * to
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

#[cfg(test)]
mod tests {
    use super::*;
    use op_core::decl::Launch;
    use op_core::kind::BackendKind;

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
    /// once) on a 1M-element add. Run with (from `op-backends/`)
    /// `cargo test --release --lib wgpu::engine::tests::bench_vs_minimal_wgpu -- --ignored --nocapture`.
    #[test]
    #[ignore = "a timing comparison, meant for release builds: run by hand (command above)"]
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
