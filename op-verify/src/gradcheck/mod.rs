//! Gradcheck on the reference path in f64: engine-generated inputs, probes compared by central
//! differences with the declared backward (VJP, JVP, or the VJP a composite graph derives),
//! kinks skipped and counted, points placed exactly on kinks checked against the subgradient
//! convention, then a negative control that must reject a corrupted backward. It reads
//! declarations and runs shims; it never registers or dispatches an op.
//!
//! The procedure, all of it seeded from the op's content hash (the author picks nothing), its
//! inputs drawn by the sampling module conformance uses too (`op_contract::sample`):
//! - an admissible binding of dims and parameters (interior values preferred; distinct values
//!   for distinct symbols unless the constraints tie them, so a rule right only for square
//!   shapes cannot pass), then four independent draws of input values (`draw`, `case`):
//!   magnitudes log-uniform over a range of both signs inside each input's declared domain, the
//!   range declared per input (`magnitude(x: 1e-3..30)`) or else the widest rung of a ladder
//!   (1e-3..1e3, then 1e2, 1e1, 1) where the forward is finite, inside the range of the op's
//!   widest float type, not underflowing everywhere, and resolves most derivatives (a softmax
//!   fed logits of 1e3 is saturated: its Jacobian is far below its outputs' rounding);
//! - sampled probes, split evenly among the draws: a random cotangent `u` and a direction `v`
//!   (three in four a single coordinate whose difference stands well above its rounding, one in
//!   four a dense random vector whose steps are exact in f64); `<u, f(x + t v)>` at
//!   `t = 0, +-1, +-2, +-3` steps, a step being `h = 1e-3` times `clamp(|x|, 1e-3, 1)` of the
//!   element (relative below 1, so small values are not stepped across zero; the floor is a
//!   declared magnitude range's smallest value where that is below 1e-3); the central
//!   difference `D(h)` is compared with the declared backward's `<J^T u, v>` (or `<u, J v>`),
//!   within [`declared_bound`];
//! - the sweep (`sweep`): in each draw, every element of the differentiable inputs probed
//!   alone along its own coordinate under one cotangent, so a backward wrong at one element
//!   cannot pass; beyond [`GradcheckOptions::sweep`] elements, that many per draw, the draws
//!   taking disjoint random slices;
//! - a probe whose one-sided differences disagree beyond what the curvature next to it
//!   explains sits within h of a kink or order crossing; one where the forward is not finite
//!   cannot be measured; one where the backward agrees within the bound but the bound is not
//!   small against the derivative (the outputs cannot resolve it: `probe::RESOLVED`) certifies
//!   nothing; one that fails is measured again over steps in irrational ratios to `h`, and the
//!   rounding those show is allowed first (see [`declared_bound`]). Each is skipped and counted by reason, never failed or averaged; where more than
//!   half of a round is skipped, a fresh round is drawn (its own binding, values and probes,
//!   seeded from the content hash and the round's salt; see `rounds`) until a round, or all of
//!   them together, is conclusive; only where that does not happen is the verdict
//!   `Inconclusive`, a failure, saying which salts were drawn and why no more were;
//! - once the rounds are conclusive, one more round at the reach of the parameter space
//!   (`rounds::reach`): each integer parameter at the largest value admitted among its
//!   constraints' literals (one either side) and 8 to 64 (a median's window of 31), dims up to
//!   64, every element swept alone; its probes are judged like any round's (and reported apart:
//!   [`ReachRound`]), so a rule wrong only for wide windows or long inputs, which interior draws
//!   never meet, is rejected (its salt, top bits `rounds::REACH`, reproduces it);
//! - for ops with kinks (`selection`, or any op that declares a `subgradient`), points placed
//!   exactly on kinks (ties, zeros, bounds such as a clip's; see `kinks`), where the backward
//!   must be the subgradient the convention names; where a bound ties an element with one of
//!   another input (the operands of a `max`), both moved together must match the two-sided
//!   difference (a rule that gives the whole cotangent to both, or to neither, is rejected);
//! - every rejection names the input element, its shape, the case's dims and parameters, and
//!   the salt that reproduces it ([`Locus`]); a failing random direction is narrowed down to
//!   the element that carries its error (`locate`);
//! - with both VJP and JVP declared, `<u, J v> = <J^T u, v>` is checked on every probe;
//! - the negative control re-judges the same probes with the backward scaled (by 1.01, and by
//!   `1 + delta` for the smallest relative error `delta` the probes prove they catch),
//!   sign-flipped and routed to the neighbouring element; each must be rejected, else the check
//!   "could not fail" and gradcheck fails. A conclusive pool whose probes cannot yet resolve the
//!   fixed scaling (no probe would reject it) first draws further rounds, so a draw whose outputs
//!   barely respond does not fail a correct backward; where no round helps, the control fails it.
//!
//! ```
//! use op_runtime::{op, Real};
//!
//! /// `x^3`.
//! #[op(name = "user/doc/cube", version = 1, signature(x: f32[n]) -> f32[n],
//!      category = elementwise, tolerance = ulp(2), backward = vjp(cube_vjp))]
//! pub fn cube<T: Real>(x: &[T]) -> Vec<T> {
//!     x.iter().map(|v| *v * *v * *v).collect()
//! }
//! /// The VJP: `3 x^2 g`.
//! pub fn cube_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
//!     x.iter().zip(g).map(|(x, g)| T::from_f64(3.0) * *x * *x * *g).collect()
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let report = op_runtime::gradcheck(&cube::DECL)?;
//! assert!(report.negative_control_rejected());
//! println!("{report}");
//! # Ok(())
//! # }
//! ```

mod case;
mod draw;
mod error;
mod kinks;
mod locate;
mod probe;
mod report;
mod rounds;
mod rules;
mod steps;
mod sweep;
mod verdict;

pub use draw::{DrawRange, Narrowed};
pub use error::{GradcheckError, Locus};
pub use report::{BackwardForm, ControlOutcome, Corruption, GradcheckReport, ProbePoint, ReachRound};

use op_contract::contract::{Backward, Category, Contract, DType, Tolerance};
use op_contract::sample::Rng;
use op_core::decl::OpDecl;
use op_core::error::RegistrationError;
use op_core::op::RegisteredOp;
use op_core::registry::Registry;
use op_core::tensor::{Scalar, Tensor};
use op_train::tape::{exec, Mode, Tape, TapeError};
use probe::{measure, Checker, Measured, Probe};
use verdict::{negative_control, smallest_caught, summarize};

/// How a gradcheck samples.
#[derive(Clone, Debug, PartialEq)]
pub struct GradcheckOptions {
    /// Number of probes (coordinate, random cotangent) to sample.
    pub probes: usize,
    /// Elements swept per draw: each probed alone along its own coordinate (every element in
    /// every draw where the differentiable inputs hold at most this many; beyond, this many per
    /// draw, disjoint random slices, so four draws cover four times as many); 0 turns the sweep
    /// off. 256 by default. Inputs of more than 4096 elements in all sweep fewer (no fewer than
    /// 16 per draw), so that a pinned size of millions stays affordable: see `sweep::per_draw`.
    pub sweep: usize,
    /// Central-difference step (relative below `|x| = 1`, see the module docs).
    pub h: f64,
    /// Mixed into the seed (which comes from the op's content hash); 0 by default. A
    /// rejection names the salt that reproduces it ([`Locus::salt`]): that of its round, where
    /// more rounds were drawn. A salt whose top 12 bits are `0x5EA` (the salt a rejection at
    /// the reach of the parameter space names) draws every round there.
    pub salt: u64,
    /// Dim symbols or integer parameters pinned to a value instead of sampled, e.g.
    /// `("n", 50_000)` to check at a size the generator never picks. The binding must still be
    /// admissible, else [`GradcheckError::NoAdmissibleInput`]. Empty by default.
    pub pin: Vec<(String, i128)>,
}

impl Default for GradcheckOptions {
    fn default() -> Self {
        GradcheckOptions { probes: 32, sweep: 256, h: 1e-3, salt: 0, pin: Vec::new() }
    }
}

/// Independent value draws per gradcheck (probes are split evenly among them).
const CASES: usize = 4;

/// Everything set up before the first probe.
struct Setup {
    op_id: String,
    contract: Contract,
    form: BackwardForm,
    ck: Checker,
    cases: Vec<Vec<Tensor>>,
    ranges: Vec<DrawRange>,
    binding: case::Binding,
    rng: Rng,
    /// The salt this setup was drawn with (`GradcheckOptions::salt` of its round).
    salt: u64,
}

/// The backward form declared, or why there is nothing to check.
fn form_of(op: &RegisteredOp, decl: &OpDecl) -> Result<BackwardForm, GradcheckError> {
    let id = op.id.clone();
    let form = match &op.contract.backward {
        Backward::None => return Err(GradcheckError::NotDifferentiable { op: id }),
        Backward::Composite { graph } => {
            if decl.composite.is_none() {
                return Err(TapeError::NoCompositeGraph { op: id }.into());
            }
            BackwardForm::Composite { graph: graph.clone().unwrap_or_default(), ops: Vec::new() }
        }
        Backward::Declared { vjp: Some(v), jvp, .. } if !jvp.is_empty() => BackwardForm::VjpJvp { vjp: v.clone(), rules: jvp.clone() },
        Backward::Declared { vjp: Some(v), .. } => BackwardForm::Vjp { path: v.clone() },
        Backward::Declared { vjp: None, jvp, .. } => BackwardForm::Jvp { rules: jvp.clone() },
    };
    if decl.reference_f64.is_none() {
        return Err(GradcheckError::NoF64Reference { op: id, rust: decl.rust_name.to_string() });
    }
    if op.contract.signature.differentiable_inputs().next().is_none() {
        return Err(GradcheckError::NoDifferentiableInput { op: id });
    }
    Ok(form)
}

/// The composite graph recorded on a tape in f64, for ops whose backward it derives.
fn composite_graph(
    registry: &Registry,
    op: &RegisteredOp,
    decl: &OpDecl,
    inputs: &[Tensor],
    params: &[Scalar],
    form: &mut BackwardForm,
) -> Result<Option<Tape>, GradcheckError> {
    let (Backward::Composite { .. }, Some(builder)) = (&op.contract.backward, decl.composite) else { return Ok(None) };
    let mut t = Tape::with_mode(registry, Mode::ReferenceF64);
    let ins: Vec<(DType, Vec<usize>)> = inputs.iter().map(|t| (t.dtype(), t.shape().to_vec())).collect();
    let typed: Vec<(DType, &[usize])> = ins.iter().map(|(d, s)| (*d, s.as_slice())).collect();
    let inferred = op_train::tape::planner::infer(op, &typed, params, Some(DType::f64)).map_err(TapeError::from)?;
    t.record_graph(op, builder, &ins, params, &inferred)?;
    if let BackwardForm::Composite { ops, .. } = form {
        *ops = t.ops();
    }
    Ok(Some(t))
}

fn setup(registry: &Registry, decl: &'static OpDecl, opts: &GradcheckOptions) -> Result<Setup, GradcheckError> {
    let op = RegisteredOp::load(decl)?;
    let mut form = form_of(&op, decl)?;
    // The checker refuses such a range at compile time; a contract built by hand may carry one.
    if let Some(m) = op.contract.magnitude.iter().find(|m| !m.is_valid()) {
        let reason = format!("the magnitude range `{m}` is not `0 < lo <= hi`, both finite");
        return Err(RegistrationError::BadContract { op: op.id.clone(), reason }.into());
    }
    let mut rng = Rng::from_hash(&op.hash, 0x6772_6164 ^ opts.salt);
    let binding = if rounds::is_reach(opts.salt) { case::reach(&op, &opts.pin, &mut rng) } else { case::binding(&op, &opts.pin, &mut rng) };
    let binding = binding.ok_or_else(|| GradcheckError::NoAdmissibleInput { op: op.id.clone(), tries: case::BINDING_TRIES })?;
    let len = binding.shapes.iter().map(|s| s.iter().product::<usize>()).max().unwrap_or(1);
    let (rel, atol) = declared_bound(&op.contract.tolerance, len);
    let (has_vjp, has_jvp) =
        (!matches!(form, BackwardForm::Jvp { .. }), matches!(form, BackwardForm::Jvp { .. } | BackwardForm::VjpJvp { .. }));
    let diff = exec::diff_positions(&op);
    if diff.iter().map(|&p| binding.shapes[p].iter().product::<usize>()).sum::<usize>() == 0 {
        return Err(GradcheckError::NoDifferentiableInput { op: op.id.clone() });
    }
    let names: Vec<String> = op.contract.signature.inputs().map(|t| t.name.clone()).collect();
    let nan_ok = diff.iter().map(|&p| op.contract.admits_nan(&names[p])).collect();
    let floors =
        diff.iter().map(|&p| op.contract.magnitude_of(&names[p]).map_or(steps::STEP_FLOOR, |m| m.lo.min(steps::STEP_FLOOR))).collect();
    let (op_id, contract) = (op.id.clone(), op.contract.clone());
    let params = binding.params.clone();
    let mut ck = Checker { op, inputs: Vec::new(), params, diff, rel, atol, h: opts.h, len, graph: None, has_vjp, has_jvp, nan_ok, floors };
    // A reach round draws half as many value sets: its binding is what it adds.
    let n_cases = if rounds::is_reach(opts.salt) { CASES / 2 } else { CASES };
    let (cases, ranges): (Vec<Vec<Tensor>>, Vec<Option<DrawRange>>) =
        draw::draws(&mut ck, &binding, n_cases, &mut rng)?.into_iter().unzip();
    let ranges = ranges.into_iter().flatten().collect();
    ck.inputs = cases[0].clone();
    ck.graph = composite_graph(registry, &ck.op, decl, &ck.inputs, &binding.params, &mut form)?;
    Ok(Setup { op_id, contract, form, ck, cases, ranges, binding, rng, salt: opts.salt })
}

/// Samples and measures every probe, the draws taken in turn, each draw's sweep after its
/// sampled probes.
fn measure_probes(s: &mut Setup, opts: &GradcheckOptions) -> Result<(Vec<Measured>, usize), GradcheckError> {
    let out_shapes = s.ck.out_shapes()?;
    let sizes = s.ck.sizes();
    // A reach round (`rounds::reach`) sweeps alone, every element along its own coordinate: a
    // dense direction through dozens of elements of a sort's row crosses orders the kink test
    // does not always see, and what that round is for (a rule wrong at some parameters or
    // lengths) shows element by element. Decided by the salt, so the salt reproduces it.
    let probes = if rounds::is_reach(s.salt) { 0 } else { opts.probes };
    let per_case = probes.div_ceil(CASES).max(1);
    let mut measured = Vec::with_capacity(probes);
    let mut swept = Vec::new();
    let elements: usize = s.ck.inputs.iter().map(Tensor::numel).sum();
    let plan = sweep::Plan::new(sizes.iter().sum(), sweep::per_draw(opts.sweep, elements), &mut s.rng);
    for (c, case) in s.cases.iter().enumerate() {
        s.ck.inputs = case.clone();
        let base = s.ck.forward(&s.ck.inputs)?;
        for p in c * per_case..((c + 1) * per_case).min(probes) {
            let u = s.ck.cotangent(&out_shapes, &mut s.rng);
            let dir = s.ck.direction(p, &sizes, &u, &base, &mut s.rng)?;
            measured.push(at_case(measure(&s.ck, &dir, &u, &base, None)?, c));
        }
        swept.extend(sweep::sweep(&s.ck, &plan, c, &mut s.rng)?.into_iter().map(|m| at_case(m, c)));
    }
    let n = swept.len();
    measured.extend(swept);
    Ok((measured, n))
}

/// `m` with the value draw it was measured at recorded (for narrowing it down later).
fn at_case(m: Measured, case: usize) -> Measured {
    match m {
        Measured::Checked(p) => Measured::Checked(Probe { case, ..p }),
        other => other,
    }
}

/// Gradchecks an op: see the module docs and `declared_bound`. A composite op's graph
/// resolves the ops it records in `registry` (`op_runtime::gradcheck` passes the process-wide
/// one).
pub fn gradcheck_with(registry: &Registry, decl: &'static OpDecl, opts: &GradcheckOptions) -> Result<GradcheckReport, GradcheckError> {
    let (pool, mut s) = rounds::run(registry, decl, opts)?;
    let probes: Vec<&Probe> = pool.checked.iter().collect();
    let judged = summarize(&probes);
    let kinks = if s.contract.category.has_kinks() || s.contract.subgradient.is_some() {
        let loc = locate::Locator::of(&s);
        Some(kinks::probe(&mut s.ck, &s.cases, &loc, &mut s.rng)?)
    } else {
        None
    };
    let smallest = smallest_caught(&probes);
    let control = negative_control(&probes, smallest);
    if let Some(c) = control.iter().find(|c| c.applicable && !c.rejected) {
        return Err(GradcheckError::NegativeControlAccepted { op: s.op_id.clone(), corruption: c.corruption.to_string() });
    }
    let c = &s.contract;
    let params: Vec<(String, String)> = c.signature.params().zip(&s.ck.params).map(|(p, v)| (p.name.clone(), v.to_string())).collect();
    let bindings = if params.is_empty() {
        c.signature.dim_symbols().into_iter().filter_map(|d| s.binding.env.get(&d).map(|v| (d, v.to_string()))).collect()
    } else {
        params
    };
    Ok(GradcheckReport {
        op: s.op_id.clone(),
        content_hash: s.ck.op.hash_hex(),
        bindings,
        reference: decl.rust_name.to_string(),
        description: first_sentence(decl.description),
        backward: s.form.clone(),
        subgradient: c.subgradient.clone(),
        h: opts.h,
        probes: pool.sampled,
        swept: pool.swept,
        skipped: pool.kinks,
        skipped_nonfinite: pool.nonfinite,
        skipped_unresolved: pool.unresolved,
        rounds: pool.salts.len(),
        salt: s.salt,
        ranges: pool.ranges.clone(),
        declared_magnitudes: c.magnitude.iter().map(|m| m.to_string()).collect(),
        kink_word: if c.category == Category::Selection { "an order crossing".into() } else { "a kink".into() },
        kinks: kinks.map(|k| (k.ties, k.zeros)),
        kink_bounds: kinks.map_or(0, |k| k.bounds),
        max_abs_err: judged.max_abs_err,
        max_rel_err: judged.max_rel_err,
        bound_applied: judged.bound_applied,
        worst_ratio: judged.worst_ratio,
        tolerance: c.tolerance.to_string(),
        rel_bound: s.ck.rel,
        consistency: pool.consistency,
        negative_control: control,
        smallest_caught: smallest.filter(|d| *d < 0.01),
        points: verdict::points(&s, &probes),
        reach: pool.reach.clone(),
    })
}

/// The margin on f64 rounding in the relative term of [`declared_bound`]: the backward's and
/// the reference's arithmetic each round at most a few times per element, and an accumulation
/// over `len` terms drifts like a random walk, `sqrt(len)` units of `eps64`.
const F64_ROUNDING_MARGIN: f64 = 64.0;

/// The relative bound f64 arithmetic itself accounts for over accumulations of length `len`:
/// `64 sqrt(len) eps64`. It stays below 1e-8 for any `len` under 5e11: no input size makes it
/// admit a scaled backward.
pub fn f64_rounding_rel(len: usize) -> f64 {
    F64_ROUNDING_MARGIN * (len.max(1) as f64).sqrt() * f64::EPSILON
}

/// The bound a backward is held to: `(rel, atol)`, with `|analytic - numeric|` allowed to be
/// `atol + rel * max(|numeric|, |analytic|) + trunc + round` on each probe.
///
/// Gradcheck runs the reference and the backward in f64, so the declared tolerance class (how
/// far a kernel at its declared dtype may stray from the reference) says nothing about how
/// accurate a backward must be. The mapping:
///
/// | declared            | `rel`                              | `atol` |
/// |---------------------|------------------------------------|--------|
/// | `exact`             | `64 sqrt(len) eps64`               | 0      |
/// | `ulp(k)`            | `64 sqrt(len) eps64`               | 0      |
/// | `accum(k)`          | `64 sqrt(len) eps64`               | 0      |
/// | `loose(rtol, atol)` | `max(rtol, 64 sqrt(len) eps64)`    | `atol` |
///
/// `len` is the largest input (an upper bound on any reduction length) and `eps64` is
/// [`f64::EPSILON`]; the declared dtype is not consulted. `exact`, `ulp` and `accum` ops have
/// references that are exact up to rounding in f64, so only f64 rounding is allowed: at most
/// about 1e-8 for any realistic size, never near the 1% a scaled backward differs by (the old
/// `k * len * eps32` for `accum(k)` admitted a 1.01-scaled VJP at about 42k elements). Only
/// `loose` keeps its declared tolerance: it marks an op whose reference is itself an
/// approximation, whose exact derivative may differ from the finite difference of the
/// approximation by that much.
///
/// The two further terms are measured on each probe rather than declared: `trunc`, the
/// truncation estimate `|D(2h) - D(h)|` (three times `D(h)`'s own O(h^2) error on a smooth
/// function, so it also absorbs rounding noise that shows in the differences), and `round`,
/// f64 rounding of the probed sums. The sums are taken over output differences
/// `<u, f(x + t v) - f(x)>`, so outputs the step does not reach contribute exactly nothing,
/// and `round = 4 eps64 ((sqrt(len) + 8) (A + S) + (c + 8) B) / h` where, over the `c` outputs
/// that changed, `A = sum |u| max(|f(x + t v)|, |f(x)|)` (each output's own rounding, an
/// accumulation of up to `len` terms) and `B = sum |u (f(x + t v) - f(x))|` (rounding of the
/// sum over them), and `S = sum |u| |f(x)|` over the outputs the moved elements reach (they
/// turn NaN when those elements do) but whose value did not change: the floor of what the
/// outputs resolve. Such an output hides a true change up to its own rounding: the row maximum
/// of a softmax when a tiny element moves, a saturated `tanh`. Where a displacement `x + t v` is
/// not exact (dense probes make theirs exact), its rounding is added too. Both terms are
/// estimates of the finite difference's own error; neither depends on the declared class. A
/// probe whose backward agrees within the bound while `atol + trunc + round` exceeds a tenth of
/// its derivative is skipped as unresolved: the bound there could not tell a wrong backward
/// from a right one.
///
/// The outputs cannot show rounding made at the scale of the values they were computed from
/// (a moving sum as differences of prefix sums), and along the probe's line that rounding
/// repeats at every step in a rational ratio to `h`. So before a probe fails, its `round` gains
/// the rounding its own differences show: over steps in irrational ratios to `h`, where it lands
/// anywhere on the inner grid, their spread, scaled to `h`, eight times (`probe::step_noise`).
/// A wrong backward is off by the same amount at every step and still fails; a probe excused
/// by more than a tenth of its derivative is skipped as within h of a kink.
pub fn declared_bound(tol: &Tolerance, len: usize) -> (f64, f64) {
    let f64_rel = f64_rounding_rel(len);
    match *tol {
        Tolerance::Exact | Tolerance::Ulp(_) | Tolerance::Accum(_) => (f64_rel, 0.0),
        Tolerance::Loose { rtol, atol } => (rtol.max(f64_rel), atol.max(0.0)),
    }
}

fn first_sentence(d: &str) -> String {
    let line = d.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    // A sentence ends at ". " before a capital letter (not inside `x[i .. j]`).
    let b = line.as_bytes();
    let end =
        (1..b.len().saturating_sub(2)).find(|&i| b[i] == b'.' && b[i - 1] != b'.' && b[i + 1] == b' ' && b[i + 2].is_ascii_uppercase());
    end.map(|i| &line[..i]).unwrap_or(line).trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_is_f64_arithmetic_except_for_loose_ops() {
        let f64_rel = |len: usize| 64.0 * (len as f64).sqrt() * f64::EPSILON;
        assert_eq!(declared_bound(&Tolerance::Exact, 10), (f64_rel(10), 0.0));
        assert_eq!(declared_bound(&Tolerance::Ulp(4), 10), (f64_rel(10), 0.0));
        assert_eq!(declared_bound(&Tolerance::Ulp(0), 10), (f64_rel(10), 0.0));
        assert_eq!(declared_bound(&Tolerance::Accum(2), 100), (f64_rel(100), 0.0));
        assert_eq!(declared_bound(&Tolerance::Loose { rtol: 1e-3, atol: 1e-6 }, 1), (1e-3, 1e-6));
        assert_eq!(declared_bound(&Tolerance::Accum(4), 0), (f64_rel(1), 0.0));
        // No size makes the bound for an accumulation large: where `k * len * eps32` admitted a
        // 1% error at about 42k elements, the f64 bound stays far below it at any size.
        for len in [1usize, 50_000, 1 << 30, 1 << 40] {
            let (rel, _) = declared_bound(&Tolerance::Accum(2), len);
            assert!(rel < 1e-6, "{len}: {rel}");
        }
    }

    #[test]
    fn descriptions_keep_their_first_sentence() {
        assert_eq!(first_sentence("Median of `x`: out[i] = median(x[i .. i + w])."), "Median of `x`: out[i] = median(x[i .. i + w])");
        assert_eq!(first_sentence("\n  Sum. Returns a scalar.\nMore."), "Sum");
        assert_eq!(first_sentence(""), "");
    }
}
