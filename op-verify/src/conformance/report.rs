//! Failure reports: what a rejected kernel did wrong, on which case, on which device. Each
//! class of defect is named in one line (what it means, and what usually causes it) before its
//! raw numbers, with how many of the failing cases it explains. Owns the wording only; the
//! verdict is `compare`'s, the classes `classes`' and `explain`'s.

use super::cases::Case;
use super::compare::{Class, Fault, Mismatch};
use op_contract::contract::{Category, DType, NanPolicy, SignedZero, Tolerance};
use op_core::backend::canary_bits;
use op_core::device::DeviceProfile;
use op_core::kind::BackendKind;
use std::fmt;

/// One class of defect, on the smallest case that shows it (shrunk, keeping the class).
#[derive(Clone, Debug)]
pub struct Defect {
    /// What kind of defect it is.
    pub class: Class,
    /// The failing case, shrunk where the generator allowed.
    pub case: Case,
    /// The case that failed first, if shrinking found a smaller one.
    pub shrunk_from: Option<String>,
    /// The name of the output that failed.
    pub output: String,
    /// The failing output's dtype.
    pub dtype: DType,
    /// What went wrong, with the raw numbers.
    pub fault: Fault,
    /// How many of the failing cases this class explains (those a class listed before it
    /// explains are not counted again).
    pub explained: usize,
}

/// Why a kernel was rejected: the classes of defect that explain the failing cases, each with
/// its smallest case; first the class that explains the most of them (ties: the most telling,
/// [`Class::rank`]), then the one that explains the most of those left, and so on.
#[derive(Clone, Debug)]
pub struct Report {
    /// `name@version`.
    pub op: String,
    /// Content hash (hex).
    pub content_hash: String,
    /// The instance checked (`T = f16`) of an op with dtype variables; empty otherwise.
    pub dtypes: String,
    /// The backend whose kernel was checked.
    pub backend: BackendKind,
    /// The device it ran on.
    pub device: DeviceProfile,
    /// The declared tolerance.
    pub tolerance: Tolerance,
    /// The declared signed-zero rule.
    pub signed_zero: SignedZero,
    /// The declared category.
    pub category: Category,
    /// The declared NaN policy.
    pub nan: Option<NanPolicy>,
    /// One entry per class of defect, never empty; the first explains the most failing cases.
    pub defects: Vec<Defect>,
    /// Cases that failed.
    pub failed: usize,
    /// Cases run.
    pub cases: usize,
    /// Cases that passed before the first failure.
    pub passed_before: usize,
}

impl Report {
    /// The first defect: the class that explains the most failing cases.
    pub fn first(&self) -> &Defect {
        &self.defects[0]
    }

    /// The defect of a class, if found (compared by kind: any shift matches `Shifted(_)`).
    pub fn defect(&self, class: &Class) -> Option<&Defect> {
        self.defects.iter().find(|d| d.class.same_kind(class))
    }

    /// The one-line explanation of a defect, as printed before its numbers.
    pub fn explain(&self, d: &Defect) -> String {
        let m = if let Fault::Mismatch(m) = &d.fault { Some(m) } else { None };
        match (&d.class, m) {
            (Class::SignOfZero, Some(m)) => self.explain_sign_of_zero(m),
            (Class::Nan, Some(m)) => self.explain_nan(m, &d.case),
            (Class::OneUlp, Some(m)) => format!(
                "within 1 ulp of the reference at every one of the {} mismatch(es): the kernel rounds differently (`x * (1 / y)` for `x / y`, a fused multiply-add, another order); `{}` allows less",
                m.count, self.tolerance
            ),
            (Class::Shifted(k), _) => format!(
                "output shifted by {k} element(s): `out[i]` holds the reference's `out[i {} {}]` wherever that exists (an index or a window start off by {})",
                if *k < 0 { '-' } else { '+' },
                k.abs(),
                k.abs()
            ),
            (Class::Unwritten, Some(m)) => format!(
                "element never written (canary intact): mismatching elements still hold the canary {}: the kernel's guard or launch geometry skips them ({} element(s) differ in all)",
                bits(canary_bits(d.dtype), d.dtype),
                m.count
            ),
            (Class::OutOfBounds(side), _) => format!(
                "{}: the kernel wrote into the canaries {} the output: its guard lets invocations {} the output through",
                d.class.name(),
                side,
                if *side == "before" { "before the start of" } else { "past the end of" }
            ),
            (Class::WrongWindow { param, was, matches }, _) => format!(
                "values from the wrong window: the output is the reference's with `{param} = {matches}` instead of `{param} = {was}` on every element both define (a window or parameter off by {})",
                (matches - was).abs()
            ),
            (Class::TieOrder, _) => "tie order: the output is the reference's on the same inputs with ties between equal elements broken the other way (the reference takes equal elements in input order, IEEE 754 total order between -0 and +0)".to_string(),
            (Class::OrderStatistic(k), _) => format!(
                "wrong order statistic: each output is the value {} {} the reference's among the elements it selects from (a sort or selection that takes the wrong rank: an index off by {} in the sorted window)",
                k.abs(),
                if *k > 0 { "distinct value(s) above" } else { "distinct value(s) below" },
                k.abs()
            ),
            (Class::WindowExtreme(side), _) => format!(
                "window {}: each output is the {} of the elements the reference selects it from, not the statistic the reference takes (a reduction with `{side}` where the op ranks)",
                if *side == "max" { "maximum" } else { "minimum" },
                if *side == "max" { "largest" } else { "smallest" }
            ),
            (Class::NanOrder, _) => "NaN ordering: the output is the reference's with NaN placed elsewhere in the order (taken as the largest or smallest value whatever its sign, or its sign ignored); the reference orders by IEEE 754 total order, -NaN < -inf < ... < +inf < +NaN: compare total-order keys of the bits (see \"Ordering convention of `selection` ops\" in the guide, `op_runtime::guide::tolerances`, docs/guide/tolerances.md)".to_string(),
            (Class::OverflowNan, Some(m)) => format!(
                "overflow to infinity meeting the opposite infinity: the kernel returned NaN where the reference gives {:e} and no input is NaN ({} element(s)): a partial result overflowed to an infinity and met an infinity of the other sign (inf - inf); keep infinite terms out of the finite partial sums, or sum in a wider type",
                m.expected, m.count
            ),
            (Class::Permuted, Some(m)) => format!(
                "right values in the wrong order: the output holds exactly the reference's values, {} of them in other places (an incomplete sort or merge, a scatter to the wrong index)",
                m.count
            ),
            (Class::ReferenceBits, Some(m)) => format!(
                "the reference's own bits, outside the bound: at every one of the {} mismatch(es) the output is bit for bit the reference's, and both are outside `{}` of the reference evaluated in f64: the reference accumulates in its own precision (a running sum in f16 or f32) and the output copies it; accumulate in f64 (`T::to_f64`) and round once",
                m.count, self.tolerance
            ),
            (Class::AccumBound(r), Some(m)) => format!(
                "exceeds the accum bound by {}: {} finite element(s) are off the f64 reference by up to that multiple of `{}`'s bound (scaled by what the reference computes: |r64|, the op on |x|, and how far it moves when the inputs move by a few eps), and nothing more specific explains them: a term lost or counted twice, a wrong coefficient, or an accumulation in too low a precision",
                super::compare::ratio_text(*r),
                m.count,
                self.tolerance
            ),
            (Class::Failed, _) => "the backend failed or returned the wrong outputs".to_string(),
            (Class::Crashed | Class::OutOfMemory | Class::TimedOut, _) => match &d.fault {
                Fault::Died(death @ crate::isolate::Death::DeviceTimedOut(_)) => {
                    format!("{death} on case #{}: the survey stopped there (the device is busy with that launch)", d.case.index)
                }
                Fault::Died(death) => format!(
                    "{death} on case #{}: the kernel ran in a child process, so the verifier and every other verdict went on",
                    d.case.index
                ),
                _ => d.class.name().to_string(),
            },
            (Class::NonDeterministic, _) => format!(
                "non-deterministic: two runs of the kernel on case #{} returned different results (a race, uninitialised memory, or state kept between calls); the case is not a rounding defect",
                d.case.index
            ),
            _ => "wrong values: not explained by the sign of zero, NaN, 1 ulp, a shift, an unwritten element, a write past the end, another window, order statistic or extreme, tie order, NaN ordering or a permutation".to_string(),
        }
    }

    fn explain_sign_of_zero(&self, m: &Mismatch) -> String {
        let sign = |b: u64, dtype_bits: u32| if b >> (dtype_bits - 1) & 1 == 1 { "-0" } else { "+0" };
        let w = (self.first().dtype.size() * 8) as u32;
        let order = if self.category == Category::Selection {
            "the reference orders -0 before +0 (IEEE 754 total order, `total_cmp`); a kernel that compares with `<`, `min` or `max` sees them as a tie (see \"Ordering convention of `selection` ops\" in the guide, `op_runtime::guide::tolerances`, docs/guide/tolerances.md, for the WGSL and CUDA total-order key)"
        } else {
            "the kernel's `min`, `max`, `select` or `+ 0.0` returned the other zero"
        };
        format!(
            "differs only in the sign of zero: the reference gives {} where the kernel gives {} ({} element(s)); {order}; if the sign of zero is not part of this op's result, declare `signed_zero = ignore` (compared by IEEE equality)",
            sign(m.expected_bits, w),
            sign(m.actual_bits, w),
            m.count
        )
    }

    fn explain_nan(&self, m: &Mismatch, case: &Case) -> String {
        let what = match (m.expected.is_nan(), m.actual.is_nan()) {
            (true, false) => format!("the kernel returned {:e} where the reference returns NaN", m.actual),
            (false, true) => format!("the kernel returned NaN where the reference returns {:e}", m.expected),
            _ => "the NaN payloads (or signs) differ".to_string(),
        };
        let nan_input = case.inputs.iter().any(|t| t.data().to_f64_vec().unwrap_or_default().iter().any(|v| v.is_nan()));
        if !nan_input {
            // No NaN came in: the kernel made one (the bits of a NaN input are not the issue).
            return format!(
                "NaN payload or NaN against a number: {what}, and no input is NaN: the kernel produced it by an invalid operation (0 / 0, inf - inf, 0 * inf) that the reference does not perform"
            );
        }
        let policy = match self.nan {
            Some(NanPolicy::Propagate) => "the op declares `nan = propagate`",
            Some(NanPolicy::Ordered) => "the op declares `nan = ordered`: NaN is moved by its total order",
            None => "the reference decides what NaN inputs give",
        };
        format!(
            "NaN payload or NaN against a number: {what} ({policy}); a float comparison, `min`/`max`/`clamp` on NaN, or a NaN test `x != x` that the shader compiler folds away loses it: test the bits instead, `(bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u`"
        )
    }
}

fn bits(b: u64, dtype: DType) -> String {
    format!("{:#0w$x}", b, w = dtype.size() * 2 + 2)
}

/// The raw numbers of a fault, one line.
fn numbers(f: &mut fmt::Formatter<'_>, d: &Defect) -> fmt::Result {
    write!(f, "output `{}` ({}): ", d.output, d.dtype)?;
    match &d.fault {
        Fault::Length { expected, actual } => write!(f, "{actual} element(s) came back, {expected} expected (guard bands included)"),
        Fault::OutputCount { expected, actual } => write!(f, "{actual} output(s) came back, {expected} expected"),
        Fault::Execution(msg) => write!(f, "the backend failed: {msg}"),
        Fault::Died(death) => write!(f, "{death}"),
        Fault::NonDeterministic(k) => match k.at {
            Some((o, i)) => write!(f, "output {o}, element {i}: first run {}, second run {}", k.first, k.second),
            None => write!(f, "first run: {}; second run: {}", k.first, k.second),
        },
        Fault::Scale(msg) => write!(f, "no accum scale from the reference path: {msg}"),
        Fault::OutOfBounds(o) => write!(
            f,
            "out-of-bounds write {} the output: element {} {} (bits {}), {} guard element(s) overwritten",
            o.side,
            o.offset,
            if o.side == "before" { "relative to the start" } else { "past the end" },
            bits(o.bits, d.dtype),
            o.count
        ),
        Fault::Mismatch(m) => write!(
            f,
            "first bad index {}: expected {:e} (bits {}), actual {:e} (bits {}){}; {}; {} element(s) differ",
            m.index,
            m.expected,
            bits(m.expected_bits, d.dtype),
            m.actual,
            bits(m.actual_bits, d.dtype),
            if m.unwritten { " = the canary pattern: the element was never written" } else { "" },
            m.detail,
            m.count
        ),
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "conformance failure: op `{}` ({}){} on {}: {} case(s) of {} failed",
            self.op,
            &self.content_hash[..16.min(self.content_hash.len())],
            if self.dtypes.is_empty() { String::new() } else { format!(" at {}", self.dtypes) },
            self.backend,
            self.failed,
            self.cases
        )?;
        writeln!(f, "  device    : {}", self.device)?;
        let sz = if self.signed_zero == SignedZero::Ignore { ", signed_zero = ignore" } else { "" };
        writeln!(f, "  tolerance : {}{sz}", self.tolerance)?;
        let names: Vec<&str> = self.defects.iter().map(|d| d.class.name()).collect();
        write!(f, "  defects   : {} class(es): {}", self.defects.len(), names.join("; "))?;
        for (i, d) in self.defects.iter().enumerate() {
            write!(f, "\n  [{}] {}\n      explains  : {} of the {} failing case(s)", i + 1, self.explain(d), d.explained, self.failed)?;
            write!(f, "\n      case      : {}", d.case)?;
            if let Some(orig) = &d.shrunk_from {
                write!(f, "\n      shrunk from: {orig}")?;
            }
            write!(f, "\n      ")?;
            numbers(f, d)?;
        }
        if self.passed_before > 0 {
            write!(f, "\n  ({} case(s) passed before the first failure)", self.passed_before)?;
        }
        Ok(())
    }
}
