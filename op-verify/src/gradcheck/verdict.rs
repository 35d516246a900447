//! The verdict over measured probes: the comparison with the bound, VJP/JVP consistency, the
//! smallest error the probes prove they catch, and the negative control. Owns judging; it must
//! not measure (see `probe`) or draw values.

use super::locate;
use super::probe::{Checker, Measured, Probe};
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

/// The largest errors over the checked probes (of every round), for the report; the verdict is
/// [`judge`]'s.
pub(super) fn summarize(probes: &[&Probe]) -> Judged {
    let mut j = Judged { max_abs_err: 0.0, max_rel_err: 0.0, bound_applied: 0.0, worst_ratio: 0.0 };
    // The probe of the largest absolute error: the report's error, its relative value and the
    // bound applied there all describe this one probe.
    let mut largest: Option<&Probe> = None;
    for p in probes {
        let err = (p.analytic - p.numeric).abs();
        if err > j.max_abs_err || (largest.is_none() && !err.is_nan()) {
            j.max_abs_err = err;
            largest = Some(p);
        }
        j.worst_ratio = j.worst_ratio.max(p.ratio());
    }
    if let Some(l) = largest {
        j.bound_applied = l.allowed(l.analytic);
        j.max_rel_err = (l.analytic - l.numeric).abs() / l.numeric.abs().max(l.analytic.abs()).max(f64::MIN_POSITIVE);
    }
    j
}

/// Most failing random directions [`judge`] sets aside as kinked in one round.
const MAX_DISMISSED: usize = 8;

/// The verdict over one round's probes: `Err(Mismatch)` where a checked one exceeds the bound,
/// naming an element. The worst failing coordinate probe is reported where there is one (it
/// names its element); else the worst failing random direction, narrowed down to the element
/// that carries its error (`locate`).
///
/// Where that element is itself within h of a kink, the direction is set aside as within h of
/// a kink instead (its `Measured` becomes `Kink`, so the round counts it as skipped) and the
/// next worst is judged, at most [`MAX_DISMISSED`] times. Along a random direction the kink test
/// can miss kinks: many elements' kinks inside the step (`|x|` with `h` far above the values)
/// give one-sided differences whose sum cancels, and the difference then measures the kinks,
/// not the derivative, so a correct rule was accused. The element the failure comes down to
/// shows it alone; where it can be measured (a probe that passes or fails), the direction's
/// failure stands.
pub(super) fn judge(s: &mut Setup, measured: &mut [Measured]) -> Result<(), GradcheckError> {
    for dismissed in 0..=MAX_DISMISSED {
        match verdict(s, measured, dismissed < MAX_DISMISSED)? {
            Some(i) => measured[i] = Measured::Kink,
            None => return Ok(()),
        }
    }
    Ok(())
}

/// One turn of [`judge`]: `Ok(None)` where nothing fails, `Ok(Some(i))` where the failing random
/// direction `measured[i]` is to be set aside as kinked (only where `may_dismiss`), else the
/// rejection.
// Comparisons are written `!(ratio <= 1)` so that a NaN fails them.
#[allow(clippy::neg_cmp_op_on_partial_ord)]
fn verdict(s: &mut Setup, measured: &[Measured], may_dismiss: bool) -> Result<Option<usize>, GradcheckError> {
    let probes: Vec<(usize, &Probe)> =
        measured.iter().enumerate().filter_map(|(i, m)| if let Measured::Checked(p) = m { Some((i, p)) } else { None }).collect();
    let failing: Vec<(usize, &Probe)> = probes.iter().copied().filter(|(_, p)| !(p.ratio() <= 1.0)).collect();
    let worst = |coord: bool| {
        failing.iter().copied().filter(|(_, p)| p.at.1.is_some() == coord).max_by(|(_, a), (_, b)| a.ratio().total_cmp(&b.ratio()))
    };
    let (reported, at, (k, j)) = match (worst(true), worst(false)) {
        (Some((_, p)), _) => (p.clone(), input_name(&s.contract, &s.ck, p.at), (p.at.0, p.at.1.unwrap_or(0))),
        (None, Some((i, p))) => match locate::narrow(s, p)? {
            Some(f) if f.kink && may_dismiss => return Ok(Some(i)),
            Some(f) => {
                let name = input_name(&s.contract, &s.ck, (f.k, Some(f.j)));
                match f.probe.filter(|q| !(q.ratio() <= 1.0)) {
                    Some(q) => (q, format!("{name} (narrowed down from a failing random direction)"), (f.k, f.j)),
                    None => (p.clone(), format!("a random direction, whose largest disagreement alone is at {name}"), (f.k, f.j)),
                }
            }
            None => (p.clone(), "a random direction".to_string(), (0, 0)),
        },
        (None, None) => return Ok(None),
    };
    let form = match &s.form {
        BackwardForm::Jvp { .. } => "JVP".to_string(),
        BackwardForm::Composite { .. } => "composite graph's VJP".to_string(),
        _ => "VJP".to_string(),
    };
    Err(GradcheckError::Mismatch {
        op: s.op_id.clone(),
        form,
        at,
        analytic: reported.analytic,
        numeric: reported.numeric,
        diff: (reported.analytic - reported.numeric).abs(),
        allowed: reported.allowed(reported.analytic),
        failing: u32::try_from(failing.len()).unwrap_or(u32::MAX),
        checked: u32::try_from(probes.len()).unwrap_or(u32::MAX),
        locus: Box::new(locate::locus(s, k, j)),
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
            allowed: p.allowed(p.analytic),
        })
        .collect()
}

/// VJP / JVP consistency on every probe, where both are declared: the largest difference.
#[allow(clippy::neg_cmp_op_on_partial_ord)]
pub(super) fn consistency(s: &mut Setup, probes: &[&Probe]) -> Result<Option<f64>, GradcheckError> {
    if !matches!(s.form, BackwardForm::VjpJvp { .. }) {
        return Ok(None);
    }
    let mut worst = 0.0f64;
    for p in probes {
        let Some(jv) = p.jvp else { continue };
        let allowed = p.allowed(jv);
        let d = (jv - p.analytic).abs();
        if !(d <= allowed) {
            let (at, (k, j)) = match (p.at.1, locate::narrow_inconsistent(s, p)?) {
                (Some(j), _) => (input_name(&s.contract, &s.ck, p.at), (p.at.0, j)),
                (None, Some((k, j))) => {
                    (format!("a random direction, narrowed down to {}", input_name(&s.contract, &s.ck, (k, Some(j)))), (k, j))
                }
                (None, None) => ("a random direction".to_string(), (0, 0)),
            };
            let at = format!("{at} ({})", locate::locus(s, k, j));
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
/// that the negative control that applies it is rejected with room to spare. Never below
/// `2 rel` (what the bound's relative term alone gives), and only from a normal `a`: at a
/// subnormal `a` the bound's relative term underflows (to 0 below `MIN_POSITIVE / rel`), and a
/// `delta` of 0 made the control `a * 1`, the backward itself, which no probe can reject (a
/// built-in `exp` whose gradients reached 1e-320 was failed as "could not fail" by it).
pub(super) fn smallest_caught(probes: &[&Probe]) -> Option<f64> {
    probes
        .iter()
        .filter(|p| p.analytic.is_finite() && p.analytic.abs() >= f64::MIN_POSITIVE)
        .map(|p| {
            let d = 2.0 * (p.allowed(p.analytic) + (p.analytic - p.numeric).abs()) / (p.analytic.abs() * (1.0 - p.rel));
            d.max(2.0 * p.rel)
        })
        .filter(|d| d.is_finite() && 1.0 + d > 1.0)
        .min_by(f64::total_cmp)
}

/// The negative control: the same probes, a corrupted backward. Scaling and a sign flip must
/// be rejected (they change every nonzero gradient); routing to the neighbouring element must
/// be rejected wherever it changes the backward by more than the bound (for a constant
/// gradient, e.g. `sum`, it is the identity and proves nothing, so it is reported n/a).
#[allow(clippy::neg_cmp_op_on_partial_ord)]
pub(super) fn negative_control(probes: &[&Probe], smallest: Option<f64>) -> Vec<ControlOutcome> {
    let rel = probes.iter().map(|p| p.rel).fold(0.0, f64::max);
    let scale = 1.0 + (8.0 * rel).max(0.01);
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
                if (bad - p.analytic).abs() > 2.0 * p.allowed(bad.abs().max(p.analytic.abs())) {
                    applicable = true;
                }
                let (off, allowed) = ((bad - p.numeric).abs(), p.allowed(bad));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(analytic: f64, numeric: f64, rel: f64) -> Probe {
        Probe {
            at: (0, Some(0)),
            numeric,
            trunc: 0.0,
            round: 0.0,
            analytic,
            neighbour: 0.0,
            jvp: None,
            rel,
            atol: 0.0,
            case: 0,
            dense: None,
        }
    }

    /// A subnormal gradient (exact, so `|a - numeric|` is 0) underflows the bound's relative
    /// term to 0: it proves no relative error is caught, and the control scales by `1 + delta`
    /// only for a `delta` a normal probe proves, which that probe rejects.
    #[test]
    fn the_smallest_caught_error_is_never_the_backward_itself() {
        let rel = 3.5e-14;
        let tiny = probe(1e-320, 1e-320, rel);
        assert_eq!(rel * tiny.analytic.abs(), 0.0, "the relative term underflows");
        assert_eq!(smallest_caught(&[&tiny]), None);
        let normal = probe(0.5, 0.5, rel);
        let d = smallest_caught(&[&tiny, &normal]).expect("the normal probe catches some error");
        assert!(d >= 2.0 * rel && 1.0 + d > 1.0, "{d:e}");
        let control = negative_control(&[&tiny, &normal], Some(d));
        let scaled: Vec<&ControlOutcome> = control.iter().filter(|c| matches!(c.corruption, Corruption::Scaled(_))).collect();
        assert_eq!(scaled.len(), 2, "the fixed scaling and 1 + delta");
        assert!(scaled.iter().all(|c| c.applicable && c.rejected), "{scaled:?}");
    }
}
