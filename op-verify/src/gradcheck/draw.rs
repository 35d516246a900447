//! The value draws of gradcheck, each from a magnitude range the op is meant for: the range its
//! contract declares for an input (`magnitude(x: 1e-3..30)`), else a default ladder, 1e-3..1e3
//! first and a decade narrower at each rung. A draw moves down the ladder where its forward
//! leaves the range of the op's widest float type (an output overflows it, or every output
//! underflows it) or where most derivatives drown in the outputs' rounding (a saturated
//! softmax, whose Jacobian is below what its outputs resolve). Owns the ladder and those
//! criteria; it must not probe or judge.

use super::case::{self, Binding};
use super::probe::{locate, Checker, RESOLVED};
use super::GradcheckError;
use op_contract::contract::{DType, Signature, TensorSig};
use op_contract::sample::{Magnitudes, Rng};
use op_core::tensor::Tensor;
use std::fmt;

/// The default ladder's largest magnitudes, widest first.
pub const LADDER: [f64; 4] = [1e3, 1e2, 1e1, 1.0];

/// The default ladder's smallest magnitude.
pub const LO: f64 = 1e-3;

/// Draws tried on a rung before the next: the first with an exact zero among the values, the
/// others without (a zero divisor makes a forward infinite). The last rung tries more.
const TRIES: usize = 3;
const LAST_TRIES: usize = 8;

/// Coordinates sampled to judge whether a draw's derivatives are resolved.
const SATURATION_SAMPLES: usize = 8;

/// Why a draw left a rung of the ladder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Narrowed {
    /// An output was not finite.
    NonFinite,
    /// An output overflowed the op's widest float type.
    Overflow,
    /// Every nonzero output underflowed it.
    Underflow,
    /// Most sampled derivatives were below the outputs' resolution.
    Unresolved,
}

impl fmt::Display for Narrowed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Narrowed::NonFinite => "the forward was not finite",
            Narrowed::Overflow => "an output overflowed the op's widest float type",
            Narrowed::Underflow => "every output underflowed the op's widest float type",
            Narrowed::Unresolved => "most derivatives were below the outputs' resolution",
        })
    }
}

/// The magnitudes one draw's values came from, for the inputs without a declared range.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DrawRange {
    /// Smallest magnitude.
    pub lo: f64,
    /// Largest magnitude.
    pub hi: f64,
    /// Why each wider rung was left, widest first (empty on the first rung).
    pub narrowed: Vec<Narrowed>,
}

/// One value case and the range its magnitudes were drawn from (`None`: the defaults).
pub type Draw = (Vec<Tensor>, Option<DrawRange>);

/// `n` independent draws of the values (same binding), each from the widest rung of the ladder
/// where the forward is finite, inside the widest float type's range, and resolved (see the
/// module docs), with the range it came from (`None` where every float input declares its
/// own). The checker's inputs are left at the last draw.
pub fn draws(ck: &mut Checker, b: &Binding, n: usize, rng: &mut Rng) -> Result<Vec<Draw>, GradcheckError> {
    let sig = &ck.op.contract.signature;
    let declared: Vec<Option<Magnitudes>> =
        sig.inputs().map(|t| ck.op.contract.magnitude_of(&t.name).map(|m| Magnitudes { lo: m.lo, hi: m.hi })).collect();
    let adjustable = sig.inputs().zip(&declared).any(|(t, d)| t.dtype.is_float() && d.is_none());
    let ladder: &[f64] = if adjustable { &LADDER } else { &LADDER[..1] };
    (0..n).map(|_| draw(ck, b, &declared, ladder, rng).map(|(x, r)| (x, Some(r).filter(|_| adjustable)))).collect()
}

fn draw(
    ck: &mut Checker,
    b: &Binding,
    declared: &[Option<Magnitudes>],
    ladder: &[f64],
    rng: &mut Rng,
) -> Result<(Vec<Tensor>, DrawRange), GradcheckError> {
    let mut narrowed = Vec::new();
    for (rung, &hi) in ladder.iter().enumerate() {
        let last = rung + 1 == ladder.len();
        let default = Magnitudes { lo: LO.min(hi), hi };
        let mags: Vec<Magnitudes> = declared.iter().map(|d| d.unwrap_or(default)).collect();
        let mut why = Narrowed::NonFinite;
        let mut flat = None;
        for t in 0..if last { LAST_TRIES } else { TRIES } {
            let Some(inputs) = case::tensors(&ck.op, b, &mags, t == 0, rng) else { continue };
            let outs = ck.forward(&inputs)?;
            match region(&ck.op.contract.signature, &outs) {
                Some(w) if w == Narrowed::NonFinite || !last => {
                    why = w;
                    continue;
                }
                _ => {}
            }
            ck.inputs = inputs;
            match response(ck, &outs, rng)? {
                Response::Flat => flat = Some(ck.inputs.clone()),
                Response::Saturated if !last => {
                    why = Narrowed::Unresolved;
                    break;
                }
                _ => return Ok((ck.inputs.clone(), DrawRange { lo: default.lo, hi, narrowed })),
            }
        }
        // A forward that responded to no sampled element on every try is flat here (`relu` of
        // negative values, or everywhere: the negative control then says the check cannot fail).
        if let Some(inputs) = flat {
            ck.inputs = inputs;
            return Ok((ck.inputs.clone(), DrawRange { lo: default.lo, hi, narrowed }));
        }
        narrowed.push(why);
    }
    let tried = match ladder {
        [_] => "the declared magnitudes".to_string(),
        _ => format!("magnitudes {LO:e}..{:e} down to {LO:e}..{:e}", ladder[0], ladder[ladder.len() - 1]),
    };
    Err(GradcheckError::NoFiniteInput { op: ck.op.id.clone(), tried: format!("{tried}, both signs, inside each declared domain") })
}

/// Where a draw's outputs leave the range of each output's widest float type, if they do.
fn region(sig: &Signature, outs: &[Tensor]) -> Option<Narrowed> {
    let (mut normal, mut tiny) = (false, false);
    for (o, t) in outs.iter().zip(&sig.outputs) {
        let Some(v) = o.as_slice::<f64>() else { continue };
        let (max, min_normal) = limits(widest(sig, t));
        for y in v {
            let a = y.abs();
            if !a.is_finite() {
                return Some(Narrowed::NonFinite);
            }
            if a > max {
                return Some(Narrowed::Overflow);
            }
            normal |= a >= min_normal;
            tiny |= a > 0.0 && a < min_normal;
        }
    }
    (tiny && !normal).then_some(Narrowed::Underflow)
}

/// The widest float type an output takes: its dtype variable's widest float member, else its
/// own dtype.
fn widest(sig: &Signature, t: &TensorSig) -> DType {
    let var = t.var.as_ref().and_then(|v| sig.dtype_vars.iter().find(|d| d.name == *v));
    var.and_then(|v| v.members.iter().copied().filter(|d| d.is_float()).max_by_key(|d| d.size())).unwrap_or(t.dtype)
}

/// The largest finite value and the smallest normal one of a float type.
fn limits(dt: DType) -> (f64, f64) {
    match dt {
        DType::f16 => (65504.0, 6.103515625e-5),
        DType::bf16 => (3.3895313892515355e38, f32::MIN_POSITIVE as f64),
        DType::f32 => (f32::MAX as f64, f32::MIN_POSITIVE as f64),
        _ => (f64::MAX, f64::MIN_POSITIVE),
    }
}

/// How a draw's forward responds to its elements, judged by the forward alone at
/// [`SATURATION_SAMPLES`] coordinates.
enum Response {
    /// Some sampled slope is nonzero, and most are resolved.
    Resolved,
    /// No sampled slope is nonzero: the forward does not respond here.
    Flat,
    /// More than a quarter of the sampled slopes are below the outputs' resolution (their
    /// rounding over [`RESOLVED`] times the slope). A coordinate the forward does not respond
    /// to, with nothing hidden in rounding (a `relu` below zero), is resolved: its derivative is
    /// zero.
    Saturated,
}

#[allow(clippy::neg_cmp_op_on_partial_ord)] // a NaN slope is not resolved
fn response(ck: &Checker, base: &[Tensor], rng: &mut Rng) -> Result<Response, GradcheckError> {
    let sizes = ck.sizes();
    let total: usize = sizes.iter().sum();
    let samples = SATURATION_SAMPLES.min(total);
    let u = ck.cotangent(&ck.out_shapes()?, rng);
    let (mut unresolved, mut moving) = (0, 0);
    for _ in 0..samples {
        let (k, j) = locate(&sizes, rng.index(total));
        let (slope, round) = ck.slope(k, j, &u, base)?;
        unresolved += !(round <= RESOLVED * slope.abs()) as usize;
        moving += (slope != 0.0) as usize;
    }
    Ok(if 4 * unresolved > samples {
        Response::Saturated
    } else if moving == 0 {
        Response::Flat
    } else {
        Response::Resolved
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use op_core::registry::Registry;

    #[test]
    fn a_draw_leaves_a_rung_where_outputs_leave_the_widest_type() {
        let exp = Registry::with_builtins().lookup("builtin/exp").expect("built-in").op();
        let mut sig = exp.contract.signature.clone();
        let out = |v: Vec<f64>| vec![Tensor::from_vec(vec![v.len()], v).expect("a vector")];
        // `exp` serves f64 too: 1e300 is inside its widest type, infinity is not finite.
        assert_eq!(widest(&sig, &sig.outputs[0]), DType::f64);
        assert_eq!(region(&sig, &out(vec![1e300, 1.0])), None);
        assert_eq!(region(&sig, &out(vec![f64::INFINITY, 1.0])), Some(Narrowed::NonFinite));
        assert_eq!(region(&sig, &out(vec![1e-310, 0.0])), Some(Narrowed::Underflow));
        // Exact zeros alone are a flat region, not an underflow.
        assert_eq!(region(&sig, &out(vec![0.0, 0.0])), None);
        // An f32-only output overflows above f32::MAX, and underflows below its normals.
        sig.outputs[0].var = None;
        sig.outputs[0].dtype = DType::f32;
        assert_eq!(region(&sig, &out(vec![1e39, 1.0])), Some(Narrowed::Overflow));
        assert_eq!(region(&sig, &out(vec![1e-40, 1e-39])), Some(Narrowed::Underflow));
        assert_eq!(region(&sig, &out(vec![1e-40, 1.0])), None);
    }
}
