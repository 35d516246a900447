//! Explanations that need the reference run again: every class one failing case is consistent
//! with beyond what its data shows (`Mismatch::classes`): tie order (the reference's output on
//! an input's ranks with ties broken the other way), values from the wrong window (another value
//! of an integer parameter), another order statistic or the extreme of what the reference
//! selects from, NaN placed elsewhere in the order, and a NaN from no NaN input where a partial
//! result can overflow; and the declared NaN policy checked on the reference itself. Owns those
//! re-runs; it must not decide a verdict (that is `compare`'s), pick a report's class (that is
//! `classes::cover`'s) or shrink.

use super::cases::{Case, MAX_NUMEL};
use super::classes::Class;
use super::compare::{Fault, Mismatch};
use super::run_shim;
use op_contract::contract::{DType, NanPolicy};
use op_core::op::RegisteredOp;
use op_core::tensor::{Data, Scalar, Tensor};
use std::cmp::Ordering;

/// Steps tried around each integer parameter for [`Class::WrongWindow`], nearest first.
const WINDOW_STEPS: [i128; 6] = [1, -1, 2, -2, 4, -4];
/// Largest case (input elements) on which the order statistics are traced (each output traced
/// costs a reference run per step).
const ORDER_NUMEL: usize = 1024;
/// Mismatching elements traced per case for [`Class::OrderStatistic`] / [`Class::WindowExtreme`].
const ORDER_SAMPLES: usize = 4;
/// Most steps of one trace.
const ORDER_STEPS: usize = 40;

/// Every class failing case `case` is consistent with on output `output` (the kernel's guarded
/// `actual`, `guard` canaries each side), most telling first; `[Value]` (or `[AccumBound]`) where none is. Faults
/// other than a mismatch have their own class. The re-runs are skipped on cases beyond the small
/// families' size, where they cost more than they tell; with `want` (shrinking a case that
/// shows that class), only the re-runs that can show it are made.
pub fn diagnose(
    op: &RegisteredOp,
    case: &Case,
    output: usize,
    fault: &Fault,
    actual: &Tensor,
    guard: usize,
    want: Option<&Class>,
) -> Vec<Class> {
    let Fault::Mismatch(m) = fault else { return vec![fault.class()] };
    let mut classes = m.classes.clone();
    if classes == [Class::Unwritten] {
        return classes;
    }
    let got = unguarded(actual, guard);
    if overflow_nan(case, m, actual, guard) {
        classes.retain(|c| *c != Class::Nan);
        classes.push(Class::OverflowNan);
    }
    let wanted = |k: &[Class]| want.is_none_or(|w| k.iter().any(|k| k.same_kind(w)));
    let rerun = [Class::TieOrder, Class::WrongWindow { param: String::new(), was: 0, matches: 0 }, Class::NanOrder];
    let order = [Class::OrderStatistic(0), Class::WindowExtreme("max"), Class::WindowExtreme("min")];
    if case.size() <= MAX_NUMEL && (wanted(&rerun) || wanted(&order)) {
        if let Some(own) = run_shim(op, op.shims.reference, &case.inputs, &case.params, None).ok().and_then(|o| o.into_iter().nth(output)) {
            let own_bits = bits(&own);
            if wanted(&rerun[..1]) {
                classes.extend(tie_order(op, case, output, &got, &own_bits));
            }
            if wanted(&rerun[1..2]) {
                classes.extend(wrong_window(op, case, output, &got, &own_bits));
            }
            if wanted(&rerun[2..]) {
                classes.extend(nan_order(op, case, output, &got, &own, &m.bad));
            }
            if case.size() <= ORDER_NUMEL && wanted(&order) {
                classes.extend(order_statistic(op, case, output, actual, guard, &own, &m.bad));
            }
        }
    }
    if classes.is_empty() {
        // Wrong values, or under `accum` how far the bound is exceeded (`Mismatch::class`).
        classes.push(m.class.clone());
    }
    classes.sort_by_key(Class::rank);
    classes.dedup_by(|a, b| a.same_kind(b));
    classes
}

/// The bits of the elements between the guard bands.
fn unguarded(actual: &Tensor, guard: usize) -> Vec<u64> {
    let d = actual.data();
    (guard..d.len().saturating_sub(guard)).map(|i| d.bits(i).unwrap_or_default()).collect()
}

fn bits(t: &Tensor) -> Vec<u64> {
    (0..t.numel()).map(|i| t.data().bits(i).unwrap_or_default()).collect()
}

/// `t` with each element's bits mapped by `f(index, bits)`; `None` if they do not make a tensor.
fn map_bits(t: &Tensor, f: impl Fn(usize, u64) -> u64) -> Option<Tensor> {
    let size = t.dtype().size();
    let mut bytes = t.data().to_le_bytes();
    for (i, chunk) in bytes.chunks_exact_mut(size).enumerate() {
        let b = f(i, t.data().bits(i)?);
        chunk.copy_from_slice(&b.to_le_bytes()[..size]);
    }
    Tensor::new(t.shape().to_vec(), Data::from_le_bytes(t.dtype(), &bytes).ok()?).ok()
}

/// Whether the bits are a NaN of the float dtype.
fn is_nan_bits(b: u64, dtype: DType) -> bool {
    // An integer or bool element is never NaN (and its width leaves no room for the float
    // layout below: a bool mask input is 8 bits).
    if !dtype.is_float() {
        return false;
    }
    let w = dtype.size() as u32 * 8;
    let exp_bits = match dtype {
        DType::f16 => 5,
        DType::bf16 | DType::f32 => 8,
        _ => 11,
    };
    let mant = (1u64 << (w - 1 - exp_bits)) - 1;
    let exp = ((1u64 << exp_bits) - 1) << (w - 1 - exp_bits);
    b & exp == exp && b & mant != 0
}

/// [`Class::OverflowNan`]: every mismatch is a NaN the kernel returned, no input is NaN, and a
/// partial result can overflow: an input is infinite, or the magnitudes of an input's elements
/// sum to the largest finite value or beyond, or one element's square does (a product).
fn overflow_nan(case: &Case, m: &Mismatch, actual: &Tensor, guard: usize) -> bool {
    let dtype = actual.dtype();
    if !dtype.is_float() || m.bad.is_empty() || !m.bad.iter().all(|&i| actual.data().get_f64(guard + i).is_some_and(f64::is_nan)) {
        return false;
    }
    let floats: Vec<Vec<f64>> = case.inputs.iter().filter(|t| t.dtype().is_float()).filter_map(|t| t.data().to_f64_vec()).collect();
    if floats.iter().flatten().any(|v| v.is_nan()) {
        return false;
    }
    let max = |t: DType| match t {
        DType::f16 => 65504.0,
        DType::bf16 => 3.3895313892515355e38,
        DType::f32 => f32::MAX as f64,
        _ => f64::MAX,
    };
    let limit = max(dtype);
    floats
        .iter()
        .any(|v| v.iter().any(|x| x.is_infinite()) || v.iter().map(|x| x.abs()).sum::<f64>() >= limit || v.iter().any(|x| x * x >= limit))
}

/// [`Class::TieOrder`]: for one input with equal elements (the same bits), the reference on
/// that input replaced by its ranks, ties broken one way, gives the reference's own output
/// (mapped back to the elements the ranks name: the op selects and orders, it does not compute
/// with the values), and on the ranks with ties broken the other way gives the kernel's.
/// One input at a time, so that ties in another (a cotangent of equal values) keep their values.
fn tie_order(op: &RegisteredOp, case: &Case, output: usize, got: &[u64], own: &[u64]) -> Option<Class> {
    for k in 0..case.inputs.len() {
        let t = &case.inputs[k];
        let b = bits(t);
        let mut sorted = b.clone();
        sorted.sort_unstable();
        if !t.dtype().is_float() || sorted.windows(2).all(|w| w[0] != w[1]) {
            continue;
        }
        let run = |ranked: &Ranked| -> Option<Vec<u64>> {
            let mut inputs = case.inputs.clone();
            inputs[k] = ranked.ranked.clone();
            let out = run_shim(op, op.shims.reference, &inputs, &case.params, None).ok()?.into_iter().nth(output)?;
            let same_dtype = out.dtype() == t.dtype();
            Some(
                bits(&out)
                    .into_iter()
                    .map(|v| if same_dtype { ranked.element(v).and_then(|j| b.get(j).copied()).unwrap_or(v) } else { v })
                    .collect(),
            )
        };
        // Which of two equal elements counts as the smaller is the op's convention (a stable
        // sort takes the earlier first, an argmax of the first maximum the earlier as larger):
        // the ranks that reproduce the reference's output are its own, the others the opposite.
        let (Some(earlier_first), Some(later_first)) = (Ranked::new(t, false), Ranked::new(t, true)) else { continue };
        let (a, b) = (run(&earlier_first), run(&later_first));
        let (a, b) = (a.as_deref(), b.as_deref());
        if (a == Some(own) && b == Some(got)) || (b == Some(own) && a == Some(got)) {
            return Some(Class::TieOrder);
        }
    }
    None
}

/// [`Class::WrongWindow`]: the kernel's output is, on every element both define (at least
/// two), the reference's with one integer parameter moved by a few steps, and that output
/// differs from the case's own reference there.
fn wrong_window(op: &RegisteredOp, case: &Case, output: usize, got: &[u64], own: &[u64]) -> Option<Class> {
    for (k, (name, p)) in case.param_names.iter().zip(&case.params).enumerate() {
        let Some(was) = p.as_i128() else { continue };
        for step in WINDOW_STEPS {
            let Some(moved) = Scalar::from_int(p.dtype(), was + step) else { continue };
            let mut params = case.params.clone();
            params[k] = moved;
            let refs: Vec<&Tensor> = case.inputs.iter().collect();
            if op.plan.validate(&refs, &params, None).is_err() {
                continue;
            }
            let Some(alt) = run_shim(op, op.shims.reference, &case.inputs, &params, None).ok().and_then(|o| o.get(output).map(bits)) else {
                continue;
            };
            let overlap = alt.len().min(got.len()).min(own.len());
            if overlap >= 2 && got[..overlap] == alt[..overlap] && own[..overlap] != alt[..overlap] {
                return Some(Class::WrongWindow { param: name.clone(), was, matches: was + step });
            }
        }
    }
    None
}

/// [`Class::NanOrder`]: the case has NaN inputs, and the kernel's output is the reference's on
/// the inputs with every NaN made positive (NaN taken as the largest value whatever its sign),
/// made negative (the smallest), or with its sign flipped; compared with NaN equal to NaN (the
/// kernel returns its inputs' NaNs), and only where that moves a number, not just a NaN's bits.
fn nan_order(op: &RegisteredOp, case: &Case, output: usize, got: &[u64], own: &Tensor, bad: &[usize]) -> Option<Class> {
    let dtype = own.dtype();
    let nan_input = |t: &Tensor| (0..t.numel()).any(|i| is_nan_bits(t.data().bits(i).unwrap_or_default(), t.dtype()));
    if !dtype.is_float() || !case.inputs.iter().any(nan_input) {
        return None;
    }
    let own_bits = bits(own);
    if bad.iter().all(|&i| is_nan_bits(got[i], dtype) && is_nan_bits(own_bits[i], dtype)) {
        return None;
    }
    let sign_of = |t: &Tensor| 1u64 << (t.dtype().size() * 8 - 1);
    let variants: [&dyn Fn(u64, u64) -> u64; 3] = [&|b, s| b & !s, &|b, s| b | s, &|b, s| b ^ s];
    for variant in variants {
        let inputs: Option<Vec<Tensor>> = case
            .inputs
            .iter()
            .map(|t| match t.dtype().is_float() {
                true => map_bits(t, |_, b| if is_nan_bits(b, t.dtype()) { variant(b, sign_of(t)) } else { b }),
                false => Some(t.clone()),
            })
            .collect();
        let Some(out) =
            inputs.and_then(|i| run_shim(op, op.shims.reference, &i, &case.params, None).ok()).and_then(|o| o.into_iter().nth(output))
        else {
            continue;
        };
        let alt = bits(&out);
        let same = |x: u64, y: u64| x == y || is_nan_bits(x, dtype) && is_nan_bits(y, dtype);
        let moves = (0..alt.len().min(own_bits.len())).any(|i| !same(alt[i], own_bits[i]));
        if moves && alt.len() == got.len() && alt.iter().zip(got).all(|(a, g)| same(*a, *g)) {
            return Some(Class::NanOrder);
        }
    }
    None
}

/// [`Class::OrderStatistic`] and [`Class::WindowExtreme`], for an output whose mismatching
/// elements are all values of one input (what a selection returns). That input is replaced by
/// its ranks (distinct values in the reference's total order, ties in index order, so that the
/// reference selects the same elements and each output names the element it came from); each
/// sampled element is then traced from the reference's pick towards the kernel's value by
/// replacing the pick with a value beyond every other (above for a larger kernel value, below
/// for a smaller) and re-running the reference, which then takes the next element in that
/// direction among the same elements. The kernel's value reached after the same `k` steps for
/// every sampled element is another order statistic; reached with nothing beyond it, it is the
/// extreme.
fn order_statistic(
    op: &RegisteredOp,
    case: &Case,
    output: usize,
    actual: &Tensor,
    guard: usize,
    own: &Tensor,
    bad: &[usize],
) -> Vec<Class> {
    let dtype = own.dtype();
    if !dtype.is_float() || bad.is_empty() || actual.dtype() != dtype {
        return Vec::new();
    }
    let a = |i: usize| actual.data().bits(guard + i).unwrap_or_default();
    let e = |i: usize| own.data().bits(i).unwrap_or_default();
    let holds = |t: &Tensor, b: u64| (0..t.numel()).any(|j| t.data().bits(j) == Some(b));
    let step = (bad.len() / ORDER_SAMPLES).max(1);
    let sample: Vec<usize> = bad.iter().step_by(step).take(ORDER_SAMPLES).copied().collect();
    // The input the reference selects from: one of the output's dtype holding every sampled value.
    let Some(k) = case.inputs.iter().position(|t| t.dtype() == dtype && sample.iter().all(|&i| holds(t, e(i)) && holds(t, a(i)))) else {
        return Vec::new();
    };
    let Some(ranked) = Ranked::new(&case.inputs[k], false) else { return Vec::new() };
    let mut traces = Vec::new();
    for &i in &sample {
        match ranked.trace(op, case, output, k, i, e(i), a(i)) {
            Some(t) => traces.push(t),
            None => return Vec::new(),
        }
    }
    let mut out = Vec::new();
    if let Some(side) = traces.first().map(|t| t.0.signum()).filter(|s| traces.iter().all(|t| t.1 && t.0.signum() == *s)) {
        out.push(Class::WindowExtreme(if side > 0 { "max" } else { "min" }));
    }
    if traces.iter().all(|t| t.0 == traces[0].0) {
        out.push(Class::OrderStatistic(traces[0].0));
    }
    out
}

/// An input replaced by its ranks: element `j` becomes the float whose bits are `base + 64 + q`
/// for its rank `q` in total order (ties in index order, or with `reverse_ties` the other way),
/// `base` the bits of 1.0: distinct, finite, in the same order. Values `base + 63 - s` and
/// `base + 64 + n + s` lie below and above all of them.
struct Ranked {
    original: Tensor,
    ranked: Tensor,
    /// The index of the element of each rank.
    by_rank: Vec<usize>,
    base: u64,
}

impl Ranked {
    fn new(t: &Tensor, reverse_ties: bool) -> Option<Ranked> {
        let base = match t.dtype() {
            DType::f16 => 0x3c00,
            DType::bf16 => 0x3f80,
            DType::f32 => 0x3f80_0000,
            DType::f64 => 0x3ff0_0000_0000_0000,
            _ => return None,
        };
        let v = t.data().to_f64_vec()?;
        let mut by_rank: Vec<usize> = (0..v.len()).collect();
        by_rank.sort_by(|x, y| v[*x].total_cmp(&v[*y]).then(if reverse_ties { y.cmp(x) } else { x.cmp(y) }));
        let mut rank = vec![0u64; v.len()];
        by_rank.iter().enumerate().for_each(|(q, j)| rank[*j] = q as u64);
        let ranked = map_bits(t, |j, _| base + 64 + rank[j])?;
        Some(Ranked { original: t.clone(), ranked, by_rank, base })
    }

    /// The element of the ranked input with these bits, if it is one.
    fn element(&self, b: u64) -> Option<usize> {
        let q = b.checked_sub(self.base + 64)?;
        self.by_rank.get(usize::try_from(q).ok()?).copied()
    }

    /// One trace of output element `i` (see [`order_statistic`]) from the reference's value
    /// `from` to the kernel's `to`: the signed number of steps, and whether nothing lies beyond
    /// `to`; `None` where the reference does not select as the ranks say, or `to` is not reached.
    #[allow(clippy::too_many_arguments)]
    fn trace(&self, op: &RegisteredOp, case: &Case, output: usize, k: usize, i: usize, from: u64, to: u64) -> Option<(i64, bool)> {
        let value = |j: usize| self.original.data().get_f64(j);
        let original = |j: usize| self.original.data().bits(j);
        let from_value =
            Data::from_le_bytes(self.original.dtype(), &from.to_le_bytes()[..self.original.dtype().size()]).ok()?.get_f64(0)?;
        let to_value = Data::from_le_bytes(self.original.dtype(), &to.to_le_bytes()[..self.original.dtype().size()]).ok()?.get_f64(0)?;
        let up = match to_value.total_cmp(&from_value) {
            Ordering::Equal => return None,
            o => o == Ordering::Greater,
        };
        let n = self.by_rank.len() as u64;
        let mut inputs = case.inputs.clone();
        inputs[k] = self.ranked.clone();
        let run = |inputs: &[Tensor]| -> Option<u64> {
            run_shim(op, op.shims.reference, inputs, &case.params, None).ok()?.get(output)?.data().bits(i)
        };
        // The ranks reproduce the reference's pick.
        let mut pick = self.element(run(&inputs)?)?;
        if original(pick)? != from {
            return None;
        }
        for step in 1..=ORDER_STEPS as u64 {
            let marker = if up { self.base + 64 + n + step } else { self.base + 63 - step };
            inputs[k] = map_bits(&inputs[k], |j, b| if j == pick { marker } else { b })?;
            let next = run(&inputs)?;
            let j = self.element(next)?;
            if original(j)? == to {
                // Whether only copies of the kernel's value lie beyond it: past them, a marker.
                let mut last = j;
                let mut extreme = false;
                for more in 1..=ORDER_STEPS as u64 {
                    let beyond =
                        if up { self.base + 64 + n + ORDER_STEPS as u64 + more } else { self.base + 63 - ORDER_STEPS as u64 - more };
                    inputs[k] = map_bits(&inputs[k], |q, b| if q == last { beyond } else { b })?;
                    match self.element(run(&inputs)?) {
                        None => {
                            extreme = true;
                            break;
                        }
                        Some(q) if original(q)? == to => last = q,
                        Some(_) => break,
                    }
                }
                let steps = step as i64;
                return Some((if up { steps } else { -steps }, extreme));
            }
            // Past the kernel's value without meeting it: not an order statistic.
            if value(j)?.total_cmp(&to_value) == if up { Ordering::Greater } else { Ordering::Less } {
                return None;
            }
            pick = j;
        }
        None
    }
}

/// Checks the reference's outputs on a case against the op's declared NaN policy: with
/// `nan = propagate`, an output element whose inputs (same position, for ops whose float inputs
/// all have the output's shape) include a NaN must be NaN, and for any other op, a case with a
/// NaN input must give at least one NaN (where there are float outputs). `Err` names what broke.
pub fn check_nan_policy(op: &RegisteredOp, case: &Case, outputs: &[Tensor]) -> Result<(), String> {
    match op.contract.nan {
        Some(NanPolicy::Propagate) => {}
        Some(NanPolicy::Ordered) => return super::nan_ordered::check(case, outputs),
        None => return Ok(()),
    }
    let float_inputs: Vec<Vec<f64>> = case.inputs.iter().filter(|t| t.dtype().is_float()).filter_map(|t| t.data().to_f64_vec()).collect();
    if !float_inputs.iter().flatten().any(|v| v.is_nan()) {
        return Ok(());
    }
    for (k, o) in outputs.iter().enumerate().filter(|(_, o)| o.dtype().is_float() && o.numel() > 0) {
        let out = o.data().to_f64_vec().unwrap_or_default();
        let elementwise = case.inputs.iter().filter(|t| t.dtype().is_float()).all(|t| t.shape() == o.shape());
        if elementwise {
            if let Some(i) = (0..out.len()).find(|i| float_inputs.iter().any(|x| x[*i].is_nan()) && !out[*i].is_nan()) {
                return Err(format!("declares `nan = propagate`, but output {k} element {i} is {:e} where an input is NaN", out[i]));
            }
        } else if !out.iter().any(|v| v.is_nan()) {
            return Err(format!("declares `nan = propagate`, but a NaN input gave no NaN in output {k}"));
        }
    }
    Ok(())
}
