//! `op_jax.conformance` and `op_jax.gradcheck`: the project's own checks, run from Python on an
//! op of the process registry, their verdicts returned as JSON (the Python half parses it into
//! plain dicts and lists). Nothing here judges anything: conformance is
//! `op_runtime::conformance::conform` (per instance and backend, as `conform_all` does), gradcheck
//! is `op_runtime::gradcheck::gradcheck_with` on the process registry; this module only
//! transcribes their receipts, reports and errors field by field.
//!
//! A verdict is returned, never raised: a kernel rejected, a backend skipped, a declaration whose
//! reference fails on an admissible case, a backward that disagrees with central differences.
//! What raises is a check that could not run: an unknown op (`UnknownOpError`), an unknown
//! backend, a backend asked for by name that cannot run the op here, an op gradcheck has nothing
//! to check on (`backward = none`, no f64 reference, ...), or a kernel the verifier could not
//! start in a child process (`VerificationError`).
//!
//! Isolation: conformance runs a user op's `cpu` kernel in a child process forked from this one
//! (`op_runtime::conformance::Isolation::Auto`), Python interpreter and XLA threads included. The
//! child only runs the kernel's Rust code over a pipe and leaves with `_exit`: it never touches
//! the interpreter (the GIL is released around the whole check) or a lock of XLA's, so forking
//! here is the same as from any multi-threaded Rust program (`tests/test_verdicts.py` forks it
//! while another Python thread runs jitted JAX calls, with a kernel that aborts the child, and
//! the interpreter goes on). One thing the child does inherit is the process's signal handlers:
//! where Python's `faulthandler` is on (pytest turns it on), a kernel that crashes the child
//! makes the handler print this process's Python stacks from the child before the signal ends
//! it; the verdict (`crashed`, the signal) is the same.

use crate::{lookup, VerificationError};
use op_runtime::conformance::{conform, Case, ConformanceFailure, Death, Defect, Fault, Report};
use op_runtime::gradcheck::{gradcheck_with, GradcheckError, GradcheckOptions, Locus};
use op_runtime::receipt::Receipt;
use op_runtime::{registry, BackendKind, OpHandle};
use pyo3::prelude::*;
use serde_json::{json, Value};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Elements of each input a case carries as values (a shrunk case is far smaller).
const CASE_VALUES: usize = 1024;

/// A float for JSON: a number where finite, else `"NaN"`, `"inf"` or `"-inf"`.
fn num(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        json!(x.to_string())
    }
}

/// A case as the report names it, with its symbols, parameters and input values.
fn case_json(c: &Case) -> Value {
    let inputs: Vec<Value> = c
        .inputs
        .iter()
        .map(|t| {
            let values = t.data().to_f64_vec().map(|v| {
                let truncated = v.len() > CASE_VALUES;
                (v.into_iter().take(CASE_VALUES).map(num).collect::<Vec<_>>(), truncated)
            });
            json!({
                "dtype": t.dtype().name(),
                "shape": t.shape(),
                "values": values.as_ref().map(|(v, _)| v),
                "truncated": values.as_ref().is_some_and(|(_, t)| *t),
            })
        })
        .collect();
    json!({
        "text": c.to_string(),
        "index": c.index,
        "family": c.family,
        "pattern": c.pattern.name(),
        "seed": format!("{:#018x}", c.seed),
        "symbols": c.sym_names.iter().zip(&c.shape.syms).map(|(n, v)| json!([n, v.to_string()])).collect::<Vec<_>>(),
        "params": c.param_names.iter().zip(&c.params).map(|(n, p)| json!([n, p.to_string()])).collect::<Vec<_>>(),
        "inputs": inputs,
    })
}

fn fault_json(f: &Fault) -> Value {
    match f {
        Fault::Length { expected, actual } => json!({"kind": "length", "expected": expected, "actual": actual}),
        Fault::Mismatch(m) => json!({
            "kind": "mismatch",
            "index": m.index,
            "expected": num(m.expected),
            "actual": num(m.actual),
            "expected_bits": format!("{:#x}", m.expected_bits),
            "actual_bits": format!("{:#x}", m.actual_bits),
            "detail": m.detail,
            "count": m.count,
            "unwritten": m.unwritten,
            "classes": m.classes.iter().map(|c| c.name()).collect::<Vec<_>>(),
            "bad": m.bad.iter().take(64).collect::<Vec<_>>(),
        }),
        Fault::OutOfBounds(o) => {
            json!({"kind": "out_of_bounds", "side": o.side, "offset": o.offset, "bits": format!("{:#x}", o.bits), "count": o.count})
        }
        Fault::Execution(m) => json!({"kind": "execution", "message": m}),
        Fault::Scale(m) => json!({"kind": "scale", "message": m}),
        Fault::OutputCount { expected, actual } => json!({"kind": "output_count", "expected": expected, "actual": actual}),
        Fault::Died(d) => json!({"kind": "died", "death": death_name(d), "message": d.to_string()}),
        Fault::NonDeterministic(f) => json!({"kind": "non_deterministic", "at": f.at, "first": f.first, "second": f.second}),
    }
}

fn death_name(d: &Death) -> &'static str {
    match d {
        Death::Signal { .. } => "signal",
        Death::Exited { .. } => "exited",
        Death::OutOfMemory { .. } => "out_of_memory",
        Death::TimedOut { .. } => "timed_out",
        Death::DeviceTimedOut(_) => "device_timed_out",
        Death::Lost(_) => "lost",
        _ => "other",
    }
}

fn defect_json(r: &Report, d: &Defect) -> Value {
    json!({
        "class": d.class.name(),
        "explanation": r.explain(d),
        "output": d.output,
        "dtype": d.dtype.name(),
        "explained": d.explained,
        "case": case_json(&d.case),
        "shrunk_from": d.shrunk_from,
        "fault": fault_json(&d.fault),
    })
}

fn receipt_json(kind: BackendKind, r: &Receipt) -> Value {
    json!({
        "op": r.op,
        "dtypes": r.dtypes,
        "backend": kind.name(),
        "verdict": "conformed",
        "content_hash": r.content_hash,
        "digest": r.digest,
        "corpus_digest": r.corpus_digest,
        "cases": r.cases,
        "tolerance": r.tolerance.to_string(),
        "device": r.device.adapter,
        "engine_version": r.engine_version,
        "untested": r.untested,
        "receipt": serde_json::to_value(r).unwrap_or(Value::Null),
    })
}

fn report_json(r: &Report) -> Value {
    let first = r.first();
    json!({
        "op": r.op,
        "dtypes": r.dtypes,
        "backend": r.backend.name(),
        "verdict": "rejected",
        "content_hash": r.content_hash,
        "device": r.device.adapter,
        "device_profile": serde_json::to_value(&r.device).unwrap_or(Value::Null),
        "tolerance": r.tolerance.to_string(),
        "classes": r.defects.iter().map(|d| d.class.name()).collect::<Vec<_>>(),
        "class": first.class.name(),
        "case": case_json(&first.case),
        "failed": r.failed,
        "cases": r.cases,
        "passed_before": r.passed_before,
        "defects": r.defects.iter().map(|d| defect_json(r, d)).collect::<Vec<_>>(),
        "message": r.to_string(),
    })
}

/// One (instance, backend) verdict as JSON. `Err` where the verifier itself failed (it could
/// not run the kernel in a child process): no verdict on the kernel.
fn verdict_json(h: &OpHandle, kind: BackendKind, r: &Result<Receipt, ConformanceFailure>) -> Result<Value, String> {
    let op = h.op();
    let base = |verdict: &str, failure: &str, e: &ConformanceFailure| {
        json!({
            "op": op.id,
            "dtypes": op.binding_text(),
            "backend": kind.name(),
            "verdict": verdict,
            "failure": failure,
            "content_hash": op.hash_hex(),
            "message": e.to_string(),
        })
    };
    let with = |mut v: Value, extra: Value| {
        if let (Some(m), Value::Object(e)) = (v.as_object_mut(), extra) {
            m.extend(e);
        }
        v
    };
    Ok(match r {
        Ok(receipt) => receipt_json(kind, receipt),
        Err(ConformanceFailure::Rejected(report)) => {
            if let Some(d) = report.defects.iter().find(|d| matches!(d.fault, Fault::Died(Death::Lost(_)))) {
                return Err(format!("op `{}` on {kind}: {}", op.id, fault_json(&d.fault)["message"].as_str().unwrap_or("lost")));
            }
            report_json(report)
        }
        Err(e @ ConformanceFailure::Unavailable { reason, .. }) => with(base("skipped", "unavailable", e), json!({"reason": reason})),
        Err(e @ ConformanceFailure::Unsupported { reason, .. }) => with(base("skipped", "unsupported", e), json!({"reason": reason})),
        // The declaration's defects: no kernel was judged.
        Err(e @ ConformanceFailure::ReferencePanicked { shape, case, message, .. }) => {
            with(base("contract_defect", "reference_panicked", e), json!({"shape": shape, "case": case, "reason": message}))
        }
        Err(e @ ConformanceFailure::Reference { case, message, .. }) => {
            with(base("contract_defect", "reference_failed", e), json!({"case": case, "reason": message}))
        }
        Err(e @ ConformanceFailure::Scale { case, message, .. }) => {
            with(base("contract_defect", "no_accum_scale", e), json!({"case": case, "reason": message}))
        }
        Err(e @ ConformanceFailure::NoCases { .. }) => base("contract_defect", "no_cases", e),
        // A failure this build of op-jax does not classify (the enum is non-exhaustive): raised,
        // as a check that cannot run is, never reported as a verdict.
        Err(other) => return Err(format!("op `{}` on {kind}: {other}", op.id)),
    })
}

fn parse_backend(kind: &str) -> PyResult<BackendKind> {
    BackendKind::PRIORITY.iter().copied().find(|b| b.name() == kind).ok_or_else(|| {
        let names: Vec<&str> = BackendKind::PRIORITY.iter().map(|b| b.name()).collect();
        VerificationError::new_err(format!("unknown backend `{kind}`; the backends are {}", names.join(", ")))
    })
}

/// Runs `f` with the GIL released, a panic turned into `VerificationError`.
fn checked<T: Send>(py: Python<'_>, what: &str, f: impl FnOnce() -> T + Send) -> PyResult<T> {
    py.detach(|| catch_unwind(AssertUnwindSafe(f))).map_err(|p| {
        let m = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
        VerificationError::new_err(format!("{what} panicked: {m}"))
    })
}

/// Conformance of op `name` on `backend` (every backend kind when `None`, as `conform_all`),
/// every instance of an op with dtype variables: a JSON list, one entry per (instance, backend)
/// with `verdict` `conformed` (the receipt), `rejected` (classes, the case, the report),
/// `skipped` (the backend cannot run it here) or `contract_defect` (the reference failed on an
/// admissible case). A backend named that runs no instance of the op here raises
/// `VerificationError`, as does an unknown backend.
#[pyfunction]
#[pyo3(signature = (name, backend=None))]
pub fn conformance(py: Python<'_>, name: &str, backend: Option<&str>) -> PyResult<String> {
    let h = lookup(name)?;
    let kinds: Vec<BackendKind> = match backend {
        Some(b) => vec![parse_backend(b)?],
        None => BackendKind::PRIORITY.to_vec(),
    };
    let id = h.id();
    let results = checked(py, &format!("conformance of `{id}`"), || {
        h.instances().into_iter().flat_map(|i| kinds.iter().map(move |k| (i.clone(), *k, conform(&i, *k)))).collect::<Vec<_>>()
    })?;
    if backend.is_some() && results.iter().all(|(_, _, r)| r.as_ref().err().is_some_and(ConformanceFailure::is_skip)) {
        let why: Vec<String> = results.iter().filter_map(|(_, _, r)| r.as_ref().err().map(|e| e.to_string())).collect();
        return Err(VerificationError::new_err(format!("op `{id}`: nothing to conform on backend `{}`: {}", kinds[0], why.join("; "))));
    }
    for r in results.iter().filter_map(|(_, _, r)| r.as_ref().ok()) {
        crate::receipts::hold(r.clone());
    }
    let out = results.iter().map(|(i, k, r)| verdict_json(i, *k, r)).collect::<Result<Vec<_>, _>>().map_err(VerificationError::new_err)?;
    Ok(Value::Array(out).to_string())
}

fn locus_json(l: &Locus) -> Value {
    json!({
        "input": l.input,
        "index": l.index,
        "element": l.element(),
        "shape": l.shape,
        "bindings": l.bindings,
        "content_hash": l.content_hash,
        "salt": l.salt,
        "text": l.to_string(),
    })
}

/// The fields of a gradcheck that ran and did not certify the backward.
fn failure_json(e: &GradcheckError) -> Value {
    match e {
        GradcheckError::Mismatch { op, form, at, analytic, numeric, diff, allowed, failing, checked, locus } => json!({
            "kind": "mismatch", "op": op, "form": form, "at": at, "analytic": num(*analytic), "numeric": num(*numeric),
            "diff": num(*diff), "allowed": num(*allowed), "failing": failing, "checked": checked, "locus": locus_json(locus),
        }),
        GradcheckError::Inconsistent { op, at, jvp, vjp, allowed } => json!({
            "kind": "inconsistent", "op": op, "at": at, "jvp": num(*jvp), "vjp": num(*vjp), "allowed": num(*allowed),
        }),
        GradcheckError::KinkConvention { op, at, analytic, left, right, expected, locus } => json!({
            "kind": "kink_convention", "op": op, "at": at, "analytic": num(*analytic), "left": num(*left), "right": num(*right),
            "expected": expected, "locus": locus_json(locus),
        }),
        GradcheckError::Inconclusive { op, rounds, why, skipped, probes, kinks, unresolved, nonfinite, hint } => json!({
            "kind": "inconclusive", "op": op, "rounds": rounds, "why": why, "skipped": skipped, "probes": probes, "kinks": kinks,
            "unresolved": unresolved, "nonfinite": nonfinite, "hint": hint,
        }),
        GradcheckError::NegativeControlAccepted { op, corruption } => {
            json!({"kind": "negative_control_accepted", "op": op, "corruption": corruption})
        }
        _ => json!({"kind": "other"}),
    }
}

/// Gradcheck of op `name`'s declared backward (the process registry resolves a composite's
/// ops), as JSON: `{"op", "passed": true, "report", "summary"}`, or `{"op", "passed": false,
/// "kind", "message", "rejection", ...}` with the error's own fields (the probe's numbers, the
/// `locus` that reproduces it). An op gradcheck cannot check raises `VerificationError`.
#[pyfunction]
pub fn gradcheck(py: Python<'_>, name: &str) -> PyResult<String> {
    let h = lookup(name)?;
    let op = h.op();
    let decl = op.decl();
    let id = op.id.clone();
    if op.is_vjp_op() {
        // A VJP op derived from another op's backward carries that op's declaration, not one of
        // its own: gradcheck of the forward op checks it.
        return Err(VerificationError::new_err(format!(
            "op `{id}` is a VJP op derived from another op's declared backward, with no declaration of its own to \
             gradcheck; gradcheck the op it is the VJP of (`{}`)",
            id.rsplit_once("/vjp@").map_or(id.as_str(), |(f, _)| f)
        )));
    }
    let r = checked(py, &format!("gradcheck of `{id}`"), || gradcheck_with(registry(), decl, &GradcheckOptions::default()))?;
    let v = match r {
        Ok(report) => {
            json!({"op": id, "passed": true, "report": serde_json::to_value(&report).unwrap_or(Value::Null), "summary": report.to_string()})
        }
        Err(e) if e.is_check_failure() => {
            let mut v = failure_json(&e);
            if let Some(m) = v.as_object_mut() {
                m.insert("op".into(), json!(id));
                m.insert("passed".into(), json!(false));
                m.insert("rejection".into(), json!(e.is_rejection()));
                m.insert("message".into(), json!(e.to_string()));
            }
            v
        }
        Err(e) => return Err(VerificationError::new_err(format!("gradcheck could not run: {e}"))),
    };
    Ok(v.to_string())
}

/// Registers the verdict fixtures (`verdict_fixture`): returns their `name@version`.
#[pyfunction]
pub fn _register_verdict_fixtures() -> PyResult<Vec<String>> {
    crate::verdict_fixture::all().into_iter().map(crate::register).collect()
}
