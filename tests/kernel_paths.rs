//! Kernel paths are resolved once: a kernel found relative to the declaring file's directory
//! (cargo hands the compiler that file as a relative path) is the file the build embeds, its
//! headers too, and it runs.

use op_runtime::{op, BackendKind, Real, Registry, Tensor};

/// Doubles, with a WGSL kernel that lives beside this test (not under the crate's root).
#[op(
    name = "test/paths/double", version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise, tolerance = ulp(0), backward = none,
    kernel(wgsl = "kernel_paths/double.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = n),
    generated_tests = false,
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

#[test]
fn the_file_checked_is_the_file_embedded() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernel_paths");
    let k = &double::DECL.kernels[0];
    assert_eq!(k.path, "kernel_paths/double.wgsl");
    assert_eq!(k.source, std::fs::read(dir.join("double.wgsl")).unwrap().as_slice());
    assert_eq!(k.headers.len(), 1);
    assert_eq!(k.headers[0].0, "kernel_paths/lib/twice.wgsl");
    assert_eq!(k.headers[0].1, std::fs::read(dir.join("lib/twice.wgsl")).unwrap().as_slice());
    // It registers (the identity re-computed from the embedded bytes matches) and runs.
    let r = Registry::new();
    let h = r.register(&double::DECL).unwrap();
    match op_runtime::conformance::conform(&h, BackendKind::Wgpu) {
        Ok(receipt) => assert!(receipt.cases > 0),
        Err(op_runtime::conformance::ConformanceFailure::Unavailable { .. }) if std::env::var_os("OP_REQUIRE_GPU_ADAPTER").is_none() => {}
        Err(e) => panic!("{e}"),
    }
    let out = h.call(&[&Tensor::vector(vec![1.5f32])], &[]).unwrap();
    assert_eq!(out.outputs[0].as_slice::<f32>(), Some(&[3.0f32][..]));
}
