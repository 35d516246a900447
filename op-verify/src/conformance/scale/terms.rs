//! The sum of each element's terms' magnitudes, `T`, which the overflow rule splits into
//! positive and negative terms (see `AccumScale::terms`). Owns reading `T` from the groups'
//! sensitivities by Euler's rule; it must not measure them.

use super::super::Case;
use super::feed::Scaling;
use super::homogeneity::degrees;
use super::sensitivity::GroupScale;
use op_core::op::RegisteredOp;

/// The sum of each element's terms' magnitudes, `T` (see `AccumScale::terms`), from
/// `|r64|` and the op on `|x|` (`base`) and what the groups' measured sensitivities show by
/// Euler's rule for homogeneous functions: where the element is homogeneous of degree `d >= 1`
/// in one group (a term's factors from it raised to `d` in all: a sum, a product's factor, a
/// square), that group's sensitivity is `d` times the magnitudes of the terms it enters;
/// where no group is homogeneous alone (a sum of one-group terms: `sum(x) - sum(y)`,
/// `x^2 - y^2`, a scan clipped to bounds that are parameters) but every group together is, of
/// degree `D >= 1`, the groups' sensitivities sum to `D` times the terms' magnitudes. A group
/// of degree 0 or below (a normalisation's input, a divisor) tells nothing of the terms: its
/// sensitivity holds magnitudes that cancel inside (a layer norm of 2000 +- 1), so the
/// element then keeps `base`.
pub(super) fn terms_of(op: &RegisteredOp, case: &Case, plain: &[Vec<f64>], base: Vec<Vec<f64>>, each: &[GroupScale]) -> Vec<Vec<f64>> {
    let joint = degrees(op, case, plain, Scaling::All);
    let per: Vec<Vec<Vec<Option<i32>>>> = each.iter().map(|(g, _)| degrees(op, case, plain, Scaling::of(*g))).collect();
    let mut out = base;
    for (o, t) in out.iter_mut().enumerate() {
        for (i, t) in t.iter_mut().enumerate() {
            let at = |g: usize| (each[g].1[o][i], per[g][o][i]);
            let moved: Vec<(f64, Option<i32>)> = (0..each.len()).map(at).filter(|(s, _)| *s > 0.0).collect();
            if moved.iter().any(|(_, d)| d.is_some_and(|d| d <= 0)) {
                continue;
            }
            let own = moved.iter().filter_map(|(s, d)| d.map(|d| s / d as f64)).fold(0.0, f64::max);
            let summed = match joint[o][i] {
                Some(d) if d >= 1 && moved.iter().all(|(_, d)| d.is_none()) => moved.iter().map(|(s, _)| s).sum::<f64>() / d as f64,
                _ => 0.0,
            };
            *t = t.max(own).max(summed);
        }
    }
    out
}
