//! The accumulator the built-in references sum with: f64 with Neumaier's compensation, so a
//! reference at any float dtype adds its terms nearly exactly and rounds once to its own type
//! (an f16 running sum of 4096 x 0.1 stalls at 256; this gives 409.5 rounded once). Owns that
//! arithmetic only; the references decide what their terms are.

/// A running sum in f64 with Neumaier's compensation term (Kahan-Babuska): the error of the
/// whole sum is about one f64 rounding of the result, whatever the order or the length. An
/// infinite or NaN partial sum is returned as it is (the compensation is meaningless there).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Sum64 {
    sum: f64,
    carry: f64,
}

impl Sum64 {
    /// Adds one term.
    pub(crate) fn add_term(&mut self, v: f64) {
        let t = self.sum + v;
        if self.sum.abs() >= v.abs() {
            self.carry += (self.sum - t) + v;
        } else {
            self.carry += (v - t) + self.sum;
        }
        self.sum = t;
    }

    /// The sum (the compensation applied where the running sum is finite).
    pub(crate) fn compensated(self) -> f64 {
        if self.sum.is_finite() {
            self.sum + self.carry
        } else {
            self.sum
        }
    }

    /// The sum of `terms`.
    pub(crate) fn sum_of(terms: impl IntoIterator<Item = f64>) -> f64 {
        let mut s = Sum64::default();
        terms.into_iter().for_each(|v| s.add_term(v));
        s.compensated()
    }
}

#[cfg(test)]
mod tests {
    use super::Sum64;

    #[test]
    fn sums_nearly_exactly_and_keeps_non_finite_results() {
        // 0.1 (as f64) a million times: a plain f64 sum drifts by ~1e-6 relative to that.
        let n = 1_000_000;
        let plain: f64 = (0..n).map(|_| 0.1f64).sum();
        let compensated = Sum64::sum_of((0..n).map(|_| 0.1f64));
        let exact = 1e5; // n * 0.1000000000000000055511151231257827: 1e5 + 5.6e-12
        assert!((compensated - exact).abs() <= 1e-10, "{compensated}");
        assert!((plain - exact).abs() > 1e-7, "the plain sum drifts: {plain}");
        // Cancellation: 1e16 + 1 - 1e16 is 1 exactly.
        assert_eq!(Sum64::sum_of([1e16, 1.0, -1e16]), 1.0);
        assert_eq!(Sum64::sum_of([f64::INFINITY, 1.0, 2.0]), f64::INFINITY);
        assert!(Sum64::sum_of([f64::INFINITY, f64::NEG_INFINITY]).is_nan());
        assert!(Sum64::sum_of([1.0, f64::NAN]).is_nan());
        assert_eq!(Sum64::sum_of([f64::MAX, f64::MAX]), f64::INFINITY);
        assert_eq!(Sum64::sum_of([]).to_bits(), 0.0f64.to_bits(), "the empty sum is +0");
    }
}
