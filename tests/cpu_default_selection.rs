//! Default selection between the native CPU backend and a GPU adapter that is a software
//! rasteriser on the CPU (Mesa's lavapipe/llvmpipe, as in CI): a built-in with a `cpu` kernel
//! runs on `cpu` by default, and an explicit `CallOptions::on(BackendKind::Wgpu)` still reaches
//! wgpu. On a machine with a hardware adapter, wgpu stays first. Without any adapter the test
//! skips with the reason, unless `OP_REQUIRE_GPU_ADAPTER=1` (CI), where that is a failure.

use op_runtime::testing::REQUIRE_GPU_ENV;
use op_runtime::{BackendKind, CallOptions, Registry, Tensor};

#[test]
fn a_software_adapter_ranks_below_the_native_cpu_and_an_explicit_choice_still_reaches_it() {
    let r = Registry::with_builtins();
    let Some(wgpu) = r.backend(BackendKind::Wgpu) else {
        assert!(std::env::var(REQUIRE_GPU_ENV).as_deref() != Ok("1"), "{REQUIRE_GPU_ENV}=1 but wgpu is not compiled in");
        println!("skipping: the wgpu backend is not compiled in");
        return;
    };
    if let Err(e) = wgpu.availability() {
        assert!(std::env::var(REQUIRE_GPU_ENV).as_deref() != Ok("1"), "{REQUIRE_GPU_ENV}=1 but wgpu is unavailable: {e}");
        println!("skipping: no wgpu adapter: {e}");
        return;
    }
    let software = wgpu.is_software();
    let device = wgpu.profile().map(|p| p.to_string()).unwrap_or_default();
    let order: Vec<BackendKind> = r.default_order().iter().map(|b| b.kind()).collect();
    let (cpu_at, wgpu_at) = (order.iter().position(|k| *k == BackendKind::Cpu), order.iter().position(|k| *k == BackendKind::Wgpu));
    assert_eq!(
        cpu_at < wgpu_at,
        software,
        "default order {order:?} with a {} adapter ({device})",
        if software { "software" } else { "hardware" }
    );

    let add = r.lookup("builtin/add").expect("built-in");
    assert!(add.op().contract().cpu_serves(), "add declares a cpu kernel serving f32");
    let x = Tensor::vector(vec![1.0f32, -2.0, 3.5]);
    let expected = if software { BackendKind::Cpu } else { BackendKind::Wgpu };
    let by_default = add.call(&[&x, &x], &[]).expect("a default call");
    assert_eq!(by_default.provenance.backend, expected, "default call with {device}");
    assert_eq!(by_default.outputs[0].as_slice::<f32>(), Some(&[2.0f32, -4.0, 7.0][..]));

    // An explicit choice reaches the adapter whatever its rank.
    let explicit = add.call_with(&[&x, &x], &[], CallOptions::on(BackendKind::Wgpu)).expect("an explicit wgpu call");
    assert_eq!(explicit.provenance.backend, BackendKind::Wgpu);
    assert_eq!(explicit.outputs[0].as_slice::<f32>(), Some(&[2.0f32, -4.0, 7.0][..]));
    println!("{device}: default {:?}, explicit wgpu reached", by_default.provenance.backend);
}
