//! The story's composite median (`examples/windowed_median/composite.rs`): `median_rows(unfold(x,
//! w, 1))` declared with `backward = composite(..)`. Its graph, run through dispatch on every
//! backend here, gives the hand-written median's bits on the engine-generated corpus; its
//! gradients through the built-ins' VJPs are the hand-written VJP's bits; gradcheck passes; the
//! tape's plan shows the `(n - w + 1) x w` window buffer; and a composite whose graph takes each
//! window's maximum instead is rejected by gradcheck.

use crate::common;

use crate::composite;
use crate::median;

use op_runtime::conformance::corpus;
use op_runtime::graph::{Graph, GraphError, Var};
use op_runtime::testing::assert_gradcheck_rejected;
use op_runtime::train::{BufferKind, Tape};
use op_runtime::{op, BackendKind, CallOptions, DType, Real, Registry, Scalar, Tensor};

fn registry() -> Registry {
    let r = Registry::with_builtins();
    r.register(&composite::windowed_median_composite::DECL).expect("registers");
    r.register(&median::windowed_median::DECL).expect("registers");
    r
}

/// Runs the composite's graph (not its reference) on `x` with every call on `kind`.
fn graph_forward(r: &Registry, kind: BackendKind, x: &Tensor, w: u32) -> Vec<u32> {
    let mut t = Tape::with_registry(r);
    t.set_call_options(CallOptions::on(kind));
    let v = t.input("x", DType::f32, x.shape().to_vec());
    let out = composite::windowed_median_graph(&mut t, &[v], &[Scalar::U32(w)]).expect("records")[0];
    let run = t.run(&[(v, x)]).unwrap_or_else(|e| panic!("{kind}: {e}"));
    run.value(out).expect("computed").as_slice::<f32>().expect("f32").iter().map(|v| v.to_bits()).collect()
}

#[test]
fn the_graph_gives_the_direct_medians_bits_on_every_backend() {
    let r = registry();
    let h = r.lookup("user/example/windowed_median_composite").expect("registered").at(&[DType::f32]).expect("f32");
    let cases = corpus(&h.op()).cases;
    assert!(cases.len() > 50, "{} cases", cases.len());
    let mut kinds = vec![BackendKind::Reference, BackendKind::Cpu];
    if common::wgpu_available() {
        kinds.push(BackendKind::Wgpu);
    }
    for kind in kinds {
        for case in &cases {
            let w = match case.params[0] {
                Scalar::U32(w) => w,
                ref p => panic!("w is {p:?}"),
            };
            let x = &case.inputs[0];
            let direct: Vec<u32> = median::windowed_median(x.as_slice::<f32>().expect("f32"), w).iter().map(|v| v.to_bits()).collect();
            assert_eq!(
                graph_forward(&r, kind, x, w),
                direct,
                "{kind}, case #{} ({}, {:?}), w = {w}",
                case.index,
                case.family,
                case.pattern
            );
        }
        println!("{kind}: the graph gives the direct median's bits on {} engine-generated cases", cases.len());
    }
}

/// Gradient of `mse_loss(median(x), target)` with respect to `x` through `op` (by name).
fn grad_through(r: &Registry, op: &str, x: &[f32], w: u32, target: &[f32]) -> (Vec<u32>, Tape) {
    let mut t = Tape::with_registry(r);
    let xv = t.param("x", Tensor::vector(x.to_vec())).expect("param");
    let y = t.call1(op, &[xv], &[Scalar::U32(w)]).expect("records");
    let tv = t.input("target", DType::f32, [target.len()]);
    let loss = t.call1("builtin/mse_loss", &[y, tv], &[]).expect("records");
    let target = Tensor::vector(target.to_vec());
    let mut run = t.run(&[(tv, &target)]).expect("runs");
    let g = t.backward(&mut run, loss).expect("backward");
    let bits = g.get(xv).expect("a gradient").as_slice::<f32>().expect("f32").iter().map(|v| v.to_bits()).collect();
    (bits, t)
}

/// SplitMix64 values in [-4, 4) rounded to quarters, so windows hold ties.
fn values(n: usize, mut s: u64) -> Vec<f32> {
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z >> 40) % 32) as f32 / 4.0 - 4.0
        })
        .collect()
}

#[test]
fn gradients_through_the_graph_are_the_hand_written_vjps_bits() {
    let r = registry();
    for seed in 0..24u64 {
        let (n, w) = (40 + seed as usize * 7, [1u32, 3, 5, 7, 31][seed as usize % 5]);
        let x = values(n, seed);
        let target = values(n + 1 - w as usize, seed ^ 0xabc);
        let (composite, _) = grad_through(&r, "user/example/windowed_median_composite", &x, w, &target);
        let (direct, _) = grad_through(&r, "user/example/windowed_median", &x, w, &target);
        assert_eq!(composite, direct, "seed {seed}, n = {n}, w = {w}");
        assert!(direct.iter().any(|b| *b != 0), "seed {seed}: a gradient that is all zero proves nothing");
    }
}

#[test]
fn the_composite_gradchecks() {
    let report = op_runtime::gradcheck(&composite::windowed_median_composite::DECL).unwrap_or_else(|e| panic!("{e}"));
    let text = report.to_string();
    println!("{text}");
    assert!(text.contains("builtin/unfold@1 -> builtin/median_rows@1"), "{text}");
    assert!(text.contains("negative control : corrupted vjp REJECTED"), "{text}");
}

#[test]
fn the_plan_shows_the_window_buffer() {
    let r = registry();
    let (n, w) = (10_000usize, 7u32);
    let (_, t) = grad_through(&r, "user/example/windowed_median_composite", &values(n, 1), w, &values(n - 6, 2));
    let plan = t.plan();
    let rows = n - w as usize + 1;
    let window = plan
        .entries
        .iter()
        .find(|e| e.kind == BufferKind::Composite && e.op == "builtin/unfold@1")
        .unwrap_or_else(|| panic!("no window buffer in the plan:\n{plan}"));
    assert_eq!((window.shape.as_slice(), window.bytes), (&[rows, w as usize][..], rows * w as usize * 4), "{plan}");
    println!("{window}");
    // The hand-written median plans no such buffer.
    let (_, t) = grad_through(&r, "user/example/windowed_median", &values(n, 1), w, &values(n - 6, 2));
    assert!(t.plan().entries.iter().all(|e| e.kind != BufferKind::Composite), "{}", t.plan());
}

/// A composite whose graph takes each window's maximum where its reference takes the median:
/// wrong on purpose.
#[op(name = "test/bad/median_graph_takes_the_max", version = 1,
     signature(x: f32[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> f32[n - w + 1],
     category = selection, tolerance = exact, backward = composite(max_graph),
     subgradient = "cotangent routed to the selected element", generated_tests = false)]
pub fn median_wrong_graph<T: Real>(x: &[T], w: u32) -> Vec<T> {
    median::windowed_median(x, w)
}
/// `max_rows(unfold(x, w, 1))`.
pub fn max_graph(g: &mut dyn Graph, x: &[Var], p: &[Scalar]) -> Result<Vec<Var>, GraphError> {
    let windows = g.call1("builtin/unfold", &[x[0]], &[p[0], Scalar::U32(1)])?;
    Ok(vec![g.call1("builtin/max_rows", &[windows], &[])?])
}

#[test]
fn a_composite_whose_graph_is_not_its_reference_is_rejected() {
    let e = assert_gradcheck_rejected(&median_wrong_graph::DECL);
    assert!(e.to_string().contains("composite graph"), "{e}");
}
