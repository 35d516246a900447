//! Helpers shared by the integration tests (each test file includes this with `mod common;`).

use op_runtime::testing::REQUIRE_GPU_ENV;
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
