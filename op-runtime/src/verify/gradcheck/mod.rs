//! Gradcheck on the reference path in f64: engine-generated inputs, sampled probes compared by
//! central differences with the declared backward (VJP, JVP, or the VJP a composite graph
//! derives), kinks skipped and counted, then a negative control that must reject a corrupted
//! backward. It reads declarations and runs shims; it never registers or dispatches an op.
//!
//! The procedure, all of it seeded from the op's content hash (the author picks nothing):
//! - an admissible binding of dims and parameters (interior values preferred), then four
//!   independent draws of input values (`case`); probes are split evenly among the draws;
//! - each probe: a random cotangent `u` and a direction `v` (three in four a single coordinate
//!   the forward responds to, one in four a dense random vector); `<u, f(x + t v)>` at
//!   `t = 0, +-h, +-2h, +-3h` (h = 1e-3); the central difference `D(h)` is compared with the
//!   declared backward's `<J^T u, v>` (or `<u, J v>`), within [`declared_bound`];
//! - a probe whose one-sided differences disagree beyond what the curvature next to it
//!   explains sits within h of a kink or order crossing: it is skipped and counted, never
//!   averaged; more than half skipped is `Inconclusive`, a failure;
//! - with both VJP and JVP declared, `<u, J v> = <J^T u, v>` is checked on every probe;
//! - the negative control re-judges the same probes with the backward scaled, sign-flipped
//!   and routed to the neighbouring element; each must be rejected, else the check "could not
//!   fail" and gradcheck fails.
//!
//! ```ignore
//! let report = op_runtime::gradcheck::gradcheck(&my_op::DECL)?;
//! println!("{report}");
//! ```

mod case;

use crate::core::decl::OpDecl;
use crate::core::error::KernelRegistrationError;
use crate::core::op::RegisteredOp;
use crate::core::registry::Registry;
use crate::core::tensor::{Scalar, Tensor};
use crate::train::tape::{exec, Mode, Tape, TapeError};
use op_contract::contract::{Backward, Category, DType, Tolerance};
use std::fmt;
use thiserror::Error;

/// How a gradcheck samples.
#[derive(Clone, Debug, PartialEq)]
pub struct GradcheckOptions {
    /// Number of probes (coordinate, random cotangent) to sample.
    pub probes: usize,
    /// Central-difference step.
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
    /// Largest |analytic - numeric| over checked probes.
    pub max_abs_err: f64,
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
        writeln!(f, "  probes   : {} sampled, central differences, h = {:e}", self.probes, self.h)?;
        write!(f, "  skipped  : {} within h of {} (no derivative exists there)", self.skipped, self.kink_word)?;
        if self.skipped_nonfinite > 0 {
            write!(f, "; {} where the forward is not finite", self.skipped_nonfinite)?;
        }
        writeln!(f)?;
        writeln!(f, "  bound    : max |analytic - numeric| = {:.1e} under the declared tolerance ({})", self.max_abs_err, self.tolerance)?;
        writeln!(f, "  negative control : corrupted {} {}", self.backward.corrupted_name(), self.negative_control_verdict())
    }
}

impl GradcheckReport {
    /// Whether the negative control did its job, judged from the recorded outcomes: at least
    /// one corruption applied, and every applicable one was rejected.
    pub fn negative_control_rejected(&self) -> bool {
        self.negative_control.iter().any(|c| c.applicable) && self.negative_control.iter().all(|c| !c.applicable || c.rejected)
    }

    /// The negative-control verdict as the report prints it, from the recorded outcomes:
    /// `REJECTED` (the issue's shape; which corruptions were tried is in `negative_control`),
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
        matches!(self, GradcheckError::Mismatch { .. } | GradcheckError::Inconsistent { .. })
    }
    /// Whether the check ran and did not certify: rejected, inconclusive, or unable to fail.
    pub fn is_check_failure(&self) -> bool {
        self.is_rejection() || matches!(self, GradcheckError::Inconclusive { .. } | GradcheckError::NegativeControlAccepted { .. })
    }
}

/// Independent value draws per gradcheck (probes are split evenly among them).
const CASES: usize = 4;

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

/// A probe direction over the differentiable inputs: one coordinate, or a dense random vector.
#[derive(Clone, Debug)]
struct Dir {
    /// One vector per differentiable input.
    v: Vec<Vec<f64>>,
    /// `(k, j)` for a coordinate probe (element `j` of differentiable input `k`).
    coord: Option<(usize, usize)>,
}

impl Dir {
    /// The direction routed one element over (`v'[i] = v[i - 1]`), so `<g, v'> = sum g[i+1] v[i]`.
    fn shifted(&self) -> Dir {
        let v = self
            .v
            .iter()
            .map(|x| {
                let n = x.len();
                (0..n).map(|i| x[(i + n - 1) % n.max(1)]).collect()
            })
            .collect();
        Dir { v, coord: None }
    }
    fn dot(&self, g: &[Vec<f64>]) -> f64 {
        self.v.iter().zip(g).map(|(v, g)| v.iter().zip(g).map(|(a, b)| a * b).sum::<f64>()).sum()
    }
}

/// One probe's finite-difference measurements.
struct Probe {
    /// Where it looked: `input[index]`, or `direction` for dense probes.
    at: (usize, Option<usize>),
    numeric: f64,
    trunc: f64,
    round: f64,
    /// Backward value along the direction, and with the backward routed one element over.
    analytic: f64,
    neighbour: f64,
    /// JVP value where VJP and JVP are both declared.
    jvp: Option<f64>,
}

struct Checker {
    op: RegisteredOp,
    inputs: Vec<Tensor>,
    params: Vec<Scalar>,
    diff: Vec<usize>,
    rel: f64,
    atol: f64,
    h: f64,
    /// The largest input's length: the longest accumulation a reference can round over.
    len: usize,
    graph: Option<Tape>,
}

impl Checker {
    fn shim_err(&self) -> impl Fn(String) -> GradcheckError + '_ {
        move |message| GradcheckError::Shim { op: self.op.id.clone(), message }
    }

    fn forward(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>, GradcheckError> {
        let refs: Vec<&Tensor> = inputs.iter().collect();
        exec::forward_f64(&self.op, &refs, &self.params).map_err(self.shim_err())
    }

    /// `<u, f(x + t v) - f(x)>` (with `base = f(x)`), and its rounding budget `(A, B, c)`: see
    /// [`declared_bound`]. Taking the difference per output before summing means outputs the
    /// step does not reach cancel exactly, whatever their size or number. Coordinate probes move
    /// one element by exactly `t`.
    fn s_at(&self, dir: &Dir, t: f64, u: &[Option<Vec<f64>>], base: &[Tensor]) -> Result<(f64, Rounding), GradcheckError> {
        let mut ins = self.inputs.clone();
        for (k, v) in dir.v.iter().enumerate() {
            if let Some(x) = ins[self.diff[k]].as_mut_slice::<f64>() {
                match dir.coord {
                    Some((ck, j)) if ck == k => {
                        if let Some(x) = x.get_mut(j) {
                            *x += t;
                        }
                    }
                    Some(_) => {}
                    None => x.iter_mut().zip(v).for_each(|(x, v)| *x += t * v),
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

    /// Whether moving element `j` of differentiable input `k` by h changes any output.
    fn sensitive(&self, k: usize, j: usize, base: &[Tensor]) -> Result<bool, GradcheckError> {
        let mut ins = self.inputs.clone();
        if let Some(x) = ins[self.diff[k]].as_mut_slice::<f64>().and_then(|x| x.get_mut(j)) {
            *x += self.h;
        }
        let outs = self.forward(&ins)?;
        Ok(outs.iter().zip(base).any(|(a, b)| a != b))
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

    fn out_shapes(&self) -> Result<Vec<Vec<usize>>, GradcheckError> {
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
    fn vjp(&self, u: &[Option<Vec<f64>>]) -> Result<Vec<Vec<f64>>, GradcheckError> {
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
    fn jvp(&self, dir: &Dir, u: &[Option<Vec<f64>>]) -> Result<f64, GradcheckError> {
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

    fn allowed(&self, p: &Probe, analytic: f64) -> f64 {
        self.atol + self.rel * p.numeric.abs().max(analytic.abs()) + p.trunc + p.round
    }
}

/// What the rounding of one probed sum depends on: see [`declared_bound`].
#[derive(Clone, Copy, Debug, Default)]
struct Rounding {
    /// `A`: sum of |u| max(|f(x + t v)|, |f(x)|) over changed outputs.
    own: f64,
    /// `B`: sum of |u (f(x + t v) - f(x))|.
    diff: f64,
    /// `c`: outputs that changed.
    changed: usize,
}

impl Rounding {
    fn max(self, o: Rounding) -> Rounding {
        Rounding { own: self.own.max(o.own), diff: self.diff.max(o.diff), changed: self.changed.max(o.changed) }
    }
}

enum Measured {
    Checked(Probe),
    Kink,
    NonFinite,
}

/// Gradchecks an op: see the module docs and [`declared_bound`]. A composite op's graph
/// resolves the ops it records in `registry` (`op_runtime::gradcheck` passes the process-wide
/// one).
// Comparisons are written `!(err <= allowed)` so that a NaN fails them.
#[allow(clippy::neg_cmp_op_on_partial_ord)]
pub fn gradcheck_with(registry: &Registry, decl: &'static OpDecl, opts: &GradcheckOptions) -> Result<GradcheckReport, GradcheckError> {
    let op = RegisteredOp::load(decl)?;
    let id = op.id.clone();
    let contract = op.contract.clone();
    let c = &contract;
    let form = match &c.backward {
        Backward::None => return Err(GradcheckError::NotDifferentiable { op: id }),
        Backward::Composite { graph } => {
            if decl.composite.is_none() {
                return Err(TapeError::NoCompositeGraph { op: id }.into());
            }
            BackwardForm::Composite { graph: graph.clone().unwrap_or_default(), ops: Vec::new() }
        }
        Backward::Declared { vjp: Some(v), jvp } if !jvp.is_empty() => BackwardForm::VjpJvp { vjp: v.clone(), rules: jvp.clone() },
        Backward::Declared { vjp: Some(v), .. } => BackwardForm::Vjp { path: v.clone() },
        Backward::Declared { vjp: None, jvp } => BackwardForm::Jvp { rules: jvp.clone() },
    };
    if decl.reference_f64.is_none() {
        return Err(GradcheckError::NoF64Reference { op: id, rust: decl.rust_name.to_string() });
    }
    let diff = exec::diff_positions(&op);
    if c.signature.differentiable_inputs().next().is_none() {
        return Err(GradcheckError::NoDifferentiableInput { op: id });
    }

    // The case: an admissible binding, then values on which the forward is finite.
    let mut rng = case::Rng::from_hash(&op.hash, 0x6772_6164 ^ opts.salt);
    let binding =
        case::binding(&op, &opts.pin, &mut rng).ok_or_else(|| GradcheckError::NoAdmissibleInput { op: id.clone(), tries: 4000 })?;
    // Several independent draws of the values (same binding): a kink that happens to sit where
    // many probes look (a tie at a median, say) can then cost at most one draw's probes.
    let mut cases: Vec<Vec<Tensor>> = Vec::with_capacity(CASES);
    for _ in 0..CASES {
        let mut chosen = None;
        for values in [case::Values::Signed, case::Values::Positive, case::Values::Signed, case::Values::Positive] {
            let Some(inputs) = case::tensors(&op, &binding, values, &mut rng) else { continue };
            let refs: Vec<&Tensor> = inputs.iter().collect();
            let outs = exec::forward_f64(&op, &refs, &binding.params).map_err(|m| GradcheckError::Shim { op: id.clone(), message: m })?;
            let finite = outs.iter().all(|o| o.as_slice::<f64>().is_none_or(|v| v.iter().all(|x| x.is_finite())));
            if finite {
                chosen = Some(inputs);
                break;
            }
        }
        cases.push(chosen.ok_or_else(|| GradcheckError::NoFiniteInput { op: id.clone() })?);
    }
    let inputs = cases[0].clone();
    let len = inputs.iter().map(Tensor::numel).max().unwrap_or(1);
    let (rel, atol) = declared_bound(&c.tolerance, len);

    let mut form = form;
    let graph = match (&c.backward, decl.composite) {
        (Backward::Composite { .. }, Some(builder)) => {
            let mut t = Tape::with_mode(registry, Mode::ReferenceF64);
            let ins: Vec<(DType, Vec<usize>)> = inputs.iter().map(|t| (t.dtype(), t.shape().to_vec())).collect();
            let typed: Vec<(DType, &[usize])> = ins.iter().map(|(d, s)| (*d, s.as_slice())).collect();
            let inferred = crate::train::tape::planner::infer(&op, &typed, &binding.params, Some(DType::f64)).map_err(TapeError::from)?;
            t.record_graph(&op, builder, &ins, &binding.params, &inferred)?;
            if let BackwardForm::Composite { ops, .. } = &mut form {
                *ops = t.ops();
            }
            Some(t)
        }
        _ => None,
    };
    let hash_hex = op.hash_hex();
    let mut ck = Checker { op, inputs, params: binding.params.clone(), diff, rel, atol, h: opts.h, len, graph };

    // Output cotangent layout: random for float outputs, none for the others.
    let out_float: Vec<bool> = c.signature.outputs.iter().map(|o| o.dtype.is_float()).collect();
    let out_shapes = ck.out_shapes()?;
    let sizes: Vec<usize> = ck.diff.iter().map(|&p| ck.inputs[p].numel()).collect();
    let total: usize = sizes.iter().sum();
    if total == 0 {
        return Err(GradcheckError::NoDifferentiableInput { op: id });
    }

    let has_vjp = !matches!(form, BackwardForm::Jvp { .. });
    let has_jvp = matches!(form, BackwardForm::Jvp { .. } | BackwardForm::VjpJvp { .. });
    let mut measured = Vec::with_capacity(opts.probes);
    let mut base = Vec::new();
    for p in 0..opts.probes {
        if p % (opts.probes.div_ceil(CASES)).max(1) == 0 {
            ck.inputs = cases[(p / opts.probes.div_ceil(CASES).max(1)).min(CASES - 1)].clone();
            base = ck.forward(&ck.inputs)?;
        }
        // Even probes move one coordinate (sharp on routing), odd probes a dense random
        // direction (every element at once, so sparse gradients cannot hide).
        let dir = if p % 4 != 3 {
            // Up to 8 tries for a coordinate the forward responds to (judged by the forward alone,
            // never by the backward under test), so sparse gradients do not make probes vacuous.
            let mut chosen = (0, 0);
            for _ in 0..8 {
                let mut pick = rng.index(total);
                let mut k = 0;
                while pick >= sizes[k] {
                    pick -= sizes[k];
                    k += 1;
                }
                chosen = (k, pick);
                if ck.sensitive(k, pick, &base)? {
                    break;
                }
            }
            let (k, pick) = chosen;
            let v = sizes.iter().enumerate().map(|(q, &n)| (0..n).map(|i| if q == k && i == pick { 1.0 } else { 0.0 }).collect()).collect();
            Dir { v, coord: Some((k, pick)) }
        } else {
            Dir { v: sizes.iter().map(|&n| (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect()).collect(), coord: None }
        };
        let u: Vec<Option<Vec<f64>>> = out_shapes
            .iter()
            .zip(&out_float)
            .map(|(s, f)| f.then(|| (0..s.iter().product::<usize>()).map(|_| rng.uniform(-1.0, 1.0)).collect()))
            .collect();
        measured.push(measure(&ck, &dir, &u, &base, has_vjp, has_jvp)?);
    }

    let skipped = measured.iter().filter(|m| matches!(m, Measured::Kink)).count();
    let skipped_nonfinite = measured.iter().filter(|m| matches!(m, Measured::NonFinite)).count();
    if 2 * (skipped + skipped_nonfinite) > opts.probes {
        return Err(GradcheckError::Inconclusive { op: id, skipped: skipped + skipped_nonfinite, probes: opts.probes });
    }
    let probes: Vec<&Probe> = measured.iter().filter_map(|m| if let Measured::Checked(p) = m { Some(p) } else { None }).collect();
    let input_name = |at: (usize, Option<usize>)| match at {
        (k, Some(j)) => format!("`{}`[{j}]", c.signature.inputs().nth(ck.diff[k]).map(|t| t.name.as_str()).unwrap_or("?")),
        (_, None) => "a random direction".to_string(),
    };

    // The check proper.
    let mut max_abs_err = 0.0f64;
    let mut worst_ratio = 0.0f64;
    let mut worst: Option<&Probe> = None;
    let mut failing = 0;
    for p in &probes {
        let err = (p.analytic - p.numeric).abs();
        let ratio = err / ck.allowed(p, p.analytic).max(f64::MIN_POSITIVE);
        if !(ratio <= 1.0) {
            failing += 1;
        }
        max_abs_err = max_abs_err.max(err);
        if !(ratio <= worst_ratio) || worst.is_none() {
            worst_ratio = if ratio.is_nan() { f64::INFINITY } else { ratio };
            worst = Some(p);
        }
    }
    if failing > 0 {
        let p = worst.unwrap_or(probes[0]);
        let form_name = match &form {
            BackwardForm::Jvp { .. } => "JVP".to_string(),
            BackwardForm::Composite { .. } => "composite graph's VJP".to_string(),
            _ => "VJP".to_string(),
        };
        return Err(GradcheckError::Mismatch {
            op: id,
            form: form_name,
            at: input_name(p.at),
            analytic: p.analytic,
            numeric: p.numeric,
            diff: (p.analytic - p.numeric).abs(),
            allowed: ck.allowed(p, p.analytic),
            failing,
            checked: probes.len(),
        });
    }

    // VJP / JVP consistency, then the JVP against the numeric derivative too.
    let mut consistency = None;
    if matches!(form, BackwardForm::VjpJvp { .. }) {
        let mut worst_c = 0.0f64;
        for p in &probes {
            let Some(jv) = p.jvp else { continue };
            let allowed = ck.allowed(p, jv);
            let d = (jv - p.analytic).abs();
            if !(d <= allowed) {
                return Err(GradcheckError::Inconsistent { op: id, at: input_name(p.at), jvp: jv, vjp: p.analytic, allowed });
            }
            worst_c = worst_c.max(d);
        }
        consistency = Some(worst_c);
    }

    // The negative control: the same probes, a corrupted backward. Scaling and a sign flip must
    // be rejected (they change every nonzero gradient); routing to the neighbouring element must
    // be rejected wherever it changes the backward by more than the bound (for a constant
    // gradient, e.g. `sum`, it is the identity and proves nothing, so it is reported n/a).
    let scale = 1.0 + (8.0 * rel).max(0.01);
    let mut control = Vec::new();
    for corruption in [Corruption::Scaled(scale), Corruption::SignFlipped, Corruption::Neighbour] {
        let mut applicable = !matches!(corruption, Corruption::Neighbour);
        let mut rejected = false;
        for p in &probes {
            let bad = corruption.apply(p.analytic, p.neighbour);
            if (bad - p.analytic).abs() > 2.0 * ck.allowed(p, bad.abs().max(p.analytic.abs())) {
                applicable = true;
            }
            if !((bad - p.numeric).abs() <= ck.allowed(p, bad)) {
                rejected = true;
            }
        }
        control.push(ControlOutcome { corruption, applicable, rejected });
    }
    if let Some(c) = control.iter().find(|c| c.applicable && !c.rejected) {
        return Err(GradcheckError::NegativeControlAccepted { op: id, corruption: c.corruption.to_string() });
    }

    let params: Vec<(String, String)> = c.signature.params().zip(&ck.params).map(|(p, v)| (p.name.clone(), v.to_string())).collect();
    let bindings = if params.is_empty() {
        c.signature.dim_symbols().into_iter().filter_map(|d| binding.env.get(&d).map(|v| (d, v.to_string()))).collect()
    } else {
        params
    };
    let description = first_sentence(decl.description);
    Ok(GradcheckReport {
        op: id,
        content_hash: hash_hex,
        bindings,
        reference: decl.rust_name.to_string(),
        description,
        backward: form,
        subgradient: c.subgradient.clone(),
        h: opts.h,
        probes: opts.probes,
        skipped,
        skipped_nonfinite,
        kink_word: if c.category == Category::Selection { "an order crossing".into() } else { "a kink".into() },
        max_abs_err,
        worst_ratio,
        tolerance: c.tolerance.to_string(),
        rel_bound: rel,
        consistency,
        negative_control: control,
    })
}

fn first_sentence(d: &str) -> String {
    let line = d.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    // A sentence ends at ". " before a capital letter (not inside `x[i .. j]`).
    let b = line.as_bytes();
    let end =
        (1..b.len().saturating_sub(2)).find(|&i| b[i] == b'.' && b[i - 1] != b'.' && b[i + 1] == b' ' && b[i + 2].is_ascii_uppercase());
    end.map(|i| &line[..i]).unwrap_or(line).trim_end_matches('.').to_string()
}

/// Measures one probe: seven evaluations of <u, f(x + t v)>, t in {0, +-h, +-2h, +-3h}.
#[allow(clippy::neg_cmp_op_on_partial_ord)] // a NaN must count as a kink, not pass
fn measure(
    ck: &Checker,
    dir: &Dir,
    u: &[Option<Vec<f64>>],
    base: &[Tensor],
    has_vjp: bool,
    has_jvp: bool,
) -> Result<Measured, GradcheckError> {
    let x0 = dir.coord.and_then(|(k, j)| ck.inputs[ck.diff[k]].as_slice::<f64>().and_then(|s| s.get(j).copied()));
    let mut d = [0.0f64; 7];
    let mut s = [0.0f64; 7];
    let mut r = Rounding::default();
    for (i, m) in (-3i32..=3).enumerate() {
        let t = m as f64 * ck.h;
        // A coordinate probe uses the realized step (x0 + t is rounded); a dense one the nominal.
        d[i] = match x0 {
            Some(x0) => (x0 + t) - x0,
            None => t,
        };
        if m == 0 {
            continue; // s(0) = <u, f(x) - f(x)> = 0 exactly
        }
        let (v, ri) = ck.s_at(dir, d[i], u, base)?;
        s[i] = v;
        r = r.max(ri);
    }
    if s.iter().any(|v| !v.is_finite()) {
        return Ok(Measured::NonFinite);
    }
    let slope = |a: usize, b: usize| (s[b] - s[a]) / (d[b] - d[a]);
    let (fwd, bwd) = (slope(3, 4), slope(2, 3));
    let d1 = slope(2, 4);
    let d2 = slope(1, 5);
    let mut round = 4.0 * f64::EPSILON * (((ck.len as f64).sqrt() + 8.0) * r.own + (r.changed as f64 + 8.0) * r.diff) / ck.h;
    if x0.is_none() {
        // Rounding of x + t v in every element (independent, at most eps |x_i| each), propagated
        // through a slope of order |D(h)|: a random walk, so the l2 norm of x.
        let xnorm: f64 =
            ck.diff.iter().filter_map(|&p| ck.inputs[p].as_slice::<f64>()).flat_map(|x| x.iter()).map(|x| x * x).sum::<f64>().sqrt();
        round += 4.0 * f64::EPSILON * xnorm * d1.abs().max(1.0) / ck.h;
    }
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
    let base = ck.atol + ck.rel * fwd.abs().max(bwd.abs()) + 2.0 * round;
    let kink_a = !(c0.abs() <= base + 2.0 * cl.abs().min(cr.abs()));
    let kink_b = !((c0 - cl).abs().min((c0 - cr).abs()) <= base + (cr - cl).abs());
    if kink_a || kink_b {
        return Ok(Measured::Kink);
    }
    let (analytic, neighbour, jvp) = if has_vjp {
        let g = ck.vjp(u)?;
        let jv = if has_jvp { Some(ck.jvp(dir, u)?) } else { None };
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
            max_abs_err: 0.0,
            worst_ratio: 0.0,
            tolerance: "exact".into(),
            rel_bound: 1e-13,
            consistency: None,
            negative_control: vec![
                outcome(Corruption::Scaled(1.01), true, true),
                outcome(Corruption::SignFlipped, true, true),
                outcome(Corruption::Neighbour, false, false),
            ],
        };
        assert!(r.negative_control_rejected());
        assert!(r.to_string().ends_with("negative control : corrupted vjp REJECTED\n"), "{r}");
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
        let d = Dir { v: vec![vec![1.0, 2.0, 3.0]], coord: None };
        assert_eq!(d.shifted().v, vec![vec![3.0, 1.0, 2.0]]);
        assert_eq!(d.dot(&[vec![1.0, 1.0, 1.0]]), 6.0);
    }

    #[test]
    fn an_unloadable_declaration_is_a_typed_error() {
        let n = &crate::builtins::neg::DECL;
        let bad: &'static OpDecl = Box::leak(Box::new(OpDecl {
            rust_name: n.rust_name,
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
            jvp: n.jvp,
            jvp_f64: n.jvp_f64,
            composite: n.composite,
        }));
        assert!(matches!(crate::gradcheck(bad), Err(GradcheckError::Load(_))));
    }
}
