//! The steps a probe takes: relative to the value below `|x| = 1`, floored, and, for dense
//! directions, exact in f64 (drawn values keep few enough bits that `x + m d` rounds nowhere).
//! Owns the step arithmetic; it must not evaluate anything.

/// The step of a coordinate whose value is `x`, in units of `h`: relative below `|x| = 1` (so
/// a value of 1e-3 is not stepped across zero, nor out of a domain like `x > 0`), absolute
/// above (so `exp(x + h)` at `x` = 700 stays accurate), never below `floor h` (`floor`: 1e-3,
/// or the smallest magnitude an input declares where that is smaller).
pub fn step_scale(x: f64, floor: f64) -> f64 {
    x.abs().clamp(floor, 1.0)
}

/// The step floor of the default magnitudes (see [`step_scale`]).
pub const STEP_FLOOR: f64 = 1e-3;

/// Significant bits kept in a drawn value: with the 53 of an f64, `x + m d` is exact for a
/// displacement `d` from [`exact_step`] and `|m| <= 3`.
pub const DRAWN_BITS: i32 = 40;

/// `v` rounded to [`DRAWN_BITS`] significant bits (zeros, non-finite values and values that
/// would round to infinity unchanged).
pub fn drawn_bits(v: f64) -> f64 {
    let drop = 52 - (DRAWN_BITS - 1) as u32;
    let r = f64::from_bits((v.to_bits() + (1 << (drop - 1))) & !((1u64 << drop) - 1));
    if v == 0.0 || !v.is_finite() || !r.is_finite() {
        v
    } else {
        r
    }
}

/// A displacement near `d` such that `x + m d` is exact for `|m| <= 3` when `x` has at most
/// [`DRAWN_BITS`] significant bits: a multiple of `2^(e - DRAWN_BITS + 1)`, `e` the exponent of
/// the larger of `|x|` and `3 |d|` (both sums then fit in 53 bits). `d` itself where that grid
/// is not a normal number.
pub fn exact_step(x: f64, d: f64) -> f64 {
    let m = x.abs().max(3.0 * d.abs());
    let q = (m.log2().floor() - (DRAWN_BITS - 1) as f64).exp2();
    if !q.is_normal() || !m.is_normal() {
        return d;
    }
    (d / q).round() * q
}

#[cfg(test)]
mod tests {
    use super::*;
    use op_contract::sample::Rng;

    #[test]
    fn dense_steps_from_drawn_values_are_exact() {
        let mut rng = Rng::new(11);
        for _ in 0..20_000 {
            let x = drawn_bits(rng.sign() * rng.log_uniform(1e-9, 1e3));
            let d = exact_step(x, rng.uniform(-1.0, 1.0) * 1e-3 * step_scale(x, 1e-9));
            for m in [-3.0, -2.0, -1.0, 1.0, 2.0, 3.0] {
                assert_eq!((x + m * d) - x, m * d, "x = {x:e}, d = {d:e}, m = {m}");
            }
            assert_eq!(drawn_bits(x), x);
        }
        // Values and steps where no grid exists are left alone.
        assert_eq!(exact_step(0.0, 0.0), 0.0);
        assert_eq!(drawn_bits(f64::MAX), f64::MAX);
        assert_eq!(drawn_bits(-0.0).to_bits(), (-0.0f64).to_bits());
    }

    #[test]
    fn steps_are_relative_below_one_and_floored() {
        assert_eq!(step_scale(0.5, STEP_FLOOR), 0.5);
        assert_eq!(step_scale(-700.0, STEP_FLOOR), 1.0);
        assert_eq!(step_scale(0.0, STEP_FLOOR), STEP_FLOOR);
        assert_eq!(step_scale(1e-7, 1e-9), 1e-7);
    }
}
