//! Test support, on the top floor: the tests `#[op]` generates for every declaration
//! (conformance of every kernel, gradcheck of the backward) and the policy they read from the
//! environment (which GPU backends a run requires). Library code paths below never read the
//! environment for test policy.

use crate::core::decl::OpDecl;
use crate::core::kind::BackendKind;
use crate::core::op::RegisteredOp;
use crate::core::receipt::Receipt;
use crate::core::registry::Registry;
use crate::train::tape::{check_differentiable, TapeError};
use crate::verify::conformance::{conform_all, is_kernel, ConformanceFailure};
use crate::verify::gradcheck::GradcheckError;

/// Env variable that turns a missing wgpu adapter into a test failure (set by CI).
pub const REQUIRE_GPU_ENV: &str = "OP_REQUIRE_GPU_ADAPTER";
/// Env variable that turns an unavailable CUDA backend into a failure for ops with a CUDA
/// kernel (set on a machine with an NVIDIA GPU, so a skip cannot hide a broken install).
pub const REQUIRE_CUDA_ENV: &str = "OP_REQUIRE_CUDA";

/// Which GPU backends must be available (a skip becomes a failure).
#[derive(Clone, Copy, Debug, Default)]
struct Required {
    wgpu: bool,
    cuda: bool,
}
/// Namespace of deliberately broken ops: their generated test passes only if conformance
/// rejects every kernel they declare (GPU or `cpu = path`) that runs here, while their
/// reference still conforms; a broken op without any kernel is a broken reference, which must
/// be rejected (a negative control: a check that cannot fail certifies nothing).
pub const BROKEN_NAMESPACE: &str = "test/broken/";

/// The test `#[op]` generates for every declaration: conformance of each kernel on each
/// available backend. Fails (panics, as a test does) with the reports when a kernel does not
/// conform; skips unavailable GPU backends with a printed reason, except that with
/// `OP_REQUIRE_GPU_ADAPTER=1` a missing wgpu adapter fails. Ops under `test/broken/` are
/// negative controls: each of their kernels (GPU or `cpu = path`) that runs here must be
/// rejected, and their reference must conform; one without any kernel must have its
/// reference rejected.
pub fn conformance_test(decl: &'static OpDecl) {
    // A private registry: the declaration's own conformance must not depend on what else the
    // process registered (a test may register other content under the same name on purpose).
    let handle = match Registry::new().register(decl) {
        Ok(h) => h,
        Err(e) => panic!("conformance of `{}`: the op does not register: {e}", decl.rust_name),
    };
    let id = handle.id();
    let required = Required {
        wgpu: std::env::var(REQUIRE_GPU_ENV).as_deref() == Ok("1"),
        cuda: std::env::var(REQUIRE_CUDA_ENV).as_deref() == Ok("1"),
    };
    let broken = handle.op().contract.name.starts_with(BROKEN_NAMESPACE);
    if let Err(failures) = verdict(&id, broken, required, conform_all(&handle)) {
        panic!("{failures}");
    }
}

/// The generated test's decision over every backend's result: `Err` with the failures joined.
/// Prints conformed backends, skips (with the reason) and expected rejections.
fn verdict(
    id: &str,
    broken: bool,
    required: Required,
    results: Vec<(BackendKind, Result<Receipt, ConformanceFailure>)>,
) -> Result<(), String> {
    // A broken fixture without any kernel (GPU or `cpu = path`) is a broken reference:
    // conformance must reject it (a reference that breaks its own contract), and nothing else
    // is excused. With a kernel, every kernel that runs here must be rejected (any non-skip
    // error on a kernel backend is the expected rejection) and the reference must conform.
    let kernel_declared = results.iter().any(|(k, r)| is_kernel(*k) && !matches!(r, Err(ConformanceFailure::Unsupported { .. })));
    if broken && !kernel_declared {
        let mut rejected = false;
        for (kind, result) in &results {
            match result {
                Err(e) if e.is_skip() => println!("conformance: skipping {kind} for `{id}`: {e}"),
                Err(e) => {
                    println!("conformance: `{id}` on {kind} rejected, as declared:\n{e}");
                    rejected = true;
                }
                Ok(_) => {}
            }
        }
        return if rejected {
            Ok(())
        } else {
            Err(format!("op `{id}` is declared broken (`{BROKEN_NAMESPACE}`) but conformance rejected nothing"))
        };
    }
    let mut failures: Vec<String> = Vec::new();
    for (kind, result) in results {
        match result {
            Ok(r) if broken && is_kernel(kind) => failures
                .push(format!("op `{id}` is declared broken (`{BROKEN_NAMESPACE}`) but its {kind} kernel conformed ({} cases)", r.cases)),
            Ok(r) => println!("conformance: `{id}` on {kind}: {} cases conform ({})", r.cases, r.device),
            Err(e @ ConformanceFailure::Unavailable { .. }) if kind == BackendKind::Wgpu && required.wgpu => {
                failures.push(format!("{REQUIRE_GPU_ENV}=1 but {e}"))
            }
            Err(e @ ConformanceFailure::Unavailable { .. }) if kind == BackendKind::Cuda && required.cuda => {
                failures.push(format!("{REQUIRE_CUDA_ENV}=1 but {e}"))
            }
            Err(e) if e.is_skip() => println!("conformance: skipping {kind} for `{id}`: {e}"),
            Err(e) if broken && is_kernel(kind) => println!("conformance: `{id}` on {kind} rejected, as declared:\n{e}"),
            Err(e) => failures.push(e.to_string()),
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n\n"))
    }
}

/// Ops named under this prefix are fixtures with a deliberately wrong backward (tests of
/// gradcheck itself): their generated test requires gradcheck to reject them.
pub const BAD_FIXTURE_PREFIX: &str = "test/bad/";

/// The gradcheck test `#[op]` generates for every declaration. Differentiable ops must pass gradcheck
/// (negative control included); `backward = none` ops pass after checking that asking for
/// gradients is the typed error naming them; `test/bad/...` fixtures must be rejected.
pub fn gradcheck_test(decl: &'static OpDecl) {
    let op = match RegisteredOp::load(decl) {
        Ok(op) => op,
        Err(e) => panic!("gradcheck: {e}"),
    };
    if !op.contract.backward.is_differentiable() {
        match crate::builtins::gradcheck(decl) {
            Err(GradcheckError::NotDifferentiable { op: name }) if name == op.id => {}
            other => panic!("gradcheck of `{}` (backward = none) must be the typed NotDifferentiable error, got {other:?}", op.id),
        }
        match check_differentiable(decl) {
            Err(TapeError::NotDifferentiable { op: name }) if name == op.id => {}
            other => panic!("asking the tape for gradients through `{}` must be the typed NotDifferentiable error, got {other:?}", op.id),
        }
        return;
    }
    let result = crate::builtins::gradcheck(decl);
    if op.contract.name.starts_with(BAD_FIXTURE_PREFIX) {
        match result {
            Err(e) if e.is_check_failure() => println!("{} not certified, as it must not be: {e}", op.id),
            Ok(r) => panic!("`{}` has a deliberately wrong backward but passed gradcheck:\n{r}", op.id),
            Err(e) => panic!("`{}` has a deliberately wrong backward; gradcheck must reject it, but failed otherwise: {e}", op.id),
        }
        return;
    }
    match result {
        Ok(r) => println!("{r}"),
        Err(e) => panic!("{e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::conformance::conform;

    fn handle(name: &str) -> crate::core::registry::OpHandle {
        Registry::with_builtins().lookup(name).expect("built-in")
    }

    #[test]
    fn generated_test_verdicts() {
        let h = handle("builtin/add");
        let receipt = conform(&h, BackendKind::Reference).expect("conforms");
        let unavailable = || ConformanceFailure::Unavailable { op: "x".into(), backend: BackendKind::Wgpu, reason: "no adapter".into() };
        let rejected = || ConformanceFailure::NoCases { op: "x".into() };
        // Skips pass, except a missing wgpu adapter when it is required.
        assert!(verdict(
            "x",
            false,
            Required::default(),
            vec![(BackendKind::Wgpu, Err(unavailable())), (BackendKind::Reference, Ok(receipt.clone()))]
        )
        .is_ok());
        let e = verdict("x", false, Required { wgpu: true, cuda: false }, vec![(BackendKind::Wgpu, Err(unavailable()))]).unwrap_err();
        assert!(e.contains(REQUIRE_GPU_ENV), "{e}");
        // A failure fails the test; for a declared-broken op a GPU rejection passes and a GPU
        // pass fails.
        assert!(verdict("x", false, Required::default(), vec![(BackendKind::Wgpu, Err(rejected()))]).is_err());
        assert!(verdict("x", true, Required::default(), vec![(BackendKind::Wgpu, Err(rejected()))]).is_ok());
        assert!(verdict("x", true, Required::default(), vec![(BackendKind::Wgpu, Ok(receipt.clone()))]).is_err());
        let gpu_unsupported =
            || ConformanceFailure::Unsupported { op: "x".into(), backend: BackendKind::Wgpu, reason: "no WGSL kernel".into() };
        assert!(
            verdict("x", true, Required::default(), vec![(BackendKind::Wgpu, Err(rejected())), (BackendKind::Reference, Err(rejected()))])
                .is_err(),
            "with GPU kernels, the reference path is never excused"
        );
        // Without GPU kernels, a broken fixture's reference must be rejected, and is.
        assert!(verdict(
            "x",
            true,
            Required::default(),
            vec![(BackendKind::Wgpu, Err(gpu_unsupported())), (BackendKind::Reference, Err(rejected()))]
        )
        .is_ok());
        assert!(verdict(
            "x",
            true,
            Required::default(),
            vec![(BackendKind::Wgpu, Err(gpu_unsupported())), (BackendKind::Reference, Ok(receipt.clone()))]
        )
        .is_err());
        // A broken op with only a `cpu = path` kernel: the CPU rejection is the expected one,
        // and the reference must still conform.
        let cpu_rejected = || (BackendKind::Cpu, Err(ConformanceFailure::NoCases { op: "x".into() }));
        let cpu_conformed = (BackendKind::Cpu, Ok(receipt.clone()));
        assert!(verdict(
            "x",
            true,
            Required::default(),
            vec![(BackendKind::Wgpu, Err(gpu_unsupported())), cpu_rejected(), (BackendKind::Reference, Ok(receipt.clone()))]
        )
        .is_ok());
        let e = verdict(
            "x",
            true,
            Required::default(),
            vec![(BackendKind::Wgpu, Err(gpu_unsupported())), cpu_conformed.clone(), (BackendKind::Reference, Ok(receipt.clone()))],
        )
        .unwrap_err();
        assert!(e.contains("cpu kernel conformed") || e.contains("kernel conformed"), "{e}");
        assert!(
            verdict(
                "x",
                true,
                Required::default(),
                vec![(BackendKind::Wgpu, Err(gpu_unsupported())), cpu_rejected(), (BackendKind::Reference, Err(rejected()))]
            )
            .is_err(),
            "with a CPU kernel, the reference path is never excused"
        );
        // A broken GPU kernel with a correct CPU kernel is not a negative control.
        assert!(verdict(
            "x",
            true,
            Required::default(),
            vec![(BackendKind::Wgpu, Err(rejected())), cpu_conformed, (BackendKind::Reference, Ok(receipt.clone()))]
        )
        .is_err());
        // With CUDA required, an unavailable CUDA backend fails; without, it is a printed skip.
        let cuda_unavailable =
            || ConformanceFailure::Unavailable { op: "x".into(), backend: BackendKind::Cuda, reason: "no libcuda".into() };
        assert!(verdict("x", false, Required::default(), vec![(BackendKind::Cuda, Err(cuda_unavailable()))]).is_ok());
        let e = verdict("x", false, Required { wgpu: false, cuda: true }, vec![(BackendKind::Cuda, Err(cuda_unavailable()))]).unwrap_err();
        assert!(e.contains(REQUIRE_CUDA_ENV), "{e}");
    }
}
