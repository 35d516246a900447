//! Conformance against the reference: a kernel is correct exactly as far as it matches the
//! op's reference, within the declared tolerance, on cases the engine generated from the
//! signature (seeded from the content hash). Every output runs with guard bands of canaries;
//! a write outside it fails the case. Success mints a [`Receipt`]; failure returns a
//! [`Report`] naming the classes of defect that explain the failing cases ([`Class`]: sign of
//! zero, NaN, an overflow meeting the opposite infinity, NaN ordering, 1 ulp, shifted output,
//! unwritten element, write past the end, wrong window, wrong order statistic, window maximum
//! or minimum, tie order, right values in the wrong order, the reference's own bits, wrong
//! values), decided over every failing case (`classes`), each with the smallest case it
//! explains, shrunk while keeping its class. A reference that panics on an admissible shape is
//! a defect of the declaration, named by the shape. Owns the procedure; it must not change
//! dispatch, and nothing here is ever required to *use* an op.
//!
//! ```
//! use op_runtime::conformance::{conform, ConformanceFailure};
//! use op_runtime::{op, BackendKind, Real};
//!
//! /// `x + x`, with a fast CPU kernel.
//! #[op(name = "user/doc/double", version = 1, signature(x: f32[n]) -> f32[n],
//!      category = elementwise, tolerance = ulp(0), backward = none, cpu = double_cpu)]
//! pub fn double<T: Real>(x: &[T]) -> Vec<T> {
//!     x.iter().map(|v| *v + *v).collect()
//! }
//! pub fn double_cpu(x: &[f32]) -> Vec<f32> {
//!     x.iter().map(|v| v + v).collect()
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let h = op_runtime::register(&double::DECL)?;
//! let receipt = conform(&h, BackendKind::Cpu)?;
//! let cpu = op_runtime::registry().backend(BackendKind::Cpu).ok_or("the CPU backend is compiled in")?;
//! let profile = cpu.profile()?;
//! receipt.verify(&h.op(), &profile)?;
//! // A backend the op has no kernel for is a skip, not a verdict.
//! assert!(matches!(conform(&h, BackendKind::Wgpu), Err(ConformanceFailure::Unsupported { .. })));
//! # Ok(())
//! # }
//! ```

pub mod cases;
mod classes;
pub mod compare;
mod explain;
mod nan_ordered;
pub mod report;
mod run;
#[doc(hidden)] // for the scale tests on the built-ins floor
pub mod scale;

pub use crate::isolate::Death;
pub use cases::{Case, Corpus, Pattern, Shape as CaseShape};
pub use classes::Class;
pub use compare::{accum_bound, carry_bound, AccumScale, Fault, Flaky, Mismatch, OutOfBounds};
pub use op_contract::contract::Tolerance;
pub use op_core::limits::{Isolation, RunLimits};
pub use report::{Defect, Report};

use op_contract::contract::DType;
use op_core::device::DeviceProfile;
use op_core::kind::BackendKind;
use op_core::op::RegisteredOp;
use op_core::receipt::Receipt;
use op_core::registry::OpHandle;
use op_core::tensor::{Scalar, Tensor};
use scale::accum_scales;
use std::sync::Arc;

/// Canary elements on each side of every output in conformance runs.
pub const GUARD: usize = 16;
/// Most shrinking steps tried per class of defect.
const SHRINK_BUDGET: usize = 64;
/// Why an op did not conform (or could not be conformed) on a backend.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ConformanceFailure {
    /// The backend cannot run here (no adapter, no CUDA driver): skipped, not a verdict.
    #[error("op `{op}`: backend {backend} is unavailable here, not conformed: {reason}")]
    Unavailable {
        /// The op's `name@version`.
        op: String,
        /// The backend.
        backend: BackendKind,
        /// Why it is unavailable.
        reason: String,
    },
    /// The op has nothing to run on this backend (e.g. no WGSL kernel).
    #[error("op `{op}`: nothing to conform on {backend}: {reason}")]
    Unsupported {
        /// The op's `name@version`.
        op: String,
        /// The backend.
        backend: BackendKind,
        /// Why there is nothing to run.
        reason: String,
    },
    /// The kernel does not conform: the report names the case, index and bits.
    #[error("{0}")]
    Rejected(Box<Report>),
    /// The reference panicked on a generated (admissible) case: a defect of the declaration
    /// (a constraint is missing, or the reference does not handle a shape it admits, such as an
    /// empty dim), named by the shape.
    #[error("op `{op}`: the reference panicked on shape {shape}: add a constraint or handle it ({message}; {case})")]
    ReferencePanicked {
        /// The op's `name@version`.
        op: String,
        /// The inputs' shapes (`[2, 0]`; `a [2, 0], b [0, 3]` for several inputs).
        shape: String,
        /// The case, as displayed.
        case: String,
        /// The panic's message.
        message: String,
    },
    /// The reference itself failed on a generated (admissible) case: a contract defect.
    #[error("op `{op}`: the reference failed on admissible {case}: {message}")]
    Reference {
        /// The op's `name@version`.
        op: String,
        /// The case, as displayed.
        case: String,
        /// The reference's error message.
        message: String,
    },
    /// The reference path could not produce what an `accum` comparison is anchored on (the
    /// reference in f64 and `sum |terms|` for every output element): a contract defect (e.g. a
    /// reference that is not float-generic) or a failing f64 reference. Never a pass.
    #[error("op `{op}`: no accum scale on {case}: {message}")]
    Scale {
        /// The op's `name@version`.
        op: String,
        /// The case, as displayed.
        case: String,
        /// What was missing.
        message: String,
    },
    /// The generator found no admissible case for the signature.
    #[error("op `{op}`: the signature admits no case within the generator's size limits")]
    NoCases {
        /// The op's `name@version`.
        op: String,
    },
}

impl ConformanceFailure {
    /// Whether this is a skip (backend unavailable or unsupported) rather than a verdict.
    pub fn is_skip(&self) -> bool {
        matches!(self, ConformanceFailure::Unavailable { .. } | ConformanceFailure::Unsupported { .. })
    }

    /// The report of a rejected kernel.
    pub fn report(&self) -> Option<&Report> {
        match self {
            ConformanceFailure::Rejected(r) => Some(r),
            _ => None,
        }
    }
}

/// The corpus the engine generates for an op (deterministic: seeded from its content hash).
pub fn corpus(op: &RegisteredOp) -> Corpus {
    cases::Gen::new(op).corpus()
}

/// Runs a forward shim on host tensors (validating with `float_as`). A panicking reference or
/// shim is turned into an error, never propagated.
pub fn run_shim(
    op: &RegisteredOp,
    shim: op_core::decl::ShimFn,
    inputs: &[Tensor],
    params: &[Scalar],
    float_as: Option<DType>,
) -> Result<Vec<Tensor>, String> {
    run_shim_telling_panics(op, shim, inputs, params, float_as).map_err(|e| match e {
        ShimRun::Panicked(m) => format!("op `{}`: the function panicked: {m}", op.id),
        ShimRun::Failed(m) => m,
    })
}

/// How a shim run failed.
enum ShimRun {
    /// It panicked (the message).
    Panicked(String),
    /// Validation or the shim returned an error.
    Failed(String),
}

/// [`run_shim`], telling a panic apart.
fn run_shim_telling_panics(
    op: &RegisteredOp,
    shim: op_core::decl::ShimFn,
    inputs: &[Tensor],
    params: &[Scalar],
    float_as: Option<DType>,
) -> Result<Vec<Tensor>, ShimRun> {
    use op_core::shim::{run_telling_panics, Failure, Rule};
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let bound = op.plan.validate(&refs, params, float_as).map_err(|e| ShimRun::Failed(e.to_string()))?;
    run_telling_panics(op, shim, &refs, params, &bound, Rule::Forward).map_err(|f| match f {
        Failure::Panicked(m) => ShimRun::Panicked(m),
        Failure::Error(e) => ShimRun::Failed(e.0),
    })
}

/// The shapes of a case's inputs as a report names them: `[2, 0]` for one input, `a [2, 0],
/// b [0, 3]` for several.
fn shapes_of(op: &RegisteredOp, case: &Case) -> String {
    let shape = |t: &Tensor| format!("{:?}", t.shape());
    match case.inputs.as_slice() {
        [one] => shape(one),
        many => {
            many.iter().zip(op.contract.signature.inputs()).map(|(t, s)| format!("{} {}", s.name, shape(t))).collect::<Vec<_>>().join(", ")
        }
    }
}

struct Checker<'a> {
    op: Arc<RegisteredOp>,
    kind: BackendKind,
    /// Where and how the kernel runs (`run`).
    runner: crate::isolate::Runner<'a>,
    limits: op_core::limits::RunLimits,
}

enum CaseError {
    /// The reference panicked (the message).
    ReferencePanicked(String),
    Reference(String),
    Scale(String),
    /// A kernel fault on one output, with every class the case is consistent with
    /// (`explain::diagnose`).
    Fault {
        output: usize,
        fault: Fault,
        classes: Vec<Class>,
    },
}

impl CaseError {
    /// A fault that is its own class (the backend failed, a guard band was written).
    fn fault(output: usize, fault: Fault) -> CaseError {
        CaseError::Fault { output, classes: vec![fault.class()], fault }
    }
}

/// A kernel defect found on a case.
struct Found {
    case: Case,
    output: usize,
    fault: Fault,
    /// Every class the case is consistent with, most telling first.
    classes: Vec<Class>,
    /// How many failing cases the class of `fault` explains (see `classes::cover`).
    explained: usize,
}

/// A failing case of a survey: its index in the cases surveyed, the failing output, the fault
/// and the classes it is consistent with.
struct Failing {
    index: usize,
    output: usize,
    fault: Fault,
    classes: Vec<Class>,
}

/// The reference's outputs on a case, and where computed, its outputs on the inputs with
/// subnormals flushed, with those inputs.
type ReferenceOutputs = (Vec<Tensor>, Option<(Vec<Tensor>, Vec<Tensor>)>);

impl Checker<'_> {
    /// The reference's outputs on a case, checked against the declared NaN policy, and (for
    /// non-`exact` classes, on cases with subnormal inputs) the reference on flushed inputs.
    fn reference(&self, case: &Case) -> Result<ReferenceOutputs, CaseError> {
        let op = &*self.op;
        let expected = run_shim_telling_panics(op, op.shims.reference, &case.inputs, &case.params, None).map_err(|e| match e {
            ShimRun::Panicked(m) => CaseError::ReferencePanicked(m),
            ShimRun::Failed(m) => CaseError::Reference(m),
        })?;
        explain::check_nan_policy(op, case, &expected).map_err(CaseError::Reference)?;
        if matches!(op.contract.tolerance, Tolerance::Exact) {
            return Ok((expected, None));
        }
        let flushed: Vec<Option<Tensor>> = case.inputs.iter().map(compare::flush_subnormals).collect();
        if flushed.iter().all(Option::is_none) {
            return Ok((expected, None));
        }
        let inputs: Vec<Tensor> = flushed.into_iter().zip(&case.inputs).map(|(f, t)| f.unwrap_or_else(|| t.clone())).collect();
        let alt = run_shim(op, op.shims.reference, &inputs, &case.params, None).ok().map(|alt| (alt, inputs));
        Ok((expected, alt))
    }

    fn run(&self, case: &Case) -> Result<(), CaseError> {
        self.run_for(case, None)
    }

    /// [`Checker::run`], diagnosing a failure only as far as it can show `want` (see
    /// `explain::diagnose`).
    fn run_for(&self, case: &Case, want: Option<&Class>) -> Result<(), CaseError> {
        let op = &*self.op;
        let started = std::time::Instant::now();
        let (expected, alt) = self.reference(case)?;
        let reference_time = started.elapsed();
        let flushed = alt.as_ref().map(|(_, f)| f.as_slice());
        let scales = match op.contract.tolerance {
            Tolerance::Accum(_) => Some(scale::accum_scales_unmeasured(op, case, &expected, flushed).map_err(CaseError::Scale)?),
            _ => None,
        };
        let actual = match self.execute(case, reference_time) {
            Ok(outputs) => outputs,
            Err(fault @ Fault::Died(_)) => return Err(CaseError::fault(0, fault)),
            Err(fault) => {
                let fault = self.rerun(case, reference_time, Err(&fault)).unwrap_or(fault);
                return Err(CaseError::fault(0, fault));
            }
        };
        let alt_out = alt.as_ref().map(|(v, _)| v.as_slice());
        let mut verdict = self.compare(case, want, &expected, alt_out, scales.as_deref(), &actual);
        if verdict.is_err() && scales.is_some() {
            // The full `accum` scale (with the measured sensitivity) is never smaller: measured
            // only where the cheaper one rejects, with the same verdict on every case.
            let full = accum_scales(op, case, &expected, flushed).map_err(CaseError::Scale)?;
            verdict = self.compare(case, want, &expected, alt_out, Some(&full), &actual);
        }
        match verdict {
            Err(CaseError::Fault { output, .. }) if output < actual.len() => match self.rerun(case, reference_time, Ok(&actual)) {
                Some(fault) => Err(CaseError::fault(output, fault)),
                None => verdict,
            },
            other => other,
        }
    }

    /// Compares the kernel's outputs on a case with the reference's (`alt`: the reference on
    /// flushed inputs; `scales`: the `accum` scales), diagnosing a failure as far as it can
    /// show `want`.
    fn compare(
        &self,
        case: &Case,
        want: Option<&Class>,
        expected: &[Tensor],
        alt: Option<&[Tensor]>,
        scales: Option<&[AccumScale]>,
        actual: &[Tensor],
    ) -> Result<(), CaseError> {
        let op = &*self.op;
        if actual.len() != expected.len() {
            let fault = Fault::OutputCount { expected: expected.len(), actual: actual.len() };
            return Err(CaseError::fault(0, fault));
        }
        for (i, (e, a)) in expected.iter().zip(actual).enumerate() {
            let rule = compare::Rule {
                tol: op.contract.tolerance,
                signed_zero: op.contract.signed_zero,
                guard: GUARD,
                alt: alt.and_then(|v| v.get(i)),
                scale: scales.and_then(|s| s.get(i)),
            };
            compare::check_output(&rule, e, a).map_err(|fault| match fault {
                Fault::Scale(m) => CaseError::Scale(format!("output {i}: {m}")),
                fault => {
                    let classes = explain::diagnose(op, case, i, &fault, a, GUARD, want);
                    CaseError::Fault { output: i, fault: with_class(fault, &classes[0]), classes }
                }
            })?;
        }
        Ok(())
    }

    /// Shrinks a failing case to a smaller one that fails with the same class of defect.
    fn shrink(&self, gen: &cases::Gen<'_>, found: Found) -> (Found, bool) {
        let class = found.fault.class();
        if class == Class::TimedOut {
            // Each step could take two time limits: the case that timed out is the one reported.
            return (found, false);
        }
        debug_assert!(found.classes.iter().any(|k| k.same_kind(&class)));
        let mut found = found;
        let mut steps = 0;
        let mut shrunk = false;
        'outer: while steps < SHRINK_BUDGET {
            for s in gen.shrink_candidates(&found.case.shape) {
                steps += 1;
                if steps >= SHRINK_BUDGET {
                    break 'outer;
                }
                let Some(mut c) = gen.build("shrunk", &s, found.case.pattern, found.case.seed) else { continue };
                c.index = found.case.index;
                if let Err(e) = self.run_for(&c, Some(&class)) {
                    let CaseError::Fault { output, fault, classes } = e else { continue };
                    // Diagnosed only as far as it can show the class (the costly explanations
                    // skipped); a smaller case must also show it checked on its own, as a
                    // reader rerunning it would: else another class leads there.
                    let Some(k) = classes.iter().find(|k| k.same_kind(&class)) else { continue };
                    if !self.leads_alone(&c, &class) {
                        continue;
                    }
                    let fault = with_class(fault, k);
                    found = Found { case: c, output, fault, classes, explained: found.explained };
                    shrunk = true;
                    continue 'outer;
                }
            }
            break;
        }
        (found, shrunk)
    }

    /// Whether `class` leads the full diagnosis of `case` alone: the case fails and, of the
    /// classes it is consistent with, `class` is the one a report of that case alone names first
    /// (`classes::cover` on one case: the lowest rank).
    fn leads_alone(&self, case: &Case, class: &Class) -> bool {
        match self.run_for(case, None) {
            Err(CaseError::Fault { classes, .. }) => classes.iter().min_by_key(|k| k.rank()).is_some_and(|k| k.same_kind(class)),
            _ => false,
        }
    }

    /// A contract defect found on a case, as the typed failure.
    fn contract_defect(&self, case: &Case, e: CaseError) -> ConformanceFailure {
        let op = self.op.id.clone();
        match e {
            CaseError::ReferencePanicked(message) => {
                ConformanceFailure::ReferencePanicked { op, shape: shapes_of(&self.op, case), case: case.to_string(), message }
            }
            CaseError::Reference(message) => ConformanceFailure::Reference { op, case: case.to_string(), message },
            CaseError::Scale(message) => ConformanceFailure::Scale { op, case: case.to_string(), message },
            CaseError::Fault { .. } => ConformanceFailure::NoCases { op },
        }
    }

    /// Runs every case, keeping every failing case with the classes it is consistent with; a
    /// contract defect (the reference fails, or its `accum` scale) ends the run at once. Then
    /// decides the report's classes from the whole failing set (`classes::cover`): each class
    /// with the smallest case it explains, the one explaining the most cases first.
    fn survey(&self, cases: &[Case]) -> Result<(Vec<Found>, usize, usize), ConformanceFailure> {
        let mut failing: Vec<Failing> = Vec::new();
        let mut passed_before = cases.len();
        for (i, case) in cases.iter().enumerate() {
            match self.run(case) {
                Ok(()) => {}
                Err(CaseError::Fault { output, fault, classes }) => {
                    passed_before = passed_before.min(i);
                    // A confirmed timeout ends the survey: each further case could cost two limits.
                    let timed_out = fault.class() == Class::TimedOut;
                    failing.push(Failing { index: i, output, fault, classes });
                    if timed_out {
                        break;
                    }
                }
                Err(e) => return Err(self.contract_defect(case, e)),
            }
        }
        let diagnoses: Vec<Vec<Class>> = failing.iter().map(|f| f.classes.clone()).collect();
        let found = classes::cover(&diagnoses)
            .into_iter()
            .map(|c| {
                let f = &failing[c.first];
                let fault = with_class(f.fault.clone(), &c.class);
                Found { case: cases[f.index].clone(), output: f.output, fault, classes: f.classes.clone(), explained: c.explained }
            })
            .collect();
        Ok((found, failing.len(), passed_before))
    }

    /// The report of the defects found, in the survey's order (each shrunk when `gen` is
    /// given), each with the number of failing cases its class explains.
    fn report(&self, gen: Option<&cases::Gen<'_>>, found: Vec<Found>, device: &DeviceProfile, counts: (usize, usize, usize)) -> Report {
        let op = &self.op;
        let defects = found
            .into_iter()
            .map(|f| {
                let original = f.case.to_string();
                let (f, shrunk) = match gen {
                    Some(gen) => self.shrink(gen, f),
                    None => (f, false),
                };
                let out_sig = op.contract.signature.outputs.get(f.output);
                Defect {
                    class: f.fault.class(),
                    case: f.case,
                    shrunk_from: shrunk.then_some(original),
                    output: out_sig.map(|o| o.name.clone()).unwrap_or_else(|| "?".into()),
                    dtype: out_sig.map(|o| o.dtype).unwrap_or(DType::f32),
                    fault: f.fault,
                    explained: f.explained,
                }
            })
            .collect();
        let (failed, cases, passed_before) = counts;
        Report {
            op: op.id.clone(),
            content_hash: op.hash_hex(),
            dtypes: op.binding_text(),
            backend: self.kind,
            device: device.clone(),
            tolerance: op.contract.tolerance,
            signed_zero: op.contract.signed_zero,
            category: op.contract.category,
            nan: op.contract.nan,
            defects,
            failed,
            cases,
            passed_before,
        }
    }
}

/// `fault` with its class set to `class` (a mismatch carries the class its report names).
fn with_class(fault: Fault, class: &Class) -> Fault {
    match fault {
        Fault::Mismatch(mut m) => {
            m.class = class.clone();
            Fault::Mismatch(m)
        }
        other => other,
    }
}

/// The backend's device profile, once it is known to run the op here.
fn ready(handle: &OpHandle, kind: BackendKind) -> Result<DeviceProfile, ConformanceFailure> {
    let op = handle.op();
    let id = op.id.clone();
    let backend = handle.registry().backend(kind).ok_or_else(|| ConformanceFailure::Unavailable {
        op: id.clone(),
        backend: kind,
        reason: "not compiled into this build".into(),
    })?;
    backend.supports(&op).map_err(|reason| ConformanceFailure::Unsupported {
        op: id.clone(),
        backend: kind,
        reason: reason.to_string(),
    })?;
    backend.availability().map_err(|reason| ConformanceFailure::Unavailable {
        op: id.clone(),
        backend: kind,
        reason: reason.to_string(),
    })?;
    backend.profile().map(|p| (*p).clone()).map_err(|reason| ConformanceFailure::Unavailable {
        op: id.clone(),
        backend: kind,
        reason: reason.to_string(),
    })
}

/// Conforms the op's kernel on one backend against its reference: every generated case, every
/// output guarded. `Ok` carries the receipt; a rejection reports the smallest failing case of
/// each class of defect found (shrunk, keeping its class); a backend that cannot run here is
/// `Unavailable`/`Unsupported` (a skip, not a verdict).
pub fn conform(handle: &OpHandle, kind: BackendKind) -> Result<Receipt, ConformanceFailure> {
    let op = handle.op();
    let device = ready(handle, kind)?;
    let gen = cases::Gen::new(&op);
    let corpus = gen.corpus();
    if corpus.cases.is_empty() {
        return Err(ConformanceFailure::NoCases { op: op.id.clone() });
    }
    let checker = Checker::new(handle, kind);
    let (found, failed, passed_before) = checker.survey(&corpus.cases)?;
    if found.is_empty() {
        return Ok(Receipt::mint(&op, kind, device, corpus.cases.len(), &corpus.digest));
    }
    Err(rejected(handle, checker.report(Some(&gen), found, &device, (failed, corpus.cases.len(), passed_before))))
}

/// The verdict on a rejected kernel, recorded with the handle's registry first: default
/// selection passes over it from now on in this process (`core::registry::rejected`).
fn rejected(handle: &OpHandle, report: Report) -> ConformanceFailure {
    let classes: Vec<&str> = report.defects.iter().map(|d| d.class.name()).collect();
    let summary = format!("{} of {} case(s) failed ({})", report.failed, report.cases, classes.join("; "));
    handle.registry().reject_kernel(&handle.op(), report.backend, &report.device, summary);
    ConformanceFailure::Rejected(Box::new(report))
}

/// Checks the op's kernel on one backend on a single given case, by the same procedure and
/// tolerance rule as [`conform`] (guard bands, subnormal allowance, `accum` scale, classes),
/// without shrinking and without a receipt (a receipt covers the engine's own corpus only).
/// For targeted checks of inputs the generator does not produce; the case must be admissible.
pub fn check_case(handle: &OpHandle, kind: BackendKind, case: &Case) -> Result<(), ConformanceFailure> {
    let device = ready(handle, kind)?;
    let checker = Checker::new(handle, kind);
    let (found, failed, _) = checker.survey(std::slice::from_ref(case))?;
    if found.is_empty() {
        return Ok(());
    }
    Err(rejected(handle, checker.report(None, found, &device, (failed, 1, 0))))
}

/// The worst use of the `accum` bound by the op's kernel on one backend over its corpus:
/// the largest `|actual - r64| / bound` over every finite element of every float output (below
/// 1 conforms), and the case where it occurs. `None` for
/// ops that are not `accum`. Fails like [`conform`] where the kernel does not run here.
pub fn accum_margin(handle: &OpHandle, kind: BackendKind) -> Result<Option<(f64, String)>, ConformanceFailure> {
    let op = handle.op();
    let Tolerance::Accum(k) = op.contract.tolerance else { return Ok(None) };
    ready(handle, kind)?;
    let checker = Checker::new(handle, kind);
    let mut worst = (0.0f64, String::new());
    for case in &corpus(&op).cases {
        let (expected, _) = checker.reference(case).map_err(|e| checker.contract_defect(case, e))?;
        let scales = accum_scales(&op, case, &expected, None).map_err(|m| checker.contract_defect(case, CaseError::Scale(m)))?;
        let Ok(actual) = checker.execute(case, std::time::Duration::ZERO) else { continue };
        for ((e, a), s) in expected.iter().zip(&actual).zip(&scales) {
            for i in 0..e.numel().min(s.exact.len()) {
                let (x, v) = (s.exact[i], a.data().get_f64(GUARD + i).unwrap_or(f64::NAN));
                if !x.is_finite() || !v.is_finite() {
                    continue;
                }
                let r = (v - x).abs() / s.bound(k, e.dtype(), i);
                if r > worst.0 {
                    worst = (r, case.to_string());
                }
            }
        }
    }
    Ok(Some(worst))
}

/// Conforms the op on every backend kind, in priority order (every instance of an op with
/// dtype variables, in declaration order); backends that cannot run
/// it here (or are not compiled in) come back as `Unavailable`/`Unsupported` with the reason.
pub fn conform_all(handle: &OpHandle) -> Vec<(BackendKind, Result<Receipt, ConformanceFailure>)> {
    // Every kind, compiled in or not: a backend missing from this build is reported as
    // unavailable (so a required GPU backend cannot disappear silently with a feature flag).
    // An op with dtype variables conforms per instance (each receipt names its `dtypes`).
    handle.instances().iter().flat_map(|h| BackendKind::PRIORITY.into_iter().map(|k| (k, conform(h, k)))).collect()
}

/// Whether the backend runs one of the op's kernels (GPU or `cpu = path`), not its reference.
pub fn is_kernel(kind: BackendKind) -> bool {
    kind != BackendKind::Reference
}

#[cfg(test)]
mod tests {
    use super::*;

    use op_core::receipt::ReceiptError;
    use op_core::registry::Registry;

    fn handle(name: &str) -> OpHandle {
        Registry::with_builtins().lookup(name).expect("built-in")
    }

    #[test]
    fn reference_conforms_and_mints_a_verifiable_receipt() {
        let h = handle("builtin/matmul");
        let r = conform(&h, BackendKind::Reference).expect("the reference conforms to itself");
        let host = DeviceProfile::host(BackendKind::Reference);
        r.verify(&h.op(), &host).expect("verifies");
        assert_eq!(r.backend, BackendKind::Reference);
        assert_eq!(r.tolerance, Tolerance::Accum(2));
        let back = Receipt::from_json(&r.to_json()).expect("parses");
        assert_eq!(back, r);
        let mut t = r.clone();
        t.cases += 1;
        assert!(matches!(t.verify(&h.op(), &host), Err(ReceiptError::Digest { .. })));
        let e = r.verify(&h.op(), &DeviceProfile::host(BackendKind::Cpu)).unwrap_err();
        assert!(e.to_string().contains("conform locally"), "{e}");
    }

    #[test]
    fn backends_without_a_kernel_are_skips() {
        // `add` declares no CUDA kernel (every built-in has a `cpu` kernel now).
        let h = handle("builtin/add");
        let e = conform(&h, BackendKind::Cuda).unwrap_err();
        assert!(e.is_skip(), "{e}");
        let all = conform_all(&h);
        // One result per backend and instance (`add` is declared over f16 | bf16 | f32 | f64).
        assert_eq!(all.len(), h.registry().backends().len() * h.instances().len());
        assert!(all.iter().any(|(k, r)| *k == BackendKind::Reference && r.is_ok()));
    }

    #[test]
    fn corpus_is_deterministic_admissible_and_covers_boundaries() {
        let reg = Registry::with_builtins();
        for op in reg.ops() {
            let c = corpus(&op);
            assert!(!c.cases.is_empty(), "{}", op.id);
            assert_eq!(corpus(&op).digest, c.digest, "{}: seeded from the content hash", op.id);
            let sig = &op.contract.signature;
            for case in &c.cases {
                let refs: Vec<&Tensor> = case.inputs.iter().collect();
                assert!(op.plan.validate(&refs, &case.params, None).is_ok(), "{}: inadmissible {case}", op.id);
                for (t, v) in sig.inputs().zip(&case.inputs) {
                    let v = v.data().to_f64_vec().unwrap_or_default();
                    let nan = v.iter().any(|x| x.is_nan());
                    assert!(!nan || op.contract.admits_nan(&t.name), "{}: NaN outside the domain of `{}` in {case}", op.id, t.name);
                    if let Some(d) = op.contract.domain_of(&t.name) {
                        assert!(v.iter().all(|x| x.is_nan() || d.contains(*x)), "{}: a value outside `{d}` in {case}", op.id);
                    }
                }
            }
            // Every float op is tried on NaN, infinities, subnormals and signed zeros (the
            // built-ins declare no domain that excludes them, except `log`'s `x > 0`).
            let float = |f: &dyn Fn(f64) -> bool| {
                c.cases.iter().flat_map(|k| k.inputs.iter()).any(|t| t.data().to_f64_vec().unwrap_or_default().into_iter().any(f))
            };
            if sig.inputs().any(|t| t.dtype.is_float()) {
                // A VJP op (derived, or a built-in's differentiable one) declares none: what a
                // NaN does to a gradient is its rule's business (relu's passes none through),
                // and it is still tried on NaN. Nor does an op with no float output (a
                // comparison's mask), which no NaN can reach.
                let float_out = sig.outputs.iter().any(|o| o.dtype.is_float());
                let linked = reg.inner.vjp_links.read().map(|l| l.values().any(|v| *v == op.id)).unwrap_or(false);
                let declares = op.contract.nan.is_some() || op.vjp_of.is_some() || linked || !float_out;
                assert!(declares, "{}: a float built-in declares its NaN policy", op.id);
                assert!(float(&|v| v.is_nan()) && float(&|v| v.is_infinite()), "{}", op.id);
                assert!(float(&|v| v != 0.0 && v.abs() < f32::MIN_POSITIVE as f64), "{}: subnormals", op.id);
                if op.contract.domain.is_empty() {
                    assert!(float(&|v| v == 0.0 && v.is_sign_negative()) && float(&|v| v == 0.0 && v.is_sign_positive()), "{}", op.id);
                }
            }
        }
        let mm = reg.lookup("builtin/matmul").unwrap().op();
        let c = corpus(&mm);
        assert!(c.cases.iter().any(|k| k.sym("k") == Some(0)), "an empty contraction");
        assert!(c.cases.iter().any(|k| [k.sym("m"), k.sym("k"), k.sym("n")] == [Some(1); 3]), "the smallest non-empty product");
        assert!(c.cases.iter().any(|k| k.sym("m").unwrap_or(0) * k.sym("n").unwrap_or(0) > 64), "more outputs than one workgroup");
        let conv = reg.lookup("builtin/conv1d").unwrap().op();
        assert!(corpus(&conv).cases.iter().any(|k| k.sym("n") == k.sym("m")), "n = m: one output");
        let log = reg.lookup("builtin/log").unwrap().op();
        assert!(corpus(&log).cases.iter().any(|k| k.pattern == Pattern::Nan), "log declares NaN behaviour");
        let logs = corpus(&log).cases.iter().flat_map(|k| k.inputs[0].data().to_f64_vec().unwrap_or_default()).collect::<Vec<f64>>();
        assert!(logs.iter().all(|v| v.is_nan() || *v > 0.0), "log's domain `x > 0` holds in every case");
        assert!(logs.contains(&f64::INFINITY) && logs.iter().any(|v| *v < 1e-38), "+inf and subnormals inside the domain");
    }
}
