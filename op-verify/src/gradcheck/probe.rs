//! One probe of gradcheck: a direction, a cotangent, the forward evaluated around the point,
//! the central difference with its truncation and rounding estimates, and the declared
//! backward's value along the direction. Owns the measurement, the outputs' resolution and the
//! kink test of ordinary probes; it must not decide a verdict (the parent module) or construct
//! kinks (`kinks`).

use super::steps::{exact_step, step_scale, STEP_FLOOR};
use super::GradcheckError;
use op_contract::contract::NanPolicy;
use op_contract::sample::Rng;
use op_core::op::RegisteredOp;
use op_core::tensor::{Scalar, Tensor};
use op_train::tape::{exec, Tape};

/// A probe direction over the differentiable inputs: one coordinate, or a dense vector.
#[derive(Clone, Debug)]
pub struct Dir {
    /// One vector per differentiable input.
    pub v: Vec<Vec<f64>>,
    /// `(k, j)` for a coordinate probe (element `j` of differentiable input `k`).
    pub coord: Option<(usize, usize)>,
    /// The step `t = 1` stands for (`h` times the step scale of the coordinate; 1 for a dense
    /// direction, whose entries are the displacements themselves, from [`exact_step`]).
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

    /// `<g, v>` and `<g, v'>` for the [`Dir::shifted`] direction `v'`; a coordinate direction
    /// reads its two elements of `g` instead of summing over every element.
    pub fn dot_and_shifted(&self, g: &[Vec<f64>]) -> (f64, f64) {
        match self.coord {
            Some((k, j)) if self.v.get(k).is_some_and(|v| v.get(j) == Some(&1.0)) => {
                let gk = g.get(k).map(Vec::as_slice).unwrap_or_default();
                let at = |i: usize| gk.get(i).copied().unwrap_or(0.0);
                (at(j), at((j + 1) % gk.len().max(1)))
            }
            _ => (self.dot(g), self.shifted().dot(g)),
        }
    }

    /// Element `j` of differentiable input `k` alone, over inputs of `sizes`.
    pub fn coordinate(sizes: &[usize], k: usize, j: usize, step: f64) -> Dir {
        let v = sizes.iter().enumerate().map(|(q, &n)| (0..n).map(|i| if q == k && i == j { 1.0 } else { 0.0 }).collect()).collect();
        Dir { v, coord: Some((k, j)), step }
    }
}

/// One probe's finite-difference measurements.
#[derive(Clone, Debug)]
pub struct Probe {
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
    /// The bound's relative and absolute terms at the probe's round (see
    /// [`super::declared_bound`]): the relative term depends on the round's input sizes.
    pub rel: f64,
    pub atol: f64,
    /// The value draw (case) of its round the probe was measured at.
    pub case: usize,
    /// A dense probe's direction and cotangent, kept so that a failing one can be narrowed down
    /// to an element (`locate`); `None` for coordinate probes.
    pub dense: Option<Box<Dense>>,
}

/// A dense probe's direction and cotangent (see [`Probe::dense`]).
pub type Dense = (Dir, Vec<Option<Vec<f64>>>);

impl Probe {
    /// The bound on `|analytic - numeric|` at this probe (see [`super::declared_bound`]).
    pub fn allowed(&self, analytic: f64) -> f64 {
        self.atol + self.rel * self.numeric.abs().max(analytic.abs()) + self.trunc + self.round
    }

    /// `|analytic - numeric|` over the bound (above 1 fails; a NaN counts as infinitely far).
    pub fn ratio(&self) -> f64 {
        let r = (self.analytic - self.numeric).abs() / self.allowed(self.analytic).max(f64::MIN_POSITIVE);
        if r.is_nan() {
            f64::INFINITY
        } else {
            r
        }
    }
}

/// What the rounding of one probed sum depends on: see [`super::declared_bound`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Rounding {
    /// `A`: sum of |u| max(|f(x + t v)|, |f(x)|) over changed outputs.
    pub own: f64,
    /// `B`: sum of |u (f(x + t v) - f(x))|.
    pub diff: f64,
    /// `c`: outputs that changed.
    pub changed: usize,
    /// `S`: sum of |u| |f(x)| over the outputs the moved elements reach that did not change:
    /// their true change is hidden below their rounding (a saturated `tanh`, the largest
    /// element of a softmax row when a tiny one moves).
    pub still: f64,
    /// The l2 norm of the moved elements whose displacement was not exact (`x + t v` rounded).
    pub inexact: f64,
}

impl Rounding {
    fn max(self, o: Rounding) -> Rounding {
        Rounding {
            own: self.own.max(o.own),
            diff: self.diff.max(o.diff),
            changed: self.changed.max(o.changed),
            still: self.still.max(o.still),
            inexact: self.inexact.max(o.inexact),
        }
    }
}

/// A probe's outcome.
pub enum Measured {
    /// Measured and judgeable: the verdict is the parent's.
    Checked(Probe),
    /// Within h of a kink or order crossing.
    Kink,
    /// The forward is not finite near the point.
    NonFinite,
    /// The backward agrees within the bound, but the bound is not small against the derivative:
    /// the outputs cannot resolve it there, so the probe certifies nothing.
    Unresolved,
}

/// Derivatives at least this large (`f64::MAX / 2^16`) are near overflow: a backward that
/// evaluates to infinity there is skipped as not finite (see [`measure`]).
pub const NEAR_OVERFLOW: f64 = f64::MAX / 65536.0;

/// A passing probe whose resolution (everything in the bound but the relative term) exceeds
/// this fraction of its derivative is [`Measured::Unresolved`]: it could not tell the backward
/// from one off by as much.
pub const RESOLVED: f64 = 0.1;

/// The outputs a set of moved elements reaches, per output (`None`: every output).
pub type Reach = Option<Vec<Vec<bool>>>;

/// The op at one point, with everything a probe needs.
pub struct Checker {
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
    /// Per differentiable input: whether it admits NaN (so [`Checker::reach`] may use one).
    pub nan_ok: Vec<bool>,
    /// Per differentiable input: the step floor of [`step_scale`].
    pub floors: Vec<f64>,
}

impl Checker {
    pub(super) fn shim_err(&self) -> impl Fn(String) -> GradcheckError + '_ {
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

    /// The coordinate step at value `x` of differentiable input `k`: `h` times its step scale.
    pub fn step(&self, k: usize, x: f64) -> f64 {
        self.h * step_scale(x, self.floors.get(k).copied().unwrap_or(STEP_FLOOR))
    }

    /// The sizes of the differentiable inputs.
    pub fn sizes(&self) -> Vec<usize> {
        self.diff.iter().map(|&p| self.inputs[p].numel()).collect()
    }

    /// Which outputs the elements `dir` moves reach: each set to NaN, every output computed from
    /// them by arithmetic becomes NaN. An output a moved element only selects (a median's
    /// window) is not reached: it is piecewise constant in that element. `None` (every output
    /// counts as reached) where a moved input does not admit NaN or the forward fails on it.
    pub fn reach(&self, dir: &Dir) -> Reach {
        // An op that orders NaN by total order (`nan = ordered`) moves a +NaN to the top and a
        // -NaN to the bottom: a max selects the one, a min the other, whatever the element
        // was. An output it depends on is NaN for both signs.
        let plus = self.reach_with(dir, f64::NAN);
        match self.op.contract.nan {
            Some(NanPolicy::Ordered) => {
                let minus = self.reach_with(dir, -f64::NAN)?;
                plus.map(|p| p.into_iter().zip(minus).map(|(a, b)| a.into_iter().zip(b).map(|(a, b)| a && b).collect()).collect())
            }
            _ => plus,
        }
    }

    /// [`Checker::reach`] with the moved elements set to `nan`.
    fn reach_with(&self, dir: &Dir, nan: f64) -> Reach {
        let mut ins = self.inputs.clone();
        let mut taint = |k: usize, j: usize| -> Option<()> {
            if !self.nan_ok.get(k).copied().unwrap_or(false) {
                return None;
            }
            *ins[self.diff[k]].as_mut_slice::<f64>()?.get_mut(j)? = nan;
            Some(())
        };
        match dir.coord {
            Some((k, j)) => taint(k, j)?,
            None => {
                for (k, v) in dir.v.iter().enumerate() {
                    for (j, _) in v.iter().enumerate().filter(|(_, v)| **v != 0.0) {
                        taint(k, j)?;
                    }
                }
            }
        }
        let outs = self.forward(&ins).ok()?;
        Some(outs.iter().map(|o| o.as_slice::<f64>().map(|s| s.iter().map(|y| y.is_nan()).collect()).unwrap_or_default()).collect())
    }

    /// `<u, f(x + t v) - f(x)>` (with `base = f(x)`), and its rounding budget: see
    /// [`super::declared_bound`]. Taking the difference per output before summing means
    /// outputs the step does not reach cancel exactly, whatever their size or number; outputs
    /// it reaches but did not change count towards `S`. Coordinate probes move one element by
    /// exactly `t`.
    pub fn s_at(
        &self,
        dir: &Dir,
        t: f64,
        u: &[Option<Vec<f64>>],
        base: &[Tensor],
        reach: &Reach,
    ) -> Result<(f64, Rounding), GradcheckError> {
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
        for (q, ((o, u), b)) in outs.iter().zip(u).zip(base).enumerate() {
            let Some(((u, v), b)) = u.as_ref().zip(o.as_slice::<f64>()).zip(b.as_slice::<f64>()) else { continue };
            let reached = reach.as_ref().and_then(|r| r.get(q));
            for (i, ((u, y), y0)) in u.iter().zip(v).zip(b).enumerate() {
                if y == y0 {
                    if reached.is_none_or(|m| m.get(i).copied().unwrap_or(true)) {
                        r.still += u.abs() * y.abs();
                    }
                    continue;
                }
                let d = u * (y - y0);
                s += d;
                r.own += u.abs() * y.abs().max(y0.abs());
                r.diff += d.abs();
                r.changed += 1;
            }
        }
        Ok((s, r))
    }

    /// A coordinate probe's slope `<u, f(x + step e) - f(x)> / step` at element `j` of
    /// differentiable input `k`, and its rounding estimate: judged by the forward alone, never
    /// by the backward under test.
    pub fn slope(&self, k: usize, j: usize, u: &[Option<Vec<f64>>], base: &[Tensor]) -> Result<(f64, f64), GradcheckError> {
        let step = self.step(k, self.value(k, j).unwrap_or(1.0));
        let dir = Dir { v: Vec::new(), coord: Some((k, j)), step };
        let reach = self.reach(&dir);
        let (s, r) = self.s_at(&dir, step, u, base, &reach)?;
        let slope = s / step;
        Ok((slope, self.round(r, step, slope)))
    }

    /// How well a coordinate probe can see the backward: the slope over its rounding estimate
    /// (infinite where rounding is nil, 0 where the forward does not respond).
    fn signal(&self, k: usize, j: usize, u: &[Option<Vec<f64>>], base: &[Tensor]) -> Result<f64, GradcheckError> {
        let (slope, round) = self.slope(k, j, u, base)?;
        let slope = slope.abs();
        if slope == 0.0 || !slope.is_finite() {
            return Ok(0.0);
        }
        Ok(slope / round.max(f64::MIN_POSITIVE))
    }

    /// The rounding estimate of a difference quotient over `step` with budget `r`: each
    /// output's own rounding (changed, or reached and unchanged), the rounding of the sum over
    /// the changed ones, and where a displacement was not exact, the rounding of `x + t v`
    /// propagated through a slope of order `slope`.
    pub fn round(&self, r: Rounding, step: f64, slope: f64) -> f64 {
        let eps4 = 4.0 * f64::EPSILON;
        let own = ((self.len as f64).sqrt() + 8.0) * (r.own + r.still);
        eps4 * (own + (r.changed as f64 + 8.0) * r.diff + r.inexact * slope.abs().max(1.0)) / step
    }

    /// A probe direction: three in four a coordinate whose difference the rounding does not
    /// drown (up to 8 tries for one whose slope is at least [`SIGNAL`] times its rounding
    /// estimate, else the best seen; judged by the forward alone, never by the backward under
    /// test, so sparse gradients and long sums do not make probes vacuous), one in four a dense
    /// random vector (every element at once, so sparse gradients cannot hide), each entry
    /// scaled by its element's step scale and made exact ([`exact_step`]).
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
                .map(|(k, &n)| {
                    (0..n)
                        .map(|j| {
                            let x = self.value(k, j).unwrap_or(1.0);
                            exact_step(x, rng.uniform(-1.0, 1.0) * self.step(k, x))
                        })
                        .collect()
                })
                .collect();
            return Ok(Dir { v, coord: None, step: 1.0 });
        }
        let mut best = ((0, 0), -1.0f64);
        for _ in 0..8 {
            let (k, pick) = locate(sizes, rng.index(total));
            let signal = self.signal(k, pick, u, base)?;
            if signal > best.1 {
                best = ((k, pick), signal);
            }
            if signal >= SIGNAL {
                break;
            }
        }
        let (k, pick) = best.0;
        Ok(Dir::coordinate(sizes, k, pick, self.step(k, self.value(k, pick).unwrap_or(1.0))))
    }
}

/// `(k, j)`: the differentiable input and element of flat index `p` over inputs of `sizes`.
pub fn locate(sizes: &[usize], mut p: usize) -> (usize, usize) {
    let mut k = 0;
    while k + 1 < sizes.len() && p >= sizes[k] {
        p -= sizes[k];
        k += 1;
    }
    (k, p)
}

/// How far above its rounding estimate a coordinate probe's slope should be: a probe within a
/// few times its rounding accepts a backward off by as much, so it would certify little.
pub const SIGNAL: f64 = 1e3;

/// The realised steps `t` (`-3 .. 3` steps), `<u, f(x + t v) - f(x)>` at each, and their
/// rounding budget.
pub type Samples = ([f64; 7], [f64; 7], Rounding);

/// `<u, f(x + t v)>` at `t` in `{-3, ..., 3} * dir.step`, as realised steps and values
/// (`s(0) = 0` exactly), with their rounding budget; `None` where the forward is not finite.
pub fn samples(ck: &Checker, dir: &Dir, u: &[Option<Vec<f64>>], base: &[Tensor]) -> Result<Option<Samples>, GradcheckError> {
    let x0 = dir.coord.and_then(|(k, j)| ck.value(k, j));
    let reach = ck.reach(dir);
    let mut d = [0.0f64; 7];
    let mut s = [0.0f64; 7];
    let mut r = Rounding { inexact: inexact(ck, dir), ..Rounding::default() };
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
        let (v, ri) = ck.s_at(dir, d[i], u, base, &reach)?;
        s[i] = v;
        r = r.max(ri);
    }
    Ok(s.iter().all(|v| v.is_finite()).then_some((d, s, r)))
}

/// The l2 norm of the elements a non-coordinate direction moves by a displacement `x + t v`
/// does not represent exactly, for some step `t` of [`samples`] (0 for coordinate probes,
/// which use the realised step).
fn inexact(ck: &Checker, dir: &Dir) -> f64 {
    if dir.coord.is_some() {
        return 0.0;
    }
    let mut sq = 0.0;
    for (k, v) in dir.v.iter().enumerate() {
        let Some(x) = ck.inputs[ck.diff[k]].as_slice::<f64>() else { continue };
        for (x, v) in x.iter().zip(v).filter(|(_, v)| **v != 0.0) {
            if (1..=3).any(|m| [1.0, -1.0].iter().any(|sg| (x + sg * m as f64 * dir.step * v) - x != sg * m as f64 * dir.step * v)) {
                sq += x * x;
            }
        }
    }
    sq.sqrt()
}

/// Whether `<u, f>` jumps at the point itself along `dir`: a jump `J` there adds `J / 2h` to the
/// central difference over `h` and `J / 4h` to the one over `2h`, so `jump = 4h (d1 - d2)` is
/// the jump those differences imply. A real jump keeps the values just either side of the point
/// (`+-h / 64`) about `J` apart; a continuous `s` (curvature, or kinks elsewhere in the
/// samples, such as a median's order crossings just beyond `h`) brings them within `h / 32`
/// times its slope of each other. A NaN there counts as a jump.
#[allow(clippy::neg_cmp_op_on_partial_ord)]
fn jump_at_point(ck: &Checker, dir: &Dir, u: &[Option<Vec<f64>>], base: &[Tensor], jump: f64) -> Result<bool, GradcheckError> {
    let reach = ck.reach(dir);
    let t = dir.step / 64.0;
    let (right, _) = ck.s_at(dir, t, u, base, &reach)?;
    let (left, _) = ck.s_at(dir, -t, u, base, &reach)?;
    Ok(!((right - left).abs() < 0.5 * jump.abs()))
}

/// Fractions of a probe's step at which a failing probe is measured again (see [`step_noise`]):
/// `1 / sqrt(p)` for the primes 2 to 13, so that no two steps, and no step and the probe's own,
/// stand in a rational ratio.
const NOISE_STEPS: [f64; 6] = [
    0.707_106_781_186_547_5,
    0.577_350_269_189_625_8,
    0.447_213_595_499_958,
    0.377_964_473_009_227_2,
    0.301_511_344_577_763_6,
    0.277_350_098_112_614_6,
];

/// How many times the rounding [`step_noise`] sees is allowed on top of the bound: the largest
/// of [`NOISE_STEPS`]`.len()` pseudo-random samples of a rounding error is below an eighth of its
/// range with a chance of `8^-6`, about 4e-6.
const NOISE_MARGIN: f64 = 8.0;

/// The rounding a failing probe's difference shows that its estimate from the outputs missed,
/// as an error of the central difference over the probe's own step. An output is rounded at the
/// scale of the values it was computed from, which may far exceed the output itself (a moving
/// sum as differences of prefix sums: terms of 1e3 leaving 0.3), and the estimate sees only the
/// output. Such rounding is not random along the probe's line: `x + t` rounded onto the grid of
/// an inner value of 1e3 repeats its pattern for every `t` in a rational, and in particular a
/// dyadic, ratio to the step, so differences over `h / 2`, `h / 16` or `2 h` carry the same
/// error as the one over `h` and look converged while all of them are off by up to that grid's
/// spacing over `h` (a correct moving-sum VJP was accused at 1 identity in 100 that way:
/// the same 8.7e-11 at `h / 16 .. 2 h`, against an allowed 1.4e-11). Over steps in irrational
/// ratios to `h` and to each other ([`NOISE_STEPS`]), the rounding lands anywhere on the grid,
/// so the spread of those differences shows its size: each is `c D(c h)`'s distance from
/// `c D(h)` (rounding over `c h` is `1 / c` times the rounding over `h`; truncation, below `h`,
/// only shrinks), the largest of them taken [`NOISE_MARGIN`] times. The difference over
/// `h / 16` as before (its distance from `D(h)` unscaled) is a floor. A backward wrong by more
/// than that noise still fails: its error is the same at every step. 0 where not finite.
fn step_noise(ck: &Checker, dir: &Dir, u: &[Option<Vec<f64>>], base: &[Tensor], d1: f64) -> Result<f64, GradcheckError> {
    let reach = ck.reach(dir);
    let x0 = dir.coord.and_then(|(k, j)| ck.value(k, j));
    let real = |t: f64| x0.map_or(t, |x| (x + t) - x);
    let spread = |c: f64| -> Result<f64, GradcheckError> {
        let (right, left) = (real(c * dir.step), real(-c * dir.step));
        let (sr, _) = ck.s_at(dir, right, u, base, &reach)?;
        let (sl, _) = ck.s_at(dir, left, u, base, &reach)?;
        let d = ((sr - sl) / (right - left) - d1).abs();
        Ok(if d.is_finite() { d } else { 0.0 })
    };
    let mut noise = spread(1.0 / 16.0)?;
    for c in NOISE_STEPS {
        noise = noise.max(NOISE_MARGIN * c * spread(c)?);
    }
    Ok(noise)
}

/// Measures one probe: seven evaluations of `<u, f(x + t v)>`, `t` in `{0, +-1, +-2, +-3}`
/// steps. `g` is the VJP's `J^T u` where the caller has it already (the sweep).
#[allow(clippy::neg_cmp_op_on_partial_ord)] // a NaN must count as a kink, not pass
pub fn measure(
    ck: &Checker,
    dir: &Dir,
    u: &[Option<Vec<f64>>],
    base: &[Tensor],
    g: Option<&[Vec<f64>]>,
) -> Result<Measured, GradcheckError> {
    let Some((d, s, r)) = samples(ck, dir, u, base)? else { return Ok(Measured::NonFinite) };
    let slope = |a: usize, b: usize| (s[b] - s[a]) / (d[b] - d[a]);
    let (fwd, bwd) = (slope(3, 4), slope(2, 3));
    let d1 = slope(2, 4);
    let round = ck.round(r, dir.step, d1);
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
    // (c) a jump at the point itself (a step such as `sign(x) g` at x = 0, the point's value
    //     between the two sides): every one-sided difference agrees, but the central ones over
    //     h and 2h differ by far more than the third derivative explains (about h^2 s'''/2,
    //     where `cr - cl` is about 4 h^2 s'''), and the values just either side of the point
    //     confirm it (see [`jump_at_point`]).
    let d2 = slope(1, 5);
    let suspect = !((d2 - d1).abs() <= base_tol + (cr - cl).abs() + cl.abs().max(cr.abs()));
    let kink_c = suspect && jump_at_point(ck, dir, u, base, 2.0 * (d[4] - d[2]) * (d1 - d2))?;
    if kink_a || kink_b || kink_c {
        return Ok(Measured::Kink);
    }
    let (analytic, neighbour, jvp) = if ck.has_vjp {
        let own;
        let g = match g {
            Some(g) => g,
            None => {
                own = ck.vjp(u)?;
                &own
            }
        };
        let jv = if ck.has_jvp { Some(ck.jvp(dir, u)?) } else { None };
        let (a, n) = dir.dot_and_shifted(g);
        (a, n, jv)
    } else {
        (ck.jvp(dir, u)?, ck.jvp(&dir.shifted(), u)?, None)
    };
    if !analytic.is_finite() && d1.abs() >= NEAR_OVERFLOW {
        // The differences say the derivative is finite but within 2^16 of f64's largest value,
        // where the backward's own f64 evaluation (its outputs times the cotangent and the
        // direction, summed) overflows for a correct rule as readily as for a wrong one: as
        // uninformative as a forward that is not finite. Far from overflow an infinite
        // backward is judged (and rejected) like any other value.
        return Ok(Measured::NonFinite);
    }
    let at = match dir.coord {
        Some((k, j)) => (k, Some(j)),
        None => (0, None),
    };
    let dense = dir.coord.is_none().then(|| Box::new((dir.clone(), u.to_vec())));
    let (rel, atol) = (ck.rel, ck.atol);
    let mut p = Probe { at, numeric: d1, trunc: (d2 - d1).abs(), round, analytic, neighbour, jvp, rel, atol, case: 0, dense };
    // Judged by the bound first: a backward beyond it is never excused as unresolved.
    let mut passes = (analytic - d1).abs() <= p.allowed(analytic);
    // Whether the disagreement was excused by the differences over other steps.
    let mut irregular = false;
    if !passes {
        p.round += step_noise(ck, dir, u, base, d1)?;
        passes = (analytic - d1).abs() <= p.allowed(analytic);
        irregular = passes;
    }
    let resolution = ck.atol + p.trunc + p.round;
    if passes && resolution > RESOLVED * d1.abs().max(analytic.abs()) {
        // Differences over nearby steps that disagree by a tenth of the derivative are not the
        // rounding of an f64 forward but kinks inside the step that the samples at whole steps
        // alias into a smooth curve (a sawtooth with a kink every h): skipped as a kink, which
        // more rounds of draws do not draw away (`rounds`).
        return Ok(if irregular { Measured::Kink } else { Measured::Unresolved });
    }
    Ok(Measured::Checked(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_are_located_across_inputs() {
        assert_eq!(locate(&[3, 2], 0), (0, 0));
        assert_eq!(locate(&[3, 2], 3), (1, 0));
        assert_eq!(locate(&[3, 2], 4), (1, 1));
        assert_eq!(locate(&[0, 2], 1), (1, 1));
    }
}
