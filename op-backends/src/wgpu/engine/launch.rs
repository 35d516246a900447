//! One launch: the grid within the device's limits, the buffers and bind group of its slots,
//! the dispatch, the bounded wait, and the readback of what it wrote.

use super::super::bind_cache::Binding;
use super::super::resident::{padded, WgpuBuffer};
use super::super::wait::Stall;
use super::{round_up, Geometry, Pipeline, Slot, SlotKind, WgpuEngine, WgpuError};
use op_core::decl::Launch;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;

impl WgpuEngine {
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
        pipeline.check_slots(slots)?;
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
        pipeline.check_slots(slots)?;
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
