//! Explanations that need the reference run again: a mismatch of wrong values is refined into
//! values from the wrong window (the output is the reference's with another value of an
//! integer parameter) or tie order (the reference's on the same inputs with ties broken the
//! other way); and the declared NaN policy is checked on the reference itself. Owns those
//! re-runs; it must not decide a verdict (that is `compare`'s) or shrink.

use super::cases::{Case, MAX_NUMEL};
use super::compare::{Class, Fault};
use super::run_shim;
use crate::core::op::RegisteredOp;
use crate::core::tensor::{Scalar, Tensor};
use op_contract::contract::NanPolicy;

/// Steps tried around each integer parameter for [`Class::WrongWindow`], nearest first.
const WINDOW_STEPS: [i128; 6] = [1, -1, 2, -2, 4, -4];

/// Refines a wrong-values mismatch of output `output` (the guarded `actual`, `guard` canaries
/// each side) by re-running the reference; other faults, and cases beyond the small families'
/// size (where a re-run costs more than it tells), keep their class.
pub(crate) fn refine(op: &RegisteredOp, case: &Case, output: usize, fault: Fault, actual: &Tensor, guard: usize) -> Fault {
    let Fault::Mismatch(mut m) = fault else { return fault };
    if m.class != Class::Value || case.size() > MAX_NUMEL {
        return Fault::Mismatch(m);
    }
    let got = unguarded(actual, guard);
    if let Some(class) = tie_order(op, case, output, &got).or_else(|| wrong_window(op, case, output, &got)) {
        m.class = class;
    }
    Fault::Mismatch(m)
}

/// The bits of the elements between the guard bands.
fn unguarded(actual: &Tensor, guard: usize) -> Vec<u64> {
    let d = actual.data();
    (guard..d.len().saturating_sub(guard)).map(|i| d.bits(i).unwrap_or_default()).collect()
}

fn bits(t: &Tensor) -> Vec<u64> {
    (0..t.numel()).map(|i| t.data().bits(i).unwrap_or_default()).collect()
}

/// [`Class::TieOrder`]: the kernel's output is the reference's on the inputs with every group
/// of equal elements (`==`, so `-0` with `+0`) made distinct in index order, later elements
/// nudged up (or down) by one ulp per place: ties broken the other way than the reference's
/// (which takes equal elements in input order).
fn tie_order(op: &RegisteredOp, case: &Case, output: usize, got: &[u64]) -> Option<Class> {
    let mut any_tie = false;
    for dir in [1.0f64, -1.0] {
        let mut inputs = Vec::with_capacity(case.inputs.len());
        for t in &case.inputs {
            let (nudged, tied) = nudge_ties(t, dir)?;
            any_tie |= tied;
            inputs.push(nudged);
        }
        if !any_tie {
            return None;
        }
        let out = run_shim(op, op.shims.reference, &inputs, &case.params, None).ok()?;
        if out.get(output).is_some_and(|o| bits(o) == got) {
            return Some(Class::TieOrder);
        }
    }
    None
}

/// `t` with every group of equal float elements (two or more) spread by one ulp per place in
/// index order, upward for `dir > 0`; whether any group was found. Integer tensors unchanged.
fn nudge_ties(t: &Tensor, dir: f64) -> Option<(Tensor, bool)> {
    let Some(v) = t.data().to_f64_vec().filter(|_| t.dtype().is_float()) else { return Some((t.clone(), false)) };
    let mut order: Vec<usize> = (0..v.len()).filter(|i| !v[*i].is_nan()).collect();
    order.sort_by(|a, b| v[*a].partial_cmp(&v[*b]).unwrap_or(std::cmp::Ordering::Equal).then(a.cmp(b)));
    let mut out = v.clone();
    let mut tied = false;
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && v[order[end]] == v[order[start]] {
            end += 1;
        }
        if end - start > 1 {
            tied = true;
            let base = t.dtype();
            for (place, &i) in order[start..end].iter().enumerate() {
                out[i] = step_ulps(v[i], dir * place as f64, base);
            }
        }
        start = end;
    }
    let data = super::cases::to_data(t.dtype(), &out);
    Some((Tensor::new(t.shape().to_vec(), data).ok()?, tied))
}

/// `v` moved by `steps` ulps of its dtype (f32 for f32 inputs, f64 otherwise).
fn step_ulps(v: f64, steps: f64, dtype: op_contract::contract::DType) -> f64 {
    let mut x = v;
    let n = steps.abs() as usize;
    for _ in 0..n {
        x = if dtype == op_contract::contract::DType::f32 {
            let f = x as f32;
            (if steps > 0.0 { f.next_up() } else { f.next_down() }) as f64
        } else if steps > 0.0 {
            x.next_up()
        } else {
            x.next_down()
        };
    }
    x
}

/// [`Class::WrongWindow`]: the kernel's output is, on every element both define (at least
/// two), the reference's with one integer parameter moved by a few steps, and that output
/// differs from the case's own reference there.
fn wrong_window(op: &RegisteredOp, case: &Case, output: usize, got: &[u64]) -> Option<Class> {
    let own = run_shim(op, op.shims.reference, &case.inputs, &case.params, None).ok()?;
    let own = bits(own.get(output)?);
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

/// Checks the reference's outputs on a case against the op's declared NaN policy: with
/// `nan = propagate`, an output element whose inputs (same position, for ops whose float inputs
/// all have the output's shape) include a NaN must be NaN, and for any other op, a case with a
/// NaN input must give at least one NaN (where there are float outputs). `Err` names what broke.
pub(crate) fn check_nan_policy(op: &RegisteredOp, case: &Case, outputs: &[Tensor]) -> Result<(), String> {
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
