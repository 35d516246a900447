//! Training on the device (wgpu here; CUDA where the device check runs it): the example's
//! pipeline (conv1d -> windowed median -> mse_loss) with its inputs on the device trains to the
//! same losses and parameters as on host tensors (within the declared tolerances' scale), while
//! only the parameters (uploaded), the loss's seed, the loss and the parameters' gradients
//! (read back) cross between host and device: under 1 KiB a step, counted by the engine. Every
//! op on the path differentiates through its VJP op's kernel there. A tape without a device
//! refuses device feeds, and a tape on one device refuses another's tensors.

use crate::common;

use crate::median;

use op_runtime::cuda::CudaEngine;
use op_runtime::train::Sgd;
use op_runtime::train::{SharedDevice, Tape, TapeError, Var};
use op_runtime::wgpu::WgpuEngine;
use op_runtime::{op, DType, Real, Registry, Scalar, Tensor};

const TAPS: usize = 5;
const W: u32 = 7;

/// An engine of this test binary's own (`common::private_wgpu`), with the median registered.
fn setup() -> Option<(&'static WgpuEngine, Registry)> {
    let (engine, registry) = common::private_wgpu()?;
    registry.register(&median::windowed_median::DECL).expect("registers");
    Some((engine, registry))
}

struct Net {
    tape: Tape,
    x: Var,
    y: Var,
    kernel: Var,
    loss: Var,
}

fn net(registry: &Registry, n: usize) -> Net {
    let mut tape = Tape::with_registry(registry);
    let x = tape.input("noisy", DType::f32, [n]);
    let kernel = tape.param("prefilter", Tensor::vector(vec![0.05f32, 0.1, 0.5, 0.1, 0.05])).expect("param");
    let f = tape.call1("builtin/conv1d", &[x, kernel], &[]).expect("conv1d");
    let d = tape.call1("user/example/windowed_median", &[f], &[Scalar::U32(W)]).expect("median");
    let m = n - (TAPS - 1) - (W as usize - 1);
    let y = tape.input("clean", DType::f32, [m]);
    let loss = tape.call1("builtin/mse_loss", &[d, y], &[]).expect("mse");
    Net { tape, x, y, kernel, loss }
}

fn data(n: usize) -> (Tensor, Tensor) {
    let m = n - (TAPS - 1) - (W as usize - 1);
    let noisy: Vec<f32> = (0..n).map(|i| (i as f32 * 0.01).sin() + if i % 37 == 0 { 3.0 } else { 0.0 }).collect();
    let clean: Vec<f32> = (0..m).map(|i| ((i + 5) as f32 * 0.01).sin()).collect();
    (Tensor::vector(noisy), Tensor::vector(clean))
}

/// Trains `steps` steps; returns each step's loss and the final parameters.
fn train(net: &mut Net, xs: &Tensor, ys: &Tensor, steps: usize, mut after_step: impl FnMut(usize)) -> (Vec<f64>, Vec<f32>) {
    let mut losses = Vec::new();
    for step in 0..steps {
        let mut run = net.tape.run(&[(net.x, xs), (net.y, ys)]).expect("runs");
        losses.push(run.scalar(net.loss).expect("a loss"));
        let grads = net.tape.backward(&mut run, net.loss).expect("backward");
        assert!(grads.get(net.kernel).expect("a gradient").is_host(), "parameters' gradients come back to the host");
        Sgd::new(0.1).step(&mut net.tape, &grads).expect("sgd");
        after_step(step);
    }
    (losses, net.tape.param_value(net.kernel).and_then(|t| t.as_slice::<f32>()).expect("f32").to_vec())
}

/// Trains the pipeline on host tensors and on `device` (inputs uploaded once); asserts equal
/// losses and parameters (relative 1e-5, the scale of the pipeline's `accum` bounds at this
/// size), a falling loss, and 48 bytes between host and device per step, counted by `moved`.
fn device_matches_host(registry: &Registry, device: SharedDevice, moved: impl Fn() -> u64, n: usize) {
    let (xs, ys) = data(n);
    let (host_losses, host_params) = train(&mut net(registry, n), &xs, &ys, 4, |_| {});
    let mut dnet = net(registry, n);
    dnet.tape.set_device(Some(device)).expect("dispatch mode runs on a device");
    let (dx, dy) = (xs.to_device(device).expect("upload"), ys.to_device(device).expect("upload"));
    let mut per_step = Vec::new();
    let mut before = moved();
    let (losses, params) = train(&mut dnet, &dx, &dy, 4, |_| {
        let now = moved();
        per_step.push(now - before);
        before = now;
    });
    println!("host losses {host_losses:?}\ndevice losses {losses:?}\nbytes per step {per_step:?}");
    for (h, d) in host_losses.iter().zip(&losses) {
        assert!((h - d).abs() <= 1e-5 * h.abs().max(1e-6), "loss on the device {d} vs the host {h}");
    }
    for (h, d) in host_params.iter().zip(&params) {
        assert!((h - d).abs() <= 1e-5 * h.abs().max(1e-3), "parameter on the device {d} vs the host {h}");
    }
    assert!(losses.last() < losses.first(), "training lowers the loss: {losses:?}");
    // Parameters 5 x 4 bytes up, the seed 4 up, the loss 4 and the gradients 5 x 4 down.
    assert!(per_step.iter().all(|b| *b == 48), "bytes between host and device per step: {per_step:?}");
}

#[test]
fn training_on_wgpu_matches_the_host_and_moves_48_bytes_a_step() {
    let Some((engine, registry)) = setup() else { return };
    device_matches_host(&registry, engine, || engine.transfers().tensor_bytes(), 20_000);
}

/// On CUDA (the shared engine: run this binary with `--test-threads=1`, as the device check
/// does, so no other test moves its counters meanwhile).
#[test]
fn training_on_cuda_matches_the_host_and_moves_48_bytes_a_step() {
    if !common::cuda_available() {
        return;
    }
    let engine = CudaEngine::shared().expect("engine");
    let registry = op_runtime::registry();
    registry.register(&median::windowed_median::DECL).expect("registers");
    device_matches_host(registry, engine, || engine.transfers().tensor_bytes(), 1_000_000);
}

/// Negation whose VJP has a CUDA kernel only: on a wgpu device tape its rule runs on the host.
#[op(name = "test/train/neg_cuda_vjp", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(0), generated_tests = false,
     backward = vjp(neg_cuda_vjp_rule, kernel(cuda = "op-builtins/kernels/vjp.cu", entry = "neg_vjp",
         bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n, block = 256)),
     kernel(wgsl = "kernels/flat_neg.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = n),
     license = "MIT")]
pub fn neg_cuda_vjp<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| -*v).collect()
}

/// VJP of `neg_cuda_vjp`.
pub fn neg_cuda_vjp_rule<T: Real>(_x: &[T], g: &[T]) -> Vec<T> {
    g.iter().map(|v| -*v).collect()
}

/// An op on the path whose VJP op has no kernel for the tape's device still trains there: its
/// rule runs on the host, and exactly the transfers that costs (its input and its cotangent
/// down, its gradient up) are counted on top of the 48 bytes.
#[test]
fn a_vjp_without_a_kernel_for_the_device_runs_its_rule_on_the_host_and_counts_the_bytes() {
    let Some((engine, registry)) = setup() else { return };
    registry.register(&neg_cuda_vjp::DECL).expect("registers");
    let n = 4096;
    let build = |device: Option<SharedDevice>| {
        let mut tape = Tape::with_registry(&registry);
        tape.set_device(device).expect("dispatch mode");
        let x = tape.input("x", DType::f32, [n]);
        let y = tape.input("y", DType::f32, [n - 4]);
        let k = tape.param("k", Tensor::vector(vec![0.2f32; 5])).expect("param");
        let f = tape.call1("builtin/conv1d", &[x, k], &[]).expect("conv1d");
        let g = tape.call1("test/train/neg_cuda_vjp", &[f], &[]).expect("neg");
        let loss = tape.call1("builtin/mse_loss", &[g, y], &[]).expect("mse");
        Net { tape, x, y, kernel: k, loss }
    };
    let xs = Tensor::vector((0..n).map(|i| (i as f32 * 0.05).sin()).collect::<Vec<f32>>());
    let ys = Tensor::vector(vec![0.1f32; n - 4]);
    let (host_losses, _) = train(&mut build(None), &xs, &ys, 2, |_| {});
    let (dx, dy) = (xs.to_device(engine).expect("upload"), ys.to_device(engine).expect("upload"));
    let mut per_step = Vec::new();
    let mut before = engine.transfers().tensor_bytes();
    let (losses, _) = train(&mut build(Some(engine)), &dx, &dy, 2, |_| {
        let now = engine.transfers().tensor_bytes();
        per_step.push(now - before);
        before = now;
    });
    for (h, d) in host_losses.iter().zip(&losses) {
        assert!((h - d).abs() <= 1e-5 * h.abs(), "loss on the device {d} vs the host {h}");
    }
    let rule_round_trip = 3 * 4 * (n as u64 - 4);
    assert!(per_step.iter().all(|b| *b == 48 + rule_round_trip), "bytes per step: {per_step:?}");
}

#[test]
fn device_feeds_need_a_tape_on_that_device() {
    let Some((engine, registry)) = setup() else { return };
    let n = 64;
    let (xs, ys) = data(n);
    let (dx, dy) = (xs.to_device(engine).expect("upload"), ys.to_device(engine).expect("upload"));
    let host_tape = net(&registry, n);
    match host_tape.tape.run(&[(host_tape.x, &dx), (host_tape.y, &dy)]) {
        Err(TapeError::Placement { name, .. }) => assert_eq!(name, "noisy"),
        other => panic!("expected a placement error, got {other:?}"),
    }
    let other: &'static WgpuEngine = Box::leak(Box::new(WgpuEngine::new().expect("engine")));
    let mut on_other = net(&registry, n);
    on_other.tape.set_device(Some(other)).expect("device");
    assert!(matches!(on_other.tape.run(&[(on_other.x, &dx), (on_other.y, &dy)]), Err(TapeError::Placement { .. })));
    let mut reference = Tape::with_mode(&registry, op_runtime::train::Mode::ReferenceF64);
    assert!(matches!(reference.set_device(Some(engine)), Err(TapeError::Device { .. })));
}
