//! The op library's checks can fail: for each family of new built-ins a deliberately broken
//! kernel (WGSL forward, WGSL VJP, `cpu`) is rejected by conformance against the built-in's own
//! reference or VJP rule, and a deliberately wrong VJP rule is rejected by gradcheck, each over
//! several salts. The fixtures share the built-ins' contracts and references; only the broken
//! part differs (`generated_tests = false`).
//!
//! wgpu rejections skip with a printed reason when no adapter exists, unless
//! `OP_REQUIRE_GPU_ADAPTER=1` (CI).

mod common;

use op_runtime::builtins;
use op_runtime::gradcheck::{gradcheck_with, GradcheckOptions};
use op_runtime::testing::{assert_conformance_rejected, assert_gradcheck_rejected, assert_vjp_conformance_rejected};
use op_runtime::{op, BackendKind, Real};

// ---- Windows: unfold. ----

/// Deliberately broken unfold kernel: window `i` starts at `i` whatever the step.
#[op(name = "test/broken/unfold_ignores_step", version = 1,
     signature(x: f32[n], w: u32, s: u32 where 1 <= w, w <= n, s >= 1) -> f32[(n - w) / s + 1, w],
     category = selection, tolerance = exact, backward = none, generated_tests = false,
     kernel(wgsl = "kernels/broken/unfold_ignores_step.wgsl", bindings(x: read, out: read_write, uniform(n, w, s)), threads = ((n - w) / s + 1) * w))]
pub fn unfold_ignores_step<T: Real>(x: &[T], w: u32, s: u32) -> Vec<T> {
    builtins::unfold(x, w, s)
}

/// Deliberately broken unfold `cpu` kernel: the same mistake on the CPU.
#[op(name = "test/broken/unfold_cpu_ignores_step", version = 1,
     signature(x: f32[n], w: u32, s: u32 where 1 <= w, w <= n, s >= 1) -> f32[(n - w) / s + 1, w],
     category = selection, tolerance = exact, backward = none, generated_tests = false, cpu = unfold_step_one)]
pub fn unfold_cpu_ignores_step<T: Real>(x: &[T], w: u32, s: u32) -> Vec<T> {
    builtins::unfold(x, w, s)
}
/// Wrong on purpose: windows of step 1, as many as the step-`s` output has.
pub fn unfold_step_one(x: &[f32], w: u32, s: u32) -> Vec<f32> {
    let (w, s) = (w as usize, s as usize);
    let rows = (x.len() - w) / s + 1;
    (0..rows).flat_map(|i| x[i..i + w].to_vec()).collect()
}

/// Deliberately broken unfold VJP kernel: skips the last window containing each element.
#[op(name = "test/broken/unfold_vjp_skips_window", version = 1,
     signature(x: f32[n], w: u32, s: u32 where 1 <= w, w <= n, s >= 1) -> f32[(n - w) / s + 1, w],
     category = selection, tolerance = exact, generated_tests = false,
     backward = vjp(builtins::unfold_vjp,
         kernel(wgsl = "kernels/broken/unfold_vjp_skips_window.wgsl", bindings(x: read, d_out: read, d_x: read_write, uniform(n, w, s)), threads = n)),
     subgradient = "a copy")]
pub fn unfold_vjp_skips_window<T: Real>(x: &[T], w: u32, s: u32) -> Vec<T> {
    builtins::unfold(x, w, s)
}

/// Unfold with a VJP rule that overwrites instead of adding where windows overlap. Declared for
/// overlapping windows only (`s < w`, at least two windows): elsewhere no element is in two
/// windows and the rule is right, and gradcheck judges one drawn shape per run.
#[op(name = "test/bad/unfold_vjp_overwrites", version = 1,
     signature(x: f32[n], w: u32, s: u32 where 1 <= s, s < w, 2 * w <= n) -> f32[(n - w) / s + 1, w],
     category = selection, tolerance = exact, generated_tests = false,
     backward = vjp(unfold_vjp_overwrites_rule), subgradient = "a copy")]
pub fn unfold_vjp_overwrites<T: Real>(x: &[T], w: u32, s: u32) -> Vec<T> {
    builtins::unfold(x, w, s)
}
/// Wrong on purpose: the last window's cotangent wins.
pub fn unfold_vjp_overwrites_rule<T: Real>(x: &[T], w: u32, s: u32, g: &[T]) -> Vec<T> {
    let (w, s) = (w as usize, s as usize);
    let mut gx = vec![T::zero(); x.len()];
    for i in 0..(x.len() - w) / s + 1 {
        for j in 0..w {
            gx[i * s + j] = g[i * w + j];
        }
    }
    gx
}

// ---- Rows that order values: sort_rows, median_rows. ----

/// Deliberately broken sort_rows kernel: ranks with a plain float `<` (-0 == +0, NaN unordered).
#[op(name = "test/broken/sort_rows_plain_compare", version = 1,
     signature(x: f32[r, c] where c <= 1024) -> f32[r, c],
     category = selection, tolerance = exact, backward = none, generated_tests = false,
     kernel(wgsl = "kernels/broken/sort_rows_plain_compare.wgsl", bindings(x: read, out: read_write, uniform(r, c)), threads = r * c))]
pub fn sort_rows_plain_compare<T: Real>(x: &[T], c: usize) -> Vec<T> {
    builtins::sort_rows(x, c)
}

/// Deliberately broken median_rows kernel: the upper median (rank `c / 2`).
#[op(name = "test/broken/median_rows_upper", version = 1,
     signature(x: f32[r, c] where 1 <= c, c <= 1024) -> f32[r],
     category = selection, tolerance = exact, backward = none, generated_tests = false,
     kernel(wgsl = "kernels/broken/median_rows_upper.wgsl", bindings(x: read, out: read_write, uniform(r, c)), threads = r * c))]
pub fn median_rows_upper<T: Real>(x: &[T], c: usize) -> Vec<T> {
    builtins::median_rows(x, c)
}

/// Deliberately broken median_rows `cpu` kernel: the upper median.
#[op(name = "test/broken/median_rows_cpu_upper", version = 1,
     signature(x: f32[r, c] where 1 <= c, c <= 1024) -> f32[r],
     category = selection, tolerance = exact, backward = none, generated_tests = false, cpu = median_rows_upper_cpu)]
pub fn median_rows_cpu_upper<T: Real>(x: &[T], c: usize) -> Vec<T> {
    builtins::median_rows(x, c)
}
/// Wrong on purpose: rank `c / 2`.
pub fn median_rows_upper_cpu(x: &[f32], c: usize) -> Vec<f32> {
    x.chunks(c)
        .map(|row| {
            let mut v = row.to_vec();
            v.sort_by(|a, b| a.total_cmp(b));
            v[c / 2]
        })
        .collect()
}

/// Deliberately broken median_rows VJP kernel: ties routed to the later element.
#[op(name = "test/broken/median_rows_vjp_ties_later", version = 1,
     signature(x: f32[r, c] where 1 <= c, c <= 1024) -> f32[r],
     category = selection, tolerance = exact, generated_tests = false,
     backward = vjp(builtins::median_rows_vjp,
         kernel(wgsl = "kernels/broken/median_rows_vjp_ties_later.wgsl", bindings(x: read, d_out: read, d_x: read_write, uniform(r, c)), threads = r * c)),
     subgradient = "the cotangent goes to the selected element")]
pub fn median_rows_vjp_ties_later<T: Real>(x: &[T], c: usize) -> Vec<T> {
    builtins::median_rows(x, c)
}

/// median_rows with a VJP rule that routes ties to the later element.
#[op(name = "test/bad/median_rows_ties_later", version = 1,
     signature(x: f32[r, c] where 1 <= c, c <= 1024) -> f32[r],
     category = selection, tolerance = exact, generated_tests = false,
     backward = vjp(median_rows_ties_later_rule), subgradient = "the later of equal elements (wrong on purpose)")]
pub fn median_rows_ties_later<T: Real>(x: &[T], c: usize) -> Vec<T> {
    builtins::median_rows(x, c)
}
/// Wrong on purpose: of equal elements, the later one is taken as the median.
pub fn median_rows_ties_later_rule<T: Real>(x: &[T], c: usize, g: &[T]) -> Vec<T> {
    let mut gx = vec![T::zero(); x.len()];
    for (r, gi) in g.iter().enumerate() {
        let row = &x[r * c..(r + 1) * c];
        let mut idx: Vec<usize> = (0..c).collect();
        idx.sort_by(|a, b| row[*a].total_cmp(&row[*b]).then(b.cmp(a)));
        gx[r * c + idx[(c - 1) / 2]] = *gi;
    }
    gx
}

/// sort_rows with a VJP rule that applies the permutation the wrong way round. Declared for rows
/// of 8 or more: a permutation of 2 elements is its own inverse (the rule is then right), and of
/// 3 most are; a random one of 8 elements rarely is.
#[op(name = "test/bad/sort_rows_inverse", version = 1,
     signature(x: f32[r, c] where 8 <= c, c <= 1024) -> f32[r, c],
     category = selection, tolerance = exact, generated_tests = false,
     backward = vjp(sort_rows_inverse_rule), subgradient = "the permutation inverted (wrong on purpose)")]
pub fn sort_rows_inverse<T: Real>(x: &[T], c: usize) -> Vec<T> {
    builtins::sort_rows(x, c)
}
/// Wrong on purpose: `g[start + order[k]]` goes to position `k` instead of the reverse.
pub fn sort_rows_inverse_rule<T: Real>(x: &[T], c: usize, g: &[T]) -> Vec<T> {
    let mut gx = vec![T::zero(); x.len()];
    for start in (0..x.len()).step_by(c.max(1)) {
        let row = &x[start..start + c];
        let mut idx: Vec<usize> = (0..c).collect();
        idx.sort_by(|a, b| row[*a].total_cmp(&row[*b]));
        for (k, i) in idx.into_iter().enumerate() {
            gx[start + k] = g[start + i];
        }
    }
    gx
}

// ---- The assertions. ----

#[test]
fn broken_unfold_kernels_are_rejected() {
    common::wgpu_rejection(&unfold_ignores_step::DECL);
    let reports = assert_conformance_rejected(&unfold_cpu_ignores_step::DECL);
    assert!(reports.iter().any(|r| r.backend == BackendKind::Cpu), "the cpu kernel runs everywhere and must be rejected");
    let reports = assert_vjp_conformance_rejected(&unfold_vjp_skips_window::DECL);
    if common::wgpu_available() {
        assert!(reports.iter().any(|r| r.backend == BackendKind::Wgpu), "wgpu ran and must have rejected it");
    }
}

#[test]
fn broken_row_kernels_are_rejected() {
    if let Some(r) = common::wgpu_rejection(&sort_rows_plain_compare::DECL) {
        assert!(r.to_string().contains("test/broken/sort_rows_plain_compare"), "{r}");
    }
    common::wgpu_rejection(&median_rows_upper::DECL);
    let reports = assert_conformance_rejected(&median_rows_cpu_upper::DECL);
    assert!(reports.iter().any(|r| r.backend == BackendKind::Cpu), "the cpu kernel runs everywhere and must be rejected");
    let reports = assert_vjp_conformance_rejected(&median_rows_vjp_ties_later::DECL);
    if common::wgpu_available() {
        assert!(reports.iter().any(|r| r.backend == BackendKind::Wgpu), "wgpu ran and must have rejected it");
    }
}

/// Gradcheck rejects `decl` at every salt.
fn rejected_at_every_salt(decl: &'static op_runtime::OpDecl) {
    let _ = assert_gradcheck_rejected(decl);
    for salt in 1..8u64 {
        let o = GradcheckOptions { salt, ..GradcheckOptions::default() };
        let r = gradcheck_with(op_runtime::registry(), decl, &o);
        assert!(r.is_err(), "{} passed gradcheck at salt {salt}: {}", decl.rust_name, r.map(|r| r.to_string()).unwrap_or_default());
    }
}

#[test]
fn wrong_vjp_rules_of_the_library_are_rejected_by_gradcheck() {
    rejected_at_every_salt(&unfold_vjp_overwrites::DECL);
    rejected_at_every_salt(&median_rows_ties_later::DECL);
    rejected_at_every_salt(&sort_rows_inverse::DECL);
}

/// A sort whose reference turns `+inf` into a NaN: it declares `nan = ordered`, and a NaN that
/// no input holds breaks that.
#[op(name = "test/bad/sort_rows_makes_nan", version = 1,
     signature(x: f32[r, c] where c <= 1024) -> f32[r, c],
     category = selection, tolerance = exact, nan = ordered, backward = none, generated_tests = false)]
pub fn sort_rows_makes_nan<T: Real>(x: &[T], c: usize) -> Vec<T> {
    let inf = T::one() / T::zero();
    builtins::sort_rows(x, c).into_iter().map(|v| if v == inf { inf - inf } else { v }).collect()
}

#[test]
fn a_reference_that_makes_up_a_nan_breaks_nan_ordered() {
    let e = op_runtime::testing::assert_reference_rejected(&sort_rows_makes_nan::DECL);
    assert!(e.to_string().contains("nan = ordered"), "{e}");
}
