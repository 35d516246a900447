//! Gradcheck of the user's windowed median (declared in the example) and of four deliberately
//! wrong backwards for it: each must be rejected, with the same reference and probes.

#[path = "../examples/windowed_median/median.rs"]
mod median;

use op_runtime::gradcheck;
use op_runtime::verify::gradcheck::GradcheckError;
use op_runtime::{op, Real};

/// The median's reference, shared by the wrong-backward fixtures below.
fn med<T: Real>(x: &[T], w: u32) -> Vec<T> {
    median::windowed_median(x, w)
}

/// Windowed median whose VJP routes each cotangent to the window centre.
#[op(name = "test/bad/median_centre", version = 1,
     signature(x: f32[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> f32[n - w + 1],
     category = selection, tolerance = exact, backward = vjp(centre_vjp),
     subgradient = "cotangent routed to the window centre (wrong on purpose)")]
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
     subgradient = "cotangent routed to the selected element, times 1.01 (wrong on purpose)")]
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
     subgradient = "minus the cotangent routed to the selected element (wrong on purpose)")]
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
     subgradient = "no cotangent anywhere (wrong on purpose)")]
pub fn median_zero<T: Real>(x: &[T], w: u32) -> Vec<T> {
    med(x, w)
}
/// Wrong: nothing flows.
pub fn zero_vjp<T: Real>(x: &[T], _w: u32, _g: &[T]) -> Vec<T> {
    vec![T::zero(); x.len()]
}

#[test]
fn the_median_passes_with_its_negative_control() {
    let r = gradcheck(&median::windowed_median::DECL).unwrap_or_else(|e| panic!("{e}"));
    let text = r.to_string();
    println!("{text}");
    assert!(text.starts_with("gradcheck  user/example/windowed_median@1   (w = "), "{text}");
    assert!(text.contains("reference path, f64)"), "{text}");
    assert!(text.contains("probes   : 32 sampled, central differences, h = 1e-3"), "{text}");
    assert!(text.contains("within h of an order crossing (no derivative exists there)"), "{text}");
    assert!(text.contains("negative control : corrupted vjp REJECTED"), "{text}");
    assert!(r.skipped * 2 <= r.probes);
    assert!(r.worst_ratio <= 1.0);
    assert!(r.negative_control.iter().all(|c| !c.applicable || c.rejected));
    assert!(r.negative_control.iter().any(|c| c.applicable));
    // Deterministic: the case is seeded from the content hash.
    assert_eq!(gradcheck(&median::windowed_median::DECL).unwrap_or_else(|e| panic!("{e}")), r);
}

fn assert_rejected(decl: &'static op_runtime::core::decl::OpDecl, op: &str) {
    match gradcheck(decl) {
        Err(e @ GradcheckError::Mismatch { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains(&format!("op `{op}@1`")), "{msg}");
            assert!(msg.contains("disagrees with central differences"), "{msg}");
        }
        other => panic!("`{op}` must be rejected, got {other:?}"),
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
    use op_runtime::verify::gradcheck::{gradcheck_with, GradcheckOptions};
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
    println!("median: {skipped} probes skipped over 40 cases of 32 probes");
}
