//! Helpers shared by the integration tests (a test binary includes this with `mod common;`; the
//! modules of `tests/example_median` reach its one copy as `crate::common`).

use op_runtime::conformance::Report;
use op_runtime::testing::{assert_conformance_rejected, REQUIRE_CUDA_ENV, REQUIRE_GPU_ENV};
use op_runtime::BackendKind;
use op_runtime::OpDecl;

/// Whether the GPU backend `kind` can run here; prints why not, and fails the test instead
/// where the run requires it (`OP_REQUIRE_GPU_ADAPTER=1` for wgpu, set by CI;
/// `OP_REQUIRE_CUDA=1` for CUDA, set by the device check), so a skip never hides a broken install.
fn available(kind: BackendKind) -> bool {
    let why = match op_runtime::registry().backend(kind) {
        None => format!("the {kind} backend is not compiled in"),
        Some(b) => match b.availability() {
            Ok(()) => return true,
            Err(e) => e.to_string(),
        },
    };
    let env = if kind == BackendKind::Cuda { REQUIRE_CUDA_ENV } else { REQUIRE_GPU_ENV };
    if std::env::var(env).as_deref() == Ok("1") {
        panic!("{env}=1 but {kind} is unavailable: {why}");
    }
    eprintln!("skipping {kind} test: {why}");
    false
}

/// Whether wgpu can run here (see [`available`]).
#[allow(dead_code)] // not every test file that includes `common` runs wgpu
pub fn wgpu_available() -> bool {
    available(BackendKind::Wgpu)
}

/// Whether CUDA can run here (see [`available`]).
#[allow(dead_code)] // only the CUDA tests call it
pub fn cuda_available() -> bool {
    available(BackendKind::Cuda)
}

/// Asserts that conformance rejects the broken kernel of `decl` on every backend that runs it
/// while its reference conforms (`assert_conformance_rejected`), and returns `kind`'s report;
/// `None` where `kind` cannot run here (see [`available`]).
fn rejection(decl: &'static OpDecl, kind: BackendKind) -> Option<Report> {
    let reports = assert_conformance_rejected(decl);
    if !available(kind) {
        return None;
    }
    let report = reports
        .into_iter()
        .find(|r| r.backend == kind)
        .unwrap_or_else(|| panic!("{kind} runs here, but it rejected no kernel of `{}`", decl.rust_name));
    eprintln!("{report}");
    Some(report)
}

/// [`rejection`] on wgpu.
#[allow(dead_code)] // some test files that include `common` reject no WGSL kernel
pub fn wgpu_rejection(decl: &'static OpDecl) -> Option<Report> {
    rejection(decl, BackendKind::Wgpu)
}

/// [`rejection`] on CUDA.
#[allow(dead_code)]
pub fn cuda_rejection(decl: &'static OpDecl) -> Option<Report> {
    rejection(decl, BackendKind::Cuda)
}

/// An engine of the calling test binary's own (its transfer counters see only that binary's
/// transfers) and a registry holding the built-ins with wgpu on that engine and both host
/// backends; `None` where wgpu cannot run here (see [`available`]).
#[allow(dead_code)] // only the device-tensor tests call it
pub fn private_wgpu() -> Option<(&'static op_runtime::wgpu::WgpuEngine, op_runtime::Registry)> {
    use op_runtime::backend::{CpuBackend, ReferenceBackend};
    use op_runtime::wgpu::{WgpuBackend, WgpuEngine};
    if !wgpu_available() {
        return None;
    }
    let engine: &'static WgpuEngine = Box::leak(Box::new(WgpuEngine::new().expect("engine")));
    let registry = op_runtime::Registry::with_backends(vec![
        std::sync::Arc::new(WgpuBackend::on(engine)),
        std::sync::Arc::new(CpuBackend::default()),
        std::sync::Arc::new(ReferenceBackend::default()),
    ]);
    op_runtime::builtins::register_all(&registry);
    Some((engine, registry))
}

/// The pairwise f32 sum (halves, recursively): an order `accum` admits, for test kernels.
#[allow(dead_code)] // not every test file that includes `common` sums
pub fn pairwise(x: &[f32]) -> f32 {
    match x.len() {
        0 => 0.0,
        1 => x[0],
        len => pairwise(&x[..len / 2]) + pairwise(&x[len / 2..]),
    }
}
