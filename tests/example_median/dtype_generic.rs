//! One declaration over several float types: the instance is picked by the inputs' dtype, each
//! instance conforms on its own (ulps in its own dtype's units, a receipt per instance), and a
//! dtype without a kernel on a backend is a typed refusal, never a conversion.

use op_runtime::conformance::{conform, ConformanceFailure};
use op_runtime::f16;
use op_runtime::BackendKind;
use op_runtime::{op, CallOptions, DispatchError, Real, Registry};
use op_runtime::{DType, Tensor};

/// `3x + x/2`, rounded at every step at the instance's own type.
#[op(
    name = "test/generic/affine", version = 1,
    signature<T: f16 | bf16 | f32 | f64>(x: T[n]) -> T[n],
    category = elementwise, tolerance = ulp(1),
    backward = vjp(affine_vjp),
    cpu(affine_f16_in_f32, dtypes(T: f16)),
    kernel(wgsl = "kernels/generic/affine.wgsl", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n),
    generated_tests = false,
)]
pub fn affine<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * T::from_f64(3.0) + *v * T::from_f64(0.5)).collect()
}

/// Its VJP: `3.5 g`.
pub fn affine_vjp<T: Real>(_x: &[T], g: &[T]) -> Vec<T> {
    g.iter().map(|g| *g * T::from_f64(3.5)).collect()
}

/// The f16 instance's CPU kernel: computes in f32 and rounds once (within 1 f16 ulp of the
/// reference, which rounds at every step).
pub fn affine_f16_in_f32(x: &[f16]) -> Vec<f16> {
    x.iter().map(|v| f16::from_f32(v.to_f32() * 3.0 + v.to_f32() * 0.5)).collect()
}

/// The same op with an f16 kernel off by four f16 ulps.
#[op(
    name = "test/generic/affine_bad_f16", version = 1,
    signature<T: f16 | f32>(x: T[n]) -> T[n],
    category = elementwise, tolerance = ulp(1), backward = none,
    cpu(affine_f16_off_by_four, dtypes(T: f16)),
    generated_tests = false,
)]
pub fn affine_bad<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * T::from_f64(3.0) + *v * T::from_f64(0.5)).collect()
}

/// Four f16 ulps above the correctly rounded result (for finite, nonzero results).
pub fn affine_f16_off_by_four(x: &[f16]) -> Vec<f16> {
    affine_f16_in_f32(x)
        .into_iter()
        .map(|r| if r.is_finite() && r != f16::ZERO { f16::from_bits(r.to_bits().wrapping_add(4)) } else { r })
        .collect()
}

/// The same op with a VJP off by a factor (`3 g` for `3.5 g`) at every instance.
#[op(
    name = "test/generic/affine_bad_vjp", version = 1,
    signature<T: f16 | bf16 | f32 | f64>(x: T[n]) -> T[n],
    category = elementwise, tolerance = ulp(1),
    backward = vjp(affine_bad_vjp),
    generated_tests = false,
)]
pub fn affine_bad_vjp_op<T: Real>(x: &[T]) -> Vec<T> {
    affine(x)
}

/// Wrong on purpose: `3 g`.
pub fn affine_bad_vjp<T: Real>(_x: &[T], g: &[T]) -> Vec<T> {
    g.iter().map(|g| *g * T::from_f64(3.0)).collect()
}

use crate::median;

fn registry() -> Registry {
    let r = Registry::with_builtins();
    r.register(&affine::DECL).unwrap();
    r.register(&affine_bad::DECL).unwrap();
    r
}

fn t(dtype: DType, v: &[f64]) -> Tensor {
    Tensor::from_f64(dtype, vec![v.len()], v).unwrap()
}

#[test]
fn the_inputs_dtype_picks_the_instance_and_outputs_keep_it() {
    let r = registry();
    let h = r.lookup("test/generic/affine").unwrap();
    for d in [DType::f16, DType::bf16, DType::f32, DType::f64] {
        let out = h.call_with(&[&t(d, &[1.0, 2.0])], &[], CallOptions::on(BackendKind::Reference)).unwrap();
        let y = out.output().unwrap();
        assert_eq!(y.dtype(), d);
        assert_eq!(y.data().to_f64_vec().unwrap(), vec![3.5, 7.0]);
    }
    // A dtype outside the set is a typed error naming the variable and its members.
    let e = h.call(&[&Tensor::vector(vec![1i32])], &[]).unwrap_err();
    assert!(matches!(e, DispatchError::NotAMember { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        "op `test/generic/affine@1`: input `x` is `i32`, which is not a member of `T` (f16 | bf16 | f32 | f64); convert it explicitly (`Tensor::to_dtype`)"
    );
}

#[test]
fn a_dtype_without_a_kernel_on_a_backend_is_refused_not_converted() {
    let r = registry();
    let h = r.lookup("test/generic/affine").unwrap();
    let e = h.call_with(&[&t(DType::f64, &[1.0])], &[], CallOptions::on(BackendKind::Wgpu)).unwrap_err();
    assert!(matches!(e, DispatchError::Unsupported { .. }), "{e}");
    assert!(e.to_string().contains("WGSL kernels do not serve `T = f64`"), "{e}");
    let e = h.call_with(&[&t(DType::f32, &[1.0])], &[], CallOptions::on(BackendKind::Cpu)).unwrap_err();
    assert!(e.to_string().contains("`cpu` kernel does not serve `T = f32`"), "{e}");
    // Default selection runs each instance where it has a kernel (or on the reference).
    let out = h.call(&[&t(DType::f16, &[1.0])], &[]).unwrap();
    assert_eq!(out.provenance.backend, BackendKind::Cpu);
    let out = h.call(&[&t(DType::f64, &[1.0])], &[]).unwrap();
    assert_eq!(out.provenance.backend, BackendKind::Reference);
}

#[test]
fn each_instance_conforms_with_its_own_receipt() {
    let r = registry();
    let h = r.lookup("test/generic/affine").unwrap();
    let f16h = h.at(&[DType::f16]).unwrap();
    let receipt = conform(&f16h, BackendKind::Cpu).unwrap();
    assert_eq!(receipt.dtypes, "T = f16");
    assert!(receipt.verify(&f16h.op(), &receipt.device).is_ok());
    // A receipt for one instance does not count for another.
    let f32op = h.at(&[DType::f32]).unwrap().op();
    assert!(receipt.verify(&f32op, &receipt.device).is_err());
    let wgpu = conform(&h.at(&[DType::f32]).unwrap(), BackendKind::Wgpu);
    match wgpu {
        Ok(r) => assert_eq!(r.dtypes, "T = f32"),
        Err(ConformanceFailure::Unavailable { .. }) if std::env::var_os("OP_REQUIRE_GPU_ADAPTER").is_none() => {}
        Err(e) => panic!("{e}"),
    }
    assert!(matches!(conform(&h.at(&[DType::f64]).unwrap(), BackendKind::Cpu), Err(ConformanceFailure::Unsupported { .. })));
    assert!(h.at(&[DType::i32]).is_err());
}

#[test]
fn an_f16_kernel_off_by_four_f16_ulps_is_rejected() {
    let r = registry();
    let h = r.lookup("test/generic/affine_bad_f16").unwrap().at(&[DType::f16]).unwrap();
    match conform(&h, BackendKind::Cpu) {
        Err(ConformanceFailure::Rejected(report)) => {
            assert!(report.to_string().contains("ulp"), "{report}");
            assert!(report.to_string().contains("at T = f16 on cpu"), "the report names the instance: {report}");
        }
        other => panic!("must be rejected: {other:?}"),
    }
}

#[test]
fn the_good_f16_kernel_is_not_the_reference_in_disguise() {
    // Rounding once (in f32) and rounding at every step (the f16 reference) must differ on
    // some inputs, or the ulp(1) acceptance above would show nothing.
    let xs: Vec<f64> = (0..2000).map(|i| (i as f64 - 1000.0) * 0.01171875).collect();
    let x = t(DType::f16, &xs);
    let reference = affine(x.as_slice::<f16>().unwrap());
    let kernel = affine_f16_in_f32(x.as_slice::<f16>().unwrap());
    let differ = reference.iter().zip(&kernel).filter(|(a, b)| a != b).count();
    assert!(differ > 0, "the f32-then-round kernel equals the f16 reference everywhere");
    for (a, b) in reference.iter().zip(&kernel) {
        assert!((a.to_bits() as i32 - b.to_bits() as i32).abs() <= 1, "{a} vs {b}: more than 1 f16 ulp apart");
    }
}

#[test]
fn a_generic_op_gradchecks_and_a_wrong_generic_vjp_is_rejected() {
    op_runtime::testing::gradcheck_test(&affine::DECL);
    let e = op_runtime::testing::assert_gradcheck_rejected(&affine_bad_vjp_op::DECL);
    assert!(e.to_string().contains("test/generic/affine_bad_vjp@1"), "{e}");
}

#[test]
fn the_example_median_conforms_on_every_backend_and_dtype_it_has_a_kernel_for_and_refuses_the_rest() {
    // Declared once over f16 | bf16 | f32 | f64; its WGSL and CUDA kernels serve f32, its cpu
    // kernels f32 and f64.
    let r = Registry::with_builtins();
    let h = r.register(&median::windowed_median::DECL).unwrap();
    let strict = std::env::var_os("OP_REQUIRE_GPU_ADAPTER").is_some();
    let instances = h.instances();
    assert_eq!(instances.len(), 4);
    for inst in instances {
        let op = inst.op();
        let dtype = op.contract().signature.inputs().next().unwrap().dtype;
        for kind in [BackendKind::Reference, BackendKind::Cpu, BackendKind::Wgpu, BackendKind::Cuda] {
            let served = kind == BackendKind::Reference || dtype == DType::f32 || (kind == BackendKind::Cpu && dtype == DType::f64);
            let got = conform(&inst, kind);
            match (&got, served) {
                (Ok(receipt), true) => assert_eq!(receipt.dtypes, format!("T = {}", dtype.name())),
                (Err(ConformanceFailure::Unavailable { .. }), true) if kind == BackendKind::Cuda || !strict => {}
                (Err(e @ ConformanceFailure::Unsupported { .. }), false) => {
                    assert!(e.to_string().contains(&format!("`T = {}`", dtype.name())), "the refusal names the instance: {e}")
                }
                (Err(ConformanceFailure::Unavailable { .. }), false) if kind == BackendKind::Cuda => {}
                _ => panic!("{kind} at {}: served {served}, got {got:?}", dtype.name()),
            }
        }
        // A call at a dtype the chosen backend has no kernel for is refused, never converted;
        // default selection runs the f64 instance's cpu kernel and the half ones' reference.
        if dtype != DType::f32 {
            let x = Tensor::from_f64(dtype, vec![9], &[3.0, 1.0, 2.0, 5.0, 4.0, 0.5, 7.0, 6.0, 8.0]).unwrap();
            let on_cpu = inst.call_with(&[&x], &[op_runtime::Scalar::U32(3)], CallOptions::on(BackendKind::Cpu));
            match dtype {
                DType::f64 => assert_eq!(on_cpu.map(|o| o.provenance.backend).ok(), Some(BackendKind::Cpu)),
                _ => assert!(matches!(on_cpu, Err(DispatchError::Unsupported { .. })), "{on_cpu:?}"),
            }
            let out = inst.call(&[&x], &[op_runtime::Scalar::U32(3)]).unwrap();
            let want = if dtype == DType::f64 { BackendKind::Cpu } else { BackendKind::Reference };
            assert_eq!(out.provenance.backend, want);
            assert_eq!(out.output().unwrap().data().to_f64_vec().unwrap(), vec![2.0, 2.0, 4.0, 4.0, 4.0, 6.0, 7.0]);
        }
    }
}

#[test]
fn the_card_lists_which_instances_each_kernel_serves_and_which_are_verified_here() {
    use op_runtime::sharing::{LocalDevices, OpCard, Trust};
    use op_runtime::trust::TrustList;
    let r = registry();
    let h = r.lookup("test/generic/affine").unwrap();
    let f16h = h.at(&[DType::f16]).unwrap();
    let f32h = h.at(&[DType::f32]).unwrap();
    let receipts = vec![conform(&f16h, BackendKind::Cpu).unwrap(), conform(&f32h, BackendKind::Reference).unwrap()];
    let devices = LocalDevices::host();
    let card = OpCard::of(&h.op(), &receipts, &devices, &TrustList::new());
    assert_eq!(card.instances, ["T = f16", "T = bf16", "T = f32", "T = f64"]);
    assert_eq!(card.cpu_dtypes, ["T = f16"]);
    assert_eq!(card.kernels[0].dtypes, ["T = f32"]);
    let line = |b: BackendKind, d: &str| card.trust.iter().find(|k| k.backend == b && k.dtypes == d).map(|k| &k.trust);
    // One line per (kernel, instance served): 4 reference, 1 cpu, 1 wgpu.
    assert_eq!(card.trust.len(), 6, "{card}");
    assert!(matches!(line(BackendKind::Cpu, "T = f16"), Some(Trust::Verified { .. })), "{card}");
    assert!(matches!(line(BackendKind::Reference, "T = f32"), Some(Trust::Verified { .. })), "{card}");
    // A receipt for one instance verifies no other instance's line.
    for d in ["T = f16", "T = bf16", "T = f64"] {
        assert!(matches!(line(BackendKind::Reference, d), Some(Trust::Unverified { .. })), "{d}: {card}");
    }
    assert!(line(BackendKind::Cpu, "T = f32").is_none(), "the cpu kernel does not serve f32: no line");
    let text = card.to_string();
    assert!(text.contains("cpu kernel   affine_f16_in_f32, serving T = f16"), "{text}");
    assert!(text.contains("receipt      cpu at T = f16"), "{text}");
}

/// `x[i[k]]` for each k: two variables, so a call's instance is picked by two inputs.
#[op(
    name = "test/generic/pick", version = 1,
    signature<T: f32 | f64, I: u32 | i32>(x: T[n], i: I[m]) -> T[m],
    category = selection, tolerance = exact, backward = none,
    generated_tests = false,
)]
pub fn pick<T: Real, I: Copy + Into<i64>>(x: &[T], i: &[I]) -> Vec<T> {
    i.iter().map(|k| x[(*k).into() as usize]).collect()
}

#[test]
fn two_variables_pick_the_instance_both_inputs_spell() {
    let r = Registry::new();
    let h = r.register(&pick::DECL).unwrap();
    let x = [10.0, 11.0, 12.0];
    for (t, i) in [(DType::f32, DType::u32), (DType::f32, DType::i32), (DType::f64, DType::u32), (DType::f64, DType::i32)] {
        let idx = match i {
            DType::u32 => Tensor::vector(vec![2u32, 0]),
            _ => Tensor::vector(vec![2i32, 0]),
        };
        // The instance the two dtypes spell runs (any other would refuse `i` or `x` by dtype).
        let out = h.call_with(&[&Tensor::from_f64(t, vec![3], &x).unwrap(), &idx], &[], CallOptions::on(BackendKind::Reference)).unwrap();
        let y = out.output().unwrap();
        assert_eq!((y.dtype(), y.data().to_f64_vec().unwrap()), (t, vec![12.0, 10.0]));
        assert_eq!(h.at(&[t, i]).unwrap().op().binding_text(), format!("T = {}, I = {}", t.name(), i.name()));
    }
    let e = h.call(&[&Tensor::from_f64(DType::f32, vec![3], &x).unwrap(), &Tensor::vector(vec![1u8])], &[]).unwrap_err();
    assert!(e.to_string().contains("input `i` is `u8`, which is not a member of `I` (u32 | i32)"), "{e}");
}

/// One op, one `cpu` kernel per instance (`cpu(f32_fn, dtypes(T: f32)), cpu(f64_fn, dtypes(T:
/// f64))`): each instance runs its own kernel. The kernels count their calls, so a test can see
/// which one ran.
#[op(
    name = "test/generic/two_cpu", version = 1,
    signature<T: f16 | f32 | f64>(x: T[n]) -> T[n],
    category = elementwise, tolerance = ulp(0), backward = none,
    cpu(twice_f32, dtypes(T: f32)), cpu(twice_f64, dtypes(T: f64)),
    generated_tests = false,
)]
pub fn twice<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

static TWICE_F32_CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static TWICE_F64_CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The f32 instance's `cpu` kernel.
pub fn twice_f32(x: &[f32]) -> Vec<f32> {
    TWICE_F32_CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    x.iter().map(|v| v * 2.0).collect()
}

/// The f64 instance's `cpu` kernel.
pub fn twice_f64(x: &[f64]) -> Vec<f64> {
    TWICE_F64_CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    x.iter().map(|v| v * 2.0).collect()
}

#[test]
fn each_instance_runs_its_own_cpu_kernel() {
    use std::sync::atomic::Ordering::SeqCst;
    let r = Registry::new();
    let h = r.register(&twice::DECL).unwrap();
    let calls = || (TWICE_F32_CALLS.load(SeqCst), TWICE_F64_CALLS.load(SeqCst));
    let before = calls();
    let out = h.call_with(&[&t(DType::f32, &[1.5, -2.0])], &[], CallOptions::on(BackendKind::Cpu)).unwrap();
    assert_eq!(out.provenance.backend, BackendKind::Cpu);
    let y = out.output().unwrap();
    assert_eq!((y.dtype(), y.data().to_f64_vec().unwrap()), (DType::f32, vec![3.0, -4.0]));
    assert_eq!(calls(), (before.0 + 1, before.1), "the f32 call ran the f32 kernel only");
    let out = h.call_with(&[&t(DType::f64, &[0.25])], &[], CallOptions::on(BackendKind::Cpu)).unwrap();
    assert_eq!(out.provenance.backend, BackendKind::Cpu);
    let y = out.output().unwrap();
    assert_eq!((y.dtype(), y.data().to_f64_vec().unwrap()), (DType::f64, vec![0.5]));
    assert_eq!(calls(), (before.0 + 1, before.1 + 1), "the f64 call ran the f64 kernel only");
    // The f16 instance has no `cpu` kernel: refused on cpu, never converted to another's.
    let e = h.call_with(&[&t(DType::f16, &[1.0])], &[], CallOptions::on(BackendKind::Cpu)).unwrap_err();
    assert!(e.to_string().contains("`cpu` kernel does not serve `T = f16`"), "{e}");
    assert_eq!(calls(), (before.0 + 1, before.1 + 1));
    // Each kernel conforms at its own instance, and the card has a line for each.
    for d in [DType::f32, DType::f64] {
        let receipt = conform(&h.at(&[d]).unwrap(), BackendKind::Cpu).unwrap();
        assert_eq!(receipt.dtypes, format!("T = {}", d.name()));
    }
    assert!(matches!(conform(&h.at(&[DType::f16]).unwrap(), BackendKind::Cpu), Err(ConformanceFailure::Unsupported { .. })));
    let card =
        op_runtime::sharing::OpCard::of(&h.op(), &[], &op_runtime::sharing::LocalDevices::host(), &op_runtime::trust::TrustList::new());
    let text = card.to_string();
    assert!(text.contains("cpu kernel   twice_f32, serving T = f32"), "{text}");
    assert!(text.contains("cpu kernel   twice_f64, serving T = f64"), "{text}");
    assert_eq!(card.trust.iter().filter(|k| k.backend == BackendKind::Cpu).count(), 2, "{card}");
}

/// `s * x`: the variable is written first on a scalar parameter, but a tensor input binds it
/// (a half-precision parameter arrives as `f32` and could not tell `f16` from `f32`).
#[op(
    name = "test/generic/scale_first", version = 1,
    signature<T: f16 | f32>(s: T, x: T[n]) -> T[n],
    category = elementwise, tolerance = ulp(1), backward = none,
    generated_tests = false,
)]
pub fn scale_first<T: Real>(s: T, x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * s).collect()
}

#[test]
fn a_tensor_input_binds_the_variable_even_after_a_scalar_parameter() {
    let r = Registry::new();
    let h = r.register(&scale_first::DECL).unwrap();
    for d in [DType::f16, DType::f32] {
        let y = h.call(&[&t(d, &[1.5, 2.0])], &[op_runtime::Scalar::F32(2.0)]).unwrap().output().unwrap();
        assert_eq!(y.dtype(), d, "an {d} input selects the {d} instance");
        assert_eq!(y.data().to_f64_vec().unwrap(), vec![3.0, 4.0]);
    }
}
