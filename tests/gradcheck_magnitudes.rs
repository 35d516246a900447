//! Gradcheck never accuses a correct rule and never passes a rule wrong at one element, across
//! seeds: a row-wise softmax (f32 | f64, `ulp(8)`, a correct VJP), whose outputs span hundreds of
//! decades at the default magnitudes, passes at 24 seeds and three steps; the built-in `exp` and
//! `relu` pass at 24 seeds and three steps; a JVP and a VJP wrong at one element (by 1%) are
//! rejected at 16 of 16 seeds, their correct twins passing on the same seeds; a sharp step whose
//! derivative no output resolves at the default magnitudes is skipped as unresolved (inconclusive,
//! never a mismatch, with what to declare), while a wrong backward for it is still rejected, and
//! it passes once its magnitudes are declared. The wrong fixtures declare
//! `generated_tests = false`: the tests below assert their rejections.

use op_runtime::builtins;
use op_runtime::gradcheck::{gradcheck_with, GradcheckError, GradcheckOptions, GradcheckReport};
use op_runtime::OpDecl;
use op_runtime::{op, Real};

/// Row-wise softmax over `x[rows, cols]`: `exp(x - max) / sum exp(x - max)` per row.
#[op(name = "test/magnitudes/softmax", version = 1,
     signature<T: f32 | f64>(x: T[rows, cols] where cols >= 1) -> T[rows, cols],
     category = transcendental, tolerance = ulp(8), backward = vjp(softmax_vjp))]
pub fn softmax<T: Real>(x: &[T], rows: usize, cols: usize) -> Vec<T> {
    let mut out = vec![T::zero(); rows * cols];
    for (row, o) in x.chunks(cols).zip(out.chunks_mut(cols)) {
        let m = row.iter().fold(row[0], |a, b| if *b > a { *b } else { a });
        let mut s = T::zero();
        for (o, v) in o.iter_mut().zip(row) {
            *o = (*v - m).exp();
            s += *o;
        }
        o.iter_mut().for_each(|o| *o = *o / s);
    }
    out
}
/// The VJP: `p (g - <g, p>)` per row.
pub fn softmax_vjp<T: Real>(x: &[T], rows: usize, cols: usize, g: &[T]) -> Vec<T> {
    let p = softmax(x, rows, cols);
    let mut out = vec![T::zero(); rows * cols];
    for ((p, g), o) in p.chunks(cols).zip(g.chunks(cols)).zip(out.chunks_mut(cols)) {
        let s = p.iter().zip(g).fold(T::zero(), |a, (p, g)| a + *p * *g);
        for ((o, p), g) in o.iter_mut().zip(p).zip(g) {
            *o = *p * (*g - s);
        }
    }
    out
}

/// `exp` with a JVP rule.
#[op(name = "test/magnitudes/exp_jvp", version = 1, signature(x: f32[n]) -> f32[n],
     category = transcendental, tolerance = ulp(16), backward = jvp(exp_jvp))]
pub fn exp_by_jvp<T: Real>(x: &[T]) -> Vec<T> {
    builtins::exp(x)
}
/// `exp(x) t`.
pub fn exp_jvp<T: Real>(x: &[T], t: &[T]) -> Vec<T> {
    x.iter().zip(t).map(|(x, t)| x.exp() * *t).collect()
}

/// `exp` whose JVP is 1% off at its last element only.
#[op(name = "test/bad/exp_jvp_last", version = 1, signature(x: f32[n]) -> f32[n],
     category = transcendental, tolerance = ulp(16), backward = jvp(exp_jvp_last), generated_tests = false)]
pub fn exp_jvp_last_wrong<T: Real>(x: &[T]) -> Vec<T> {
    builtins::exp(x)
}
/// Wrong at the last element: `1.01 exp(x) t` there.
pub fn exp_jvp_last<T: Real>(x: &[T], t: &[T]) -> Vec<T> {
    let mut out = exp_jvp(x, t);
    if let Some(v) = out.last_mut() {
        *v = *v * T::from_f64(1.01);
    }
    out
}

/// `exp` whose VJP is 1% off at its first element only.
#[op(name = "test/bad/exp_vjp_first", version = 1, signature(x: f32[n]) -> f32[n],
     category = transcendental, tolerance = ulp(16), backward = vjp(exp_vjp_first), generated_tests = false)]
pub fn exp_vjp_first_wrong<T: Real>(x: &[T]) -> Vec<T> {
    builtins::exp(x)
}
/// Wrong at the first element: `1.01 exp(x) g` there.
pub fn exp_vjp_first<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    let mut out = builtins::exp_vjp(x, g);
    if let Some(v) = out.first_mut() {
        *v = *v * T::from_f64(1.01);
    }
    out
}

/// Softmax whose VJP drops the `<g, p>` term at one element (row 0, column 0).
#[op(name = "test/bad/softmax_vjp_first", version = 1,
     signature<T: f32 | f64>(x: T[rows, cols] where cols >= 1) -> T[rows, cols],
     category = transcendental, tolerance = ulp(8), backward = vjp(softmax_vjp_first), generated_tests = false)]
pub fn softmax_first_wrong<T: Real>(x: &[T], rows: usize, cols: usize) -> Vec<T> {
    softmax(x, rows, cols)
}
/// Wrong at element 0: `p g` there.
pub fn softmax_vjp_first<T: Real>(x: &[T], rows: usize, cols: usize, g: &[T]) -> Vec<T> {
    let mut out = softmax_vjp(x, rows, cols, g);
    if let (Some(o), Some(p), Some(g)) = (out.first_mut(), softmax(x, rows, cols).first(), g.first()) {
        *o = *p * *g;
    }
    out
}

/// A sharp smooth step, `tanh(1e6 x)`: its derivative is resolved only for `|x|` below about
/// 1e-5; at the default magnitudes (down to 1e-3) every output saturates.
#[op(name = "test/magnitudes/sharp_step", version = 1, signature(x: f32[n]) -> f32[n],
     category = transcendental, tolerance = ulp(16), backward = vjp(sharp_step_vjp), generated_tests = false)]
pub fn sharp_step<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| (*v * T::from_f64(1e6)).tanh()).collect()
}
/// `1e6 (1 - tanh(1e6 x)^2) g`.
pub fn sharp_step_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    x.iter()
        .zip(g)
        .map(|(x, g)| {
            let t = (*x * T::from_f64(1e6)).tanh();
            T::from_f64(1e6) * (T::one() - t * t) * *g
        })
        .collect()
}

/// The same step, declared for the magnitudes it is meant for.
#[op(name = "test/magnitudes/sharp_step_declared", version = 1, signature(x: f32[n]) -> f32[n],
     category = transcendental, tolerance = ulp(16), backward = vjp(sharp_step_vjp), magnitude(x: 1e-9..1e-5))]
pub fn sharp_step_declared<T: Real>(x: &[T]) -> Vec<T> {
    sharp_step(x)
}

/// The declared step with a VJP that forgets to square `tanh`.
#[op(name = "test/bad/sharp_step_unsquared", version = 1, signature(x: f32[n]) -> f32[n],
     category = transcendental, tolerance = ulp(16), backward = vjp(sharp_step_unsquared_vjp),
     magnitude(x: 1e-9..1e-5), generated_tests = false)]
pub fn sharp_step_unsquared<T: Real>(x: &[T]) -> Vec<T> {
    sharp_step(x)
}
/// Wrong: `1 - t` for `1 - t^2`.
pub fn sharp_step_unsquared_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    x.iter().zip(g).map(|(x, g)| T::from_f64(1e6) * (T::one() - (*x * T::from_f64(1e6)).tanh()) * *g).collect()
}

/// The undeclared step with a VJP that passes the cotangent through unchanged: wrong
/// everywhere, also where the step saturates and the correct backward's probes are unresolved.
#[op(name = "test/bad/sharp_step_identity", version = 1, signature(x: f32[n]) -> f32[n],
     category = transcendental, tolerance = ulp(16), backward = vjp(sharp_step_identity_vjp), generated_tests = false)]
pub fn sharp_step_identity<T: Real>(x: &[T]) -> Vec<T> {
    sharp_step(x)
}
/// Wrong: `g`.
pub fn sharp_step_identity_vjp<T: Real>(_x: &[T], g: &[T]) -> Vec<T> {
    g.to_vec()
}

/// `x / 0`: not finite at any magnitude.
#[op(name = "test/bad/over_zero", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(1), backward = vjp(over_zero_vjp), generated_tests = false)]
pub fn over_zero<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v / T::zero()).collect()
}
/// Its (infinite) VJP.
pub fn over_zero_vjp<T: Real>(_x: &[T], g: &[T]) -> Vec<T> {
    g.iter().map(|g| *g / T::zero()).collect()
}

fn check(decl: &'static OpDecl, salt: u64, h: f64) -> Result<GradcheckReport, GradcheckError> {
    gradcheck_with(op_runtime::registry(), decl, &GradcheckOptions { salt, h, ..GradcheckOptions::default() })
}

/// Passes at every seed and step, certifying something each time: the negative control
/// rejected, fewer than half of the probes skipped, every skip counted with its reason.
fn passes_everywhere(decl: &'static OpDecl, salts: u64) -> Vec<GradcheckReport> {
    let mut reports = Vec::new();
    for salt in 0..salts {
        for h in [1e-3, 1e-4, 1e-2] {
            let r = check(decl, salt, h).unwrap_or_else(|e| panic!("{} (salt {salt}, h {h:e}): {e}", decl.rust_name));
            assert!(r.negative_control_rejected(), "{r}");
            let skipped = r.skipped + r.skipped_nonfinite + r.skipped_unresolved;
            assert!(2 * skipped <= r.probes + r.swept, "{r}");
            assert!(r.worst_ratio <= 1.0, "{r}");
            reports.push(r);
        }
    }
    reports
}

/// Rejected at every seed with a mismatch against central differences (never inconclusive).
fn rejected_everywhere(decl: &'static OpDecl, name: &str, salts: u64) {
    for salt in 0..salts {
        match check(decl, salt, 1e-3) {
            Err(e @ GradcheckError::Mismatch { .. }) => assert!(e.to_string().contains(&format!("op `{name}@1`")), "{e}"),
            other => panic!("{name} (salt {salt}) must be rejected, got {other:?}"),
        }
    }
}

#[test]
fn a_correct_softmax_vjp_passes_at_24_seeds() {
    let reports = passes_everywhere(&softmax::DECL, 24);
    println!("{}", reports[0]);
    // The default magnitudes reach logits of 1e3, where the rows are one-hot and the Jacobian
    // is far below the outputs' rounding: the draws narrow there, and say why.
    let narrowed = reports.iter().flat_map(|r| &r.ranges).filter(|d| !d.narrowed.is_empty()).count();
    assert!(narrowed > 0, "no draw was narrowed over 24 seeds");
    assert!(reports.iter().any(|r| r.to_string().contains("narrowed: most derivatives were below the outputs' resolution")));
    // Every element is probed alone in each draw: up to 256 per draw.
    for r in &reports {
        let n: usize = r.bindings.iter().map(|(_, v)| v.parse::<usize>().unwrap_or(0)).product();
        assert_eq!(r.swept, 4 * n.min(256), "{r}");
    }
}

#[test]
fn builtin_exp_and_relu_pass_at_24_seeds() {
    let exp = passes_everywhere(&builtins::exp::DECL, 24);
    // Values reach 1e2 and beyond, where exp is astronomically large, and are still judged.
    assert!(exp.iter().any(|r| r.max_abs_err > 1e40), "exp never probed at large values");
    passes_everywhere(&builtins::relu::DECL, 24);
    // The JVP form of exp too.
    passes_everywhere(&exp_by_jvp::DECL, 8);
}

#[test]
fn a_jvp_or_vjp_wrong_at_one_element_is_rejected_at_16_of_16_seeds() {
    rejected_everywhere(&exp_jvp_last_wrong::DECL, "test/bad/exp_jvp_last", 16);
    rejected_everywhere(&exp_vjp_first_wrong::DECL, "test/bad/exp_vjp_first", 16);
    rejected_everywhere(&softmax_first_wrong::DECL, "test/bad/softmax_vjp_first", 16);
    // The correct twins pass on the same seeds.
    for salt in 0..16 {
        for d in [&exp_by_jvp::DECL, &builtins::exp::DECL, &softmax::DECL] {
            check(d, salt, 1e-3).unwrap_or_else(|e| panic!("salt {salt}: {e}"));
        }
    }
}

#[test]
fn a_derivative_no_output_resolves_is_skipped_never_failed_until_its_magnitudes_are_declared() {
    // At the default magnitudes every output of the step saturates: the backward agrees within
    // a bound too wide to certify it, so the probes are skipped as unresolved, and the verdict
    // says what to declare.
    for salt in 0..8 {
        let o = GradcheckOptions { salt, pin: vec![("n".into(), 16)], ..GradcheckOptions::default() };
        match gradcheck_with(op_runtime::registry(), &sharp_step::DECL, &o) {
            Err(e @ GradcheckError::Inconclusive { .. }) => {
                let m = e.to_string();
                assert!(m.contains("below the outputs' resolution") && m.contains("magnitude(x: "), "{m}");
                if let GradcheckError::Inconclusive { unresolved, skipped, .. } = e {
                    assert!(2 * unresolved > skipped, "{m}");
                }
            }
            other => panic!("salt {salt}: must be inconclusive, got {other:?}"),
        }
    }
    // Unresolved never excuses a backward beyond the bound: one that is wrong where the outputs
    // saturate is rejected there, not skipped.
    for salt in 0..8 {
        let o = GradcheckOptions { salt, pin: vec![("n".into(), 16)], ..GradcheckOptions::default() };
        match gradcheck_with(op_runtime::registry(), &sharp_step_identity::DECL, &o) {
            Err(e @ GradcheckError::Mismatch { .. }) => assert!(e.to_string().contains("`test/bad/sharp_step_identity@1`"), "{e}"),
            other => panic!("salt {salt}: must be rejected, got {other:?}"),
        }
    }
    // Declared where it is meant for, it passes, its values drawn there; a wrong twin with the
    // same declaration is rejected.
    let reports = passes_everywhere(&sharp_step_declared::DECL, 24);
    let text = reports[0].to_string();
    println!("{text}");
    assert!(
        text.contains("values   : log-uniform magnitudes, both signs, inside each input's domain: x: 1e-9..1e-5 (declared)\n"),
        "{text}"
    );
    assert!(reports.iter().all(|r| r.ranges.is_empty() && r.skipped_unresolved * 4 < r.probes + r.swept), "{text}");
    rejected_everywhere(&sharp_step_unsquared::DECL, "test/bad/sharp_step_unsquared", 8);
}

#[test]
fn a_forward_finite_at_no_magnitude_is_refused_naming_what_was_tried() {
    match check(&over_zero::DECL, 0, 1e-3) {
        Err(e @ GradcheckError::NoFiniteInput { .. }) => {
            let m = e.to_string();
            assert!(m.contains("op `test/bad/over_zero@1`: the reference is not finite"), "{m}");
            assert!(m.contains("magnitudes 1e-3..1e3 down to 1e-3..1e0") && m.contains("`magnitude(x: 1e-3..10)`"), "{m}");
        }
        other => panic!("must be refused, got {other:?}"),
    }
}
