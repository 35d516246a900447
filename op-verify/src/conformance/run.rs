//! How conformance runs the kernel under test on a case: through a [`Runner`] (a child process
//! for kernels that are not op-runtime's own, see `core::limits::Isolation`), with the case's
//! time limit scaled from the reference's own time on it. A timeout is confirmed in a fresh
//! child before it is a verdict; a failing case is run again, and a case whose two runs differ
//! is non-deterministic, whatever its values also show. Owns those two reruns; the comparison
//! is `compare`'s, the verdict `survey`'s.

use super::compare::{Fault, Flaky};
use super::{Case, Checker, GUARD};
use crate::isolate::{Death, Runner};
use op_core::kind::BackendKind;
use op_core::limits::Isolation;
use op_core::op::OpSource;
use op_core::registry::OpHandle;
use op_core::tensor::{Scalar, Tensor};
use std::time::Duration;

/// Whether a run of `source`'s kernel on `kind` goes to a child process under `isolation`.
fn isolates(isolation: Isolation, source: OpSource, kind: BackendKind) -> bool {
    let host = matches!(kind, BackendKind::Cpu | BackendKind::Reference);
    match isolation {
        Isolation::InProcess => false,
        Isolation::Child => host,
        // The reference backend runs the function the verifier already ran in process for the
        // expected outputs; GPU kernels cannot reach the host's memory and their waits time out.
        Isolation::Auto => kind == BackendKind::Cpu && source == OpSource::User,
        // A mode added later: isolate what can be isolated.
        _ => host,
    }
}

impl<'a> Checker<'a> {
    /// A checker of `handle`'s kernel on `kind`, under the limits its registry holds for it.
    pub(super) fn new(handle: &'a OpHandle, kind: BackendKind) -> Checker<'a> {
        let op = handle.op();
        let limits = handle.registry().run_limits(&op.id);
        let isolated = isolates(limits.isolation, op.source, kind);
        let serve = move |inputs: &[&Tensor], params: &[Scalar]| {
            handle.call_guarded(inputs, params, kind, GUARD).map(|o| o.outputs).map_err(|e| e.to_string())
        };
        let runner = Runner::new(format!("`{}` on {kind}", op.id), Box::new(serve), isolated, limits.memory);
        Checker { op, kind, runner, limits }
    }

    /// The kernel's outputs on `case` (guarded), or its fault: the backend's error, or how its
    /// process died. A timeout counts only when a fresh run times out too.
    pub(super) fn execute(&self, case: &Case, reference: Duration) -> Result<Vec<Tensor>, Fault> {
        let limit = self.limits.case_limit(reference);
        let refs: Vec<&Tensor> = case.inputs.iter().collect();
        let label = format!("case #{}", case.index);
        let first = self.runner.call(&refs, &case.params, limit, &label);
        let reply = match first {
            Err(Death::TimedOut { .. }) => self.runner.call(&refs, &case.params, limit, &label),
            other => other,
        };
        match reply {
            Ok(Ok(outputs)) => Ok(outputs),
            Ok(Err(e)) if device_stalled(&e) => Err(Fault::Died(Death::DeviceTimedOut(e))),
            Ok(Err(e)) => Err(Fault::Execution(e)),
            Err(death) => Err(Fault::Died(death)),
        }
    }

    /// Runs a failing case again: a non-deterministic fault where the second run differs from
    /// the first (`first`: its outputs, or how it failed), else `None`. A second run that dies
    /// is that death (a crash outranks the values).
    pub(super) fn rerun(&self, case: &Case, reference: Duration, first: Result<&[Tensor], &Fault>) -> Option<Fault> {
        let second = self.execute(case, reference);
        match (first, second) {
            (_, Err(f @ Fault::Died(_))) => Some(f),
            (Ok(a), Ok(b)) => differ(a, &b).map(|k| Fault::NonDeterministic(Box::new(k))),
            (Err(fa), Err(fb)) if same_failure(fa, &fb) => None,
            (a, b) => Some(Fault::NonDeterministic(Box::new(Flaky { at: None, first: told(a), second: told(b.as_deref()) }))),
        }
    }
}

/// Whether a backend's error says its device ran past a wait limit or is still busy with a
/// launch that did (`WgpuError::TimedOut`, `WgpuError::Hung`).
fn device_stalled(e: &str) -> bool {
    e.contains("the device timed out") || e.contains("the device is hung")
}

/// Whether two failed runs fail alike: a kernel that fails twice is failing, not
/// non-deterministic, whatever its messages say (they may name addresses or times).
fn same_failure(a: &Fault, b: &Fault) -> bool {
    matches!((a, b), (Fault::Execution(_), Fault::Execution(_)))
}

fn told(r: Result<&[Tensor], &Fault>) -> String {
    match r {
        Ok(outs) => format!("{} output(s) of {} element(s)", outs.len(), outs.iter().map(Tensor::numel).sum::<usize>()),
        Err(Fault::Execution(e)) => format!("failed: {e}"),
        Err(f) => format!("failed: {}", f.class().name()),
    }
}

/// Where two runs' outputs first differ in bits, with both values.
fn differ(a: &[Tensor], b: &[Tensor]) -> Option<Flaky> {
    if a.len() != b.len() {
        return Some(Flaky { at: None, first: format!("{} output(s)", a.len()), second: format!("{} output(s)", b.len()) });
    }
    for (o, (x, y)) in a.iter().zip(b).enumerate() {
        if x.shape() != y.shape() || x.dtype() != y.dtype() {
            let shape = |t: &Tensor| format!("`{}` {:?}", t.dtype(), t.shape());
            return Some(Flaky { at: None, first: shape(x), second: shape(y) });
        }
        let (dx, dy) = (x.data(), y.data());
        if let Some(i) = (0..dx.len()).find(|&i| dx.bits(i) != dy.bits(i)) {
            let show =
                |d: &op_core::tensor::Data| format!("{:e} (bits {:#x})", d.get_f64(i).unwrap_or(f64::NAN), d.bits(i).unwrap_or_default());
            // `i` counts the guard band; the element index is the output's own.
            let at = (o, i.wrapping_sub(GUARD));
            return Some(Flaky { at: Some(at).filter(|_| i >= GUARD), first: show(dx), second: show(dy) });
        }
    }
    None
}
