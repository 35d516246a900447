//! Helpers shared by the integration tests (each test file includes this with `mod common;`).

use op_runtime::core::decl::OpDecl;
use op_runtime::testing::{assert_conformance_rejected, REQUIRE_CUDA_ENV, REQUIRE_GPU_ENV};
use op_runtime::verify::conformance::Report;
use op_runtime::BackendKind;

/// Whether wgpu can run here; prints why not, and fails the test instead under
/// `OP_REQUIRE_GPU_ADAPTER=1` (CI), so a skip can never hide a broken install.
pub fn wgpu_available() -> bool {
    let why = match op_runtime::registry().backend(BackendKind::Wgpu) {
        None => "the wgpu backend is not compiled in".to_string(),
        Some(b) => match b.availability() {
            Ok(()) => return true,
            Err(e) => e.to_string(),
        },
    };
    if std::env::var(REQUIRE_GPU_ENV).as_deref() == Ok("1") {
        panic!("{REQUIRE_GPU_ENV}=1 but wgpu is unavailable: {why}");
    }
    eprintln!("skipping wgpu test: {why}");
    false
}

/// Asserts that conformance rejects the broken kernel of `decl` on every backend that runs it
/// while its reference conforms (`assert_conformance_rejected`), and returns the wgpu report;
/// `None` where wgpu cannot run here (see [`wgpu_available`]).
#[allow(dead_code)] // some test files that include `common` reject no WGSL kernel
pub fn wgpu_rejection(decl: &'static OpDecl) -> Option<Report> {
    let reports = assert_conformance_rejected(decl);
    if !wgpu_available() {
        return None;
    }
    let report = reports
        .into_iter()
        .find(|r| r.backend == BackendKind::Wgpu)
        .unwrap_or_else(|| panic!("wgpu runs here, but it rejected no kernel of `{}`", decl.rust_name));
    eprintln!("{report}");
    Some(report)
}

/// Whether CUDA can run here; prints why not, and fails the test instead under
/// `OP_REQUIRE_CUDA=1` (the device check), so a skip can never hide a broken install.
#[allow(dead_code)] // only the CUDA tests call it
pub fn cuda_available() -> bool {
    let why = match op_runtime::registry().backend(BackendKind::Cuda) {
        None => "the CUDA backend is not compiled in".to_string(),
        Some(b) => match b.availability() {
            Ok(()) => return true,
            Err(e) => e.to_string(),
        },
    };
    if std::env::var(REQUIRE_CUDA_ENV).as_deref() == Ok("1") {
        panic!("{REQUIRE_CUDA_ENV}=1 but CUDA is unavailable: {why}");
    }
    eprintln!("skipping CUDA test: {why}");
    false
}

/// [`wgpu_rejection`] for CUDA: the CUDA report, `None` where CUDA cannot run here.
#[allow(dead_code)]
pub fn cuda_rejection(decl: &'static OpDecl) -> Option<Report> {
    let reports = assert_conformance_rejected(decl);
    if !cuda_available() {
        return None;
    }
    let report = reports
        .into_iter()
        .find(|r| r.backend == BackendKind::Cuda)
        .unwrap_or_else(|| panic!("CUDA runs here, but it rejected no kernel of `{}`", decl.rust_name));
    eprintln!("{report}");
    Some(report)
}
