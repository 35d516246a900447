//! The backward forms beyond a plain VJP: `none` (a typed error naming the op), `composite`
//! (derived from the graph on the tape, gradchecked like any other), JVP rules, VJP + JVP
//! (checked against each other), and the two ways a check can fail to certify anything. The
//! wrong fixtures declare `generated_tests = false`; the tests below assert that gradcheck does
//! not certify them (`op_runtime::testing::assert_gradcheck_rejected`) and how.

use op_runtime::gradcheck;
use op_runtime::gradcheck::{BackwardForm, GradcheckError};
use op_runtime::graph::{Graph, GraphError};
use op_runtime::testing::assert_gradcheck_rejected;
use op_runtime::train::{Tape, TapeError, Var};
use op_runtime::{op, Real, Registry, Scalar, Tensor};

/// Sign of each element (-1, 0 or 1): declared non-differentiable.
#[op(name = "test/forms/sign", version = 1, signature(x: f32[n]) -> f32[n],
     category = selection, tolerance = exact, backward = none)]
pub fn sign<T: Real>(x: &[T]) -> Vec<T> {
    x.iter()
        .map(|v| {
            if *v > T::zero() {
                T::one()
            } else if *v < T::zero() {
                -T::one()
            } else {
                T::zero()
            }
        })
        .collect()
}

/// Smoothed absolute value `x tanh(4 x)`, whose backward the tape derives from built-ins.
#[op(name = "test/forms/smooth_abs", version = 1, signature(x: f32[n]) -> f32[n],
     category = transcendental, tolerance = ulp(16), backward = composite(smooth_abs_graph))]
pub fn smooth_abs<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * (*v * T::from_f64(4.0)).tanh()).collect()
}
/// The graph: `mul(x, tanh(scale(x, 4)))`, all built-ins.
pub fn smooth_abs_graph(t: &mut dyn Graph, x: &[Var], _p: &[Scalar]) -> Result<Vec<Var>, GraphError> {
    let kx = t.call1("builtin/scale", &[x[0]], &[Scalar::F32(4.0)])?;
    let th = t.call1("builtin/tanh", &[kx], &[])?;
    Ok(vec![t.call1("builtin/mul", &[x[0], th], &[])?])
}

/// A composite whose graph computes something else (`x tanh(2 x)`) than its reference.
#[op(name = "test/bad/smooth_abs_graph", version = 1, signature(x: f32[n]) -> f32[n],
     category = transcendental, tolerance = ulp(16), backward = composite(wrong_graph), generated_tests = false)]
pub fn smooth_abs_wrong<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * (*v * T::from_f64(4.0)).tanh()).collect()
}
/// Wrong on purpose: the factor is 2.
pub fn wrong_graph(t: &mut dyn Graph, x: &[Var], _p: &[Scalar]) -> Result<Vec<Var>, GraphError> {
    let kx = t.call1("builtin/scale", &[x[0]], &[Scalar::F32(2.0)])?;
    let th = t.call1("builtin/tanh", &[kx], &[])?;
    Ok(vec![t.call1("builtin/mul", &[x[0], th], &[])?])
}

/// Cube `x^3` with a JVP rule only.
#[op(name = "test/forms/cube", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(2), backward = jvp(cube_jvp))]
pub fn cube<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * *v * *v).collect()
}
/// `3 x^2 t`.
pub fn cube_jvp<T: Real>(x: &[T], t: &[T]) -> Vec<T> {
    x.iter().zip(t).map(|(x, t)| T::from_f64(3.0) * *x * *x * *t).collect()
}

/// Cube with a wrong JVP rule (`2 x^2 t`).
#[op(name = "test/bad/cube_jvp", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(2), backward = jvp(cube_jvp_wrong), generated_tests = false)]
pub fn cube_wrong<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * *v * *v).collect()
}
/// Wrong on purpose.
pub fn cube_jvp_wrong<T: Real>(x: &[T], t: &[T]) -> Vec<T> {
    x.iter().zip(t).map(|(x, t)| T::from_f64(2.0) * *x * *x * *t).collect()
}

/// Weighted product `a * b` with both a VJP and JVP rules.
#[op(name = "test/forms/product", version = 1, signature(a: f32[n], b: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(1), backward = vjp(product_vjp) + jvp(product_jvp_a, product_jvp_b))]
pub fn product<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().zip(b).map(|(x, y)| *x * *y).collect()
}
/// VJP.
pub fn product_vjp<T: Real>(a: &[T], b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    (g.iter().zip(b).map(|(g, b)| *g * *b).collect(), g.iter().zip(a).map(|(g, a)| *g * *a).collect())
}
/// d/da along t.
pub fn product_jvp_a<T: Real>(_a: &[T], b: &[T], t: &[T]) -> Vec<T> {
    t.iter().zip(b).map(|(t, b)| *t * *b).collect()
}
/// d/db along t.
pub fn product_jvp_b<T: Real>(a: &[T], _b: &[T], t: &[T]) -> Vec<T> {
    t.iter().zip(a).map(|(t, a)| *t * *a).collect()
}

/// `a * b` with a correct VJP and a JVP rule for `b` that is twice too large: the VJP agrees
/// with central differences, so only the VJP/JVP consistency check can catch it.
#[op(name = "test/bad/product_jvp_doubled", version = 1, signature(a: f32[n], b: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(1), backward = vjp(product_vjp) + jvp(product_jvp_a, product_jvp_b_doubled),
     generated_tests = false)]
pub fn product_jvp_doubled<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    product(a, b)
}
/// Wrong on purpose: `2 a t`.
pub fn product_jvp_b_doubled<T: Real>(a: &[T], b: &[T], t: &[T]) -> Vec<T> {
    product_jvp_b(a, b, t).into_iter().map(|v| v * T::from_f64(2.0)).collect()
}

/// `a * b` with both JVP rules correct and a VJP that is twice too large. The VJP is compared
/// with central differences before the two are compared with each other, so this is rejected
/// by the declared-rule check (`Mismatch`), not the consistency check.
#[op(name = "test/bad/product_vjp_doubled", version = 1, signature(a: f32[n], b: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(1), backward = vjp(product_vjp_doubled) + jvp(product_jvp_a, product_jvp_b),
     generated_tests = false)]
pub fn product_bad_vjp<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    product(a, b)
}
/// Wrong on purpose: both gradients doubled.
pub fn product_vjp_doubled<T: Real>(a: &[T], b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    let (ga, gb) = product_vjp(a, b, g);
    let d = |v: Vec<T>| v.into_iter().map(|v| v * T::from_f64(2.0)).collect();
    (d(ga), d(gb))
}

/// An op whose output ignores its input: every gradient is zero, so no corruption can show.
#[op(name = "test/bad/flat", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(1), backward = vjp(flat_vjp), generated_tests = false)]
pub fn flat<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|_| T::zero()).collect()
}
/// Correct, and vacuous.
pub fn flat_vjp<T: Real>(x: &[T], _g: &[T]) -> Vec<T> {
    vec![T::zero(); x.len()]
}

/// Distance to the nearest multiple of 0.0026: a kink every 0.0013, so nearly every probe is
/// within h of one. Drawn at magnitudes 1..1e3, where a probe's step is `h` = 1e-3 itself: below
/// `|x| = 1` steps are relative (`h |x|`), and at `|x|` = 1e-2 a step of 1e-5 resolves the slope
/// between two kinks exactly, which is an honest certificate, not a check of dense kinks (with
/// the default magnitudes, 1e-3..1e3, 10 of 200 salts certified the fixture, its +-1 slopes
/// measured where the steps are small against the kinks' spacing).
#[op(name = "test/bad/sawtooth", version = 1, signature(x: f32[n]) -> f32[n], magnitude(x: 1..1e3),
     category = elementwise, tolerance = ulp(4), backward = vjp(sawtooth_vjp), generated_tests = false)]
pub fn sawtooth<T: Real>(x: &[T]) -> Vec<T> {
    x.iter()
        .map(|v| {
            let f = v.to_f64();
            T::from_f64((f - 0.0026 * (f / 0.0026).round()).abs())
        })
        .collect()
}
/// The slope, +-1.
pub fn sawtooth_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    x.iter()
        .zip(g)
        .map(|(v, g)| {
            let f = v.to_f64();
            if f - 0.0026 * (f / 0.0026).round() >= 0.0 {
                *g
            } else {
                -*g
            }
        })
        .collect()
}

#[test]
fn backward_none_is_a_typed_error_naming_the_op() {
    assert_eq!(gradcheck(&sign::DECL), Err(GradcheckError::NotDifferentiable { op: "test/forms/sign@1".into() }));
    let e = gradcheck(&sign::DECL).unwrap_err().to_string();
    assert!(e.contains("`test/forms/sign@1`") && e.contains("backward = none"), "{e}");

    // On a tape: a trainable path through `sign` is refused by name, nothing pretends.
    let reg = Registry::with_builtins();
    let h = reg.register(&sign::DECL).unwrap_or_else(|e| panic!("{e}"));
    let mut t = Tape::with_registry(&reg);
    let w = t.param("w", Tensor::vector(vec![0.5f32, -1.0, 2.0])).unwrap_or_else(|e| panic!("{e}"));
    let s = t.apply1(&h, &[w], &[]).unwrap_or_else(|e| panic!("{e}"));
    let loss = t.call1("builtin/sum", &[s], &[]).unwrap_or_else(|e| panic!("{e}"));
    let mut run = t.run(&[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(run.value(s).and_then(|v| v.as_slice::<f32>()), Some(&[1.0f32, -1.0, 1.0][..]));
    let err = t.backward(&mut run, loss).unwrap_err();
    assert_eq!(err, TapeError::NotDifferentiable { op: "test/forms/sign@1".into() });
    assert!(err.to_string().contains("op `test/forms/sign@1` is declared `backward = none`"), "{err}");

    // Off the differentiated path it is fine: no gradient is asked of it.
    let mut t = Tape::with_registry(&reg);
    let x = t.input("x", op_runtime::DType::f32, [3]);
    let w = t.param("w", Tensor::vector(vec![1.0f32, 1.0, 1.0])).unwrap_or_else(|e| panic!("{e}"));
    let sx = t.apply1(&h, &[x], &[]).unwrap_or_else(|e| panic!("{e}"));
    let y = t.call1("builtin/mul", &[sx, w], &[]).unwrap_or_else(|e| panic!("{e}"));
    let loss = t.call1("builtin/sum", &[y], &[]).unwrap_or_else(|e| panic!("{e}"));
    let xv = Tensor::vector(vec![-2.0f32, 0.0, 3.0]);
    let mut run = t.run(&[(x, &xv)]).unwrap_or_else(|e| panic!("{e}"));
    let g = t.backward(&mut run, loss).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(g.get(w).and_then(|v| v.as_slice::<f32>()), Some(&[-1.0f32, 0.0, 1.0][..]));
}

#[test]
fn composite_backward_is_derived_from_the_tape_and_gradchecked() {
    let r = gradcheck(&smooth_abs::DECL).unwrap_or_else(|e| panic!("{e}"));
    println!("{r}");
    match &r.backward {
        BackwardForm::Composite { graph, ops } => {
            assert_eq!(graph, "smooth_abs_graph");
            assert_eq!(ops, &["builtin/scale@1", "builtin/tanh@1", "builtin/mul@1"]);
        }
        other => panic!("{other:?}"),
    }
    let text = r.to_string();
    assert!(text.contains("vjp      : derived from the composite graph `smooth_abs_graph` (builtin/scale@1 -> builtin/tanh@1 -> builtin/mul@1 on the tape)"), "{text}");
    assert!(text.contains("negative control : corrupted vjp REJECTED"), "{text}");
}

#[test]
fn a_composite_graph_that_computes_something_else_is_rejected() {
    let e = assert_gradcheck_rejected(&smooth_abs_wrong::DECL);
    assert!(matches!(e, GradcheckError::Mismatch { .. }) && e.to_string().contains("composite graph's VJP"), "{e}");
}

#[test]
fn jvp_rules_are_checked_and_a_wrong_one_rejected() {
    let r = gradcheck(&cube::DECL).unwrap_or_else(|e| panic!("{e}"));
    assert!(r.to_string().contains("jvp      : declared rules `cube_jvp`"), "{r}");
    assert!(r.to_string().contains("negative control : corrupted jvp REJECTED"), "{r}");
    let e = assert_gradcheck_rejected(&cube_wrong::DECL);
    assert!(matches!(e, GradcheckError::Mismatch { .. }) && e.to_string().contains("declared JVP"), "{e}");
}

#[test]
fn vjp_and_jvp_are_checked_against_each_other() {
    let r = gradcheck(&product::DECL).unwrap_or_else(|e| panic!("{e}"));
    println!("{r}");
    assert!(r.consistency.is_some_and(|c| c < 1e-9), "{r:?}");
    assert!(r.to_string().contains("<u, J v> = <J^T u, v> on every probe"), "{r}");
}

#[test]
fn a_jvp_that_disagrees_with_a_correct_vjp_is_inconsistent() {
    let e = assert_gradcheck_rejected(&product_jvp_doubled::DECL);
    let m = e.to_string();
    match e {
        GradcheckError::Inconsistent { jvp, vjp, allowed, .. } => {
            assert!(m.contains("op `test/bad/product_jvp_doubled@1`: the declared VJP and JVP disagree"), "{m}");
            assert!((jvp - vjp).abs() > 10.0 * allowed, "{m}");
            assert!(GradcheckError::Inconsistent { op: String::new(), at: String::new(), jvp: 0.0, vjp: 0.0, allowed: 0.0 }.is_rejection());
        }
        other => panic!("a wrong JVP next to a correct VJP must be Inconsistent, got {other:?}"),
    }
}

#[test]
fn a_wrong_vjp_next_to_a_correct_jvp_fails_the_declared_rule_check() {
    let e = assert_gradcheck_rejected(&product_bad_vjp::DECL);
    let m = e.to_string();
    assert!(matches!(e, GradcheckError::Mismatch { .. }), "a wrong VJP must be rejected against central differences, got {m}");
    assert!(m.contains("op `test/bad/product_vjp_doubled@1`: the declared VJP disagrees with central differences"), "{m}");
}

#[test]
fn a_check_that_cannot_fail_fails() {
    let e = assert_gradcheck_rejected(&flat::DECL);
    let m = e.to_string();
    assert!(matches!(e, GradcheckError::NegativeControlAccepted { .. }), "{m}");
    assert!(m.contains("`test/bad/flat@1`") && m.contains("the check could not fail"), "{m}");
}

/// Absolute value, with its kink at 0.
#[op(name = "test/forms/abs", version = 1, signature(x: f32[n]) -> f32[n],
     category = selection, tolerance = exact, backward = vjp(abs_vjp),
     subgradient = "zero at x = 0")]
pub fn abs<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| v.abs()).collect()
}
/// `sign(x) g`.
pub fn abs_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    x.iter()
        .zip(g)
        .map(|(x, g)| {
            if *x > T::zero() {
                *g
            } else if *x < T::zero() {
                -*g
            } else {
                T::zero()
            }
        })
        .collect()
}

#[test]
fn probes_within_h_of_a_kink_are_skipped_and_too_many_is_inconclusive() {
    use op_runtime::gradcheck::{gradcheck_with, GradcheckOptions};
    // At h = 1e-3 the kink at 0 costs few probes (generated inputs include an exact 0).
    let r = gradcheck(&abs::DECL).unwrap_or_else(|e| panic!("{e}"));
    assert!(2 * (r.skipped + r.skipped_nonfinite + r.skipped_unresolved) <= r.probes + r.swept, "{r}");
    // With a step wider than every generated |x| (at most 1e3; the step is h |x| below |x| = 1
    // and h above it), every coordinate probe straddles the kink: those probes are skipped,
    // never averaged, and the verdict is inconclusive.
    match gradcheck_with(op_runtime::registry(), &abs::DECL, &GradcheckOptions { h: 2.0e3, ..GradcheckOptions::default() }) {
        Err(e @ GradcheckError::Inconclusive { .. }) => {
            let m = e.to_string();
            assert!(m.contains("`test/forms/abs@1`: inconclusive") && m.contains("nothing was certified"), "{m}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn dense_kinks_are_never_certified() {
    // Kinks every 0.0013, within every probe's stencil (+-3 steps of 1e-3): nearly every probe
    // is skipped as within h of a kink (kinks that sampling at whole steps aliases into a smooth
    // curve too), so nothing is certified (300 salts: all inconclusive; a failing probe would
    // reject, as well).
    assert_gradcheck_rejected(&sawtooth::DECL);
}
