//! Gradcheck against the built-ins: every correct built-in VJP passes (on many generated cases),
//! and test-local copies of four built-ins with a corrupted VJP are each rejected.

use op_runtime::builtins;
use op_runtime::gradcheck;
use op_runtime::verify::gradcheck::{gradcheck_with, Corruption, GradcheckError, GradcheckOptions};
use op_runtime::{op, Real};

/// `mul` whose VJP swaps the two gradients.
#[op(name = "test/bad/mul_swapped", version = 1, signature(a: f32[n], b: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(1), backward = vjp(mul_swapped_vjp))]
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
     category = transcendental, tolerance = ulp(16), backward = vjp(tanh_unsquared_vjp))]
pub fn tanh_unsquared<T: Real>(x: &[T]) -> Vec<T> {
    builtins::tanh(x)
}
/// Wrong: `1 - t` instead of `1 - t^2`.
pub fn tanh_unsquared_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    x.iter().zip(g).map(|(x, g)| *g * (T::one() - x.tanh())).collect()
}

/// `conv1d` whose kernel gradient comes back reversed.
#[op(name = "test/bad/conv1d_flipped", version = 1, signature(x: f32[n], w: f32[m] where 1 <= m, m <= n) -> f32[n - m + 1],
     category = contraction, tolerance = accum(2), backward = vjp(conv1d_flipped_vjp))]
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
     category = reduction, tolerance = accum(4), backward = vjp(mse_unaveraged_vjp))]
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
     subgradient = "the cotangent passes everywhere (wrong on purpose)")]
pub fn relu_leaky<T: Real>(x: &[T]) -> Vec<T> {
    builtins::relu(x)
}
/// Wrong: identity.
pub fn relu_leaky_vjp<T: Real>(_x: &[T], g: &[T]) -> Vec<T> {
    g.to_vec()
}

#[test]
fn every_builtin_vjp_passes_with_its_negative_control() {
    for d in builtins::decls() {
        for salt in 0..12u64 {
            let o = GradcheckOptions { salt, ..GradcheckOptions::default() };
            let r = gradcheck_with(op_runtime::registry(), d, &o).unwrap_or_else(|e| panic!("{} (salt {salt}): {e}", d.rust_name));
            assert!(r.to_string().contains("negative control : corrupted vjp REJECTED"));
            assert!(r.negative_control.iter().all(|c| !c.applicable || c.rejected), "{r:?}");
            assert!(r.skipped * 2 <= r.probes);
        }
    }
}

fn rejected(decl: &'static op_runtime::core::decl::OpDecl, name: &str) {
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
    assert_eq!(lines.len(), 7, "{text}");
    assert!(lines[0].starts_with("gradcheck  builtin/conv1d@1   (n = "), "{text}");
    assert!(lines[0].ends_with(", reference path, f64)"), "{text}");
    assert!(lines[1].starts_with("  forward  : author reference `conv1d`"), "{text}");
    assert_eq!(lines[2], "  vjp      : declared backward `conv1d_vjp`");
    assert_eq!(lines[3], "  probes   : 32 sampled, central differences, h = 1e-3");
    assert!(lines[4].starts_with("  skipped  : ") && lines[4].ends_with("within h of a kink (no derivative exists there)"), "{text}");
    assert!(
        lines[5].starts_with("  bound    : max |analytic - numeric| = ") && lines[5].ends_with("under the declared tolerance (accum(2))"),
        "{text}"
    );
    assert_eq!(lines[6], "  negative control : corrupted vjp REJECTED");
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap_or_default();
    assert_eq!(json["op"], "builtin/conv1d@1");
    assert_eq!(json["probes"], 32);
}

/// `sum` whose VJP is scaled by 1.01.
#[op(name = "test/bad/sum_scaled", version = 1, signature(x: f32[n]) -> f32[],
     category = reduction, tolerance = accum(2), backward = vjp(sum_scaled_vjp))]
pub fn sum_scaled<T: Real>(x: &[T]) -> Vec<T> {
    builtins::sum(x)
}
/// Wrong: 1% too large.
pub fn sum_scaled_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    builtins::sum_vjp(x, g).into_iter().map(|v| v * T::from_f64(1.01)).collect()
}

/// `mse_loss` whose VJP is scaled by 1.01.
#[op(name = "test/bad/mse_scaled", version = 1, signature(a: f32[n], b: f32[n] where n >= 1) -> f32[],
     category = reduction, tolerance = accum(4), backward = vjp(mse_scaled_vjp))]
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
