//! `Real`: the float element trait reference implementations are generic over, so one body
//! serves conformance (the declared dtype) and gradcheck (`f64`). Only arithmetic lives here.

use crate::tensor::Element;
use std::ops::{Add, AddAssign, Div, Mul, Neg, Sub};

/// Float types a reference can be instantiated with (`f16`, `bf16`, `f32`, `f64`).
pub trait Real:
    Element
    + PartialOrd
    + Default
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
{
    /// 0.
    fn zero() -> Self;
    /// 1.
    fn one() -> Self;
    /// Conversion from f64 (rounding for f32).
    fn from_f64(v: f64) -> Self;
    /// Conversion to f64 (exact).
    fn to_f64(self) -> f64;
    /// e^x.
    fn exp(self) -> Self;
    /// Natural logarithm.
    fn ln(self) -> Self;
    /// Hyperbolic tangent.
    fn tanh(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// Absolute value.
    fn abs(self) -> Self;
    /// IEEE total order (distinguishes -0 from +0, orders NaN last).
    fn total_cmp(&self, other: &Self) -> std::cmp::Ordering;
    /// Whether the value is NaN.
    fn is_nan(self) -> bool;
}

macro_rules! real {
    ($t:ty) => {
        impl Real for $t {
            fn zero() -> Self {
                0.0
            }
            fn one() -> Self {
                1.0
            }
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            fn tanh(self) -> Self {
                <$t>::tanh(self)
            }
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            fn total_cmp(&self, other: &Self) -> std::cmp::Ordering {
                <$t>::total_cmp(self, other)
            }
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
        }
    };
}
real!(f32);
real!(f64);

/// The half-precision types: arithmetic in f32 (what `half` does for each operation), rounded
/// once to the type; transcendental functions the same way. Gradcheck instantiates float
/// references in f64, so a differentiable f16 or bf16 op is checked like any other.
macro_rules! real_half {
    ($t:ty) => {
        impl Real for $t {
            fn zero() -> Self {
                <$t>::ZERO
            }
            fn one() -> Self {
                <$t>::ONE
            }
            fn from_f64(v: f64) -> Self {
                <$t>::from_f64(v)
            }
            fn to_f64(self) -> f64 {
                <$t>::to_f64(self)
            }
            fn exp(self) -> Self {
                <$t>::from_f32(self.to_f32().exp())
            }
            fn ln(self) -> Self {
                <$t>::from_f32(self.to_f32().ln())
            }
            fn tanh(self) -> Self {
                <$t>::from_f32(self.to_f32().tanh())
            }
            fn sqrt(self) -> Self {
                <$t>::from_f32(self.to_f32().sqrt())
            }
            fn abs(self) -> Self {
                <$t>::from_bits(self.to_bits() & 0x7fff)
            }
            fn total_cmp(&self, other: &Self) -> std::cmp::Ordering {
                <$t>::total_cmp(self, other)
            }
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
        }
    };
}
real_half!(half::f16);
real_half!(half::bf16);

#[cfg(test)]
mod tests {
    use super::Real;
    use half::{bf16, f16};

    fn check<T: Real>() {
        let two = T::one() + T::one();
        assert_eq!((two * two).to_f64(), 4.0);
        assert_eq!(T::from_f64(-1.5).abs().to_f64(), 1.5);
        assert!((T::from_f64(2.0).ln().to_f64() - std::f64::consts::LN_2).abs() < 1e-2);
        assert!(T::from_f64(f64::NAN).is_nan());
        assert_eq!(T::from_f64(-0.0).total_cmp(&T::zero()), std::cmp::Ordering::Less);
    }

    #[test]
    fn every_float_type_is_real() {
        check::<f32>();
        check::<f64>();
        check::<f16>();
        check::<bf16>();
    }
}
