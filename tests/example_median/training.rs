//! Training through ops on a tape: a pipeline of built-in and user ops runs forward through
//! dispatch and backward through the declared VJPs (composite ops through their graph), SGD
//! updates the parameters, the planner budgets memory before anything runs, and every run
//! yields a provenance record where user and built-in ops look alike.

use crate::median;

use op_runtime::graph::{Graph, GraphError};
use op_runtime::provenance::ProvenanceRecord;
use op_runtime::train::Sgd;
use op_runtime::train::{BufferKind, Tape, TapeError, Var};
use op_runtime::{op, BackendKind, CallOptions, DType, Real, Registry, Scalar, Tensor};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Counts bytes allocated by the current thread while enabled (to show a refused plan
/// allocates nothing).
struct Counting;
thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static BYTES: Cell<usize> = const { Cell::new(0) };
}
fn count(n: usize) {
    let _ = ON.try_with(|on| {
        if on.get() {
            let _ = BYTES.try_with(|b| b.set(b.get() + n));
        }
    });
}
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count(l.size());
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        count(l.size());
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        count(n);
        unsafe { System.realloc(p, l, n) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
}
#[global_allocator]
static ALLOC: Counting = Counting;

/// Smoothed absolute value `x tanh(4 x)`, whose backward the tape derives from built-ins.
#[op(name = "test/train/smooth_abs", version = 1, signature(x: f32[n]) -> f32[n],
     category = transcendental, tolerance = ulp(16), backward = composite(smooth_abs_graph))]
pub fn smooth_abs<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * (*v * T::from_f64(4.0)).tanh()).collect()
}
/// The graph: `mul(x, tanh(scale(x, 4)))`.
pub fn smooth_abs_graph(t: &mut dyn Graph, x: &[Var], _p: &[Scalar]) -> Result<Vec<Var>, GraphError> {
    let kx = t.call1("builtin/scale", &[x[0]], &[Scalar::F32(4.0)])?;
    let th = t.call1("builtin/tanh", &[kx], &[])?;
    Ok(vec![t.call1("builtin/mul", &[x[0], th], &[])?])
}

fn ok<T, E: std::fmt::Display>(r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

/// A smooth signal, and the same with one-sample spikes every 37 samples.
fn signal(n: usize) -> (Vec<f32>, Vec<f32>) {
    let clean: Vec<f32> = (0..n).map(|i| (i as f32 * 0.01).sin() + 0.3 * (i as f32 * 0.003).cos()).collect();
    let mut noisy = clean.clone();
    for i in (5..n).step_by(37) {
        noisy[i] += if i % 2 == 0 { 4.0 } else { -4.0 };
    }
    (clean, noisy)
}

struct Despike {
    tape: Tape,
    x: Var,
    clean: Var,
    kernel: Var,
    loss: Var,
}

/// conv1d (trainable 5-tap kernel) -> windowed median (w = 7) -> mse_loss against the clean signal.
fn despike(reg: &Registry, n: usize) -> Despike {
    let med = ok(reg.register(&median::windowed_median::DECL));
    let mut t = Tape::with_registry(reg);
    let x = t.input("noisy", DType::f32, [n]);
    let kernel = ok(t.param("kernel", Tensor::vector(vec![0.1f32, 0.1, 0.4, 0.1, 0.1])));
    let y = ok(t.call1("builtin/conv1d", &[x, kernel], &[]));
    let m = ok(t.apply1(&med, &[y], &[Scalar::U32(7)]));
    let clean = t.input("clean", DType::f32, [n - 4 - 6]);
    let loss = ok(t.call1("builtin/mse_loss", &[m, clean], &[]));
    Despike { tape: t, x, clean, kernel, loss }
}

fn train(d: &mut Despike, n: usize, steps: usize) -> (Vec<f64>, ProvenanceRecord) {
    let (clean, noisy) = signal(n);
    let xv = Tensor::vector(noisy);
    let cv = Tensor::vector(clean[5..n - 5].to_vec());
    let mut losses = Vec::new();
    let mut last = ProvenanceRecord::default();
    for _ in 0..steps {
        let mut run = ok(d.tape.run(&[(d.x, &xv), (d.clean, &cv)]));
        losses.push(run.scalar(d.loss).unwrap_or(f64::NAN));
        let g = ok(d.tape.backward(&mut run, d.loss));
        assert!(g.get(d.kernel).is_some());
        ok(Sgd::new(0.1).step(&mut d.tape, &g));
        last = run.provenance;
    }
    (losses, last)
}

#[test]
fn a_pipeline_of_builtin_and_user_ops_trains_with_sgd() {
    let reg = Registry::with_builtins();
    let n = 2000;
    let mut d = despike(&reg, n);
    let (losses, prov) = train(&mut d, n, 8);
    println!("losses {losses:?}");
    for w in losses.windows(2) {
        assert!(w[1] < w[0], "the loss must fall every step: {losses:?}");
    }
    assert!(losses[losses.len() - 1] < 0.5 * losses[0], "{losses:?}");
    // Forward through dispatch: one provenance entry per op, in order; then backward through
    // each op's VJP op (all three declare VJP kernels), last op first.
    let ops: Vec<&str> = prov.entries.iter().map(|e| &*e.op).collect();
    assert_eq!(
        ops,
        [
            "builtin/conv1d@1",
            "user/example/windowed_median@1",
            "builtin/mse_loss@1",
            "builtin/mse_loss/vjp@1",
            "user/example/windowed_median/vjp@1",
            "builtin/conv1d/vjp@1"
        ]
    );
}

#[test]
fn gradients_match_on_every_backend() {
    // The same step on the reference backend and on default dispatch (wgpu where available).
    let n = 600;
    let reg = Registry::with_builtins();
    let mut a = despike(&reg, n);
    a.tape.set_call_options(CallOptions::on(BackendKind::Reference));
    let mut b = despike(&reg, n);
    let (la, pa) = train(&mut a, n, 1);
    let (lb, _) = train(&mut b, n, 1);
    assert!(pa.entries.iter().all(|e| e.backend == BackendKind::Reference));
    assert!((la[0] - lb[0]).abs() <= 1e-4 * la[0].abs().max(1e-6), "{la:?} vs {lb:?}");
    let ka = a.tape.param_value(a.kernel).and_then(|t| t.as_slice::<f32>()).map(<[f32]>::to_vec).unwrap_or_default();
    let kb = b.tape.param_value(b.kernel).and_then(|t| t.as_slice::<f32>()).map(<[f32]>::to_vec).unwrap_or_default();
    for (x, y) in ka.iter().zip(&kb) {
        assert!((x - y).abs() < 1e-4, "{ka:?} vs {kb:?}");
    }
}

#[test]
fn composite_ops_train_through_their_graph() {
    // d/dw sum(smooth_abs(w)) through the composite graph equals the analytic derivative.
    let reg = Registry::with_builtins();
    let h = ok(reg.register(&smooth_abs::DECL));
    let mut t = Tape::with_registry(&reg);
    let w0 = vec![-0.7f32, -0.1, 0.0, 0.2, 0.9];
    let w = ok(t.param("w", Tensor::vector(w0.clone())));
    let y = ok(t.apply1(&h, &[w], &[]));
    let loss = ok(t.call1("builtin/sum", &[y], &[]));
    let mut run = ok(t.run(&[]));
    let g = ok(t.backward(&mut run, loss));
    let got = g.get(w).and_then(|v| v.as_slice::<f32>()).map(<[f32]>::to_vec).unwrap_or_default();
    for (x, gx) in w0.iter().zip(&got) {
        let th = (4.0 * x).tanh();
        let want = th + 4.0 * x * (1.0 - th * th);
        assert!((gx - want).abs() < 1e-5, "{got:?}");
    }
    // Forward ran the op itself; backward ran `sum`'s VJP op, then rematerialised the graph and
    // differentiated it (all recorded in provenance): `mul`, `tanh` and `scale` through their
    // VJP ops (dispatched calls: each declares VJP kernels).
    let ops: Vec<&str> = run.provenance.entries.iter().map(|e| &*e.op).collect();
    assert_eq!(
        ops,
        [
            "test/train/smooth_abs@1",
            "builtin/sum@1",
            "builtin/sum/vjp@1",
            "builtin/scale@1",
            "builtin/tanh@1",
            "builtin/mul@1",
            "builtin/mul/vjp@1",
            "builtin/tanh/vjp@1",
            "builtin/scale/vjp@1"
        ]
    );
    // The planner counts the composite's rematerialised intermediates.
    let plan = t.plan();
    assert!(plan.entries.iter().any(|e| e.kind == BufferKind::Composite && e.op == "builtin/tanh@1"), "{plan}");
    ok(Sgd::new(0.1).step(&mut t, &g));
}

#[test]
fn the_planner_sizes_every_buffer_before_running() {
    let reg = Registry::with_builtins();
    let d = despike(&reg, 1000);
    let plan = d.tape.plan();
    println!("{plan}");
    let fwd: Vec<(String, usize)> =
        plan.entries.iter().filter(|e| e.kind == BufferKind::Forward).map(|e| (e.op.clone(), e.bytes)).collect();
    assert_eq!(
        fwd,
        [
            ("builtin/conv1d@1".to_string(), 996 * 4),
            ("user/example/windowed_median@1".to_string(), 990 * 4),
            ("builtin/mse_loss@1".to_string(), 4)
        ]
    );
    let grads: usize = plan.entries.iter().filter(|e| e.kind == BufferKind::Gradient).map(|e| e.bytes).sum();
    assert_eq!(grads, 5 * 4 + 996 * 4 + 990 * 4 + 4);
    assert_eq!(plan.total_bytes, 996 * 4 + 990 * 4 + 4 + grads);
    assert!(plan.fits());
}

#[test]
fn a_budget_overrun_is_refused_before_anything_is_allocated() {
    let reg = Registry::with_builtins();
    let n = 1usize << 36; // 256 GiB of f32: a single intermediate cannot be allocated here
    let mut d = despike(&reg, n);
    d.tape.set_budget(Some(1 << 30));
    let prepares = reg.stats().prepares.load(std::sync::atomic::Ordering::Relaxed);
    ON.with(|o| o.set(true));
    BYTES.with(|b| b.set(0));
    let r = d.tape.run(&[]);
    ON.with(|o| o.set(false));
    let allocated = BYTES.with(Cell::get);
    let err = match r {
        Err(e) => e,
        Ok(_) => panic!("a 256 GiB plan must be refused"),
    };
    assert!(allocated < 64 * 1024, "the refusal allocated {allocated} bytes");
    assert_eq!(reg.stats().prepares.load(std::sync::atomic::Ordering::Relaxed), prepares, "no kernel was built");
    match &err {
        TapeError::OverBudget { budget, total, largest } => {
            assert_eq!(*budget, 1 << 30);
            assert!(*total > 3 * (n - 4) * 4);
            assert_eq!(largest.len(), 3);
            assert!(largest[0].bytes >= largest[1].bytes && largest[1].bytes >= largest[2].bytes);
            assert!(largest.iter().any(|e| e.op == "builtin/conv1d@1"));
        }
        other => panic!("{other:?}"),
    }
    let msg = err.to_string();
    println!("{msg}");
    assert!(msg.contains("over its budget of 1.0 GiB; nothing was allocated"), "{msg}");
    assert!(msg.contains("builtin/conv1d@1") && msg.contains("user/example/windowed_median@1"), "{msg}");
}

#[test]
fn every_run_yields_a_provenance_record_where_user_and_builtin_ops_look_alike() {
    let reg = Registry::with_builtins();
    let n = 300;
    let mut d = despike(&reg, n);
    d.tape.set_call_options(CallOptions::on(BackendKind::Reference));
    // Receipts for every op in the pipeline and, in the order backward runs them, their VJP
    // ops, minted by conformance on the reference backend.
    let mut receipts = Vec::new();
    let names = ["builtin/conv1d", "user/example/windowed_median", "builtin/mse_loss"];
    for name in names {
        let h = ok(reg.lookup(name));
        receipts.push(ok(op_runtime::conformance::conform(&h, BackendKind::Reference)));
    }
    for name in names.iter().rev() {
        let v = ok(reg.lookup(name)).vjp_op().expect("the op declares VJP kernels");
        receipts.push(ok(op_runtime::conformance::conform(&v, BackendKind::Reference)));
    }
    d.tape.present_receipts(receipts.clone());
    let (_, prov) = train(&mut d, n, 1);
    println!("{prov}");
    assert_eq!(prov.entries.len(), 6);
    for (e, r) in prov.entries.iter().zip(&receipts) {
        assert_eq!(&*e.op, r.op.as_str());
        assert_eq!(op_runtime_hex(&e.content_hash), r.content_hash);
        assert_eq!(e.backend, BackendKind::Reference);
        assert_eq!(e.receipt.as_deref(), Some(r.digest.as_str()));
    }
    // The user op's entry has exactly the built-ins' form: same fields, same kinds of values.
    let json = prov.to_json();
    let v: serde_json::Value = ok(serde_json::from_str(&json));
    let keys = |i: usize| v["entries"][i].as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()).unwrap_or_default();
    assert_eq!(keys(0), keys(1));
    assert_eq!(keys(1), keys(2));
    let back: ProvenanceRecord = ok(serde_json::from_str(&json));
    assert_eq!(back, prov);
    let text = prov.to_string();
    assert!(text.contains("user/example/windowed_median@1") && text.contains("builtin/conv1d@1"), "{text}");
    assert!(!text.contains("receipt -"), "{text}");
}

fn op_runtime_hex(h: &[u8; 32]) -> String {
    h.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn feeds_are_checked_with_typed_errors() {
    let reg = Registry::with_builtins();
    let d = despike(&reg, 100);
    let short = Tensor::vector(vec![0.0f32; 99]);
    match d.tape.run(&[(d.x, &short)]) {
        Err(TapeError::Feed { name, problem, .. }) => {
            assert_eq!(name, "noisy");
            assert!(problem.contains("declared f32[100], fed f32[99]"), "{problem}");
        }
        other => panic!("{other:?}"),
    }
    let x = Tensor::vector(vec![0.0f32; 100]);
    match d.tape.run(&[(d.x, &x)]) {
        Err(TapeError::Feed { name, problem, .. }) => assert!(name == "clean" && problem == "was not fed"),
        other => panic!("{other:?}"),
    }
    // Shapes are validated when ops are recorded, with the dispatch error naming the op.
    let mut t = Tape::with_registry(&reg);
    let a = t.input("a", DType::f32, [3]);
    let b = t.input("b", DType::f32, [4]);
    match t.call("builtin/add", &[a, b], &[]) {
        Err(TapeError::Dispatch(e)) => assert!(e.to_string().contains("op `builtin/add@1`"), "{e}"),
        other => panic!("{other:?}"),
    }
    // A loss must be one element.
    let mut t = Tape::with_registry(&reg);
    let w = ok(t.param("w", Tensor::vector(vec![1.0f32, 2.0])));
    let y = ok(t.call1("builtin/exp", &[w], &[]));
    let mut run = ok(t.run(&[]));
    assert!(matches!(t.backward(&mut run, y), Err(TapeError::NotScalarLoss { .. })));
}

#[test]
fn tapes_train_concurrently_without_shared_state() {
    let reg = Registry::with_builtins();
    let results: Vec<Vec<f64>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let reg = reg.clone();
                s.spawn(move || {
                    let mut d = despike(&reg, 500);
                    d.tape.set_call_options(CallOptions::on(BackendKind::Reference));
                    train(&mut d, 500, 3).0
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    });
    for r in &results {
        assert_eq!(r, &results[0]);
        assert_eq!(r.len(), 3);
    }
}

/// conv1d (trainable 5-tap kernel) -> tanh -> mse_loss, all built-ins, at `dtype`; returns the
/// loss before each of `steps` SGD steps, the trained kernel (as f64) and the backends run.
fn builtin_pipeline(dtype: DType, steps: usize) -> (Vec<f64>, Vec<f64>, Vec<BackendKind>) {
    let reg = Registry::with_builtins();
    let n = 400;
    let (clean, noisy) = signal(n);
    let at = |v: Vec<f32>| ok(Tensor::vector(v).to_dtype(dtype));
    let mut t = Tape::with_registry(&reg);
    let x = t.input("noisy", dtype, [n]);
    let kernel = ok(t.param("kernel", at(vec![0.1, 0.1, 0.4, 0.1, 0.1])));
    let y = ok(t.call1("builtin/conv1d", &[x, kernel], &[]));
    let y = ok(t.call1("builtin/tanh", &[y], &[]));
    let target = t.input("clean", dtype, [n - 4]);
    let loss = ok(t.call1("builtin/mse_loss", &[y, target], &[]));
    let (xv, cv) = (at(noisy), at(clean[2..n - 2].iter().map(|v| v.tanh()).collect()));
    let (mut losses, mut backends) = (Vec::new(), Vec::new());
    for _ in 0..steps {
        let mut run = ok(t.run(&[(x, &xv), (target, &cv)]));
        losses.push(run.scalar(loss).unwrap_or(f64::NAN));
        backends.extend(run.provenance.entries.iter().map(|e| e.backend));
        let g = ok(t.backward(&mut run, loss));
        assert_eq!(g.get(kernel).map(|g| g.dtype()), Some(dtype), "the gradient keeps the pipeline's dtype");
        ok(Sgd::new(0.5).step(&mut t, &g));
    }
    let k = t.param_value(kernel).and_then(|k| k.data().to_f64_vec()).unwrap_or_default();
    (losses, k, backends)
}

#[test]
fn an_f64_pipeline_of_builtins_trains_and_matches_the_f32_run() {
    // The built-ins are declared once over f16 | bf16 | f32 | f64: the same tape at f64 runs
    // the f64 instances (their cpu kernels, forward and backward) and must agree with the f32
    // run to within f32's accumulated rounding.
    let (l32, k32, b32) = builtin_pipeline(DType::f32, 6);
    let (l64, k64, b64) = builtin_pipeline(DType::f64, 6);
    println!("f32 losses {l32:?}\nf64 losses {l64:?}");
    assert!(l64.windows(2).all(|w| w[1] < w[0]), "the f64 loss must fall every step: {l64:?}");
    for (a, b) in l32.iter().zip(&l64) {
        assert!((a - b).abs() <= 1e-4 * b.abs().max(1e-6), "f32 {l32:?} vs f64 {l64:?}");
    }
    for (a, b) in k32.iter().zip(&k64) {
        assert!((a - b).abs() <= 1e-4, "kernel f32 {k32:?} vs f64 {k64:?}");
    }
    assert!(b64.iter().all(|b| *b == BackendKind::Cpu), "the f64 instances' cpu kernels run: {b64:?}");
    assert!(b32.iter().all(|b| *b != BackendKind::Reference), "f32 has kernels: {b32:?}");
}
