//! The `accum(k)` rule is tight enough to reject clearly wrong kernels at the large case sizes
//! (n = 131_071), on every input including one built to bias a sequential f32 sum, and loose
//! enough for correct kernels that sum in pairwise order: the bound is anchored on the
//! reference evaluated in f64 and on the pairwise summation-error model,
//! `|kernel - r64| <= k * max(1, ceil(log2 len)) * eps * S + 2 * len * min_normal`
//! (see `op_runtime::conformance::compare`), never on the f32 reference's own error.
//!
//! Each op copies a built-in's contract and reference (`builtin/sum`, `builtin/conv1d`, which
//! accumulate in f64 and round once: the reference is held to the same bound as its kernels)
//! and declares a `cpu = path` fast kernel, so it runs without a GPU. The wrong kernels were
//! accepted by a former bound (`k * len * eps * S`, 3% at this length; then
//! `k * max(|r32 - r64|, sqrt(len) eps S)`, which grew with the reference's bias and let a sum
//! that skips 31 of 131_071 terms through on 0.1 repeated); they declare
//! `generated_tests = false`, and the tests below assert the CPU rejection and the reference's
//! conformance (`op_runtime::testing::assert_conformance_rejected`). A sequential sum is correct in exact arithmetic but outside `accum(2)`'s
//! pairwise model at these lengths, and is rejected too.

use op_runtime::conformance::{self, Case, ConformanceFailure, Fault, Pattern, Report};
use op_runtime::testing::assert_conformance_rejected;
use op_runtime::{op, BackendKind, OpHandle, Real, Tensor};

/// Wrong `sum`: skips every 4096th element (indices 4095, 8191, ...).
#[op(name = "test/broken/accum_sum_skips_every_4096th", version = 1, signature(x: f32[n]) -> f32[],
     category = reduction, tolerance = accum(2), backward = none, cpu = sum_skipping_every_4096th, generated_tests = false)]
pub fn sum_skips_every_4096th<T: Real>(x: &[T]) -> Vec<T> {
    op_runtime::builtins::sum(x)
}

/// The wrong fast kernel of `sum_skips_every_4096th` (summed in f64 and rounded once, so
/// that the skipped terms are its only defect).
pub fn sum_skipping_every_4096th(x: &[f32]) -> Vec<f32> {
    let kept: Vec<f32> = x.iter().enumerate().filter(|(i, _)| i % 4096 != 4095).map(|(_, v)| *v).collect();
    vec![in_f64(&kept)]
}

/// Wrong `sum`: stops after 128_500 elements.
#[op(name = "test/broken/accum_sum_stops_early", version = 1, signature(x: f32[n]) -> f32[],
     category = reduction, tolerance = accum(2), backward = none, cpu = sum_stopping_at_128_500, generated_tests = false)]
pub fn sum_stops_early<T: Real>(x: &[T]) -> Vec<T> {
    op_runtime::builtins::sum(x)
}

/// The wrong fast kernel of `sum_stops_early` (in f64, rounded once: the lost tail is its only
/// defect).
pub fn sum_stopping_at_128_500(x: &[f32]) -> Vec<f32> {
    vec![in_f64(&x[..x.len().min(128_500)])]
}

/// Wrong `conv1d`: every output at index >= 4096 is scaled by 1.001.
#[op(name = "test/broken/accum_conv1d_scaled_tail", version = 1, signature(x: f32[n], w: f32[m] where 1 <= m, m <= n) -> f32[n - m + 1],
     category = contraction, tolerance = accum(2), backward = none, cpu = conv1d_scaling_the_tail, generated_tests = false)]
pub fn conv1d_scaled_tail<T: Real>(x: &[T], w: &[T]) -> Vec<T> {
    op_runtime::builtins::conv1d(x, w)
}

/// The wrong fast kernel of `conv1d_scaled_tail`.
pub fn conv1d_scaling_the_tail(x: &[f32], w: &[f32]) -> Vec<f32> {
    let m = w.len();
    (0..x.len() + 1 - m)
        .map(|i| {
            // In f64, rounded once: the scaled tail is its only defect.
            let s = (0..m).map(|j| x[i + j] as f64 * w[j] as f64).sum::<f64>();
            (if i >= 4096 { s * 1.001 } else { s }) as f32
        })
        .collect()
}

/// `sum` with a sequential fast kernel, summing in reverse order (so it rounds differently from
/// the reference wherever the order matters): right in exact arithmetic, but its rounding error
/// grows up to `(len - 1) eps S`, beyond `accum(2)`'s pairwise model at the large cases.
#[op(name = "test/broken/accum_sum_sequential", version = 1, signature(x: f32[n]) -> f32[],
     category = reduction, tolerance = accum(2), backward = none, cpu = sum_sequential_reversed, generated_tests = false)]
pub fn sum_sequential<T: Real>(x: &[T]) -> Vec<T> {
    op_runtime::builtins::sum(x)
}

/// Whether a partial sum may overflow in some order (`sum |x| >= f32::MAX`, infinities
/// included). An f32 partial sum that overflows and meets an infinite term of the other sign
/// gives NaN where the exact result is that infinity (a defect conformance rejects), so the
/// reordering kernels below sum such inputs in f64 (rounded once, the reference's own way).
/// What they test is the rounding bound on finite sums.
fn may_overflow(x: &[f32]) -> bool {
    x.iter().map(|v| (*v as f64).abs()).sum::<f64>() >= f32::MAX as f64
}

fn in_f64(x: &[f32]) -> f32 {
    x.iter().map(|v| *v as f64).sum::<f64>() as f32
}

/// A sequential sum, last element first.
pub fn sum_sequential_reversed(x: &[f32]) -> Vec<f32> {
    if may_overflow(x) {
        return vec![in_f64(x)];
    }
    vec![x.iter().rev().fold(0.0f32, |s, v| s + *v)]
}

/// Correct `sum` with a pairwise (tree) fast kernel.
#[op(name = "test/accum/sum_pairwise", version = 1, signature(x: f32[n]) -> f32[],
     category = reduction, tolerance = accum(2), backward = none, cpu = sum_pairwise_fast)]
pub fn sum_pairwise<T: Real>(x: &[T]) -> Vec<T> {
    op_runtime::builtins::sum(x)
}

fn pairwise(x: &[f32]) -> f32 {
    if x.len() <= 8 {
        x.iter().fold(0.0f32, |s, v| s + *v)
    } else {
        let (a, b) = x.split_at(x.len() / 2);
        pairwise(a) + pairwise(b)
    }
}

/// A pairwise sum (blocks of at most 8 summed in order, then a balanced tree).
pub fn sum_pairwise_fast(x: &[f32]) -> Vec<f32> {
    if may_overflow(x) {
        return vec![in_f64(x)];
    }
    vec![pairwise(x)]
}

fn register(decl: &'static op_runtime::OpDecl) -> OpHandle {
    op_runtime::Registry::new().register(decl).expect("registers")
}

/// The CPU report of a wrong fast kernel, asserted rejected while the reference conforms.
fn rejected_on_cpu(decl: &'static op_runtime::OpDecl) -> Report {
    let report = assert_conformance_rejected(decl)
        .into_iter()
        .find(|r| r.backend == BackendKind::Cpu)
        .unwrap_or_else(|| panic!("`{}`: the CPU backend runs everywhere, yet it rejected nothing", decl.rust_name));
    eprintln!("{report}");
    match &report.first().fault {
        Fault::Mismatch(m) => assert!(m.detail.contains("accum(2)") && m.detail.contains("ceil(log2 len"), "{report}"),
        other => panic!("expected a value mismatch, got {other:?}\n{report}"),
    }
    report
}

#[test]
fn a_sum_that_skips_every_4096th_element_is_rejected() {
    let report = rejected_on_cpu(&sum_skips_every_4096th::DECL);
    assert!(report.first().case.sym("n").unwrap_or(0) >= 4096, "only a case with a skipped element can show it: {report}");
}

#[test]
fn a_sum_that_stops_at_128_500_of_131_071_elements_is_rejected() {
    let report = rejected_on_cpu(&sum_stops_early::DECL);
    assert!(report.first().case.sym("n").unwrap_or(0) > 128_500, "{report}");
}

#[test]
fn a_conv1d_that_scales_outputs_past_4096_by_1_001_is_rejected() {
    let report = rejected_on_cpu(&conv1d_scaled_tail::DECL);
    let n_out = report.first().case.sym("n").unwrap_or(0) - report.first().case.sym("m").unwrap_or(0) + 1;
    assert!(n_out > 4096, "{report}");
    if let Fault::Mismatch(m) = &report.first().fault {
        assert!(m.index >= 4096, "{report}");
    }
}

#[test]
fn a_pairwise_sum_conforms_and_a_long_sequential_one_does_not() {
    let h = register(&sum_pairwise::DECL);
    let r = conformance::conform(&h, BackendKind::Cpu).unwrap_or_else(|e| panic!("`{}`: {e}", h.id()));
    eprintln!("`{}` on cpu: {} cases conform", h.id(), r.cases);
    let corpus = conformance::corpus(&h.op());
    assert!(corpus.cases.iter().any(|c| c.sym("n") == Some(131_071) && c.pattern == Pattern::Biased), "the biased large case");
    let report = rejected_on_cpu(&sum_sequential::DECL);
    // A sequential sum drifts where its running sum only grows: a constant or biased input of
    // a few hundred terms already leaves the pairwise bound, terms of one sign (`Positive`) a
    // few thousand; on inputs of mixed signs only a long one does.
    let case = &report.first().case;
    let drifts = matches!(case.pattern, Pattern::Constant | Pattern::Biased | Pattern::Positive);
    assert!(drifts || case.sym("n").unwrap_or(0) > 4096, "a short unbiased sequential sum is within the model: {report}");
}

/// A case of the `sum` contract with every element equal to `v`.
fn constant_case(h: &OpHandle, n: usize, v: f32) -> Case {
    let c = Case::of(&h.op(), vec![Tensor::vector(vec![v; n])], vec![]).expect("a vector fits `sum`");
    Case { family: "constant (hand-made)", pattern: Pattern::Constant, ..c }
}

/// The corpus's biased large case of `h`'s op (every element 0.1).
fn biased_case(h: &OpHandle) -> Case {
    let corpus = conformance::corpus(&h.op());
    corpus.cases.into_iter().find(|c| c.pattern == Pattern::Biased).expect("an accum op's corpus has the biased case")
}

#[test]
fn a_sum_dropping_a_few_terms_is_rejected_on_the_biased_sum_case() {
    let h = register(&sum_skips_every_4096th::DECL);
    let case = biased_case(&h);
    let x = case.inputs[0].as_slice::<f32>().expect("f32").to_vec();
    let n = x.len();
    assert!(n == 131_071 && x.iter().all(|v| *v == 0.1f32), "{case}");
    // On this input a sequential f32 sum (the built-in's former reference) is itself far off
    // (every add rounds the same way), and the kernel that skips 31 of the terms is nearer to
    // it than that.
    let exact: f64 = x.iter().map(|v| *v as f64).sum();
    let r32 = x.iter().fold(0.0f32, |s, v| s + *v) as f64;
    let kernel = sum_skipping_every_4096th(&x)[0] as f64;
    let eps = f32::EPSILON as f64;
    let former = 2.0 * (r32 - exact).abs().max((n as f64).sqrt() * eps * exact);
    let now = conformance::accum_bound(2, op_runtime::DType::f32, n, exact);
    eprintln!(
        "0.1 x {n}: exact {exact}, reference {r32} (off {:e}), skipping kernel {kernel} (off {:e}); former bound {former:e}, pairwise bound {now:e}",
        r32 - exact,
        kernel - exact
    );
    assert!((kernel - exact).abs() <= former, "the former bound, anchored on the reference's bias, accepted it here");
    assert!((kernel - exact).abs() > now);
    match conformance::check_case(&h, BackendKind::Cpu, &case) {
        Err(ConformanceFailure::Rejected(r)) => {
            eprintln!("{r}");
            assert_eq!(r.first().case.pattern, Pattern::Biased, "{r}");
        }
        other => panic!("`{}`: expected a rejection on 0.1 x {n}, got {other:?}", h.id()),
    }
    // A pairwise sum conforms on the same input, and so does the reference (f64, rounded once).
    for decl in [&sum_pairwise::DECL, &sum_skips_every_4096th::DECL] {
        let h = register(decl);
        let kind = if decl.rust_name == "sum_pairwise" { BackendKind::Cpu } else { BackendKind::Reference };
        conformance::check_case(&h, kind, &biased_case(&h)).unwrap_or_else(|e| panic!("`{}` on {kind}: {e}", h.id()));
    }
    for v in [0.1f32, -0.1, 3.3e-3, 777.7] {
        let h = register(&sum_pairwise::DECL);
        conformance::check_case(&h, BackendKind::Cpu, &constant_case(&h, n, v))
            .unwrap_or_else(|e| panic!("`{}` on {v} x {n}: {e}", h.id()));
    }
}
