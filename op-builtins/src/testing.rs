//! Test support, on the top floor: the tests `#[op]` generates for every declaration
//! (conformance of every kernel, gradcheck of the backward), which always demand success, and
//! the helpers a fixture's own tests call to assert a rejection ([`assert_conformance_rejected`],
//! [`assert_reference_rejected`], [`assert_gradcheck_rejected`]; such fixtures declare
//! `generated_tests = false`). Nothing here reads an op's name to decide what to expect.
//!
//! This is the one module that reads the environment for test policy: [`REQUIRE_GPU_ENV`] and
//! [`REQUIRE_CUDA_ENV`] turn an unavailable GPU backend from a printed skip into a failure.
//! Library code paths below never read either (the GPU engines' own unit tests read them
//! through these constants). With [`REPORT_DIR_ENV`] set, the generated tests also write their
//! records there (`op_runtime::report`), which `cargo op report` renders.

use op_core::decl::OpDecl;
use op_core::kind::BackendKind;
use op_core::op::{OpSource, RegisteredOp};
use op_core::receipt::Receipt;
use op_core::registry::{OpHandle, Registry};
use op_train::tape::{check_differentiable, TapeError};
use op_verify::conformance::{conform, conform_all, is_kernel, ConformanceFailure, Report};
use op_verify::gradcheck::{GradcheckError, GradcheckReport};
use op_verify::record::REPORT_DIR_ENV;
use op_verify::record::{self, CatalogEntry, ConformanceRecord, GradcheckRecord};
use std::path::Path;

pub use op_core::require::{REQUIRE_CUDA_ENV, REQUIRE_GPU_ENV};

/// Which GPU backends must be available (a skip becomes a failure).
#[derive(Clone, Copy, Debug, Default)]
struct Required {
    wgpu: bool,
    cuda: bool,
}

impl Required {
    /// The policy of this run, from [`REQUIRE_GPU_ENV`] and [`REQUIRE_CUDA_ENV`].
    fn from_env() -> Required {
        Required { wgpu: std::env::var(REQUIRE_GPU_ENV).as_deref() == Ok("1"), cuda: std::env::var(REQUIRE_CUDA_ENV).as_deref() == Ok("1") }
    }

    /// The failure for `e` on `kind` when it is an unavailable backend this run requires.
    fn refuses(self, kind: BackendKind, e: &ConformanceFailure) -> Option<String> {
        match e {
            ConformanceFailure::Unavailable { .. } if kind == BackendKind::Wgpu && self.wgpu => {
                Some(format!("{REQUIRE_GPU_ENV}=1 but {e}"))
            }
            ConformanceFailure::Unavailable { .. } if kind == BackendKind::Cuda && self.cuda => {
                Some(format!("{REQUIRE_CUDA_ENV}=1 but {e}"))
            }
            _ => None,
        }
    }
}

/// The op in a private registry: a declaration's own conformance must not depend on what else
/// the process registered (a test may register other content under the same name on purpose).
/// A built-in registers as one (its records say so).
fn register_privately(decl: &'static OpDecl, what: &str) -> OpHandle {
    let registry = Registry::new();
    let registered = if crate::is_builtin(decl) { registry.register_builtin(decl) } else { registry.register(decl) };
    match registered {
        Ok(h) => h,
        Err(e) => panic!("{what} of `{}`: the op does not register: {e}", decl.rust_name),
    }
}

/// The three tests `#[op]` generates in each declaration's module, next to its `DECL`:
/// conformance ([`conformance_test`]), gradcheck ([`gradcheck_test`]) and the catalog's entry
/// ([`catalog_test`]). The macro emits one `#[cfg(test)]` invocation, so a build that is not
/// the declaring crate's test build never expands it.
#[doc(hidden)]
#[macro_export]
macro_rules! __op_tests {
    () => {
        /// Conformance of every kernel of this op on every available backend.
        #[test]
        fn __op_conformance() {
            $crate::__private::conformance_test(&DECL);
        }

        /// Gradcheck of this op's declared backward (with its negative control).
        #[test]
        fn __op_gradcheck() {
            $crate::__private::gradcheck_test(&DECL);
        }

        /// This op is in its binary's catalog, with the identity registration gives it.
        #[test]
        fn __op_catalog() {
            $crate::__private::catalog_test(&DECL);
        }
    };
}

/// A loaded op whose contract `edit` changed, for testing what a consumer of ops (a store, a
/// backend) re-checks of what it is handed: the macro refuses such contracts, so no declaration
/// produces one. The identity is not recomputed (the edited op claims the declaration's).
pub fn with_edited_contract(
    decl: &'static OpDecl,
    edit: impl FnOnce(&mut op_contract::contract::Contract),
) -> Result<RegisteredOp, op_core::error::RegistrationError> {
    let mut op = RegisteredOp::load(decl)?;
    edit(&mut op.contract);
    Ok(op)
}

/// The test `#[op]` generates for every declaration: conformance of each kernel on each
/// available backend, and of the reference. Fails (panics, as a test does) with the reports
/// when anything does not conform; skips unavailable GPU backends with a printed reason, except
/// that with `OP_REQUIRE_GPU_ADAPTER=1` a missing wgpu adapter fails, and with
/// `OP_REQUIRE_CUDA=1` an unavailable CUDA backend fails for ops with a CUDA kernel.
#[doc(hidden)] // called by the tests `#[op]` generates, through `__private`
pub fn conformance_test(decl: &'static OpDecl) {
    let handle = register_privately(decl, "conformance");
    let records = record::dir_from_env();
    // The op, then its VJP op where its backward declares VJP kernels (their reference is the
    // VJP rule).
    for h in std::iter::once(handle.clone()).chain(handle.vjp_op()) {
        let results = conform_all(&h);
        if let Some(dir) = &records {
            let r = ConformanceRecord::of(&h, &results);
            write(dir, record::CONFORMANCE_DIR, &record::record_name(&r.op, "conformance"), &r);
        }
        if let Err(failures) = verdict(&h.id(), Required::from_env(), results) {
            panic!("{failures}");
        }
    }
}

/// Built-in or user, as the registry labels it.
fn source(decl: &OpDecl) -> OpSource {
    if crate::is_builtin(decl) {
        OpSource::Builtin
    } else {
        OpSource::User
    }
}

/// Writes a record the run asked for; a record that cannot be written fails the test (the run
/// asked for a report it would not get).
fn write(dir: &Path, sub: &str, name: &str, value: &impl serde::Serialize) {
    if let Err(e) = record::write_record(dir, sub, name, value) {
        panic!("{REPORT_DIR_ENV}={}: cannot write the record {sub}/{name}: {e}", dir.display());
    }
}

/// The catalog test `#[op]` generates for every declaration: the op is in its binary's catalog
/// (`op_runtime::catalog::decls`) exactly once, and its entry's identity is the one
/// registration gives it. With [`REPORT_DIR_ENV`] set, writes the entry (`cargo op list`).
#[doc(hidden)] // called by the tests `#[op]` generates, through `__private`
pub fn catalog_test(decl: &'static OpDecl) {
    let found: Vec<&&OpDecl> = op_core::catalog::decls().iter().filter(|d| record::same_decl(d, decl)).collect();
    let [entry] = found.as_slice() else {
        panic!("catalog: `{}` ({}) is in its binary's catalog {} times, expected once", decl.rust_name, decl.module, found.len())
    };
    let entry = match CatalogEntry::of(entry, source(decl)) {
        Ok(e) => e,
        Err(e) => panic!("catalog: `{}` does not load: {e}", decl.rust_name),
    };
    let handle = register_privately(decl, "catalog");
    assert_eq!(entry.identity, handle.op().hash_hex(), "catalog: `{}` listed with another identity than registration's", entry.id);
    assert_eq!(entry.id, handle.id(), "catalog: listed under another id than registration's");
    if let Some(dir) = record::dir_from_env() {
        write(&dir, record::CATALOG_DIR, &record::record_name(&entry, "catalog"), &entry);
    }
}

/// The generated test's decision over every backend's result: `Err` with the failures joined.
/// Prints conformed backends and skips (with the reason).
fn verdict(id: &str, required: Required, results: Vec<(BackendKind, Result<Receipt, ConformanceFailure>)>) -> Result<(), String> {
    let mut failures: Vec<String> = Vec::new();
    for (kind, result) in results {
        match result {
            Ok(r) => println!("conformance: `{id}` on {kind}: {} cases conform ({})", r.cases, r.device),
            Err(e) => match required.refuses(kind, &e) {
                Some(f) => failures.push(f),
                None if e.is_skip() => println!("conformance: skipping {kind} for `{id}`: {e}"),
                None => failures.push(e.to_string()),
            },
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n\n"))
    }
}

/// Asserts that conformance rejects every kernel of a deliberately broken op (GPU or
/// `cpu = path`) that runs here, and that its reference conforms (so the rejection is the
/// kernel's): a negative control, for a fixture declared with `generated_tests = false`.
/// Returns the rejection reports, one per backend that ran a kernel (empty where none runs
/// here). Unavailable GPU backends skip with a printed reason, except where the run requires
/// them (`OP_REQUIRE_GPU_ADAPTER=1`, `OP_REQUIRE_CUDA=1`). Panics, as a test does, when a
/// kernel conforms, fails otherwise than by a rejection, when the reference does not conform,
/// or when the op declares no kernel (assert a broken reference with
/// [`assert_reference_rejected`]).
pub fn assert_conformance_rejected(decl: &'static OpDecl) -> Vec<Report> {
    let handle = register_privately(decl, "conformance");
    let contract = &handle.op().contract;
    let declares_kernel = contract.cpu.is_some() || !contract.kernels.is_empty();
    match kernels_rejected(&handle.id(), declares_kernel, Required::from_env(), conform_all(&handle)) {
        Ok(reports) => reports,
        Err(failures) => panic!("{failures}"),
    }
}

/// [`assert_conformance_rejected`] for the VJP kernels of a deliberately broken backward
/// (`backward = vjp(rule, kernel(...))`): every VJP kernel that runs here is rejected against
/// the VJP rule, and the rule itself conforms. Panics, as a test does, where the op declares
/// no VJP kernel.
pub fn assert_vjp_conformance_rejected(decl: &'static OpDecl) -> Vec<Report> {
    let handle = register_privately(decl, "VJP conformance");
    let Some(vjp) = handle.vjp_op() else { panic!("op `{}` declares no VJP kernel", handle.id()) };
    match kernels_rejected(&vjp.id(), true, Required::from_env(), conform_all(&vjp)) {
        Ok(reports) => reports,
        Err(failures) => panic!("{failures}"),
    }
}

/// [`assert_conformance_rejected`]'s decision over every backend's result.
fn kernels_rejected(
    id: &str,
    declares_kernel: bool,
    required: Required,
    results: Vec<(BackendKind, Result<Receipt, ConformanceFailure>)>,
) -> Result<Vec<Report>, String> {
    if !declares_kernel {
        return Err(format!(
            "op `{id}` declares no kernel (GPU or `cpu = path`), so no kernel can be rejected; assert a broken reference with `assert_reference_rejected`"
        ));
    }
    let mut failures: Vec<String> = Vec::new();
    let mut reports = Vec::new();
    for (kind, result) in results {
        match result {
            Ok(r) if !is_kernel(kind) => println!("conformance: `{id}` on {kind}: {} cases conform ({})", r.cases, r.device),
            Err(e) if !is_kernel(kind) => {
                failures.push(format!("op `{id}`: the reference must conform for a kernel's rejection to mean anything, but: {e}"))
            }
            Ok(r) => failures.push(format!("op `{id}` must be rejected, but its {kind} kernel conformed ({} cases)", r.cases)),
            Err(ConformanceFailure::Rejected(report)) => {
                println!("conformance: `{id}` on {kind} rejected, as asserted:\n{report}");
                reports.push(*report);
            }
            Err(e) => match required.refuses(kind, &e) {
                Some(f) => failures.push(f),
                None if e.is_skip() => println!("conformance: skipping {kind} for `{id}`: {e}"),
                None => {
                    failures.push(format!("op `{id}` on {kind}: expected the kernel's rejection (a mismatch with the reference), got: {e}"))
                }
            },
        }
    }
    if !failures.is_empty() {
        return Err(failures.join("\n\n"));
    }
    if reports.is_empty() {
        println!("conformance: no kernel of `{id}` runs here; nothing was rejected (every kernel backend skipped)");
    }
    Ok(reports)
}

/// Asserts that conformance rejects the reference of a deliberately broken op (a reference that
/// breaks its own contract: a declared NaN policy, an output bound, outputs that disagree):
/// a negative control, for a fixture declared with `generated_tests = false`. Returns the
/// failure. Panics, as a test does, when the reference conforms, or when conformance found no
/// case to judge it on (a check that did not run rejected nothing).
pub fn assert_reference_rejected(decl: &'static OpDecl) -> ConformanceFailure {
    let handle = register_privately(decl, "conformance");
    match reference_rejected(&handle.id(), conform(&handle, BackendKind::Reference)) {
        Ok(failure) => failure,
        Err(message) => panic!("{message}"),
    }
}

/// [`assert_reference_rejected`]'s decision over the reference's result.
fn reference_rejected(id: &str, result: Result<Receipt, ConformanceFailure>) -> Result<ConformanceFailure, String> {
    match result {
        Ok(r) => Err(format!("op `{id}` must have its reference rejected, but the reference conformed ({} cases)", r.cases)),
        Err(e @ (ConformanceFailure::NoCases { .. } | ConformanceFailure::Unavailable { .. } | ConformanceFailure::Unsupported { .. })) => {
            Err(format!("op `{id}` must have its reference rejected, but conformance judged nothing: {e}"))
        }
        Err(e) => {
            println!("conformance: the reference of `{id}` rejected, as asserted:\n{e}");
            Ok(e)
        }
    }
}

/// The gradcheck test `#[op]` generates for every declaration. A differentiable op must pass
/// gradcheck (negative control included); a `backward = none` op passes after checking that
/// asking for gradients is the typed error naming it.
#[doc(hidden)] // called by the tests `#[op]` generates, through `__private`
pub fn gradcheck_test(decl: &'static OpDecl) {
    let op = match RegisteredOp::load_as(decl, source(decl)) {
        Ok(op) => op,
        Err(e) => panic!("gradcheck: {e}"),
    };
    let result = crate::gradcheck(decl);
    let differentiable = op.contract.backward.is_differentiable();
    if let Some(dir) = record::dir_from_env() {
        let r = GradcheckRecord::of(CatalogEntry::of_op(&op), &result, !differentiable);
        write(&dir, record::GRADCHECK_DIR, &record::record_name(&r.op, "gradcheck"), &r);
    }
    if !differentiable {
        match result {
            Err(GradcheckError::NotDifferentiable { op: name }) if name == op.id => {}
            other => panic!("gradcheck of `{}` (backward = none) must be the typed NotDifferentiable error, got {other:?}", op.id),
        }
        match check_differentiable(decl) {
            Err(TapeError::NotDifferentiable { op: name }) if name == op.id => {}
            other => panic!("asking the tape for gradients through `{}` must be the typed NotDifferentiable error, got {other:?}", op.id),
        }
        return;
    }
    match result {
        Ok(r) => println!("{r}"),
        Err(e) => panic!("{e}"),
    }
}

/// Asserts that gradcheck runs on a deliberately wrong backward and does not certify it
/// (rejected, inconclusive, or unable to fail: [`GradcheckError::is_check_failure`]): a
/// negative control, for a fixture declared with `generated_tests = false`. Returns the error
/// so the test can assert which one. Panics, as a test does, when gradcheck passes or cannot
/// run (e.g. `backward = none`, no float input).
pub fn assert_gradcheck_rejected(decl: &'static OpDecl) -> GradcheckError {
    match gradcheck_rejected(decl.rust_name, crate::gradcheck(decl)) {
        Ok(e) => e,
        Err(message) => panic!("{message}"),
    }
}

/// [`assert_gradcheck_rejected`]'s decision over gradcheck's result.
fn gradcheck_rejected(name: &str, result: Result<GradcheckReport, GradcheckError>) -> Result<GradcheckError, String> {
    match result {
        Err(e) if e.is_check_failure() => {
            println!("gradcheck: `{name}` not certified, as asserted: {e}");
            Ok(e)
        }
        Ok(r) => Err(format!("`{}` must not pass gradcheck, but passed:\n{r}", r.op)),
        Err(e) => Err(format!("`{name}` must be rejected by gradcheck, but gradcheck did not run to a verdict: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{op, Real};
    use std::panic::catch_unwind;

    /// `sum` with a fast kernel that drops the last element: a kernel conformance must reject.
    #[op(name = "test/testing/sum_drops_last", version = 1, signature(x: f32[n]) -> f32[],
         category = reduction, tolerance = accum(2), backward = none, cpu = sum_dropping_last, generated_tests = false)]
    pub fn sum_drops_last<T: Real>(x: &[T]) -> Vec<T> {
        crate::sum(x)
    }
    /// Wrong on purpose: the last element is left out.
    pub fn sum_dropping_last(x: &[f32]) -> Vec<f32> {
        crate::sum(&x[..x.len().saturating_sub(1)])
    }

    /// `sum` with a correct fast kernel (the reference's own order).
    #[op(name = "test/testing/sum_fast", version = 1, signature(x: f32[n]) -> f32[],
         category = reduction, tolerance = accum(2), backward = none, cpu = sum_fast_kernel, generated_tests = false)]
    pub fn sum_fast<T: Real>(x: &[T]) -> Vec<T> {
        crate::sum(x)
    }
    /// Correct.
    pub fn sum_fast_kernel(x: &[f32]) -> Vec<f32> {
        crate::sum(x)
    }

    /// A relu whose reference drops NaN while the op declares `nan = propagate`: a reference
    /// conformance must reject (there is no kernel).
    #[op(name = "test/testing/relu_nan_dropped", version = 1, signature(x: f32[n]) -> f32[n],
         category = selection, tolerance = exact, nan = propagate, backward = none, generated_tests = false)]
    pub fn relu_nan_dropped<T: Real>(x: &[T]) -> Vec<T> {
        x.iter().map(|v| if *v > T::zero() { *v } else { T::zero() }).collect()
    }

    /// `3 x` whose VJP is `2 g`: a backward gradcheck must reject.
    #[op(name = "test/testing/triple_vjp_doubled", version = 1, signature(x: f32[n]) -> f32[n],
         category = elementwise, tolerance = ulp(1), backward = vjp(doubled_vjp), generated_tests = false)]
    pub fn triple<T: Real>(x: &[T]) -> Vec<T> {
        x.iter().map(|v| *v * T::from_f64(3.0)).collect()
    }
    /// Wrong on purpose: `2 g` instead of `3 g`.
    pub fn doubled_vjp<T: Real>(_x: &[T], g: &[T]) -> Vec<T> {
        g.iter().map(|g| *g * T::from_f64(2.0)).collect()
    }

    fn receipt() -> Receipt {
        let h = Registry::with_builtins().lookup("builtin/add").expect("built-in");
        conform(&h, BackendKind::Reference).expect("conforms")
    }

    /// A real rejection report: the CPU kernel of `sum_drops_last`.
    fn report() -> Report {
        let h = Registry::new().register(&sum_drops_last::DECL).expect("registers");
        match conform(&h, BackendKind::Cpu) {
            Err(ConformanceFailure::Rejected(r)) => *r,
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    fn rejected() -> ConformanceFailure {
        ConformanceFailure::Rejected(Box::new(report()))
    }
    fn unavailable(backend: BackendKind) -> ConformanceFailure {
        ConformanceFailure::Unavailable { op: "x".into(), backend, reason: "no device".into() }
    }
    fn unsupported(backend: BackendKind) -> ConformanceFailure {
        ConformanceFailure::Unsupported { op: "x".into(), backend, reason: "no kernel for it".into() }
    }
    fn reference_failed() -> ConformanceFailure {
        ConformanceFailure::Reference { op: "x".into(), case: "case".into(), message: "broken".into() }
    }
    fn no_cases() -> ConformanceFailure {
        ConformanceFailure::NoCases { op: "x".into() }
    }

    const NONE: Required = Required { wgpu: false, cuda: false };
    const WGPU: Required = Required { wgpu: true, cuda: false };
    const CUDA: Required = Required { wgpu: false, cuda: true };

    #[test]
    fn a_generated_conformance_test_demands_success() {
        use BackendKind::{Cpu, Cuda, Reference, Wgpu};
        // Conformed backends and skips pass.
        assert!(verdict("x", NONE, vec![(Wgpu, Err(unavailable(Wgpu))), (Cpu, Err(unsupported(Cpu))), (Reference, Ok(receipt()))]).is_ok());
        // A skip the run requires fails.
        let e = verdict("x", WGPU, vec![(Wgpu, Err(unavailable(Wgpu))), (Reference, Ok(receipt()))]).unwrap_err();
        assert!(e.contains(REQUIRE_GPU_ENV), "{e}");
        assert!(verdict("x", NONE, vec![(Cuda, Err(unavailable(Cuda)))]).is_ok());
        let e = verdict("x", CUDA, vec![(Cuda, Err(unavailable(Cuda)))]).unwrap_err();
        assert!(e.contains(REQUIRE_CUDA_ENV), "{e}");
        // Any rejection fails: of a kernel, of the reference, or no case to judge on.
        assert!(verdict("x", NONE, vec![(Cpu, Err(rejected())), (Reference, Ok(receipt()))]).is_err());
        assert!(verdict("x", NONE, vec![(Wgpu, Err(unsupported(Wgpu))), (Reference, Err(reference_failed()))]).is_err());
        assert!(verdict("x", NONE, vec![(Reference, Err(no_cases()))]).is_err());
    }

    #[test]
    fn asserting_a_kernel_rejection_requires_every_kernel_that_runs_rejected_and_the_reference_conforming() {
        use BackendKind::{Cpu, Cuda, Reference, Wgpu};
        let reports =
            kernels_rejected("x", true, NONE, vec![(Wgpu, Err(unsupported(Wgpu))), (Cpu, Err(rejected())), (Reference, Ok(receipt()))])
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(reports.iter().map(|r| r.backend).collect::<Vec<_>>(), [Cpu]);
        // A kernel that conforms fails the assertion, also next to a rejected one.
        let e = kernels_rejected("x", true, NONE, vec![(Cpu, Ok(receipt())), (Reference, Ok(receipt()))]).unwrap_err();
        assert!(e.contains("cpu kernel conformed"), "{e}");
        assert!(kernels_rejected("x", true, NONE, vec![(Wgpu, Err(rejected())), (Cpu, Ok(receipt())), (Reference, Ok(receipt()))]).is_err());
        // The reference is never excused: the rejection must be the kernel's.
        let e = kernels_rejected("x", true, NONE, vec![(Cpu, Err(rejected())), (Reference, Err(reference_failed()))]).unwrap_err();
        assert!(e.contains("the reference must conform"), "{e}");
        // A kernel failing otherwise than by a mismatch is not the asserted rejection.
        let e = kernels_rejected("x", true, NONE, vec![(Cpu, Err(no_cases())), (Reference, Ok(receipt()))]).unwrap_err();
        assert!(e.contains("expected the kernel's rejection"), "{e}");
        // An op without a kernel has nothing to reject.
        let e = kernels_rejected("x", false, NONE, vec![(Reference, Ok(receipt()))]).unwrap_err();
        assert!(e.contains("assert_reference_rejected"), "{e}");
        // Unavailable GPU backends skip (nothing rejected here), unless the run requires them.
        let gpu_only = || vec![(Cuda, Err(unavailable(Cuda))), (Wgpu, Err(unavailable(Wgpu))), (Reference, Ok(receipt()))];
        assert!(kernels_rejected("x", true, NONE, gpu_only()).unwrap_or_else(|e| panic!("{e}")).is_empty());
        assert!(kernels_rejected("x", true, WGPU, gpu_only()).unwrap_err().contains(REQUIRE_GPU_ENV));
        assert!(kernels_rejected("x", true, CUDA, gpu_only()).unwrap_err().contains(REQUIRE_CUDA_ENV));
    }

    #[test]
    fn asserting_a_reference_rejection_requires_a_verdict_against_the_reference() {
        assert!(matches!(reference_rejected("x", Err(reference_failed())), Ok(ConformanceFailure::Reference { .. })));
        assert!(reference_rejected("x", Ok(receipt())).unwrap_err().contains("the reference conformed"));
        assert!(reference_rejected("x", Err(no_cases())).unwrap_err().contains("judged nothing"));
    }

    #[test]
    fn asserting_a_gradcheck_rejection_requires_a_check_that_ran_and_did_not_certify() {
        let inconsistent = GradcheckError::Inconsistent { op: "x".into(), at: "a".into(), jvp: 1.0, vjp: 2.0, allowed: 0.1 };
        assert_eq!(gradcheck_rejected("x", Err(inconsistent.clone())), Ok(inconsistent));
        let vacuous = GradcheckError::NegativeControlAccepted { op: "x".into(), corruption: "scaled".into() };
        assert_eq!(gradcheck_rejected("x", Err(vacuous.clone())), Ok(vacuous));
        let passed = crate::gradcheck(&crate::mul::DECL).unwrap_or_else(|e| panic!("{e}"));
        assert!(gradcheck_rejected("x", Ok(passed)).unwrap_err().contains("must not pass gradcheck"));
        let e = gradcheck_rejected("x", Err(GradcheckError::NotDifferentiable { op: "x".into() })).unwrap_err();
        assert!(e.contains("did not run to a verdict"), "{e}");
    }

    /// `sum_fast`'s description as if declared in another module: no catalog holds it.
    static MOVED: OpDecl = OpDecl { module: "other_crate::elsewhere::sum_fast", ..sum_fast::DECL };

    #[test]
    fn the_catalog_test_finds_each_declaration_once_and_nothing_else() {
        // Fixtures without generated tests are linked in all the same.
        catalog_test(&sum_fast::DECL);
        catalog_test(&crate::matmul::DECL);
        let e = catch_unwind(|| catalog_test(&MOVED)).expect_err("a description no `#[op]` put in the catalog");
        let text = e.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(text.contains("0 times"), "{text}");
        let (entries, failed) = op_verify::record::entries(&crate::decls());
        assert!(failed.is_empty(), "{failed:?}");
        let add = entries.iter().find(|e| e.id == "builtin/add@1").expect("listed");
        assert_eq!(add.source, OpSource::Builtin);
        assert_eq!(entries.iter().find(|e| e.id == "test/testing/sum_fast@1").map(|e| e.source), Some(OpSource::User));
    }

    /// The helpers on real fixtures: each asserts its rejection and fails on a correct op; the
    /// generated tests fail on the broken ones.
    #[test]
    fn the_helpers_and_the_generated_tests_on_real_fixtures() {
        let reports = assert_conformance_rejected(&sum_drops_last::DECL);
        assert_eq!(reports.iter().map(|r| r.backend).collect::<Vec<_>>(), [BackendKind::Cpu]);
        assert!(catch_unwind(|| assert_conformance_rejected(&sum_fast::DECL)).is_err(), "a conforming kernel is not rejected");
        conformance_test(&sum_fast::DECL);
        assert!(catch_unwind(|| conformance_test(&sum_drops_last::DECL)).is_err(), "the generated test demands success");

        assert!(matches!(assert_reference_rejected(&relu_nan_dropped::DECL), ConformanceFailure::Reference { .. }));
        assert!(catch_unwind(|| assert_reference_rejected(&sum_fast::DECL)).is_err(), "a conforming reference is not rejected");
        assert!(catch_unwind(|| conformance_test(&relu_nan_dropped::DECL)).is_err(), "the generated test demands success");

        assert!(assert_gradcheck_rejected(&triple::DECL).is_rejection());
        assert!(catch_unwind(|| assert_gradcheck_rejected(&crate::mul::DECL)).is_err(), "a correct backward is not rejected");
        gradcheck_test(&crate::mul::DECL);
        assert!(catch_unwind(|| gradcheck_test(&triple::DECL)).is_err(), "the generated test demands success");
        assert!(catch_unwind(|| assert_gradcheck_rejected(&sum_fast::DECL)).is_err(), "`backward = none` runs no check");
    }
}
