//! `where` constraints over float parameters: dispatch refuses a call that breaks one (a typed
//! constraint error naming it and the values), and neither conformance nor gradcheck ever
//! tries parameters the contract refuses.

use op_runtime::conformance;
use op_runtime::gradcheck::{gradcheck_with, GradcheckOptions};
use op_runtime::DispatchError;
use op_runtime::{op, BackendKind, CallOptions, Real, Registry, Scalar, Tensor};

/// Clamps every element to `[lo, hi]`.
#[op(name = "test/float/clamp", version = 1,
     signature(x: f32[n], lo: f32, hi: f32 where lo <= hi) -> f32[n],
     category = selection, tolerance = exact, backward = none)]
pub fn clamp<T: Real>(x: &[T], lo: T, hi: T) -> Vec<T> {
    x.iter()
        .map(|v| {
            if *v < lo {
                lo
            } else if *v > hi {
                hi
            } else {
                *v
            }
        })
        .collect()
}

/// Scales by a strictly positive `s` (and `s` at most 4).
#[op(name = "test/float/scale_pos", version = 1,
     signature(x: f32[n], s: f32 where s > 0, s <= 4) -> f32[n],
     category = elementwise, tolerance = ulp(1), backward = vjp(scale_pos_vjp))]
pub fn scale_pos<T: Real>(x: &[T], s: T) -> Vec<T> {
    x.iter().map(|v| *v * s).collect()
}
/// VJP of `scale_pos` with respect to `x`.
pub fn scale_pos_vjp<T: Real>(_x: &[T], s: T, g: &[T]) -> Vec<T> {
    g.iter().map(|v| *v * s).collect()
}

#[test]
fn a_call_breaking_a_float_constraint_is_a_typed_error_naming_it() {
    let r = Registry::new();
    let h = r.register(&clamp::DECL).expect("registers");
    let x = Tensor::vector(vec![0.5f32, 3.0]);
    let on = CallOptions::on(BackendKind::Reference);
    for (lo, hi) in [(2.0f32, 1.0f32), (f32::NAN, 1.0), (0.0, f32::NAN)] {
        match h.call_with(&[&x], &[Scalar::F32(lo), Scalar::F32(hi)], on) {
            Err(DispatchError::Constraint { constraint, values, .. }) => {
                assert_eq!(constraint, "lo <= hi");
                assert!(values.contains("lo = ") && values.contains("hi = "), "{values}");
            }
            other => panic!("lo = {lo}, hi = {hi}: expected a constraint error, got {other:?}"),
        }
    }
    let ok = h.call_with(&[&x], &[Scalar::F32(1.0), Scalar::F32(1.0)], on).expect("lo == hi is admissible");
    assert_eq!(ok.outputs[0].as_slice::<f32>(), Some(&[1.0f32, 1.0][..]));
}

/// Dispatch memoises an op's last validated call; a refused call is never memoised, and a
/// changed float parameter (compared bit for bit, so a NaN or `-0.0` is a change) re-validates.
#[test]
fn a_float_constraint_is_checked_after_a_memoised_admissible_call() {
    let r = Registry::new();
    let h = r.register(&scale_pos::DECL).expect("registers");
    let x = Tensor::vector(vec![0.5f32, 3.0]);
    let on = CallOptions::on(BackendKind::Reference);
    for _ in 0..2 {
        let ok = h.call_with(&[&x], &[Scalar::F32(2.0)], on).expect("s = 2 is admissible");
        assert_eq!(ok.outputs[0].as_slice::<f32>(), Some(&[1.0f32, 6.0][..]));
        for s in [0.0f32, -0.0, f32::NAN, 5.0, 0.0] {
            match h.call_with(&[&x], &[Scalar::F32(s)], on) {
                Err(DispatchError::Constraint { constraint, .. }) => {
                    assert!(constraint == "s > 0.0" || constraint == "s <= 4.0", "{constraint}")
                }
                other => panic!("s = {s}: expected a constraint error, got {other:?}"),
            }
        }
    }
}

#[test]
fn conformance_and_gradcheck_only_try_admissible_float_parameters() {
    let r = Registry::new();
    let h = r.register(&clamp::DECL).expect("registers");
    let corpus = conformance::corpus(&h.op());
    assert!(!corpus.cases.is_empty());
    for c in &corpus.cases {
        let (lo, hi) = (c.params[0].as_f64().unwrap(), c.params[1].as_f64().unwrap());
        assert!(lo <= hi, "case with lo = {lo} > hi = {hi}: {c}");
    }
    conformance::conform(&h, BackendKind::Reference).expect("the reference conforms on its corpus");
    for salt in 0..4 {
        let o = GradcheckOptions { salt, ..GradcheckOptions::default() };
        let report = gradcheck_with(op_runtime::registry(), &scale_pos::DECL, &o).expect("gradcheck passes");
        let s: f64 = report.bindings.iter().find(|(n, _)| n == "s").map(|(_, v)| v.parse().unwrap()).expect("s is reported");
        assert!(s > 0.0 && s <= 4.0, "gradcheck drew s = {s}");
    }
}
