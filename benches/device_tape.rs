//! The example's training step on the device vs the same step round-tripping through the
//! host, measured in one run (release): `cargo bench --bench device_tape`.
//!
//! The step is the example's pipeline, conv1d(noisy, prefilter[5]) -> windowed_median(w = 7) ->
//! mse_loss(., clean), forward, backward and an SGD update, every op and VJP op on one GPU
//! backend, two ways:
//! - host round trip: host tensors, every call forced onto the GPU backend (each uploads its
//!   inputs and reads its outputs back, intermediates and gradients included);
//! - device-resident: the tape on the engine (`Tape::set_device`), its inputs uploaded once
//!   before the steps; only parameters, the seed, the loss and the parameters' gradients cross.
//!
//! Prints, per backend that runs here (wgpu at 1M samples; CUDA, where present, at 16M), the
//! median step time of each way, the lines `host<->device bytes per step: <n>` (the
//! device-resident step, after the first; the host round trip's figure follows it) and
//! `device-resident step vs host round trip: <ratio>x` (host time / device time). Before timing,
//! both ways are checked to give the same loss. On the software adapter the ratio is reported,
//! not a goal (its "device" memory is host memory and its kernels are slower than native code).

#[path = "../examples/windowed_median/median.rs"]
mod median;

use op_runtime::cuda::CudaEngine;
use op_runtime::train::Sgd;
use op_runtime::train::{SharedDevice, Tape, Var};
use op_runtime::wgpu::WgpuEngine;
use op_runtime::{BackendKind, CallOptions, DType, Registry, Scalar, Tensor};
use std::time::{Duration, Instant};

const TAPS: usize = 5;
const W: u32 = 7;

struct Net {
    tape: Tape,
    x: Var,
    y: Var,
    loss: Var,
}

fn net(registry: &Registry, n: usize, kind: BackendKind) -> Net {
    let mut tape = Tape::with_registry(registry);
    tape.set_call_options(CallOptions::on(kind));
    let x = tape.input("noisy", DType::f32, [n]);
    let k = tape.param("prefilter", Tensor::vector(vec![0.05f32, 0.1, 0.5, 0.1, 0.05])).expect("param");
    let f = tape.call1("builtin/conv1d", &[x, k], &[]).expect("conv1d");
    let d = tape.call1("user/example/windowed_median", &[f], &[Scalar::U32(W)]).expect("median");
    let y = tape.input("clean", DType::f32, [n - (TAPS - 1) - (W as usize - 1)]);
    let loss = tape.call1("builtin/mse_loss", &[d, y], &[]).expect("mse_loss");
    Net { tape, x, y, loss }
}

/// One training step; returns the loss.
fn step(net: &mut Net, xs: &Tensor, ys: &Tensor) -> f64 {
    let mut run = net.tape.run(&[(net.x, xs), (net.y, ys)]).expect("runs");
    let loss = run.scalar(net.loss).expect("a loss");
    let grads = net.tape.backward(&mut run, net.loss).expect("backward");
    Sgd::new(0.01).step(&mut net.tape, &grads).expect("sgd");
    loss
}

/// Median step time over `iters` steps after one warm-up step, the bytes one step moved and the
/// first step's loss.
fn measure(net: &mut Net, xs: &Tensor, ys: &Tensor, iters: usize, moved: &dyn Fn() -> u64) -> (Duration, u64, f64) {
    let loss = step(net, xs, ys);
    let before = moved();
    step(net, xs, ys);
    let bytes = moved() - before;
    let mut times: Vec<Duration> = (0..iters)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(step(net, xs, ys));
            t.elapsed()
        })
        .collect();
    times.sort();
    (times[times.len() / 2], bytes, loss)
}

fn data(n: usize) -> (Tensor, Tensor) {
    let m = n - (TAPS - 1) - (W as usize - 1);
    let noisy: Vec<f32> = (0..n).map(|i| (i as f32 * 0.001).sin() + if i % 37 == 0 { 3.0 } else { 0.0 }).collect();
    let clean: Vec<f32> = (0..m).map(|i| ((i + 5) as f32 * 0.001).sin()).collect();
    (Tensor::vector(noisy), Tensor::vector(clean))
}

fn compare(kind: BackendKind, device: SharedDevice, moved: &dyn Fn() -> u64, n: usize, iters: usize) {
    let registry = op_runtime::registry();
    registry.register(&median::windowed_median::DECL).expect("registers");
    let (xs, ys) = data(n);
    let mut host = net(registry, n, kind);
    let (host_time, host_bytes, host_loss) = measure(&mut host, &xs, &ys, iters, moved);
    let mut dev = net(registry, n, kind);
    dev.tape.set_device(Some(device)).expect("a device");
    let (dx, dy) = (xs.to_device(device).expect("upload"), ys.to_device(device).expect("upload"));
    let (dev_time, dev_bytes, dev_loss) = measure(&mut dev, &dx, &dy, iters, moved);
    assert!((host_loss - dev_loss).abs() <= 1e-5 * host_loss.abs(), "the two ways disagree: {host_loss} vs {dev_loss}");
    println!("{kind}, n = {n}, {iters} steps each (median):");
    println!("  host round trip : {:>10.3} ms a step, {host_bytes} bytes between host and device", host_time.as_secs_f64() * 1e3);
    println!("  device-resident : {:>10.3} ms a step, {dev_bytes} bytes between host and device", dev_time.as_secs_f64() * 1e3);
    println!("host<->device bytes per step: {dev_bytes}");
    println!("  (host round trip: {host_bytes})");
    println!("device-resident step vs host round trip: {:.2}x", host_time.as_secs_f64() / dev_time.as_secs_f64());
}

fn main() {
    match WgpuEngine::shared() {
        Ok(engine) => {
            compare(BackendKind::Wgpu, engine, &|| engine.transfers().tensor_bytes(), 1 << 20, 3);
            let (p, b) = (engine.pool_stats(), engine.bind_stats());
            println!(
                "  (wgpu device tensors over the run: {} buffers created, {} taken from the pool; {} bind groups built, {} reused)",
                p.created, p.reused, b.built, b.reused
            );
        }
        Err(e) => println!("wgpu: skipped ({e})"),
    }
    match CudaEngine::shared() {
        Ok(engine) => compare(BackendKind::Cuda, engine, &|| engine.transfers().tensor_bytes(), 16 << 20, 5),
        Err(e) => println!("cuda: skipped ({e})"),
    }
}
