//! Dispatch: validation errors naming op/input/constraint, backend selection order, switches
//! taking effect through old handles, cache invalidation only on change, typed compilation
//! and exhaustion errors, built-in and user provenance of identical form, and no panic on
//! random input.

use op_contract::sample::Rng;
use op_runtime::backend::{Backend, BackendError, ExecRequest, Prepared};
use op_runtime::backend::{CpuBackend, ReferenceBackend};
use op_runtime::device::DeviceProfile;
use op_runtime::BackendKind;
use op_runtime::RegisteredOp;
use op_runtime::{op, CallOptions, DispatchError, Real, Registry, Scalar, Tensor};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::median;

/// A user op with a fast CPU kernel.
#[op(name = "test/dispatch/double", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(0), backward = none, cpu = double_fast)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

/// The fast kernel (marks its output so tests can see which backend ran).
pub fn double_fast(x: &[f32]) -> Vec<f32> {
    x.iter().map(|v| v * 2.0).collect()
}

/// A user op with no `cpu` kernel (the reference, or a GPU kernel, must run it).
#[op(name = "test/dispatch/halve", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(0), backward = none)]
pub fn halve<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * T::from_f64(0.5)).collect()
}

/// `x / 10`, with DELIBERATELY BROKEN kernels: a `cpu` kernel and the WGSL fixture
/// `kernels/broken/div_by_ten_as_mul.wgsl` both compute `x * 0.1`, which rounds twice (within
/// 1 ulp, but `ulp(0)` allows none), so conformance rejects each of them.
#[op(name = "test/dispatch/div_by_ten", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(0), nan = propagate, backward = none, generated_tests = false,
     cpu = div_by_ten_as_mul,
     kernel(wgsl = "kernels/broken/div_by_ten_as_mul.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = n))]
pub fn div_by_ten<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v / T::from_f64(10.0)).collect()
}

/// The broken `cpu` kernel of `div_by_ten`.
pub fn div_by_ten_as_mul(x: &[f32]) -> Vec<f32> {
    x.iter().map(|v| v * 0.1).collect()
}

fn v(xs: &[f32]) -> Tensor {
    Tensor::vector(xs.to_vec())
}

#[test]
fn constraint_violations_name_op_parameter_and_the_constraint_as_written() {
    let r = Registry::new();
    let h = r.register(&median::windowed_median::DECL).unwrap();
    let x = v(&[1.0; 10]);
    let e = h.call_with(&[&x], &[Scalar::U32(4)], CallOptions::on(BackendKind::Reference)).unwrap_err();
    assert_eq!(e.to_string(), "op `user/example/windowed_median@1`: constraint `w % 2 == 1` is violated (w = 4)");
    let e = h.call_with(&[&x], &[Scalar::U32(11)], CallOptions::on(BackendKind::Reference)).unwrap_err();
    assert_eq!(e.to_string(), "op `user/example/windowed_median@1`: constraint `w <= n` is violated (n = 10, w = 11)");
    let e = h.call_with(&[&x], &[Scalar::U32(33)], CallOptions::on(BackendKind::Reference)).unwrap_err();
    assert!(e.to_string().contains("constraint `1 <= w <= 31` is violated (w = 33)"), "{e}");
    let e = h.call_with(&[&Tensor::vector(vec![1u32; 4])], &[Scalar::U32(3)], CallOptions::default()).unwrap_err();
    assert_eq!(e.to_string(), "op `user/example/windowed_median@1`: input `x` is `u32`, which is not a member of `T` (f16 | bf16 | f32 | f64); convert it explicitly (`Tensor::to_dtype`)");
    let e = h.call_with(&[&x], &[], CallOptions::default()).unwrap_err();
    assert!(matches!(e, DispatchError::ParamCount { .. }), "{e}");
}

#[test]
fn shapes_bind_symbols_across_inputs_and_outputs_follow_the_signature() {
    let r = Registry::with_builtins();
    let mm = r.lookup("builtin/matmul").unwrap();
    let a = Tensor::from_vec([2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let b = Tensor::from_vec([3, 1], vec![1.0f32, 0.0, -1.0]).unwrap();
    let out = mm.call_with(&[&a, &b], &[], CallOptions::on(BackendKind::Reference)).unwrap();
    assert_eq!(out.outputs[0].shape(), &[2, 1]);
    assert_eq!(out.outputs[0].as_slice::<f32>().unwrap(), &[-2.0, -2.0]);
    let bad = Tensor::from_vec([2, 1], vec![1.0f32, 0.0]).unwrap();
    let e = mm.call_with(&[&a, &bad], &[], CallOptions::on(BackendKind::Reference)).unwrap_err();
    assert_eq!(e.to_string(), "op `builtin/matmul@1`: input `b` axis 0 is `k` = 3 (bound by input `a` axis 1), got 2");
    let e = mm.call_with(&[&v(&[1.0])], &[], CallOptions::default()).unwrap_err();
    assert!(matches!(e, DispatchError::InputCount { .. }), "{e}");
    let e = mm.call_with(&[&v(&[1.0]), &b], &[], CallOptions::default()).unwrap_err();
    assert!(e.to_string().contains("input `a` must have rank 2 ([m, k])"), "{e}");
}

#[test]
fn selection_order_per_call_then_per_op_then_global_then_priority() {
    let r = Registry::with_backends(vec![Arc::new(CpuBackend::default()), Arc::new(ReferenceBackend::default())]);
    let h = r.register(&double::DECL).unwrap();
    let x = v(&[1.0, 2.0]);
    let backend = |o: CallOptions| h.call_with(&[&x], &[], o).unwrap().provenance.backend;
    // Priority: cpu before reference.
    assert_eq!(backend(CallOptions::default()), BackendKind::Cpu);
    // Global default beats priority.
    r.set_default_backend(Some(BackendKind::Reference));
    assert_eq!(backend(CallOptions::default()), BackendKind::Reference);
    // Per-op beats global.
    r.set_op_backend(&h, Some(BackendKind::Cpu));
    assert_eq!(backend(CallOptions::default()), BackendKind::Cpu);
    // Per-call beats per-op.
    assert_eq!(backend(CallOptions::on(BackendKind::Reference)), BackendKind::Reference);
    // A backend the op cannot use is an error when chosen, never a silent fallback.
    let halve = r.register(&halve::DECL).unwrap();
    let e = halve.call_with(&[&x], &[], CallOptions::on(BackendKind::Cpu)).unwrap_err();
    assert_eq!(e.to_string(), "op `test/dispatch/halve@1` cannot run on cpu: the op declares no `cpu` kernel");
    let e = halve.call_with(&[&x], &[], CallOptions::on(BackendKind::Wgpu)).unwrap_err();
    assert!(matches!(e, DispatchError::Unavailable { backend: BackendKind::Wgpu, .. }), "{e}");
}

#[test]
fn a_switch_takes_effect_next_call_and_caches_are_invalidated_only_on_change() {
    let r = Registry::with_backends(vec![Arc::new(CpuBackend::default()), Arc::new(ReferenceBackend::default())]);
    let h = r.register(&double::DECL).unwrap();
    let handle_before = r.lookup("test/dispatch/double").unwrap();
    let x = v(&[1.0]);
    let prepares = || r.stats().prepares.load(Ordering::Relaxed);
    let invalidations = || r.stats().invalidations.load(Ordering::Relaxed);
    handle_before.call(&[&x], &[]).unwrap();
    handle_before.call(&[&x], &[]).unwrap();
    assert_eq!(prepares(), 1, "the second call reuses the prepared kernel");
    r.set_op_backend(&h, Some(BackendKind::Cpu)); // effective setting: none -> cpu
    assert_eq!(invalidations(), 1);
    r.set_op_backend(&h, Some(BackendKind::Cpu)); // unchanged: no invalidation
    r.set_default_backend(Some(BackendKind::Reference)); // per-op setting wins: unchanged
    assert_eq!(invalidations(), 1, "setting the same effective backend again invalidates nothing");
    handle_before.call(&[&x], &[]).unwrap();
    assert_eq!(prepares(), 2, "the cache was dropped on the change, so it rebuilt once");
    r.set_op_backend(&h, None); // effective: cpu -> reference (the global default)
    assert_eq!(invalidations(), 2);
    // The handle obtained before the switch follows it on its next call.
    assert_eq!(handle_before.call(&[&x], &[]).unwrap().provenance.backend, BackendKind::Reference);
}

/// A backend whose kernels never build, to observe `KernelCompilationError`.
struct Broken(AtomicUsize);

impl Backend for Broken {
    fn kind(&self) -> BackendKind {
        BackendKind::Wgpu
    }
    fn availability(&self) -> Result<(), BackendError> {
        Ok(())
    }
    fn profile(&self) -> Result<Arc<DeviceProfile>, BackendError> {
        Ok(Arc::new(DeviceProfile::host(BackendKind::Cpu)))
    }
    fn supports(&self, _op: &RegisteredOp) -> Result<(), BackendError> {
        Ok(())
    }
    fn prepare(&self, _op: &Arc<RegisteredOp>) -> Result<Arc<dyn Prepared>, BackendError> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Err(BackendError::Compile("shader failed validation: unknown identifier `x2`".to_string().into()))
    }
}

#[allow(dead_code)]
fn _unused(_: &ExecRequest<'_>) {}

#[test]
fn a_failed_build_keeps_its_cause_lists_remaining_backends_and_never_falls_back() {
    let broken = Arc::new(Broken(AtomicUsize::new(0)));
    let r = Registry::with_backends(vec![broken.clone(), Arc::new(CpuBackend::default()), Arc::new(ReferenceBackend::default())]);
    let h = r.register(&double::DECL).unwrap();
    let e = h.call(&[&v(&[1.0])], &[]).unwrap_err();
    let DispatchError::Compilation(c) = &e else { panic!("expected a compilation error, got {e}") };
    assert_eq!(c.backend, BackendKind::Wgpu);
    assert!(c.cause.to_string().contains("unknown identifier `x2`"));
    assert_eq!(c.remaining, vec![BackendKind::Cpu, BackendKind::Reference]);
    assert_eq!(
        e.to_string(),
        "op `test/dispatch/double@1`: the wgpu kernel failed to build: shader failed validation: unknown identifier `x2`; remaining backends for this op: cpu, reference"
    );
    // Choosing a remaining backend explicitly works.
    assert!(h.call_with(&[&v(&[1.0])], &[], CallOptions::on(BackendKind::Cpu)).is_ok());
}

#[test]
fn nothing_left_to_run_lists_what_was_tried_and_why() {
    let r = Registry::with_backends(vec![Arc::new(CpuBackend::default())]);
    let h = r.register(&halve::DECL).unwrap();
    let e = h.call(&[&v(&[1.0, 2.0, 3.0])], &[]).unwrap_err();
    assert!(matches!(e, DispatchError::Exhausted(_)), "{e}");
    assert_eq!(e.to_string(), "op `test/dispatch/halve@1`: no backend can run it; tried: cpu (the op declares no `cpu` kernel)");
}

#[test]
fn builtin_and_user_provenance_entries_have_identical_form() {
    let r = Registry::with_builtins();
    let user = r.register(&median::windowed_median::DECL).unwrap();
    let add = r.lookup("builtin/add").unwrap();
    let x = v(&[3.0, 1.0, 2.0]);
    let pu = user.call_with(&[&x], &[Scalar::U32(3)], CallOptions::on(BackendKind::Reference)).unwrap().provenance;
    let pb = add.call_with(&[&x, &x], &[], CallOptions::on(BackendKind::Reference)).unwrap().provenance;
    let ju: serde_json::Value = serde_json::to_value(&pu).unwrap();
    let jb: serde_json::Value = serde_json::to_value(&pb).unwrap();
    let keys = |j: &serde_json::Value| j.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&ju), keys(&jb));
    assert_eq!(&*pu.op, "user/example/windowed_median@1");
    assert_eq!(&*pb.op, "builtin/add@1");
    assert_eq!(pu.content_hash, median::windowed_median::DECL.identity());
    assert_eq!(pu.device, pb.device);
}

#[test]
fn random_shapes_dtypes_and_parameters_never_panic() {
    let r = Registry::with_builtins();
    r.register(&median::windowed_median::DECL).unwrap();
    // Every backend available here takes part (wgpu on lavapipe in CI; cuda where present).
    let backends: Vec<BackendKind> = r.backends().iter().filter(|b| b.availability().is_ok()).map(|b| b.kind()).collect();
    assert!(backends.contains(&BackendKind::Reference));
    if std::env::var("OP_REQUIRE_GPU_ADAPTER").as_deref() == Ok("1") {
        assert!(backends.contains(&BackendKind::Wgpu), "OP_REQUIRE_GPU_ADAPTER=1 but wgpu is unavailable");
    }
    let ops = r.ops();
    let mut rng = Rng::new(7);
    let dtypes = op_runtime::DType::ALL;
    let (mut ok, mut err) = (0, 0);
    for _ in 0..3000 {
        let op = &ops[rng.index(ops.len())];
        // Mostly plausible calls (right arity, rank-1 f32 of one length), sometimes anything.
        let plausible = rng.chance(0.7);
        let n_in = if plausible { op.contract().signature.inputs().count() } else { rng.index(4) };
        let len = rng.index(40);
        let inputs: Vec<Tensor> = (0..n_in)
            .map(|_| {
                if plausible {
                    return Tensor::zeros(op_runtime::DType::f32, [len]).unwrap();
                }
                let rank = rng.index(3);
                let shape: Vec<usize> = (0..rank).map(|_| rng.index(6)).collect();
                let d = dtypes[rng.index(dtypes.len())];
                let d = if rng.chance(0.6) { op_runtime::DType::f32 } else { d };
                Tensor::zeros(d, shape).unwrap()
            })
            .collect();
        let refs: Vec<&Tensor> = inputs.iter().collect();
        let declared: Vec<op_runtime::DType> = op.contract().signature.params().map(|p| p.dtype).collect();
        let params: Vec<Scalar> = if plausible {
            declared
                .iter()
                .map(|d| if *d == op_runtime::DType::f32 { Scalar::F32(rng.unit() as f32) } else { Scalar::U32(rng.below(40) as u32) })
                .collect()
        } else {
            (0..rng.index(3))
                .map(|_| match rng.index(4) {
                    0 => Scalar::U32(rng.below(40) as u32),
                    1 => Scalar::F32(rng.unit() as f32),
                    2 => Scalar::I64(rng.int_in(-5, 4) as i64),
                    _ => Scalar::Bool(rng.chance(0.5)),
                })
                .collect()
        };
        let h = r.lookup(op.id()).unwrap();
        let backend = backends[rng.index(backends.len())];
        let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| h.call_with(&refs, &params, CallOptions::on(backend))));
        match res {
            Ok(Ok(_)) => ok += 1,
            Ok(Err(e)) => {
                assert!(e.to_string().contains(op.id()), "error does not name the op: {e}");
                err += 1
            }
            Err(_) => panic!(
                "dispatch panicked on {} ({backend}) with {:?} / {:?}",
                op.id(),
                inputs.iter().map(|t| (t.dtype(), t.shape().to_vec())).collect::<Vec<_>>(),
                params
            ),
        }
    }
    assert!(ok > 300 && err > 300, "ok {ok}, err {err}");
}

/// A backend that hands back a kernel built for other content (a stale build).
struct Stale;

struct StalePrepared;

impl Prepared for StalePrepared {
    fn content_hash(&self) -> [u8; 32] {
        [0; 32]
    }
    fn execute(&self, _req: &ExecRequest<'_>) -> Result<Vec<Tensor>, BackendError> {
        Ok(vec![Tensor::vector(vec![42.0f32])])
    }
}

impl Backend for Stale {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }
    fn availability(&self) -> Result<(), BackendError> {
        Ok(())
    }
    fn profile(&self) -> Result<Arc<DeviceProfile>, BackendError> {
        Ok(Arc::new(DeviceProfile::host(BackendKind::Cpu)))
    }
    fn supports(&self, _op: &RegisteredOp) -> Result<(), BackendError> {
        Ok(())
    }
    fn prepare(&self, _op: &Arc<RegisteredOp>) -> Result<Arc<dyn Prepared>, BackendError> {
        Ok(Arc::new(StalePrepared))
    }
}

#[test]
fn a_kernel_built_for_other_content_is_never_executed() {
    let r = Registry::with_backends(vec![Arc::new(Stale), Arc::new(ReferenceBackend::default())]);
    let h = r.register(&double::DECL).unwrap();
    let e = h.call(&[&v(&[1.0])], &[]).unwrap_err();
    assert!(matches!(&e, DispatchError::Compilation(c) if c.cause.to_string().contains("different content")), "{e}");
}

#[test]
fn an_output_larger_than_the_host_or_any_allocation_is_refused_before_allocating() {
    let r = Registry::with_builtins();
    let h = r.lookup("builtin/matmul").unwrap();
    let empty = |rows: usize, cols: usize| Tensor::from_vec(vec![rows, cols], Vec::<f32>::new()).unwrap();
    // 2^20 x 2^20 f32 = 4 TiB: representable, but more than this host's memory.
    let (a, b) = (empty(1 << 20, 0), empty(0, 1 << 20));
    for kind in [BackendKind::Reference, BackendKind::Cpu] {
        match h.call_with(&[&a, &b], &[], CallOptions::on(kind)) {
            Err(DispatchError::OutputTooLarge { output, shape, limit, .. }) => {
                assert_eq!((output.as_str(), shape), ("out", vec![1 << 20, 1 << 20]));
                assert!(limit.contains("physical memory"), "{limit}");
            }
            Err(DispatchError::Unsupported { .. }) if kind == BackendKind::Cpu => {}
            other => panic!("{kind}: expected OutputTooLarge, got {other:?}"),
        }
    }
    // 2^40 x 2^40 elements overflow every allocation: refused by validation itself.
    let (a, b) = (empty(1 << 40, 0), empty(0, 1 << 40));
    match h.call(&[&a, &b], &[]) {
        Err(DispatchError::OutputTooLarge { limit, .. }) => assert!(limit.contains("isize::MAX"), "{limit}"),
        other => panic!("expected OutputTooLarge, got {other:?}"),
    }
}

/// Dispatch memoises each op's last validated call (see `core::registry::memo`): a call with
/// the same dtypes, shapes and parameters skips validation; any change re-validates, so every
/// error is still reported and output shapes follow the new call. (Replacements and backend
/// switches after a memoised call are covered by `replace_is_verified_by_the_very_next_call_
/// through_an_old_handle` and `a_switch_takes_effect_next_call_...`, which repeat a call first.)
#[test]
fn a_memoised_call_is_reused_only_for_identical_dtypes_shapes_and_parameters() {
    let r = Registry::new();
    let h = r.register(&median::windowed_median::DECL).unwrap();
    let on = CallOptions::on(BackendKind::Reference);
    let validations = || r.stats().validations.load(Ordering::Relaxed);
    let x = v(&[5.0, 1.0, 4.0, 2.0, 3.0, 9.0, 0.0, 8.0, 7.0, 6.0]);
    let first = h.call_with(&[&x], &[Scalar::U32(3)], on).unwrap();
    assert_eq!(first.outputs[0].as_slice::<f32>().unwrap(), &[4.0, 2.0, 3.0, 3.0, 3.0, 8.0, 7.0, 7.0]);
    let n = validations();
    let again = h.call_with(&[&x], &[Scalar::U32(3)], on).unwrap();
    assert_eq!((validations(), &again.outputs), (n, &first.outputs), "the same call reuses the memo");
    // A changed parameter: the output shape `n - w + 1` is recomputed, a bad value refused.
    assert_eq!(h.call_with(&[&x], &[Scalar::U32(5)], on).unwrap().outputs[0].shape(), &[6]);
    assert_eq!(validations(), n + 1);
    let e = h.call_with(&[&x], &[Scalar::U32(4)], on).unwrap_err();
    assert_eq!(e.to_string(), "op `user/example/windowed_median@1`: constraint `w % 2 == 1` is violated (w = 4)");
    let e = h.call_with(&[&x], &[Scalar::I32(3)], on).unwrap_err();
    assert!(matches!(e, DispatchError::ParamDType { .. }), "{e}");
    // A changed shape after the same parameter was memoised: re-validated, refused or resized.
    h.call_with(&[&x], &[Scalar::U32(3)], on).unwrap();
    let e = h.call_with(&[&v(&[1.0, 2.0])], &[Scalar::U32(3)], on).unwrap_err();
    assert_eq!(e.to_string(), "op `user/example/windowed_median@1`: constraint `w <= n` is violated (n = 2, w = 3)");
    let out = h.call_with(&[&v(&[3.0, 1.0, 2.0, 5.0])], &[Scalar::U32(3)], on).unwrap();
    assert_eq!(out.outputs[0].as_slice::<f32>().unwrap(), &[2.0, 2.0]);
    // A changed dtype runs its own instance, or is refused.
    let x64 = Tensor::vector(vec![3.0f64, 1.0, 2.0, 5.0]);
    assert_eq!(h.call_with(&[&x64], &[Scalar::U32(3)], on).unwrap().outputs[0].as_slice::<f64>().unwrap(), &[2.0, 2.0]);
    let e = h.call_with(&[&Tensor::vector(vec![3u32, 1, 2, 5])], &[Scalar::U32(3)], on).unwrap_err();
    assert!(matches!(e, DispatchError::NotAMember { .. }), "{e}");
    // A rank change, and a wrong number of inputs, after the memoised call.
    h.call_with(&[&x], &[Scalar::U32(3)], on).unwrap();
    let e = h.call_with(&[&Tensor::from_vec(vec![2, 5], vec![0.0f32; 10]).unwrap()], &[Scalar::U32(3)], on).unwrap_err();
    assert!(matches!(e, DispatchError::InputRank { .. }), "{e}");
    let e = h.call_with(&[&x, &x], &[Scalar::U32(3)], on).unwrap_err();
    assert!(matches!(e, DispatchError::InputCount { .. }), "{e}");
}

/// Shapes that agree on their first dim but not the rest are other calls: after a memoised
/// matmul, a changed inner or outer dim is refused or gives its own output shape.
#[test]
fn a_memoised_matmul_revalidates_a_change_in_any_dim() {
    let r = Registry::with_builtins();
    let mm = r.lookup("builtin/matmul").unwrap();
    let m = |rows: usize, cols: usize| Tensor::from_vec(vec![rows, cols], vec![1.0f32; rows * cols]).unwrap();
    let on = CallOptions::on(BackendKind::Reference);
    for _ in 0..2 {
        assert_eq!(mm.call_with(&[&m(2, 3), &m(3, 4)], &[], on).unwrap().outputs[0].shape(), &[2, 4]);
    }
    assert_eq!(mm.call_with(&[&m(2, 3), &m(3, 5)], &[], on).unwrap().outputs[0].shape(), &[2, 5]);
    let e = mm.call_with(&[&m(2, 4), &m(3, 5)], &[], on).unwrap_err();
    assert!(matches!(e, DispatchError::DimMismatch { .. }), "{e}");
    let e = mm.call_with(&[&m(2, 3), &Tensor::from_vec(vec![3, 5, 1], vec![1.0f32; 15]).unwrap()], &[], on).unwrap_err();
    assert!(matches!(e, DispatchError::InputRank { .. }), "{e}");
}

/// A handle pinned to one instance shares the slot (and its memo) with the unpinned handle, yet
/// still refuses inputs of another dtype after the unpinned handle ran them.
#[test]
fn a_pinned_handle_does_not_reuse_the_unpinned_handles_memo() {
    let r = Registry::with_builtins();
    let add = r.lookup("builtin/add").unwrap();
    let (a, b) = (Tensor::vector(vec![1.0f64, 2.0]), Tensor::vector(vec![3.0f64, 4.0]));
    let on = CallOptions::on(BackendKind::Reference);
    add.call_with(&[&a, &b], &[], on).unwrap();
    add.call_with(&[&a, &b], &[], on).unwrap();
    let f32_only = add.at(&[op_runtime::DType::f32]).unwrap();
    let e = f32_only.call_with(&[&a, &b], &[], on).unwrap_err();
    assert!(matches!(e, DispatchError::InputDType { .. }), "{e}");
    let f64_only = add.at(&[op_runtime::DType::f64]).unwrap();
    assert_eq!(f64_only.call_with(&[&a, &b], &[], on).unwrap().outputs[0].as_slice::<f64>().unwrap(), &[4.0, 6.0]);
}

/// Threads calling one op with different shapes at once each get their own call's result: the
/// memo is replaced under its lock, and a call never runs with another call's validation.
#[test]
fn threads_calling_one_op_with_different_shapes_each_get_their_own_result() {
    let r = Registry::new();
    let h = r.register(&median::windowed_median::DECL).unwrap();
    std::thread::scope(|s| {
        for t in 0..4usize {
            let h = h.clone();
            s.spawn(move || {
                let x: Vec<f32> = (0..3 + t).map(|i| ((i * 7 + t) % 5) as f32).collect();
                let want = median::windowed_median::<f32>(&x, 3);
                let x = Tensor::vector(x);
                for _ in 0..300 {
                    let out = h.call_with(&[&x], &[Scalar::U32(3)], CallOptions::on(BackendKind::Reference)).unwrap();
                    assert_eq!(out.outputs[0].as_slice::<f32>().unwrap(), want.as_slice(), "thread {t}");
                }
            });
        }
    });
}

/// Values where `x * 0.1` and `x / 10` differ in f32 (what tells the broken kernels' numbers
/// from the reference's).
fn telling() -> Vec<f32> {
    let xs: Vec<f32> = (1..200).map(|i| i as f32 * 0.37).filter(|x| x * 0.1 != x / 10.0).take(6).collect();
    assert!(xs.len() == 6, "no telling input found");
    xs
}

fn values(o: &op_runtime::Outcome) -> Vec<f32> {
    o.outputs[0].as_slice::<f32>().expect("f32").to_vec()
}

/// After conformance rejects a kernel, default selection never runs it again in this process:
/// the next default call runs the next backend and its provenance says which kernel was passed
/// over and why; with nothing else left, the "tried" list says it. An explicit
/// `CallOptions::on(...)` (or a per-op setting) still runs the rejected kernel, and its
/// provenance marks the call. A correct kernel that conforms stays the default.
#[test]
fn a_kernel_rejected_by_conformance_is_passed_over_by_default_and_reached_only_explicitly() {
    let r = Registry::with_backends(vec![Arc::new(CpuBackend::default()), Arc::new(ReferenceBackend::default())]);
    let h = r.register(&div_by_ten::DECL).unwrap();
    let xs = telling();
    let x = Tensor::vector(xs.clone());
    let broken: Vec<f32> = xs.iter().map(|v| v * 0.1).collect();
    let right: Vec<f32> = xs.iter().map(|v| v / 10.0).collect();
    let before = h.call(&[&x], &[]).unwrap();
    assert_eq!((before.provenance.backend, values(&before)), (BackendKind::Cpu, broken.clone()), "unconformed, the cpu kernel runs");

    let e = op_runtime::conform(&h, BackendKind::Cpu).expect_err("the broken cpu kernel is rejected");
    assert!(e.report().is_some(), "{e}");
    let rejected = r.rejections();
    assert_eq!(rejected.len(), 1);
    assert_eq!((rejected[0].op.as_str(), rejected[0].backend), ("test/dispatch/div_by_ten@1", BackendKind::Cpu));

    // Default: the reference runs, and the provenance says why the cpu kernel did not.
    let after = h.call(&[&x], &[]).unwrap();
    assert_eq!((after.provenance.backend, values(&after)), (BackendKind::Reference, right.clone()));
    let why = after.provenance.passed_over.as_deref().expect("the provenance names the kernel passed over");
    assert!(why.starts_with("cpu: ") && why.contains("rejected by conformance on this device") && why.contains("case(s) failed"), "{why}");
    assert!(after.provenance.rejected.is_none());
    assert!(after.provenance.to_string().contains("passed over cpu"), "{}", after.provenance);

    // Explicitly: the rejected kernel runs, and the provenance marks the call.
    let forced = h.call_with(&[&x], &[], CallOptions::on(BackendKind::Cpu)).unwrap();
    assert_eq!((forced.provenance.backend, values(&forced)), (BackendKind::Cpu, broken.clone()));
    let mark = forced.provenance.rejected.as_deref().expect("the provenance marks a rejected kernel");
    assert!(mark.contains("rejected by conformance") && mark.contains("CallOptions::on(BackendKind::Cpu)"), "{mark}");
    assert!(forced.provenance.to_string().contains("REJECTED KERNEL RAN"), "{}", forced.provenance);
    let json = serde_json::to_string(&forced.provenance).unwrap();
    assert_eq!(serde_json::from_str::<op_runtime::provenance::ProvenanceEntry>(&json).unwrap(), forced.provenance);
    // A per-op setting is an explicit choice too.
    r.set_op_backend(&h, Some(BackendKind::Cpu));
    let set = h.call(&[&x], &[]).unwrap();
    assert_eq!((set.provenance.backend, values(&set)), (BackendKind::Cpu, broken));
    assert!(set.provenance.rejected.is_some());
    r.set_op_backend(&h, None);
    assert_eq!(h.call(&[&x], &[]).unwrap().provenance.backend, BackendKind::Reference);

    // Nothing else to run: the "tried" list says why.
    let only_cpu = Registry::with_backends(vec![Arc::new(CpuBackend::default())]);
    let h2 = only_cpu.register(&div_by_ten::DECL).unwrap();
    assert!(op_runtime::conform(&h2, BackendKind::Cpu).is_err());
    match h2.call(&[&x], &[]).unwrap_err() {
        DispatchError::Exhausted(e) => {
            assert!(matches!(&e.tried[..], [(BackendKind::Cpu, BackendError::Rejected(_))]), "{e}");
            assert!(e.to_string().contains("rejected by conformance on this device"), "{e}");
        }
        e => panic!("expected the tried list, got {e}"),
    }
    // Another registry has its own record: nothing was rejected there.
    assert!(Registry::with_backends(vec![Arc::new(CpuBackend::default())]).rejections().is_empty());

    // The correct twin: conforms, and stays the default.
    let double = r.register(&double::DECL).unwrap();
    op_runtime::conform(&double, BackendKind::Cpu).expect("a correct cpu kernel conforms");
    let out = double.call(&[&x], &[]).unwrap();
    assert_eq!(out.provenance.backend, BackendKind::Cpu);
    assert!(out.provenance.passed_over.is_none() && out.provenance.rejected.is_none());
    assert_eq!(r.rejections().len(), 1, "a passing conformance rejects nothing");
}

/// The same on a GPU backend, with the existing broken WGSL fixture: once the cpu and wgpu
/// kernels are both rejected, the default call runs the reference and names both; an explicit
/// wgpu call still runs the rejected WGSL kernel, marked. Skips where no adapter exists.
#[test]
fn a_rejected_wgsl_kernel_is_passed_over_by_default_and_reached_only_explicitly() {
    let r = Registry::new();
    let Some(wgpu) = r.backend(BackendKind::Wgpu) else {
        println!("skipping: the wgpu backend is not compiled in");
        return;
    };
    if let Err(e) = wgpu.availability() {
        assert!(std::env::var(op_runtime::testing::REQUIRE_GPU_ENV).as_deref() != Ok("1"), "wgpu is required but unavailable: {e}");
        println!("skipping: no wgpu adapter: {e}");
        return;
    }
    let h = r.register(&div_by_ten::DECL).unwrap();
    let xs = telling();
    let x = Tensor::vector(xs.clone());
    let broken: Vec<f32> = xs.iter().map(|v| v * 0.1).collect();
    for kind in [BackendKind::Cpu, BackendKind::Wgpu] {
        let e = op_runtime::conform(&h, kind).expect_err("the broken kernel is rejected");
        assert_eq!(e.report().map(|rep| rep.backend), Some(kind), "{e}");
    }
    let after = h.call(&[&x], &[]).unwrap();
    assert_eq!((after.provenance.backend, values(&after)), (BackendKind::Reference, xs.iter().map(|v| v / 10.0).collect::<Vec<_>>()));
    let why = after.provenance.passed_over.as_deref().unwrap_or_default();
    assert!(why.contains("cpu: ") && why.contains("wgpu: "), "{why}");
    let forced = h.call_with(&[&x], &[], CallOptions::on(BackendKind::Wgpu)).unwrap();
    assert_eq!((forced.provenance.backend, values(&forced)), (BackendKind::Wgpu, broken));
    assert!(
        forced.provenance.rejected.as_deref().is_some_and(|m| m.contains("CallOptions::on(BackendKind::Wgpu)")),
        "{}",
        forced.provenance
    );
}

/// `builtin/tanh(-0.0)` is `-0.0`, and `tanh(+0.0)` is `+0.0`, bit for bit, on every backend
/// that runs it here, at every instance it serves (the cpu kernel's polynomial used to give
/// `+0.0`); GPU backends without a device here are skipped, and named.
#[test]
fn builtin_tanh_keeps_the_sign_of_zero_on_every_backend() {
    let r = op_runtime::registry();
    let tanh = r.lookup("builtin/tanh").unwrap();
    let mut ran = Vec::new();
    for h in tanh.instances() {
        let op = h.op();
        let dtype = op.contract().signature.outputs[0].dtype;
        // Zeros of both signs in every lane position of a vector body and its tail.
        let zeros: Vec<f64> = (0..37).map(|i| if i % 2 == 0 { -0.0 } else { 0.0 }).collect();
        let x = Tensor::from_f64(dtype, [zeros.len()], &zeros).unwrap();
        for kind in BackendKind::PRIORITY {
            let Some(b) = r.backend(kind) else { continue };
            if let Err(why) = b.supports(&op).and_then(|()| b.availability()) {
                println!("{kind} at {dtype}: skipped: {why}");
                continue;
            }
            let out = h.call_with(&[&x], &[], CallOptions::on(kind)).unwrap_or_else(|e| panic!("{kind} at {dtype}: {e}"));
            let y = out.outputs[0].to_host().unwrap();
            for (i, z) in zeros.iter().enumerate() {
                assert_eq!(y.data().bits(i), x.data().bits(i), "{kind} at {dtype}: tanh({z}) has the wrong sign at {i}");
            }
            ran.push((kind, dtype));
        }
    }
    println!("tanh kept the sign of zero on {ran:?}");
    for dtype in [op_runtime::DType::f16, op_runtime::DType::bf16, op_runtime::DType::f32, op_runtime::DType::f64] {
        assert!(ran.contains(&(BackendKind::Reference, dtype)), "{ran:?}");
    }
    assert!(ran.contains(&(BackendKind::Cpu, op_runtime::DType::f32)), "{ran:?}");
    if std::env::var(op_runtime::testing::REQUIRE_GPU_ENV).as_deref() == Ok("1") {
        assert!(ran.contains(&(BackendKind::Wgpu, op_runtime::DType::f32)), "{ran:?}");
    }
}
