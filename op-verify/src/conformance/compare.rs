//! Comparison of a backend's output with the reference's, by the contract's tolerance class,
//! the guard-band check, and the class of a mismatch. Owns the numerical rules; it must not
//! generate cases or run kernels. The same text, with the selection ordering convention and
//! the WGSL/CUDA idioms, is the guide's chapter on tolerances (`op_runtime::guide::tolerances`,
//! docs/guide/tolerances.md).
//!
//! - `exact`: bit-identical, sign of zero and NaN payload included. No allowance of any kind.
//!   With `signed_zero = ignore` (a contract that says the sign of a zero result is not part
//!   of it): IEEE equality, `+0 == -0`, and NaN equal to NaN whatever its payload.
//!   **Ordering convention of `selection` ops**: values are ordered by the total order of IEEE
//!   754 (`f32::total_cmp`): `-NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN`; ties between
//!   bit-identical values keep input order. A kernel implements it by comparing unsigned keys,
//!   `key(b) = b >> 31 ? ~b : b | 0x80000000` of the bits `b`: in WGSL
//!   `select(b | 0x80000000u, ~b, (b >> 31u) == 1u)` with `b = bitcast<u32>(v)`
//!   (`examples/windowed_median/kernels/windowed_median.wgsl`), in CUDA `total_order_key` of
//!   `examples/windowed_median/kernels/total_order.cuh`
//!   (`__float_as_uint`). A plain `<`, `min` or `max` treats `-0` and `+0` as a tie (and may
//!   treat subnormals as zero, and NaN as anything): its results differ in the sign of zero.
//! - `ulp(k)`: at most `k` units in the last place apart (`approx::ulps_eq`, so `+0 == -0`);
//!   infinities must match exactly; NaN matches only NaN.
//! - `accum(k)`: anchored on the reference evaluated in f64 and on a model of summation error
//!   that does not depend on how the f32 reference happens to sum. For each output element,
//!   with `r64` the reference in f64 (the nearly exact result), `S` the element's error scale,
//!   `len` the reduction length and `eps` the dtype's machine epsilon:
//!
//!   `|actual - r64| <= k * max(1, ceil(log2 len)) * eps * S + 2 * len * min_normal`
//!
//!   `S` comes from what the reference computes (`scale`): the largest of `|r64|`, the
//!   reference in f64 on the absolute values of the inputs (the sum of the magnitudes of the
//!   element's terms: for matmul `sum |a_ip b_pj|`), and the reference's measured sensitivity
//!   to each input (and to the float parameters) moved relatively by `±δ` (`δ = 2^-20`): the
//!   componentwise condition number `sum_j |d r64 / d x_j| |x_j|` of that input, measured one
//!   value at a time for up to 256 values (exactly), by sign patterns beyond (all up, one per
//!   bit of the index, two random ones, the largest move: exact for ops that grow with every
//!   value, its order of magnitude for the others).
//!   A backward-stable kernel (its result is the exact one of inputs moved by a few eps) is
//!   off by at most a few eps times it. It is what the op on `|x|` misses where the
//!   computation cancels or is clipped: a prefix sum whose running value is clipped to
//!   `[lo, hi]` each step carries values as large as the terms since the last clip, while the
//!   op on `|x|` stays within `[lo, hi]`; a softmax of large inputs rounds `x - max` at the
//!   inputs' magnitude. It is measured only for a case that fails without it (it never
//!   lowers the bound): two runs of the f64 reference per value of a small input, about
//!   `2 log2 n + 6` for a large one.
//!
//!   Why: pairwise summation (a balanced tree, or a binary counter over blocks, as the
//!   built-in kernels sum) rounds each term at most `ceil(log2 len)` times, so its error is at
//!   most `ceil(log2 len) * (eps / 2) * S` (Higham, *Accuracy and Stability*, 4.2), plus one
//!   rounding per product or final scaling: `k = 1` covers it with room to spare, `k = 2`
//!   covers a product, a division and a flushed intermediate on top. The bound is a worst
//!   case, so it holds on every input, biased ones included: a long sequential f32 sum of 0.1
//!   is off by ~1e-3 relative (every add rounds the same way), and a bound that trusted the
//!   f32 reference's own error (the former `k * max(|r32 - r64|, sqrt(len) eps S)`) grew with
//!   that bias and hid a kernel that drops a few terms; this one stays at `2 * 17 * eps` =
//!   4e-6 relative at `len` = 131_071. A kernel that sums sequentially over long inputs does
//!   not meet `accum(k)` for small `k`.
//!
//!   **A carry.** A scan has no pairwise order where a step does not associate (a running value
//!   clipped to `[lo, hi]` each step): its element `i` is a sequential carry, rounded once per
//!   step at the running value's magnitude, and on a long stretch of equal terms those roundings
//!   go the same way (a natural f32 carry exceeded the pairwise bound by 1.01x over 71 equal
//!   terms). So where an input is shaped like an output (a scan's `x` and `y`), the bound is
//!   also at least the carry allowance `min(k * eps/2 * C, sqrt(eps) * S)` (`carry_bound`):
//!   `C = sum_t |d r64_i / d x_t| |r64_t|` over the steps `t` before `i` is the running-value
//!   scale (`scale`: the input's elements of one parity moved by `δ |r64_t|`, the output's own
//!   values; a step's rounding is such a move; twice the other parity's move, so that an op
//!   whose `y_i` comes from `x_i` alone has none; read on that output alone, and only on its
//!   elements in `x`'s units, which scale with `x` alone or with every input and parameter,
//!   and not with the others without `x`: `x / sum(x)` is shaped like `x` but no running value
//!   of it). A clip cuts the steps before
//!   it off, as it does their errors. The allowance stops at `sqrt(eps) * S`, half the significand's digits:
//!   a carry that stagnates (its terms below half an ulp of the running value, lost whole, as an
//!   f16 running sum of 0.1 stops at 256 where the exact one reaches 409.6) has lost a
//!   computation, not rounded one, and is rejected. A reduction (a contracted dim: `sum`,
//!   `matmul`) keeps the pairwise bound alone.
//!
//!   The reference's own output is held to the same bound
//!   (it is not an anchor, and bits equal to it earn nothing): a kernel that copies an f16
//!   running sum is as wrong as that sum, and a reference that accumulates in its own low
//!   precision is rejected like a kernel (the built-ins sum in f64, compensated, and round once,
//!   which is always within the bound). The absolute term `2 * len * min_normal` is the subnormal policy
//!   below applied to the accumulation: each of the at most `2 * len` roundings (a product and
//!   an add per term) may flush a subnormal result to zero, losing less than `min_normal`.
//!   Non-finite values: a NaN `r64` must be matched by a NaN (any payload); an infinite
//!   `r64` must be matched exactly; an infinite result where `r64` is finite is accepted where
//!   `|r64|` plus the bound reaches the dtype's overflow threshold (same sign), and an infinity
//!   of a sign whose terms sum to the threshold or beyond, or within the class's rounding of
//!   it (`(T + r64) / 2` for the positive terms, `(T - r64) / 2` for the negative ones, each
//!   plus `accum_bound` on that share itself, as a computed partial sum of it carries; NaN
//!   where both do): then some order of the
//!   terms overflows a partial sum (`MAX + MAX` in one subtree of a pairwise sum, where the
//!   reference's sequential order stays finite), and which order is the kernel's choice. `T` is
//!   the sum of the terms' magnitudes ([`AccumScale::terms`]): `|r64|`, the op on `|x|`, and the
//!   measured sensitivities divided by the element's degree of homogeneity (a sum of squares'
//!   is `2 r64`, no sum of terms, and when `S` was read here it took `+inf` from `MAX / 1.5`
//!   on).
//!   Nothing else about non-finite results is relaxed. `r64` and
//!   `S` are required for every element of a float output: a missing or short one is a typed
//!   error ([`Fault::Scale`]), never an infinite (accept-all) bound, and a non-finite `S` with
//!   a finite `r64` accepts only `r64` rounded to the dtype. Integer outputs are compared bit
//!   for bit.
//! - `loose(rtol, atol)`: `|actual - expected| <= atol + rtol * |expected|`.
//!
//! Subnormals (non-`exact` classes only): GPUs may flush subnormal inputs and results to zero
//! (Vulkan's `denormBehaviorIndependence`; lavapipe runs with FTZ/DAZ). A result is therefore
//! also accepted when (a) the expected value is subnormal and the actual value is a zero, or
//! (b) it matches, under the same class, the reference evaluated on the inputs with every
//! subnormal flushed to a zero of the same sign (computed only for cases that contain
//! subnormal inputs; for `accum`, anchored on that reference's own f64 evaluation, with the
//! original `S`). Nothing else is relaxed; `exact` stays bit-exact.
//!
//! Every mismatch is classified ([`Class`], `classes`) from all of its elements, before the raw
//! numbers are reported: an element never written (canary intact), only the sign of zero, only
//! NaN (payload, or NaN against a number), within 1 ulp, the output shifted by `k` elements,
//! the right values in another order, the reference's own bits (`accum`), or else how far the
//! `accum` bound is exceeded (finite values only: "exceeds the accum bound by N") or wrong values;
//! under `accum`, against the f64 reference rounded to the dtype. (`explain` adds the classes
//! that need the reference run again, and the report's class is decided over every failing
//! case.)

pub use super::classes::Class;
use super::classes::{ulps, Mismatches};
use crate::isolate::Death;
use op_contract::contract::{DType, SignedZero, Tolerance};
use op_core::backend::canary_bits;
use op_core::tensor::{Data, Tensor};

/// A mismatch at one output element.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    /// Flat index in the output.
    pub index: usize,
    /// Expected value (as f64).
    pub expected: f64,
    /// The expected value's bits in the output dtype.
    pub expected_bits: u64,
    /// Actual value (as f64).
    pub actual: f64,
    /// The actual value's bits in the output dtype.
    pub actual_bits: u64,
    /// The bound that was exceeded, described (`ulp(1): 37 ulps apart`, ...).
    pub detail: String,
    /// Elements of this output that mismatch in total.
    pub count: usize,
    /// Whether the actual bits are the canary pattern (the element was never written).
    pub unwritten: bool,
    /// What every mismatching element has in common: the first of `classes`; where it is empty,
    /// under `accum`, how far the bound is exceeded ([`Class::AccumBound`]), else wrong values.
    pub class: Class,
    /// Every class the mismatching elements' data shows, most telling first (empty: wrong
    /// values); the conformance run adds those that need the reference run again.
    pub classes: Vec<Class>,
    /// The indices of every mismatching element, ascending.
    pub bad: Vec<usize>,
}

/// A write outside the output.
#[derive(Clone, Debug, PartialEq)]
pub struct OutOfBounds {
    /// `before` or `after` the output.
    pub side: &'static str,
    /// Element offset from the output's start (negative before) or end (0 = first past it).
    pub offset: i64,
    /// The bits found in the guard band.
    pub bits: u64,
    /// Number of guard elements overwritten.
    pub count: usize,
}

/// How one output failed.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// The output has the wrong number of elements.
    Length {
        /// Elements expected, guard bands included.
        expected: usize,
        /// Elements returned.
        actual: usize,
    },
    /// A value outside the tolerance (boxed: it carries the whole story of the output).
    Mismatch(Box<Mismatch>),
    /// A guard band was written.
    OutOfBounds(OutOfBounds),
    /// The backend returned an error for this case.
    Execution(String),
    /// The `accum` scale (the f64 reference and `sum |terms|`) is missing or too short for
    /// this output: the reference path failed to produce it. Not a verdict on the kernel.
    Scale(String),
    /// The backend returned a different number of outputs.
    OutputCount {
        /// Outputs the reference produced.
        expected: usize,
        /// Outputs the backend returned.
        actual: usize,
    },
    /// The kernel's process died on the case (it ran in a child process): a crash, an exit,
    /// memory, or a timeout.
    Died(Death),
    /// Two runs of the kernel on the case returned different results.
    NonDeterministic(Box<Flaky>),
}

/// Two runs of a kernel on one case that disagree.
#[derive(Clone, Debug, PartialEq)]
pub struct Flaky {
    /// The output and element where the runs first differ, where both returned outputs of the
    /// same shape.
    pub at: Option<(usize, usize)>,
    /// The first run's result there (a value and its bits, or how it failed).
    pub first: String,
    /// The second run's.
    pub second: String,
}

impl Fault {
    /// The fault's class as far as the comparison can tell (see [`Class`]).
    pub fn class(&self) -> Class {
        match self {
            Fault::Mismatch(m) => m.class.clone(),
            Fault::OutOfBounds(o) => Class::OutOfBounds(o.side),
            Fault::Length { .. } | Fault::Execution(_) | Fault::Scale(_) | Fault::OutputCount { .. } => Class::Failed,
            Fault::Died(Death::OutOfMemory { .. }) => Class::OutOfMemory,
            Fault::Died(Death::TimedOut { .. } | Death::DeviceTimedOut(_)) => Class::TimedOut,
            Fault::Died(Death::Lost(_)) => Class::Failed,
            Fault::Died(_) => Class::Crashed,
            Fault::NonDeterministic(_) => Class::NonDeterministic,
        }
    }
}

/// Per-output information needed by `accum` (see the module doc). For a float output, both
/// `magnitude` and `exact` must hold one value per element; anything shorter is a
/// [`Fault::Scale`].
#[derive(Clone, Debug, Default)]
pub struct AccumScale {
    /// Reduction length.
    pub len: usize,
    /// The error scale `S` of each output element (see the module doc): at least the sum of the
    /// magnitudes of its terms.
    pub magnitude: Vec<f64>,
    /// The reference evaluated in f64 (the nearly exact result `r64`).
    pub exact: Vec<f64>,
    /// The reference evaluated in f64 on the inputs with subnormals flushed (the anchor of the
    /// flushed-input allowance); empty when the case has no subnormal input.
    pub flushed_exact: Vec<f64>,
    /// The magnitudes of each output element's terms summed, `T`: `|r64|`, the op on `|x|`, and
    /// what the measured sensitivities show by Euler's rule for homogeneous functions: an
    /// input's (or the parameters') sensitivity over `d` where the element is homogeneous of
    /// degree `d >= 1` in it (a sum: 1; a product's factor: 1; a sum of squares: 2, whose
    /// sensitivity `2 r64` is no sum of terms), or the inputs' sensitivities summed over the
    /// joint degree where only all of them together scale it (`sum(x) - sum(y)`: the op on
    /// `|x|` cancels where the op does). Nothing from them where some input enters with degree
    /// 0 or below (a normalisation's input, a divisor: `x y / z` would count `|r64|` thrice).
    /// What the overflow rule splits into positive and negative terms (see the module doc).
    /// Where shorter than the output, `|r64|` stands for it (no share of the terms beyond the
    /// result), as it does for a `T` that is not finite.
    pub terms: Vec<f64>,
    /// The running-value scale `C` of each output element (see the module doc, "a carry"):
    /// `sum_t |d r64 / d x_t| |r64_t|` over the elements `t` of an input shaped like the output,
    /// what a sequential carry's roundings reach the element by. Empty where not measured (no
    /// allowance).
    pub carry: Vec<f64>,
}

impl AccumScale {
    /// The `accum(k)` bound of element `i` at `dtype`: the pairwise bound on `S`
    /// ([`accum_bound`]), or the carry allowance ([`carry_bound`]) where that is larger.
    pub fn bound(&self, k: u32, dtype: DType, i: usize) -> f64 {
        let s = self.magnitude.get(i).copied().unwrap_or(f64::INFINITY);
        accum_bound(k, dtype, self.len, s).max(carry_bound(k, dtype, s, self.carry.get(i).copied().unwrap_or(0.0)))
    }

    /// `S`, the terms' magnitudes and `C` of element `i` (the terms `|r64|` where not given,
    /// `C` 0 where not measured).
    fn scales(&self, i: usize) -> Scales {
        let terms = self.terms.get(i).copied().unwrap_or_else(|| self.exact.get(i).map_or(0.0, |x| x.abs()));
        Scales { s: self.magnitude[i], terms, c: self.carry.get(i).copied().unwrap_or(0.0) }
    }

    /// Checks that the scale covers an output of `n` elements.
    fn covers(&self, n: usize) -> Result<(), String> {
        if self.magnitude.len() < n || self.exact.len() < n {
            return Err(format!(
                "the reference path produced {} error scale(s) S and {} f64 result(s) for an output of {n} element(s)",
                self.magnitude.len(),
                self.exact.len()
            ));
        }
        Ok(())
    }
}

/// The scales of one element under `accum` (see [`AccumScale`]): `S`, the sum of its terms'
/// magnitudes, and `C`.
#[derive(Clone, Copy, Debug)]
struct Scales {
    s: f64,
    terms: f64,
    c: f64,
}

/// How one output is compared: the contract's class and signed-zero rule, the guard band, and
/// what the class needs besides the reference's output.
#[derive(Clone, Copy, Debug)]
pub struct Rule<'a> {
    /// The tolerance class.
    pub tol: Tolerance,
    /// Whether `exact` compares the sign of zero.
    pub signed_zero: SignedZero,
    /// Canary elements on each side of the output.
    pub guard: usize,
    /// The reference on the inputs with subnormals flushed, if computed (non-`exact` only).
    pub alt: Option<&'a Tensor>,
    /// The `accum` scale of this output.
    pub scale: Option<&'a AccumScale>,
}

impl Rule<'_> {
    /// `tol` with the default signed-zero rule, a guard band and nothing else.
    #[cfg(test)]
    pub fn new(tol: Tolerance, guard: usize) -> Rule<'static> {
        Rule { tol, signed_zero: SignedZero::Exact, guard, alt: None, scale: None }
    }
}

/// The machine epsilon of a float dtype (0 for the others).
pub fn eps(dtype: DType) -> f64 {
    match dtype {
        DType::f16 => 9.765625e-4,
        DType::bf16 => 7.8125e-3,
        DType::f32 => f32::EPSILON as f64,
        DType::f64 => f64::EPSILON,
        _ => 0.0,
    }
}

fn min_normal(dtype: DType) -> f64 {
    match dtype {
        DType::f16 => 6.103515625e-5,
        DType::bf16 | DType::f32 => f32::MIN_POSITIVE as f64,
        DType::f64 => f64::MIN_POSITIVE,
        _ => 0.0,
    }
}

/// Whether `v` is a non-zero subnormal of `dtype`.
pub fn is_subnormal(v: f64, dtype: DType) -> bool {
    dtype.is_float() && v != 0.0 && v.is_finite() && v.abs() < min_normal(dtype)
}

/// Whether `actual` matches `expected` under `tol` (not counting subnormal allowances).
fn within(tol: Tolerance, signed_zero: SignedZero, dtype: DType, e: f64, eb: u64, a: f64, ab: u64) -> Result<(), String> {
    if matches!(tol, Tolerance::Exact) || !dtype.is_float() && !matches!(tol, Tolerance::Accum(_) | Tolerance::Loose { .. }) {
        if eb == ab {
            return Ok(());
        }
        if signed_zero == SignedZero::Ignore && dtype.is_float() && (e == a || e.is_nan() && a.is_nan()) {
            return Ok(());
        }
        return Err(format!("{tol}: bits differ{}", if signed_zero == SignedZero::Ignore { " and the values are not equal" } else { "" }));
    }
    if e.is_nan() || a.is_nan() {
        return if e.is_nan() && a.is_nan() { Ok(()) } else { Err(format!("{tol}: NaN against a number")) };
    }
    if e.is_infinite() || a.is_infinite() {
        return if e == a { Ok(()) } else { Err(format!("{tol}: infinity against a different value")) };
    }
    match tol {
        Tolerance::Ulp(k) => {
            let ok = match dtype {
                DType::f32 => approx::ulps_eq!(a as f32, e as f32, epsilon = 0.0, max_ulps = k),
                DType::f64 => approx::ulps_eq!(a, e, epsilon = 0.0, max_ulps = k),
                _ => e == a || ulps(eb, ab, dtype) <= k as u64,
            };
            if ok {
                Ok(())
            } else {
                Err(format!("{tol}: {} ulps apart", ulps(eb, ab, dtype)))
            }
        }
        Tolerance::Loose { rtol, atol } => {
            let bound = atol + rtol * e.abs();
            if (a - e).abs() <= bound {
                Ok(())
            } else {
                Err(format!("{tol}: |actual - expected| = {:e} exceeds {bound:e}", (a - e).abs()))
            }
        }
        // `exact` is decided above; `accum` has its own rule (`accum_within`), which needs the
        // scale.
        Tolerance::Exact | Tolerance::Accum(_) => Err(format!("{tol}: no scale to compare with")),
    }
}

/// Where an exact result rounds to infinity at `dtype` (to nearest): `MAX + ulp(MAX) / 2`, with
/// `MAX = (2 - eps) 2^emax` and `ulp(MAX) = eps 2^emax`, so `(2 - eps / 2) 2^emax` (f32:
/// `2^128 - 2^103`; f16: 65520; f64: beyond f64, infinite). It was `MAX (1 + eps / 2)`, a whole
/// ulp past `MAX`: an f32 partial sum between `MAX + ulp / 2` and `MAX + ulp`, which overflows,
/// was taken for one that cannot.
fn overflow_from(dtype: DType) -> f64 {
    let e = eps(dtype);
    overflow_threshold(dtype) / (2.0 - e) * (2.0 - e / 2.0)
}

fn overflow_threshold(dtype: DType) -> f64 {
    match dtype {
        DType::f16 => 65504.0,
        DType::bf16 => 3.3895313892515355e38,
        DType::f32 => f32::MAX as f64,
        _ => f64::MAX,
    }
}

/// `max(1, ceil(log2 len))`: how often pairwise summation of `len` terms rounds each term.
pub fn pairwise_depth(len: usize) -> u32 {
    len.max(2).next_power_of_two().ilog2()
}

/// The `accum(k)` bound of one element (see the module doc):
/// `k * max(1, ceil(log2 len)) * eps * S + 2 * len * min_normal`.
pub fn accum_bound(k: u32, dtype: DType, len: usize, s: f64) -> f64 {
    k as f64 * pairwise_depth(len) as f64 * eps(dtype) * s + 2.0 * len.max(1) as f64 * min_normal(dtype)
}

/// The carry allowance of one element under `accum(k)`: `min(k * eps/2 * C, sqrt(eps) * S)`
/// (see the module doc). A sequential carry rounds once per step at the running value's
/// magnitude, which reaches the element as the op's sensitivity to that step does: `C`. The
/// allowance stops at `sqrt(eps) * S`, half the significand's digits: a carry that stagnates
/// (terms below half an ulp of the running value, lost whole, as an f16 running sum of 0.1 stops
/// at 256) is a lost computation, not rounding. 0 where `C` or `S` is not finite.
pub fn carry_bound(k: u32, dtype: DType, s: f64, c: f64) -> f64 {
    if !(c.is_finite() && s.is_finite()) {
        return 0.0;
    }
    let e = eps(dtype);
    (k as f64 * e / 2.0 * c).min(e.sqrt() * s).max(0.0)
}

/// The bits of `x` rounded to the float dtype `dtype` (to nearest).
fn rounded_bits(x: f64, dtype: DType) -> u64 {
    super::cases::to_data(dtype, &[x]).bits(0).unwrap_or_default()
}

/// The `accum(k)` verdict for one element of a float output: `a` (bits `ab`, at the declared
/// dtype) against the reference's f64 evaluation `x`, with `S`, the terms' magnitudes `T` (the
/// overflow rule's) and `C` from `Scales`. The reference's own output does not enter: it is
/// held to the same bound as any kernel.
fn accum_within(k: u32, dtype: DType, len: usize, Scales { s, terms, c }: Scales, x: f64, a: f64, ab: u64) -> Result<(), String> {
    let tol = Tolerance::Accum(k);
    if x.is_nan() {
        // The exact result is NaN (a NaN input, or `inf - inf` among the inputs' terms).
        return if a.is_nan() { Ok(()) } else { Err(format!("{tol}: the f64 reference is NaN, the kernel returned {a:e}")) };
    }
    if !a.is_finite() && s.is_finite() && x.is_finite() {
        // The positive (negative) terms sum to `(T + r64) / 2` (`(T - r64) / 2`), `T` the sum
        // of their magnitudes: where that reaches the overflow threshold, a partial sum of that
        // sign may overflow in the kernel's order (MAX + MAX in one subtree) although the exact
        // result is finite; NaN needs both signs to. (`T`, not `S`: see `AccumScale::terms`.)
        // (An exact sum overflows from `MAX + ulp(MAX) / 2` on: `overflow_from`.) `T` and
        // `r64` are f64 sums, each within a few f64 roundings of `T`: where `T` is so large that
        // this uncertainty reaches the threshold (terms beyond 1e54, e.g. products of f32
        // extremes), a share of that size cannot be told from zero, and counts as reaching it.
        let max = overflow_from(dtype);
        // Never below `|r64|`; a `T` that is not finite (a scale built by hand: `scales` gives
        // a finite one wherever `S` is) counts as `|r64|`, never as an accept-all.
        let t = if terms.is_finite() { terms.max(x.abs()) } else { x.abs() };
        // A partial sum is computed, not exact: in an order the class admits, a partial sum
        // of a subset is at most its positive terms plus the class's rounding of the subset's
        // magnitudes, `P_s - N_s + g (P_s + N_s) <= P (1 + g)` with `g = k depth eps`: so a
        // share within `accum_bound` of its own size below the threshold may overflow too. The
        // share's own, not `T`'s: on `T` a sum of large negative terms gave its empty positive
        // share a slack past MAX (`+inf` for `-1e46` in f32, for `-5.8e6` in f16).
        let reaches = |share: f64| share + 4.0 * f64::EPSILON * t + accum_bound(k, dtype, len, share.max(0.0)) >= max;
        let (pos, neg) = (reaches((t + x) / 2.0), reaches((t - x) / 2.0));
        if (a == f64::INFINITY && pos) || (a == f64::NEG_INFINITY && neg) || (a.is_nan() && pos && neg) {
            return Ok(());
        }
    }
    if a.is_nan() {
        return Err(format!("{tol}: NaN against a number (f64 reference {x:e})"));
    }
    if x.is_infinite() {
        // An infinite input makes the exact result infinite; an overflowed intermediate of the
        // kernel's (MAX + MAX - inf = NaN) is its own defect.
        return if a == x { Ok(()) } else { Err(format!("{tol}: the f64 reference is {x:e}, the kernel returned {a:e}")) };
    }
    if !s.is_finite() {
        // No bound exists: only the f64 reference itself, rounded once, conforms.
        return if ab == rounded_bits(x, dtype) {
            Ok(())
        } else {
            Err(format!("{tol}: the error scale S is {s:e} for a finite f64 reference {x:e}: only that value rounded to {dtype} conforms"))
        };
    }
    let pairwise = accum_bound(k, dtype, len, s);
    let carried = carry_bound(k, dtype, s, c);
    let bound = pairwise.max(carried);
    if a.is_infinite() {
        let max = overflow_threshold(dtype);
        return if a.signum() == x.signum() && x.abs() + bound >= max {
            Ok(())
        } else {
            Err(format!("{tol}: infinity where the f64 reference is {x:e} (bound {bound:e} does not reach overflow)"))
        };
    }
    let d = (a - x).abs();
    if d <= bound {
        return Ok(());
    }
    let what = if carried > pairwise {
        format!("the carry allowance min({k} * eps/2 * C {c:e}, sqrt(eps) * S {s:e}) = {bound:e}")
    } else {
        format!("{k} * ceil(log2 len {len}) = {} * eps * S {s:e} + flush = {bound:e}", k * pairwise_depth(len))
    };
    Err(format!(
        "{tol}: |actual - f64 reference {x:e}| = {d:e} (relative {:.2e}) exceeds the bound by {}: {what}",
        d / x.abs().max(f64::MIN_POSITIVE),
        ratio_text(d / bound),
    ))
}

/// `r` (a ratio above 1) with three significant digits, or in exponent form from 10,000 on:
/// `1.04`, `37.5`, `812`, `2.3e7`.
pub fn ratio_text(r: f64) -> String {
    if !r.is_finite() || r >= 1e4 {
        return format!("{r:.1e}");
    }
    let decimals = (2 - r.max(1.0).log10().floor() as i32).max(0) as usize;
    format!("{r:.decimals$}")
}

/// The largest `|actual - r64| / bound` over the mismatching elements `bad` of a float output
/// under `accum(k)` (the kernel's `actual`, `guard` canaries each side), where each of them is
/// a finite value against a finite `r64` and `S`: a non-finite mismatch is another defect than
/// the size of an error. `None` otherwise.
fn accum_excess(k: u32, dtype: DType, s: &AccumScale, actual: &Data, guard: usize, bad: &[usize]) -> Option<f64> {
    bad.iter().try_fold(0.0f64, |worst, &i| {
        let (x, m, a) = (*s.exact.get(i)?, *s.magnitude.get(i)?, actual.get_f64(guard + i)?);
        let finite = x.is_finite() && m.is_finite() && a.is_finite();
        finite.then(|| worst.max((a - x).abs() / s.bound(k, dtype, i)))
    })
}

/// Checks the guard bands of a guarded output (`guard` canaries, `n` elements, `guard`
/// canaries): a write outside the output is a failure whatever the values.
fn check_guards(data: &Data, n: usize, guard: usize, canary: u64) -> Result<(), Fault> {
    for (side, range) in [("before", 0..guard), ("after", guard + n..2 * guard + n)] {
        let hit: Vec<usize> = range.clone().filter(|i| data.bits(*i) != Some(canary)).collect();
        if let Some(&first) = hit.first() {
            let offset = if side == "before" { first as i64 - guard as i64 } else { (first - range.start) as i64 };
            return Err(Fault::OutOfBounds(OutOfBounds { side, offset, bits: data.bits(first).unwrap_or_default(), count: hit.len() }));
        }
    }
    Ok(())
}

/// The verdict of element `i` (already known to be in the output), subnormal allowances
/// included.
fn element(
    rule: &Rule<'_>,
    accum: Option<(u32, &AccumScale)>,
    expected: &Data,
    actual: &Data,
    i: usize,
    dtype: DType,
) -> Result<(), String> {
    let (e, eb) = (expected.get_f64(i).unwrap_or(f64::NAN), expected.bits(i).unwrap_or_default());
    let (a, ab) = (actual.get_f64(rule.guard + i).unwrap_or(f64::NAN), actual.bits(rule.guard + i).unwrap_or_default());
    let verdict = match (rule.tol, accum) {
        (Tolerance::Accum(k), Some((_, s))) => accum_within(k, dtype, s.len, s.scales(i), s.exact[i], a, ab),
        // Integer outputs (no scale) compare bit for bit.
        (Tolerance::Accum(_), None) if eb == ab => Ok(()),
        (Tolerance::Accum(k), None) => Err(format!("{}: bits differ (integer output)", Tolerance::Accum(k))),
        (tol, _) => within(tol, rule.signed_zero, dtype, e, eb, a, ab),
    };
    let Err(detail) = verdict else { return Ok(()) };
    if matches!(rule.tol, Tolerance::Exact) || !dtype.is_float() {
        return Err(detail);
    }
    // A flushed subnormal result, or agreement with the reference on flushed inputs.
    if is_subnormal(e, dtype) && a == 0.0 {
        return Ok(());
    }
    if let Some(alt) = rule.alt {
        let (fe, feb) = (alt.data().get_f64(i).unwrap_or(f64::NAN), alt.data().bits(i).unwrap_or_default());
        let ok = match accum {
            // Anchored on the flushed reference's own f64 evaluation; without one, no allowance.
            Some((k, s)) => s.flushed_exact.get(i).is_some_and(|fx| accum_within(k, dtype, s.len, s.scales(i), *fx, a, ab).is_ok()),
            None => within(rule.tol, rule.signed_zero, dtype, fe, feb, a, ab).is_ok(),
        };
        if ok || (is_subnormal(fe, dtype) && a == 0.0) {
            return Ok(());
        }
    }
    Err(detail)
}

/// Checks one guarded output (`guard` canaries, data, `guard` canaries) against the expected
/// tensor under `rule`; a mismatch carries its [`Class`].
pub fn check_output(rule: &Rule<'_>, expected: &Tensor, actual: &Tensor) -> Result<(), Fault> {
    let (n, guard) = (expected.numel(), rule.guard);
    if actual.numel() != n + 2 * guard || actual.dtype() != expected.dtype() {
        return Err(Fault::Length { expected: n + 2 * guard, actual: actual.numel() });
    }
    let dtype = expected.dtype();
    let canary = canary_bits(dtype);
    check_guards(actual.data(), n, guard, canary)?;
    let accum = match (rule.tol, rule.scale) {
        (Tolerance::Accum(k), Some(s)) if dtype.is_float() => {
            s.covers(n).map_err(|m| Fault::Scale(format!("{}: {m}", rule.tol)))?;
            Some((k, s))
        }
        (Tolerance::Accum(_), None) if dtype.is_float() => {
            return Err(Fault::Scale(format!("{}: no error scale S or f64 reference for this output", rule.tol)))
        }
        _ => None,
    };
    let mut bad = Vec::new();
    let mut first = None;
    for i in 0..n {
        if let Err(detail) = element(rule, accum, expected.data(), actual.data(), i, dtype) {
            bad.push(i);
            first.get_or_insert((i, detail));
        }
    }
    let Some((i, detail)) = first else { return Ok(()) };
    let (e, a) = (expected.data(), actual.data());
    let actual_bits = a.bits(guard + i).unwrap_or_default();
    // Under `accum`, the classes are decided against the f64 reference rounded to the dtype.
    let rounded = accum.map(|(_, s)| super::cases::to_data(dtype, &s.exact[..n]));
    let anchor = rounded.as_ref().unwrap_or(e);
    let classes = Mismatches { dtype, anchor, reference: rounded.as_ref().map(|_| e), actual: a, guard, bad: &bad, canary }.classes();
    // Where nothing more specific explains it, an `accum` mismatch of finite values is named by
    // how far it exceeds the bound, not as wrong values.
    let unexplained = match accum.and_then(|(k, s)| accum_excess(k, dtype, s, a, guard, &bad)) {
        Some(r) => Class::AccumBound(r),
        None => Class::Value,
    };
    Err(Fault::Mismatch(Box::new(Mismatch {
        index: i,
        expected: e.get_f64(i).unwrap_or(f64::NAN),
        expected_bits: e.bits(i).unwrap_or_default(),
        actual: a.get_f64(guard + i).unwrap_or(f64::NAN),
        actual_bits,
        detail,
        count: bad.len(),
        unwritten: actual_bits == canary,
        class: classes.first().cloned().unwrap_or(unexplained),
        classes,
        bad,
    })))
}

/// Flushes every subnormal of a float tensor to a zero of the same sign; `None` when the tensor
/// has none (or is not float).
pub fn flush_subnormals(t: &Tensor) -> Option<Tensor> {
    let dtype = t.dtype();
    if !dtype.is_float() {
        return None;
    }
    let mut any = false;
    let v: Vec<f64> = t
        .data()
        .to_f64_vec()?
        .into_iter()
        .map(|x| {
            if is_subnormal(x, dtype) {
                any = true;
                if x.is_sign_negative() {
                    -0.0
                } else {
                    0.0
                }
            } else {
                x
            }
        })
        .collect();
    if !any {
        return None;
    }
    Tensor::new(t.shape().to_vec(), super::cases::to_data(dtype, &v)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guarded(v: &[f32], guard: usize) -> Tensor {
        let t = Tensor::vector(v.to_vec());
        op_core::backend::pad_with_canaries(t, guard).unwrap()
    }

    fn check(tol: Tolerance, e: &Tensor, a: &Tensor, guard: usize) -> Result<(), Fault> {
        check_output(&Rule::new(tol, guard), e, a)
    }

    fn check_accum(k: u32, e: &Tensor, a: &Tensor, s: &AccumScale) -> Result<(), Fault> {
        check_output(&Rule { scale: Some(s), ..Rule::new(Tolerance::Accum(k), 1) }, e, a)
    }

    fn class(f: Fault) -> Class {
        f.class()
    }

    #[test]
    fn exact_is_bit_exact_including_zero_sign() {
        let e = Tensor::vector(vec![0.0f32, 1.0]);
        assert!(check(Tolerance::Exact, &e, &guarded(&[0.0, 1.0], 2), 2).is_ok());
        let f = check(Tolerance::Exact, &e, &guarded(&[-0.0, 1.0], 2), 2).unwrap_err();
        assert!(matches!(&f, Fault::Mismatch(m) if m.index == 0), "{f:?}");
        assert_eq!(class(f), Class::SignOfZero);
        // A subnormal flushed to zero is not exact.
        let e = Tensor::vector(vec![1e-45f32]);
        assert!(check(Tolerance::Exact, &e, &guarded(&[0.0], 1), 1).is_err());
    }

    #[test]
    fn signed_zero_ignore_is_ieee_equality_with_nan_equal_to_nan() {
        let ignore = Rule { signed_zero: SignedZero::Ignore, ..Rule::new(Tolerance::Exact, 1) };
        let nan_a = f32::from_bits(0x7fc0_0001);
        let e = Tensor::vector(vec![0.0f32, -0.0, f32::NAN, 2.5]);
        assert!(check_output(&ignore, &e, &guarded(&[-0.0, 0.0, nan_a, 2.5], 1)).is_ok());
        // Nothing else is relaxed: a subnormal is not zero, and 1 ulp is not equal.
        for bad in [[1e-45f32, 0.0, f32::NAN, 2.5], [0.0, 0.0, f32::NAN, 2.5000002]] {
            assert!(check_output(&ignore, &e, &guarded(&bad, 1)).is_err(), "{bad:?}");
        }
        // The default stays bit-exact on the same outputs.
        assert!(check(Tolerance::Exact, &e, &guarded(&[-0.0, 0.0, nan_a, 2.5], 1), 1).is_err());
    }

    #[test]
    fn ulp_counts_units_and_accepts_flushed_subnormals() {
        let x = 1.0f32;
        let next = f32::from_bits(x.to_bits() + 1);
        let e = Tensor::vector(vec![x]);
        assert!(check(Tolerance::Ulp(1), &e, &guarded(&[next], 1), 1).is_ok());
        assert_eq!(class(check(Tolerance::Ulp(0), &e, &guarded(&[next], 1), 1).unwrap_err()), Class::OneUlp);
        let e = Tensor::vector(vec![1e-40f32]);
        assert!(check(Tolerance::Ulp(0), &e, &guarded(&[0.0], 1), 1).is_ok());
        let e = Tensor::vector(vec![f32::NAN, f32::INFINITY]);
        assert!(check(Tolerance::Ulp(4), &e, &guarded(&[f32::NAN, f32::INFINITY], 1), 1).is_ok());
        assert_eq!(class(check(Tolerance::Ulp(4), &e, &guarded(&[1.0, f32::INFINITY], 1), 1).unwrap_err()), Class::Nan);
        assert!(check(Tolerance::Ulp(4), &e, &guarded(&[f32::NAN, f32::MAX], 1), 1).is_err());
    }

    #[test]
    fn guard_writes_are_out_of_bounds() {
        let e = Tensor::vector(vec![1.0f32, 2.0]);
        let mut a = guarded(&[1.0, 2.0], 3);
        a.as_mut_slice::<f32>().unwrap()[5] = 7.0;
        match check(Tolerance::Exact, &e, &a, 3).unwrap_err() {
            f @ Fault::OutOfBounds(_) => {
                assert_eq!(f.class(), Class::OutOfBounds("after"));
                let Fault::OutOfBounds(o) = f else { unreachable!() };
                assert_eq!((o.side, o.offset, o.count), ("after", 0, 1));
            }
            f => panic!("{f:?}"),
        }
        let mut a = guarded(&[1.0, 2.0], 3);
        a.as_mut_slice::<f32>().unwrap()[2] = 7.0;
        match check(Tolerance::Exact, &e, &a, 3).unwrap_err() {
            Fault::OutOfBounds(o) => assert_eq!((o.side, o.offset), ("before", -1)),
            f => panic!("{f:?}"),
        }
    }

    #[test]
    fn unwritten_elements_are_flagged() {
        let e = Tensor::vector(vec![1.0f32, 2.0]);
        let a = op_core::backend::pad_with_canaries(Tensor::vector(vec![1.5, f32::from_bits(0xA5A5_A5A5)]), 1).unwrap();
        match check(Tolerance::Exact, &e, &a, 1).unwrap_err() {
            Fault::Mismatch(m) => {
                assert!(!m.unwritten, "the first bad element was written");
                assert_eq!((m.count, m.class), (2, Class::Unwritten), "one unwritten element names the class");
            }
            f => panic!("{f:?}"),
        }
    }

    #[test]
    fn classes_are_decided_from_every_mismatch() {
        let e: Vec<f32> = (0..10).map(|i| i as f32 * 1.5 - 4.0).collect();
        let et = Tensor::vector(e.clone());
        let run = |a: Vec<f32>| class(check(Tolerance::Exact, &et, &guarded(&a, 2), 2).unwrap_err());
        // Shifted left by one (out[i] = e[i + 1]), the last element read past the input.
        let mut left: Vec<f32> = e[1..].to_vec();
        left.push(0.0);
        assert_eq!(run(left), Class::Shifted(1));
        // Shifted right by two.
        let mut right = vec![7.0f32, 9.0];
        right.extend_from_slice(&e[..8]);
        assert_eq!(run(right), Class::Shifted(-2));
        // A shift must hold on every element it reaches, not only on the mismatching ones.
        let mut partial: Vec<f32> = e[1..].to_vec();
        partial.push(0.0);
        partial[5] = e[5];
        assert_eq!(run(partial), Class::Value);
        // A single wrong element explains no shift; a mix of classes is wrong values.
        let mut one = e.clone();
        one[4] = e[5];
        assert_eq!(run(one), Class::Value);
        let mut mixed = e.clone();
        mixed[1] = f32::NAN;
        mixed[2] = f32::from_bits(e[2].to_bits() + 1);
        assert_eq!(run(mixed), Class::Value);
        let mut ulp = e.clone();
        ulp[3] = f32::from_bits(e[3].to_bits() + 1);
        ulp[7] = f32::from_bits(e[7].to_bits() - 1);
        assert_eq!(run(ulp), Class::OneUlp);
        // Constant data cannot fake a shift.
        let c = Tensor::vector(vec![2.0f32; 6]);
        assert_eq!(class(check(Tolerance::Exact, &c, &guarded(&[2.0, 3.0, 3.0, 2.0, 2.0, 2.0], 1), 1).unwrap_err()), Class::Value);
    }

    fn scale(len: usize, magnitude: f64, exact: f64) -> AccumScale {
        AccumScale { len, magnitude: vec![magnitude], terms: vec![magnitude], exact: vec![exact], flushed_exact: vec![], carry: vec![] }
    }

    #[test]
    fn accum_is_anchored_on_the_f64_reference_and_the_pairwise_model() {
        let eps = f32::EPSILON as f64;
        assert_eq!([pairwise_depth(0), pairwise_depth(1), pairwise_depth(2), pairwise_depth(3)], [1, 1, 1, 2]);
        assert_eq!([pairwise_depth(16), pairwise_depth(17), pairwise_depth(131_071)], [4, 5, 17]);
        // len 16: the bound is k * 4 * eps * S.
        let e = Tensor::vector(vec![1.0f32]);
        let a = 1.0f32 + 8.0 * f32::EPSILON;
        assert!(check_accum(2, &e, &guarded(&[a], 1), &scale(16, 1.0, 1.0)).is_ok(), "8 <= 2 * 4");
        let f = check_accum(2, &e, &guarded(&[a], 1), &scale(8, 1.0, 1.0)).unwrap_err();
        match f {
            Fault::Mismatch(m) => assert!(m.detail.contains("accum(2)") && m.detail.contains("ceil(log2 len 8) = 6"), "{}", m.detail),
            f => panic!("{f:?}"),
        }
        // The f32 reference is 100 eps off the exact result (a sequential sum's bias): its own
        // bits earn nothing (a kernel copying them is as far off), and a kernel as far off in
        // the other direction does not conform either; the bound does not grow with the
        // reference's error.
        let x = 1.0f64;
        let r32 = (x + 100.0 * eps) as f32;
        let e = Tensor::vector(vec![r32]);
        let s = scale(1 << 10, 1.0, x);
        assert!(check_accum(2, &e, &guarded(&[r32], 1), &s).is_err(), "the reference's own bits are not exempt");
        for (err, ok) in [(0.0, true), (20.0, true), (-20.0, true), (-100.0, false), (60.0, false)] {
            let a = (x + err * eps) as f32;
            assert_eq!(check_accum(2, &e, &guarded(&[a], 1), &s).is_ok(), ok, "{err} eps");
        }
    }

    #[test]
    fn the_carry_allowance_is_k_half_eps_c_stops_at_sqrt_eps_s_and_names_itself() {
        let eps = eps(DType::f32);
        assert_eq!(carry_bound(2, DType::f32, 10.0, 100.0), 100.0 * eps);
        assert_eq!(carry_bound(2, DType::f32, 10.0, 1e12), eps.sqrt() * 10.0, "stops at sqrt(eps) S");
        assert_eq!(carry_bound(2, DType::f32, f64::INFINITY, f64::INFINITY), 0.0);
        assert_eq!(carry_bound(2, DType::f32, 1.0, f64::NAN), 0.0);
        // An error of 60 eps at S = 1: beyond the pairwise bound at len 8 (2 * 3 * eps), within
        // the allowance of C = 100 (100 eps), beyond that of C = 50.
        let e = Tensor::new(vec![1], Data::F32(vec![1.0])).unwrap();
        let a = 1.0 + 60.0 * eps;
        let with = |c: f64| AccumScale { carry: vec![c], ..scale(8, 1.0, 1.0) };
        assert!(check_accum(2, &e, &guarded(&[a as f32], 1), &scale(8, 1.0, 1.0)).is_err());
        assert!(check_accum(2, &e, &guarded(&[a as f32], 1), &with(100.0)).is_ok());
        let Fault::Mismatch(m) = check_accum(2, &e, &guarded(&[a as f32], 1), &with(50.0)).unwrap_err() else { panic!("a mismatch") };
        assert!(m.detail.contains("carry allowance") && matches!(m.class, Class::AccumBound(r) if (r - 1.2).abs() < 0.01), "{m:?}");
    }

    #[test]
    fn an_accum_excess_of_finite_values_is_named_by_its_ratio() {
        // Two elements off by 40 and 10 eps of S = 1 at len 4 (bound 4 eps): the class holds the
        // worst ratio, 10, and the detail of the first element says by how much it exceeds.
        let eps = f32::EPSILON as f64;
        let e = Tensor::vector(vec![1.0f32, 1.0]);
        let s = AccumScale { len: 4, magnitude: vec![1.0; 2], terms: vec![], exact: vec![1.0; 2], flushed_exact: vec![], carry: vec![] };
        let a = guarded(&[(1.0 + 10.0 * eps) as f32, (1.0 + 40.0 * eps) as f32], 1);
        let Fault::Mismatch(m) = check_accum(2, &e, &a, &s).unwrap_err() else { panic!("a mismatch") };
        let worst = 40.0 * eps / accum_bound(2, DType::f32, 4, 1.0);
        assert!(matches!(m.class, Class::AccumBound(r) if (r - worst).abs() < 1e-9 * worst), "{:?}", m.class);
        assert!(m.detail.contains("exceeds the bound by 2.50"), "{}", m.detail);
        // A NaN among them is another defect than the size of an error: not named by a ratio.
        let a = guarded(&[f32::NAN, (1.0 + 40.0 * eps) as f32], 1);
        let Fault::Mismatch(m) = check_accum(2, &e, &a, &s).unwrap_err() else { panic!("a mismatch") };
        assert_eq!(m.class, Class::Value);
        // Outside `accum`, wrong values stay wrong values.
        let f = check(Tolerance::Ulp(1), &e, &guarded(&[3.0, 1.0], 1), 1).unwrap_err();
        assert_eq!(class(f), Class::Value);
    }

    #[test]
    fn ratios_read_with_three_significant_digits() {
        let text: Vec<String> = [1.0412, 2.5, 37.54, 812.3, 4567.0, 2.3e7].into_iter().map(ratio_text).collect();
        assert_eq!(text, ["1.04", "2.50", "37.5", "812", "4567", "2.3e7"]);
    }

    #[test]
    fn an_overflow_is_counted_from_max_plus_half_an_ulp() {
        assert_eq!(overflow_from(DType::f32), 2f64.powi(128) - 2f64.powi(103));
        assert_eq!(overflow_from(DType::f16), 65520.0);
        assert_eq!(overflow_from(DType::bf16), 2f64.powi(128) - 2f64.powi(119));
    }

    #[test]
    fn a_share_within_the_classes_rounding_of_an_overflow_may_overflow() {
        // A positive share P and a negative one of MAX / 2 (a scale of 3 terms: P stands for
        // what a kernel's partial sum of its positive terms computes), under accum(2): a partial
        // sum carries up to the class's rounding of its own terms, `2 * 2 * eps * P`, so a share
        // that close below `MAX + ulp / 2` may overflow in an order the class admits; a share
        // further below may not. For NaN, both shares must be that close.
        let (max, eps) = (overflow_from(DType::f32), f32::EPSILON as f64);
        for (gap, ok) in [(0.5, true), (2.0, false)] {
            let p = max - gap * 2.0 * 2.0 * eps * max;
            let r = p - max / 2.0;
            let e = Tensor::vector(vec![r as f32]);
            let s = scale(3, p + max / 2.0, r);
            assert_eq!(check_accum(2, &e, &guarded(&[f32::INFINITY], 1), &s).is_ok(), ok, "+inf, gap {gap}");
            assert!(check_accum(2, &e, &guarded(&[f32::NEG_INFINITY], 1), &s).is_err());
            let (pos, neg) = (max * 1.5, p);
            let r = pos - neg;
            let e = Tensor::vector(vec![r as f32]);
            assert_eq!(check_accum(2, &e, &guarded(&[f32::NAN], 1), &scale(3, pos + neg, r)).is_ok(), ok, "NaN, gap {gap}");
        }
    }

    #[test]
    fn an_empty_share_takes_no_rounding_from_the_other_sign() {
        // One product 1e23 * -1e23 in f32 (r64 = -1e46, past -MAX): `-inf` is the result; no
        // positive partial sum exists, so `+inf` and NaN are wrong, however large the negative
        // terms (the class's rounding of `T`, 2.4e39, passes MAX: read on `T`, it took them).
        let e = Tensor::vector(vec![f32::NEG_INFINITY]);
        let s = scale(1, 1e46, -1e46);
        assert!(check_accum(2, &e, &guarded(&[f32::NEG_INFINITY], 1), &s).is_ok());
        for a in [f32::INFINITY, f32::NAN] {
            assert!(check_accum(2, &e, &guarded(&[a], 1), &s).is_err(), "{a}");
        }
        // f16, 64 products 300 * -300 (r64 = -5.76e6, past -65504): the same at the dtype's
        // own scale, where the class's rounding of `T` (67 500) passes the threshold (65 520).
        use half::f16;
        let guarded16 = |v: f16| op_core::backend::pad_with_canaries(Tensor::vector(vec![v]), 1).unwrap();
        let e = Tensor::vector(vec![f16::NEG_INFINITY]);
        let s = scale(64, 5.76e6, -5.76e6);
        assert!(check_accum(2, &e, &guarded16(f16::NEG_INFINITY), &s).is_ok());
        for a in [f16::INFINITY, f16::NAN] {
            assert!(check_accum(2, &e, &guarded16(a), &s).is_err(), "{a}");
        }
    }

    #[test]
    fn accum_reads_an_overflow_on_the_terms_not_on_the_measured_sensitivity() {
        // A sum of squares at 0.8 MAX: S is 2 r64 (its measured sensitivity), its terms sum to
        // r64, and no order of positive terms passes MAX: `+inf` is rejected (it was accepted
        // from MAX / 1.5 on, reading S). Terms of 2.5 MAX (of both signs) accept it; without
        // the terms, `|r64|` stands for them.
        let y = 0.8 * f32::MAX as f64;
        let e = Tensor::vector(vec![y as f32]);
        let inf = guarded(&[f32::INFINITY], 1);
        assert!(check_accum(2, &e, &inf, &AccumScale { terms: vec![y], ..scale(16, 2.0 * y, y) }).is_err());
        assert!(check_accum(2, &e, &inf, &AccumScale { terms: vec![], ..scale(16, 2.0 * y, y) }).is_err());
        let big = 2.5 * f32::MAX as f64;
        assert!(check_accum(2, &e, &inf, &AccumScale { terms: vec![big], ..scale(16, big, y) }).is_ok());
        // Terms given as infinite (a hand-made scale) count as |r64|: no accept-all.
        let s = AccumScale { terms: vec![f64::INFINITY], ..scale(16, 1.1 * y, y) };
        assert!(check_accum(2, &e, &inf, &s).is_err() && check_accum(2, &e, &guarded(&[f32::NAN], 1), &s).is_err());
    }

    #[test]
    fn accum_handles_overflow_and_non_finite_values() {
        // The reference overflowed an intermediate (MAX + MAX - MAX = inf) but the exact sum is
        // MAX: a kernel that returns MAX conforms, one that returns 0 does not; one that
        // overflows too may (positive terms of 1.95 MAX overflow in some order), but not to
        // `-inf` (the negative terms, 0.95 MAX, are far below the threshold: at exactly MAX,
        // within the class's rounding of it, they too may).
        let e = Tensor::vector(vec![f32::INFINITY]);
        let m = 2.9 * f32::MAX as f64;
        let s = scale(3, m, f32::MAX as f64);
        assert!(check_accum(2, &e, &guarded(&[f32::MAX], 1), &s).is_ok());
        assert!(check_accum(2, &e, &guarded(&[f32::INFINITY], 1), &s).is_ok());
        assert!(check_accum(2, &e, &guarded(&[f32::NEG_INFINITY], 1), &s).is_err());
        let s = scale(3, 1.0, f32::MAX as f64);
        assert!(check_accum(2, &e, &guarded(&[0.0], 1), &s).is_err());
        // Terms of both signs reach the overflow threshold (MAX, MAX, -MAX, -MAX, 1e33): a
        // pairwise order may overflow a partial sum of either sign where the exact (and the
        // sequential) result is finite; only positive ones (MAX, MAX, -1e33): only +inf.
        let e = Tensor::vector(vec![1.0e33f32]);
        let s = scale(5, 4.0 * f32::MAX as f64 + 1e33, 1.0e33);
        for a in [f32::INFINITY, f32::NEG_INFINITY, f32::NAN] {
            assert!(check_accum(2, &e, &guarded(&[a], 1), &s).is_ok(), "{a}");
        }
        let s = scale(3, 2.0 * f32::MAX as f64 + 1e33, 2.0 * f32::MAX as f64 - 1e33);
        let e = Tensor::vector(vec![f32::INFINITY]);
        assert!(check_accum(2, &e, &guarded(&[f32::INFINITY], 1), &s).is_ok());
        for a in [f32::NEG_INFINITY, f32::NAN, 2.0e33] {
            assert!(check_accum(2, &e, &guarded(&[a], 1), &s).is_err(), "{a}");
        }
        // Products of f32 extremes: -MAX * MAX and +1.9e60 (both overflow in f32, of opposite
        // signs). In f64, `(S + r64) / 2` loses the positive share (it is below ulp(S)): it still
        // counts as reaching the threshold, so NaN (both signs overflowed) conforms.
        let big = f32::MAX as f64 * f32::MAX as f64;
        let e = Tensor::vector(vec![f32::NEG_INFINITY]);
        let s = scale(2, big + 1.92e60, -big + 1.92e60);
        for a in [f32::NAN, f32::NEG_INFINITY, f32::INFINITY] {
            assert!(check_accum(2, &e, &guarded(&[a], 1), &s).is_ok(), "{a}");
        }
        assert!(check_accum(2, &e, &guarded(&[0.0], 1), &s).is_err());
        let e = Tensor::vector(vec![1.0e33f32]);
        let s = scale(9, 0.5 * f32::MAX as f64, 1.0e33);
        for a in [f32::INFINITY, f32::NAN, 2.0e33] {
            assert!(check_accum(2, &e, &guarded(&[a], 1), &s).is_err(), "{a}");
        }
        // An infinite exact result must be matched, even where the reference itself let an
        // overflow meet the infinity (NaN); a NaN exact result is matched by any NaN only.
        let e = Tensor::vector(vec![f32::NAN]);
        let s = scale(2, f64::INFINITY, f64::INFINITY);
        assert!(check_accum(2, &e, &guarded(&[f32::INFINITY], 1), &s).is_ok());
        assert!(check_accum(2, &e, &guarded(&[f32::NAN], 1), &s).is_err());
        assert!(check_accum(2, &e, &guarded(&[1.0], 1), &s).is_err());
        let s = scale(2, f64::NAN, f64::NAN);
        assert!(check_accum(2, &e, &guarded(&[f32::from_bits(0xffc0_0001)], 1), &s).is_ok());
        for a in [1.0, f32::INFINITY] {
            assert!(check_accum(2, &e, &guarded(&[a], 1), &s).is_err(), "{a}");
        }
        // A non-finite S with a finite f64 result accepts only that result rounded to the
        // dtype, whatever the reference returned.
        let e = Tensor::vector(vec![1.5f32]);
        let s = scale(2, f64::INFINITY, 1.0 + 1e-12);
        assert!(check_accum(2, &e, &guarded(&[1.0], 1), &s).is_ok());
        assert!(check_accum(2, &e, &guarded(&[1.5], 1), &s).is_err());
    }

    #[test]
    fn a_missing_or_short_accum_scale_is_a_typed_error_never_an_accept_all() {
        let e = Tensor::vector(vec![1.0f32, 2.0]);
        let wrong = guarded(&[5.0, 7.0], 1);
        assert!(matches!(check(Tolerance::Accum(2), &e, &wrong, 1), Err(Fault::Scale(_))));
        for s in [
            AccumScale::default(),
            AccumScale { len: 2, magnitude: vec![1.0], terms: vec![], exact: vec![1.0, 2.0], flushed_exact: vec![], carry: vec![] },
            AccumScale { len: 2, magnitude: vec![1.0, 2.0], terms: vec![], exact: vec![], flushed_exact: vec![], carry: vec![] },
        ] {
            match check_accum(2, &e, &wrong, &s) {
                Err(Fault::Scale(m)) => assert!(m.contains("accum(2)"), "{m}"),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn accum_allows_flushed_subnormal_terms_but_nothing_more() {
        // Every term subnormal (S ~ 1e-38): FTZ may lose all of them.
        let tiny = 1e-39f32;
        let e = Tensor::vector(vec![4.0 * tiny]);
        let s = scale(4, 4.0 * tiny as f64, 4.0 * tiny as f64);
        assert!(check_accum(2, &e, &guarded(&[0.0], 1), &s).is_ok());
        // At an ordinary scale the flush term is invisible.
        let e = Tensor::vector(vec![1.0f32]);
        assert!(check_accum(2, &e, &guarded(&[1.0001], 1), &scale(4, 1.0, 1.0)).is_err());
    }
}
