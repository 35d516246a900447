//! Gradcheck of the user's windowed median (declared in the example) and of six deliberately
//! wrong backwards for it: each must be rejected, with the same reference and probes. Two are
//! wrong only where two window values are equal (they send the cotangent to every element equal
//! to the median, or to the last of equal elements where the convention names the first): the
//! ordinary probes skip those points, and the kink check, which places points exactly on ties,
//! rejects them. The wrong backwards declare `generated_tests = false`: the tests below assert
//! each rejection.

use crate::median;

use op_runtime::gradcheck;
use op_runtime::gradcheck::GradcheckError;
use op_runtime::testing::assert_gradcheck_rejected;
use op_runtime::{op, Real};

/// The median's reference, shared by the wrong-backward fixtures below.
fn med<T: Real>(x: &[T], w: u32) -> Vec<T> {
    median::windowed_median(x, w)
}

/// Windowed median whose VJP routes each cotangent to the window centre.
#[op(name = "test/bad/median_centre", version = 1,
     signature(x: f32[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> f32[n - w + 1],
     category = selection, tolerance = exact, backward = vjp(centre_vjp),
     subgradient = "cotangent routed to the window centre (wrong on purpose)", generated_tests = false)]
pub fn median_centre<T: Real>(x: &[T], w: u32) -> Vec<T> {
    med(x, w)
}
/// Wrong: the centre, not the argmedian.
pub fn centre_vjp<T: Real>(x: &[T], w: u32, g: &[T]) -> Vec<T> {
    let mut grad = vec![T::zero(); x.len()];
    for (i, gi) in g.iter().enumerate() {
        grad[i + w as usize / 2] += *gi;
    }
    grad
}

/// Windowed median whose VJP is scaled by 1.01.
#[op(name = "test/bad/median_scaled", version = 1,
     signature(x: f32[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> f32[n - w + 1],
     category = selection, tolerance = exact, backward = vjp(scaled_vjp),
     subgradient = "cotangent routed to the selected element, times 1.01 (wrong on purpose)", generated_tests = false)]
pub fn median_scaled<T: Real>(x: &[T], w: u32) -> Vec<T> {
    med(x, w)
}
/// Wrong: 1% too large.
pub fn scaled_vjp<T: Real>(x: &[T], w: u32, g: &[T]) -> Vec<T> {
    median::windowed_median_vjp(x, w, g).into_iter().map(|v| v * T::from_f64(1.01)).collect()
}

/// Windowed median whose VJP has its sign flipped.
#[op(name = "test/bad/median_sign", version = 1,
     signature(x: f32[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> f32[n - w + 1],
     category = selection, tolerance = exact, backward = vjp(sign_vjp),
     subgradient = "minus the cotangent routed to the selected element (wrong on purpose)", generated_tests = false)]
pub fn median_sign<T: Real>(x: &[T], w: u32) -> Vec<T> {
    med(x, w)
}
/// Wrong: negated.
pub fn sign_vjp<T: Real>(x: &[T], w: u32, g: &[T]) -> Vec<T> {
    median::windowed_median_vjp(x, w, g).into_iter().map(|v| -v).collect()
}

/// Windowed median whose VJP is zero.
#[op(name = "test/bad/median_zero", version = 1,
     signature(x: f32[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> f32[n - w + 1],
     category = selection, tolerance = exact, backward = vjp(zero_vjp),
     subgradient = "no cotangent anywhere (wrong on purpose)", generated_tests = false)]
pub fn median_zero<T: Real>(x: &[T], w: u32) -> Vec<T> {
    med(x, w)
}
/// Wrong: nothing flows.
pub fn zero_vjp<T: Real>(x: &[T], _w: u32, _g: &[T]) -> Vec<T> {
    vec![T::zero(); x.len()]
}

/// The argmedian's index, taking the last of equal window elements (the reference's stable
/// sort takes the first).
fn argmedian_last<T: Real>(x: &[T], w: u32) -> Vec<usize> {
    median::argmedian(x, w).into_iter().enumerate().map(|(i, m)| (i..i + w as usize).rfind(|j| x[*j] == x[m]).unwrap_or(m)).collect()
}

/// Windowed median whose VJP, where window values tie at the median, routes the cotangent to
/// every element equal to it (and right everywhere else).
#[op(name = "test/bad/median_all_ties", version = 1,
     signature(x: f32[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> f32[n - w + 1],
     category = selection, tolerance = exact, backward = vjp(all_ties_vjp),
     subgradient = "cotangent routed to every element equal to the median (wrong on purpose)", generated_tests = false)]
pub fn median_all_ties<T: Real>(x: &[T], w: u32) -> Vec<T> {
    med(x, w)
}
/// Wrong only at ties: every element equal to the selected one gets the cotangent.
pub fn all_ties_vjp<T: Real>(x: &[T], w: u32, g: &[T]) -> Vec<T> {
    let mut grad = vec![T::zero(); x.len()];
    for (i, (gi, m)) in g.iter().zip(median::argmedian(x, w)).enumerate() {
        for j in i..i + w as usize {
            if x[j] == x[m] {
                grad[j] += *gi;
            }
        }
    }
    grad
}

/// Windowed median whose VJP, where window values tie at the median, routes the cotangent to
/// the last of the equal elements instead of the first (right everywhere else).
#[op(name = "test/bad/median_last_tie", version = 1,
     signature(x: f32[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> f32[n - w + 1],
     category = selection, tolerance = exact, backward = vjp(last_tie_vjp),
     subgradient = "cotangent routed to the last of equal elements (wrong on purpose: ties are in index order)", generated_tests = false)]
pub fn median_last_tie<T: Real>(x: &[T], w: u32) -> Vec<T> {
    med(x, w)
}
/// Wrong only at ties: the last of equal elements.
pub fn last_tie_vjp<T: Real>(x: &[T], w: u32, g: &[T]) -> Vec<T> {
    let mut grad = vec![T::zero(); x.len()];
    for (gi, j) in g.iter().zip(argmedian_last(x, w)) {
        grad[j] += *gi;
    }
    grad
}

#[test]
fn the_median_passes_with_its_negative_control() {
    let r = gradcheck(&median::windowed_median::DECL).unwrap_or_else(|e| panic!("{e}"));
    let text = r.to_string();
    println!("{text}");
    assert!(text.starts_with("gradcheck  user/example/windowed_median@1   (w = "), "{text}");
    assert!(text.contains("reference path, f64)"), "{text}");
    assert!(
        text.contains(&format!(
            "probes   : 32 sampled and {} swept (each element alone), {} checked, central differences, h = 1e-3",
            r.swept,
            r.checked()
        )),
        "{text}"
    );
    assert!(text.contains("within h of an order crossing (no derivative exists there)"), "{text}");
    assert!(text.contains("negative control : corrupted vjp REJECTED; a relative error of "), "{text}");
    // Kinks probed, with the convention they were held to; the bound applied.
    let (ties, _) = r.kinks.expect("a selection op gets the kink check");
    assert!(ties >= 1, "{text}");
    assert!(text.contains(&format!("kinks    : {} probed ({ties} ties", ties + r.kinks.unwrap_or_default().1)), "{text}");
    assert!(text.contains("convention held (ties in index order"), "{text}");
    assert!(text.contains(&format!("against the bound applied there {:.1e}", r.bound_applied)), "{text}");
    // Conclusive: at most half the probes (sampled and swept) skipped, or (over several rounds
    // of fresh draws) the last round's at most half and at most half of all probes at a kink.
    let skipped = r.skipped + r.skipped_nonfinite + r.skipped_unresolved;
    assert!(skipped * 2 <= r.probes + r.swept || r.rounds > 1, "{text}");
    assert!(r.worst_ratio <= 1.0);
    assert!(r.negative_control.iter().all(|c| !c.applicable || c.rejected));
    assert!(r.negative_control.iter().any(|c| c.applicable));
    // Deterministic: the case is seeded from the content hash.
    assert_eq!(gradcheck(&median::windowed_median::DECL).unwrap_or_else(|e| panic!("{e}")), r);
}

fn assert_rejected(decl: &'static op_runtime::OpDecl, op: &str) {
    let e = assert_gradcheck_rejected(decl);
    let msg = e.to_string();
    assert!(matches!(e, GradcheckError::Mismatch { .. }), "`{op}` must be rejected against central differences, got {msg}");
    assert!(msg.contains(&format!("op `{op}@1`")), "{msg}");
    assert!(msg.contains("disagrees with central differences"), "{msg}");
}

/// The two wrong-at-ties backwards pass every ordinary probe (those skip ties) and are
/// rejected at the points the kink check places on ties, at the default seed and across 32
/// seeds (a rule routing ties to the later element agrees with the convention at about half of
/// the ties, so the check keeps placing ties until it has found eight).
#[test]
fn a_vjp_wrong_only_at_ties_is_rejected_by_the_kink_check() {
    use op_runtime::gradcheck::{gradcheck_with, GradcheckOptions};
    for (decl, op) in [(&median_all_ties::DECL, "test/bad/median_all_ties@1"), (&median_last_tie::DECL, "test/bad/median_last_tie@1")] {
        for salt in 0..32u64 {
            let o = GradcheckOptions { salt, ..GradcheckOptions::default() };
            match gradcheck_with(op_runtime::registry(), decl, &o) {
                Err(e @ GradcheckError::KinkConvention { .. }) => {
                    let m = e.to_string();
                    assert!(m.contains(&format!("op `{op}`: at a kink (")) && m.contains("tied with"), "{m}");
                    assert!(m.contains("the convention names"), "{m}");
                    assert!(e.is_rejection());
                }
                other => panic!("{op} (salt {salt}) must be rejected at a tie, got {other:?}"),
            }
        }
    }
}

#[test]
fn cotangent_routed_to_the_window_centre_is_rejected() {
    assert_rejected(&median_centre::DECL, "test/bad/median_centre");
}

#[test]
fn vjp_scaled_by_1_01_is_rejected() {
    assert_rejected(&median_scaled::DECL, "test/bad/median_scaled");
}

#[test]
fn sign_flipped_vjp_is_rejected() {
    assert_rejected(&median_sign::DECL, "test/bad/median_sign");
}

#[test]
fn zero_vjp_is_rejected() {
    assert_rejected(&median_zero::DECL, "test/bad/median_zero");
}

/// Across many seeds (many generated cases): the median always passes, never inconclusive, and
/// every wrong backward is always rejected.
#[test]
fn verdicts_hold_across_seeds() {
    use op_runtime::gradcheck::{gradcheck_with, GradcheckOptions};
    let mut skipped = 0;
    for salt in 1..=40u64 {
        let o = GradcheckOptions { salt, ..GradcheckOptions::default() };
        let r = gradcheck_with(op_runtime::registry(), &median::windowed_median::DECL, &o).unwrap_or_else(|e| panic!("salt {salt}: {e}"));
        skipped += r.skipped;
        for d in [&median_centre::DECL, &median_scaled::DECL, &median_sign::DECL, &median_zero::DECL] {
            match gradcheck_with(op_runtime::registry(), d, &o) {
                Err(e) if e.is_rejection() => {}
                other => panic!("salt {salt}: {} must be rejected, got {other:?}", d.rust_name),
            }
        }
    }
    println!("median: {skipped} probes skipped within h of an order crossing over 40 cases");
    // The correct backward alone, at many more seeds: an order crossing just beyond h must never
    // read as a jump at the point (an inconclusive verdict) nor as a mismatch.
    for salt in 41..=240u64 {
        let o = GradcheckOptions { salt, ..GradcheckOptions::default() };
        gradcheck_with(op_runtime::registry(), &median::windowed_median::DECL, &o).unwrap_or_else(|e| panic!("salt {salt}: {e}"));
    }
    // The kink check finds ties over the sweep, and holds the correct backward to them.
    let ties: usize = (1..=16u64)
        .map(|salt| {
            let o = GradcheckOptions { salt, ..GradcheckOptions::default() };
            gradcheck_with(op_runtime::registry(), &median::windowed_median::DECL, &o).map(|r| r.kinks.unwrap_or_default().0).unwrap_or(0)
        })
        .sum();
    assert!(ties >= 16, "only {ties} tie kinks over 16 seeds");
}
