//! The wgpu backend: runs an op's WGSL kernel through the shared `WgpuEngine`. `prepare`
//! resolves the binding descriptor into a launch plan and builds the pipeline, which the
//! prepared kernel holds; a call marshals through the plan (inputs read-only storage, outputs
//! read-write storage, one 4-byte uniform field per dim or param in descriptor order) and
//! launches `ceil(threads / workgroup_size)` workgroups. Guarded runs (conformance) bind each
//! output as a window after an aligned front guard (which no WGSL index can reach), with the
//! back guard and a far band of canaries (`FAR_GUARD_BYTES`) inside the binding: a write past
//! the end lands on canaries, whether the adapter discards writes past a binding (then up to
//! the far band's end) or clamps them into it (then anywhere: onto the last canary). A write in
//! the far band is reported on the back guard's last canary, so conformance sees a write past
//! the end. What no band can catch is in the device profile (`behaviour`).

use super::behaviour::FAR_GUARD_BYTES;
use super::engine::{Geometry, Pipeline, Slot, SlotKind, WgpuEngine, WgpuError};
use super::resident::WgpuBuffer;
use crate::launch::{Arg, LaunchPlan};
use crate::resident;
use op_contract::contract::KernelLang;
use op_core::backend::{Backend, BackendError, Cause, ExecRequest, Prepared, CANARY_BYTE};
use op_core::decl::Launch;
use op_core::device::DeviceProfile;
use op_core::kind::BackendKind;
use op_core::op::RegisteredOp;
use op_core::tensor::Tensor;
use std::sync::{Arc, Mutex, OnceLock};

/// Uniform blocks a prepared kernel keeps on the device for calls on device tensors, by their
/// bytes (most recent last): a chain called again with the same dims and parameters writes no
/// uniform.
const UNIFORM_CACHE: usize = 8;

/// The wgpu backend, on the process-wide engine (`Default`) or on a given one.
#[derive(Default)]
pub struct WgpuBackend {
    profile: OnceLock<Result<Arc<DeviceProfile>, BackendError>>,
    on: Option<&'static WgpuEngine>,
}

impl WgpuBackend {
    /// The backend on a given engine (e.g. one created with fewer optional features).
    pub fn on(engine: &'static WgpuEngine) -> WgpuBackend {
        WgpuBackend { profile: OnceLock::new(), on: Some(engine) }
    }

    fn engine(&self) -> Result<&'static WgpuEngine, BackendError> {
        match self.on {
            Some(e) => Ok(e),
            None => WgpuEngine::shared().map_err(BackendError::from),
        }
    }
}

impl From<WgpuError> for BackendError {
    /// Its category, with the `WgpuError` itself as the cause ([`Cause::error`]).
    fn from(e: WgpuError) -> BackendError {
        match &e {
            WgpuError::NoAdapter { .. } | WgpuError::RequestDevice(_) => BackendError::Unavailable(Cause::of(e)),
            WgpuError::TooLarge { .. } => BackendError::TooLarge(Cause::of(e)),
            WgpuError::Validation { what, .. } if what == "shader module" || what == "compute pipeline" => {
                BackendError::Compile(Cause::of(e))
            }
            _ => BackendError::Launch(Cause::of(e)),
        }
    }
}

impl Backend for WgpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Wgpu
    }
    fn availability(&self) -> Result<(), BackendError> {
        self.profile().map(|_| ())
    }
    fn profile(&self) -> Result<Arc<DeviceProfile>, BackendError> {
        self.profile.get_or_init(|| self.engine().map(|e| Arc::new(e.profile().clone()))).clone()
    }
    fn is_software(&self) -> bool {
        self.engine().map(|e| e.is_software()).unwrap_or(false)
    }
    fn supports(&self, op: &RegisteredOp) -> Result<(), BackendError> {
        let k = crate::launch::gpu_kernel(op, KernelLang::Wgsl)?;
        // A kernel on `f16` needs `shader-f16`: refused here, before anything is built or
        // uploaded, where the device lacks it (an unavailable engine is `availability`'s to say).
        if let Ok(engine) = self.engine() {
            if needs_f16(op, k) && !engine.supports_f16() {
                return Err(BackendError::MissingFeature {
                    feature: "shader-f16".into(),
                    device: engine.profile().adapter.clone(),
                    hint: "run the op on another backend (CPU, CUDA) or on an adapter with 16-bit float shaders".into(),
                });
            }
        }
        Ok(())
    }
    fn prepare(&self, op: &Arc<RegisteredOp>) -> Result<Arc<dyn Prepared>, BackendError> {
        let plan = LaunchPlan::new(op, KernelLang::Wgsl)?;
        let src =
            op.decl.kernels.get(plan.kernel).ok_or_else(|| BackendError::Unsupported("the op's WGSL source is not embedded".into()))?;
        let text = op.kernel_text(plan.kernel).map_err(|m| BackendError::Compile(m.into()))?;
        let source = text.as_str();
        let kinds: Vec<SlotKind> = plan
            .slot_writable()
            .map(|w| match w {
                Some(true) => SlotKind::ReadWrite,
                Some(false) => SlotKind::Read,
                None => SlotKind::Uniform,
            })
            .collect();
        // Built now (cached by content hash on this device), so compilation and validation
        // errors surface from `prepare`, never from a later call.
        let engine = self.engine()?;
        let pipeline = engine.prepare(op.cache_hash(), source, src.entry, &kinds)?;
        Ok(Arc::new(WgpuPrepared {
            engine,
            hash: op.hash,
            plan,
            pipeline,
            workgroup: src.workgroup_size,
            launch: src.launch,
            uniforms: Mutex::new(Vec::new()),
        }))
    }
}

/// Whether the op's WGSL kernel `k` uses `f16`: it binds an `f16` tensor, or its source enables
/// the extension (`enable f16;`).
fn needs_f16(op: &RegisteredOp, k: usize) -> bool {
    let sig = &op.contract.signature;
    let binds_f16 = op.contract.kernels.get(k).is_some_and(|kernel| {
        kernel.bindings.iter().any(|b| match b {
            op_contract::contract::Binding::Buffer { name, .. } => {
                sig.inputs().chain(&sig.outputs).any(|t| &t.name == name && t.dtype == op_contract::contract::DType::f16)
            }
            op_contract::contract::Binding::Uniform { .. } => false,
        })
    });
    // The text as compiled (an instance of a generic op on `f16` gets `enable f16;` from its
    // prelude).
    let enables = op.kernel_text(k).is_ok_and(|text| {
        text.split([';', '\n']).any(|l| {
            let l = l.trim_start();
            l.starts_with("enable") && l.trim_end_matches(';').split([' ', ',']).any(|w| w == "f16")
        })
    });
    binds_f16 || enables
}

/// Where a guarded output lives in its device buffer: `front` bytes before the data (a multiple
/// of the storage offset alignment, at least the front guard), `data` bytes, the back guard,
/// then `far` canary bytes; the binding window starts at `front` and covers data, back guard
/// and far band, to the buffer's end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GuardLayout {
    #[doc(hidden)]
    pub front: u64,
    #[doc(hidden)]
    pub data: u64,
    #[doc(hidden)]
    pub guard: u64,
    #[doc(hidden)]
    pub far: u64,
    #[doc(hidden)]
    pub total: u64,
    #[doc(hidden)]
    pub window: u64,
}

impl GuardLayout {
    /// The layout of `data` bytes with `guard` bytes of guard band on each side and a far band
    /// of up to `FAR_GUARD_BYTES`, within a binding of at most `max_window` bytes (the far
    /// band shrinks to fit; a window too large even without it is the engine's to refuse).
    pub fn new(data: u64, guard: u64, align: u64, max_window: u64) -> GuardLayout {
        let align = align.max(4);
        let front = guard.div_ceil(align) * align;
        let near = (data + guard).div_ceil(4) * 4;
        let far = FAR_GUARD_BYTES.min(max_window.saturating_sub(near) / 4 * 4);
        let window = near + far;
        GuardLayout { front, data, guard, far, total: front + window, window }
    }
    /// The bytes returned to the caller: `guard` canary bytes, data, `guard` canary bytes.
    pub fn visible<'a>(&self, all: &'a [u8]) -> Option<&'a [u8]> {
        let start = usize::try_from(self.front - self.guard).ok()?;
        let end = usize::try_from(self.front + self.data + self.guard).ok()?;
        all.get(start..end)
    }
    /// [`GuardLayout::visible`], with the back guard's last element (`elem` bytes) replaced by
    /// the first element past it (in the far band) that is not all `canary` bytes, if any: a
    /// write however far past the end shows as a write into the back guard.
    pub fn folded(&self, all: &[u8], elem: usize, canary: u8) -> Option<Vec<u8>> {
        let mut out = self.visible(all)?.to_vec();
        let past = usize::try_from(self.front + self.data + self.guard).ok()?;
        let hit = all.get(past..)?.chunks_exact(elem.max(1)).find(|e| e.iter().any(|b| *b != canary));
        if let Some(hit) = hit.filter(|h| usize::try_from(self.guard).is_ok_and(|g| g >= h.len())) {
            let start = out.len() - hit.len(); // the back guard (at least `hit.len()`) ends `out`
            out[start..].copy_from_slice(hit);
        }
        Some(out)
    }
}

struct WgpuPrepared {
    engine: &'static WgpuEngine,
    hash: [u8; 32],
    plan: LaunchPlan,
    pipeline: Arc<Pipeline>,
    workgroup: [u32; 3],
    launch: Launch,
    /// Uniform buffers of resident calls, by contents (see [`UNIFORM_CACHE`]).
    uniforms: Mutex<Vec<(Vec<u8>, wgpu::Buffer)>>,
}

impl WgpuPrepared {
    /// The launch of `threads` invocations: guarded (conformance) runs launch linear kernels in
    /// rows one workgroup wide, so a kernel that linearises its index wrongly fails on small
    /// cases instead of only beyond the device's workgroups per dimension.
    fn geometry(&self, threads: [u64; 3], guarded: bool) -> Geometry {
        Geometry { wg: self.workgroup, threads: threads[0], yz: [threads[1], threads[2]], launch: self.launch, row: guarded.then_some(1) }
    }
}

/// An output slot's bytes and how the returned part sits in them (`elem`: bytes per element).
enum OutBuf {
    Plain { len: usize },
    Guarded { init: Vec<u8>, layout: GuardLayout, elem: usize },
}

impl Prepared for WgpuPrepared {
    fn content_hash(&self) -> [u8; 32] {
        self.hash
    }
    /// Host inputs: uploaded, launched, outputs read back as host tensors. Device inputs (every
    /// input a device tensor of this backend's engine): bound in place, outputs returned as
    /// device tensors on the same engine, nothing read back. Mixed host and device inputs are
    /// refused with `Placement` (no implicit copy: move the host ones with `to_device`).
    fn execute(&self, req: &ExecRequest<'_>) -> Result<Vec<Tensor>, BackendError> {
        if req.inputs.iter().any(|t| !t.is_host()) {
            return self.execute_resident(req);
        }
        let engine = self.engine;
        let (args, threads) = self.plan.marshal(req)?;
        let align = engine.storage_offset_alignment();
        let max_window =
            engine.raw().limits().max_storage_buffer_binding_size.min(engine.raw().limits().max_buffer_size.saturating_sub(align));
        let elem = |guard: u64| usize::try_from(guard).unwrap_or(0).checked_div(req.guard).unwrap_or(1);
        let mut uniforms: Vec<Vec<u8>> = Vec::new();
        let mut outs: Vec<(usize, OutBuf)> = Vec::new();
        for a in &args {
            match a {
                Arg::Scalars(v) => uniforms.push(v.iter().flat_map(|f| f.to_le_bytes()).collect()),
                Arg::Output { index, data, guard, accumulate } => {
                    outs.push((*index, out_buf(*data, *guard, *accumulate, (align, max_window), elem(*guard))?))
                }
                Arg::Input(_) => {}
            }
        }
        let (mut u, mut o) = (uniforms.iter(), outs.iter());
        let slots: Vec<Slot<'_>> = args
            .iter()
            .map(|a| match a {
                Arg::Input(b) => Slot::Read(b),
                Arg::Scalars(_) => Slot::Uniform(u.next().map(Vec::as_slice).unwrap_or_default()),
                Arg::Output { .. } => match o.next() {
                    Some((_, OutBuf::Guarded { init, layout, .. })) => Slot::Guarded { init, offset: layout.front, size: layout.window },
                    Some((_, OutBuf::Plain { len })) => Slot::Output { len: *len },
                    None => Slot::Output { len: 0 },
                },
            })
            .collect();
        let read = engine.run_pipeline(&self.pipeline, self.geometry(threads, req.guard > 0), &slots)?;
        let mut reads = Vec::with_capacity(outs.len());
        for ((index, buf), bytes) in outs.iter().zip(read) {
            reads.push((
                *index,
                match buf {
                    OutBuf::Plain { .. } => bytes,
                    OutBuf::Guarded { layout, elem, .. } => layout
                        .folded(&bytes, *elem, CANARY_BYTE)
                        .ok_or_else(|| BackendError::Kernel("guarded readback is shorter than its layout".into()))?,
                },
            ));
        }
        self.plan.outputs(req, reads)
    }
}

impl WgpuPrepared {
    /// [`Prepared::execute`] on device tensors.
    fn execute_resident(&self, req: &ExecRequest<'_>) -> Result<Vec<Tensor>, BackendError> {
        let buffers = self.resident_inputs(req)?;
        let (args, threads) = self.plan.marshal(req)?;
        let uniforms: Vec<wgpu::Buffer> = args
            .iter()
            .filter_map(|a| match a {
                Arg::Scalars(v) => Some(self.uniform(v.iter().flat_map(|f| f.to_le_bytes()).collect())),
                _ => None,
            })
            .collect::<Result<_, _>>()?;
        let mut u = uniforms.iter();
        let mut outs = Vec::new();
        let mut slots = Vec::with_capacity(args.len());
        for (a, input) in args.iter().zip(self.plan.slot_inputs()) {
            slots.push(match (a, input) {
                (Arg::Input(_), Some(i)) => {
                    let b = buffers[i];
                    Slot::Resident { buffer: b.buffer(), bytes: op_core::device::DeviceStorage::bytes(b) }
                }
                (Arg::Scalars(_), _) => {
                    Slot::UniformBuffer(u.next().ok_or_else(|| BackendError::Marshal("a uniform slot without a buffer".into()))?)
                }
                (Arg::Output { index, data, .. }, _) => {
                    outs.push(*index);
                    Slot::Output {
                        len: usize::try_from(*data).map_err(|_| BackendError::TooLarge(format!("output {index}: {data} bytes").into()))?,
                    }
                }
                (Arg::Input(_), None) => return Err(BackendError::Marshal("an input slot without an input".into())),
            });
        }
        let made = self.engine.run_resident(&self.pipeline, self.geometry(threads, false), &slots)?;
        resident::device_outputs(req, outs, made)
    }

    /// The device buffer holding uniform `bytes`: this kernel's cached one, or a new one
    /// (cached, evicting the least recently used beyond [`UNIFORM_CACHE`]).
    fn uniform(&self, bytes: Vec<u8>) -> Result<wgpu::Buffer, BackendError> {
        let mut cache = self.uniforms.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = cache.iter().position(|(b, _)| *b == bytes) {
            let hit = cache.remove(k);
            let buffer = hit.1.clone();
            cache.push(hit);
            return Ok(buffer);
        }
        let buffer = self.engine.uniform_buffer(&bytes)?;
        if cache.len() >= UNIFORM_CACHE {
            cache.remove(0);
        }
        cache.push((bytes, buffer.clone()));
        Ok(buffer)
    }

    /// Every input's buffer on this engine (see `resident::inputs_on`).
    fn resident_inputs<'r>(&self, req: &ExecRequest<'r>) -> Result<Vec<&'r WgpuBuffer>, BackendError> {
        resident::inputs_on(req, op_core::tensor::Device::id(self.engine))
    }
}

/// The device buffer of one output: plain (zero-filled by wgpu) or guarded with canaries (an
/// accumulating output keeps its data zero between the canary guards), laid out for the
/// device's `(storage offset alignment, largest window)`; `elem` bytes per element.
fn out_buf(data: u64, guard: u64, accumulate: bool, (align, max_window): (u64, u64), elem: usize) -> Result<OutBuf, BackendError> {
    let too_large = || BackendError::TooLarge(format!("an output buffer of {data} bytes does not fit this host's address space").into());
    if guard == 0 {
        return Ok(OutBuf::Plain { len: usize::try_from(data).map_err(|_| too_large())? });
    }
    let layout = GuardLayout::new(data, guard, align, max_window);
    let len = usize::try_from(layout.total).map_err(|_| too_large())?;
    let mut init = vec![CANARY_BYTE; len];
    if accumulate {
        let start = usize::try_from(layout.front).map_err(|_| too_large())?;
        let end = usize::try_from(layout.front + layout.data).map_err(|_| too_large())?;
        init[start..end].fill(0);
    }
    Ok(OutBuf::Guarded { init, layout, elem })
}

#[cfg(test)]
mod tests {
    use super::{BackendError, Cause, GuardLayout, WgpuError, CANARY_BYTE, FAR_GUARD_BYTES};

    #[test]
    fn a_backend_error_keeps_its_category_and_the_engine_error_behind_it() {
        let e = BackendError::from(WgpuError::TooLarge { what: "storage buffer".into(), requested: 10, limit: 4 });
        assert!(matches!(e, BackendError::TooLarge(_)), "{e:?}");
        assert_eq!(e.to_string(), "storage buffer: 10 exceeds the device limit 4");
        let cause = e.cause().and_then(Cause::error).expect("the engine's error");
        assert!(matches!(cause.downcast_ref::<WgpuError>(), Some(WgpuError::TooLarge { requested: 10, .. })), "{cause:?}");
        assert!(std::error::Error::source(&e).is_none(), "its text is not repeated down the chain");
        let plain = BackendError::Launch("a launch failed".into());
        assert!(plain.cause().is_some_and(|c| c.error().is_none() && c.message() == "a launch failed"));
    }

    #[test]
    fn guard_layout_aligns_front_and_covers_back() {
        // No room for a far band: the window is data and back guard.
        let l = GuardLayout::new(12, 64, 256, 76);
        assert_eq!((l.front, l.window, l.total, l.far), (256, 76, 332, 0));
        let all: Vec<u8> = (0..332u32).map(|i| i as u8).collect();
        assert_eq!(l.visible(&all).map(|v| v.len()), Some(64 + 12 + 64));
        let l = GuardLayout::new(0, 4, 256, 1 << 30);
        assert_eq!((l.front, l.window, l.far), (256, 4 + FAR_GUARD_BYTES, FAR_GUARD_BYTES));
        // The far band shrinks to fit the largest window, in whole words.
        let l = GuardLayout::new(10, 8, 256, 31);
        assert_eq!((l.window, l.far), (28, 8));
    }

    #[test]
    fn a_write_in_the_far_band_shows_on_the_last_canary() {
        let c = CANARY_BYTE;
        let l = GuardLayout::new(8, 8, 16, 8 + 8 + 16);
        assert_eq!((l.front, l.window, l.far), (16, 32, 16));
        let mut all = vec![c; 48];
        all[16..24].fill(0); // the data
        let visible = l.visible(&all).map(<[u8]>::to_vec);
        assert_eq!(l.folded(&all, 4, c), visible, "canaries intact: nothing folded");
        all[40..44].copy_from_slice(&7f32.to_le_bytes()); // the third far element
        let folded = l.folded(&all, 4, c).expect("folds");
        assert_eq!(folded.len(), 24);
        assert_eq!(&folded[20..], &7f32.to_le_bytes(), "the far write is on the back guard's last element");
        assert_eq!(&folded[..20], &visible.expect("visible")[..20]);
    }
}
