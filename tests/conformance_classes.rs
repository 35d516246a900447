//! Every class of conformance mismatch is named in the report's own line, before the numbers,
//! by a deliberately broken kernel that shows it: NaN against a number (`tanh(NaN) = 1`, the
//! built-in tanh's former bug on lavapipe), within 1 ulp (`x * 0.1` for `x / 10`), only the
//! sign of zero (a clamp whose zeros come back +0, with the report suggesting
//! `signed_zero = ignore`; the same kernel conforms under that declaration), and tie order (an
//! argmax that takes the last of equal maxima). The median's kernels show the others
//! (`conformance_median.rs`: never written, write past the end, shifted output, wrong window,
//! sign of zero). A declared NaN policy is checked on the reference too.
//!
//! The broken ops declare `generated_tests = false`; each test below asserts its rejection
//! through `op_runtime::testing` (`assert_conformance_rejected` for a kernel: every backend
//! that runs it rejects it and the reference conforms; `assert_reference_rejected` for a
//! broken reference). wgpu tests skip with a printed reason when no adapter exists, unless
//! `OP_REQUIRE_GPU_ADAPTER=1` (CI), where that is a failure.

mod common;

use op_runtime::conformance::{self, Class, ConformanceFailure, Report};
use op_runtime::testing::assert_reference_rejected;
use op_runtime::{op, BackendKind, OpHandle, Real, Scalar, Tensor};

/// `builtin/tanh`'s contract and reference with the former kernel, which returns 1 for NaN.
#[op(name = "test/broken/tanh_nan_one", version = 1, signature(x: f32[n]) -> f32[n],
     category = transcendental, tolerance = ulp(16), nan = propagate, backward = none, generated_tests = false,
     kernel(wgsl = "kernels/broken/tanh_nan_one.wgsl", entry = "tanh_main", bindings(x: read, out: read_write, uniform(n)), threads = n))]
pub fn tanh_nan_one<T: Real>(x: &[T]) -> Vec<T> {
    op_runtime::builtins::tanh(x)
}

/// `x / 10`, with a kernel computing `x * 0.1`.
#[op(name = "test/broken/div_by_ten_as_mul", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(0), nan = propagate, backward = none, generated_tests = false,
     kernel(wgsl = "kernels/broken/div_by_ten_as_mul.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = n))]
pub fn div_by_ten<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v / T::from_f64(10.0)).collect()
}

/// Clamp in IEEE total order: below `lo` gives `lo`, above `hi` gives `hi`.
fn clamp_total<T: Real>(x: &[T], lo: T, hi: T) -> Vec<T> {
    use std::cmp::Ordering::{Greater, Less};
    x.iter()
        .map(|v| {
            if v.total_cmp(&lo) == Less {
                lo
            } else if v.total_cmp(&hi) == Greater {
                hi
            } else {
                *v
            }
        })
        .collect()
}

/// A clamp whose kernel returns +0 where the reference has -0 (exact: rejected).
#[op(name = "test/broken/clamp_zero_sign", version = 1, signature(x: f32[n], lo: f32, hi: f32) -> f32[n],
     category = selection, tolerance = exact, backward = none, generated_tests = false,
     kernel(wgsl = "kernels/clamp_zero_sign.wgsl", bindings(x: read, out: read_write, uniform(n, lo, hi)), threads = n))]
pub fn clamp_zero_sign<T: Real>(x: &[T], lo: T, hi: T) -> Vec<T> {
    clamp_total(x, lo, hi)
}

/// The same clamp and kernel, declaring that the sign of zero is not part of the result.
#[op(name = "test/classes/clamp_ignoring_zero_sign", version = 1, signature(x: f32[n], lo: f32, hi: f32) -> f32[n],
     category = selection, tolerance = exact, signed_zero = ignore, backward = none,
     kernel(wgsl = "kernels/clamp_zero_sign.wgsl", bindings(x: read, out: read_write, uniform(n, lo, hi)), threads = n))]
pub fn clamp_ignoring_zero_sign<T: Real>(x: &[T], lo: T, hi: T) -> Vec<T> {
    clamp_total(x, lo, hi)
}

/// Index of the largest element in IEEE total order, the first of equal ones; the kernel takes
/// the last.
#[op(name = "test/broken/argmax_last_tie", version = 1, signature(x: f32[n] where n >= 1) -> u32[],
     category = selection, tolerance = exact, backward = none, generated_tests = false,
     kernel(wgsl = "kernels/broken/argmax_last_tie.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = 1))]
pub fn argmax_first<T: Real>(x: &[T]) -> Vec<u32> {
    let mut best = 0;
    for (i, v) in x.iter().enumerate() {
        if v.total_cmp(&x[best]) == std::cmp::Ordering::Greater {
            best = i;
        }
    }
    vec![best as u32]
}

/// A relu whose reference drops NaN (gives 0) while the op declares `nan = propagate`: a
/// contract defect conformance reports on the reference itself (no kernel).
#[op(name = "test/broken/relu_nan_dropped", version = 1, signature(x: f32[n]) -> f32[n],
     category = selection, tolerance = exact, nan = propagate, backward = none, generated_tests = false)]
pub fn relu_nan_dropped<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| if *v > T::zero() { *v } else { T::zero() }).collect()
}

fn register(decl: &'static op_runtime::OpDecl) -> OpHandle {
    op_runtime::register(decl).expect("registers")
}

/// Asserts the report names `class` in its defect line, which precedes that defect's numbers.
fn names(report: &Report, class: &Class, words: &str) {
    let d = report.defect(class).unwrap_or_else(|| panic!("no `{}` defect in:\n{report}", class.name()));
    let text = report.to_string();
    let line = report.explain(d);
    assert!(line.starts_with(words), "`{line}` does not start with `{words}`");
    let at = text.find(&line).unwrap_or_else(|| panic!("the class line is missing:\n{text}"));
    let numbers = text[at..].find("first bad index").or_else(|| text[at..].find("out-of-bounds write"));
    assert!(numbers.is_some_and(|n| n > line.len()), "the class line comes before the numbers:\n{text}");
}

#[test]
fn tanh_returning_one_for_nan_is_rejected_as_nan_against_a_number() {
    let Some(report) = common::wgpu_rejection(&tanh_nan_one::DECL) else { return };
    assert_eq!(report.defects.len(), 1, "wrong only on NaN:\n{report}");
    names(&report, &Class::Nan, "NaN payload or NaN against a number: the kernel returned ");
    // tanh(±NaN) = ±1 from the broken kernel: which sign the smallest case shows depends on the seed.
    let line = report.explain(report.defect(&Class::Nan).expect("a NaN defect"));
    assert!(
        ["returned 1e0 where the reference returns NaN", "returned -1e0 where the reference returns NaN"].iter().any(|w| line.contains(w)),
        "{line}"
    );
    assert!(report.first().case.inputs[0].as_slice::<f32>().unwrap_or_default().iter().any(|v| v.is_nan()), "{report}");
    assert!(report.to_string().contains("nan = propagate"), "{report}");
}

#[test]
fn builtin_tanh_keeps_nan() {
    if !common::wgpu_available() {
        return;
    }
    let h = op_runtime::registry().lookup("builtin/tanh").expect("built-in");
    let x = Tensor::vector(vec![f32::NAN, -f32::NAN, 0.5, f32::INFINITY, -0.0]);
    let out = h.call_with(&[&x], &[], op_runtime::CallOptions::on(BackendKind::Wgpu)).expect("runs");
    let y = out.outputs[0].as_slice::<f32>().expect("f32").to_vec();
    assert!(y[0].is_nan() && y[1].is_nan(), "{y:?}");
    assert_eq!((y[3], y[4].to_bits()), (1.0, (-0.0f32).to_bits()), "{y:?}");
}

#[test]
fn x_times_a_tenth_is_rejected_as_within_one_ulp() {
    let Some(report) = common::wgpu_rejection(&div_by_ten::DECL) else { return };
    names(&report, &Class::OneUlp, "within 1 ulp of the reference");
    assert_eq!(report.defects.len(), 1, "only 1-ulp differences:\n{report}");
}

#[test]
fn a_clamp_returning_plus_zero_is_rejected_as_sign_of_zero_and_told_about_signed_zero_ignore() {
    let Some(report) = common::wgpu_rejection(&clamp_zero_sign::DECL) else { return };
    assert_eq!(report.defects.len(), 1, "only zero signs differ:\n{report}");
    names(&report, &Class::SignOfZero, "differs only in the sign of zero: the reference gives -0 where the kernel gives +0");
    let line = report.explain(report.first());
    assert!(line.contains("IEEE 754 total order") && line.contains("declare `signed_zero = ignore`"), "{line}");
}

#[test]
fn the_same_clamp_conforms_where_the_contract_ignores_the_sign_of_zero() {
    if !common::wgpu_available() {
        return;
    }
    let h = register(&clamp_ignoring_zero_sign::DECL);
    let r = conformance::conform(&h, BackendKind::Wgpu).unwrap_or_else(|e| panic!("{e}"));
    // The corpus reaches the zeros where the two differ: the clamp to lo = -0 of a negative x.
    let corpus = conformance::corpus(&h.op());
    assert!(corpus.cases.iter().any(|c| c.params.iter().any(|p| *p == Scalar::F32(-0.0) && p.to_string().starts_with('-'))), "{r:?}");
}

#[test]
fn an_argmax_taking_the_last_of_equal_maxima_is_rejected_as_tie_order() {
    let Some(report) = common::wgpu_rejection(&argmax_first::DECL) else { return };
    names(&report, &Class::TieOrder, "tie order: the output is the reference's on the same inputs with ties");
}

#[test]
fn a_reference_that_breaks_its_declared_nan_policy_is_a_contract_defect() {
    match assert_reference_rejected(&relu_nan_dropped::DECL) {
        ConformanceFailure::Reference { message, .. } => assert!(message.contains("declares `nan = propagate`"), "{message}"),
        other => panic!("expected the reference's rejection, got {other:?}"),
    }
    // The built-in relu propagates NaN, as declared.
    let relu = op_runtime::registry().lookup("builtin/relu").expect("built-in");
    conformance::conform(&relu, BackendKind::Reference).unwrap_or_else(|e| panic!("{e}"));
}
