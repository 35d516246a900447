//! The `accum` scale of a case: the reference in f64 and the error scale every output element
//! is bounded by, and the reduction length that enters the bound. Owns how the scale is
//! derived from the reference; it must not compare outputs (that is `compare`) or run kernels.

mod feed;
mod homogeneity;
mod length;
mod sensitivity;
mod terms;

use super::{AccumScale, Case};
use feed::{reference_f64, Feed, Scaling};
use homogeneity::doubles_with;
pub use length::{output_reduction_len, reduction_len};
use op_core::op::RegisteredOp;
use op_core::tensor::Tensor;
use sensitivity::{carry_sensitivity, sensitivity};
use terms::terms_of;

/// A zero for every element of every output of `plain`.
fn zeros_like(plain: &[Vec<f64>]) -> Vec<Vec<f64>> {
    filled_like(plain, 0.0)
}

/// `v` for every element of every output of `plain`.
fn filled_like<T: Clone>(plain: &[Vec<f64>], v: T) -> Vec<Vec<T>> {
    plain.iter().map(|p| vec![v.clone(); p.len()]).collect()
}

/// The `accum` scale of every output: `r64` (the reference in f64) and `S`, each one value per
/// element of the reference's output. `S` is the largest of what the computation itself shows
/// about the size of its rounding errors:
/// - `|r64|`: a result is rounded at its own magnitude;
/// - the reference in f64 on the absolute values of the inputs: the sum of |terms| for sums
///   and products (`sum |a_ip b_pj|` for matmul), exactly their condition number;
/// - the measured sensitivity (`sensitivity`): how far the f64 reference moves per unit of
///   relative perturbation of an input or of the float parameters. A backward-stable kernel (one
///   whose result is the exact one of inputs moved by a few eps, relatively: every pairwise or
///   sequential sum, `exp(x - max)`, a running value clipped each step) is off by at most a
///   few eps times this. It is what the first two miss where the computation cancels or is
///   clipped: a running value clipped to `[lo, hi]` after large terms of both signs, a
///   softmax of large inputs, `sum(x) - sum(y)`; there the op on `|x|` is far smaller than the
///   magnitudes inside the computation.
///
/// With the measurement, also `C`, the running-value scale of an output shaped like an input
/// (`carry_sensitivity`; the carry allowance of `compare`), and the terms' magnitudes `T` that
/// `compare`'s overflow rule splits (`terms_of`; see [`AccumScale::terms`]).
///
/// `flushed` are the inputs with subnormals flushed, if the case has any (their f64 result
/// anchors the flushed-input allowance). A failure is an error (a typed
/// [`ConformanceFailure::Scale`](super::ConformanceFailure::Scale)), never a default. Integer
/// outputs need no scale (they compare bit for bit).
pub fn accum_scales(op: &RegisteredOp, case: &Case, expected: &[Tensor], flushed: Option<&[Tensor]>) -> Result<Vec<AccumScale>, String> {
    scales(op, case, expected, flushed, true)
}

/// [`accum_scales`] without the measured sensitivity: `S` from `|r64|` and the op on `|x|`
/// only, which is never larger. A case that conforms under it conforms under the full scale,
/// so conformance measures the sensitivity only for a case that fails under this one (the
/// measurement runs the f64 reference four more times per float input).
pub(super) fn accum_scales_unmeasured(
    op: &RegisteredOp,
    case: &Case,
    expected: &[Tensor],
    flushed: Option<&[Tensor]>,
) -> Result<Vec<AccumScale>, String> {
    scales(op, case, expected, flushed, false)
}

fn scales(
    op: &RegisteredOp,
    case: &Case,
    expected: &[Tensor],
    flushed: Option<&[Tensor]>,
    measure: bool,
) -> Result<Vec<AccumScale>, String> {
    let len = |i: usize| output_reduction_len(op, case, i);
    if !expected.iter().any(|e| e.dtype().is_float()) {
        return Ok(expected.iter().enumerate().map(|(i, _)| AccumScale { len: len(i), ..AccumScale::default() }).collect());
    }
    let abs = reference_f64(op, &case.inputs, &case.params, &mut Feed::Abs)?;
    let plain = reference_f64(op, &case.inputs, &case.params, &mut Feed::Plain)?;
    // The flushed-input allowance is optional: without its anchor, it is not granted.
    let flushed = flushed.and_then(|f| reference_f64(op, f, &case.params, &mut Feed::Plain).ok());
    if abs.len() != expected.len() || plain.len() != expected.len() {
        return Err(format!("the f64 reference returned {} and {} output(s), the reference {}", abs.len(), plain.len(), expected.len()));
    }
    let (sens, each) = if measure { sensitivity(op, case, &plain) } else { (zeros_like(&plain), Vec::new()) };
    let carry = if measure {
        carry_sensitivity(op, case, &plain, expected, &doubles_with(op, case, &plain, Scaling::All, false))
    } else {
        zeros_like(&plain)
    };
    let base: Vec<Vec<f64>> = abs.iter().zip(&plain).map(|(a, p)| a.iter().zip(p).map(|(x, y)| x.abs().max(y.abs())).collect()).collect();
    let terms = if measure { terms_of(op, case, &plain, base, &each) } else { base };
    expected
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let (a, p, m) = (&abs[i], &plain[i], &sens[i]);
            if a.len() != e.numel() || p.len() != e.numel() {
                return Err(format!(
                    "output {i}: the f64 reference returned {} and {} element(s), the reference {}",
                    a.len(),
                    p.len(),
                    e.numel()
                ));
            }
            let flushed_exact = flushed.as_ref().and_then(|f| f.get(i)).filter(|f| f.len() == e.numel()).cloned().unwrap_or_default();
            let magnitude = a.iter().zip(p).zip(m).map(|((x, y), z)| x.abs().max(y.abs()).max(*z)).collect();
            Ok(AccumScale { len: len(i), magnitude, terms: terms[i].clone(), exact: p.clone(), flushed_exact, carry: carry[i].clone() })
        })
        .collect()
}
