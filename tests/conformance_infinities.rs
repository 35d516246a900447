//! Reductions with an infinite term beside finite terms whose partial sum overflows in the
//! kernel's order but not in the reference's: the exact result (and the f64 reference) is the
//! infinity, so a kernel that lets `MAX + MAX` meet `-inf` (NaN) is wrong. The built-in WGSL
//! kernels keep infinite terms out of the sum and conform on these hand-made cases; a copy of
//! the former sum kernel that does not is rejected on the same case (the check can fail), its
//! report naming an overflow that met the opposite infinity.

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

const MAX: f32 = f32::MAX;

/// A hand-made case of `h`'s op with these inputs (dims bound from their shapes).
fn case(h: &OpHandle, inputs: Vec<Tensor>) -> Case {
    let c = Case::of(&h.op(), inputs, vec![]).expect("the inputs fit the signature");
    Case { family: "infinity beside an overflowing partial sum (hand-made)", pattern: Pattern::Extremes, ..c }
}

fn v(x: &[f32]) -> Tensor {
    Tensor::vector(x.to_vec())
}

/// Each accum built-in with inputs on which the naive pairwise order puts `MAX + MAX` in one
/// subtree and the infinity in another (the strided sums: adjacent lanes; the per-output
/// loops: the later pair).
fn cases_for(r: &Registry) -> Vec<(OpHandle, Case)> {
    let h = |name: &str| r.lookup(name).expect("built-in");
    let (sum, mean, matmul, conv1d) = (h("builtin/sum"), h("builtin/mean"), h("builtin/matmul"), h("builtin/conv1d"));
    let strided = [-f32::INFINITY, MAX, 0.0, MAX];
    let looped = [-f32::INFINITY, 0.0, MAX, MAX];
    vec![
        (sum.clone(), case(&sum, vec![v(&strided)])),
        (mean.clone(), case(&mean, vec![v(&strided)])),
        (
            matmul.clone(),
            case(&matmul, vec![Tensor::from_vec([1, 4], vec![1.0f32; 4]).unwrap(), Tensor::from_vec([4, 1], looped.to_vec()).unwrap()]),
        ),
        (conv1d.clone(), case(&conv1d, vec![v(&looped), v(&[1.0; 4])])),
    ]
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
    let c = case(&h, vec![v(&[-f32::INFINITY, MAX, 0.0, MAX])]);
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
