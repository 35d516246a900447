//! Kernels that are right only on small inputs: conformance's `large` family (inputs far beyond
//! one workgroup, see `op_runtime::conformance::cases`) rejects a reduction that sums only the
//! first workgroup's share, a kernel every small case accepts; and the built-in reductions and
//! contractions agree with the f64 result on wgpu at 1_000_003 elements (a rank-1 length that
//! is no multiple of any workgroup size), within the declared `accum` bound by the same formula
//! conformance applies (`compare::accum_bound`).
//!
//! The long contractions (`matmul` with k = 1_000_003, `conv1d` with m = 1_000_003) guard the
//! fix of their kernels: lavapipe ends a shader invocation's loops after 65535 iterations in
//! total, and the one-term loops returned the sum of the first 65535 terms only.
//!
//! wgpu tests skip with a printed reason when no adapter exists, unless
//! `OP_REQUIRE_GPU_ADAPTER=1` (CI), where that is a failure.

mod common;

use op_runtime::conformance::{self, Fault};
use op_runtime::contract::Tolerance;
use op_runtime::{op, BackendKind, CallOptions, DType, OpHandle, Real, Tensor};

/// Deliberately broken sum: one workgroup, each invocation adding its 16 strided elements of
/// the first 4096; nothing past element 4095 is read.
#[op(name = "test/broken/sum_first_workgroup", version = 1, signature(x: f32[n]) -> f32[],
     category = reduction, tolerance = accum(2), backward = none, generated_tests = false,
     kernel(wgsl = "kernels/broken/sum_first_workgroup.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = 256))]
pub fn sum_first_workgroup<T: Real>(x: &[T]) -> Vec<T> {
    op_runtime::builtins::sum(x)
}

#[test]
fn a_reduction_of_the_first_workgroups_share_is_rejected_on_a_large_case() {
    let h = op_runtime::register(&sum_first_workgroup::DECL).expect("registers");
    let corpus = conformance::corpus(&h.op());
    let small = corpus.cases.iter().filter(|c| c.family != "large").count();
    let large: Vec<&conformance::Case> = corpus.cases.iter().filter(|c| c.family == "large").collect();
    assert!(!large.is_empty(), "no large case for a rank-1 reduction");
    for c in &large {
        assert_eq!(c.sym("n"), Some(131_071), "{c}");
    }
    let Some(report) = common::wgpu_rejection(&sum_first_workgroup::DECL) else { return };
    // Every small case passed: without the large family this kernel would hold a receipt.
    assert!(report.passed_before >= small, "rejected on a small case: {report}");
    let d = report.first();
    // Only large cases fail, so the report's case is shrunk from one, and the shrinker keeps
    // what makes it fail: the shrunk case still exceeds the first workgroup's share and, checked
    // on its own, is rejected with the same class.
    let from = d.shrunk_from.clone().unwrap_or_else(|| panic!("the large case was not shrunk: {report}"));
    assert!(from.contains("(large, "), "the failing case comes from the large family: {report}");
    assert!(d.case.size() > 4096, "the reported case still exceeds the first workgroup's share: {report}");
    assert!(d.case.size() < 131_071, "the shrunk case is smaller than the large one: {report}");
    match conformance::check_case(&h, BackendKind::Wgpu, &d.case) {
        Err(conformance::ConformanceFailure::Rejected(r)) => {
            assert!(r.first().class.same_kind(&d.class), "{} shrank to {r}", d.class.name())
        }
        other => panic!("the shrunk case passes on its own: {other:?}"),
    }
    match &d.fault {
        Fault::Mismatch(m) => {
            assert!(m.detail.contains("accum(2)"), "{report}");
            assert!(!m.unwritten, "{report}");
        }
        other => panic!("expected a value mismatch, got {other:?}\n{report}"),
    }
}

/// A deterministic stream of f32 values (SplitMix64): `positive` gives magnitudes in
/// [1e-3, 1e3), otherwise both signs.
fn data(n: usize, seed: u64, positive: bool) -> Vec<f32> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            let u = (z >> 11) as f64 / (1u64 << 53) as f64;
            let sign = if positive || z & 1 == 0 { 1.0 } else { -1.0 };
            (sign * 10f64.powf(6.0 * u - 3.0)) as f32
        })
        .collect()
}

/// Runs `name` on wgpu and on the reference; checks the single output against the f64 value
/// `exact` within `accum(k)` by the formula conformance applies
/// (`compare::accum_bound`: `k * max(1, ceil(log2 len)) * eps * s + 2 * len * min_normal`),
/// and prints both errors relative to `exact`.
fn check_accum(name: &str, inputs: &[&Tensor], len: usize, s: f64, exact: f64) {
    let reg = op_runtime::registry();
    let h: OpHandle = reg.lookup(name).expect("built-in");
    let Tolerance::Accum(k) = h.op().contract().tolerance else { panic!("{name}: not an accum op") };
    let run = |kind| {
        let out = h
            .call_with(inputs, &[], CallOptions::on(kind))
            .unwrap_or_else(|e| panic!("{name} on {kind}: {e}"))
            .output()
            .expect("one output");
        out.as_slice::<f32>().expect("f32").to_vec()
    };
    let (gpu, reference) = (run(BackendKind::Wgpu), run(BackendKind::Reference));
    assert_eq!((gpu.len(), reference.len()), (1, 1), "{name}");
    let (g, r) = (gpu[0] as f64, reference[0] as f64);
    let bound = conformance::accum_bound(k, DType::f32, len, s);
    eprintln!(
        "{name:<16} len {len}: wgpu {g:e}, reference {r:e}, f64 {exact:e}; |wgpu - f64| = {:e} (accum({k}) bound {bound:e}, margin {:.2}), reference off by {:.2e} relative",
        (g - exact).abs(),
        (g - exact).abs() / bound,
        (r - exact).abs() / exact.abs()
    );
    assert!((g - exact).abs() <= bound, "{name}: wgpu {g:e} vs f64 {exact:e} exceeds accum({k}) = {bound:e} at len {len}");
}

const N: usize = 1_000_003;

#[test]
fn builtin_reductions_match_the_reference_at_a_million_elements() {
    if !common::wgpu_available() {
        return;
    }
    for positive in [true, false] {
        let x = data(N, 1, positive);
        let y = data(N, 2, positive);
        let abs_sum: f64 = x.iter().map(|v| (*v as f64).abs()).sum();
        let sum: f64 = x.iter().map(|v| *v as f64).sum();
        let xt = Tensor::vector(x.clone());
        check_accum("builtin/sum", &[&xt], N, abs_sum, sum);
        check_accum("builtin/mean", &[&xt], N, abs_sum / N as f64, sum / N as f64);
        let mse: f64 = x.iter().zip(&y).map(|(a, b)| (*a as f64 - *b as f64).powi(2)).sum::<f64>() / N as f64;
        check_accum("builtin/mse_loss", &[&xt, &Tensor::vector(y)], N, mse, mse);
    }
}

#[test]
fn long_contractions_sum_every_term_on_wgpu() {
    if !common::wgpu_available() {
        return;
    }
    let x = data(N, 3, true);
    let w = data(N, 4, true);
    let dot: f64 = x.iter().zip(&w).map(|(a, b)| *a as f64 * *b as f64).sum();
    let a = Tensor::new(vec![1, N], op_runtime::Data::F32(x.clone())).expect("a");
    let b = Tensor::new(vec![N, 1], op_runtime::Data::F32(w.clone())).expect("b");
    check_accum("builtin/matmul", &[&a, &b], N, dot, dot);
    check_accum("builtin/conv1d", &[&Tensor::vector(x), &Tensor::vector(w)], N, dot, dot);
}
