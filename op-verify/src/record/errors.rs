//! The error of a kernel against the reference on every case of the op's corpus, for the
//! report's error plot: per case, the largest distance in ulps and the largest relative error
//! over the elements of every output where both are finite, and how many elements differ where
//! one is not finite. The reference is run at the op's dtype: an `accum` op is judged against
//! the f64 reference, so a conforming kernel can differ from it (an order of summation that
//! gives inf where the reference's gives NaN). Measures only; the verdict stays `conform`'s.

use crate::conformance::corpus;
use op_core::kind::BackendKind;
use op_core::registry::dispatch::CallOptions;
use op_core::registry::OpHandle;
use op_core::tensor::Tensor;
use serde::{Deserialize, Serialize};

/// Most cases measured per backend (the corpus in order: the smallest cases first).
pub const MAX_ERROR_CASES: usize = 256;

/// The error of one case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorPoint {
    /// Position in the corpus.
    pub case: usize,
    /// The case's family (`smallest`, `random`, `large`, ...).
    pub family: String,
    /// Input elements in the case.
    pub size: usize,
    /// Largest distance between kernel and reference in units in the last place over the
    /// elements where both are finite (for integer outputs, the difference); infinite where the
    /// kernel failed or returned another shape.
    #[serde(with = "op_core::nonfinite")]
    pub ulp: f64,
    /// Largest `|kernel - reference| / |reference|` over the same elements (infinite where the
    /// reference is 0 and the kernel not).
    #[serde(with = "op_core::nonfinite")]
    pub rel: f64,
    /// Elements where the two differ and one of them is infinite or NaN.
    #[serde(default)]
    pub nonfinite: usize,
}

/// The error over one output, or over all of a case's outputs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Error {
    ulp: f64,
    rel: f64,
    nonfinite: usize,
}

impl Error {
    const FAILED: Error = Error { ulp: f64::INFINITY, rel: f64::INFINITY, nonfinite: 0 };

    fn max(self, o: Error) -> Error {
        Error { ulp: max_nan_inf(self.ulp, o.ulp), rel: max_nan_inf(self.rel, o.rel), nonfinite: self.nonfinite + o.nonfinite }
    }
}

/// The error of `kind`'s kernel on each case of `handle`'s corpus (the first
/// [`MAX_ERROR_CASES`]); empty where the backend cannot run the op here.
pub fn measure(handle: &OpHandle, kind: BackendKind) -> Vec<ErrorPoint> {
    let op = handle.op();
    let mut out = Vec::new();
    for case in corpus(&op).cases.iter().take(MAX_ERROR_CASES) {
        let refs: Vec<&Tensor> = case.inputs.iter().collect();
        let Ok(expected) = handle.call_with(&refs, &case.params, CallOptions::on(BackendKind::Reference)) else { continue };
        let e = match handle.call_with(&refs, &case.params, CallOptions::on(kind)) {
            Ok(actual) if actual.outputs.len() == expected.outputs.len() => {
                expected.outputs.iter().zip(&actual.outputs).map(|(e, a)| output_error(e, a)).fold(Error::default(), Error::max)
            }
            _ => Error::FAILED,
        };
        out.push(ErrorPoint {
            case: case.index,
            family: case.family.to_string(),
            size: case.size(),
            ulp: e.ulp,
            rel: e.rel,
            nonfinite: e.nonfinite,
        });
    }
    out
}

/// The larger of two errors, a NaN counting as infinite.
fn max_nan_inf(a: f64, b: f64) -> f64 {
    let f = |x: f64| if x.is_nan() { f64::INFINITY } else { x };
    f(a).max(f(b))
}

/// The error between two outputs; [`Error::FAILED`] where their shapes or dtypes differ or an
/// output cannot be read on the host.
fn output_error(expected: &Tensor, actual: &Tensor) -> Error {
    let (Ok(e), Ok(a)) = (expected.to_host(), actual.to_host()) else { return Error::FAILED };
    if e.shape() != a.shape() || e.dtype() != a.dtype() {
        return Error::FAILED;
    }
    let (ed, ad) = (e.data(), a.data());
    let (float, width) = (e.dtype().is_float(), (e.dtype().size() * 8) as u32);
    let mut worst = Error::default();
    for i in 0..e.numel() {
        let (Some(eb), Some(ab), Some(ev), Some(av)) = (ed.bits(i), ad.bits(i), ed.get_f64(i), ad.get_f64(i)) else { return Error::FAILED };
        if eb == ab {
            continue;
        }
        if !(ev.is_finite() && av.is_finite()) {
            worst.nonfinite += usize::from(!(ev.is_nan() && av.is_nan()));
            continue;
        }
        let ulp = if float { ulp_distance(eb, ab, width, ev, av) } else { (ev - av).abs() };
        worst = worst.max(Error { ulp, rel: relative(ev, av), nonfinite: 0 });
    }
    worst
}

/// Distance in ulps between two floats of `width` bits given by their bits: 0 for identical
/// bits (and for two NaNs), infinite for NaN against a number, otherwise the number of
/// representable values between them (+0 and -0 are one apart).
pub fn ulp_distance(expected: u64, actual: u64, width: u32, ev: f64, av: f64) -> f64 {
    if expected == actual || (ev.is_nan() && av.is_nan()) {
        return 0.0;
    }
    if ev.is_nan() || av.is_nan() {
        return f64::INFINITY;
    }
    let sign = 1u64 << (width - 1);
    // Maps the bits onto a line where adjacent floats are adjacent integers (-0 just below +0).
    let key = |b: u64| -> i128 {
        if b & sign != 0 {
            -((b & (sign - 1)) as i128) - 1
        } else {
            b as i128
        }
    };
    (key(expected) - key(actual)).unsigned_abs() as f64
}

/// `|actual - expected| / |expected|`: 0 where they are equal (infinities included).
fn relative(expected: f64, actual: f64) -> f64 {
    if expected == actual || (expected.is_nan() && actual.is_nan()) {
        return 0.0;
    }
    (actual - expected).abs() / expected.abs()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d32(a: f32, b: f32) -> f64 {
        ulp_distance(a.to_bits() as u64, b.to_bits() as u64, 32, a as f64, b as f64)
    }

    #[test]
    fn ulp_distances_count_representable_values() {
        assert_eq!(d32(1.0, 1.0), 0.0);
        assert_eq!(d32(1.0, f32::from_bits(1.0f32.to_bits() + 1)), 1.0);
        assert_eq!(d32(1.0, f32::from_bits(1.0f32.to_bits() + 7)), 7.0);
        assert_eq!(d32(0.0, -0.0), 1.0);
        assert_eq!(d32(f32::from_bits(1), -f32::from_bits(1)), 3.0);
        assert_eq!(d32(f32::NAN, 1.0), f64::INFINITY);
        assert_eq!(d32(f32::NAN, f32::NAN), 0.0);
        assert_eq!(d32(-1.0, 1.0), d32(1.0, -1.0));
        let (a, b) = (1.0f64, f64::from_bits(1.0f64.to_bits() + 3));
        assert_eq!(ulp_distance(a.to_bits(), b.to_bits(), 64, a, b), 3.0);
    }

    #[test]
    fn relative_errors_are_zero_only_where_values_agree() {
        assert_eq!(relative(2.0, 2.0), 0.0);
        assert_eq!(relative(f64::INFINITY, f64::INFINITY), 0.0);
        assert_eq!(relative(2.0, 3.0), 0.5);
        assert_eq!(relative(0.0, 1.0), f64::INFINITY);
    }

    #[test]
    fn output_errors_count_ulps_failures_and_nonfinite_agreement() {
        let e = Tensor::vector(vec![1.0f32, 2.0]);
        let a = Tensor::vector(vec![1.0f32, f32::from_bits(2.0f32.to_bits() + 5)]);
        assert_eq!(output_error(&e, &a).ulp, 5.0);
        assert_eq!(output_error(&e, &Tensor::vector(vec![1.0f32])), Error::FAILED);
        let inf = Tensor::vector(vec![1.0f32, f32::INFINITY]);
        assert_eq!(output_error(&e, &inf), Error { ulp: 0.0, rel: 0.0, nonfinite: 1 });
    }
}
