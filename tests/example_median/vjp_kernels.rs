//! Backward rules with their own GPU kernels (`backward = vjp(rule, kernel(...))`): the
//! example median's VJP op is registered with it, conforms against the VJP rule on every
//! backend here (the rule's f32 bits exactly: a gather in window order adds what the rule adds,
//! in its order), and runs through dispatch; deliberately broken VJP kernels (ties routed to the
//! later element; the last window containing an element skipped, in WGSL and CUDA; a tanh VJP
//! whose textbook formula cancels) are rejected while the rule conforms.
//!
//! wgpu tests skip with a printed reason when no adapter exists, unless
//! `OP_REQUIRE_GPU_ADAPTER=1` (CI); CUDA ones unless `OP_REQUIRE_CUDA=1` (the device check).

use crate::common;

use crate::median;

use op_runtime::conformance;
use op_runtime::testing::assert_vjp_conformance_rejected;
use op_runtime::{op, BackendKind, CallOptions, Real, Registry, Scalar, Tensor};

/// The broken VJPs share the good op's contract, reference and rule; only the VJP kernel differs.
macro_rules! broken_vjp {
    ($(#[$doc:meta])* $fn_name:ident, $op_name:literal, $lang:ident, $kernel:literal) => {
        $(#[$doc])*
        #[op(
            name = $op_name, version = 1,
            signature(x: f32[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> f32[n - w + 1],
            category = selection, tolerance = exact, generated_tests = false,
            backward = vjp(median::windowed_median_vjp,
                kernel($lang = $kernel, bindings(x: read, d_out: read, d_x: read_write, uniform(n, w)), threads = n)),
            subgradient = "cotangent routed to the selected element",
            license = "MIT",
        )]
        pub fn $fn_name<T: Real>(x: &[T], w: u32) -> Vec<T> {
            median::windowed_median(x, w)
        }
    };
}

broken_vjp!(
    /// Deliberately broken median VJP kernel: ties go to the later element.
    median_vjp_ties_later, "test/broken/median_vjp_ties_later", wgsl, "kernels/broken/median_vjp_ties_later.wgsl"
);
broken_vjp!(
    /// Deliberately broken median VJP kernel: skips the last window containing each element.
    median_vjp_skips_window, "test/broken/median_vjp_skips_window", wgsl, "kernels/broken/median_vjp_skips_window.wgsl"
);
broken_vjp!(
    /// Deliberately broken median VJP kernel (CUDA): skips the last window containing each element.
    median_vjp_skips_window_cuda, "test/broken/median_vjp_skips_window_cuda", cuda, "kernels/broken/median_vjp_skips_window.cu"
);

/// Deliberately broken tanh VJP kernel: the textbook `g (1 - tanh^2 x)`, which cancels where
/// `|tanh x|` is near 1 (the rule computes `g sech^2 x` without cancellation).
#[op(name = "test/broken/tanh_vjp_cancels", version = 1,
     signature(x: f32[n]) -> f32[n],
     category = transcendental, tolerance = ulp(16), nan = propagate, generated_tests = false,
     backward = vjp(op_runtime::builtins::tanh_vjp,
         kernel(wgsl = "kernels/broken/tanh_vjp_cancels.wgsl", bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n)),
     license = "MIT")]
pub fn tanh_vjp_cancels<T: Real>(x: &[T]) -> Vec<T> {
    op_runtime::builtins::tanh(x)
}

/// Deliberately broken exp VJP kernels, WGSL and `cpu` (the form before the fix): `e^x`
/// rounded first, then multiplied by `g`; where `e^x` is subnormal and `g` large, the normal
/// result keeps only the subnormal's few bits.
#[op(name = "test/broken/exp_vjp_subnormal_first", version = 1,
     signature(x: f32[n]) -> f32[n],
     category = transcendental, tolerance = ulp(16), nan = propagate, generated_tests = false,
     backward = vjp(op_runtime::builtins::exp_vjp,
         kernel(wgsl = "kernels/broken/exp_vjp_subnormal_first.wgsl", bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n),
         cpu = exp_vjp_subnormal_first_cpu),
     license = "MIT")]
pub fn exp_vjp_subnormal_first<T: Real>(x: &[T]) -> Vec<T> {
    op_runtime::builtins::exp(x)
}

/// The broken `cpu` twin: `f32::exp(x) * g`.
fn exp_vjp_subnormal_first_cpu(x: &[f32], g: &[f32]) -> Vec<f32> {
    x.iter().zip(g).map(|(x, g)| x.exp() * g).collect()
}

/// A hand-made case of a VJP op taking `(x, d_out)` of one length.
fn xg_case(h: &op_runtime::OpHandle, x: Vec<f32>, g: Vec<f32>) -> conformance::Case {
    let c = conformance::Case::of(&h.op(), vec![Tensor::vector(x), Tensor::vector(g)], vec![]).expect("`(x, d_out)` fit the VJP op");
    conformance::Case { family: "subnormal intermediates (hand-made)", pattern: conformance::Pattern::Edge, ..c }
}

/// `x` across `[lo, hi]` with cotangents that bring `g e^(c x)` back to about 1 (capped at the
/// largest f32): every result normal while the intermediate `e^x` is subnormal.
fn subnormal_first_inputs(lo: f64, hi: f64, c: f64) -> (Vec<f32>, Vec<f32>) {
    let n = 4099;
    let x: Vec<f32> = (0..n).map(|i| (lo + (hi - lo) * i as f64 / (n - 1) as f64) as f32).collect();
    let g =
        x.iter().enumerate().map(|(i, x)| ((-c * *x as f64).exp() * (0.5 + (i % 7) as f64 / 4.0)).min(f32::MAX as f64) as f32).collect();
    (x, g)
}

/// The kernels in the family of the rejected one (the built-ins' exp and tanh VJP kernels) on
/// the inputs where a subnormal intermediate meets a normal result: every backend here conforms.
/// A VJP kernel rounding `e^x` to a subnormal first is rejected there, on the CPU and on wgpu.
#[test]
fn a_vjp_kernel_rounding_a_subnormal_intermediate_into_a_normal_result_is_rejected() {
    let kinds: Vec<BackendKind> = [BackendKind::Cpu, BackendKind::Wgpu, BackendKind::Cuda]
        .into_iter()
        .filter(|k| match k {
            BackendKind::Wgpu => common::wgpu_available(),
            BackendKind::Cuda => common::cuda_available(),
            _ => true,
        })
        .collect();
    let r = op_runtime::registry();
    let f32s = [op_runtime::DType::f32];
    // exp: e^x subnormal for x < -87.34; tanh: e^-|x| subnormal for |x| > 87.34, its square
    // scaled back by g.
    for (name, (x, g)) in [
        ("builtin/exp", subnormal_first_inputs(-103.9, -87.0, 1.0)),
        ("builtin/tanh", subnormal_first_inputs(-88.8, -87.0, -2.0)),
        ("builtin/tanh", subnormal_first_inputs(87.0, 88.8, 2.0)),
    ] {
        let v = r.lookup(name).expect("a built-in").vjp_op().expect("a VJP op").at(&f32s).expect("f32");
        for kind in &kinds {
            conformance::check_case(&v, *kind, &xg_case(&v, x.clone(), g.clone()))
                .unwrap_or_else(|e| panic!("`{}` on {kind}: {e}", v.id()));
        }
    }
    let broken = Registry::new().register(&exp_vjp_subnormal_first::DECL).expect("registers").vjp_op().expect("a VJP op");
    let (x, g) = subnormal_first_inputs(-103.9, -87.0, 1.0);
    for kind in kinds.iter().filter(|k| **k != BackendKind::Cuda) {
        match conformance::check_case(&broken, *kind, &xg_case(&broken, x.clone(), g.clone())) {
            Err(conformance::ConformanceFailure::Rejected(report)) => eprintln!("{report}"),
            other => panic!("{kind}: the kernel that rounds e^x to a subnormal first must be rejected, got {other:?}"),
        }
    }
    // The rule itself conforms there (its own bits), and so does a correct twin on the CPU.
    conformance::check_case(&broken, BackendKind::Reference, &xg_case(&broken, x, g)).expect("the rule conforms to itself");
}

fn vjp_op() -> op_runtime::OpHandle {
    let h = Registry::new().register(&median::windowed_median::DECL).expect("registers");
    h.vjp_op().expect("the VJP op is registered with the op")
}

#[test]
fn the_median_vjp_op_is_the_rule_with_the_declared_kernels() {
    let v = vjp_op();
    let op = v.op();
    assert_eq!(v.id(), "user/example/windowed_median/vjp@1");
    let args: Vec<&str> = op.contract().signature.args.iter().map(|a| a.name()).collect();
    assert_eq!(args, ["x", "w", "d_out"]);
    assert_eq!(op.contract().signature.outputs[0].name, "d_x");
    assert_eq!(op.contract().kernels.len(), 2, "the WGSL and the CUDA VJP kernels");
    let forward = Registry::new().register(&median::windowed_median::DECL).unwrap().op();
    assert_ne!(op.hash(), forward.hash(), "the VJP op has its own identity");
}

#[test]
fn the_median_vjp_kernels_conform_where_they_run() {
    let v = vjp_op();
    for kind in [BackendKind::Wgpu, BackendKind::Cuda] {
        let ok = if kind == BackendKind::Wgpu { common::wgpu_available() } else { common::cuda_available() };
        if !ok {
            continue;
        }
        let receipt =
            conformance::conform(&v.at(&[op_runtime::DType::f32]).expect("f32 instance"), kind).unwrap_or_else(|e| panic!("{kind}: {e}"));
        println!("conformance: `{}` on {kind}: {} cases conform", v.id(), receipt.cases);
        assert!(receipt.cases > 10);
    }
}

#[test]
fn the_vjp_op_on_a_gpu_equals_the_rule() {
    let v = vjp_op().at(&[op_runtime::DType::f32]).expect("f32 instance");
    let n = 4099;
    let x: Vec<f32> = (0..n).map(|i| ((i * 7919) % 61) as f32 - 30.0).collect(); // many ties
    let g: Vec<f32> = (0..n - 6).map(|i| (i as f32 * 0.37).sin()).collect();
    let expect = median::windowed_median_vjp(&x, 7, &g);
    let (xt, gt) = (Tensor::vector(x), Tensor::vector(g));
    for kind in [BackendKind::Wgpu, BackendKind::Cuda] {
        let ok = if kind == BackendKind::Wgpu { common::wgpu_available() } else { common::cuda_available() };
        if !ok {
            continue;
        }
        let out = v.call_with(&[&xt, &gt], &[Scalar::U32(7)], CallOptions::on(kind)).expect("runs");
        assert_eq!(out.provenance.backend, kind);
        let got = out.outputs[0].as_slice::<f32>().expect("f32");
        assert!(got.iter().zip(&expect).all(|(a, b)| a.to_bits() == b.to_bits()), "{kind}: the kernel's gradient differs from the rule's");
    }
}

#[test]
fn a_vjp_kernel_that_routes_ties_to_the_later_element_is_rejected() {
    let reports = assert_vjp_conformance_rejected(&median_vjp_ties_later::DECL);
    if common::wgpu_available() {
        assert!(reports.iter().any(|r| r.backend == BackendKind::Wgpu), "wgpu ran and must have rejected it");
    }
}

#[test]
fn a_vjp_kernel_that_skips_a_window_is_rejected() {
    let reports = assert_vjp_conformance_rejected(&median_vjp_skips_window::DECL);
    if common::wgpu_available() {
        let r = reports.iter().find(|r| r.backend == BackendKind::Wgpu).expect("wgpu rejected it");
        assert!(r.to_string().contains("test/broken/median_vjp_skips_window/vjp@1"), "{r}");
    }
}

#[test]
fn a_tanh_vjp_kernel_whose_formula_cancels_is_rejected() {
    let reports = assert_vjp_conformance_rejected(&tanh_vjp_cancels::DECL);
    if common::wgpu_available() {
        let r = reports.iter().find(|r| r.backend == BackendKind::Wgpu).expect("wgpu rejected it");
        eprintln!("{r}");
    }
}

#[test]
fn a_cuda_vjp_kernel_that_skips_a_window_is_rejected() {
    let reports = assert_vjp_conformance_rejected(&median_vjp_skips_window_cuda::DECL);
    if common::cuda_available() {
        assert!(reports.iter().any(|r| r.backend == BackendKind::Cuda), "CUDA ran and must have rejected it");
    }
}

/// Every built-in whose backward declares VJP kernels (at least the ones the example trains
/// through, `conv1d` and `mse_loss`) has them conform against its VJP rule wherever they run.
#[test]
fn the_builtin_vjp_kernels_conform_where_they_run() {
    let r = op_runtime::registry();
    for name in ["builtin/conv1d", "builtin/mse_loss"] {
        assert!(r.lookup(name).expect("a built-in").vjp_op().is_some(), "{name} declares VJP kernels");
    }
    let kinds: Vec<BackendKind> = [BackendKind::Wgpu, BackendKind::Cuda]
        .into_iter()
        .filter(|k| if *k == BackendKind::Wgpu { common::wgpu_available() } else { common::cuda_available() })
        .collect();
    for op in r.ops().iter().filter(|o| o.id().starts_with("builtin/") && !o.id().contains("/vjp@")) {
        let Some(v) = r.lookup(op.id()).expect("registered").vjp_op() else { continue };
        // `T = f32` (and, for `where`'s VJP op, its u32 mask: `M = u32`).
        let v = v.at(&[op_runtime::DType::f32]).or_else(|_| v.at(&[op_runtime::DType::f32, op_runtime::DType::u32])).expect("f32 instance");
        for kind in &kinds {
            let receipt = conformance::conform(&v, *kind).unwrap_or_else(|e| panic!("{kind}: {e}"));
            println!("conformance: `{}` on {kind}: {} cases conform", v.id(), receipt.cases);
        }
    }
}

/// A card lists an op's VJP kernels apart (they run, and are conformed and trusted, as its VJP
/// op): no trust line of the op's names one, so a forward receipt never vouches for a backward
/// kernel; the VJP op's own card trusts them from its own receipts.
#[test]
fn a_card_lists_vjp_kernels_apart_and_the_vjp_ops_card_trusts_them() {
    use op_runtime::sharing::{LocalDevices, OpCard};
    use op_runtime::trust::TrustList;
    let h = Registry::new().register(&median::windowed_median::DECL).expect("registers");
    let f32s = [op_runtime::DType::f32];
    let reference = conformance::conform(&h.at(&f32s).expect("f32"), BackendKind::Reference).expect("conforms");
    let devices = LocalDevices::host().with(BackendKind::Reference, reference.device.clone());
    let card = OpCard::of(&h.op(), std::slice::from_ref(&reference), &devices, &TrustList::new());
    let vjp_paths: Vec<&str> = card.kernels.iter().filter(|k| k.backward).map(|k| k.path.as_str()).collect();
    assert_eq!(vjp_paths, ["kernels/windowed_median_vjp.wgsl", "kernels/windowed_median_vjp.cu"], "{card}");
    assert!(card.kernels.iter().filter(|k| k.backward).all(|k| k.dtypes == ["T = f32"]), "{card}");
    assert!(card.trust.iter().all(|t| !t.kernel.contains("_vjp")), "no trust line of the op names a VJP kernel:\n{card}");
    let text = card.to_string();
    assert!(text.contains("vjp kernel   wgsl kernels/windowed_median_vjp.wgsl"), "{text}");
    assert!(text.contains("run as the VJP op `user/example/windowed_median/vjp@1`"), "{text}");
    assert_eq!(OpCard::from_json(&card.to_json()).expect("reads back"), card);
    // The VJP op's card: its kernels are its own, trusted by its own receipts.
    let v = h.vjp_op().expect("a VJP op");
    let vcard = OpCard::of(&v.op(), &[], &devices, &TrustList::new());
    assert!(vcard.kernels.iter().all(|k| !k.backward) && vcard.kernels.len() == 2, "{vcard}");
    if common::wgpu_available() {
        let r = conformance::conform(&v.at(&f32s).expect("f32"), BackendKind::Wgpu).expect("the VJP kernel conforms");
        let devices = devices.with(BackendKind::Wgpu, r.device.clone());
        let vcard = OpCard::of(&v.op(), &[r], &devices, &TrustList::new());
        let line = vcard.trust.iter().find(|t| t.kernel == "kernels/windowed_median_vjp.wgsl").expect("a trust line");
        assert!(line.trust.is_verified(), "{vcard}");
    }
}
