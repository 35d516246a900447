//! The f64 kernel's overflow guard: which output elements a blocked order cannot be trusted
//! with, and their value in the reference's own arithmetic. Owns that test and that sum; must
//! not know the kernel's tiling.
//!
//! At f64 the blocked order (see the parent module) and the reference's sequential compensated
//! sum can disagree only where some partial sum overflows in one order and not in the other
//! (`MAX + MAX - MAX`, `inf + MIN + MIN`), or where a term is not finite. Neither can happen for
//! `out[i][j]` when `2 k max_p |a[i][p]| max_p |b[p][j]| < MAX`: every term is finite and every
//! partial sum of any order stays below `k max|a| max|b| (1 + eps)^k`, half of `MAX` at most.
//! Every other element is recomputed here exactly as the reference computes it (the same
//! products, summed in order with Neumaier's compensation, as `builtins::sum64::Sum64`, a level
//! this module sits below): its result is then the reference's, bit for bit, finite or not.

use super::lanes::{max_magnitude_bits, Elem};
use super::Operands;

/// `max_p |b[p][j]|` for each column `j` of `b` (`k x n`); NaN where the column holds a NaN.
/// (Where B is packed whole the kernel takes the same values from the packed strips.)
#[inline(always)]
pub(super) fn column_scales(b: &[f64], n: usize) -> Vec<f64> {
    let mut bits = vec![0u64; n];
    for row in b.chunks_exact(n.max(1)) {
        for (s, v) in bits.iter_mut().zip(row) {
            *s = (*s).max(v.magnitude_bits());
        }
    }
    bits.into_iter().map(f64::from_bits).collect()
}

/// `max |x|`, NaN where `x` holds a NaN: the magnitudes' bits order as the magnitudes do, and a
/// NaN's lie above infinity's (an integer max, which vectorises).
#[inline(always)]
fn max_magnitude(x: &[f64]) -> f64 {
    f64::from_bits(max_magnitude_bits(x))
}

/// Whether a sum of `k` terms bounded by `ra * cb` might overflow in some order (see the module
/// doc); true for an infinite or NaN bound.
fn at_risk(ra: f64, cb: f64, k: usize) -> bool {
    let bound = ra * cb * (2 * k) as f64;
    bound.is_nan() || bound > f64::MAX
}

/// Recomputes, in the reference's arithmetic, every element of the output rows from `r0` (as
/// blocks of `mr` rows) that [`at_risk`] says a blocked order may get wrong. `ops.scales` are
/// `b`'s [`column_scales`]; `amax[i]` the magnitude bits of row `r0 + i`'s largest element of
/// `a` (taken while the kernel packed A: the `max_magnitude` of the row).
#[inline(always)]
pub(super) fn repair(ops: Operands<'_, f64>, r0: usize, mr: usize, blocks: &mut [&mut [f64]], amax: &[u64]) {
    let (a, b, k, n, scales) = (ops.a, ops.b, ops.k, ops.n, ops.scales);
    let top = max_magnitude(scales);
    for (ib, blk) in blocks.iter_mut().enumerate() {
        for (i, row) in blk.chunks_mut(n).enumerate() {
            let r = r0 + ib * mr + i;
            let arow = &a[r * k..(r + 1) * k];
            let ra = f64::from_bits(amax[ib * mr + i]);
            if !at_risk(ra, top, k) {
                continue;
            }
            for (j, o) in row.iter_mut().enumerate() {
                if at_risk(ra, scales[j], k) {
                    *o = compensated_dot(arow, b[j..].iter().step_by(n));
                }
            }
        }
    }
}

/// `sum_p a[p] b[p]` as the reference sums it: products rounded to f64, added in order with
/// Neumaier's compensation, the compensation applied where the running sum is finite.
#[inline(never)]
fn compensated_dot<'a>(a: &[f64], b: impl Iterator<Item = &'a f64>) -> f64 {
    let (mut sum, mut carry) = (0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        let v = x * y;
        let t = sum + v;
        if sum.abs() >= v.abs() {
            carry += (sum - t) + v;
        } else {
            carry += (v - t) + sum;
        }
        sum = t;
    }
    if sum.is_finite() {
        sum + carry
    } else {
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::{at_risk, column_scales, compensated_dot, max_magnitude};

    #[test]
    fn risk_is_flagged_from_the_bound_and_for_non_finite_or_nan_scales() {
        assert!(!at_risk(1.0, 1.0, 1 << 20));
        assert!(!at_risk(1e150, 1e150, 1000));
        assert!(at_risk(1e154, 1e154, 1000), "1e308 * 2000 overflows");
        assert!(at_risk(f64::MAX, 0.75, 1), "2 * 0.75 MAX is above MAX");
        assert!(at_risk(f64::INFINITY, 0.0, 1), "inf * 0 is NaN: at risk");
        assert!(at_risk(1.0, f64::INFINITY, 3));
        let scales = column_scales(&[1.0, -3.0, f64::NAN, -2.0, 0.5, 4.0, -0.0, f64::NEG_INFINITY], 2);
        assert!(scales[0].is_nan() && scales[1] == f64::INFINITY, "{scales:?}");
        assert_eq!(max_magnitude(&[-0.0, 2.5, -7.0, 1e-310]), 7.0);
        assert!(max_magnitude(&[1.0, -f64::NAN, f64::INFINITY]).is_nan());
        assert!(at_risk(max_magnitude(&[f64::NAN]), 1.0, 1), "a NaN is at risk");
    }

    #[test]
    fn the_sum_is_compensated_and_keeps_the_order_of_overflows() {
        // 1e16 + 1 - 1e16: a plain sum gives 0, the compensated one 1.
        assert_eq!(compensated_dot(&[1e16, 1.0, -1e16], [1.0, 1.0, 1.0].iter()), 1.0);
        // In order: MAX + MAX overflows before -MAX comes; inf + MIN + MIN stays inf.
        assert_eq!(compensated_dot(&[f64::MAX, f64::MAX, -f64::MAX], [1.0; 3].iter()), f64::INFINITY);
        assert_eq!(compensated_dot(&[f64::INFINITY, f64::MIN, f64::MIN], [1.0; 3].iter()), f64::INFINITY);
        assert!(compensated_dot(&[f64::INFINITY, 1.0], [0.0, 1.0].iter()).is_nan());
    }
}
