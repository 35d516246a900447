//! `Real`: the float element trait reference implementations are generic over, so one body
//! serves conformance (the declared dtype) and gradcheck (`f64`). Only arithmetic lives here.

use crate::core::tensor::Element;
use std::ops::{Add, AddAssign, Div, Mul, Neg, Sub};

/// Float types a reference can be instantiated with (`f32`, `f64`).
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
