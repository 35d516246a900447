//! Corpus edges: every pattern of empty and non-empty dims the constraints admit is tried, an
//! empty inner dim beside a non-empty outer one (`[2, 0]`) included; a reference that panics on
//! such an admissible shape is a defect of the declaration, reported as such and naming the
//! shape ("the reference panicked on shape [2, 0]: add a constraint or handle it"). Its twins,
//! one declaring `cols >= 1` and one handling the empty row, conform.

use op_runtime::conformance::{self, ConformanceFailure};
use op_runtime::{op, BackendKind, OpHandle, Real, Registry};

/// Row-wise softmax whose reference takes each row's largest element with `expect`: it panics
/// on a row of no elements, a shape the signature admits (no `cols >= 1`).
#[op(name = "test/broken/softmax_empty_row_panics", version = 1, signature(x: f32[rows, cols]) -> f32[rows, cols],
     category = transcendental, tolerance = ulp(4), backward = none, cpu = softmax_cpu, generated_tests = false)]
pub fn softmax_panics<T: Real>(x: &[T], rows: usize, cols: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(x.len());
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let max = *row.iter().max_by(|a, b| a.total_cmp(b)).expect("a row has a largest element");
        out.extend(exp_normalised(row, max));
    }
    out
}

/// The same softmax, declaring `cols >= 1`.
#[op(name = "test/edges/softmax_nonempty_rows", version = 1, signature(x: f32[rows, cols] where cols >= 1) -> f32[rows, cols],
     category = transcendental, tolerance = ulp(4), backward = none, cpu = softmax_cpu)]
pub fn softmax_constrained<T: Real>(x: &[T], rows: usize, cols: usize) -> Vec<T> {
    softmax_panics(x, rows, cols)
}

/// The same softmax, handling an empty row (its softmax has no element).
#[op(name = "test/edges/softmax_handles_empty_rows", version = 1, signature(x: f32[rows, cols]) -> f32[rows, cols],
     category = transcendental, tolerance = ulp(4), backward = none, cpu = softmax_cpu)]
pub fn softmax_handled<T: Real>(x: &[T], rows: usize, cols: usize) -> Vec<T> {
    if cols == 0 {
        return Vec::new();
    }
    softmax_panics(x, rows, cols)
}

/// `exp(v - max) / sum` over a row, in f64, rounded once.
fn exp_normalised<T: Real>(row: &[T], max: T) -> Vec<T> {
    let e: Vec<f64> = row.iter().map(|v| (v.to_f64() - max.to_f64()).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|v| T::from_f64(v / s)).collect()
}

/// The `cpu` kernel of the three: the reference at f32, empty rows handled.
pub fn softmax_cpu(x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    softmax_handled(x, rows, cols)
}

fn register(decl: &'static op_runtime::OpDecl) -> OpHandle {
    Registry::new().register(decl).expect("registers")
}

#[test]
fn the_corpus_tries_every_pattern_of_empty_dims_the_constraints_admit() {
    let shapes = |h: &OpHandle| -> Vec<[i128; 2]> {
        conformance::corpus(&h.op()).cases.iter().map(|c| [c.sym("rows").unwrap(), c.sym("cols").unwrap()]).collect()
    };
    let free = shapes(&register(&softmax_panics::DECL));
    for want in [[2, 0], [1, 0], [0, 2], [0, 1], [0, 0]] {
        assert!(free.contains(&want), "{want:?} missing");
    }
    let constrained = shapes(&register(&softmax_constrained::DECL));
    assert!(constrained.iter().all(|[_, cols]| *cols >= 1), "only admissible shapes");
    assert!(constrained.contains(&[0, 2]) && constrained.contains(&[0, 1]), "empty rows are still admitted");
    // The built-ins: `matmul`'s empty outer dims beside a non-empty contraction, and the reverse.
    let mm = op_runtime::registry().lookup("builtin/matmul").expect("built-in").op();
    let mm: Vec<[i128; 3]> =
        conformance::corpus(&mm).cases.iter().map(|c| [c.sym("m").unwrap(), c.sym("k").unwrap(), c.sym("n").unwrap()]).collect();
    for want in [[0, 2, 2], [2, 0, 2], [2, 2, 0], [0, 0, 2], [2, 0, 0], [0, 2, 0]] {
        assert!(mm.contains(&want), "matmul {want:?} missing");
    }
}

#[test]
fn a_reference_that_panics_on_an_admissible_empty_row_is_reported_naming_the_shape() {
    let h = register(&softmax_panics::DECL);
    for kind in [BackendKind::Reference, BackendKind::Cpu] {
        match conformance::conform(&h, kind) {
            Err(e @ ConformanceFailure::ReferencePanicked { .. }) => {
                let text = e.to_string();
                eprintln!("{kind}: {text}");
                assert!(text.contains("the reference panicked on shape [2, 0]: add a constraint or handle it"), "{text}");
                assert!(text.contains("a row has a largest element") && text.contains("cols = 0"), "{text}");
                let ConformanceFailure::ReferencePanicked { shape, .. } = e else { unreachable!() };
                assert_eq!(shape, "[2, 0]");
            }
            other => panic!("{kind}: expected the reference's panic on [2, 0], got {other:?}"),
        }
    }
    // A generated test would fail, and `assert_reference_rejected` takes it as the reference's.
    let e = op_runtime::testing::assert_reference_rejected(&softmax_panics::DECL);
    assert!(matches!(e, ConformanceFailure::ReferencePanicked { .. }), "{e}");
}

#[test]
fn its_twins_conform() {
    for decl in [&softmax_constrained::DECL, &softmax_handled::DECL] {
        let h = register(decl);
        for kind in [BackendKind::Reference, BackendKind::Cpu] {
            let r = conformance::conform(&h, kind).unwrap_or_else(|e| panic!("`{}` on {kind}: {e}", h.id()));
            eprintln!("`{}` on {kind}: {} cases conform", h.id(), r.cases);
        }
    }
}
