//! One probe of gradcheck: a direction, a cotangent, the forward evaluated around the point,
//! the central difference with its truncation and rounding estimates, and the declared
//! backward's value along the direction. Owns the measurement and the kink test of ordinary
//! probes; it must not decide a verdict (the parent module) or construct kinks (`kinks`).

use super::GradcheckError;
use crate::core::op::RegisteredOp;
use crate::core::tensor::{Scalar, Tensor};
use crate::train::tape::{exec, Mode, Tape};
use op_contract::sample::Rng;

/// The step of a coordinate whose value is `x`, in units of `h`: relative below `|x| = 1` (so
/// a value of 1e-3 is not stepped across zero, nor out of a domain like `x > 0`), absolute
/// above (so `exp(x + h)` at `x` = 700 stays accurate), never below `1e-3 h`.
pub(crate) fn step_scale(x: f64) -> f64 {
    x.abs().clamp(1e-3, 1.0)
}

/// A probe direction over the differentiable inputs: one coordinate, or a dense vector.
#[derive(Clone, Debug)]
pub(crate) struct Dir {
    /// One vector per differentiable input.
    pub v: Vec<Vec<f64>>,
    /// `(k, j)` for a coordinate probe (element `j` of differentiable input `k`).
    pub coord: Option<(usize, usize)>,
    /// The step `t = 1` stands for (`h` times the step scale of the coordinate, or `h` for a
    /// dense direction, whose entries are scaled per element instead).
    pub step: f64,
}

impl Dir {
    /// The direction routed one element over (`v'[i] = v[i - 1]`), so `<g, v'> = sum g[i+1] v[i]`.
    pub fn shifted(&self) -> Dir {
        let v = self
            .v
            .iter()
            .map(|x| {
                let n = x.len();
                (0..n).map(|i| x[(i + n - 1) % n.max(1)]).collect()
            })
            .collect();
        Dir { v, coord: None, step: self.step }
    }

    /// `<g, v>`.
    pub fn dot(&self, g: &[Vec<f64>]) -> f64 {
        self.v.iter().zip(g).map(|(v, g)| v.iter().zip(g).map(|(a, b)| a * b).sum::<f64>()).sum()
    }
}

/// One probe's finite-difference measurements.
#[derive(Clone, Debug)]
pub(crate) struct Probe {
    /// Where it looked: `input[index]`, or `direction` for dense probes.
    pub at: (usize, Option<usize>),
    pub numeric: f64,
    pub trunc: f64,
    pub round: f64,
    /// Backward value along the direction, and with the backward routed one element over.
    pub analytic: f64,
    pub neighbour: f64,
    /// JVP value where VJP and JVP are both declared.
    pub jvp: Option<f64>,
}

/// What the rounding of one probed sum depends on: see [`super::declared_bound`].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Rounding {
    /// `A`: sum of |u| max(|f(x + t v)|, |f(x)|) over changed outputs.
    pub own: f64,
    /// `B`: sum of |u (f(x + t v) - f(x))|.
    pub diff: f64,
    /// `c`: outputs that changed.
    pub changed: usize,
    /// Sum of |u| |f(x)| over outputs that did not change: what a step that moves nothing
    /// (a saturated `tanh`, say) can still hide below the outputs' resolution.
    pub still: f64,
}

impl Rounding {
    fn max(self, o: Rounding) -> Rounding {
        Rounding {
            own: self.own.max(o.own),
            diff: self.diff.max(o.diff),
            changed: self.changed.max(o.changed),
            still: self.still.max(o.still),
        }
    }
}

pub(crate) enum Measured {
    Checked(Probe),
    Kink,
    NonFinite,
}

/// The op at one point, with everything a probe needs.
pub(crate) struct Checker {
    pub op: RegisteredOp,
    pub inputs: Vec<Tensor>,
    pub params: Vec<Scalar>,
    pub diff: Vec<usize>,
    pub rel: f64,
    pub atol: f64,
    pub h: f64,
    /// The largest input's length: the longest accumulation a reference can round over.
    pub len: usize,
    pub graph: Option<Tape>,
    pub has_vjp: bool,
    pub has_jvp: bool,
}

impl Checker {
    fn shim_err(&self) -> impl Fn(String) -> GradcheckError + '_ {
        move |message| GradcheckError::Shim { op: self.op.id.clone(), message }
    }

    pub fn forward(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>, GradcheckError> {
        let refs: Vec<&Tensor> = inputs.iter().collect();
        exec::forward_f64(&self.op, &refs, &self.params).map_err(self.shim_err())
    }

    /// The value of element `j` of differentiable input `k`.
    pub fn value(&self, k: usize, j: usize) -> Option<f64> {
        self.inputs[self.diff[k]].as_slice::<f64>().and_then(|s| s.get(j).copied())
    }

    /// `<u, f(x + t v) - f(x)>` (with `base = f(x)`), and its rounding budget `(A, B, c)`: see
    /// [`super::declared_bound`]. Taking the difference per output before summing means
    /// outputs the step does not reach cancel exactly, whatever their size or number.
    /// Coordinate probes move one element by exactly `t`.
    pub fn s_at(&self, dir: &Dir, t: f64, u: &[Option<Vec<f64>>], base: &[Tensor]) -> Result<(f64, Rounding), GradcheckError> {
        let mut ins = self.inputs.clone();
        match dir.coord {
            Some((k, j)) => {
                if let Some(x) = ins[self.diff[k]].as_mut_slice::<f64>().and_then(|x| x.get_mut(j)) {
                    *x += t;
                }
            }
            None => {
                for (k, v) in dir.v.iter().enumerate() {
                    if let Some(x) = ins[self.diff[k]].as_mut_slice::<f64>() {
                        x.iter_mut().zip(v).for_each(|(x, v)| *x += t * v);
                    }
                }
            }
        }
        let outs = self.forward(&ins)?;
        let mut s = 0.0;
        let mut r = Rounding::default();
        for ((o, u), b) in outs.iter().zip(u).zip(base) {
            if let (Some(u), Some(v), Some(b)) = (u, o.as_slice::<f64>(), b.as_slice::<f64>()) {
                for ((u, y), y0) in u.iter().zip(v).zip(b) {
                    if y == y0 {
                        r.still += u.abs() * y.abs();
                        continue;
                    }
                    let d = u * (y - y0);
                    s += d;
                    r.own += u.abs() * y.abs().max(y0.abs());
                    r.diff += d.abs();
                    r.changed += 1;
                }
            }
        }
        Ok((s, r))
    }

    /// How well a coordinate probe of element `j` of differentiable input `k` can see the
    /// backward: the slope `<u, f(x + step e) - f(x)> / step` over its rounding estimate
    /// (infinite where rounding is nil, 0 where the forward does not respond).
    fn signal(&self, k: usize, j: usize, u: &[Option<Vec<f64>>], base: &[Tensor]) -> Result<f64, GradcheckError> {
        let step = self.h * step_scale(self.value(k, j).unwrap_or(1.0));
        let dir = Dir { v: Vec::new(), coord: Some((k, j)), step };
        let (s, r) = self.s_at(&dir, step, u, base)?;
        let slope = (s / step).abs();
        if slope == 0.0 || !slope.is_finite() {
            return Ok(0.0);
        }
        Ok(slope / self.round(r, step, false, slope).max(f64::MIN_POSITIVE))
    }

    fn cotangents(&self, u: &[Option<Vec<f64>>]) -> Result<Vec<Tensor>, GradcheckError> {
        let outs = &self.op.contract.signature.outputs;
        let shapes = self.out_shapes()?;
        outs.iter()
            .zip(u)
            .zip(shapes)
            .map(|((o, u), shape)| match u {
                Some(u) => Tensor::from_vec(shape, u.clone()),
                None => Tensor::zeros(o.dtype, shape),
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| GradcheckError::Shim { op: self.op.id.clone(), message: e.to_string() })
    }

    pub fn out_shapes(&self) -> Result<Vec<Vec<usize>>, GradcheckError> {
        let refs: Vec<&Tensor> = self.inputs.iter().collect();
        let params = exec::convert_params(&self.op, &self.params, Mode::ReferenceF64);
        Ok(exec::bind(&self.op, &refs, &params, Mode::ReferenceF64)
            .map_err(self.shim_err())?
            .out_shapes
            .iter()
            .map(|s| s.to_vec())
            .collect())
    }

    /// The backward's J^T u: one flat f64 vector per differentiable input.
    pub fn vjp(&self, u: &[Option<Vec<f64>>]) -> Result<Vec<Vec<f64>>, GradcheckError> {
        let cots = self.cotangents(u)?;
        let refs: Vec<&Tensor> = self.inputs.iter().collect();
        let gs = match &self.graph {
            Some(g) => g.graph_vjp(&self.op, &refs, cots)?.0,
            None => {
                let crefs: Vec<&Tensor> = cots.iter().collect();
                exec::vjp(&self.op, &refs, &self.params, &crefs, Mode::ReferenceF64).map_err(self.shim_err())?
            }
        };
        gs.iter()
            .map(|g| {
                g.data().to_f64_vec().ok_or_else(|| GradcheckError::Shim {
                    op: self.op.id.clone(),
                    message: format!("the backward returned a `{}` gradient", g.dtype()),
                })
            })
            .collect()
    }

    /// The JVP's <u, J v>: the sum over differentiable inputs of each rule's tangent.
    pub fn jvp(&self, dir: &Dir, u: &[Option<Vec<f64>>]) -> Result<f64, GradcheckError> {
        let refs: Vec<&Tensor> = self.inputs.iter().collect();
        let mut s = 0.0;
        for (k, v) in dir.v.iter().enumerate() {
            if v.iter().all(|x| *x == 0.0) {
                continue;
            }
            let x = &self.inputs[self.diff[k]];
            let tangent = Tensor::from_vec(x.shape().to_vec(), v.clone())
                .map_err(|e| GradcheckError::Shim { op: self.op.id.clone(), message: e.to_string() })?;
            let outs = exec::jvp(&self.op, k, &refs, &self.params, &tangent, Mode::ReferenceF64).map_err(self.shim_err())?;
            for (o, u) in outs.iter().zip(u) {
                if let (Some(u), Some(v)) = (u, o.as_slice::<f64>()) {
                    s += u.iter().zip(v).map(|(a, b)| a * b).sum::<f64>();
                }
            }
        }
        Ok(s)
    }

    /// The declared backward along `dir`: `<J^T u, v>` from the VJP, else `<u, J v>`.
    pub fn rule_along(&self, dir: &Dir, u: &[Option<Vec<f64>>]) -> Result<f64, GradcheckError> {
        if self.has_vjp {
            Ok(dir.dot(&self.vjp(u)?))
        } else {
            self.jvp(dir, u)
        }
    }

    /// The bound on `|analytic - numeric|` at a probe (see [`super::declared_bound`]).
    pub fn allowed(&self, p: &Probe, analytic: f64) -> f64 {
        self.atol + self.rel * p.numeric.abs().max(analytic.abs()) + p.trunc + p.round
    }

    /// The rounding estimate of a difference quotient over `step` with budget `r`, plus (for a
    /// dense direction) the rounding of `x + t v` propagated through a slope of order `slope`.
    pub fn round(&self, r: Rounding, step: f64, dense: bool, slope: f64) -> f64 {
        let mut round = 4.0 * f64::EPSILON * (((self.len as f64).sqrt() + 8.0) * r.own + (r.changed as f64 + 8.0) * r.diff) / step;
        if r.changed == 0 {
            // No output moved at any step: the slope is only known to be below the outputs'
            // resolution (an unchanged output hides up to an ulp of itself).
            round += 4.0 * f64::EPSILON * r.still / step;
        }
        if dense {
            // Rounding of x + t v in every element (independent, at most eps |x_i| each): a
            // random walk, so the l2 norm of x.
            let xnorm: f64 = self
                .diff
                .iter()
                .filter_map(|&p| self.inputs[p].as_slice::<f64>())
                .flat_map(|x| x.iter())
                .map(|x| x * x)
                .sum::<f64>()
                .sqrt();
            round += 4.0 * f64::EPSILON * xnorm * slope.abs().max(1.0) / step;
        }
        round
    }

    /// A random cotangent: uniform in [-1, 1] for float outputs, none for the others.
    pub fn cotangent(&self, out_shapes: &[Vec<usize>], rng: &mut Rng) -> Vec<Option<Vec<f64>>> {
        let sig = &self.op.contract.signature;
        out_shapes
            .iter()
            .zip(&sig.outputs)
            .map(|(s, o)| o.dtype.is_float().then(|| (0..s.iter().product::<usize>()).map(|_| rng.uniform(-1.0, 1.0)).collect()))
            .collect()
    }

    /// A probe direction: three in four a coordinate whose difference the rounding does not
    /// drown (up to 8 tries for one whose slope is at least [`SIGNAL`] times its rounding
    /// estimate, else the best seen; judged by the forward alone, never by the backward under
    /// test, so sparse gradients and long sums do not make probes vacuous), one in four a dense
    /// random vector (every element at once, so sparse gradients cannot hide), each entry scaled
    /// by its element's step scale.
    pub fn direction(
        &self,
        p: usize,
        sizes: &[usize],
        u: &[Option<Vec<f64>>],
        base: &[Tensor],
        rng: &mut Rng,
    ) -> Result<Dir, GradcheckError> {
        let total: usize = sizes.iter().sum();
        if p % 4 == 3 {
            let v = sizes
                .iter()
                .enumerate()
                .map(|(k, &n)| (0..n).map(|j| rng.uniform(-1.0, 1.0) * step_scale(self.value(k, j).unwrap_or(1.0))).collect())
                .collect();
            return Ok(Dir { v, coord: None, step: self.h });
        }
        let mut best = ((0, 0), -1.0f64);
        for _ in 0..8 {
            let mut pick = rng.index(total);
            let mut k = 0;
            while pick >= sizes[k] {
                pick -= sizes[k];
                k += 1;
            }
            let signal = self.signal(k, pick, u, base)?;
            if signal > best.1 {
                best = ((k, pick), signal);
            }
            if signal >= SIGNAL {
                break;
            }
        }
        let (k, pick) = best.0;
        let v = sizes.iter().enumerate().map(|(q, &n)| (0..n).map(|i| if q == k && i == pick { 1.0 } else { 0.0 }).collect()).collect();
        let step = self.h * step_scale(self.value(k, pick).unwrap_or(1.0));
        Ok(Dir { v, coord: Some((k, pick)), step })
    }
}

/// How far above its rounding estimate a coordinate probe's slope should be: a probe within a
/// few times its rounding accepts a backward off by as much, so it would certify little.
pub(crate) const SIGNAL: f64 = 1e3;

/// The realised steps `t` (`-3 .. 3` steps), `<u, f(x + t v) - f(x)>` at each, and their
/// rounding budget.
pub(crate) type Samples = ([f64; 7], [f64; 7], Rounding);

/// `<u, f(x + t v)>` at `t` in `{-3, ..., 3} * dir.step`, as realised steps and values
/// (`s(0) = 0` exactly), with their rounding budget; `None` where the forward is not finite.
pub(crate) fn samples(ck: &Checker, dir: &Dir, u: &[Option<Vec<f64>>], base: &[Tensor]) -> Result<Option<Samples>, GradcheckError> {
    let x0 = dir.coord.and_then(|(k, j)| ck.value(k, j));
    let mut d = [0.0f64; 7];
    let mut s = [0.0f64; 7];
    let mut r = Rounding::default();
    for (i, m) in (-3i32..=3).enumerate() {
        let t = m as f64 * dir.step;
        // A coordinate probe uses the realised step (x0 + t is rounded); a dense one the nominal.
        d[i] = match x0 {
            Some(x0) => (x0 + t) - x0,
            None => t,
        };
        if m == 0 {
            continue;
        }
        let (v, ri) = ck.s_at(dir, d[i], u, base)?;
        s[i] = v;
        r = r.max(ri);
    }
    Ok(s.iter().all(|v| v.is_finite()).then_some((d, s, r)))
}

/// Measures one probe: seven evaluations of `<u, f(x + t v)>`, `t` in `{0, +-1, +-2, +-3}`
/// steps.
#[allow(clippy::neg_cmp_op_on_partial_ord)] // a NaN must count as a kink, not pass
pub(crate) fn measure(ck: &Checker, dir: &Dir, u: &[Option<Vec<f64>>], base: &[Tensor]) -> Result<Measured, GradcheckError> {
    let Some((d, s, r)) = samples(ck, dir, u, base)? else { return Ok(Measured::NonFinite) };
    let slope = |a: usize, b: usize| (s[b] - s[a]) / (d[b] - d[a]);
    let (fwd, bwd) = (slope(3, 4), slope(2, 3));
    let d1 = slope(2, 4);
    let d2 = slope(1, 5);
    let round = ck.round(r, dir.step, dir.coord.is_none(), d1);
    // Second differences (about h s'' for a smooth s): c0 across [-h, h], cl and cr just
    // outside it on either side. A kink within h shows as one-sided differences (c0 = fwd - bwd)
    // that disagree beyond what the curvature on either side explains. Either test skips:
    // (a) |c0| beyond twice the smaller outer curvature: a kink in [h, 3h] on one side cannot
    //     excuse one inside [-h, h];
    // (b) c0 unlike both cl and cr beyond what s''' explains (|cr - cl|): catches kinks so dense
    //     that they mimic curvature on both sides.
    let c0 = fwd - bwd;
    let cl = slope(1, 2) - slope(0, 1);
    let cr = slope(5, 6) - slope(4, 5);
    let base_tol = ck.atol + ck.rel * fwd.abs().max(bwd.abs()) + 2.0 * round;
    let kink_a = !(c0.abs() <= base_tol + 2.0 * cl.abs().min(cr.abs()));
    let kink_b = !((c0 - cl).abs().min((c0 - cr).abs()) <= base_tol + (cr - cl).abs());
    if kink_a || kink_b {
        return Ok(Measured::Kink);
    }
    let (analytic, neighbour, jvp) = if ck.has_vjp {
        let g = ck.vjp(u)?;
        let jv = if ck.has_jvp { Some(ck.jvp(dir, u)?) } else { None };
        (dir.dot(&g), dir.shifted().dot(&g), jv)
    } else {
        (ck.jvp(dir, u)?, ck.jvp(&dir.shifted(), u)?, None)
    };
    let at = match dir.coord {
        Some((k, j)) => (k, Some(j)),
        None => (0, None),
    };
    Ok(Measured::Checked(Probe { at, numeric: d1, trunc: (d2 - d1).abs(), round, analytic, neighbour, jvp }))
}
