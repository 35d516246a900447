//! `output = bounded(..)` and `dynamic`: the reference sizes the data-dependent dims, the
//! engine checks the bound and cross-output agreement, and static-only machinery refuses them.

use op_runtime::conformance::ConformanceFailure;
use op_runtime::testing::assert_reference_rejected;
use op_runtime::{op, BackendKind, CallOptions, DispatchError, Real, Registry, Scalar, Tensor};

/// The strictly positive elements of `x`, in order, and their indices.
#[op(
    name = "test/dd/positives", version = 1,
    signature(x: f32[n]) -> (values: f32[k], indices: u32[k]),
    output = bounded(n),
    category = selection, tolerance = exact, backward = none,
)]
pub fn positives<T: Real>(x: &[T]) -> (Vec<T>, Vec<u32>) {
    let idx: Vec<u32> = (0..x.len() as u32).filter(|i| x[*i as usize] > T::zero()).collect();
    (idx.iter().map(|i| x[*i as usize]).collect(), idx)
}

/// A broken data-dependent op: returns more elements than its bound allows (conformance must
/// reject its reference: asserted below).
#[op(
    name = "test/broken/dd_overflowing", version = 1,
    signature(x: f32[n], m: u32) -> f32[k],
    output = bounded(m),
    category = selection, tolerance = exact, backward = none, generated_tests = false,
)]
pub fn overflowing<T: Real>(x: &[T], _m: u32) -> Vec<T> {
    x.to_vec()
}

/// A broken data-dependent op: its outputs disagree on `k` (conformance must reject its
/// reference: asserted below).
#[op(
    name = "test/broken/dd_disagreeing", version = 1,
    signature(x: f32[n]) -> (a: f32[k], b: f32[k]),
    output = dynamic,
    category = selection, tolerance = exact, backward = none, generated_tests = false,
)]
pub fn disagreeing<T: Real>(x: &[T]) -> (Vec<T>, Vec<T>) {
    (x.to_vec(), x[..x.len() / 2].to_vec())
}

/// Rows of `x` (pairs) whose sum is positive: a data-dependent leading dim with a static one.
#[op(
    name = "test/dd/positive_pairs", version = 1,
    signature(x: f32[r, 2]) -> f32[k, 2],
    output = dynamic,
    category = selection, tolerance = exact, backward = none,
)]
pub fn positive_pairs<T: Real>(x: &[T]) -> Vec<T> {
    x.chunks(2).filter(|p| p[0] + p[1] > T::zero()).flat_map(|p| p.to_vec()).collect()
}

fn reference() -> CallOptions {
    CallOptions::on(BackendKind::Reference)
}

#[test]
fn the_reference_sizes_data_dependent_outputs() {
    let r = Registry::new();
    let h = r.register(&positives::DECL).unwrap();
    let x = Tensor::vector(vec![1.0f32, -2.0, 3.0, 0.0, 5.0]);
    let out = h.call_with(&[&x], &[], reference()).unwrap();
    assert_eq!(out.outputs[0].shape(), &[3]);
    assert_eq!(out.outputs[0].as_slice::<f32>().unwrap(), &[1.0, 3.0, 5.0]);
    assert_eq!(out.outputs[1].as_slice::<u32>().unwrap(), &[0, 2, 4]);
    // Default selection runs it on a host backend (no GPU backend supports it).
    assert_eq!(h.call(&[&x], &[]).unwrap().provenance.backend, BackendKind::Reference);
    let e = h.call_with(&[&x], &[], CallOptions::on(BackendKind::Wgpu)).unwrap_err();
    assert!(e.to_string().contains("`output = bounded(n)` ops run on host backends only"), "{e}");

    let pairs = r.register(&positive_pairs::DECL).unwrap();
    let x = Tensor::from_vec([3, 2], vec![1.0f32, 1.0, -3.0, 1.0, 0.5, 0.0]).unwrap();
    let out = pairs.call_with(&[&x], &[], reference()).unwrap();
    assert_eq!(out.outputs[0].shape(), &[2, 2]);
}

#[test]
fn a_bound_overrun_or_disagreement_is_an_error_naming_the_op() {
    let r = Registry::new();
    let h = r.register(&overflowing::DECL).unwrap();
    let x = Tensor::vector(vec![1.0f32; 5]);
    let e = h.call_with(&[&x], &[Scalar::U32(3)], reference()).unwrap_err();
    assert_eq!(e.to_string(), "op `test/broken/dd_overflowing@1` failed on reference: op `test/broken/dd_overflowing@1`: output `out` has `k` = 5, beyond its declared bound 3");
    assert!(h.call_with(&[&x], &[Scalar::U32(5)], reference()).is_ok());
    let h = r.register(&disagreeing::DECL).unwrap();
    let e = h.call_with(&[&x], &[], reference()).unwrap_err();
    assert!(e.to_string().contains("outputs disagree on data-dependent `k`: 5 and 2 (output `b`)"), "{e}");
}

#[test]
fn conformance_rejects_a_reference_that_overruns_its_bound_or_whose_outputs_disagree() {
    for (decl, says) in [(&overflowing::DECL, "beyond its declared bound"), (&disagreeing::DECL, "outputs disagree on data-dependent `k`")]
    {
        match assert_reference_rejected(decl) {
            ConformanceFailure::Reference { message, .. } => assert!(message.contains(says), "{message}"),
            other => panic!("`{}`: expected the reference's rejection, got {other}", decl.rust_name),
        }
    }
}

#[test]
fn the_tape_refuses_data_dependent_shapes_with_a_typed_error() {
    let r = Registry::new();
    let h = r.register(&positives::DECL).unwrap();
    let e = op_runtime::train::infer(&h.op(), &[(op_runtime::DType::f32, &[4])], &[], None).unwrap_err();
    assert!(matches!(&e, DispatchError::DynamicShape { op, class } if op == "test/dd/positives@1" && class == "bounded(n)"), "{e}");
}

#[test]
fn a_hand_made_case_of_a_data_dependent_op_binds_as_the_generator_does() {
    // The free output symbol `k` stays 0 (a call's validation gives it the bound), the others
    // are bound from the inputs, over the corpus's first cases.
    let r = Registry::new();
    for decl in [&positives::DECL, &positive_pairs::DECL] {
        let h = r.register(decl).expect("registers");
        for c in op_runtime::conformance::corpus(&h.op()).cases.iter().take(8) {
            let made = op_runtime::conformance::Case::of(&h.op(), c.inputs.clone(), c.params.clone()).expect("fits");
            assert_eq!(made.shape.syms, c.shape.syms, "{}: {c}", h.id());
            assert_eq!(made.sym("k"), Some(0), "{}", h.id());
        }
    }
}
