//! Gradcheck on the reference path in f64: engine-generated inputs, sampled probes compared by
//! central differences with the declared backward (VJP, JVP, or the VJP a composite graph
//! derives), kinks skipped and counted, points placed exactly on kinks checked against the
//! subgradient convention, then a negative control that must reject a corrupted backward. It
//! reads declarations and runs shims; it never registers or dispatches an op.
//!
//! The procedure, all of it seeded from the op's content hash (the author picks nothing), its
//! inputs drawn by the sampling module conformance uses too (`op_contract::sample`):
//! - an admissible binding of dims and parameters (interior values preferred; distinct values
//!   for distinct symbols unless the constraints tie them, so a rule right only for square
//!   shapes cannot pass), then four independent draws of input values (`case`), log-uniform
//!   over 1e-3..1e3 of both signs inside each input's declared domain; probes are split evenly
//!   among the draws;
//! - each probe: a random cotangent `u` and a direction `v` (three in four a single coordinate
//!   whose difference stands well above its rounding, one in four a dense random vector); `<u, f(x + t v)>` at
//!   `t = 0, +-1, +-2, +-3` steps, a step being `h = 1e-3` times `clamp(|x|, 1e-3, 1)` of the
//!   element (relative below 1, so small values are not stepped across zero); the central
//!   difference `D(h)` is compared with the declared backward's `<J^T u, v>` (or `<u, J v>`),
//!   within [`declared_bound`];
//! - a probe whose one-sided differences disagree beyond what the curvature next to it
//!   explains sits within h of a kink or order crossing: it is skipped and counted, never
//!   averaged; more than half skipped is `Inconclusive`, a failure;
//! - for ops with kinks (`selection`), points placed exactly on kinks (ties, zeros; see
//!   `kinks`), where the backward must be the subgradient the convention names;
//! - with both VJP and JVP declared, `<u, J v> = <J^T u, v>` is checked on every probe;
//! - the negative control re-judges the same probes with the backward scaled (by 1.01, and by
//!   `1 + delta` for the smallest relative error `delta` the probes prove they catch),
//!   sign-flipped and routed to the neighbouring element; each must be rejected, else the check
//!   "could not fail" and gradcheck fails.
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
mod kinks;
mod probe;

use crate::core::decl::OpDecl;
use crate::core::error::KernelRegistrationError;
use crate::core::op::RegisteredOp;
use crate::core::registry::Registry;
use crate::core::tensor::{Scalar, Tensor};
use crate::train::tape::{exec, Mode, Tape, TapeError};
use op_contract::contract::{Backward, Category, Contract, DType, Tolerance};
use op_contract::sample::Rng;
use probe::{measure, Checker, Measured, Probe};
use std::fmt;
use thiserror::Error;

/// How a gradcheck samples.
#[derive(Clone, Debug, PartialEq)]
pub struct GradcheckOptions {
    /// Number of probes (coordinate, random cotangent) to sample.
    pub probes: usize,
    /// Central-difference step (relative below `|x| = 1`, see the module docs).
    pub h: f64,
    /// Mixed into the seed (which comes from the op's content hash); 0 by default.
    pub salt: u64,
    /// Dim symbols or integer parameters pinned to a value instead of sampled, e.g.
    /// `("n", 50_000)` to check at a size the generator never picks. The binding must still be
    /// admissible, else [`GradcheckError::NoAdmissibleInput`]. Empty by default.
    pub pin: Vec<(String, i128)>,
}

impl Default for GradcheckOptions {
    fn default() -> Self {
        GradcheckOptions { probes: 32, h: 1e-3, salt: 0, pin: Vec::new() }
    }
}

/// A deliberate corruption of a backward, applied to its result.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub enum Corruption {
    /// Every gradient element multiplied by a factor.
    Scaled(f64),
    /// Every gradient element negated.
    SignFlipped,
    /// Each element receives its right neighbour's gradient (routed one element over).
    Neighbour,
    /// Every gradient element zero.
    Zero,
}

impl Corruption {
    fn apply(self, own: f64, neighbour: f64) -> f64 {
        match self {
            Corruption::Scaled(f) => own * f,
            Corruption::SignFlipped => -own,
            Corruption::Neighbour => neighbour,
            Corruption::Zero => 0.0,
        }
    }
}

impl fmt::Display for Corruption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Corruption::Scaled(k) => write!(f, "scaled by {k}"),
            Corruption::SignFlipped => f.write_str("sign flipped"),
            Corruption::Neighbour => f.write_str("routed to the neighbouring element"),
            Corruption::Zero => f.write_str("zeroed"),
        }
    }
}

/// What the negative control did with one corruption.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ControlOutcome {
    /// The corruption.
    pub corruption: Corruption,
    /// Whether it must be rejected: always for scaling and sign flips; for neighbour routing,
    /// where it changes the backward beyond the bound at some probe (else it proves nothing).
    pub applicable: bool,
    /// Whether the check rejected it.
    pub rejected: bool,
}

/// The backward form that was checked.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub enum BackwardForm {
    /// A declared VJP.
    Vjp {
        /// The VJP rule's path.
        path: String,
    },
    /// Declared JVP rules (one per differentiable input).
    Jvp {
        /// The JVP rules' paths.
        rules: Vec<String>,
    },
    /// Both; checked against each other too.
    VjpJvp {
        /// The VJP rule's path.
        vjp: String,
        /// The JVP rules' paths.
        rules: Vec<String>,
    },
    /// Derived from the composite graph on the tape.
    Composite {
        /// The graph builder's path (empty if unnamed).
        graph: String,
        /// The ops the graph recorded on the tape, in order.
        ops: Vec<String>,
    },
}

impl BackwardForm {
    fn corrupted_name(&self) -> &'static str {
        match self {
            BackwardForm::Jvp { .. } => "jvp",
            _ => "vjp",
        }
    }
}

/// The result of a passing gradcheck. `Display` prints the report.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct GradcheckReport {
    /// `name@version`.
    pub op: String,
    /// Content hash (hex).
    pub content_hash: String,
    /// The generated binding shown in the header (parameters, else dims).
    pub bindings: Vec<(String, String)>,
    /// The reference function's name.
    pub reference: String,
    /// The op's description (first sentence).
    pub description: String,
    /// The backward form checked.
    pub backward: BackwardForm,
    /// The declared subgradient rule, if any.
    pub subgradient: Option<String>,
    /// Central-difference step.
    pub h: f64,
    /// Probes sampled.
    pub probes: usize,
    /// Probes skipped because one-sided differences disagreed (a kink within h).
    pub skipped: usize,
    /// Probes skipped because the forward was not finite near the point.
    pub skipped_nonfinite: usize,
    /// `an order crossing` (selection ops) or `a kink`.
    pub kink_word: String,
    /// Points placed on kinks where the convention was checked (ties, zeros); `None` for ops
    /// without kinks (not probed).
    pub kinks: Option<(usize, usize)>,
    /// Largest |analytic - numeric| over checked probes.
    pub max_abs_err: f64,
    /// That error relative to `max(|numeric|, |analytic|)` at its probe.
    pub max_rel_err: f64,
    /// The bound applied at that probe.
    pub bound_applied: f64,
    /// Largest |analytic - numeric| / allowed (below 1 passes).
    pub worst_ratio: f64,
    /// The declared tolerance class.
    pub tolerance: String,
    /// The relative term of the bound: f64 rounding, or a `loose` class's `rtol` (see
    /// [`declared_bound`]).
    pub rel_bound: f64,
    /// Largest |<u, J v> - <J^T u, v>| where both VJP and JVP are declared.
    pub consistency: Option<f64>,
    /// The negative control, one outcome per corruption tried.
    pub negative_control: Vec<ControlOutcome>,
    /// The smallest relative error of the backward the probes prove they catch (a backward
    /// scaled by `1 + delta` is among the corruptions, and was rejected); `None` where every
    /// checked probe has a zero backward.
    pub smallest_caught: Option<f64>,
}

impl GradcheckReport {
    /// JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

impl fmt::Display for GradcheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut head: Vec<String> = self.bindings.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        head.push("reference path".into());
        head.push("f64".into());
        writeln!(f, "gradcheck  {}   ({})", self.op, head.join(", "))?;
        let desc = if self.description.is_empty() { String::new() } else { format!(" ({})", self.description) };
        writeln!(f, "  forward  : author reference `{}`{desc}", self.reference)?;
        let sub = self.subgradient.as_ref().map(|s| format!(" -- {s}")).unwrap_or_default();
        match &self.backward {
            BackwardForm::Vjp { path } => writeln!(f, "  vjp      : declared backward `{path}`{sub}")?,
            BackwardForm::Jvp { rules } => writeln!(f, "  jvp      : declared rules {}{sub}", ticks(rules))?,
            BackwardForm::VjpJvp { vjp, rules } => {
                writeln!(f, "  vjp      : declared backward `{vjp}`{sub}")?;
                let c = self.consistency.map(|c| format!(" (max difference {c:.1e})")).unwrap_or_default();
                writeln!(f, "  jvp      : declared rules {}; <u, J v> = <J^T u, v> on every probe{c}", ticks(rules))?;
            }
            BackwardForm::Composite { graph, ops } => {
                writeln!(f, "  vjp      : derived from the composite graph `{graph}` ({} on the tape){sub}", ops.join(" -> "))?
            }
        }
        writeln!(
            f,
            "  probes   : {} sampled, central differences, h = {:e} (relative below |x| = 1); values log-uniform over 1e-3..1e3, both signs",
            self.probes, self.h
        )?;
        write!(f, "  skipped  : {} within h of {} (no derivative exists there)", self.skipped, self.kink_word)?;
        if self.skipped_nonfinite > 0 {
            write!(f, "; {} where the forward is not finite", self.skipped_nonfinite)?;
        }
        writeln!(f)?;
        match self.kinks {
            Some((ties, zeros)) => writeln!(
                f,
                "  kinks    : {} probed ({ties} ties, {zeros} zeros), convention held (ties in index order: the earlier element's derivative from below, the later's from above; zeros between the one-sided derivatives)",
                ties + zeros
            )?,
            None => writeln!(f, "  kinks    : not probed (no kinks in this category)")?,
        }
        writeln!(
            f,
            "  bound    : max |analytic - numeric| = {:.1e} (relative {:.1e}) against the bound applied there {:.1e} (declared {}: relative {:.1e} plus the probe's truncation and rounding)",
            self.max_abs_err, self.max_rel_err, self.bound_applied, self.tolerance, self.rel_bound
        )?;
        write!(f, "  negative control : corrupted {} {}", self.backward.corrupted_name(), self.negative_control_verdict())?;
        match (self.smallest_caught, self.negative_control_rejected()) {
            (Some(d), true) => writeln!(f, "; a relative error of {d:.1e} or more is caught"),
            _ => writeln!(f),
        }
    }
}

impl GradcheckReport {
    /// Whether the negative control did its job, judged from the recorded outcomes: at least
    /// one corruption applied, and every applicable one was rejected.
    pub fn negative_control_rejected(&self) -> bool {
        self.negative_control.iter().any(|c| c.applicable) && self.negative_control.iter().all(|c| !c.applicable || c.rejected)
    }

    /// The negative-control verdict as the report prints it, from the recorded outcomes:
    /// `REJECTED` (which corruptions were tried is in `negative_control`),
    /// `ACCEPTED (<corruptions that passed>)`, or `NOT RUN` when no corruption applied.
    fn negative_control_verdict(&self) -> String {
        let passed: Vec<String> =
            self.negative_control.iter().filter(|c| c.applicable && !c.rejected).map(|c| c.corruption.to_string()).collect();
        if !passed.is_empty() {
            format!("ACCEPTED ({}): the check could not fail", passed.join(", "))
        } else if self.negative_control_rejected() {
            "REJECTED".to_string()
        } else {
            "NOT RUN (no corruption changed the backward beyond the bound)".to_string()
        }
    }
}

fn ticks(v: &[String]) -> String {
    v.iter().map(|r| format!("`{r}`")).collect::<Vec<_>>().join(", ")
}

/// Why a gradcheck failed or could not run. Every variant names the op.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum GradcheckError {
    /// The op is declared `backward = none`: there is nothing to check and no gradient to ask.
    #[error("op `{op}` is declared `backward = none`: gradients cannot flow through it")]
    NotDifferentiable {
        /// The op's `name@version`.
        op: String,
    },
    /// The declaration could not be loaded.
    #[error(transparent)]
    Load(#[from] KernelRegistrationError),
    /// The reference has no f64 instantiation.
    #[error("op `{op}`: gradcheck runs the reference in f64, but it is not generic; write it as `fn {rust}<T: Real>(..)`")]
    NoF64Reference {
        /// The op's `name@version`.
        op: String,
        /// The reference function's Rust name.
        rust: String,
    },
    /// The op has no float tensor input to differentiate.
    #[error("op `{op}` declares a backward but has no float tensor input to differentiate")]
    NoDifferentiableInput {
        /// The op's `name@version`.
        op: String,
    },
    /// No admissible binding of dims and parameters was found.
    #[error("op `{op}`: no admissible input shapes found for its signature after {tries} tries")]
    NoAdmissibleInput {
        /// The op's `name@version`.
        op: String,
        /// Bindings tried.
        tries: usize,
    },
    /// The forward is not finite on any generated input.
    #[error("op `{op}`: the reference is not finite on the generated inputs (signed and positive values tried)")]
    NoFiniteInput {
        /// The op's `name@version`.
        op: String,
    },
    /// The backward disagrees with finite differences.
    #[error("op `{op}`: the declared {form} disagrees with central differences along {at}: analytic {analytic:e}, numeric {numeric:e}, |difference| {diff:.3e} over the allowed {allowed:.3e} ({failing} of {checked} checked probes fail)")]
    Mismatch {
        /// The op's `name@version`.
        op: String,
        /// The backward checked (`VJP`, `JVP` or `composite graph's VJP`).
        form: String,
        /// The worst probe's direction: an input element, or `a random direction`.
        at: String,
        /// The backward's directional derivative there.
        analytic: f64,
        /// The central-difference estimate there.
        numeric: f64,
        /// `|analytic - numeric|`.
        diff: f64,
        /// The bound it exceeds.
        allowed: f64,
        /// Probes over the bound.
        failing: usize,
        /// Probes checked (kinks skipped).
        checked: usize,
    },
    /// VJP and JVP disagree: <u, J v> != <J^T u, v>.
    #[error("op `{op}`: the declared VJP and JVP disagree along {at}: <u, J v> = {jvp:e}, <J^T u, v> = {vjp:e}, allowed {allowed:.3e}")]
    Inconsistent {
        /// The op's `name@version`.
        op: String,
        /// The probe's direction: an input element, or `a random direction`.
        at: String,
        /// `<u, J v>` from the JVP.
        jvp: f64,
        /// `<J^T u, v>` from the VJP.
        vjp: f64,
        /// The bound the difference exceeds.
        allowed: f64,
    },
    /// Too many probes sat on kinks.
    #[error("op `{op}`: inconclusive: {skipped} of {probes} probes sat within h of a kink or order crossing (more than half); nothing was certified")]
    Inconclusive {
        /// The op's `name@version`.
        op: String,
        /// Probes skipped (kinks and non-finite forwards).
        skipped: usize,
        /// Probes sampled.
        probes: usize,
    },
    /// The negative control was not rejected: the check could not fail.
    #[error(
        "op `{op}`: the check could not fail: a corrupted backward ({corruption}) passed the same probes, so passing certifies nothing"
    )]
    NegativeControlAccepted {
        /// The op's `name@version`.
        op: String,
        /// The corruption that passed.
        corruption: String,
    },
    /// At a point placed on a kink, the backward is not the subgradient the convention names.
    #[error("op `{op}`: at a kink ({at}) the declared backward gives {analytic:e}, where the one-sided derivatives are {left:e} (from below) and {right:e} (from above); the convention names {expected}")]
    KinkConvention {
        /// The op's `name@version`.
        op: String,
        /// Where: the tied or zeroed elements.
        at: String,
        /// The backward's value there.
        analytic: f64,
        /// The one-sided derivative from below.
        left: f64,
        /// The one-sided derivative from above.
        right: f64,
        /// What the convention names.
        expected: String,
    },
    /// A shim failed.
    #[error("op `{op}`: {message}")]
    Shim {
        /// The op's `name@version`.
        op: String,
        /// The shim's error message.
        message: String,
    },
    /// Recording or running the composite graph failed.
    #[error(transparent)]
    Tape(#[from] TapeError),
}

impl GradcheckError {
    /// Whether the check ran and rejected the backward (as opposed to being unable to run).
    pub fn is_rejection(&self) -> bool {
        matches!(self, GradcheckError::Mismatch { .. } | GradcheckError::Inconsistent { .. } | GradcheckError::KinkConvention { .. })
    }
    /// Whether the check ran and did not certify: rejected, inconclusive, or unable to fail.
    pub fn is_check_failure(&self) -> bool {
        self.is_rejection() || matches!(self, GradcheckError::Inconclusive { .. } | GradcheckError::NegativeControlAccepted { .. })
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
    binding: case::Binding,
    rng: Rng,
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

/// [`CASES`] independent draws of the values (same binding), each retried until the forward is
/// finite: a kink that happens to sit where many probes look (a tie at a median, say) can then
/// cost at most one draw's probes.
fn value_cases(op: &RegisteredOp, binding: &case::Binding, rng: &mut Rng) -> Result<Vec<Vec<Tensor>>, GradcheckError> {
    let mut cases = Vec::with_capacity(CASES);
    for _ in 0..CASES {
        let mut chosen = None;
        for _ in 0..8 {
            let Some(inputs) = case::tensors(op, binding, rng) else { continue };
            let refs: Vec<&Tensor> = inputs.iter().collect();
            let outs = exec::forward_f64(op, &refs, &binding.params).map_err(|m| GradcheckError::Shim { op: op.id.clone(), message: m })?;
            if outs.iter().all(|o| o.as_slice::<f64>().is_none_or(|v| v.iter().all(|x| x.is_finite()))) {
                chosen = Some(inputs);
                break;
            }
        }
        cases.push(chosen.ok_or_else(|| GradcheckError::NoFiniteInput { op: op.id.clone() })?);
    }
    Ok(cases)
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
    let inferred = crate::train::tape::planner::infer(op, &typed, params, Some(DType::f64)).map_err(TapeError::from)?;
    t.record_graph(op, builder, &ins, params, &inferred)?;
    if let BackwardForm::Composite { ops, .. } = form {
        *ops = t.ops();
    }
    Ok(Some(t))
}

fn setup(registry: &Registry, decl: &'static OpDecl, opts: &GradcheckOptions) -> Result<Setup, GradcheckError> {
    let op = RegisteredOp::load(decl)?;
    let mut form = form_of(&op, decl)?;
    let mut rng = Rng::from_hash(&op.hash, 0x6772_6164 ^ opts.salt);
    let binding = case::binding(&op, &opts.pin, &mut rng)
        .ok_or_else(|| GradcheckError::NoAdmissibleInput { op: op.id.clone(), tries: case::BINDING_TRIES })?;
    let cases = value_cases(&op, &binding, &mut rng)?;
    let inputs = cases[0].clone();
    let len = inputs.iter().map(Tensor::numel).max().unwrap_or(1);
    let (rel, atol) = declared_bound(&op.contract.tolerance, len);
    let graph = composite_graph(registry, &op, decl, &inputs, &binding.params, &mut form)?;
    let (has_vjp, has_jvp) =
        (!matches!(form, BackwardForm::Jvp { .. }), matches!(form, BackwardForm::Jvp { .. } | BackwardForm::VjpJvp { .. }));
    let diff = exec::diff_positions(&op);
    if diff.iter().map(|&p| inputs[p].numel()).sum::<usize>() == 0 {
        return Err(GradcheckError::NoDifferentiableInput { op: op.id.clone() });
    }
    let (op_id, contract) = (op.id.clone(), op.contract.clone());
    let ck = Checker { op, inputs, params: binding.params.clone(), diff, rel, atol, h: opts.h, len, graph, has_vjp, has_jvp };
    Ok(Setup { op_id, contract, form, ck, cases, binding, rng })
}

/// Samples and measures every probe, the draws taken in turn.
fn sample_probes(s: &mut Setup, probes: usize) -> Result<Vec<Measured>, GradcheckError> {
    let out_shapes = s.ck.out_shapes()?;
    let sizes: Vec<usize> = s.ck.diff.iter().map(|&p| s.ck.inputs[p].numel()).collect();
    let per_case = probes.div_ceil(CASES).max(1);
    let mut measured = Vec::with_capacity(probes);
    let mut base = Vec::new();
    for p in 0..probes {
        if p % per_case == 0 {
            s.ck.inputs = s.cases[(p / per_case).min(CASES - 1)].clone();
            base = s.ck.forward(&s.ck.inputs)?;
        }
        let u = s.ck.cotangent(&out_shapes, &mut s.rng);
        let dir = s.ck.direction(p, &sizes, &u, &base, &mut s.rng)?;
        measured.push(measure(&s.ck, &dir, &u, &base)?);
    }
    Ok(measured)
}

/// The check proper over the checked probes: what the report shows of it.
struct Judged {
    max_abs_err: f64,
    max_rel_err: f64,
    bound_applied: f64,
    worst_ratio: f64,
}

fn input_name(c: &Contract, ck: &Checker, at: (usize, Option<usize>)) -> String {
    match at {
        (k, Some(j)) => format!("`{}`[{j}]", c.signature.inputs().nth(ck.diff[k]).map(|t| t.name.as_str()).unwrap_or("?")),
        (_, None) => "a random direction".to_string(),
    }
}

// Comparisons are written `!(err <= allowed)` so that a NaN fails them.
#[allow(clippy::neg_cmp_op_on_partial_ord)]
fn judge(s: &Setup, probes: &[&Probe]) -> Result<Judged, GradcheckError> {
    let ck = &s.ck;
    let mut j = Judged { max_abs_err: 0.0, max_rel_err: 0.0, bound_applied: 0.0, worst_ratio: 0.0 };
    let mut worst: Option<&Probe> = None;
    // The probe of the largest absolute error: the report's error, its relative value and the
    // bound applied there all describe this one probe.
    let mut largest: Option<&Probe> = None;
    let mut failing = 0;
    for p in probes {
        let err = (p.analytic - p.numeric).abs();
        let ratio = err / ck.allowed(p, p.analytic).max(f64::MIN_POSITIVE);
        failing += !(ratio <= 1.0) as usize;
        if err > j.max_abs_err || (largest.is_none() && !err.is_nan()) {
            j.max_abs_err = err;
            largest = Some(p);
        }
        if !(ratio <= j.worst_ratio) || worst.is_none() {
            j.worst_ratio = if ratio.is_nan() { f64::INFINITY } else { ratio };
            worst = Some(p);
        }
    }
    let Some(p) = worst else { return Ok(j) };
    if let Some(l) = largest {
        j.bound_applied = ck.allowed(l, l.analytic);
        j.max_rel_err = (l.analytic - l.numeric).abs() / l.numeric.abs().max(l.analytic.abs()).max(f64::MIN_POSITIVE);
    }
    if failing == 0 {
        return Ok(j);
    }
    let form = match &s.form {
        BackwardForm::Jvp { .. } => "JVP".to_string(),
        BackwardForm::Composite { .. } => "composite graph's VJP".to_string(),
        _ => "VJP".to_string(),
    };
    Err(GradcheckError::Mismatch {
        op: s.op_id.clone(),
        form,
        at: input_name(&s.contract, ck, p.at),
        analytic: p.analytic,
        numeric: p.numeric,
        diff: (p.analytic - p.numeric).abs(),
        allowed: ck.allowed(p, p.analytic),
        failing,
        checked: probes.len(),
    })
}

/// VJP / JVP consistency on every probe, where both are declared: the largest difference.
#[allow(clippy::neg_cmp_op_on_partial_ord)]
fn consistency(s: &Setup, probes: &[&Probe]) -> Result<Option<f64>, GradcheckError> {
    if !matches!(s.form, BackwardForm::VjpJvp { .. }) {
        return Ok(None);
    }
    let mut worst = 0.0f64;
    for p in probes {
        let Some(jv) = p.jvp else { continue };
        let allowed = s.ck.allowed(p, jv);
        let d = (jv - p.analytic).abs();
        if !(d <= allowed) {
            let at = input_name(&s.contract, &s.ck, p.at);
            return Err(GradcheckError::Inconsistent { op: s.op_id.clone(), at, jvp: jv, vjp: p.analytic, allowed });
        }
        worst = worst.max(d);
    }
    Ok(Some(worst))
}

/// The smallest relative error `delta` of the backward that some probe proves it catches: at a
/// probe with `a = analytic`, a backward `a (1 + delta)` is at least `delta |a| - |a - numeric|`
/// from the numeric value, beyond the bound once `delta > (allowed + |a - numeric|) / |a|`
/// (with the bound's own growth, `rel delta |a|`, taken out). Twice the smallest such value, so
/// that the negative control that applies it is rejected with room to spare.
fn smallest_caught(ck: &Checker, probes: &[&Probe]) -> Option<f64> {
    probes
        .iter()
        .filter(|p| p.analytic != 0.0 && p.analytic.is_finite())
        .map(|p| 2.0 * (ck.allowed(p, p.analytic) + (p.analytic - p.numeric).abs()) / (p.analytic.abs() * (1.0 - ck.rel)))
        .filter(|d| d.is_finite())
        .min_by(f64::total_cmp)
}

/// The negative control: the same probes, a corrupted backward. Scaling and a sign flip must
/// be rejected (they change every nonzero gradient); routing to the neighbouring element must
/// be rejected wherever it changes the backward by more than the bound (for a constant
/// gradient, e.g. `sum`, it is the identity and proves nothing, so it is reported n/a).
#[allow(clippy::neg_cmp_op_on_partial_ord)]
fn negative_control(ck: &Checker, probes: &[&Probe], smallest: Option<f64>) -> Vec<ControlOutcome> {
    let scale = 1.0 + (8.0 * ck.rel).max(0.01);
    let mut corruptions = vec![Corruption::Scaled(scale), Corruption::SignFlipped, Corruption::Neighbour];
    corruptions.extend(smallest.filter(|d| *d < 0.01).map(|d| Corruption::Scaled(1.0 + d)));
    corruptions
        .into_iter()
        .map(|corruption| {
            let mut applicable = !matches!(corruption, Corruption::Neighbour);
            let mut rejected = false;
            for p in probes {
                let bad = corruption.apply(p.analytic, p.neighbour);
                if (bad - p.analytic).abs() > 2.0 * ck.allowed(p, bad.abs().max(p.analytic.abs())) {
                    applicable = true;
                }
                if !((bad - p.numeric).abs() <= ck.allowed(p, bad)) {
                    rejected = true;
                }
            }
            ControlOutcome { corruption, applicable, rejected }
        })
        .collect()
}

/// Gradchecks an op: see the module docs and [`declared_bound`]. A composite op's graph
/// resolves the ops it records in `registry` (`op_runtime::gradcheck` passes the process-wide
/// one).
pub fn gradcheck_with(registry: &Registry, decl: &'static OpDecl, opts: &GradcheckOptions) -> Result<GradcheckReport, GradcheckError> {
    let mut s = setup(registry, decl, opts)?;
    let measured = sample_probes(&mut s, opts.probes)?;
    let skipped = measured.iter().filter(|m| matches!(m, Measured::Kink)).count();
    let skipped_nonfinite = measured.iter().filter(|m| matches!(m, Measured::NonFinite)).count();
    if 2 * (skipped + skipped_nonfinite) > opts.probes {
        return Err(GradcheckError::Inconclusive { op: s.op_id.clone(), skipped: skipped + skipped_nonfinite, probes: opts.probes });
    }
    let probes: Vec<&Probe> = measured.iter().filter_map(|m| if let Measured::Checked(p) = m { Some(p) } else { None }).collect();
    let judged = judge(&s, &probes)?;
    let consistency = consistency(&s, &probes)?;
    let kinks = if s.contract.category.has_kinks() {
        let k = kinks::probe(&mut s.ck, &s.cases, &mut s.rng)?;
        Some((k.ties, k.zeros))
    } else {
        None
    };
    let smallest = smallest_caught(&s.ck, &probes);
    let control = negative_control(&s.ck, &probes, smallest);
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
        probes: opts.probes,
        skipped,
        skipped_nonfinite,
        kink_word: if c.category == Category::Selection { "an order crossing".into() } else { "a kink".into() },
        kinks,
        max_abs_err: judged.max_abs_err,
        max_rel_err: judged.max_rel_err,
        bound_applied: judged.bound_applied,
        worst_ratio: judged.worst_ratio,
        tolerance: c.tolerance.to_string(),
        rel_bound: s.ck.rel,
        consistency,
        negative_control: control,
        smallest_caught: smallest.filter(|d| *d < 0.01),
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
/// and `round = 4 eps64 ((sqrt(len) + 8) A + (c + 8) B) / h` where, over the `c` outputs that
/// changed, `A = sum |u| max(|f(x + t v)|, |f(x)|)` (each output's own rounding, an
/// accumulation of up to `len` terms) and `B = sum |u (f(x + t v) - f(x))|` (rounding of the
/// sum over them); dense probes add the rounding of `x + t v`. Both are estimates of the finite
/// difference's own error; neither depends on the declared class.
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
    fn the_negative_control_line_follows_the_recorded_outcomes() {
        let outcome = |corruption, applicable, rejected| ControlOutcome { corruption, applicable, rejected };
        let mut r = GradcheckReport {
            op: "test/x@1".into(),
            content_hash: String::new(),
            bindings: vec![],
            reference: "x".into(),
            description: String::new(),
            backward: BackwardForm::Vjp { path: "x_vjp".into() },
            subgradient: None,
            h: 1e-3,
            probes: 32,
            skipped: 0,
            skipped_nonfinite: 0,
            kink_word: "a kink".into(),
            kinks: None,
            max_abs_err: 0.0,
            max_rel_err: 0.0,
            bound_applied: 0.0,
            worst_ratio: 0.0,
            tolerance: "exact".into(),
            rel_bound: 1e-13,
            consistency: None,
            negative_control: vec![
                outcome(Corruption::Scaled(1.01), true, true),
                outcome(Corruption::SignFlipped, true, true),
                outcome(Corruption::Neighbour, false, false),
            ],
            smallest_caught: Some(3e-12),
        };
        assert!(r.negative_control_rejected());
        assert!(
            r.to_string().ends_with("negative control : corrupted vjp REJECTED; a relative error of 3.0e-12 or more is caught\n"),
            "{r}"
        );
        r.negative_control[1].rejected = false;
        assert!(!r.negative_control_rejected());
        let text = r.to_string();
        assert!(text.contains("negative control : corrupted vjp ACCEPTED (sign flipped)") && !text.contains("REJECTED"), "{text}");
        r.negative_control.iter_mut().for_each(|c| c.applicable = false);
        assert!(!r.negative_control_rejected());
        assert!(r.to_string().contains("negative control : corrupted vjp NOT RUN"), "{r}");
        r.backward = BackwardForm::Jvp { rules: vec!["x_jvp".into()] };
        r.negative_control = vec![outcome(Corruption::Zero, true, true)];
        assert!(r.to_string().contains("negative control : corrupted jvp REJECTED"), "{r}");
    }

    #[test]
    fn descriptions_keep_their_first_sentence() {
        assert_eq!(first_sentence("Median of `x`: out[i] = median(x[i .. i + w])."), "Median of `x`: out[i] = median(x[i .. i + w])");
        assert_eq!(first_sentence("\n  Sum. Returns a scalar.\nMore."), "Sum");
        assert_eq!(first_sentence(""), "");
    }

    #[test]
    fn corruptions_apply_and_describe_themselves() {
        assert_eq!(Corruption::Scaled(1.01).apply(2.0, 5.0), 2.02);
        assert_eq!(Corruption::SignFlipped.apply(2.0, 5.0), -2.0);
        assert_eq!(Corruption::Neighbour.apply(2.0, 5.0), 5.0);
        assert_eq!(Corruption::Zero.apply(2.0, 5.0), 0.0);
        assert_eq!(Corruption::Scaled(1.01).to_string(), "scaled by 1.01");
        let d = probe::Dir { v: vec![vec![1.0, 2.0, 3.0]], coord: None, step: 1e-3 };
        assert_eq!(d.shifted().v, vec![vec![3.0, 1.0, 2.0]]);
        assert_eq!(d.dot(&[vec![1.0, 1.0, 1.0]]), 6.0);
    }

    #[test]
    fn an_unloadable_declaration_is_a_typed_error() {
        let n = &crate::builtins::neg::DECL;
        let bad: &'static OpDecl = Box::leak(Box::new(OpDecl {
            rust_name: n.rust_name,
            site: n.site,
            module: n.module,
            contract_json: "{",
            body_tokens: n.body_tokens,
            hash: n.hash,
            description: n.description,
            kernels: n.kernels,
            reference: n.reference,
            reference_f64: n.reference_f64,
            cpu: n.cpu,
            vjp: n.vjp,
            vjp_f64: n.vjp_f64,
            vjp_cpu: n.vjp_cpu,
            jvp: n.jvp,
            jvp_f64: n.jvp_f64,
            composite: n.composite,
            members: n.members,
        }));
        assert!(matches!(crate::gradcheck(bad), Err(GradcheckError::Load(_))));
    }
}
