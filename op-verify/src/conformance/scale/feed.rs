//! How the f64 reference is fed: as it is, on absolute values, perturbed relatively (one group
//! of values, by sign patterns), or scaled by 2 or 1/2. Owns the feeds and running the
//! reference on them; it must not read scales from the results.

use super::super::run_shim;
use op_contract::contract::DType;
use op_contract::sample::Rng;
use op_core::op::RegisteredOp;
use op_core::tensor::{Scalar, Tensor};

/// How the f64 reference's inputs are fed (float elements and float parameters; integers
/// pass unchanged).
pub(super) enum Feed {
    /// As they are.
    Plain,
    /// Float inputs as their absolute values (parameters as they are).
    Abs,
    /// One group of values perturbed relatively (see [`Perturb`]).
    Perturbed(Perturb),
    /// Some float values scaled by `by` (2 or 1/2: exact in binary floating point but where a
    /// value overflows or leaves the subnormals; see `sensitivity::carries`).
    Scaled { by: f64, which: Scaling },
}

impl Feed {
    /// Element `j` (value `x`) of input `k`.
    fn input(&mut self, k: usize, j: usize, x: f64) -> f64 {
        match self {
            Feed::Plain => x,
            Feed::Abs => x.abs(),
            Feed::Perturbed(p) if p.group == Group::Input(k) => p.apply(j, x),
            Feed::Perturbed(_) => x,
            Feed::Scaled { by, which } if which.input(k) => *by * x,
            Feed::Scaled { .. } => x,
        }
    }

    /// Float parameter `j` (value `x`).
    fn param(&mut self, j: usize, x: f64) -> f64 {
        match self {
            Feed::Perturbed(p) if p.group == Group::Params => p.apply(j, x),
            Feed::Scaled { by, which } if !matches!(which, Scaling::Only(_)) => *by * x,
            _ => x,
        }
    }
}

/// Which float values a [`Feed::Scaled`] run scales.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Scaling {
    /// Input `k` alone.
    Only(usize),
    /// Every float input and the float parameters.
    All,
    /// Every float input but `k`, and the float parameters.
    AllBut(usize),
    /// The float parameters alone.
    Params,
}

impl Scaling {
    /// Whether float input `k` is scaled.
    fn input(self, k: usize) -> bool {
        match self {
            Scaling::Only(i) => i == k,
            Scaling::All => true,
            Scaling::AllBut(i) => i != k,
            Scaling::Params => false,
        }
    }

    /// The scaling of one group of `sensitivity::sensitivity`'s.
    pub(super) fn of(group: Group) -> Scaling {
        match group {
            Group::Input(k) => Scaling::Only(k),
            Group::Params => Scaling::Params,
        }
    }
}

/// Relative size `δ` of the perturbations that measure the reference's sensitivity: 2^-20,
/// far above the f64 reference's own rounding (about 1e-16, so the change measured is the
/// op's, not noise) and far below the curvature of ordinary ops (so it is their first-order
/// response).
pub(super) const DELTA: f64 = 1.0 / (1u64 << 20) as f64;
/// Mixed into the case's seed for the random sign patterns.
const SALT: u64 = 0x7365_6e73_6974_6976;

/// What one perturbation moves: one float input, or the float parameters together.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Group {
    Input(usize),
    Params,
}

/// Which values of a group one perturbation moves, and with which signs `s_j`.
#[derive(Clone, Copy, Debug)]
pub(super) enum Which {
    /// Value `j` alone, `s_j = +1`.
    One(usize),
    /// Every value, `s_j = +1`.
    AllUp,
    /// Every value, `s_j = -1` where bit `b` of `j` is set: any two values differ in some bit,
    /// so for every pair some pattern moves them in opposite directions.
    Bit(u32),
    /// Every value, `s_j` drawn from the case's seed and this pattern number.
    Random(u64),
    /// The values `j` of this parity (`j % 2`), `s_j = +1`.
    Parity(usize),
}

/// One perturbation of a case: value `j` of its group is moved by `sign * s_j * δ * m_j` where
/// [`Which`] moves it, `m_j` its own magnitude `|x_j|` (a relative perturbation), or `by[j]`
/// where given (the running values of `sensitivity::carry_sensitivity`). Zeros and non-finite values stay
/// as they are under a relative perturbation (it keeps every sign, so a domain such as `x > 0`
/// still holds).
pub(super) struct Perturb {
    pub(super) group: Group,
    pub(super) which: Which,
    pub(super) seed: u64,
    pub(super) sign: f64,
    pub(super) by: Option<Vec<f64>>,
}

impl Perturb {
    /// A relative perturbation.
    pub(super) fn new(group: Group, which: Which, seed: u64, sign: f64) -> Perturb {
        Perturb { group, which, seed, sign, by: None }
    }

    /// `s_j`, or `None` where value `j` is not moved.
    fn direction(&self, j: usize) -> Option<f64> {
        let down = match self.which {
            Which::One(i) if i != j => return None,
            Which::Parity(p) if j % 2 != p => return None,
            Which::One(_) | Which::AllUp | Which::Parity(_) => false,
            Which::Bit(b) => (j >> b) & 1 == 1,
            Which::Random(p) => {
                Rng::new(self.seed ^ SALT.wrapping_mul(p + 1) ^ (j as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)).next_u64() & 1 == 1
            }
        };
        Some(if down { -1.0 } else { 1.0 })
    }

    fn apply(&mut self, j: usize, x: f64) -> f64 {
        let m = match &self.by {
            Some(by) => by.get(j).copied().unwrap_or(0.0),
            None => x.abs(),
        };
        match self.direction(j) {
            Some(s) if x.is_finite() && m.is_finite() => x + self.sign * s * DELTA * m,
            _ => x,
        }
    }
}

fn to_f64_tensor(k: usize, t: &Tensor, feed: &mut Feed) -> Result<Tensor, String> {
    let v: Vec<f64> =
        t.data().to_f64_vec().ok_or("a float input has no f64 view")?.into_iter().enumerate().map(|(j, x)| feed.input(k, j, x)).collect();
    Tensor::new(t.shape().to_vec(), op_core::tensor::Data::F64(v)).map_err(|e| e.to_string())
}

/// The op's reference in f64 on `inputs` (floats widened and fed as `feed` says), each output
/// as f64 values.
pub(super) fn reference_f64(op: &RegisteredOp, inputs: &[Tensor], params: &[Scalar], feed: &mut Feed) -> Result<Vec<Vec<f64>>, String> {
    let shim = op.decl.reference_f64.ok_or("`accum` needs the reference in f64, and the reference is not float-generic (`<T: Real>`)")?;
    let widened = inputs
        .iter()
        .enumerate()
        .map(|(k, t)| if t.dtype().is_float() { to_f64_tensor(k, t, feed) } else { Ok(t.clone()) })
        .collect::<Result<Vec<Tensor>, String>>()?;
    let params: Vec<Scalar> = params
        .iter()
        .enumerate()
        .map(|(j, p)| match p {
            Scalar::F32(v) => Scalar::F64(feed.param(j, *v as f64)),
            Scalar::F64(v) => Scalar::F64(feed.param(j, *v)),
            other => *other,
        })
        .collect();
    let on = if matches!(feed, Feed::Abs) { " on the absolute values" } else { "" };
    let out = run_shim(op, shim, &widened, &params, Some(DType::f64)).map_err(|e| format!("the f64 reference failed{on}: {e}"))?;
    out.iter().map(|t| t.data().to_f64_vec().ok_or_else(|| "the f64 reference returned a non-numeric output".to_string())).collect()
}
