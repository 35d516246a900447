//! Batched pipelines through the tape: `vmap` of a recorded pipeline and of its gradient
//! (per-example gradients) equal a loop over the slices, a nested `vmap` equals a double loop,
//! a mis-batched input is a typed error (never a folded, plausible number), and a batch of
//! device tensors on a device tape equals the host's, its tangents kept on the device.

use crate::common;

use crate::median;
use crate::median_vjp;

use op_contract::sample::Rng;
use op_runtime::train::{vmap, InAxis, SharedDevice, Tape, TapeError, TensorFn, Var};
use op_runtime::{DType, Registry, Scalar, Tensor};

const N: usize = 24;
const W: u32 = 3;
const OUT: usize = N - 2 - (W as usize - 1);

fn registry() -> Registry {
    let r = Registry::with_builtins();
    r.register(&median::windowed_median::DECL).expect("the median registers");
    r.register_vjp_op("user/example/windowed_median", &median_vjp::windowed_median_vjp_op::DECL).expect("fits");
    r
}

struct Pipe {
    tape: Tape,
    x: Var,
    zeros: Var,
    taps: Var,
    y: Var,
    loss: Var,
}

/// conv1d (trainable taps) -> median -> tanh -> mse_loss against zeros, at `dtype`.
fn pipeline(r: &Registry, dtype: DType) -> Pipe {
    let mut tape = Tape::with_registry(r);
    let x = tape.input("x", dtype, [N]);
    let taps = Tensor::from_f64(dtype, [3], &[0.25, 0.5, 0.25]).expect("taps");
    let taps = tape.param("taps", taps).expect("a float parameter");
    let c = tape.call1("builtin/conv1d", &[x, taps], &[]).expect("conv1d");
    let m = tape.call1("user/example/windowed_median", &[c], &[Scalar::U32(W)]).expect("median");
    let y = tape.call1("builtin/tanh", &[m], &[]).expect("tanh");
    let zeros = tape.input("zeros", dtype, [OUT]);
    let loss = tape.call1("builtin/mse_loss", &[y, zeros], &[]).expect("mse_loss");
    Pipe { tape, x, zeros, taps, y, loss }
}

fn rows(seed: u64, dtype: DType, shape: &[usize]) -> Tensor {
    let mut rng = Rng::new(seed);
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|_| rng.uniform(-1.5, 1.5)).collect();
    Tensor::from_f64(dtype, shape.to_vec(), &v).expect("rows")
}

fn f64s(t: &Tensor) -> Vec<f64> {
    t.to_host().expect("host").data().to_f64_vec().expect("float")
}

/// Slice `b` of a host tensor's leading axis.
fn slice(t: &Tensor, b: usize) -> Tensor {
    let inner = t.shape()[1..].to_vec();
    let n: usize = inner.iter().product();
    let v = f64s(t)[b * n..(b + 1) * n].to_vec();
    Tensor::from_f64(t.dtype(), inner, &v).expect("slice")
}

#[test]
fn per_example_gradients_from_vmap_of_grad_equal_a_loop() {
    let r = registry();
    let p = pipeline(&r, DType::f64);
    let zeros = Tensor::vector(vec![0.0f64; OUT]);
    let grad = vmap(p.tape.grad_func(&[p.x, p.zeros], p.loss, &[p.x, p.taps]), &[InAxis::Batched, InAxis::Shared]).expect("in_axes fit");
    for seed in 0..16 {
        let xs = rows(seed, DType::f64, &[5, N]);
        let out = grad.call(&[&xs, &zeros]).expect("runs");
        assert_eq!((out[0].shape(), out[1].shape()), (&[5, N][..], &[5, 3][..]));
        for b in 0..5 {
            let xb = slice(&xs, b);
            let mut run = p.tape.run(&[(p.x, &xb), (p.zeros, &zeros)]).expect("runs");
            let g = p.tape.grad(&mut run, p.loss, &[p.x, p.taps]).expect("grad");
            assert_eq!(f64s(&slice(&out[0], b)), f64s(g.get(p.x).expect("d/dx")), "seed {seed}, example {b}: d/dx");
            assert_eq!(f64s(&slice(&out[1], b)), f64s(g.get(p.taps).expect("d/dtaps")), "seed {seed}, example {b}: d/dtaps");
        }
        // Per-example gradients differ from example to example (the check can see a mix-up).
        assert_ne!(f64s(&slice(&out[0], 0)), f64s(&slice(&out[0], 1)));
    }
}

#[test]
fn a_nested_vmap_equals_a_double_loop() {
    let r = registry();
    let p = pipeline(&r, DType::f64);
    let zeros = Tensor::vector(vec![0.0f64; OUT]);
    let axes = [InAxis::Batched, InAxis::Shared];
    let inner = vmap(p.tape.func(&[p.x, p.zeros], &[p.y, p.loss]), &axes).expect("inner");
    let outer = vmap(inner, &axes).expect("outer");
    for seed in 0..8 {
        let xs = rows(100 + seed, DType::f64, &[3, 4, N]);
        let out = outer.call(&[&xs, &zeros]).expect("runs");
        assert_eq!((out[0].shape(), out[1].shape()), (&[3, 4, OUT][..], &[3, 4][..]));
        for a in 0..3 {
            let row = slice(&xs, a);
            for b in 0..4 {
                let xb = slice(&row, b);
                let run = p.tape.run(&[(p.x, &xb), (p.zeros, &zeros)]).expect("runs");
                assert_eq!(f64s(&slice(&slice(&out[0], a), b)), f64s(run.value(p.y).expect("y")), "seed {seed} [{a}][{b}]");
                assert_eq!(f64s(&out[1])[a * 4 + b], run.scalar(p.loss).expect("loss"), "seed {seed} [{a}][{b}]");
            }
        }
    }
}

/// Mis-batched inputs are refused with a typed error: batch sizes that disagree, a batched
/// input without a batch axis, a shared input carrying one, a batch folded into the op's own
/// axis (what a mis-batched launch would compute: one median over windows that straddle the
/// examples), and in_axes that do not fit the function.
#[test]
fn a_mis_batched_input_is_refused() {
    let r = registry();
    let p = pipeline(&r, DType::f64);
    let zeros = Tensor::vector(vec![0.0f64; OUT]);
    let f = || p.tape.func(&[p.x, p.zeros], &[p.y]);
    let both = vmap(f(), &[InAxis::Batched, InAxis::Batched]).expect("fits");
    let e = both.call(&[&rows(1, DType::f64, &[3, N]), &rows(2, DType::f64, &[4, OUT])]).unwrap_err();
    assert_eq!(e.to_string(), "vmap: input 1 has batch size 4, but input 0 has 3; batched inputs share one batch size");
    let batched = vmap(f(), &[InAxis::Batched, InAxis::Shared]).expect("fits");
    let scalar = Tensor::from_f64(DType::f64, Vec::<usize>::new(), &[1.0]).expect("scalar");
    let e = batched.call(&[&scalar, &zeros]).unwrap_err();
    assert!(e.to_string().contains("input 0 is `Batched` but rank 0"), "{e}");
    // One example given as if batched: 24 "slices" of no samples, refused by the tape.
    let e = batched.call(&[&rows(3, DType::f64, &[N]), &zeros]).unwrap_err();
    assert!(matches!(&e, TapeError::Slice { index: 0, source } if matches!(**source, TapeError::Feed { .. })), "{e:?}");
    assert!(e.to_string().contains("input `x` (%0) was declared f64[24], fed f64[]"), "{e}");
    // The shared input with a batch axis.
    let e = batched.call(&[&rows(4, DType::f64, &[2, N]), &rows(5, DType::f64, &[2, OUT])]).unwrap_err();
    assert!(e.to_string().contains("input `zeros` (%5) was declared f64[20], fed f64[2, 20]"), "{e}");
    // A batch folded into the op's axis: refused, where it would have run to a wrong number.
    let folded = Tensor::from_f64(DType::f64, [2 * N], &f64s(&rows(6, DType::f64, &[2, N]))).expect("flat");
    let e = p.tape.run(&[(p.x, &folded), (p.zeros, &zeros)]).unwrap_err();
    assert!(e.to_string().contains("was declared f64[24], fed f64[48]"), "{e}");
    let e = vmap(f(), &[InAxis::Batched]).unwrap_err();
    assert_eq!(e.to_string(), "vmap: in_axes has 1 entries for a function of 2 input(s)");
    let e = vmap(f(), &[InAxis::Shared, InAxis::Shared]).unwrap_err();
    assert!(e.to_string().contains("no input is `InAxis::Batched`"), "{e}");
    let e = batched.call(&[&rows(7, DType::f64, &[0, N]), &zeros]).unwrap_err();
    assert!(e.to_string().contains("the batch is empty"), "{e}");
}

/// The same batch on the device (wgpu here; CUDA where the device check runs it) equals the
/// host's within f32 accumulation: outputs, per-example gradients (kept on the device until
/// stacked) and forward-mode tangents (kept on the device).
fn device_equals_host(device: SharedDevice, r: &Registry) {
    let p = pipeline(r, DType::f32);
    let mut d = pipeline(r, DType::f32);
    d.tape.set_device(Some(device)).expect("dispatch mode runs on a device");
    let zeros = Tensor::from_f64(DType::f32, [OUT], &[0.0; OUT]).expect("zeros");
    let xs = rows(9, DType::f32, &[4, N]);
    let (dxs, dzeros) = (xs.to_device(device).expect("upload"), zeros.to_device(device).expect("upload"));
    let axes = [InAxis::Batched, InAxis::Shared];
    let host = vmap(p.tape.grad_func(&[p.x, p.zeros], p.loss, &[p.x, p.taps]), &axes).expect("fits").call(&[&xs, &zeros]).expect("host");
    let dev = vmap(d.tape.grad_func(&[d.x, d.zeros], d.loss, &[d.x, d.taps]), &axes).expect("fits").call(&[&dxs, &dzeros]).expect("device");
    assert!(dev.iter().all(|t| !t.is_host()), "a batch of device tensors is stacked back on the device");
    for (h, g) in host.iter().zip(&dev) {
        close(&f64s(h), &f64s(g), "per-example gradients");
    }
    let ys = vmap(d.tape.func(&[d.x, d.zeros], &[d.y]), &axes).expect("fits").call(&[&dxs, &dzeros]).expect("device");
    let yh = vmap(p.tape.func(&[p.x, p.zeros], &[p.y]), &axes).expect("fits").call(&[&xs, &zeros]).expect("host");
    close(&f64s(&yh[0]), &f64s(&ys[0]), "outputs");
    // Forward mode on the device: the tangents live there.
    let x0 = slice(&xs, 0);
    let v = rows(10, DType::f32, &[N]);
    let mut hrun = p.tape.run(&[(p.x, &x0), (p.zeros, &zeros)]).expect("runs");
    let mut drun = d.tape.run(&[(d.x, &x0.to_device(device).expect("upload")), (d.zeros, &dzeros)]).expect("runs");
    let ht = p.tape.jvp(&mut hrun, &[(p.x, &v)]).expect("host jvp");
    let dt = d.tape.jvp(&mut drun, &[(d.x, &v)]).expect("device jvp");
    let dy = dt.get(d.y).expect("a tangent");
    assert!(!dy.is_host(), "tangents stay on the device");
    close(&f64s(ht.get(p.y).expect("a tangent")), &f64s(dy), "tangents");
}

fn close(a: &[f64], b: &[f64], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    let scale = a.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-6);
    let worst = a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max) / scale;
    assert!(worst < 1e-4, "{what}: device differs from host by {worst:e} (relative to the largest)");
}

#[test]
fn a_batch_on_device_tensors_equals_the_host() {
    let Some((engine, r)) = common::private_wgpu() else { return };
    r.register(&median::windowed_median::DECL).expect("the median registers");
    r.register_vjp_op("user/example/windowed_median", &median_vjp::windowed_median_vjp_op::DECL).expect("fits");
    device_equals_host(engine, &r);
}

#[test]
fn a_batch_on_cuda_tensors_equals_the_host() {
    if !common::cuda_available() {
        return;
    }
    let engine = op_runtime::cuda::CudaEngine::shared().expect("cuda is available");
    device_equals_host(engine, &registry());
}
