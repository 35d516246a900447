//! Homogeneity of the f64 reference: an element's degree under scaling a group of values by 2
//! and by 1/2 (exact in binary floating point), and whether it doubles with them. Owns reading
//! those; it must not measure sensitivities.

use super::super::Case;
use super::feed::{reference_f64, Feed, Scaling};
use super::filled_like;
use op_core::op::RegisteredOp;

/// The degree of homogeneity of every element under `which` scaled by 2 and by 1/2: `Some(d)`
/// where the element's f64 value is multiplied by exactly `2^d` and `2^-d` (within 1e-9
/// relative, `|d| <= 8`; one factor alone where the other leaves a domain), `None` where it is
/// not, or is zero or not finite. Both factors: one alone is fooled by coincidence (`2x - y`
/// at `x = 1.5, y = 1.4` is 16 times `x - y`).
pub(super) fn degrees(op: &RegisteredOp, case: &Case, plain: &[Vec<f64>], which: Scaling) -> Vec<Vec<Option<i32>>> {
    // Per element: no run yet, a degree, or not homogeneous.
    let mut seen: Vec<Vec<Option<Option<i32>>>> = filled_like(plain, None);
    for by in [2.0f64, 0.5] {
        let Ok(scaled) = reference_f64(op, &case.inputs, &case.params, &mut Feed::Scaled { by, which }) else { continue };
        for ((o, p), d) in seen.iter_mut().zip(plain).zip(&scaled).filter(|((_, p), d)| p.len() == d.len()) {
            for ((o, p), d) in o.iter_mut().zip(p).zip(d) {
                let r = d / p;
                let k = (r.abs().log2() / by.log2()).round();
                let here =
                    (p.is_finite() && *p != 0.0 && r > 0.0 && k.abs() <= 8.0 && (r - by.powf(k)).abs() <= 1e-9 * r).then_some(k as i32);
                *o = Some(match *o {
                    None => here,
                    Some(before) => before.filter(|b| here == Some(*b)),
                });
            }
        }
    }
    seen.into_iter().map(|o| o.into_iter().map(Option::flatten).collect()).collect()
}

/// Which elements of each output double (halve) when the values `which` names are doubled
/// (halved), within 1e-9 relative, by either factor (see `sensitivity::carries`); a zero element counts
/// only where not `nonzero`.
pub(super) fn doubles_with(op: &RegisteredOp, case: &Case, plain: &[Vec<f64>], which: Scaling, nonzero: bool) -> Vec<Vec<bool>> {
    let mut out = filled_like(plain, false);
    for by in [2.0, 0.5] {
        let Ok(scaled) = reference_f64(op, &case.inputs, &case.params, &mut Feed::Scaled { by, which }) else { continue };
        for ((o, p), d) in out.iter_mut().zip(plain).zip(&scaled).filter(|((_, p), d)| p.len() == d.len()) {
            for ((o, p), d) in o.iter_mut().zip(p).zip(d) {
                *o |= p.is_finite() && !(nonzero && *p == 0.0) && (d - by * p).abs() <= 1e-9 * (by * p).abs();
            }
        }
    }
    out
}
