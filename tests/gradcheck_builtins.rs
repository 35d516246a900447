//! Gradcheck against the built-ins: every correct built-in VJP passes (on many generated cases),
//! and test-local copies of built-ins with a corrupted VJP are each rejected (they declare
//! `generated_tests = false`; the tests below assert every rejection, across seeds).

use op_runtime::builtins;
use op_runtime::gradcheck;
use op_runtime::gradcheck::{gradcheck_with, Corruption, GradcheckError, GradcheckOptions};
use op_runtime::{op, Real};

/// `mul` whose VJP swaps the two gradients.
#[op(name = "test/bad/mul_swapped", version = 1, signature(a: f32[n], b: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(1), backward = vjp(mul_swapped_vjp), generated_tests = false)]
pub fn mul_swapped<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    builtins::mul(a, b)
}
/// Wrong: `(g a, g b)` instead of `(g b, g a)`.
pub fn mul_swapped_vjp<T: Real>(a: &[T], b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    let (ga, gb) = builtins::mul_vjp(a, b, g);
    (gb, ga)
}

/// `tanh` whose VJP forgets to square: `g (1 - tanh)`.
#[op(name = "test/bad/tanh_unsquared", version = 1, signature(x: f32[n]) -> f32[n],
     category = transcendental, tolerance = ulp(16), backward = vjp(tanh_unsquared_vjp), generated_tests = false)]
pub fn tanh_unsquared<T: Real>(x: &[T]) -> Vec<T> {
    builtins::tanh(x)
}
/// Wrong: `1 - t` instead of `1 - t^2`.
pub fn tanh_unsquared_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    x.iter().zip(g).map(|(x, g)| *g * (T::one() - x.tanh())).collect()
}

/// `conv1d` whose kernel gradient comes back reversed.
#[op(name = "test/bad/conv1d_flipped", version = 1, signature(x: f32[n], w: f32[m] where 1 <= m, m <= n) -> f32[n - m + 1],
     category = contraction, tolerance = accum(2), backward = vjp(conv1d_flipped_vjp), generated_tests = false)]
pub fn conv1d_flipped<T: Real>(x: &[T], w: &[T]) -> Vec<T> {
    builtins::conv1d(x, w)
}
/// Wrong: the kernel gradient in reverse order (a convolution/correlation mix-up).
pub fn conv1d_flipped_vjp<T: Real>(x: &[T], w: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    let (gx, mut gw) = builtins::conv1d_vjp(x, w, g);
    gw.reverse();
    (gx, gw)
}

/// `mse_loss` whose VJP drops the `1 / n` of the mean.
#[op(name = "test/bad/mse_unaveraged", version = 1, signature(a: f32[n], b: f32[n] where n >= 1) -> f32[],
     category = reduction, tolerance = accum(4), backward = vjp(mse_unaveraged_vjp), generated_tests = false)]
pub fn mse_unaveraged<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    builtins::mse_loss(a, b)
}
/// Wrong: `2 (a - b) g`, missing `/ n`.
pub fn mse_unaveraged_vjp<T: Real>(a: &[T], b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    let ga: Vec<T> = a.iter().zip(b).map(|(x, y)| (*x - *y) * T::from_f64(2.0) * g[0]).collect();
    let gb = ga.iter().map(|v| -*v).collect();
    (ga, gb)
}

/// `relu` whose VJP lets the cotangent through where `x < 0` too.
#[op(name = "test/bad/relu_leaky", version = 1, signature(x: f32[n]) -> f32[n],
     category = selection, tolerance = exact, backward = vjp(relu_leaky_vjp),
     subgradient = "the cotangent passes everywhere (wrong on purpose)", generated_tests = false)]
pub fn relu_leaky<T: Real>(x: &[T]) -> Vec<T> {
    builtins::relu(x)
}
/// Wrong: identity.
pub fn relu_leaky_vjp<T: Real>(_x: &[T], g: &[T]) -> Vec<T> {
    g.to_vec()
}

#[test]
fn every_builtin_vjp_passes_with_its_negative_control() {
    // (A built-in declared `backward = none`, a comparison's mask or an argmax, has nothing to
    // check; gradcheck refuses it with a typed error.)
    let differentiable = |d: &&'static op_runtime::OpDecl| {
        let op = op_runtime::Registry::new().register(d).expect("a built-in registers").op();
        op.contract().backward != op_runtime::contract::Backward::None
    };
    for d in builtins::decls().into_iter().filter(differentiable) {
        for salt in 0..12u64 {
            let o = GradcheckOptions { salt, ..GradcheckOptions::default() };
            let r = gradcheck_with(op_runtime::registry(), d, &o).unwrap_or_else(|e| panic!("{} (salt {salt}): {e}", d.rust_name));
            assert!(r.to_string().contains("negative control : corrupted vjp REJECTED"));
            assert!(r.negative_control.iter().all(|c| !c.applicable || c.rejected), "{r:?}");
            assert!((r.skipped + r.skipped_nonfinite + r.skipped_unresolved) * 2 <= r.probes + r.swept, "{r}");
        }
    }
}

fn rejected(decl: &'static op_runtime::OpDecl, name: &str) {
    for salt in 0..8u64 {
        let o = GradcheckOptions { salt, ..GradcheckOptions::default() };
        match gradcheck_with(op_runtime::registry(), decl, &o) {
            Err(e @ GradcheckError::Mismatch { .. }) => assert!(e.to_string().contains(&format!("op `{name}@1`")), "{e}"),
            other => panic!("{name} (salt {salt}) must be rejected, got {other:?}"),
        }
    }
}

#[test]
fn mul_with_swapped_gradients_is_rejected() {
    rejected(&mul_swapped::DECL, "test/bad/mul_swapped");
}

#[test]
fn tanh_without_the_square_is_rejected() {
    rejected(&tanh_unsquared::DECL, "test/bad/tanh_unsquared");
}

#[test]
fn conv1d_with_a_reversed_kernel_gradient_is_rejected() {
    rejected(&conv1d_flipped::DECL, "test/bad/conv1d_flipped");
}

#[test]
fn mse_loss_without_the_mean_is_rejected() {
    rejected(&mse_unaveraged::DECL, "test/bad/mse_unaveraged");
}

#[test]
fn relu_letting_negative_inputs_through_is_rejected() {
    rejected(&relu_leaky::DECL, "test/bad/relu_leaky");
}

#[test]
fn the_report_is_a_value_and_serialises() {
    let r = gradcheck(&builtins::conv1d::DECL).unwrap_or_else(|e| panic!("{e}"));
    let text = r.to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 10, "{text}");
    assert!(lines[0].starts_with("gradcheck  builtin/conv1d@1   (n = "), "{text}");
    assert!(lines[0].ends_with(", reference path, f64)"), "{text}");
    assert!(lines[1].starts_with("  forward  : author reference `conv1d`"), "{text}");
    assert_eq!(lines[2], "  vjp      : declared backward `conv1d_vjp`");
    assert_eq!(
        lines[3],
        format!(
            "  probes   : 32 sampled and {} swept (each element alone), {} checked, central differences, h = 1e-3 (relative below |x| = 1)",
            r.swept,
            r.checked()
        )
    );
    // Every element of x[n] and w[m] is swept in each of the four draws (fewer than 64 each).
    let (n, m): (usize, usize) = (r.bindings[0].1.parse().unwrap_or(0), r.bindings[1].1.parse().unwrap_or(0));
    assert_eq!(r.swept, 4 * (n + m), "{text}");
    assert!(lines[4].starts_with("  values   : log-uniform magnitudes, both signs, inside each input's domain: 1e-3..1e3 in "), "{text}");
    // The round at the reach of the parameter space: dims up to 64, its sweep alone, checked
    // within the bound.
    let reach = r.reach.as_ref().unwrap_or_else(|why| panic!("conv1d has a reach round, not {why}"));
    assert!(lines[5].starts_with("  reach    : one more round at ") && lines[5].contains(&format!("salt {}", reach.salt)), "{text}");
    assert!(reach.probes > reach.skipped && reach.worst_ratio <= 1.0, "{text}");
    let lines: Vec<&str> = lines.iter().enumerate().filter(|(i, _)| *i != 5).map(|(_, l)| *l).collect();
    assert!(lines[5].starts_with("  skipped  : ") && lines[5].contains("within h of a kink (no derivative exists there)"), "{text}");
    assert_eq!(lines[6], "  kinks    : not probed (no kinks in this category)");
    // The bound line shows the error, relative too, and the bound applied at that probe.
    let bound = format!("{:.1e}", r.bound_applied);
    assert!(lines[7].starts_with("  bound    : max |analytic - numeric| = ") && lines[7].contains(" (relative "), "{text}");
    assert!(lines[7].contains(&format!("against the bound applied there {bound} (declared accum(2): relative ")), "{text}");
    // Within the bound at the worst probe (the worst ratio of error to bound is at most 1). A
    // fixed relative-error ceiling is not a property of the op: with values of both signs up to
    // 1e3, an output's sum can cancel far below its terms, and the relative error of a correct
    // rule then depends on the seed (2.7e-6 at one).
    assert!(r.max_abs_err <= r.bound_applied && r.worst_ratio <= 1.0, "{r:?}");
    // The negative control states the smallest relative error it proves it catches, and a
    // backward scaled by that much was among the rejected corruptions.
    let caught = r.smallest_caught.expect("conv1d has nonzero gradients");
    assert!(lines[8].starts_with("  negative control : corrupted vjp REJECTED; a relative error of "), "{text}");
    assert!(lines[8].ends_with(&format!("{caught:.1e} or more is caught")), "{text}");
    assert!(caught < 1e-6, "{r:?}");
    assert!(r.negative_control.iter().any(|c| c.corruption == Corruption::Scaled(1.0 + caught) && c.applicable && c.rejected), "{r:?}");
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap_or_default();
    assert_eq!(json["op"], "builtin/conv1d@1");
    assert_eq!(json["probes"], 32);
}

/// `sum` whose VJP is scaled by 1.01.
#[op(name = "test/bad/sum_scaled", version = 1, signature(x: f32[n]) -> f32[],
     category = reduction, tolerance = accum(2), backward = vjp(sum_scaled_vjp), generated_tests = false)]
pub fn sum_scaled<T: Real>(x: &[T]) -> Vec<T> {
    builtins::sum(x)
}
/// Wrong: 1% too large.
pub fn sum_scaled_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    builtins::sum_vjp(x, g).into_iter().map(|v| v * T::from_f64(1.01)).collect()
}

/// `mse_loss` whose VJP is scaled by 1.01.
#[op(name = "test/bad/mse_scaled", version = 1, signature(a: f32[n], b: f32[n] where n >= 1) -> f32[],
     category = reduction, tolerance = accum(4), backward = vjp(mse_scaled_vjp), generated_tests = false)]
pub fn mse_scaled<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    builtins::mse_loss(a, b)
}
/// Wrong: 1% too large.
pub fn mse_scaled_vjp<T: Real>(a: &[T], b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    let (ga, gb) = builtins::mse_loss_vjp(a, b, g);
    let s = |v: Vec<T>| v.into_iter().map(|v| v * T::from_f64(1.01)).collect();
    (s(ga), s(gb))
}

/// The bound for an accumulation does not grow with its length: at n = 50 000 (where the old
/// `k * len * eps32` bound of `accum(2)` admitted 1.2%), the correct built-in reductions pass
/// and VJPs scaled by 1.01 are rejected by the comparison with central differences itself.
#[test]
fn a_reduction_vjp_scaled_by_1_01_is_rejected_at_50k_elements() {
    let big = GradcheckOptions { pin: vec![("n".into(), 50_000)], ..GradcheckOptions::default() };
    for d in [&builtins::sum::DECL, &builtins::mean::DECL, &builtins::mse_loss::DECL] {
        let r = gradcheck_with(op_runtime::registry(), d, &big).unwrap_or_else(|e| panic!("{}: {e}", d.rust_name));
        println!("{r}");
        assert!(r.rel_bound < 1e-10, "{r:?}");
        assert!(r.negative_control_rejected(), "{r:?}");
        assert!(r.to_string().contains("negative control : corrupted vjp REJECTED"), "{r}");
        assert!(r.negative_control.iter().any(|c| c.corruption == Corruption::Scaled(1.01) && c.rejected), "{r:?}");
    }
    for (d, op) in [(&sum_scaled::DECL, "test/bad/sum_scaled@1"), (&mse_scaled::DECL, "test/bad/mse_scaled@1")] {
        for o in [&big, &GradcheckOptions::default()] {
            match gradcheck_with(op_runtime::registry(), d, o) {
                Err(e @ GradcheckError::Mismatch { .. }) => {
                    let m = e.to_string();
                    assert!(m.contains(&format!("op `{op}`")) && m.contains("disagrees with central differences"), "{m}");
                    if let GradcheckError::Mismatch { diff, allowed, analytic, failing, checked, .. } = e {
                        // Rejected with a wide margin, on most probes.
                        assert!(diff > 100.0 * allowed && diff > 0.005 * analytic.abs(), "{m}");
                        assert!(2 * failing > checked, "{m}");
                    }
                }
                other => panic!("`{op}` must be rejected, got {other:?}"),
            }
        }
    }
}

/// `matmul` whose VJP for `a` reads `b` with the row length `k` where it is `n`: right exactly
/// when `k == n` (square `b`).
#[op(name = "test/bad/matmul_square_only", version = 1, signature(a: f32[m, k], b: f32[k, n]) -> f32[m, n],
     category = contraction, tolerance = accum(2), backward = vjp(matmul_square_only_vjp), generated_tests = false)]
pub fn matmul_square_only<T: Real>(a: &[T], b: &[T], m: usize, k: usize, n: usize) -> Vec<T> {
    builtins::matmul(a, b, m, k, n)
}
/// Wrong unless `k == n`: `b[p, j]` read at `p * k + j` (wrapped, so it never reads past `b`).
pub fn matmul_square_only_vjp<T: Real>(a: &[T], b: &[T], m: usize, k: usize, n: usize, g: &[T]) -> (Vec<T>, Vec<T>) {
    let (_, gb) = builtins::matmul_vjp(a, b, m, k, n, g);
    let mut ga = vec![T::zero(); m * k];
    for i in 0..m {
        for j in 0..n {
            for p in 0..k {
                ga[i * k + p] += g[i * n + j] * b[(p * k + j) % b.len().max(1)];
            }
        }
    }
    (ga, gb)
}

/// A matmul backward right only for square shapes is rejected on every seed: distinct symbols
/// get distinct values, so `k == n` never comes up by chance.
#[test]
fn a_matmul_rule_right_only_for_square_shapes_is_rejected_on_every_seed() {
    for salt in 0..16u64 {
        let o = GradcheckOptions { salt, ..GradcheckOptions::default() };
        match gradcheck_with(op_runtime::registry(), &matmul_square_only::DECL, &o) {
            Err(e @ GradcheckError::Mismatch { .. }) => assert!(e.to_string().contains("op `test/bad/matmul_square_only@1`"), "{e}"),
            other => panic!("salt {salt}: must be rejected, got {other:?}"),
        }
        // The correct rule passes on the same (non-square) bindings.
        let r = gradcheck_with(op_runtime::registry(), &builtins::matmul::DECL, &o).unwrap_or_else(|e| panic!("salt {salt}: {e}"));
        let dims: Vec<&str> = r.bindings.iter().map(|(_, v)| v.as_str()).collect();
        assert!(dims[0] != dims[1] && dims[1] != dims[2] && dims[0] != dims[2], "salt {salt}: {dims:?}");
    }
}

/// `x^3` whose VJP is 0.1% too large where `|x| > 10`, and right elsewhere.
#[op(name = "test/bad/cube_off_beyond_ten", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(2), backward = vjp(cube_off_beyond_ten_vjp), generated_tests = false)]
pub fn cube_off_beyond_ten<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * *v * *v).collect()
}
/// Wrong only for `|x| > 10`: `3 x^2 g`, times 1.001 there.
pub fn cube_off_beyond_ten_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    let ten = T::from_f64(10.0);
    x.iter()
        .zip(g)
        .map(|(x, g)| {
            let d = T::from_f64(3.0) * *x * *x * *g;
            if *x > ten || *x < -ten {
                d * T::from_f64(1.001)
            } else {
                d
            }
        })
        .collect()
}

/// Probes across magnitudes (log-uniform over 1e-3..1e3) reach `|x| > 10`, where the former
/// fixed range (+-[0.1, 2]) never looked, and their bound is far below 0.1%.
#[test]
fn a_vjp_off_by_a_tenth_of_a_percent_beyond_ten_is_rejected() {
    for salt in 0..8u64 {
        let o = GradcheckOptions { salt, ..GradcheckOptions::default() };
        match gradcheck_with(op_runtime::registry(), &cube_off_beyond_ten::DECL, &o) {
            Err(e @ GradcheckError::Mismatch { .. }) => {
                // Far over the bound, and of the defect's size: 0.1% of the share of the
                // directional derivative beyond ten, which the other elements' terms can partly
                // cancel in the sum (hence up to 0.2% of it, not 0.1%).
                if let GradcheckError::Mismatch { diff, allowed, analytic, numeric, .. } = &e {
                    assert!(*diff > 10.0 * allowed && *diff < 0.002 * analytic.abs().max(numeric.abs()), "{e}");
                }
            }
            other => panic!("salt {salt}: must be rejected, got {other:?}"),
        }
    }
}

/// `relu` whose VJP at exactly 0 doubles the cotangent (right everywhere else): outside the
/// one-sided derivatives (0 and 1) at the kink, which the ordinary probes skip.
#[op(name = "test/bad/relu_doubled_at_zero", version = 1, signature(x: f32[n]) -> f32[n],
     category = selection, tolerance = exact, backward = vjp(relu_doubled_at_zero_vjp),
     subgradient = "twice the cotangent at x = 0 (wrong on purpose)", generated_tests = false)]
pub fn relu_doubled_at_zero<T: Real>(x: &[T]) -> Vec<T> {
    builtins::relu(x)
}
/// Wrong only at 0.
pub fn relu_doubled_at_zero_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    x.iter().zip(g).map(|(x, g)| if *x == T::zero() { *g * T::from_f64(2.0) } else { builtins::relu_vjp(&[*x], &[*g])[0] }).collect()
}

#[test]
fn a_relu_vjp_wrong_only_at_zero_is_rejected_at_a_zero_kink() {
    for salt in 0..8u64 {
        let o = GradcheckOptions { salt, ..GradcheckOptions::default() };
        match gradcheck_with(op_runtime::registry(), &relu_doubled_at_zero::DECL, &o) {
            Err(e @ GradcheckError::KinkConvention { .. }) => {
                assert!(e.to_string().contains("= 0)") && e.to_string().contains("between the one-sided"), "{e}")
            }
            other => panic!("salt {salt}: must be rejected at a zero, got {other:?}"),
        }
    }
    // The built-in relu (zero at 0) holds there.
    let r = gradcheck(&builtins::relu::DECL).unwrap_or_else(|e| panic!("{e}"));
    assert!(r.kinks.is_some_and(|(_, zeros)| zeros >= 1), "{r}");
}
