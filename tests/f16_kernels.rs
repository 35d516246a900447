//! f16 WGSL kernels: on an adapter with `shader-f16` they run (and equal the reference); on a
//! device without it, dispatch refuses them with a typed error naming the missing feature,
//! before anything is built or uploaded, and default selection passes over wgpu. (Mesa's
//! lavapipe 22.3 has `shader-f16`, so the refusal is shown on a device created from the same
//! adapter without that feature.) The built-ins' f16 WGSL kernels (the elementwise ops) conform
//! at f16 on such an adapter, or skip naming the feature; a naive f16 tanh is rejected.

mod common;

use op_runtime::backend::ReferenceBackend;
use op_runtime::conformance::{self, ConformanceFailure};
use op_runtime::f16;
use op_runtime::wgpu::WgpuBackend;
use op_runtime::wgpu::WgpuEngine;
use op_runtime::Registry;
use op_runtime::{op, BackendKind, CallOptions, DType, Real, Tensor};
use op_runtime::{BackendError, DispatchError};
use std::sync::Arc;

/// `x + x` in half precision.
#[op(name = "test/f16/double", version = 1, signature(x: f16[n]) -> f16[n],
     category = elementwise, tolerance = ulp(0), backward = none,
     kernel(wgsl = "kernels/double_f16.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = n),
     license = "MIT")]
pub fn double_f16<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn x() -> Tensor {
    Tensor::vector((0..1000).map(|i| f16::from_f32(i as f32 * 0.25 - 7.0)).collect::<Vec<f16>>())
}

#[test]
fn f16_kernels_run_where_the_adapter_has_shader_f16() {
    if !common::wgpu_available() {
        return;
    }
    let engine = WgpuEngine::shared().expect("engine");
    eprintln!("adapter `{}`: shader-f16 {}", engine.profile().adapter, engine.supports_f16());
    if !engine.supports_f16() {
        return refused(op_runtime::registry());
    }
    let h = op_runtime::register(&double_f16::DECL).expect("registers");
    let got = h.call_with(&[&x()], &[], CallOptions::on(BackendKind::Wgpu)).expect("runs").output().expect("out");
    let want = h.call_with(&[&x()], &[], CallOptions::on(BackendKind::Reference)).expect("reference").output().expect("out");
    assert_eq!(got, want);
    conformance::conform(&h, BackendKind::Wgpu).expect("conforms");
}

#[test]
fn f16_kernels_are_refused_by_name_on_a_device_without_shader_f16() {
    if !common::wgpu_available() {
        return;
    }
    let engine = WgpuEngine::minimal().expect("engine");
    assert!(!engine.supports_f16());
    let engine: &'static WgpuEngine = Box::leak(Box::new(engine));
    let registry = Registry::with_backends(vec![Arc::new(WgpuBackend::on(engine)), Arc::new(ReferenceBackend::default())]);
    refused(&registry);
    assert_eq!(engine.pipelines_built(), 0, "nothing was built on the device");
}

/// On a registry whose wgpu device lacks `shader-f16`: the typed refusal, default selection
/// elsewhere, and a conformance skip naming the feature.
fn refused(registry: &Registry) {
    let h = registry.register(&double_f16::DECL).expect("registers");
    let device = registry.backend(BackendKind::Wgpu).and_then(|b| b.profile().ok()).map(|p| p.adapter.clone()).expect("wgpu profile");
    match h.call_with(&[&x()], &[], CallOptions::on(BackendKind::Wgpu)) {
        Err(DispatchError::Unsupported {
            backend: BackendKind::Wgpu,
            reason: BackendError::MissingFeature { feature, device: d, .. },
            ..
        }) => {
            assert_eq!(feature, "shader-f16");
            assert_eq!(d, device);
        }
        other => panic!("expected a typed refusal naming shader-f16, got {other:?}"),
    }
    let out = h.call(&[&x()], &[]).expect("runs on a host backend");
    assert_ne!(out.provenance.backend, BackendKind::Wgpu);
    match conformance::conform(&h, BackendKind::Wgpu) {
        Err(e @ ConformanceFailure::Unsupported { .. }) => assert!(e.to_string().contains("shader-f16"), "{e}"),
        other => panic!("expected a skip, got {other:?}"),
    }
}

/// Deliberately broken: tanh in f16 arithmetic, `(e^2x - 1) / (e^2x + 1)` (NaN once `e^2x`
/// overflows f16).
#[op(name = "test/f16/tanh_naive", version = 1, signature(x: f16[n]) -> f16[n],
     category = elementwise, tolerance = ulp(16), nan = propagate, backward = none, generated_tests = false,
     kernel(wgsl = "kernels/broken/tanh_naive_f16.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = n),
     license = "MIT")]
pub fn tanh_naive<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| v.tanh()).collect()
}

/// The built-ins that declare a WGSL kernel for their `f16` instance.
fn builtins_with_f16_wgsl() -> Vec<op_runtime::OpHandle> {
    let reg = op_runtime::registry();
    reg.ops()
        .into_iter()
        .filter(|o| o.contract().name.starts_with("builtin/"))
        .filter(|o| {
            o.contract().kernels.iter().any(|k| k.path.ends_with(".wgsl") && k.dtypes.iter().any(|v| v.members.contains(&DType::f16)))
        })
        .map(|o| reg.lookup(o.id()).expect("registered"))
        .collect()
}

#[test]
fn builtin_f16_wgsl_kernels_conform_where_the_adapter_has_shader_f16() {
    if !common::wgpu_available() {
        return;
    }
    let ops = builtins_with_f16_wgsl();
    let names: Vec<String> = ops.iter().map(|h| h.id().to_string()).collect();
    for want in ["add", "sub", "mul", "div", "neg", "relu", "exp", "log", "tanh", "abs", "sqrt", "square", "sigmoid", "maximum", "minimum"]
    {
        assert!(names.contains(&format!("builtin/{want}@1")), "builtin/{want} declares no f16 WGSL kernel: {names:?}");
    }
    let engine = WgpuEngine::shared().expect("engine");
    if !engine.supports_f16() {
        eprintln!("skipping the built-ins' f16 WGSL conformance: adapter `{}` lacks `shader-f16`", engine.profile().adapter);
        return;
    }
    let mut failures = Vec::new();
    for h in ops {
        let at = h.at(&[DType::f16]).expect("an f16 instance");
        match conformance::conform(&at, BackendKind::Wgpu) {
            Ok(r) => eprintln!("{:<16} f16 on wgpu: {} cases conform ({})", h.id(), r.cases, r.tolerance),
            Err(e) => failures.push(format!("{} at f16: {e}", h.id())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_naive_f16_tanh_kernel_is_rejected() {
    if !common::wgpu_available() || !WgpuEngine::shared().expect("engine").supports_f16() {
        return;
    }
    let h = op_runtime::register(&tanh_naive::DECL).expect("registers");
    match conformance::conform(&h, BackendKind::Wgpu) {
        Err(ConformanceFailure::Rejected(report)) => eprintln!("rejected as expected:\n{report}"),
        other => panic!("a naive f16 tanh was not rejected: {other:?}"),
    }
}
