//! Gradcheck never accuses a correct rule over many seeds, and names where a wrong one fails. The
//! op is a moving sum as differences of prefix sums: its outputs round at the scale of the prefix
//! sums, far above their own, and `x + h` rounded onto the prefix sums' grid makes the difference
//! over `h` off by the same amount at every step in a dyadic ratio to `h` (`h / 16 .. 2 h`), so
//! that it looks converged. Before the differences over steps in irrational ratios to `h` were
//! consulted (`probe::step_noise`), its correct VJP was accused under 31 of 3,000 salts.

use op_runtime::gradcheck::{gradcheck_with, GradcheckError, GradcheckOptions};
use op_runtime::{op, Real};

/// Seeds (salts) the correct rule is checked under.
const SEEDS: u64 = 1000;

fn prefix_moving_sum<T: Real>(x: &[T], w: u32) -> Vec<T> {
    let mut prefix = vec![T::zero()];
    for v in x {
        let last = prefix[prefix.len() - 1];
        prefix.push(last + *v);
    }
    let w = w as usize;
    (0..x.len() + 1 - w).map(|i| prefix[i + w] - prefix[i]).collect()
}

/// Each element's cotangent: the sum of the cotangents of the windows holding it.
pub fn window_vjp<T: Real>(x: &[T], w: u32, g: &[T]) -> Vec<T> {
    let mut d = vec![T::zero(); x.len()];
    for (i, gi) in g.iter().enumerate() {
        for dj in &mut d[i..i + w as usize] {
            *dj += *gi;
        }
    }
    d
}

/// Moving sum by prefix differences, with its correct VJP.
#[op(name = "test/seeds/moving_sum", version = 1,
     signature(x: f64[n], w: u32 where 1 <= w, w <= n) -> f64[n - w + 1],
     category = reduction, tolerance = accum(2), backward = vjp(window_vjp), generated_tests = false)]
pub fn moving_sum<T: Real>(x: &[T], w: u32) -> Vec<T> {
    prefix_moving_sum(x, w)
}

/// The same moving sum whose VJP is off by a relative 1e-4 at its last element.
#[op(name = "test/bad/seeds/moving_sum_last", version = 1,
     signature(x: f64[n], w: u32 where 1 <= w, w <= n) -> f64[n - w + 1],
     category = reduction, tolerance = accum(2), backward = vjp(moving_sum_last_vjp), generated_tests = false)]
pub fn moving_sum_last<T: Real>(x: &[T], w: u32) -> Vec<T> {
    prefix_moving_sum(x, w)
}
/// Wrong: the last element's cotangent scaled by `1 + 1e-4`.
pub fn moving_sum_last_vjp<T: Real>(x: &[T], w: u32, g: &[T]) -> Vec<T> {
    let mut d = window_vjp(x, w, g);
    let last = d.len() - 1;
    d[last] = d[last] * T::from_f64(1.0 + 1e-4);
    d
}

#[test]
fn the_correct_rule_is_never_accused_over_a_thousand_seeds() {
    let mut accused = Vec::new();
    for salt in 0..SEEDS {
        let o = GradcheckOptions { salt, ..GradcheckOptions::default() };
        if let Err(e) = gradcheck_with(op_runtime::registry(), &moving_sum::DECL, &o) {
            accused.push(format!("salt {salt}: {e}"));
        }
    }
    assert!(accused.is_empty(), "{} of {SEEDS} seeds accused the correct rule:\n{}", accused.len(), accused.join("\n"));
}

#[test]
fn a_rule_wrong_at_one_element_is_rejected_there_with_its_shape_parameters_and_seed() {
    for salt in 0..64 {
        let o = GradcheckOptions { salt, ..GradcheckOptions::default() };
        match gradcheck_with(op_runtime::registry(), &moving_sum_last::DECL, &o) {
            Err(e @ GradcheckError::Mismatch { .. }) => {
                let m = e.to_string();
                let GradcheckError::Mismatch { locus, diff, allowed, .. } = &e else { unreachable!() };
                let n = locus.shape[0];
                assert_eq!((locus.input.as_str(), locus.index), ("x", n - 1), "{m}");
                assert!(diff > allowed, "{m}");
                let w = locus.bindings.iter().find(|(k, _)| k == "w").map(|(_, v)| v.clone()).unwrap_or_else(|| panic!("no w: {m}"));
                let text = format!("element `x`[{}] of `x` with shape [{n}], at n = {n}, w = {w}; seed: content hash ", n - 1);
                assert!(m.contains(&text), "{m}");
                assert!(
                    m.contains(&format!("with salt {} (`GradcheckOptions {{ salt: {}, .. }}` reproduces it)", locus.salt, locus.salt)),
                    "{m}"
                );
                // The salt named draws the same rejection again.
                let again = GradcheckOptions { salt: locus.salt, ..GradcheckOptions::default() };
                assert_eq!(gradcheck_with(op_runtime::registry(), &moving_sum_last::DECL, &again).expect_err("reproduces"), e);
            }
            other => panic!("salt {salt}: the wrong VJP must be rejected, got {other:?}"),
        }
    }
}
