//! Reductions with an infinite term beside finite terms whose partial sum overflows in the
//! kernel's order but not in the reference's: the exact result (and the f64 reference) is the
//! infinity, so a kernel that lets `MAX + MAX` meet `-inf` (NaN) is wrong. The built-in WGSL
//! kernels keep infinite terms out of the sum and conform on these hand-made cases; a copy of
//! the former sum kernel that does not is rejected on the same case (the check can fail), its
//! report naming an overflow that met the opposite infinity. Finite terms whose partial sums
//! overflow where the exact sum is finite (`MAX + MAX - MAX`) give that finite sum on every
//! backend; the former sum kernel, which returned the overflow's infinity, is rejected.

mod common;

use op_runtime::conformance::{self, Case, Class, ConformanceFailure, Pattern};
use op_runtime::{op, BackendKind, OpHandle, Real, Registry, Tensor};

/// `sum` with the former kernel: infinities summed in with the finite terms.
#[op(name = "test/broken/sum_infinity_meets_overflow", version = 1, signature(x: f32[n]) -> f32[],
     category = reduction, tolerance = accum(2), backward = none, nan = propagate, generated_tests = false,
     kernel(wgsl = "kernels/broken/sum_infinity_meets_overflow.wgsl", entry = "sum_main", bindings(x: read, out: read_write, uniform(n)), threads = 256))]
pub fn sum_inf<T: Real>(x: &[T]) -> Vec<T> {
    op_runtime::builtins::sum(x)
}

/// `sum` with the former kernel: a partial sum of finite terms that overflowed stays infinite.
#[op(name = "test/broken/sum_partial_overflow", version = 1, signature(x: f32[n]) -> f32[],
     category = reduction, tolerance = accum(2), backward = none, nan = propagate, generated_tests = false,
     kernel(wgsl = "kernels/broken/sum_partial_overflow.wgsl", entry = "sum_main", bindings(x: read, out: read_write, uniform(n)), threads = 256))]
pub fn sum_partial<T: Real>(x: &[T]) -> Vec<T> {
    op_runtime::builtins::sum(x)
}

const MAX: f32 = f32::MAX;

/// Finite terms whose exact sum is finite but whose partial sums overflow in the kernels'
/// order: 4 terms (lanes 0 and 2 meet first: `MAX + MAX`), and 4096 terms whose strided units
/// of 8 each sum `0.75 MAX` eight times (exact sum 0, and `0.25 MAX` with the last term raised).
fn partial_overflows() -> Vec<Vec<f32>> {
    let cancelled: Vec<f32> = (0..4096).map(|i| if i < 2048 { 0.75 * MAX } else { -0.75 * MAX }).collect();
    let mut quarter = cancelled.clone();
    quarter[4095] = -0.5 * MAX;
    vec![vec![MAX, -0.5 * MAX, MAX, -MAX], cancelled, quarter]
}

#[test]
fn builtin_reductions_keep_an_infinity_that_a_reordered_overflow_would_cancel() {
    if !common::wgpu_available() {
        return;
    }
    let r = Registry::with_builtins();
    for (h, c) in cases_for(&r) {
        // The reference's own answer is the infinity (it sums left to right).
        let out = h.call_with(&c.inputs.iter().collect::<Vec<_>>(), &[], op_runtime::CallOptions::on(BackendKind::Reference)).unwrap();
        let want = out.outputs[0].data().get_f64(0).unwrap();
        assert!(want.is_infinite(), "`{}`: reference {want}", h.id());
        conformance::check_case(&h, BackendKind::Wgpu, &c).unwrap_or_else(|e| panic!("`{}` on wgpu: {e}", h.id()));
    }
}

#[test]
fn a_sum_letting_the_overflow_meet_the_infinity_is_rejected() {
    if !common::wgpu_available() {
        return;
    }
    let r = Registry::new();
    let h = r.register(&sum_inf::DECL).expect("registers");
    let c = case(&h, vec![v(&[-f32::INFINITY, MAX, 0.0, MAX])], vec![4]);
    match conformance::check_case(&h, BackendKind::Wgpu, &c) {
        Err(ConformanceFailure::Rejected(report)) => {
            let text = report.to_string();
            assert!(text.contains("NaN") && text.contains("-inf"), "{text}");
            // Named as what it is, with no NaN input and so no hint about testing NaN's bits.
            assert!(report.first().class.same_kind(&Class::OverflowNan), "{text}");
            assert!(!text.contains("test the bits"), "{text}");
        }
        other => panic!("the former sum kernel must be rejected on -inf beside MAX + MAX, got {other:?}"),
    }
}

#[test]
fn a_sum_whose_partial_sums_overflow_where_the_exact_sum_is_finite_is_summed_again_scaled() {
    let r = Registry::with_builtins();
    let sum = r.lookup("builtin/sum").expect("built-in");
    let mut kinds = vec![BackendKind::Reference, BackendKind::Cpu];
    if common::wgpu_available() {
        kinds.push(BackendKind::Wgpu);
    }
    for x in partial_overflows() {
        let exact: f64 = x.iter().map(|t| *t as f64).sum();
        assert!(exact.abs() < MAX as f64, "a finite exact sum");
        let c = case(&sum, vec![v(&x)], vec![x.len() as i128]);
        for kind in &kinds {
            let out = sum.call_with(&[&c.inputs[0]], &[], op_runtime::CallOptions::on(*kind)).unwrap();
            let got = out.outputs[0].data().get_f64(0).unwrap();
            assert!(
                got.is_finite() && (got - exact).abs() <= 1e-6 * MAX as f64,
                "`builtin/sum` on {kind}, n = {}: {got} for {exact}",
                x.len()
            );
            conformance::check_case(&sum, *kind, &c).unwrap_or_else(|e| panic!("`builtin/sum` on {kind}, n = {}: {e}", x.len()));
        }
    }
    // A sum that itself overflows stays infinite, and an infinite term still decides.
    for (x, want) in [(vec![MAX, MAX, 0.0, MAX], f64::INFINITY), (vec![MAX, -f32::INFINITY, MAX, -MAX], f64::NEG_INFINITY)] {
        for kind in &kinds {
            let got = sum.call_with(&[&v(&x)], &[], op_runtime::CallOptions::on(*kind)).unwrap().outputs[0].data().get_f64(0).unwrap();
            assert_eq!(got, want, "`builtin/sum` of {x:?} on {kind}");
        }
    }
}

#[test]
fn the_former_sum_kernel_is_rejected_where_a_partial_sum_overflows() {
    if !common::wgpu_available() {
        return;
    }
    let h = Registry::new().register(&sum_partial::DECL).expect("registers");
    for x in partial_overflows() {
        let c = case(&h, vec![v(&x)], vec![x.len() as i128]);
        match conformance::check_case(&h, BackendKind::Wgpu, &c) {
            Err(ConformanceFailure::Rejected(report)) => assert!(report.to_string().contains("inf"), "{report}"),
            other => panic!("n = {}: the former sum kernel must be rejected, got {other:?}", x.len()),
        }
    }
}
