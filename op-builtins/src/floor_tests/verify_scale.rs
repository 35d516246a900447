//! Unit tests of `op-verify/src/conformance/scale.rs` that declare an op (moved up to the floor
//! that can).

use op_core::op::RegisteredOp;
use op_core::registry::{OpHandle, Registry};
use op_core::tensor::{Scalar, Tensor};
use op_verify::conformance::run_shim;
use op_verify::conformance::scale::*;
use op_verify::conformance::{corpus, Pattern};
use op_verify::conformance::{AccumScale, Case};

fn handle(name: &str) -> OpHandle {
    Registry::with_builtins().lookup(name).expect("built-in")
}

/// A prefix sum whose running value is clipped to `[lo, hi]` each step.
#[crate::op(name = "test/scale/clipped_scan", version = 1, signature(x: f32[n], lo: f32, hi: f32 where lo <= hi) -> f32[n],
            category = reduction, tolerance = accum(2), backward = none, generated_tests = false)]
pub fn clipped_scan<T: crate::Real>(x: &[T], lo: T, hi: T) -> Vec<T> {
    let mut acc = T::zero();
    x.iter()
        .map(|v| {
            let s = acc + *v;
            acc = if s < lo {
                lo
            } else if s > hi {
                hi
            } else {
                s
            };
            acc
        })
        .collect()
}

/// The scales of `op` on `x` with float parameters `params`, in a case built from its corpus's
/// first one.
fn scales_on(op: &RegisteredOp, x: Vec<f32>, params: &[f32]) -> Vec<AccumScale> {
    let template = corpus(op).cases.into_iter().next().expect("a case");
    let case = Case {
        shape: op_verify::conformance::CaseShape { syms: vec![x.len() as i128], float_params: params.iter().map(|v| *v as f64).collect() },
        inputs: vec![Tensor::vector(x)],
        params: params.iter().map(|v| Scalar::F32(*v)).collect(),
        ..template
    };
    let expected = run_shim(op, op.shims.reference, &case.inputs, &case.params, None).expect("runs");
    accum_scales(op, &case, &expected, None).expect("scales")
}

fn near(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs()
}

#[test]
fn sums_and_products_keep_their_sum_of_magnitudes() {
    // A sum's sensitivity is its sum of |terms|; a matmul's, each factor moved alone, is
    // `sum_p |a_ip b_pj|` (not twice it, as moving both at once would give).
    let sum = handle("builtin/sum").op();
    let x = vec![3.0f32, -2.5, 1e-3, -700.0, 0.25];
    let s = scales_on(&sum, x.clone(), &[]);
    assert!(near(s[0].magnitude[0], x.iter().map(|v| v.abs() as f64).sum()), "{:?}", s[0].magnitude);
    let mm = handle("builtin/matmul").op();
    let case = corpus(&mm).cases.into_iter().find(|c| c.sym("k").unwrap_or(0) > 3 && c.pattern == Pattern::Random).expect("a case");
    let expected = run_shim(&mm, mm.shims.reference, &case.inputs, &case.params, None).expect("runs");
    let scales = accum_scales(&mm, &case, &expected, None).expect("scales");
    let (a, b) = (case.inputs[0].data().to_f64_vec().expect("a"), case.inputs[1].data().to_f64_vec().expect("b"));
    let (k, n) = (case.sym("k").unwrap() as usize, case.sym("n").unwrap() as usize);
    let terms: f64 = (0..k).map(|p| (a[p] * b[p * n]).abs()).sum();
    assert!(near(scales[0].magnitude[0], terms), "{} for sum |a b| {terms}", scales[0].magnitude[0]);
}

#[test]
fn a_clipped_scan_is_scaled_by_its_carry_not_by_its_clip() {
    // `[-60, 0.3, 59.71]` in `[-100, 1]`: no clip binds, so the last output moves with every
    // term (sum |x| = 120.01), while the op on |x| saturates at 1.
    let op = RegisteredOp::load(&clipped_scan::DECL).expect("loads");
    let x = vec![-60.0f32, 0.3, 59.71];
    let s = &scales_on(&op, x.clone(), &[-100.0, 1.0])[0];
    assert!(near(s.magnitude[2], x.iter().map(|v| v.abs() as f64).sum()), "{:?}", s.magnitude);
    // Once the running value is clipped at `lo`, the terms before it no longer move it: the
    // scale is the larger of the bound's (moving the parameters) and the terms' since.
    let x = vec![-200.0f32, 0.3, 159.71];
    let s = &scales_on(&op, x.clone(), &[-100.0, 100.0])[0];
    assert!(near(s.magnitude[2], x[1] as f64 + x[2] as f64), "{:?}", s.magnitude);
    assert!(near(s.magnitude[0], 100.0), "{:?}", s.magnitude);
    // `lo == hi`: moving the parameters apart breaks `lo <= hi` for some signs; those runs
    // tell nothing, and the scale is still there.
    let s = &scales_on(&op, vec![1.0, -2.0], &[0.5, 0.5])[0];
    assert!(s.magnitude.iter().all(|m| *m >= 0.5), "{:?}", s.magnitude);
}

#[test]
fn reduction_length_is_the_contracted_dim() {
    let reg = Registry::with_builtins();
    let mm = reg.lookup("builtin/matmul").unwrap().op();
    let case = corpus(&mm).cases.into_iter().find(|c| c.sym("k").unwrap_or(0) > 1 && c.sym("m").unwrap_or(0) > 1).expect("a case");
    assert_eq!(reduction_len(&mm, &case) as i128, case.sym("k").unwrap());
    let sum = reg.lookup("builtin/sum").unwrap().op();
    let case = corpus(&sum).cases.into_iter().find(|c| c.sym("n").unwrap_or(0) > 3).expect("a case");
    assert_eq!(reduction_len(&sum, &case) as i128, case.sym("n").unwrap());
    // matmul's VJP op: `d_a[m, k]` sums `n` terms, `d_b[k, n]` sums `m`; no dim is contracted
    // by both, and each output has its own length.
    let vjp = reg.lookup("builtin/matmul").unwrap().vjp_op().expect("a VJP op").at(&[op_core::tensor::DType::f32]).expect("f32").op();
    let cases = corpus(&vjp).cases;
    let sym = |c: &Case, s: &str| c.sym(s).unwrap_or(0);
    let case = cases.iter().find(|c| sym(c, "m") >= 1 && sym(c, "k") >= 1 && sym(c, "n") > 4 * sym(c, "m")).expect("a case");
    let (m, n) = (sym(case, "m") as usize, sym(case, "n") as usize);
    // Never below the case's own length (here the smallest input: every dim shapes an output).
    let floor = case.inputs.iter().map(Tensor::numel).min().unwrap();
    assert_eq!((output_reduction_len(&vjp, case, 0), output_reduction_len(&vjp, case, 1)), (n.max(floor), m.max(floor)), "{case}");
    assert_eq!(reduction_len(&vjp, case), n.max(floor), "{case}");
    // conv1d: every symbol shapes the output (`n - m + 1`); each output sums `m` terms.
    let conv = reg.lookup("builtin/conv1d").unwrap().op();
    for case in corpus(&conv).cases.iter().filter(|c| c.sym("n") > c.sym("m")) {
        assert_eq!(reduction_len(&conv, case) as i128, case.sym("m").unwrap().max(1), "{case}");
    }
}

#[test]
fn a_reference_without_an_f64_scale_is_a_typed_failure() {
    let sum = handle("builtin/sum").op();
    let case = corpus(&sum).cases.into_iter().find(|c| c.sym("n").unwrap_or(0) > 3).expect("a case");
    let expected = run_shim(&sum, sum.shims.reference, &case.inputs, &case.params, None).expect("runs");
    let scales = accum_scales(&sum, &case, &expected, None).expect("scales");
    assert_eq!((scales.len(), scales[0].exact.len(), scales[0].magnitude.len()), (1, 1, 1));
    // The same op with its f64 reference taken away: a typed error, not an accept-all.
    let decl: &'static op_core::decl::OpDecl = Box::leak(Box::new(op_core::decl::OpDecl { reference_f64: None, ..*sum.decl }));
    let op = RegisteredOp::load(decl).expect("loads");
    let e = accum_scales(&op, &case, &expected, None).unwrap_err();
    assert!(e.contains("float-generic"), "{e}");
}
