//! The story as tests: the windowed-median WGSL kernel with the guard `i >= p.n - p.w` is
//! rejected on the case n = w (one output, never written); the `+ 1u` kernel conforms and gets
//! a receipt that verifies, while tampered receipts fail; five more deliberately broken kernels
//! (off-by-one read, write past the end, wrong middle index, -0/+0 ties by plain `<`, a window
//! two wider) are each rejected, and each report names its defect's class before the numbers
//! (element never written, output shifted, write past the end, wrong order statistic, sign of
//! zero, wrong window), the class that explains most failing cases first, listing the smallest
//! case of each class the report needs. The broken ops declare
//! `generated_tests = false`: each test below asserts its rejection through
//! `op_runtime::testing::assert_conformance_rejected` (every backend that runs the kernel
//! rejects it, and the reference conforms).
//!
//! wgpu tests skip with a printed reason when no adapter exists, unless
//! `OP_REQUIRE_GPU_ADAPTER=1` (CI), where that is a failure.

use crate::common;

use crate::median;

use op_runtime::conformance::{self, Class, ConformanceFailure, Fault};
use op_runtime::receipt::{Receipt, ReceiptError};
use op_runtime::{op, BackendKind, CallOptions, OpHandle, Real, Scalar, Tensor};

/// The broken variants share the good op's contract and reference; only the kernel differs.
/// (`#[op]` inside `macro_rules!` expands hygienically.)
macro_rules! broken_median {
    ($(#[$doc:meta])* $fn_name:ident, $op_name:literal, $kernel:literal) => {
        $(#[$doc])*
        #[op(
            name = $op_name, version = 1,
            signature(x: f32[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> f32[n - w + 1],
            category = selection, tolerance = exact, backward = none, generated_tests = false,
            kernel(wgsl = $kernel, bindings(x: read, out: read_write, uniform(n, w)), threads = n - w + 1),
            license = "MIT",
        )]
        pub fn $fn_name<T: Real>(x: &[T], w: u32) -> Vec<T> {
            median::windowed_median(x, w)
        }
    };
}

broken_median!(
    /// Deliberately broken windowed median: the guard `i >= p.n - p.w` (the last window is never written). Same reference as the good one.
    median_guard_minus, "test/broken/median_guard_minus", "kernels/broken/median_guard_minus.wgsl"
);
broken_median!(
    /// Deliberately broken windowed median: windows read `x[i + j + 1]`. Same reference as the good one.
    median_off_by_one_read, "test/broken/median_off_by_one_read", "kernels/broken/median_off_by_one_read.wgsl"
);
broken_median!(
    /// Deliberately broken windowed median: the guard `i > p.n - p.w + 1u` lets one invocation write past the end. Same reference as the good one.
    median_write_past_end, "test/broken/median_write_past_end", "kernels/broken/median_write_past_end.wgsl"
);
broken_median!(
    /// Deliberately broken windowed median: selects `win[(w + 1) / 2]`. Same reference as the good one.
    median_wrong_middle, "test/broken/median_wrong_middle", "kernels/broken/median_wrong_middle.wgsl"
);
broken_median!(
    /// Deliberately broken windowed median: sorts by plain float `>` (-0 and +0 tie). Same reference as the good one.
    median_plain_compare, "test/broken/median_plain_compare", "kernels/broken/median_plain_compare.wgsl"
);
broken_median!(
    /// Deliberately broken windowed median: every window is `w + 2` wide. Same reference as the good one.
    median_window_plus_two, "test/broken/median_window_plus_two", "kernels/broken/median_window_plus_two.wgsl"
);

fn register(decl: &'static op_runtime::OpDecl) -> OpHandle {
    op_runtime::register(decl).expect("registers")
}

/// The report's line for `class`, which must come before that defect's numbers.
fn class_line(report: &conformance::Report, class: &Class) -> String {
    let d = report.defect(class).unwrap_or_else(|| panic!("no `{}` defect in:\n{report}", class.name()));
    let line = report.explain(d);
    let text = report.to_string();
    let at = text.find(&line).unwrap_or_else(|| panic!("the class line is missing:\n{text}"));
    assert!(text[at + line.len()..].contains("output `out` (f32): "), "numbers follow the class line:\n{text}");
    line
}

#[test]
fn guard_minus_is_rejected_on_n_equals_w() {
    let Some(report) = common::wgpu_rejection(&median_guard_minus::DECL) else { return };
    let d = report.first();
    let (n, w) = (d.case.sym("n").expect("n"), d.case.sym("w").expect("w"));
    assert_eq!(n, w, "the failing case reported is n = w (one output): {report}");
    assert_eq!(report.backend, BackendKind::Wgpu);
    assert_eq!(d.class, Class::Unwritten, "{report}");
    match &d.fault {
        Fault::Mismatch(m) => {
            assert_eq!(m.index, 0);
            assert!(m.unwritten, "the only output was never written: {report}");
        }
        other => panic!("expected a mismatch, got {other:?}"),
    }
    assert!(class_line(&report, &Class::Unwritten).starts_with("element never written (canary intact)"));
    let text = report.to_string();
    for needle in ["test/broken/median_guard_minus@1", "wgpu", "first bad index 0", "bits", "never written", "seed"] {
        assert!(text.contains(needle), "report lacks `{needle}`:\n{text}");
    }
}

#[test]
fn off_by_one_read_is_rejected_as_a_shifted_output() {
    let Some(report) = common::wgpu_rejection(&median_off_by_one_read::DECL) else { return };
    let line = class_line(&report, &Class::Shifted(1));
    assert!(line.starts_with("output shifted by 1 element(s): `out[i]` holds the reference's `out[i + 1]`"), "{line}");
}

#[test]
fn write_past_the_end_is_rejected_as_out_of_bounds() {
    let Some(report) = common::wgpu_rejection(&median_write_past_end::DECL) else { return };
    match &report.first().fault {
        Fault::OutOfBounds(o) => {
            assert_eq!(o.side, "after");
            assert_eq!(o.offset, 0, "the first element past the end was written: {report}");
        }
        other => panic!("expected an out-of-bounds write, got {other:?}\n{report}"),
    }
    assert!(class_line(&report, &Class::OutOfBounds("after")).starts_with("write past the end (guard band)"));
    assert!(report.to_string().contains("out-of-bounds write after the output"));
}

#[test]
fn wrong_middle_is_rejected_as_a_wrong_order_statistic() {
    let Some(report) = common::wgpu_rejection(&median_wrong_middle::DECL) else { return };
    assert!(matches!(report.first().fault, Fault::Mismatch(_)), "{report}");
    // Not "shifted", which its sorted cases also show: the class explaining most failing cases.
    let line = class_line(&report, &Class::OrderStatistic(1));
    assert!(report.first().class.same_kind(&Class::OrderStatistic(1)), "{report}");
    assert!(line.starts_with("wrong order statistic: each output is the value 1 distinct value(s) above"), "{line}");
}

#[test]
fn plain_float_compare_is_rejected_with_its_sign_of_zero_named() {
    let Some(report) = common::wgpu_rejection(&median_plain_compare::DECL) else { return };
    let line = class_line(&report, &Class::SignOfZero);
    assert!(line.contains("the reference orders -0 before +0 (IEEE 754 total order"), "{line}");
    assert!(line.contains("`signed_zero = ignore`"), "{line}");
    let d = report.defect(&Class::SignOfZero).expect("found");
    match &d.fault {
        Fault::Mismatch(m) => assert!(m.expected == 0.0 && m.actual == 0.0 && m.expected_bits != m.actual_bits, "{report}"),
        other => panic!("expected a mismatch, got {other:?}"),
    }
}

#[test]
fn a_window_two_wider_is_rejected_as_the_wrong_window_next_to_its_other_defects() {
    let Some(report) = common::wgpu_rejection(&median_window_plus_two::DECL) else { return };
    let line = class_line(&report, &Class::WrongWindow { param: String::new(), was: 0, matches: 0 });
    assert!(line.starts_with("values from the wrong window: the output is the reference's with `w = "), "{line}");
    let d = report.defect(&Class::WrongWindow { param: String::new(), was: 0, matches: 0 }).expect("found");
    let Class::WrongWindow { param, was, matches } = &d.class else { unreachable!() };
    assert_eq!((param.as_str(), matches - was), ("w", 2), "{report}");
    // Several classes, each with its own smallest case: the n = w case (no wider window fits)
    // shows wrong values, and the wrong window has a case of its own.
    assert!(report.defects.len() >= 2, "{report}");
    for (i, a) in report.defects.iter().enumerate() {
        assert!(report.defects[..i].iter().all(|b| !b.class.same_kind(&a.class)), "one case per class:\n{report}");
    }
    // The shrinker kept each class: every shrunk case, checked on its own, shows that class.
    let h = register(&median_window_plus_two::DECL);
    for d in report.defects.iter().filter(|d| d.shrunk_from.is_some()) {
        match conformance::check_case(&h, BackendKind::Wgpu, &d.case) {
            Err(ConformanceFailure::Rejected(r)) => assert!(r.first().class.same_kind(&d.class), "{} shrank to {}", d.class.name(), r),
            other => panic!("the shrunk case of `{}` passes on its own: {other:?}", d.class.name()),
        }
    }
    // (Whether any class's case shrinks depends on the draw: each class comes with the smallest
    // failing case it explains, often minimal already. `conformance_large` shrinks one for sure.)
}

#[test]
fn a_broken_kernel_still_runs_without_a_receipt() {
    if !common::wgpu_available() {
        return;
    }
    // Using an op never requires a receipt: the broken kernel runs (and is wrong) on request.
    let h = register(&median_wrong_middle::DECL);
    let x = Tensor::vector(vec![3.0f32, 1.0, 2.0, 5.0, 4.0]);
    let out = h.call_with(&[&x], &[Scalar::U32(3)], CallOptions::on(BackendKind::Wgpu)).expect("runs");
    assert_eq!(out.outputs[0].numel(), 3);
}

fn good() -> OpHandle {
    register(&median::windowed_median::DECL)
}

fn wgpu_profile() -> op_runtime::device::DeviceProfile {
    let b = op_runtime::registry().backend(BackendKind::Wgpu).expect("compiled in");
    (*b.profile().expect("available")).clone()
}

#[test]
fn good_kernel_conforms_and_its_receipt_verifies() {
    if !common::wgpu_available() {
        return;
    }
    let h = good();
    let receipt = match conformance::conform(&h, BackendKind::Wgpu) {
        Ok(r) => r,
        Err(e) => panic!("the good median kernel must conform:\n{e}"),
    };
    let op = h.op();
    let profile = wgpu_profile();
    assert_eq!(receipt.op, "user/example/windowed_median@1");
    assert_eq!(receipt.content_hash, op.hash_hex());
    assert_eq!(receipt.device, profile);
    assert!(receipt.cases >= 20, "{} cases", receipt.cases);
    receipt.verify(&op, &profile).expect("verifies");

    // JSON round trip.
    let json = receipt.to_json();
    for key in [
        "\"op\"",
        "\"content_hash\"",
        "\"backend\"",
        "\"device\"",
        "\"tolerance\"",
        "\"cases\"",
        "\"corpus_digest\"",
        "\"engine_version\"",
        "\"digest\"",
    ] {
        assert!(json.contains(key), "receipt JSON lacks {key}:\n{json}");
    }
    let back = Receipt::from_json(&json).expect("parses");
    assert_eq!(back, receipt);
    back.verify(&op, &profile).expect("round trip verifies");

    // Deterministic: the corpus (and so the digest) is the same on a second run.
    let again = conformance::conform(&h, BackendKind::Wgpu).expect("conforms again");
    assert_eq!(again.corpus_digest, receipt.corpus_digest);
    assert_eq!(again.digest, receipt.digest);
}

#[test]
fn tampered_receipts_fail() {
    if !common::wgpu_available() {
        return;
    }
    let h = good();
    let receipt = conformance::conform(&h, BackendKind::Wgpu).expect("conforms");
    let op = h.op();
    let profile = wgpu_profile();

    // A field edited in the JSON: the digest no longer matches.
    let json = receipt.to_json().replace(&format!("\"cases\": {}", receipt.cases), &format!("\"cases\": {}", receipt.cases + 100));
    let forged = Receipt::from_json(&json).expect("still parses");
    assert!(matches!(forged.verify(&op, &profile), Err(ReceiptError::Digest { .. })));

    // A digest edited.
    let mut r = receipt.clone();
    r.digest = "0".repeat(64);
    assert!(matches!(r.verify(&op, &profile), Err(ReceiptError::Digest { .. })));

    // Another content hash (digest recomputed, as a forger would): refused, conform locally.
    let mut r = receipt.clone();
    r.content_hash = "ab".repeat(32);
    r.digest = r.compute_digest();
    let e = r.verify(&op, &profile).unwrap_err();
    assert!(matches!(e, ReceiptError::ContentHash { .. }), "{e}");
    assert!(e.to_string().contains("conform locally"), "{e}");

    // Another device: refused, conform locally.
    let mut other = profile.clone();
    other.adapter = "Some Other GPU".into();
    let e = receipt.verify(&op, &other).unwrap_err();
    assert!(matches!(e, ReceiptError::Device { .. }), "{e}");
    assert!(e.to_string().contains("conform locally"), "{e}");

    // Another op.
    let broken = register(&median_wrong_middle::DECL).op();
    assert!(matches!(receipt.verify(&broken, &profile), Err(ReceiptError::OtherOp { .. })));

    // Garbage.
    assert!(matches!(Receipt::from_json("{\"op\": 1}"), Err(ReceiptError::Parse(_))));
}

#[test]
fn corpus_covers_the_boundaries() {
    let op = good().op();
    let corpus = conformance::corpus(&op);
    let ws: std::collections::BTreeSet<i128> = corpus.cases.iter().filter_map(|c| c.sym("w")).collect();
    for w in [1, 3, 31] {
        assert!(ws.contains(&w), "w = {w} missing from {ws:?}");
    }
    assert!(ws.iter().all(|w| w % 2 == 1), "only admissible (odd) w: {ws:?}");
    // The smallest admissible input: n = w, one output, for each boundary w.
    for w in [1, 3, 31] {
        assert!(corpus.cases.iter().any(|c| c.sym("w") == Some(w) && c.sym("n") == Some(w)), "no n = w = {w} case");
    }
    // NaN (the median declares no domain), signed zeros, infinities and subnormals present.
    let all: Vec<f32> = corpus.cases.iter().flat_map(|c| c.inputs[0].as_slice::<f32>().unwrap_or_default().to_vec()).collect();
    assert!(all.iter().any(|v| v.is_nan()) && all.iter().any(|v| v.is_nan() && v.is_sign_negative()));
    assert!(all.iter().any(|v| *v == 0.0 && v.is_sign_negative()));
    assert!(all.iter().any(|v| v.is_infinite()));
    assert!(all.iter().any(|v| v.is_subnormal()));
    assert!(all.contains(&f32::MAX));
    // Deterministic: seeded from the content hash.
    assert_eq!(conformance::corpus(&op).digest, corpus.digest);
    // Modest: conformance must stay fast.
    assert!(corpus.cases.len() <= 200, "{} cases", corpus.cases.len());
}

#[test]
fn conform_all_covers_every_backend() {
    let h = good();
    let results = conformance::conform_all(&h);
    let kinds: Vec<BackendKind> = results.iter().map(|(k, _)| *k).collect();
    assert!(kinds.contains(&BackendKind::Reference));
    for (kind, r) in &results {
        match (kind, r) {
            (BackendKind::Reference, r) => assert!(r.is_ok(), "{r:?}"),
            // The median declares no CPU kernel: a skip with the reason.
            (BackendKind::Cpu, Err(e)) => assert!(e.is_skip(), "{e}"),
            (_, Err(e)) if e.is_skip() => eprintln!("skipped {kind}: {e}"),
            (_, Err(e)) => panic!("{kind}: {e}"),
            (_, Ok(r)) => eprintln!("{kind}: {} cases on {}", r.cases, r.device),
        }
    }
}
