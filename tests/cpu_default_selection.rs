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

mod emulated {
    //! A GPU backend whose device is (or is not) a software rasteriser, to observe where default
    //! selection ranks it without a real adapter: its kernels never build, so reaching it is
    //! visible as its compile error.
    use op_runtime::backend::{Backend, BackendError, Prepared};
    use op_runtime::device::DeviceProfile;
    use op_runtime::{BackendKind, RegisteredOp};
    use std::sync::Arc;

    pub struct Gpu {
        pub software: bool,
    }

    impl Backend for Gpu {
        fn kind(&self) -> BackendKind {
            BackendKind::Wgpu
        }
        fn availability(&self) -> Result<(), BackendError> {
            Ok(())
        }
        fn is_software(&self) -> bool {
            self.software
        }
        fn profile(&self) -> Result<Arc<DeviceProfile>, BackendError> {
            Ok(Arc::new(DeviceProfile::host(BackendKind::Wgpu)))
        }
        fn supports(&self, _op: &RegisteredOp) -> Result<(), BackendError> {
            Ok(())
        }
        fn prepare(&self, _op: &Arc<RegisteredOp>) -> Result<Arc<dyn Prepared>, BackendError> {
            Err(BackendError::Compile("the emulated gpu was reached".into()))
        }
    }
}

/// `2 x`, with no `cpu` kernel.
#[op_runtime::op(name = "test/select/twice", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(0), backward = none, license = "MIT")]
pub fn twice<T: op_runtime::Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

/// For an op with no `cpu` kernel, a software adapter ranks below the reference (both run on
/// the CPU; the emulation only adds overhead), while an op with a `cpu` kernel runs it; a
/// hardware adapter stays first for both; an explicit choice reaches the software adapter.
#[test]
fn a_software_adapter_ranks_below_the_reference_for_an_op_without_a_cpu_kernel() {
    use op_runtime::backend::{CpuBackend, ReferenceBackend};
    use op_runtime::DispatchError;
    use std::sync::Arc;
    let x = Tensor::vector(vec![1.0f32, -2.5]);
    for software in [true, false] {
        let r = Registry::with_backends(vec![
            Arc::new(emulated::Gpu { software }),
            Arc::new(CpuBackend::default()),
            Arc::new(ReferenceBackend::default()),
        ]);
        op_runtime::builtins::register_all(&r);
        let plain = r.register(&twice::DECL).expect("registers");
        let add = r.lookup("builtin/add").expect("built-in");
        let order = |h: &op_runtime::OpHandle| r.default_order_for(&h.op()).iter().map(|b| b.kind()).collect::<Vec<_>>();
        let reached = |e: DispatchError| matches!(e, DispatchError::Compilation(c) if c.backend == BackendKind::Wgpu);
        if software {
            assert_eq!(order(&plain), [BackendKind::Cpu, BackendKind::Reference, BackendKind::Wgpu]);
            assert_eq!(order(&add), [BackendKind::Cpu, BackendKind::Wgpu, BackendKind::Reference]);
            let out = plain.call(&[&x], &[]).expect("runs on the reference");
            assert_eq!(out.provenance.backend, BackendKind::Reference);
            assert_eq!(out.outputs[0].as_slice::<f32>(), Some(&[2.0f32, -5.0][..]));
            assert_eq!(add.call(&[&x, &x], &[]).expect("runs").provenance.backend, BackendKind::Cpu);
            let explicit = plain.call_with(&[&x], &[], CallOptions::on(BackendKind::Wgpu)).expect_err("its kernels never build");
            assert!(reached(explicit), "an explicit choice reaches the software adapter");
        } else {
            assert_eq!(order(&plain), [BackendKind::Wgpu, BackendKind::Cpu, BackendKind::Reference]);
            assert_eq!(order(&add), [BackendKind::Wgpu, BackendKind::Cpu, BackendKind::Reference]);
            assert!(reached(plain.call(&[&x], &[]).expect_err("a hardware adapter is tried first")));
        }
    }
}
