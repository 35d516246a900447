//! Every built-in's WGSL kernel conforms to its reference on this machine's wgpu adapter
//! (lavapipe in CI), and its CUDA kernel wherever CUDA runs (skipped elsewhere, a failure under
//! `OP_REQUIRE_CUDA=1`), and receipts verify; a sweep of the transcendental kernels over many
//! values measures their worst ulp error against the declared tolerance. Deliberately broken
//! kernels (`generated_tests = false`: three WGSL, two CUDA) are asserted rejected under `accum`.
//!
//! Skips with a printed reason when no wgpu adapter exists, unless `OP_REQUIRE_GPU_ADAPTER=1`.

mod common;

use op_runtime::conformance::{self, ConformanceFailure, Fault};
use op_runtime::{op, BackendKind, CallOptions, Real, Tensor};

/// Deliberately broken sum: drops the last element.
#[op(name = "test/broken/sum_drops_last", version = 1, signature(x: f32[n]) -> f32[],
     category = reduction, tolerance = accum(2), backward = none, generated_tests = false,
     kernel(wgsl = "kernels/broken/sum_drops_last.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = 256))]
pub fn sum_drops_last<T: Real>(x: &[T]) -> Vec<T> {
    op_runtime::builtins::sum(x)
}

/// Deliberately broken sum: the tree reduction drops half of the partial sums.
#[op(name = "test/broken/sum_half_tree", version = 1, signature(x: f32[n]) -> f32[],
     category = reduction, tolerance = accum(2), backward = none, generated_tests = false,
     kernel(wgsl = "kernels/broken/sum_half_tree.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = 256))]
pub fn sum_half_tree<T: Real>(x: &[T]) -> Vec<T> {
    op_runtime::builtins::sum(x)
}

/// Deliberately broken matmul: reads `b` transposed.
#[op(name = "test/broken/matmul_transposed_b", version = 1, signature(a: f32[m, k], b: f32[k, n]) -> f32[m, n],
     category = contraction, tolerance = accum(2), backward = none, generated_tests = false,
     kernel(wgsl = "kernels/broken/matmul_transposed_b.wgsl", bindings(a: read, b: read, out: read_write, uniform(m, k, n)), threads = m * n))]
pub fn matmul_transposed_b<T: Real>(a: &[T], b: &[T], m: usize, k: usize, n: usize) -> Vec<T> {
    op_runtime::builtins::matmul(a, b, m, k, n)
}

/// Deliberately broken CUDA sum: drops the last element.
#[op(name = "test/broken/cuda_sum_drops_last", version = 1, signature(x: f32[n]) -> f32[],
     category = reduction, tolerance = accum(2), backward = none, generated_tests = false,
     kernel(cuda = "kernels/broken/sum_drops_last.cu", bindings(x: read, out: read_write, uniform(n)), threads = 256, block = 256))]
pub fn cuda_sum_drops_last<T: Real>(x: &[T]) -> Vec<T> {
    op_runtime::builtins::sum(x)
}

/// Deliberately broken CUDA sum: one thread, last element first (outside `accum`'s pairwise
/// bound on the long biased case; first to last it would be the reference's own bits).
#[op(name = "test/broken/cuda_sum_sequential", version = 1, signature(x: f32[n]) -> f32[],
     category = reduction, tolerance = accum(2), backward = none, generated_tests = false,
     kernel(cuda = "kernels/broken/sum_sequential.cu", bindings(x: read, out: read_write, uniform(n)), threads = 1, block = 1))]
pub fn cuda_sum_sequential<T: Real>(x: &[T]) -> Vec<T> {
    op_runtime::builtins::sum(x)
}

/// The ids of the built-ins' differentiable VJP ops (no kernels: they run on the host).
fn second_order_ops() -> Vec<String> {
    op_runtime::builtins::vjp_decls().iter().map(|(_, d)| op_runtime::RegisteredOp::load(d).expect("loads").id().to_string()).collect()
}

/// Whether every instance of the op has a `bool` tensor (`greater_bool`, `less_bool`,
/// `equal_bool`): host-only, as WGSL storage holds no `bool` (`tests/masks.rs` checks that a
/// GPU backend skips a `bool` instance).
fn bool_in_every_instance(c: &op_runtime::contract::Contract) -> bool {
    let sig = &c.signature;
    let fixed_bool = |t: &op_runtime::contract::TensorSig| t.var.is_none() && t.dtype == op_runtime::DType::bool;
    sig.inputs().any(fixed_bool) || sig.outputs.iter().any(fixed_bool)
}

/// Conforms every built-in's kernel on `kind` (each must declare one in `lang`; the built-ins'
/// differentiable VJP ops, host-only second derivatives, declare none, nor do the host-only
/// ops whose every instance has a `bool` tensor), verifies the receipts and prints a line per
/// op; panics with every failure.
fn every_builtin_conforms_on(kind: BackendKind, lang: &str) {
    let reg = op_runtime::registry();
    let profile = (*reg.backend(kind).expect("compiled in").profile().expect("profile")).clone();
    let mut failures = Vec::new();
    let mut conformed = 0;
    let second_order: Vec<String> =
        op_runtime::builtins::vjp_decls().iter().map(|(_, d)| op_runtime::RegisteredOp::load(d).expect("loads").id().to_string()).collect();
    for op in reg.ops().into_iter().filter(|o| o.contract().name.starts_with("builtin/") && !second_order.contains(&o.id().to_string())) {
        if bool_in_every_instance(op.contract()) {
            eprintln!("{:<24} host only (a `bool` tensor in every instance)", op.id());
            continue;
        }
        let h = reg.lookup(op.id()).expect("registered");
        assert!(op.contract().kernels.iter().any(|k| k.path.ends_with(lang)), "built-in `{}` declares no {lang} kernel", op.id());
        let t = std::time::Instant::now();
        match conformance::conform(&h, kind) {
            Ok(r) => {
                r.verify(&op, &profile).expect("receipt verifies");
                eprintln!(
                    "{:<24} {:<10} {:>4} cases  {:>7.1} ms",
                    op.id(),
                    r.tolerance.to_string(),
                    r.cases,
                    t.elapsed().as_secs_f64() * 1e3
                );
                conformed += 1;
            }
            Err(ConformanceFailure::Rejected(report)) => failures.push(report.to_string()),
            Err(e) => failures.push(e.to_string()),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(conformed >= 15, "only {conformed} built-ins conformed on {kind}");
}

#[test]
fn every_builtin_cuda_kernel_conforms() {
    if common::cuda_available() {
        every_builtin_conforms_on(BackendKind::Cuda, ".cu");
    }
}

#[test]
fn every_builtin_wgsl_kernel_conforms() {
    if common::wgpu_available() {
        every_builtin_conforms_on(BackendKind::Wgpu, ".wgsl");
    }
}

/// The built-in `accum` kernels sum in pairwise order, so they stay well inside the bound on
/// every case of their corpora, the biased one included: prints the worst margin of each.
fn accum_kernels_stay_inside_the_bound_on(kind: BackendKind) {
    let reg = op_runtime::registry();
    let second_order = second_order_ops();
    for op in reg.ops().into_iter().filter(|o| o.contract().name.starts_with("builtin/") && !second_order.contains(&o.id().to_string())) {
        let h = reg.lookup(op.id()).expect("registered");
        let Some((worst, case)) = conformance::accum_margin(&h, kind).unwrap_or_else(|e| panic!("{e}")) else { continue };
        eprintln!("{:<22} {}: worst |{kind} - r64| / bound = {worst:.3} on {case}", op.id(), op.contract().tolerance);
        assert!(worst < 1.0, "{} on {kind}: {worst} on {case}", op.id());
    }
}

#[test]
fn builtin_accum_kernels_stay_inside_the_pairwise_bound() {
    if common::wgpu_available() {
        accum_kernels_stay_inside_the_bound_on(BackendKind::Wgpu);
    }
}

#[test]
fn builtin_cuda_accum_kernels_stay_inside_the_pairwise_bound() {
    if common::cuda_available() {
        accum_kernels_stay_inside_the_bound_on(BackendKind::Cuda);
    }
}

/// Ordered-bits distance of two f32 values (0 for equal values, `u32::MAX` for NaN mismatches).
fn ulps(a: f32, b: f32) -> u32 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() { 0 } else { u32::MAX };
    }
    if a == b {
        return 0;
    }
    let ord = |v: f32| -> i64 {
        let b = v.to_bits();
        if b >> 31 == 1 {
            -((b & 0x7fff_ffff) as i64)
        } else {
            b as i64
        }
    };
    (ord(a) - ord(b)).unsigned_abs().min(u32::MAX as u64) as u32
}

#[test]
fn transcendental_kernels_stay_within_their_ulps_on_a_sweep() {
    if common::wgpu_available() {
        sweep_transcendentals(BackendKind::Wgpu);
    }
}

#[test]
fn cuda_transcendental_kernels_stay_within_their_ulps_on_a_sweep() {
    if common::cuda_available() {
        sweep_transcendentals(BackendKind::Cuda);
    }
}

/// Measures the worst ulp error of `exp`, `log` and `tanh` on `kind` over 65,536 values each
/// against the declared `ulp(k)`.
fn sweep_transcendentals(kind: BackendKind) {
    let reg = op_runtime::registry();
    // Normal inputs only: subnormal handling is covered by conformance (flush policy).
    // (op, lowest input, highest input, f64-free f32 reference)
    type Sweep = (&'static str, f32, f32, fn(f32) -> f32);
    let sweeps: [Sweep; 3] =
        [("builtin/exp", -103.0, 88.7, f32::exp), ("builtin/log", 1.0e-37, 3.0e38, f32::ln), ("builtin/tanh", -12.0, 12.0, f32::tanh)];
    for (name, lo, hi, f) in sweeps {
        let n = 1 << 16;
        let x: Vec<f32> = (0..n)
            .map(|i| {
                let t = i as f64 / (n - 1) as f64;
                if name == "builtin/log" {
                    // Log-uniform, plus a dense band around 1.
                    if i % 4 == 0 {
                        (0.9 + 0.2 * t) as f32
                    } else {
                        (lo as f64 * (hi as f64 / lo as f64).powf(t)) as f32
                    }
                } else {
                    (lo as f64 + (hi - lo) as f64 * t) as f32
                }
            })
            .collect();
        let out = reg
            .lookup(name)
            .expect("registered")
            .call_with(&[&Tensor::vector(x.clone())], &[], CallOptions::on(kind))
            .expect("runs")
            .output()
            .expect("one output");
        let got = out.as_slice::<f32>().expect("f32");
        let (mut worst, mut at) = (0u32, 0.0f32);
        for (v, g) in x.iter().zip(got) {
            let e = f(*v);
            if e.is_subnormal() {
                continue;
            }
            let u = ulps(e, *g);
            if u > worst {
                worst = u;
                at = *v;
            }
        }
        let declared = match reg.lookup(name).expect("registered").op().contract().tolerance {
            op_runtime::contract::Tolerance::Ulp(k) => k,
            other => panic!("{name}: unexpected tolerance {other}"),
        };
        eprintln!("{name} on {kind}: worst {worst} ulp (at x = {at:e}) over {n} values; declared ulp({declared})");
        assert!(worst <= declared, "{name}: {worst} ulp at x = {at:e} exceeds the declared ulp({declared})");
    }
}

#[test]
fn broken_cuda_reductions_are_rejected_under_accum() {
    for decl in [&cuda_sum_drops_last::DECL, &cuda_sum_sequential::DECL] {
        let Some(report) = common::cuda_rejection(decl) else { return };
        match &report.first().fault {
            Fault::Mismatch(m) => assert!(m.detail.contains("accum(2)"), "{report}"),
            other => panic!("expected a value mismatch, got {other:?}"),
        }
    }
}

#[test]
fn broken_reductions_and_contractions_are_rejected_under_accum() {
    for decl in [&sum_drops_last::DECL, &sum_half_tree::DECL, &matmul_transposed_b::DECL] {
        let Some(report) = common::wgpu_rejection(decl) else { return };
        match &report.first().fault {
            Fault::Mismatch(m) => assert!(m.detail.contains("accum(2)"), "{report}"),
            other => panic!("expected a value mismatch, got {other:?}"),
        }
    }
}
