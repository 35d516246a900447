//! Comparison of a backend's output with the reference's, by the contract's tolerance class,
//! and the guard-band check. Owns the numerical rules; it must not generate cases or run
//! kernels.
//!
//! - `exact`: bit-identical, sign of zero and NaN payload included. No allowance of any kind.
//! - `ulp(k)`: at most `k` units in the last place apart (`approx::ulps_eq`, so `+0 == -0`);
//!   infinities must match exactly; NaN matches only NaN.
//! - `accum(k)`: anchored on the reference's own rounding. For each output element `i`, with
//!   `r32` the reference at the declared dtype, `r64` the reference evaluated in f64 (the
//!   nearly exact result), `S` the sum of the magnitudes of the element's terms (the reference
//!   run in f64 on the absolute values of the inputs: for matmul `sum |a_ip b_pj|`), `len` the
//!   reduction length and `eps` the dtype's machine epsilon:
//!
//!   `|actual - r64| <= k * max(|r32 - r64|, sqrt(len) * eps * S) + 2 * len * min_normal`
//!
//!   Why: a kernel may round differently from the reference (another summation order, FMA
//!   contraction, a tree or strided reduction): for the random inputs the engine generates
//!   that error is of the order `sqrt(len) * eps * S` (rounding errors of random sign add up
//!   like a random walk; a tree or a 256-way strided sum is even provably below
//!   `(depth / 2) * eps * S` with `depth <= len / 256 + 8`). Or it may round exactly as badly
//!   as the reference (a sequential sum of a constant has a systematic bias, which then shows
//!   in `|r32 - r64|`). It may not be `k` times worse than either. The old bound,
//!   `k * len * eps * S` (the worst case of a sequential sum), grew linearly in `len` and at
//!   the large cases (`len` = 131_071, `k * len * eps` = 3%) accepted kernels that skip
//!   elements, stop early or scale outputs by 1.001. The absolute term `2 * len * min_normal`
//!   (the dtype's smallest normal) is the subnormal policy below applied to the accumulation:
//!   each of the at most `2 * len` roundings (a product and an add per term) may flush a
//!   subnormal result to zero, losing less than `min_normal` (for f32 at `len` = 131_071:
//!   3e-33). A result bit-identical to the reference conforms (the reference conforms to
//!   itself). Non-finite values: a kernel may return the reference's own non-finite value;
//!   an infinite `r64` must be matched exactly; an infinite result where `r64` is finite is
//!   accepted only where `|r64|` plus the bound reaches the dtype's overflow threshold (same
//!   sign); where `r32` overflowed but `r64` did not, `|r32 - r64|` is left out of the bound.
//!   `r64` and `S` are required for every element of a float output: a missing or short one
//!   is a typed error ([`Fault::Scale`]), never an infinite (accept-all) bound, and a
//!   non-finite `S` with a finite `r64` accepts only the reference's own bits. Integer
//!   outputs are compared bit for bit.
//! - `loose(rtol, atol)`: `|actual - expected| <= atol + rtol * |expected|`.
//!
//! Subnormals (non-`exact` classes only): GPUs may flush subnormal inputs and results to zero
//! (Vulkan's `denormBehaviorIndependence`; lavapipe runs with FTZ/DAZ). A result is therefore
//! also accepted when (a) the expected value is subnormal and the actual value is a zero, or
//! (b) it matches, under the same class, the reference evaluated on the inputs with every
//! subnormal flushed to a zero of the same sign (computed only for cases that contain
//! subnormal inputs; for `accum`, anchored on that reference's own f64 evaluation, with the
//! original `S`). Nothing else is relaxed; `exact` stays bit-exact.

use crate::core::backend::CANARY_BYTE;
use crate::core::tensor::{Data, Tensor};
use op_contract::contract::{DType, Tolerance};

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
    /// The `accum` scale (the f64 reference and `sum |terms|`) is missing or too short for
    /// this output: the reference path failed to produce it. Not a verdict on the kernel.
    Scale(String),
    /// The backend returned a different number of outputs.
    OutputCount {
        /// Outputs the reference produced.
        expected: usize,
        /// Outputs the backend returned.
        actual: usize,
    },
}

/// Per-output information needed by `accum` (see the module doc). For a float output, both
/// `magnitude` and `exact` must hold one value per element; anything shorter is a
/// [`Fault::Scale`].
#[derive(Clone, Debug, Default)]
pub struct AccumScale {
    /// Reduction length.
    pub len: usize,
    /// Sum of the magnitudes of each output element's terms (`S`).
    pub magnitude: Vec<f64>,
    /// The reference evaluated in f64 (the nearly exact result `r64`).
    pub exact: Vec<f64>,
    /// The reference evaluated in f64 on the inputs with subnormals flushed (the anchor of the
    /// flushed-input allowance); empty when the case has no subnormal input.
    pub flushed_exact: Vec<f64>,
}

impl AccumScale {
    /// Checks that the scale covers an output of `n` elements.
    fn covers(&self, n: usize) -> Result<(), String> {
        if self.magnitude.len() < n || self.exact.len() < n {
            return Err(format!(
                "the reference path produced {} sum(|terms|) value(s) and {} f64 result(s) for an output of {n} element(s)",
                self.magnitude.len(),
                self.exact.len()
            ));
        }
        Ok(())
    }
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
fn within(tol: Tolerance, dtype: DType, e: f64, eb: u64, a: f64, ab: u64) -> Result<(), String> {
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
        // `accum` has its own rule (`accum_within`), which needs the scale.
        Tolerance::Accum(_) => Err(format!("{tol}: no scale to compare with")),
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

fn overflow_threshold(dtype: DType) -> f64 {
    match dtype {
        DType::f16 => 65504.0,
        DType::bf16 => 3.3895313892515355e38,
        DType::f32 => f32::MAX as f64,
        _ => f64::MAX,
    }
}

/// The `accum(k)` bound of one element (see the module doc): `k * max(|r32 - r64|, sqrt(len)
/// * eps * S) + 2 * len * min_normal`, with the reference's own error left out where it
/// overflowed. Also returns the two anchors of the `max`, for the report.
pub fn accum_bound(k: u32, dtype: DType, len: usize, s: f64, r32: f64, r64: f64) -> (f64, f64, f64) {
    let own = if r32.is_finite() && r64.is_finite() { (r32 - r64).abs() } else { 0.0 };
    let order = (len.max(1) as f64).sqrt() * eps(dtype) * s;
    let flush = 2.0 * len.max(1) as f64 * min_normal(dtype);
    (k as f64 * own.max(order) + flush, own, order)
}

/// The `accum(k)` verdict for one element: `a` (bits `ab`) against the reference `e` (bits
/// `eb`) at the declared dtype, its f64 evaluation `x` and `S = s`.
#[allow(clippy::too_many_arguments)]
fn accum_within(k: u32, dtype: DType, len: usize, s: f64, e: f64, eb: u64, x: f64, a: f64, ab: u64) -> Result<(), String> {
    let tol = Tolerance::Accum(k);
    // The reference's own result (the reference conforms to itself; NaN matches NaN).
    if ab == eb || e.is_nan() && a.is_nan() {
        return Ok(());
    }
    if !dtype.is_float() {
        return Err(format!("{tol}: bits differ (integer output)"));
    }
    if x.is_nan() || a.is_nan() {
        return Err(format!("{tol}: NaN against a number (f64 reference {x:e})"));
    }
    if x.is_infinite() {
        // An infinite input makes the exact result infinite; the reference may have turned it
        // into NaN through an overflowed intermediate (MAX + MAX - inf), the kernel need not.
        return if a == x { Ok(()) } else { Err(format!("{tol}: the f64 reference is {x:e}, the kernel returned {a:e}")) };
    }
    if !s.is_finite() {
        return Err(format!("{tol}: sum(|terms|) is {s:e} for a finite f64 reference {x:e}: only the reference's own bits conform"));
    }
    let (bound, own, order) = accum_bound(k, dtype, len, s, e, x);
    if a.is_infinite() {
        let max = overflow_threshold(dtype);
        return if a.signum() == x.signum() && x.abs() + bound >= max {
            Ok(())
        } else {
            Err(format!("{tol}: infinity where the f64 reference is {x:e} (bound {bound:e} does not reach overflow)"))
        };
    }
    let d = (a - x).abs();
    if d <= bound {
        Ok(())
    } else {
        Err(format!(
            "{tol}: |actual - f64 reference {x:e}| = {d:e} exceeds {k} * max(|reference - f64| {own:e}, sqrt(len {len}) * eps * sum|terms| {s:e} = {order:e}) + flush = {bound:e}"
        ))
    }
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
    let accum = match tol {
        Tolerance::Accum(k) if dtype.is_float() => {
            let s = scale.ok_or_else(|| Fault::Scale(format!("{tol}: no sum(|terms|) or f64 reference for this output")))?;
            s.covers(n).map_err(|m| Fault::Scale(format!("{tol}: {m}")))?;
            Some((k, s))
        }
        _ => None,
    };
    let mut first: Option<Mismatch> = None;
    let mut count = 0;
    for i in 0..n {
        let (e, eb) = (expected.data().get_f64(i).unwrap_or(f64::NAN), expected.data().bits(i).unwrap_or_default());
        let (a, ab) = (data.get_f64(guard + i).unwrap_or(f64::NAN), data.bits(guard + i).unwrap_or_default());
        let verdict = match (tol, accum) {
            (Tolerance::Accum(k), Some((_, s))) => accum_within(k, dtype, s.len, s.magnitude[i], e, eb, s.exact[i], a, ab),
            (Tolerance::Accum(k), None) => accum_within(k, dtype, 0, 0.0, e, eb, f64::NAN, a, ab),
            _ => within(tol, dtype, e, eb, a, ab),
        };
        let Err(detail) = verdict else { continue };
        if !matches!(tol, Tolerance::Exact) && dtype.is_float() {
            // A flushed subnormal result, or agreement with the reference on flushed inputs.
            if is_subnormal(e, dtype) && a == 0.0 {
                continue;
            }
            if let Some(alt) = alt {
                let (fe, feb) = (alt.data().get_f64(i).unwrap_or(f64::NAN), alt.data().bits(i).unwrap_or_default());
                let ok = match accum {
                    // Anchored on the flushed reference's own f64 evaluation; without one, no
                    // allowance.
                    Some((k, s)) => {
                        s.flushed_exact.get(i).is_some_and(|fx| accum_within(k, dtype, s.len, s.magnitude[i], fe, feb, *fx, a, ab).is_ok())
                    }
                    None => within(tol, dtype, fe, feb, a, ab).is_ok(),
                };
                if ok || (is_subnormal(fe, dtype) && a == 0.0) {
                    continue;
                }
            }
        }
        count += 1;
        if first.is_none() {
            first = Some(Mismatch {
                index: i,
                expected: e,
                expected_bits: eb,
                actual: a,
                actual_bits: ab,
                detail,
                count: 0,
                unwritten: ab == canary,
            });
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
        crate::core::backend::pad_with_canaries(t, guard).unwrap()
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
        let a = crate::core::backend::pad_with_canaries(Tensor::vector(vec![f32::from_bits(0xA5A5_A5A5)]), 1).unwrap();
        match check_output(Tolerance::Exact, &e, None, &a, 1, None).unwrap_err() {
            Fault::Mismatch(m) => assert!(m.unwritten),
            f => panic!("{f:?}"),
        }
    }

    fn scale(len: usize, magnitude: f64, exact: f64) -> AccumScale {
        AccumScale { len, magnitude: vec![magnitude], exact: vec![exact], flushed_exact: vec![] }
    }

    #[test]
    fn accum_is_anchored_on_the_references_own_rounding() {
        let eps = f32::EPSILON as f64;
        // The reference is exact (r32 = r64 = 1): the bound is k * sqrt(len) * eps * S.
        let e = Tensor::vector(vec![1.0f32]);
        let a = 1.0f32 + 8.0 * f32::EPSILON; // 8 eps from the exact result
        assert!(check_output(Tolerance::Accum(2), &e, None, &guarded(&[a], 1), 1, Some(&scale(16, 1.0, 1.0))).is_ok(), "8 <= 2 * 4");
        let f = check_output(Tolerance::Accum(2), &e, None, &guarded(&[a], 1), 1, Some(&scale(15, 1.0, 1.0))).unwrap_err();
        match f {
            Fault::Mismatch(m) => assert!(m.detail.contains("accum(2)") && m.detail.contains("sqrt(len 15)"), "{}", m.detail),
            f => panic!("{f:?}"),
        }
        // The reference itself is 100 eps off the exact result (a sequential sum's bias): a
        // kernel as bad as it, or up to k times worse, conforms; one 3 times worse does not.
        let x = 1.0f64;
        let r32 = (x + 100.0 * eps) as f32;
        let e = Tensor::vector(vec![r32]);
        let s = scale(4, 1.0, x);
        for (err, ok) in [(100.0, true), (-150.0, true), (200.0, true), (300.0, false), (-300.0, false)] {
            let a = (x + err * eps) as f32;
            assert_eq!(check_output(Tolerance::Accum(2), &e, None, &guarded(&[a], 1), 1, Some(&s)).is_ok(), ok, "{err} eps");
        }
        // The reference's own bits always conform.
        assert!(check_output(Tolerance::Accum(1), &e, None, &guarded(&[r32], 1), 1, Some(&scale(1, 0.0, 0.0))).is_ok());
    }

    #[test]
    fn accum_handles_overflow_and_non_finite_values() {
        // The reference overflowed an intermediate (MAX + MAX - MAX = inf) but the exact sum is
        // MAX: a kernel that returns MAX conforms, one that returns 0 does not; one that
        // overflows too returns the reference's own value.
        let e = Tensor::vector(vec![f32::INFINITY]);
        let m = 3.0 * f32::MAX as f64;
        let s = scale(3, m, f32::MAX as f64);
        assert!(check_output(Tolerance::Accum(2), &e, None, &guarded(&[f32::MAX], 1), 1, Some(&s)).is_ok());
        assert!(check_output(Tolerance::Accum(2), &e, None, &guarded(&[f32::INFINITY], 1), 1, Some(&s)).is_ok());
        assert!(check_output(Tolerance::Accum(2), &e, None, &guarded(&[f32::NEG_INFINITY], 1), 1, Some(&s)).is_err());
        let s = scale(3, 1.0, f32::MAX as f64);
        assert!(check_output(Tolerance::Accum(2), &e, None, &guarded(&[0.0], 1), 1, Some(&s)).is_err());
        // An infinite exact result must be matched; NaN only matches the reference's NaN.
        let e = Tensor::vector(vec![f32::NAN]);
        let s = scale(2, f64::INFINITY, f64::INFINITY);
        assert!(check_output(Tolerance::Accum(2), &e, None, &guarded(&[f32::INFINITY], 1), 1, Some(&s)).is_ok());
        assert!(check_output(Tolerance::Accum(2), &e, None, &guarded(&[f32::NAN], 1), 1, Some(&s)).is_ok());
        assert!(check_output(Tolerance::Accum(2), &e, None, &guarded(&[1.0], 1), 1, Some(&s)).is_err());
        // A non-finite S with a finite f64 result accepts only the reference's bits.
        let e = Tensor::vector(vec![1.0f32]);
        let s = scale(2, f64::INFINITY, 1.0);
        assert!(check_output(Tolerance::Accum(2), &e, None, &guarded(&[1.0], 1), 1, Some(&s)).is_ok());
        assert!(check_output(Tolerance::Accum(2), &e, None, &guarded(&[1.5], 1), 1, Some(&s)).is_err());
    }

    #[test]
    fn a_missing_or_short_accum_scale_is_a_typed_error_never_an_accept_all() {
        let e = Tensor::vector(vec![1.0f32, 2.0]);
        let wrong = guarded(&[5.0, 7.0], 1);
        assert!(matches!(check_output(Tolerance::Accum(2), &e, None, &wrong, 1, None), Err(Fault::Scale(_))));
        for s in [
            AccumScale::default(),
            AccumScale { len: 2, magnitude: vec![1.0], exact: vec![1.0, 2.0], flushed_exact: vec![] },
            AccumScale { len: 2, magnitude: vec![1.0, 2.0], exact: vec![], flushed_exact: vec![] },
        ] {
            match check_output(Tolerance::Accum(2), &e, None, &wrong, 1, Some(&s)) {
                Err(Fault::Scale(m)) => assert!(m.contains("accum(2)"), "{m}"),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn accum_allows_flushed_subnormal_terms_but_nothing_more() {
        // Every term subnormal (S ~ 1e-38): FTZ may lose all of them.
        let tiny = 1e-39f32;
        let e = Tensor::vector(vec![4.0 * tiny]);
        let s = scale(4, 4.0 * tiny as f64, 4.0 * tiny as f64);
        assert!(check_output(Tolerance::Accum(2), &e, None, &guarded(&[0.0], 1), 1, Some(&s)).is_ok());
        // At an ordinary scale the flush term is invisible.
        let e = Tensor::vector(vec![1.0f32]);
        assert!(check_output(Tolerance::Accum(2), &e, None, &guarded(&[1.0001], 1), 1, Some(&scale(4, 1.0, 1.0))).is_err());
    }
}
