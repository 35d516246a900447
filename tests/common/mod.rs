//! Helpers shared by the integration tests (each test file includes this with `mod common;`).

use op_runtime::core::decl::OpDecl;
use op_runtime::testing::{assert_conformance_rejected, REQUIRE_GPU_ENV};
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
