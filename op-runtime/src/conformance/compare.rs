//! Comparison of a backend's output with the reference's, by the contract's tolerance class,
//! and the guard-band check. Owns the numerical rules; it must not generate cases or run
//! kernels.
//!
//! - `exact`: bit-identical, sign of zero and NaN payload included. No allowance of any kind.
//! - `ulp(k)`: at most `k` units in the last place apart (`approx::ulps_eq`, so `+0 == -0`);
//!   infinities must match exactly; NaN matches only NaN.
//! - `accum(k)`: `|actual - expected| <= k * len * eps * S`, where `len` is the reduction
//!   length and `S` the sum of the magnitudes of the terms of that output, computed by running
//!   the reference in f64 on the absolute values of the inputs (for matmul: `sum |a_ip b_pj|`);
//!   non-finite expected values must match exactly.
//! - `loose(rtol, atol)`: `|actual - expected| <= atol + rtol * |expected|`.
//!
//! Subnormals (non-`exact` classes only): GPUs may flush subnormal inputs and results to zero
//! (Vulkan's `denormBehaviorIndependence`; lavapipe runs with FTZ/DAZ). A result is therefore
//! also accepted when (a) the expected value is subnormal and the actual value is a zero, or
//! (b) it matches, under the same class, the reference evaluated on the inputs with every
//! subnormal flushed to a zero of the same sign (computed only for cases that contain
//! subnormal inputs). Nothing else is relaxed; `exact` stays bit-exact.

use crate::backend::CANARY_BYTE;
use crate::tensor::{Data, Tensor};
use op_spec::contract::{DType, Tolerance};

/// A mismatch at one output element.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    /// Flat index in the output.
    pub index: usize,
    /// Expected value (as f64).
    pub expected: f64,
    /// The expected value's bits in the output dtype.
    pub expected_bits: u64,
    /// Actual value (as f64).
    pub actual: f64,
    /// The actual value's bits in the output dtype.
    pub actual_bits: u64,
    /// The bound that was exceeded, described (`ulp(1): 37 ulps apart`, ...).
    pub detail: String,
    /// Elements of this output that mismatch in total.
    pub count: usize,
    /// Whether the actual bits are the canary pattern (the element was never written).
    pub unwritten: bool,
}

/// A write outside the output.
#[derive(Clone, Debug, PartialEq)]
pub struct OutOfBounds {
    /// `before` or `after` the output.
    pub side: &'static str,
    /// Element offset from the output's start (negative before) or end (0 = first past it).
    pub offset: i64,
    /// The bits found in the guard band.
    pub bits: u64,
    /// Number of guard elements overwritten.
    pub count: usize,
}

/// How one output failed.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// The output has the wrong number of elements.
    Length {
        /// Elements expected, guard bands included.
        expected: usize,
        /// Elements returned.
        actual: usize,
    },
    /// A value outside the tolerance.
    Mismatch(Mismatch),
    /// A guard band was written.
    OutOfBounds(OutOfBounds),
    /// The backend returned an error for this case.
    Execution(String),
    /// The backend returned a different number of outputs.
    OutputCount {
        /// Outputs the reference produced.
        expected: usize,
        /// Outputs the backend returned.
        actual: usize,
    },
}

/// Per-output information needed by `accum`.
#[derive(Clone, Debug, Default)]
pub struct AccumScale {
    /// Reduction length.
    pub len: usize,
    /// Sum of the magnitudes of each output element's terms.
    pub magnitude: Vec<f64>,
    /// The reference evaluated in f64 (the nearly exact result), where available.
    pub exact: Vec<f64>,
}

fn canary_bits(dtype: DType) -> u64 {
    let mut b = 0u64;
    for _ in 0..dtype.size() {
        b = (b << 8) | CANARY_BYTE as u64;
    }
    b
}

fn eps(dtype: DType) -> f64 {
    match dtype {
        DType::f16 => 9.765625e-4,
        DType::bf16 => 7.8125e-3,
        DType::f32 => f32::EPSILON as f64,
        DType::f64 => f64::EPSILON,
        _ => 0.0,
    }
}

fn min_normal(dtype: DType) -> f64 {
    match dtype {
        DType::f16 => 6.103515625e-5,
        DType::bf16 | DType::f32 => f32::MIN_POSITIVE as f64,
        DType::f64 => f64::MIN_POSITIVE,
        _ => 0.0,
    }
}

/// Whether `v` is a non-zero subnormal of `dtype`.
pub fn is_subnormal(v: f64, dtype: DType) -> bool {
    dtype.is_float() && v != 0.0 && v.is_finite() && v.abs() < min_normal(dtype)
}

/// Units in the last place between two finite values of a float dtype (via ordered bits).
fn ulps(a_bits: u64, b_bits: u64, dtype: DType) -> u64 {
    let w = dtype.size() * 8;
    let sign = 1u64 << (w - 1);
    let ord = |b: u64| -> i128 {
        if b & sign != 0 {
            -((b & !sign) as i128)
        } else {
            b as i128
        }
    };
    (ord(a_bits) - ord(b_bits)).unsigned_abs().min(u64::MAX as u128) as u64
}

/// Whether `actual` matches `expected` under `tol` (not counting subnormal allowances).
fn within(tol: Tolerance, dtype: DType, e: f64, eb: u64, a: f64, ab: u64, scale: Option<(usize, f64)>) -> Result<(), String> {
    if matches!(tol, Tolerance::Exact) || !dtype.is_float() && !matches!(tol, Tolerance::Accum(_) | Tolerance::Loose { .. }) {
        return if eb == ab { Ok(()) } else { Err(format!("{tol}: bits differ")) };
    }
    if e.is_nan() || a.is_nan() {
        return if e.is_nan() && a.is_nan() { Ok(()) } else { Err(format!("{tol}: NaN against a number")) };
    }
    if e.is_infinite() || a.is_infinite() {
        return if e == a { Ok(()) } else { Err(format!("{tol}: infinity against a different value")) };
    }
    match tol {
        Tolerance::Exact => unreachable_exact(eb, ab),
        Tolerance::Ulp(k) => {
            let ok = match dtype {
                DType::f32 => approx::ulps_eq!(a as f32, e as f32, epsilon = 0.0, max_ulps = k),
                DType::f64 => approx::ulps_eq!(a, e, epsilon = 0.0, max_ulps = k),
                _ => e == a || ulps(eb, ab, dtype) <= k as u64,
            };
            if ok {
                Ok(())
            } else {
                Err(format!("{tol}: {} ulps apart", ulps(eb, ab, dtype)))
            }
        }
        Tolerance::Accum(k) => {
            let (len, mag) = scale.unwrap_or((1, e.abs()));
            let bound = k as f64 * len.max(1) as f64 * eps(dtype) * mag;
            if approx::abs_diff_eq!(a, e, epsilon = bound) {
                Ok(())
            } else {
                Err(format!("{tol}: |actual - expected| = {:e} exceeds {k} * len {len} * eps * sum|terms| {mag:e} = {bound:e}", (a - e).abs()))
            }
        }
        Tolerance::Loose { rtol, atol } => {
            let bound = atol + rtol * e.abs();
            if (a - e).abs() <= bound {
                Ok(())
            } else {
                Err(format!("{tol}: |actual - expected| = {:e} exceeds {bound:e}", (a - e).abs()))
            }
        }
    }
}

fn unreachable_exact(eb: u64, ab: u64) -> Result<(), String> {
    if eb == ab {
        Ok(())
    } else {
        Err("exact: bits differ".into())
    }
}

/// Whether `a` is within the `accum(k)` bound of the f64 result `x`; an infinite `a` is
/// accepted only where `x` plus the bound reaches the dtype's overflow threshold (same sign).
fn near_exact(k: u32, dtype: DType, len: usize, mag: f64, x: f64, a: f64) -> bool {
    if x.is_infinite() {
        // An infinite input makes the exact result infinite; the reference may have turned it
        // into NaN through an overflowed intermediate (MAX + MAX - inf), the kernel need not.
        return a == x;
    }
    if x.is_nan() || a.is_nan() || !dtype.is_float() {
        return false;
    }
    let bound = k as f64 * len.max(1) as f64 * eps(dtype) * mag;
    if a.is_infinite() {
        let max = match dtype {
            DType::f16 => 65504.0,
            DType::bf16 => 3.3895313892515355e38,
            DType::f32 => f32::MAX as f64,
            _ => f64::MAX,
        };
        return a.signum() == x.signum() && x.abs() + bound >= max;
    }
    (a - x).abs() <= bound
}

/// Checks one guarded output (`guard` canaries, data, `guard` canaries) against the expected
/// tensor. `alt` is the reference on flushed inputs (see the module doc), if computed.
pub fn check_output(
    tol: Tolerance,
    expected: &Tensor,
    alt: Option<&Tensor>,
    actual: &Tensor,
    guard: usize,
    scale: Option<&AccumScale>,
) -> Result<(), Fault> {
    let n = expected.numel();
    if actual.numel() != n + 2 * guard || actual.dtype() != expected.dtype() {
        return Err(Fault::Length { expected: n + 2 * guard, actual: actual.numel() });
    }
    let dtype = expected.dtype();
    let data: &Data = actual.data();
    let canary = canary_bits(dtype);
    // Guard bands first: a write outside the output is a failure whatever the values.
    let before: Vec<usize> = (0..guard).filter(|i| data.bits(*i) != Some(canary)).collect();
    if let Some(&first) = before.first() {
        return Err(Fault::OutOfBounds(OutOfBounds {
            side: "before",
            offset: first as i64 - guard as i64,
            bits: data.bits(first).unwrap_or_default(),
            count: before.len(),
        }));
    }
    let after: Vec<usize> = (0..guard).filter(|i| data.bits(guard + n + *i) != Some(canary)).collect();
    if let Some(&first) = after.first() {
        return Err(Fault::OutOfBounds(OutOfBounds {
            side: "after",
            offset: first as i64,
            bits: data.bits(guard + n + first).unwrap_or_default(),
            count: after.len(),
        }));
    }
    let mut first: Option<Mismatch> = None;
    let mut count = 0;
    for i in 0..n {
        let (e, eb) = (expected.data().get_f64(i).unwrap_or(f64::NAN), expected.data().bits(i).unwrap_or_default());
        let (a, ab) = (data.get_f64(guard + i).unwrap_or(f64::NAN), data.bits(guard + i).unwrap_or_default());
        let sc = scale.map(|s| (s.len, s.magnitude.get(i).copied().unwrap_or(f64::INFINITY)));
        let verdict = within(tol, dtype, e, eb, a, ab, sc);
        let Err(detail) = verdict else { continue };
        if let (Tolerance::Accum(k), Some(s)) = (tol, scale) {
            // `accum` bounds the error against the exact result; the reference at the declared
            // dtype is one rounding of it (it may overflow an intermediate, or differ by FMA
            // contraction, where the kernel does not), so the f64 result is accepted as anchor.
            if let (Some(x), Some(m)) = (s.exact.get(i), s.magnitude.get(i)) {
                if near_exact(k, dtype, s.len, *m, *x, a) {
                    continue;
                }
            }
        }
        if !matches!(tol, Tolerance::Exact) && dtype.is_float() {
            // A flushed subnormal result, or agreement with the reference on flushed inputs.
            if is_subnormal(e, dtype) && a == 0.0 {
                continue;
            }
            if let Some(alt) = alt {
                let (fe, feb) = (alt.data().get_f64(i).unwrap_or(f64::NAN), alt.data().bits(i).unwrap_or_default());
                if within(tol, dtype, fe, feb, a, ab, sc).is_ok() || (is_subnormal(fe, dtype) && a == 0.0) {
                    continue;
                }
            }
        }
        count += 1;
        if first.is_none() {
            first = Some(Mismatch { index: i, expected: e, expected_bits: eb, actual: a, actual_bits: ab, detail, count: 0, unwritten: ab == canary });
        }
    }
    match first {
        Some(mut m) => {
            m.count = count;
            Err(Fault::Mismatch(m))
        }
        None => Ok(()),
    }
}

/// Flushes every subnormal of a float tensor to a zero of the same sign; `None` when the tensor
/// has none (or is not float).
pub fn flush_subnormals(t: &Tensor) -> Option<Tensor> {
    let dtype = t.dtype();
    if !dtype.is_float() {
        return None;
    }
    let mut any = false;
    let v: Vec<f64> = t
        .data()
        .to_f64_vec()?
        .into_iter()
        .map(|x| {
            if is_subnormal(x, dtype) {
                any = true;
                if x.is_sign_negative() {
                    -0.0
                } else {
                    0.0
                }
            } else {
                x
            }
        })
        .collect();
    if !any {
        return None;
    }
    Tensor::new(t.shape().to_vec(), super::cases::to_data(dtype, &v)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guarded(v: &[f32], guard: usize) -> Tensor {
        let t = Tensor::vector(v.to_vec());
        crate::backend::pad_with_canaries(t, guard).unwrap()
    }

    #[test]
    fn exact_is_bit_exact_including_zero_sign() {
        let e = Tensor::vector(vec![0.0f32, 1.0]);
        assert!(check_output(Tolerance::Exact, &e, None, &guarded(&[0.0, 1.0], 2), 2, None).is_ok());
        let f = check_output(Tolerance::Exact, &e, None, &guarded(&[-0.0, 1.0], 2), 2, None).unwrap_err();
        assert!(matches!(f, Fault::Mismatch(Mismatch { index: 0, .. })), "{f:?}");
        // A subnormal flushed to zero is not exact.
        let e = Tensor::vector(vec![1e-45f32]);
        assert!(check_output(Tolerance::Exact, &e, None, &guarded(&[0.0], 1), 1, None).is_err());
    }

    #[test]
    fn ulp_counts_units_and_accepts_flushed_subnormals() {
        let x = 1.0f32;
        let next = f32::from_bits(x.to_bits() + 1);
        let e = Tensor::vector(vec![x]);
        assert!(check_output(Tolerance::Ulp(1), &e, None, &guarded(&[next], 1), 1, None).is_ok());
        assert!(check_output(Tolerance::Ulp(0), &e, None, &guarded(&[next], 1), 1, None).is_err());
        let e = Tensor::vector(vec![1e-40f32]);
        assert!(check_output(Tolerance::Ulp(0), &e, None, &guarded(&[0.0], 1), 1, None).is_ok());
        let e = Tensor::vector(vec![f32::NAN, f32::INFINITY]);
        assert!(check_output(Tolerance::Ulp(4), &e, None, &guarded(&[f32::NAN, f32::INFINITY], 1), 1, None).is_ok());
        assert!(check_output(Tolerance::Ulp(4), &e, None, &guarded(&[1.0, f32::INFINITY], 1), 1, None).is_err());
        assert!(check_output(Tolerance::Ulp(4), &e, None, &guarded(&[f32::NAN, f32::MAX], 1), 1, None).is_err());
    }

    #[test]
    fn guard_writes_are_out_of_bounds() {
        let e = Tensor::vector(vec![1.0f32, 2.0]);
        let mut a = guarded(&[1.0, 2.0], 3);
        a.as_mut_slice::<f32>().unwrap()[5] = 7.0;
        match check_output(Tolerance::Exact, &e, None, &a, 3, None).unwrap_err() {
            Fault::OutOfBounds(o) => assert_eq!((o.side, o.offset, o.count), ("after", 0, 1)),
            f => panic!("{f:?}"),
        }
        let mut a = guarded(&[1.0, 2.0], 3);
        a.as_mut_slice::<f32>().unwrap()[2] = 7.0;
        match check_output(Tolerance::Exact, &e, None, &a, 3, None).unwrap_err() {
            Fault::OutOfBounds(o) => assert_eq!((o.side, o.offset), ("before", -1)),
            f => panic!("{f:?}"),
        }
    }

    #[test]
    fn unwritten_elements_are_flagged() {
        let e = Tensor::vector(vec![1.0f32]);
        let a = crate::backend::pad_with_canaries(Tensor::vector(vec![f32::from_bits(0xA5A5_A5A5)]), 1).unwrap();
        match check_output(Tolerance::Exact, &e, None, &a, 1, None).unwrap_err() {
            Fault::Mismatch(m) => assert!(m.unwritten),
            f => panic!("{f:?}"),
        }
    }

    #[test]
    fn accum_scales_with_length_and_magnitude() {
        let e = Tensor::vector(vec![1.0f32]);
        let a = 1.0f32 + 8.0 * f32::EPSILON;
        let s = AccumScale { len: 4, magnitude: vec![1.0], exact: vec![] };
        assert!(check_output(Tolerance::Accum(2), &e, None, &guarded(&[a], 1), 1, Some(&s)).is_ok());
        let s = AccumScale { len: 2, magnitude: vec![1.0], exact: vec![] };
        assert!(check_output(Tolerance::Accum(2), &e, None, &guarded(&[a], 1), 1, Some(&s)).is_err());
        // The reference overflowed an intermediate (MAX + MAX - MAX = inf) but the exact sum is
        // MAX: a kernel that returns MAX conforms, one that returns 0 does not.
        let e = Tensor::vector(vec![f32::INFINITY]);
        let m = 3.0 * f32::MAX as f64;
        let s = AccumScale { len: 3, magnitude: vec![m], exact: vec![f32::MAX as f64] };
        assert!(check_output(Tolerance::Accum(2), &e, None, &guarded(&[f32::MAX], 1), 1, Some(&s)).is_ok());
        let s = AccumScale { len: 3, magnitude: vec![1.0], exact: vec![f32::MAX as f64] };
        assert!(check_output(Tolerance::Accum(2), &e, None, &guarded(&[0.0], 1), 1, Some(&s)).is_err());
    }
}
