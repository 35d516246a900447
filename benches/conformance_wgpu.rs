//! Conformance and wgpu dispatch, measured in one run (release):
//! `cargo bench --bench conformance_wgpu`.
//!
//! 1. Conformance time of the windowed median with the default corpus on reference + cpu +
//!    wgpu (cpu runs the example's own `cpu` kernel, `median_cpu.rs`). Target < 5 s.
//! 2. The median's WGSL on 1M samples, w = 7, pipeline cached: through the engine (the op's
//!    dispatch path, and `WgpuEngine::run` alone) versus a minimal hand-written wgpu program
//!    (its own instance and device, pipeline built once; per call: upload, bind, dispatch,
//!    copy, map, read). Target: engine / minimal <= 1.10.
//! 3. The same kernel on device tensors (1K and 1M samples): a call through dispatch on a
//!    device tensor, output left on the device, then a wait for the device, versus a
//!    hand-written wgpu program that keeps its buffers and bind group between calls (per call:
//!    encode, dispatch, submit, wait). Target: device tensors / hand-written <= 1.10.
//!
//! Prints medians and ratios; exits 0 without measuring when no wgpu adapter exists.

#[path = "../examples/windowed_median/median.rs"]
mod median;

use op_runtime::conformance;
use op_runtime::wgpu::{Slot, WgpuEngine};
use op_runtime::{BackendKind, CallOptions, Scalar, Tensor};
use std::hint::black_box;
use std::time::{Duration, Instant};
use wgpu::util::DeviceExt;

const WGSL: &str = include_str!("../examples/windowed_median/kernels/windowed_median.wgsl");

fn median_of(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A minimal hand-written wgpu program running the median kernel.
struct Minimal {
    device: wgpu::Device,
    queue: wgpu::Queue,
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
}

impl Minimal {
    fn new() -> Option<Minimal> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default())).ok()?;
        let (device, queue) =
            pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor { required_limits: adapter.limits(), ..Default::default() }))
                .ok()?;
        let module =
            device.create_shader_module(wgpu::ShaderModuleDescriptor { label: None, source: wgpu::ShaderSource::Wgsl(WGSL.into()) });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: None,
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        let layout = pipeline.get_bind_group_layout(0);
        Some(Minimal { device, queue, pipeline, layout })
    }

    /// The input, output and uniform buffers of one median call (the input uploaded).
    fn buffers(&self, x: &[f32], w: u32) -> (wgpu::Buffer, wgpu::Buffer, wgpu::Buffer, u64) {
        let d = &self.device;
        let n = x.len() as u32;
        let outs = (n - w + 1) as u64;
        let xb = d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: bytemuck::cast_slice(x),
            usage: wgpu::BufferUsages::STORAGE,
        });
        let ob = d.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: outs * 4,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let mut params = [0u8; 16];
        params[..4].copy_from_slice(&n.to_le_bytes());
        params[4..8].copy_from_slice(&w.to_le_bytes());
        let pb =
            d.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: None, contents: &params, usage: wgpu::BufferUsages::UNIFORM });
        (xb, ob, pb, outs)
    }

    /// The bind group of the median's three buffers.
    fn bind_group(&self, xb: &wgpu::Buffer, ob: &wgpu::Buffer, pb: &wgpu::Buffer) -> wgpu::BindGroup {
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &self.layout,
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: xb.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: ob.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 2, resource: pb.as_entire_binding() },
            ],
        })
    }

    fn run(&self, x: &[f32], w: u32) -> Vec<f32> {
        let d = &self.device;
        let (xb, ob, pb, outs) = self.buffers(x, w);
        let st = d.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: outs * 4,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let bg = self.bind_group(&xb, &ob, &pb);
        let mut enc = d.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &bg, &[]);
            pass.dispatch_workgroups((outs as u32).div_ceil(64), 1, 1);
        }
        enc.copy_buffer_to_buffer(&ob, 0, &st, 0, outs * 4);
        self.queue.submit(Some(enc.finish()));
        st.map_async(wgpu::MapMode::Read, .., |r| r.expect("map"));
        d.poll(wgpu::PollType::wait_indefinitely()).expect("poll");
        let v: Vec<f32> =
            st.get_mapped_range(..).expect("range").chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        st.unmap();
        v
    }
}

/// A hand-written wgpu program that keeps its buffers and bind group between calls: per call
/// only encode, dispatch, submit and wait (the second baseline: what device tensors can at best
/// approach).
struct Resident {
    minimal: Minimal,
    bind_group: wgpu::BindGroup,
    groups: u32,
}

impl Resident {
    fn new(minimal: Minimal, x: &[f32], w: u32) -> Resident {
        let (xb, ob, pb, outs) = minimal.buffers(x, w);
        let bind_group = minimal.bind_group(&xb, &ob, &pb);
        Resident { minimal, bind_group, groups: (outs as u32).div_ceil(64) }
    }

    fn run(&self) {
        let m = &self.minimal;
        let mut enc = m.device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            pass.set_pipeline(&m.pipeline);
            pass.set_bind_group(0, &self.bind_group, &[]);
            pass.dispatch_workgroups(self.groups, 1, 1);
        }
        m.queue.submit(Some(enc.finish()));
        m.device.poll(wgpu::PollType::wait_indefinitely()).expect("poll");
    }
}

/// Device tensors against the resident hand-written program (median, w = 7): the engine call on
/// a device tensor (output left on the device) plus a wait for the device, vs `Resident::run`.
/// Interleaved, medians of `reps`.
fn resident_vs_hand_written(h: &op_runtime::OpHandle, engine: &WgpuEngine, n: usize, reps: usize) {
    let w = 7u32;
    let x: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 * 0.5 - 250.0).collect();
    let dx = Tensor::vector(x.clone()).to_device(engine).expect("upload");
    let hand = Resident::new(Minimal::new().expect("minimal wgpu program"), &x, w);
    let on_device = || {
        let out = h.call_with(&[&dx], &[Scalar::U32(w)], CallOptions::default()).expect("dispatch").outputs;
        engine.raw().device().poll(wgpu::PollType::wait_indefinitely()).expect("poll");
        black_box(out);
    };
    let methods: [&dyn Fn(); 2] = [&|| hand.run(), &on_device];
    methods.iter().for_each(|f| f());
    let mut samples: [Vec<Duration>; 2] = Default::default();
    let (pool, binds) = (engine.pool_stats(), engine.bind_stats());
    for _ in 0..reps {
        for (k, f) in methods.iter().enumerate() {
            let t = Instant::now();
            f();
            samples[k].push(t.elapsed());
        }
    }
    let [hw, dev] = samples.map(median_of);
    println!(
        "  n = {n:>8}: resident hand-written {:8.3} ms, device tensors through dispatch {:8.3} ms, ratio {:.3}   (target <= 1.10)",
        hw.as_secs_f64() * 1e3,
        dev.as_secs_f64() * 1e3,
        dev.as_secs_f64() / hw.as_secs_f64()
    );
    let (p, b) = (engine.pool_stats(), engine.bind_stats());
    println!(
        "              engine over the {reps} timed calls: {} output buffers created, {} taken from the pool; {} bind groups built, {} reused",
        p.created - pool.created,
        p.reused - pool.reused,
        b.built - binds.built,
        b.reused - binds.reused
    );
}

fn main() {
    let reg = op_runtime::registry();
    let h = reg.register(&median::windowed_median::DECL).expect("registers");
    let wgpu_ok = reg.backend(BackendKind::Wgpu).map(|b| b.availability());
    if !matches!(wgpu_ok, Some(Ok(()))) {
        println!("no wgpu adapter ({wgpu_ok:?}); nothing measured");
        return;
    }

    // 1. Conformance time, reference + cpu + wgpu.
    let conform_once = || {
        let t = Instant::now();
        let mut cases = 0;
        for kind in [BackendKind::Reference, BackendKind::Cpu, BackendKind::Wgpu] {
            match conformance::conform(&h, kind) {
                Ok(r) => cases += r.cases,
                Err(e) if e.is_skip() => {}
                Err(e) => panic!("{e}"),
            }
        }
        (t.elapsed(), cases)
    };
    let (cold, cases) = conform_once();
    let runs: Vec<Duration> = (0..7).map(|_| conform_once().0).collect();
    println!("conformance of {} on reference + cpu + wgpu: {cases} case runs", h.id());
    println!("  first run (pipeline build included): {:8.1} ms", cold.as_secs_f64() * 1e3);
    println!("  median of 7 runs                   : {:8.1} ms   (target < 5000 ms)", median_of(runs).as_secs_f64() * 1e3);

    // 2. Dispatch: 1M samples, w = 7.
    let n = 1usize << 20;
    let w = 7u32;
    let x: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 * 0.5 - 250.0).collect();
    let xt = Tensor::vector(x.clone());
    let opts = CallOptions::on(BackendKind::Wgpu);
    let via_dispatch = || h.call_with(&[&xt], &[Scalar::U32(w)], opts).expect("dispatch").outputs;

    let engine = WgpuEngine::shared().expect("engine");
    let op = h.op();
    let xbytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    let out_init = vec![0u8; (n - w as usize + 1) * 4];
    let mut params = Vec::new();
    params.extend_from_slice(&(n as u32).to_le_bytes());
    params.extend_from_slice(&w.to_le_bytes());
    let via_engine = || {
        engine
            .run(
                *op.hash(),
                WGSL,
                "main",
                [64, 1, 1],
                &[Slot::Read(&xbytes), Slot::ReadWrite(&out_init), Slot::Uniform(&params)],
                (n - w as usize + 1) as u64,
            )
            .expect("engine run")
    };
    let minimal = Minimal::new().expect("minimal wgpu program");

    // Same answers.
    let a = via_dispatch();
    let b = minimal.run(&x, w);
    assert_eq!(a[0].as_slice::<f32>().expect("f32"), &b[..], "dispatch and the minimal program disagree");

    // Interleaved (minimal, engine, dispatch, minimal, ...) so that load from other processes
    // on the machine hits all three alike; medians per method, after a warm-up round.
    let methods: [&dyn Fn(); 3] = [
        &|| {
            black_box(minimal.run(&x, w));
        },
        &|| {
            black_box(via_engine());
        },
        &|| {
            black_box(via_dispatch());
        },
    ];
    methods.iter().for_each(|f| f());
    let mut samples: [Vec<Duration>; 3] = Default::default();
    for _ in 0..31 {
        for (k, f) in methods.iter().enumerate() {
            let t = Instant::now();
            f();
            samples[k].push(t.elapsed());
        }
    }
    let [m, e, d] = samples.map(median_of);
    println!("median WGSL, n = 1M, w = 7, pipeline cached (median of 31, interleaved):");
    println!("  minimal hand-written wgpu : {:8.3} ms", m.as_secs_f64() * 1e3);
    println!("  WgpuEngine::run           : {:8.3} ms   ratio {:.3}", e.as_secs_f64() * 1e3, e.as_secs_f64() / m.as_secs_f64());
    println!(
        "  op dispatch (call_with)   : {:8.3} ms   ratio {:.3}   (target <= 1.10)",
        d.as_secs_f64() * 1e3,
        d.as_secs_f64() / m.as_secs_f64()
    );

    // 3. The second baseline: buffers and bind group kept between calls, vs device tensors.
    println!("median WGSL, w = 7, buffers kept on the device between calls (interleaved medians):");
    resident_vs_hand_written(&h, engine, 1 << 10, 201);
    resident_vs_hand_written(&h, engine, 1 << 20, 31);
}
