//! The candle adapter against this project's own paths: a candle forward equals the registry's
//! call bit for bit, candle's `backward` equals the tape's gradient (VJP ops, a VJP rule, a
//! composite graph; f32 and f64), strided inputs are copied or refused and never misread, and
//! every dtype, arity and backward refusal is a typed error.

use candle_core::{DType as CDType, Device, Tensor as CTensor, Var};
use op_candle::{CandleOp, Error, Strided};
use op_runtime::graph::{Graph, GraphError};
use op_runtime::train::TapeError;
use op_runtime::Var as TVar;
use op_runtime::{op, DType, OpHandle, Real, Scalar, Tape, Tensor};

/// `a * b + c`: three tensor inputs, a VJP rule and no VJP kernels (its backward runs the rule).
#[op(name = "test/candle/fma3", version = 1, signature<T: f32 | f64>(a: T[n], b: T[n], c: T[n]) -> T[n],
     category = elementwise, tolerance = ulp(2), backward = vjp(fma3_vjp))]
pub fn fma3<T: Real>(a: &[T], b: &[T], c: &[T]) -> Vec<T> {
    a.iter().zip(b).zip(c).map(|((x, y), z)| *x * *y + *z).collect()
}
/// VJP of `fma3`.
pub fn fma3_vjp<T: Real>(a: &[T], b: &[T], _c: &[T], g: &[T]) -> (Vec<T>, Vec<T>, Vec<T>) {
    (g.iter().zip(b).map(|(g, y)| *g * *y).collect(), g.iter().zip(a).map(|(g, x)| *g * *x).collect(), g.to_vec())
}

/// `x tanh(4x)`, differentiated through its graph.
#[op(name = "test/candle/smooth_abs", version = 1, signature(x: f32[n]) -> f32[n],
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

/// The smallest and largest element: two outputs.
#[op(name = "test/candle/minmax", version = 1, signature(x: f32[n] where n >= 1) -> (lo: f32[], hi: f32[]),
     category = selection, tolerance = exact, backward = none)]
pub fn minmax<T: Real>(x: &[T]) -> (Vec<T>, Vec<T>) {
    let lo = x.iter().copied().fold(x[0], |a, b| if b < a { b } else { a });
    let hi = x.iter().copied().fold(x[0], |a, b| if b > a { b } else { a });
    (vec![lo], vec![hi])
}

/// The sign of each element: not differentiable.
#[op(name = "test/candle/sign", version = 1, signature(x: f32[n]) -> f32[n],
     category = selection, tolerance = exact, backward = none)]
pub fn sign<T: Real>(x: &[T]) -> Vec<T> {
    x.iter()
        .map(|v| {
            if *v > T::zero() {
                T::one()
            } else if *v < T::zero() {
                T::zero() - T::one()
            } else {
                T::zero()
            }
        })
        .collect()
}

/// Whether each element is positive: a `bool` output, which candle has no dtype for. (Its
/// generated conformance test is off: conformance's guard canaries are not valid `bool`s.)
#[op(name = "test/candle/positive", version = 1, signature(x: f32[n]) -> bool[n],
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
trait F: Real + candle_core::WithDType + op_runtime::Element {
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

fn ctensor<T: F>(v: &[T]) -> CTensor {
    ok(CTensor::from_slice(v, v.len(), &Device::Cpu))
}

fn flat<T: F>(t: &CTensor) -> Vec<T> {
    ok(ok(t.flatten_all()).to_vec1::<T>())
}

/// The registry's call on runtime tensors: its outputs flattened, and its provenance entry.
fn registry_call<T: F>(h: &OpHandle, inputs: &[Vec<T>], params: &[Scalar]) -> (Vec<T>, op_runtime::provenance::ProvenanceEntry) {
    let ts: Vec<Tensor> = inputs.iter().map(|v| Tensor::vector(v.clone())).collect();
    let refs: Vec<&Tensor> = ts.iter().collect();
    let out = ok(h.call(&refs, params));
    (ok(out.outputs[0].try_slice::<T>()).to_vec(), out.provenance)
}

fn same_bits<T: F>(a: &[T], b: &[T]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| Real::to_f64(*x).to_bits() == Real::to_f64(*y).to_bits())
}

fn forward_matches<T: F>(n: usize, seed: u64) {
    let cases: Vec<(OpHandle, usize, Vec<Scalar>)> = vec![
        (handle("builtin/tanh"), 1, vec![]),
        (handle("builtin/scale"), 1, vec![T::scalar(0.375)]),
        (handle("builtin/mse_loss"), 2, vec![]),
        (handle("builtin/mul"), 2, vec![]),
        (user(&fma3::DECL), 3, vec![]),
    ];
    for (c, (h, arity, params)) in cases.into_iter().enumerate() {
        let inputs: Vec<Vec<T>> = (0..arity).map(|k| vec_of::<T>(n, 1000 * seed + 10 * c as u64 + k as u64)).collect();
        let cts: Vec<CTensor> = inputs.iter().map(|v| ctensor(v)).collect();
        let refs: Vec<&CTensor> = cts.iter().collect();
        let op = CandleOp::new(&h, &params);
        let got = ok(op.apply(&refs));
        let (want, prov) = registry_call(&h, &inputs, &params);
        assert!(same_bits(&flat::<T>(&got), &want), "{} (n {n}, seed {seed}): candle forward differs from the registry call", h.id());
        let entry = op.last_forward().expect("the forward's provenance");
        assert_eq!((&entry.op, entry.content_hash, entry.backend), (&prov.op, prov.content_hash, prov.backend), "{}", h.id());
    }
}

#[test]
fn a_candle_forward_equals_the_registry_call_bit_for_bit() {
    for (seed, n) in [1usize, 2, 7, 64, 1000, 4097, 65_537].into_iter().enumerate() {
        forward_matches::<f32>(n, seed as u64);
        forward_matches::<f64>(n, seed as u64);
    }
    // `tanh` on f32 has a `cpu` kernel: the adapter's call runs it, as the registry's does.
    let tanh = CandleOp::new(&handle("builtin/tanh"), &[]);
    ok(tanh.apply(&[&ctensor(&vec_of::<f32>(64, 1))]));
    assert_eq!(tanh.last_forward().map(|e| e.backend), Some(op_runtime::BackendKind::Cpu));
}

/// candle: `loss = mse_loss(f(scale(fma3(a, b, c), 0.5)), target)` with `f` tanh (or the
/// composite `smooth_abs` in f32), its gradients by candle's `backward`.
fn candle_grads<T: F>(a: &[T], b: &[T], c: &[T], target: &[T], composite: bool) -> (f64, Vec<Vec<T>>) {
    let vars: Vec<Var> = [a, b, c].iter().map(|v| ok(Var::from_slice(v, v.len(), &Device::Cpu))).collect();
    let fma = CandleOp::new(&user(&fma3::DECL), &[]);
    let scale = CandleOp::new(&handle("builtin/scale"), &[T::scalar(0.5)]);
    let f = match composite {
        true => CandleOp::new(&user(&smooth_abs::DECL), &[]),
        false => CandleOp::new(&handle("builtin/tanh"), &[]),
    };
    let mse = CandleOp::new(&handle("builtin/mse_loss"), &[]);
    let y = ok(fma.apply(&[vars[0].as_tensor(), vars[1].as_tensor(), vars[2].as_tensor()]));
    let y = ok(f.apply(&[&ok(scale.apply(&[&y]))]));
    let loss = ok(mse.apply(&[&y, &ctensor(target)]));
    let grads = ok(loss.backward());
    let g = vars.iter().map(|v| flat::<T>(grads.get(v.as_tensor()).expect("a gradient for every input"))).collect();
    (Real::to_f64(ok(loss.to_scalar::<T>())), g)
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
    for seed in 0..4u64 {
        let n = 257 + 64 * seed as usize;
        let (a, b, c, target) = (vec_of::<T>(n, seed), vec_of::<T>(n, seed + 100), vec_of::<T>(n, seed + 200), vec_of::<T>(n, seed + 300));
        let (lc, gc) = candle_grads(&a, &b, &c, &target, composite);
        let (lt, gt) = tape_grads(&a, &b, &c, &target, composite);
        assert_eq!(lc.to_bits(), lt.to_bits(), "seed {seed}: the losses differ");
        for (k, (x, y)) in gc.iter().zip(&gt).enumerate() {
            assert!(x.iter().any(|v| Real::to_f64(*v) != 0.0), "seed {seed}: input {k}'s gradient is all zero");
            // candle sums each gradient into zeros: `0 + g` is `g` (a -0 becomes +0, equal by value).
            assert!(
                x.iter().zip(y).all(|(p, q)| Real::to_f64(*p) == Real::to_f64(*q)),
                "seed {seed}: input {k}: candle's gradient differs from the tape's"
            );
        }
    }
}

#[test]
fn candle_backward_equals_the_tape_gradient_in_f32_and_f64() {
    backward_matches::<f32>(false);
    backward_matches::<f64>(false);
    // A composite op's backward rematerialises its graph, as the tape does.
    backward_matches::<f32>(true);
}

#[test]
fn backward_provenance_names_the_vjp_op_or_is_empty_for_a_host_rule() {
    let tanh = CandleOp::new(&handle("builtin/tanh"), &[]);
    let fma = CandleOp::new(&user(&fma3::DECL), &[]);
    tanh.recording(true);
    let x = ok(Var::from_slice(&vec_of::<f32>(16, 3), 16, &Device::Cpu));
    let y = ok(fma.apply(&[x.as_tensor(), x.as_tensor(), x.as_tensor()]));
    let z = ok(tanh.apply(&[&y]));
    ok(ok(z.sum_all()).backward());
    let back = tanh.last_backward().expect("tanh's backward ran");
    assert_eq!(back.entries.iter().map(|e| e.op.to_string()).collect::<Vec<_>>(), ["builtin/tanh/vjp@1"]);
    assert!(fma.last_backward().expect("fma3's backward ran").entries.is_empty(), "fma3's VJP rule runs on the host, undispatched");
    let all = tanh.take_record();
    assert_eq!(all.entries.iter().map(|e| e.op.to_string()).collect::<Vec<_>>(), ["builtin/tanh@1", "builtin/tanh/vjp@1"]);
    assert!(tanh.take_record().entries.is_empty(), "taking the record empties it");
}

#[test]
fn strided_inputs_are_copied_or_refused_and_never_misread() {
    let m: Vec<f32> = vec_of(12, 7);
    let mat = ok(CTensor::from_slice(&m, (3, 4), &Device::Cpu));
    let tanh_h = handle("builtin/tanh");
    let tanh = CandleOp::new(&tanh_h, &[]);
    // A column: shape [3], stride [4].
    let col = ok(ok(mat.narrow(1, 1, 1)).squeeze(1));
    assert!(!col.is_contiguous());
    let want = registry_call(&tanh_h, &[vec![m[1], m[5], m[9]]], &[]).0;
    assert!(same_bits(&flat::<f32>(&ok(tanh.apply(&[&col]))), &want), "a copied column reads its own elements");
    match tanh.clone().strided(Strided::Refuse).apply(&[&col]) {
        Err(Error::Strided { shape, stride, .. }) => assert_eq!((shape, stride), (vec![3], vec![4])),
        other => panic!("expected Error::Strided, got {other:?}"),
    }
    // A broadcast scalar: shape [5], stride [0].
    let one = ok(CTensor::new(&[0.625f32], &Device::Cpu));
    let wide = ok(one.broadcast_as(5));
    assert_eq!((wide.layout().stride(), wide.is_contiguous()), (&[0][..], false));
    let want = registry_call(&tanh_h, &[vec![0.625f32; 5]], &[]).0;
    assert!(same_bits(&flat::<f32>(&ok(tanh.apply(&[&wide]))), &want), "a copied broadcast reads its one element five times");
    match tanh.clone().strided(Strided::Refuse).apply(&[&wide]) {
        Err(Error::Strided { shape, stride, offset, .. }) => assert_eq!((shape, stride, offset), (vec![5], vec![0], 0)),
        other => panic!("expected Error::Strided, got {other:?}"),
    }
    // A contiguous view at an offset: its own range of the storage.
    let v: Vec<f32> = vec_of(10, 8);
    let mid = ok(ctensor(&v).narrow(0, 2, 5));
    assert!(mid.is_contiguous() && mid.layout().start_offset() == 2);
    let want = registry_call(&tanh_h, &[v[2..7].to_vec()], &[]).0;
    assert!(same_bits(&flat::<f32>(&ok(tanh.strided(Strided::Refuse).apply(&[&mid]))), &want));
    // A transposed matrix into matmul equals the call on its contiguous copy.
    let mm = CandleOp::new(&handle("builtin/matmul"), &[]);
    let a = ok(CTensor::from_slice(&vec_of::<f32>(6, 9), (2, 3), &Device::Cpu));
    // A [4, 3] matrix transposed: shape [3, 4], strides [1, 3].
    let b = ok(ok(CTensor::from_slice(&vec_of::<f32>(12, 10), (4, 3), &Device::Cpu)).t());
    assert_eq!((b.dims(), b.layout().stride(), b.is_contiguous()), (&[3, 4][..], &[1, 3][..], false));
    let got = flat::<f32>(&ok(mm.apply(&[&a, &b])));
    let want = flat::<f32>(&ok(mm.apply(&[&a, &ok(b.contiguous())])));
    assert!(same_bits(&got, &want));
    // Gradients reach a strided view's source through the copy.
    let x = ok(Var::from_slice(&m, (3, 4), &Device::Cpu));
    let col = ok(ok(x.as_tensor().narrow(1, 1, 1)).squeeze(1));
    let g = ok(ok(ok(tanh_apply(&col)).sum_all()).backward());
    let gx = flat::<f32>(g.get(x.as_tensor()).expect("a gradient"));
    let xc = ok(Var::from_slice(&[m[1], m[5], m[9]], 3, &Device::Cpu));
    let gc = ok(ok(ok(tanh_apply(xc.as_tensor())).sum_all()).backward());
    let gc = flat::<f32>(gc.get(xc.as_tensor()).expect("a gradient"));
    for (i, v) in gx.iter().enumerate() {
        let want = if i % 4 == 1 { gc[i / 4] } else { 0.0 };
        assert_eq!(*v, want, "element {i} of the strided source's gradient");
    }
}

fn tanh_apply(x: &CTensor) -> Result<CTensor, Error> {
    CandleOp::new(&handle("builtin/tanh"), &[]).apply(&[x])
}

#[test]
fn dtypes_without_a_counterpart_are_typed_errors() {
    let tanh = CandleOp::new(&handle("builtin/tanh"), &[]);
    let f8 = ok(ok(CTensor::new(&[0.5f32, 1.0], &Device::Cpu)).to_dtype(CDType::F8E4M3));
    match tanh.apply(&[&f8]) {
        Err(Error::UnsupportedDType { dtype, .. }) => assert_eq!(dtype, "F8E4M3"),
        other => panic!("expected Error::UnsupportedDType, got {other:?}"),
    }
    assert!(matches!(tanh.call(&[&f8]), Err(Error::UnsupportedDType { .. })));
    // A dtype both have but the op does not serve: refused by dispatch, never converted.
    let u = ok(CTensor::new(&[1u8, 2], &Device::Cpu));
    assert!(matches!(tanh.apply(&[&u]), Err(Error::Dispatch(_))), "{:?}", tanh.apply(&[&u]));
    // An op-runtime output candle has no dtype for.
    let pos = CandleOp::new(&user(&positive::DECL), &[]);
    match pos.call(&[&ctensor(&[1.0f32, -1.0])]) {
        Err(Error::UnsupportedDType { dtype, what, .. }) => assert_eq!((dtype.as_str(), what.as_str()), ("bool", "output 0")),
        other => panic!("expected Error::UnsupportedDType, got {other:?}"),
    }
    // Every dtype both have maps one to one.
    for (c, r) in [(CDType::F16, DType::f16), (CDType::BF16, DType::bf16), (CDType::F32, DType::f32), (CDType::F64, DType::f64)] {
        assert_eq!(op_candle::runtime_dtype(c), Some(r));
    }
}

#[test]
fn half_precision_tensors_run_their_instance() {
    let tanh_h = handle("builtin/tanh");
    let tanh = CandleOp::new(&tanh_h, &[]);
    for dt in [CDType::F16, CDType::BF16] {
        let x = ok(ctensor(&vec_of::<f32>(33, 4)).to_dtype(dt));
        let y = ok(tanh.apply(&[&x]));
        assert_eq!(y.dtype(), dt);
        let rt = ok(Tensor::from_f64(
            op_candle::runtime_dtype(dt).expect("a runtime dtype"),
            [33],
            &ok(ok(x.to_dtype(CDType::F64)).to_vec1::<f64>()),
        ));
        let want = ok(ok(tanh_h.call(&[&rt], &[])).outputs[0].to_dtype(DType::f64));
        assert_eq!(ok(ok(y.to_dtype(CDType::F64)).to_vec1::<f64>()), ok(want.try_slice::<f64>()).to_vec(), "{dt:?}");
    }
}

#[test]
fn ops_candle_cannot_carry_go_through_call() {
    let h = user(&minmax::DECL);
    let op = CandleOp::new(&h, &[]);
    let x = ctensor(&[0.5f32, -2.0, 3.5, 1.0]);
    assert!(matches!(op.apply(&[&x]), Err(Error::NoCustomOp { inputs: 1, outputs: 2, .. })));
    let outs = ok(op.call(&[&x]));
    let want = ok(h.call(&[&Tensor::vector(vec![0.5f32, -2.0, 3.5, 1.0])], &[]));
    assert_eq!(outs.len(), 2);
    for (o, w) in outs.iter().zip(&want.outputs) {
        assert_eq!((o.dims(), flat::<f32>(o)), (w.shape(), ok(w.try_slice::<f32>()).to_vec()));
    }
    let tanh = CandleOp::new(&handle("builtin/tanh"), &[]);
    assert!(matches!(tanh.apply(&[&x, &x]), Err(Error::Arity { expected: 1, given: 2, .. })));
}

#[test]
fn a_backward_through_a_non_differentiable_op_is_a_typed_error() {
    let sign = CandleOp::new(&user(&sign::DECL), &[]);
    let x = ok(Var::from_slice(&[0.5f32, -2.0], 2, &Device::Cpu));
    let y = ok(sign.apply(&[x.as_tensor()]));
    let e = ok(y.sum_all()).backward().expect_err("sign declares `backward = none`");
    assert!(e.to_string().contains("backward = none"), "{e}");
    assert!(matches!(sign.take_error(), Some(Error::Backward(e)) if matches!(*e, TapeError::NotDifferentiable { .. })));
}

#[test]
fn a_registry_error_in_the_forward_comes_back_typed() {
    // `scale` without its parameter: validation through the registry refuses the call.
    let scale = CandleOp::new(&handle("builtin/scale"), &[]);
    match scale.apply(&[&ctensor(&[1.0f32, 2.0])]) {
        Err(Error::Dispatch(e)) => assert!(e.to_string().contains("builtin/scale"), "{e}"),
        other => panic!("expected Error::Dispatch, got {other:?}"),
    }
}

#[test]
fn one_candle_op_serves_threads_at_once() {
    let h = handle("builtin/tanh");
    let tanh = CandleOp::new(&h, &[]);
    std::thread::scope(|s| {
        let runs: Vec<_> = (0..4u64)
            .map(|t| {
                let (tanh, h) = (tanh.clone(), h.clone());
                s.spawn(move || {
                    for k in 0..8u64 {
                        let v = vec_of::<f32>(100 + k as usize, 1000 * t + k);
                        // A fresh adapter of the same op interns the same name concurrently.
                        assert_eq!(CandleOp::new(&h, &[]).name(), "builtin/tanh@1");
                        let x = ok(Var::from_slice(&v, v.len(), &Device::Cpu));
                        let y = ok(tanh.apply(&[x.as_tensor()]));
                        assert!(same_bits(&flat::<f32>(&y), &registry_call(&h, std::slice::from_ref(&v), &[]).0), "thread {t}, call {k}");
                        let g = ok(ok(y.sum_all()).backward());
                        let g = flat::<f32>(g.get(x.as_tensor()).expect("a gradient"));
                        let ones = Tensor::vector(vec![1.0f32; v.len()]);
                        let pb = ok(Tape::with_registry(op_runtime::registry()).pullback(&h, vec![Tensor::vector(v)], &[], vec![ones]));
                        let want = ok(pb.grads[0].as_ref().expect("a gradient").try_slice::<f32>()).to_vec();
                        assert!(g.iter().zip(&want).all(|(a, b)| a == b), "thread {t}, call {k}: the gradient differs from the pullback's");
                    }
                })
            })
            .collect();
        runs.into_iter().for_each(|r| r.join().expect("a thread panicked"));
    });
    assert!(tanh.last_forward().is_some() && tanh.last_backward().is_some());
}
