//! The burn adapter against this project's own paths: a burn forward equals the registry's call
//! bit for bit, burn's autodiff gradient equals the tape's (VJP ops, a VJP rule, a composite
//! graph; f32 and f64), a broken VJP rule is caught by gradcheck rather than handed to burn, and
//! every bad input is a typed error at the call, never a panic inside burn.

// burn 0.22 marks its NdArray backend deprecated; the adapter serves it (issue 36).
#![allow(deprecated)]

use burn_tensor::{Device, Int, Tensor as BTensor, TensorData};
use op_burn::{BurnOp, Error};
use op_runtime::graph::{Graph, GraphError};
use op_runtime::train::TapeError;
use op_runtime::Var as TVar;
use op_runtime::{op, OpHandle, Real, Scalar, Tape, Tensor};

/// `a * b + c`: three tensor inputs, a VJP rule and no VJP kernels (its backward runs the rule).
#[op(name = "test/burn/fma3", version = 1, signature<T: f32 | f64>(a: T[n], b: T[n], c: T[n]) -> T[n],
     category = elementwise, tolerance = ulp(2), backward = vjp(fma3_vjp))]
pub fn fma3<T: Real>(a: &[T], b: &[T], c: &[T]) -> Vec<T> {
    a.iter().zip(b).zip(c).map(|((x, y), z)| *x * *y + *z).collect()
}
/// VJP of `fma3`.
pub fn fma3_vjp<T: Real>(a: &[T], b: &[T], _c: &[T], g: &[T]) -> (Vec<T>, Vec<T>, Vec<T>) {
    (g.iter().zip(b).map(|(g, y)| *g * *y).collect(), g.iter().zip(a).map(|(g, x)| *g * *x).collect(), g.to_vec())
}

/// `x tanh(4x)`, differentiated through its graph (f32 only).
#[op(name = "test/burn/smooth_abs", version = 1, signature(x: f32[n]) -> f32[n],
     category = transcendental, tolerance = ulp(16), backward = composite(smooth_abs_graph))]
pub fn smooth_abs<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * (*v * T::from_f64(4.0)).tanh()).collect()
}
/// The graph: `mul(x, tanh(scale(x, 4)))`.
pub fn smooth_abs_graph(t: &mut dyn Graph, x: &[TVar], _p: &[Scalar]) -> Result<Vec<TVar>, GraphError> {
    let kx = t.call1("builtin/scale", &[x[0]], &[Scalar::F32(4.0)])?;
    let th = t.call1("builtin/tanh", &[kx], &[])?;
    Ok(vec![t.call1("builtin/mul", &[x[0], th], &[])?])
}

/// `x^2` with a broken VJP rule (`g x`, missing the factor 2). Its generated gradcheck test is
/// off: the test below asserts that gradcheck rejects it.
#[op(name = "test/burn/bad_square", version = 1, signature<T: f32 | f64>(x: T[n]) -> T[n],
     category = elementwise, tolerance = ulp(2), backward = vjp(bad_square_vjp), generated_tests = false)]
pub fn bad_square<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * *v).collect()
}
/// The broken VJP: `g x` where `2 g x` is right.
pub fn bad_square_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    g.iter().zip(x).map(|(g, x)| *g * *x).collect()
}

/// Sums of every odd-sized window: a parameter with constraints, and a shape bound by it.
#[op(name = "test/burn/window_sum", version = 1,
     signature<T: f32 | f64>(x: T[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> T[n - w + 1],
     category = reduction, tolerance = accum(2), backward = vjp(window_sum_vjp))]
pub fn window_sum<T: Real>(x: &[T], w: u32) -> Vec<T> {
    // Summed in f64 and rounded once: a running sum in f32 overflows to an infinity where f64
    // does not, and an infinity of the other sign then makes it NaN beside the f64 reference's
    // infinity, which conformance rightly names the reference's own bits outside the bound.
    let w = w as usize;
    (0..x.len() + 1 - w).map(|i| T::from_f64(x[i..i + w].iter().map(|v| v.to_f64()).sum())).collect()
}
/// VJP of `window_sum`: each input element gathers the cotangents of the windows holding it.
pub fn window_sum_vjp<T: Real>(x: &[T], w: u32, g: &[T]) -> Vec<T> {
    let w = w as usize;
    let mut d = vec![T::zero(); x.len()];
    for (i, gi) in g.iter().enumerate() {
        for v in &mut d[i..i + w] {
            *v += *gi;
        }
    }
    d
}

/// The smallest and largest element: two outputs.
#[op(name = "test/burn/minmax", version = 1, signature(x: f32[n] where n >= 1) -> (lo: f32[], hi: f32[]),
     category = selection, tolerance = exact, backward = none)]
pub fn minmax<T: Real>(x: &[T]) -> (Vec<T>, Vec<T>) {
    let lo = x.iter().copied().fold(x[0], |a, b| if b < a { b } else { a });
    let hi = x.iter().copied().fold(x[0], |a, b| if b > a { b } else { a });
    (vec![lo], vec![hi])
}

/// The sign of each element: not differentiable.
#[op(name = "test/burn/sign", version = 1, signature(x: f32[n]) -> f32[n],
     category = selection, tolerance = exact, backward = none)]
pub fn sign<T: Real>(x: &[T]) -> Vec<T> {
    x.iter()
        .map(|v| match *v > T::zero() {
            true => T::one(),
            false if *v < T::zero() => T::zero() - T::one(),
            false => T::zero(),
        })
        .collect()
}

/// Whether each element is positive: a `bool` output, which burn's float tensors cannot hold.
#[op(name = "test/burn/positive", version = 1, signature(x: f32[n]) -> bool[n],
     category = selection, tolerance = exact, backward = none, generated_tests = false)]
pub fn positive<T: Real>(x: &[T]) -> Vec<bool> {
    x.iter().map(|v| *v > T::zero()).collect()
}

fn ok<T, E: std::fmt::Display>(r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

fn handle(name: &str) -> OpHandle {
    ok(op_runtime::registry().lookup(name))
}

fn user(decl: &'static op_runtime::OpDecl) -> OpHandle {
    ok(op_runtime::register(decl))
}

/// `n` distinct values in about [-1.5, 1.5] from `seed`.
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|i| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 3.0 - 1.5 + i as f64 * 1e-6
        })
        .collect()
}

/// A float element type both libraries have, for tests generic over f32 and f64.
trait F: Real + op_runtime::Element + burn_tensor::Element {
    fn of(v: f64) -> Self;
    fn scalar(v: f64) -> Scalar;
}
impl F for f32 {
    fn of(v: f64) -> f32 {
        v as f32
    }
    fn scalar(v: f64) -> Scalar {
        Scalar::F32(v as f32)
    }
}
impl F for f64 {
    fn of(v: f64) -> f64 {
        v
    }
    fn scalar(v: f64) -> Scalar {
        Scalar::F64(v)
    }
}

fn vec_of<T: F>(n: usize, seed: u64) -> Vec<T> {
    values(n, seed).into_iter().map(T::of).collect()
}

/// A burn tensor of `v`'s own dtype (burn's `from_data` with a device alone casts to the
/// device's default float dtype, `f32`).
fn btensor<T: F>(v: &[T], device: &Device) -> BTensor<1> {
    let data = TensorData::new(v.to_vec(), [v.len()]);
    let dtype = data.dtype();
    BTensor::from_data(data, (device, dtype))
}

fn flat<T: F, const D: usize>(t: BTensor<D>) -> Vec<T> {
    ok(t.into_data().to_vec::<T>())
}

/// The registry's call on runtime tensors: its output flattened, and its provenance entry.
fn registry_call<T: F>(h: &OpHandle, inputs: &[Vec<T>], params: &[Scalar]) -> (Vec<T>, op_runtime::provenance::ProvenanceEntry) {
    let ts: Vec<Tensor> = inputs.iter().map(|v| Tensor::vector(v.clone())).collect();
    let refs: Vec<&Tensor> = ts.iter().collect();
    let out = ok(h.call(&refs, params));
    (ok(out.outputs[0].try_slice::<T>()).to_vec(), out.provenance)
}

fn same_bits<T: F>(a: &[T], b: &[T]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| Real::to_f64(*x).to_bits() == Real::to_f64(*y).to_bits())
}

fn forward_matches<T: F>(n: usize, seed: u64, device: &Device) {
    let cases: Vec<(OpHandle, usize, Vec<Scalar>)> = vec![
        (handle("builtin/tanh"), 1, vec![]),
        (handle("builtin/scale"), 1, vec![T::scalar(0.375)]),
        (handle("builtin/mul"), 2, vec![]),
        (user(&fma3::DECL), 3, vec![]),
    ];
    for (c, (h, arity, params)) in cases.into_iter().enumerate() {
        let inputs: Vec<Vec<T>> = (0..arity).map(|k| vec_of::<T>(n, 1000 * seed + 10 * c as u64 + k as u64)).collect();
        let bts: Vec<BTensor<1>> = inputs.iter().map(|v| btensor(v, device)).collect();
        let op = BurnOp::new(&h, &params);
        let got: BTensor<1> = ok(op.apply(&bts));
        let (want, prov) = registry_call(&h, &inputs, &params);
        assert!(same_bits(&flat::<T, 1>(got), &want), "{} (n {n}, seed {seed}): burn forward differs from the registry call", h.id());
        let entry = op.last_forward().expect("the forward's provenance");
        assert_eq!((&entry.op, entry.content_hash, entry.backend), (&prov.op, prov.content_hash, prov.backend), "{}", h.id());
    }
}

#[test]
fn a_burn_forward_equals_the_registry_call_bit_for_bit() {
    for device in [Device::ndarray(), Device::ndarray().autodiff()] {
        for (seed, n) in [1usize, 2, 7, 64, 1000, 4097].into_iter().enumerate() {
            forward_matches::<f32>(n, seed as u64, &device);
            forward_matches::<f64>(n, seed as u64, &device);
        }
    }
    // `tanh` on f32 has a `cpu` kernel: the adapter's call runs it, as the registry's does.
    let tanh = BurnOp::new(&handle("builtin/tanh"), &[]);
    let _: BTensor<1> = ok(tanh.apply(&[btensor(&vec_of::<f32>(64, 1), &Device::ndarray())]));
    assert_eq!(tanh.last_forward().map(|e| e.backend), Some(op_runtime::BackendKind::Cpu));
    // A transposed (strided) matrix into matmul reads its logical elements.
    let mm = BurnOp::new(&handle("builtin/matmul"), &[]);
    let dev = Device::ndarray();
    let a = BTensor::<2>::from_data(TensorData::new(vec_of::<f32>(6, 9), [2, 3]), &dev);
    let b = BTensor::<2>::from_data(TensorData::new(vec_of::<f32>(12, 10), [4, 3]), &dev).transpose();
    let got: BTensor<2> = ok(mm.apply(&[a.clone(), b.clone()]));
    let bt: Vec<f32> = flat::<f32, 2>(b.clone());
    let want =
        ok(handle("builtin/matmul").call(&[&ok(Tensor::from_vec([2, 3], flat::<f32, 2>(a))), &ok(Tensor::from_vec([3, 4], bt))], &[]));
    assert_eq!(got.shape().dims::<2>(), [2, 4]);
    assert!(same_bits(&flat::<f32, 2>(got), ok(want.outputs[0].try_slice::<f32>())));
}

/// burn: `loss = mse_loss(f(scale(fma3(a, b, c), 0.5)), target)` with `f` tanh (or the
/// composite `smooth_abs` in f32), every op through the adapter, its gradients by burn's
/// `backward`. `target` is a plain tensor beside the autodiff ones.
fn burn_grads<T: F>(a: &[T], b: &[T], c: &[T], target: &[T], composite: bool) -> (f64, Vec<Vec<T>>) {
    let device = Device::ndarray().autodiff();
    let vars: Vec<BTensor<1>> = [a, b, c].iter().map(|v| btensor(v, &device).require_grad()).collect();
    let fma = BurnOp::new(&user(&fma3::DECL), &[]);
    let scale = BurnOp::new(&handle("builtin/scale"), &[T::scalar(0.5)]);
    let f = match composite {
        true => BurnOp::new(&user(&smooth_abs::DECL), &[]),
        false => BurnOp::new(&handle("builtin/tanh"), &[]),
    };
    let mse = BurnOp::new(&handle("builtin/mse_loss"), &[]);
    let y: BTensor<1> = ok(fma.apply(&vars));
    let y: BTensor<1> = ok(f.apply(&[ok(scale.apply::<1, 1>(&[y]))]));
    let loss: BTensor<1> = ok(mse.apply(&[y, btensor(target, &Device::ndarray())]));
    assert_eq!(loss.shape().dims::<1>(), [1], "a scalar output is a one-element burn tensor");
    let grads = loss.backward();
    let g = vars.iter().map(|v| flat::<T, 1>(v.grad(&grads).expect("a gradient for every input"))).collect();
    (Real::to_f64(flat::<T, 1>(loss)[0]), g)
}

/// The same pipeline on this project's tape, its gradients by `Tape::backward`.
fn tape_grads<T: F>(a: &[T], b: &[T], c: &[T], target: &[T], composite: bool) -> (f64, Vec<Vec<T>>) {
    let mut t = Tape::with_registry(op_runtime::registry());
    let ps: Vec<TVar> = [("a", a), ("b", b), ("c", c)].iter().map(|(n, v)| ok(t.param(n, Tensor::vector(v.to_vec())))).collect();
    let tg = t.input("target", <T as op_runtime::Element>::DTYPE, [target.len()]);
    let y = ok(t.apply1(&user(&fma3::DECL), &ps, &[]));
    let y = ok(t.call1("builtin/scale", &[y], &[T::scalar(0.5)]));
    let y = match composite {
        true => ok(t.apply1(&user(&smooth_abs::DECL), &[y], &[])),
        false => ok(t.call1("builtin/tanh", &[y], &[])),
    };
    let loss = ok(t.call1("builtin/mse_loss", &[y, tg], &[]));
    let target = Tensor::vector(target.to_vec());
    let mut run = ok(t.run(&[(tg, &target)]));
    let value = run.scalar(loss).expect("a scalar loss");
    let grads = ok(t.backward(&mut run, loss));
    (value, ps.iter().map(|p| ok(grads.get(*p).expect("a parameter gradient").try_slice::<T>()).to_vec()).collect())
}

fn backward_matches<T: F>(composite: bool) {
    for seed in 0..3u64 {
        let n = 257 + 64 * seed as usize;
        let (a, b, c, target) = (vec_of::<T>(n, seed), vec_of::<T>(n, seed + 100), vec_of::<T>(n, seed + 200), vec_of::<T>(n, seed + 300));
        let (lb, gb) = burn_grads(&a, &b, &c, &target, composite);
        let (lt, gt) = tape_grads(&a, &b, &c, &target, composite);
        assert_eq!(lb.to_bits(), lt.to_bits(), "seed {seed}: the losses differ");
        for (k, (x, y)) in gb.iter().zip(&gt).enumerate() {
            assert!(x.iter().any(|v| Real::to_f64(*v) != 0.0), "seed {seed}: input {k}'s gradient is all zero");
            assert!(
                x.iter().zip(y).all(|(p, q)| Real::to_f64(*p) == Real::to_f64(*q)),
                "seed {seed}: input {k}: burn's gradient differs from the tape's"
            );
        }
    }
}

#[test]
fn burn_backward_equals_the_tape_gradient_in_f32_and_f64() {
    backward_matches::<f32>(false);
    backward_matches::<f64>(false);
    // A composite op's backward rematerialises its graph, as the tape does.
    backward_matches::<f32>(true);
}

#[test]
fn conv1d_window_sum_relu_and_sum_backward_equal_the_tape_in_f32_and_f64() {
    fn run<T: F>() {
        let window = BurnOp::new(&user(&window_sum::DECL), &[Scalar::U32(5)]);
        let conv = BurnOp::new(&handle("builtin/conv1d"), &[]);
        let relu = BurnOp::new(&handle("builtin/relu"), &[]);
        let sum = BurnOp::new(&handle("builtin/sum"), &[]);
        let (x, k) = (vec_of::<T>(300, 41), vec_of::<T>(5, 42));
        let device = Device::ndarray().autodiff();
        let (bx, bk) = (btensor(&x, &device).require_grad(), btensor(&k, &device).require_grad());
        let c: BTensor<1> = ok(conv.apply(&[bx.clone(), bk.clone()]));
        let y: BTensor<1> = ok(sum.apply(&[ok(relu.apply::<1, 1>(&[ok(window.apply::<1, 1>(&[c]))]))]));
        let grads = y.backward();
        let (gx, gk) = (flat::<T, 1>(bx.grad(&grads).expect("dx")), flat::<T, 1>(bk.grad(&grads).expect("dk")));
        let mut t = Tape::with_registry(op_runtime::registry());
        let (px, pk) = (ok(t.param("x", Tensor::vector(x))), ok(t.param("k", Tensor::vector(k))));
        let c = ok(t.call1("builtin/conv1d", &[px, pk], &[]));
        let m = ok(t.apply1(&user(&window_sum::DECL), &[c], &[Scalar::U32(5)]));
        let r = ok(t.call1("builtin/relu", &[m], &[]));
        let s = ok(t.call1("builtin/sum", &[r], &[]));
        let mut run = ok(t.run(&[]));
        let g = ok(t.backward(&mut run, s));
        let want_x = ok(g.get(px).expect("dx").try_slice::<T>()).to_vec();
        let want_k = ok(g.get(pk).expect("dk").try_slice::<T>()).to_vec();
        assert!(gx.iter().any(|v| Real::to_f64(*v) != 0.0));
        assert!(gx.iter().zip(&want_x).all(|(a, b)| Real::to_f64(*a) == Real::to_f64(*b)), "dx differs from the tape's");
        assert!(gk.iter().zip(&want_k).all(|(a, b)| Real::to_f64(*a) == Real::to_f64(*b)), "dk differs from the tape's");
    }
    run::<f32>();
    run::<f64>();
}

#[test]
fn backward_provenance_names_the_vjp_op_or_is_empty_for_a_host_rule() {
    let tanh = BurnOp::new(&handle("builtin/tanh"), &[]);
    let fma = BurnOp::new(&user(&fma3::DECL), &[]);
    tanh.recording(true);
    let x = btensor(&vec_of::<f32>(16, 3), &Device::ndarray().autodiff()).require_grad();
    let y: BTensor<1> = ok(fma.apply(&[x.clone(), x.clone(), x.clone()]));
    let z: BTensor<1> = ok(tanh.apply(&[y]));
    let grads = z.sum().backward();
    assert!(x.grad(&grads).is_some());
    let back = tanh.last_backward().expect("tanh's backward ran");
    assert_eq!(back.entries.iter().map(|e| e.op.to_string()).collect::<Vec<_>>(), ["builtin/tanh/vjp@1"]);
    assert!(fma.last_backward().expect("fma3's backward ran").entries.is_empty(), "fma3's VJP rule runs on the host, undispatched");
    let all = tanh.take_record();
    assert_eq!(all.entries.iter().map(|e| e.op.to_string()).collect::<Vec<_>>(), ["builtin/tanh@1", "builtin/tanh/vjp@1"]);
    assert!(tanh.take_record().entries.is_empty(), "taking the record empties it");
    assert!(tanh.take_error().is_none() && fma.take_error().is_none());
}

#[test]
fn a_broken_vjp_rule_is_caught_by_gradcheck_not_handed_to_burn() {
    match BurnOp::register_checked(&bad_square::DECL, &[]) {
        Err(Error::Gradcheck(e)) => {
            assert!(matches!(*e, op_runtime::gradcheck::GradcheckError::Mismatch { .. }), "{e}");
            assert!(e.to_string().contains("test/burn/bad_square@1"), "{e}");
        }
        other => panic!("expected Error::Gradcheck, got {other:?}"),
    }
    // A correct backward passes the same check and is adapted.
    let fma = ok(BurnOp::register_checked(&fma3::DECL, &[]));
    assert_eq!(fma.name(), "test/burn/fma3@1");
    // Unchecked, burn would use the broken rule silently: its gradient is the rule's `g x`,
    // half the true `2 x`.
    let bad = ok(BurnOp::register(&bad_square::DECL, &[]));
    let x = btensor(&[1.5f32, -2.0], &Device::ndarray().autodiff()).require_grad();
    let y: BTensor<1> = ok(bad.apply(std::slice::from_ref(&x)));
    let g = flat::<f32, 1>(x.grad(&y.sum().backward()).expect("a gradient"));
    assert_eq!(g, [1.5, -2.0]);
}

#[test]
fn bad_inputs_are_typed_errors_at_the_call() {
    let dev = Device::ndarray();
    let ad = Device::ndarray().autodiff();
    let tanh = BurnOp::new(&handle("builtin/tanh"), &[]);
    // An int tensor: no float dtype the adapter carries.
    let ints = BTensor::<1, Int>::from_data(TensorData::new(vec![1i64, 2], [2]), &dev);
    match tanh.apply_dispatch(vec![ints.into_dispatch()]) {
        Err(Error::UnsupportedDType { what, .. }) => assert_eq!(what, "input `x`"),
        other => panic!("expected Error::UnsupportedDType, got {other:?}"),
    }
    // A dtype the op's contract does not serve (smooth_abs is f32 only): refused by dispatch,
    // never converted; plain or under autodiff.
    let smooth = BurnOp::new(&user(&smooth_abs::DECL), &[]);
    for d in [&dev, &ad] {
        let x64 = match d.is_autodiff() {
            true => btensor(&[0.5f64, 1.0], d).require_grad(),
            false => btensor(&[0.5f64, 1.0], d),
        };
        match smooth.apply::<1, 1>(&[x64]) {
            Err(Error::Dispatch(e)) => assert!(e.to_string().contains("test/burn/smooth_abs"), "{e}"),
            other => panic!("expected Error::Dispatch, got {other:?}"),
        }
    }
    // A rank the contract refuses: conv1d takes vectors.
    let conv = BurnOp::new(&handle("builtin/conv1d"), &[]);
    let m = BTensor::<2>::from_data(TensorData::new(vec_of::<f32>(12, 1), [3, 4]), &ad).require_grad();
    assert!(matches!(conv.apply::<2, 2>(&[m.clone(), m]), Err(Error::Dispatch(_))));
    // A shape the contract refuses: a kernel longer than the signal (`m <= n`).
    let (x, k) = (btensor(&vec_of::<f32>(3, 2), &ad).require_grad(), btensor(&vec_of::<f32>(5, 3), &ad).require_grad());
    match conv.apply::<1, 1>(&[x, k]) {
        Err(Error::Dispatch(e)) => assert!(e.to_string().contains("builtin/conv1d"), "{e}"),
        other => panic!("expected Error::Dispatch, got {other:?}"),
    }
    // A parameter outside its constraint: an even window, and one wider than 31.
    let x = btensor(&vec_of::<f32>(64, 4), &ad).require_grad();
    for w in [4u32, 33] {
        let window = BurnOp::new(&user(&window_sum::DECL), &[Scalar::U32(w)]);
        match window.apply::<1, 1>(std::slice::from_ref(&x)) {
            Err(Error::Dispatch(e)) => assert!(e.to_string().contains("test/burn/window_sum"), "w = {w}: {e}"),
            other => panic!("w = {w}: expected Error::Dispatch, got {other:?}"),
        }
    }
    // A missing parameter.
    let scale = BurnOp::new(&handle("builtin/scale"), &[]);
    assert!(matches!(scale.apply::<1, 1>(std::slice::from_ref(&x)), Err(Error::Dispatch(_))));
    // Arity.
    assert!(matches!(tanh.apply::<1, 1>(&[x.clone(), x.clone()]), Err(Error::Arity { expected: 1, given: 2, .. })));
    // An output rank other than the one asked for.
    match tanh.apply::<1, 2>(std::slice::from_ref(&x)) {
        Err(Error::Rank { expected: 2, shape, .. }) => assert_eq!(shape, vec![64]),
        other => panic!("expected Error::Rank, got {other:?}"),
    }
    // A tracked tensor into an op declared `backward = none`: refused at the call, before burn's
    // graph holds a step its backward could not run; a plain one runs.
    let sign = BurnOp::new(&user(&sign::DECL), &[]);
    match sign.apply::<1, 1>(std::slice::from_ref(&x)) {
        Err(Error::Backward(e)) => assert!(matches!(*e, TapeError::NotDifferentiable { .. })),
        other => panic!("expected Error::Backward, got {other:?}"),
    }
    let s: BTensor<1> = ok(sign.apply(&[btensor(&[0.5f32, -2.0], &dev)]));
    assert_eq!(flat::<f32, 1>(s), [1.0, -1.0]);
    // An autodiff tensor that requires no gradient is not tracked: the op runs.
    let _: BTensor<1> = ok(sign.apply(&[btensor(&[0.5f32], &ad)]));
    // Several outputs: not `apply`, but `call`.
    let mm = BurnOp::new(&user(&minmax::DECL), &[]);
    let v = btensor(&[0.5f32, -2.0, 3.5, 1.0], &dev);
    assert!(matches!(mm.apply::<1, 1>(std::slice::from_ref(&v)), Err(Error::NoCustomOp { inputs: 1, outputs: 2, .. })));
    let outs = ok(mm.call(vec![v.clone().into_dispatch()]));
    let outs: Vec<Vec<f32>> = outs.into_iter().map(|t| flat::<f32, 1>(BTensor::<1>::from_dispatch(t))).collect();
    assert_eq!(outs, [vec![-2.0], vec![3.5]]);
    // An op-runtime output burn's float tensors cannot hold.
    let pos = BurnOp::new(&user(&positive::DECL), &[]);
    match pos.call(vec![v.into_dispatch()]) {
        Err(Error::UnsupportedDType { dtype, what, .. }) => assert_eq!((dtype.as_str(), what.as_str()), ("bool", "output 0")),
        other => panic!("expected Error::UnsupportedDType, got {other:?}"),
    }
}

/// The `Error::Device` an adapter call gave, else a panic naming what it gave.
fn device_error<T: std::fmt::Debug>(r: Result<T, Error>) -> (String, String, String) {
    match r {
        Err(Error::Device { op, what, device }) => (op, what, device),
        other => panic!("expected Error::Device, got {other:?}"),
    }
}

#[test]
fn a_tensor_on_a_backend_the_adapter_does_not_serve_is_refused_naming_the_op_and_the_input() {
    // burn-flex is compiled in for the tests only (op-burn's dev-dependencies): a second dispatch
    // backend, so a tensor the adapter does not serve exists. Refused, plain or under autodiff
    // (tracked or not), in any input position, by `apply`, `apply_dispatch` and `call` alike;
    // never copied to NdArray behind the caller's back.
    let fma = BurnOp::new(&user(&fma3::DECL), &[]);
    let flex = Device::flex();
    for (here, there) in [(Device::ndarray(), flex.clone()), (Device::ndarray().autodiff(), flex.clone().autodiff())] {
        for tracked in [false, true] {
            let track = |t: BTensor<1>| match tracked && t.is_autodiff() {
                true => t.require_grad(),
                false => t,
            };
            let ok_in = track(btensor(&[1.0f32, 2.0], &here));
            let flex_in = track(btensor(&[3.0f32, 4.0], &there));
            // Third input on flex: the first two are served, the third is named.
            let (op, what, device) = device_error(fma.apply::<1, 1>(&[ok_in.clone(), ok_in.clone(), flex_in.clone()]));
            assert!(op.starts_with("test/burn/fma3"), "op {op}");
            assert_eq!(what, "input `c`");
            assert!(device.contains("Flex"), "device {device}");
            // First input on flex.
            let (_, what, _) = device_error(fma.apply::<1, 1>(&[flex_in.clone(), ok_in.clone(), ok_in.clone()]));
            assert_eq!(what, "input `a`");
            // The message names the op, the input, the device, and the way out.
            let e = fma.apply::<1, 1>(&[flex_in.clone(), ok_in.clone(), ok_in.clone()]).expect_err("a flex input");
            let msg = e.to_string();
            for part in ["test/burn/fma3", "input `a`", "Flex", "NdArray backend only", "no implicit copy"] {
                assert!(msg.contains(part), "`{part}` not in: {msg}");
            }
            // `call` sorts its inputs the same way.
            let (_, what, _) =
                device_error(fma.call(vec![ok_in.clone().into_dispatch(), flex_in.clone().into_dispatch(), ok_in.into_dispatch()]));
            assert_eq!(what, "input `b`");
            // A one-input builtin, through `apply_dispatch`.
            let tanh = BurnOp::new(&handle("builtin/tanh"), &[]);
            let (op, what, _) = device_error(tanh.apply_dispatch(vec![flex_in.into_dispatch()]));
            assert!(op.starts_with("builtin/tanh"), "op {op}");
            assert_eq!(what, "input `x`");
        }
    }
    // Control: the same elements made on NdArray run; the refusal above is the backend alone.
    let x = btensor(&[3.0f32, 4.0], &Device::ndarray());
    let y: BTensor<1> = ok(BurnOp::new(&handle("builtin/tanh"), &[]).apply(&[x]));
    assert_eq!(flat::<f32, 1>(y).len(), 2);
}

#[test]
fn one_burn_op_serves_threads_at_once() {
    let h = handle("builtin/tanh");
    let tanh = BurnOp::new(&h, &[]);
    std::thread::scope(|s| {
        let runs: Vec<_> = (0..4u64)
            .map(|t| {
                let (tanh, h) = (tanh.clone(), h.clone());
                s.spawn(move || {
                    for k in 0..6u64 {
                        let v = vec_of::<f32>(100 + k as usize, 1000 * t + k);
                        let x = btensor(&v, &Device::ndarray().autodiff()).require_grad();
                        let y: BTensor<1> = ok(tanh.apply(std::slice::from_ref(&x)));
                        let g = flat::<f32, 1>(x.grad(&y.sum().backward()).expect("a gradient"));
                        let ones = Tensor::vector(vec![1.0f32; v.len()]);
                        let pb = ok(Tape::with_registry(op_runtime::registry()).pullback(&h, vec![Tensor::vector(v)], &[], vec![ones]));
                        let want = ok(pb.grads[0].as_ref().expect("a gradient").try_slice::<f32>()).to_vec();
                        assert_eq!(g, want, "thread {t}, call {k}: the gradient differs from the pullback's");
                    }
                })
            })
            .collect();
        runs.into_iter().for_each(|r| r.join().expect("a thread panicked"));
    });
    assert!(tanh.last_forward().is_some() && tanh.last_backward().is_some());
}
