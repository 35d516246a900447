//! The verdict over measured probes: the comparison with the bound, VJP/JVP consistency, the
//! smallest error the probes prove they catch, and the negative control. Owns judging; it must
//! not measure (see `probe`) or draw values.

use super::probe::{Checker, Probe};
use super::report::{BackwardForm, ControlOutcome, Corruption, ProbePoint};
use super::{GradcheckError, Setup};
use op_contract::contract::Contract;

/// The check proper over the checked probes: what the report shows of it.
pub(super) struct Judged {
    pub max_abs_err: f64,
    pub max_rel_err: f64,
    pub bound_applied: f64,
    pub worst_ratio: f64,
}

fn input_name(c: &Contract, ck: &Checker, at: (usize, Option<usize>)) -> String {
    match at {
        (k, Some(j)) => format!("`{}`[{j}]", c.signature.inputs().nth(ck.diff[k]).map(|t| t.name.as_str()).unwrap_or("?")),
        (_, None) => "a random direction".to_string(),
    }
}

// Comparisons are written `!(err <= allowed)` so that a NaN fails them.
#[allow(clippy::neg_cmp_op_on_partial_ord)]
pub(super) fn judge(s: &Setup, probes: &[&Probe]) -> Result<Judged, GradcheckError> {
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

/// Every checked probe as the report lists it.
pub(super) fn points(s: &Setup, probes: &[&Probe]) -> Vec<ProbePoint> {
    probes
        .iter()
        .map(|p| ProbePoint {
            at: input_name(&s.contract, &s.ck, p.at),
            analytic: p.analytic,
            numeric: p.numeric,
            allowed: s.ck.allowed(p, p.analytic),
        })
        .collect()
}

/// VJP / JVP consistency on every probe, where both are declared: the largest difference.
#[allow(clippy::neg_cmp_op_on_partial_ord)]
pub(super) fn consistency(s: &Setup, probes: &[&Probe]) -> Result<Option<f64>, GradcheckError> {
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
pub(super) fn smallest_caught(ck: &Checker, probes: &[&Probe]) -> Option<f64> {
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
pub(super) fn negative_control(ck: &Checker, probes: &[&Probe], smallest: Option<f64>) -> Vec<ControlOutcome> {
    let scale = 1.0 + (8.0 * ck.rel).max(0.01);
    let mut corruptions = vec![Corruption::Scaled(scale), Corruption::SignFlipped, Corruption::Neighbour];
    corruptions.extend(smallest.filter(|d| *d < 0.01).map(|d| Corruption::Scaled(1.0 + d)));
    corruptions
        .into_iter()
        .map(|corruption| {
            let mut applicable = !matches!(corruption, Corruption::Neighbour);
            let mut rejected = false;
            let mut margin = 0.0f64;
            for p in probes {
                let bad = corruption.apply(p.analytic, p.neighbour);
                if (bad - p.analytic).abs() > 2.0 * ck.allowed(p, bad.abs().max(p.analytic.abs())) {
                    applicable = true;
                }
                let (off, allowed) = ((bad - p.numeric).abs(), ck.allowed(p, bad));
                if !(off <= allowed) {
                    rejected = true;
                }
                let ratio = off / allowed.max(f64::MIN_POSITIVE);
                margin = if ratio.is_nan() { f64::INFINITY } else { margin.max(ratio) };
            }
            ControlOutcome { corruption, applicable, rejected, margin }
        })
        .collect()
}
