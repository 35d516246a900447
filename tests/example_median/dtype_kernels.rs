//! The built-ins' `cpu` kernels at every dtype they declare (f16, bf16, f32, f64) and the VJP
//! ops' `cpu` kernels (`backward = vjp(rule, ..., cpu = f)`): every instance has one (their
//! conformance is each declaration's generated test); a wrong f64 kernel, a wrong f16 kernel
//! and a wrong VJP `cpu` kernel are rejected by conformance while the built-ins' kernels pass on
//! the same inputs at every seed; a VJP op with only a `cpu` kernel is registered, conforms and
//! runs the tape's backward on the CPU; the example median's f64 and VJP kernels equal their
//! reference bit for bit on every path and thread count, and the f64 kernel on every instruction
//! set, window length and boundary of its lanes, tiles and chunks.

use crate::median;

use op_contract::sample::Rng;
use op_runtime::conformance::{self, Case, ConformanceFailure};
use op_runtime::train::Tape;
use op_runtime::{bf16, f16, op, BackendKind, DType, OpHandle, Real, Registry, Tensor};

/// The built-ins of this crate that serve every instance on the CPU, forward and backward.
const ALL_DTYPES: [&str; 14] = [
    "builtin/add",
    "builtin/sub",
    "builtin/mul",
    "builtin/div",
    "builtin/neg",
    "builtin/scale",
    "builtin/exp",
    "builtin/log",
    "builtin/tanh",
    "builtin/relu",
    "builtin/sum",
    "builtin/mean",
    "builtin/mse_loss",
    "builtin/conv1d",
];

/// Whether the registry's `cpu` backend serves `h`'s instance with a kernel.
fn cpu_serves(h: &OpHandle) -> bool {
    let cpu = h.registry().backend(BackendKind::Cpu).expect("the cpu backend is compiled in");
    cpu.supports(&h.op()).is_ok()
}

/// The binding of each instance, by its dtype.
fn instances(h: &OpHandle) -> Vec<(DType, OpHandle)> {
    h.instances().into_iter().map(|i| (i.op().contract().binding()[0], i)).collect()
}

/// Every built-in above has a `cpu` kernel at f16, bf16, f32 and f64, and so has its VJP op;
/// `matmul` and its VJP op too (the forward's f64 kernel is the blocked f32 order in f64, its
/// half kernels the f32 kernel on exactly widened inputs).
#[test]
fn every_builtin_instance_and_its_vjp_ops_have_cpu_kernels() {
    let r = Registry::with_builtins();
    let wanted = [DType::f16, DType::bf16, DType::f32, DType::f64];
    for name in ALL_DTYPES {
        let h = r.lookup(name).expect("a built-in");
        let vjp = h.vjp_op().expect("a VJP op");
        for h in [h, vjp] {
            let have: Vec<DType> = instances(&h).into_iter().filter(|(_, i)| cpu_serves(i)).map(|(d, _)| d).collect();
            assert_eq!(have, wanted, "`{}`: instances with a cpu kernel", h.id());
        }
    }
    let mm = r.lookup("builtin/matmul").expect("matmul");
    let vjp: Vec<DType> = instances(&mm.vjp_op().expect("a VJP op")).into_iter().filter(|(_, i)| cpu_serves(i)).map(|(d, _)| d).collect();
    assert_eq!(vjp, wanted, "matmul's VJP op");
    let fwd: Vec<DType> = instances(&mm).into_iter().filter(|(_, i)| cpu_serves(i)).map(|(d, _)| d).collect();
    assert_eq!(fwd, wanted, "matmul's forward");
}

/// A hand-made case for `h` from its input tensors (no parameters).
fn case(h: &OpHandle, seed: u64, inputs: Vec<Tensor>) -> Case {
    let c = Case::of(&h.op(), inputs, vec![]).expect("the inputs fit the op");
    Case { family: "hand-made, seeded", seed, ..c }
}

/// `n` values uniform in `[lo, hi]`.
fn uniform(rng: &mut Rng, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    (0..n).map(|_| lo + (hi - lo) * rng.unit()).collect()
}

/// Checks `good` (must conform) and `bad` (must be rejected) on the cpu backend on the case
/// `inputs(seed)` builds, for 24 seeds.
fn good_and_bad_on_seeds(good: &OpHandle, bad: &OpHandle, inputs: impl Fn(&mut Rng) -> Vec<Tensor>) {
    assert!(cpu_serves(good) && cpu_serves(bad), "both run a cpu kernel");
    for seed in 0..24u64 {
        let ins = inputs(&mut Rng::new(seed));
        conformance::check_case(good, BackendKind::Cpu, &case(good, seed, ins.clone()))
            .unwrap_or_else(|e| panic!("`{}` at seed {seed}: {e}", good.id()));
        match conformance::check_case(bad, BackendKind::Cpu, &case(bad, seed, ins)) {
            Err(ConformanceFailure::Rejected(r)) if seed == 0 => eprintln!("{r}"),
            Err(ConformanceFailure::Rejected(_)) => {}
            other => panic!("`{}` at seed {seed} must be rejected, got {other:?}", bad.id()),
        }
    }
}

/// A wrong f64 kernel: `e^x` through f32 (f32's precision, about 1e-8 relative: millions of f64
/// ulps; the f32 instance has none).
#[op(name = "test/dtypes/exp_f64_via_f32", version = 1, signature<T: f32 | f64>(x: T[n]) -> T[n],
     category = transcendental, tolerance = ulp(16), nan = propagate, backward = none, generated_tests = false,
     cpu(exp_via_f32, dtypes(T: f64)), license = "MIT")]
pub fn exp_f64_via_f32<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| v.exp()).collect()
}
fn exp_via_f32(x: &[f64]) -> Vec<f64> {
    x.iter().map(|v| (*v as f32).exp() as f64).collect()
}

#[test]
fn a_wrong_f64_kernel_is_rejected_where_the_builtins_f64_kernel_conforms() {
    let r = Registry::with_builtins();
    let good = r.lookup("builtin/exp").expect("exp").at(&[DType::f64]).expect("f64");
    let bad = r.register(&exp_f64_via_f32::DECL).expect("registers").at(&[DType::f64]).expect("f64");
    good_and_bad_on_seeds(&good, &bad, |rng| vec![Tensor::vector(uniform(rng, 300, -80.0, 80.0))]);
    // The engine's own corpus rejects it too.
    match conformance::conform(&bad, BackendKind::Cpu) {
        Err(ConformanceFailure::Rejected(_)) => {}
        other => panic!("the corpus must reject the f64 kernel through f32, got {other:?}"),
    }
}

/// A wrong f16 kernel: the product rounded through bf16 (8 significand bits where f16 has 11).
#[op(name = "test/dtypes/mul_f16_via_bf16", version = 1, signature<T: f16 | f32>(a: T[n], b: T[n]) -> T[n],
     category = elementwise, tolerance = ulp(1), nan = propagate, backward = none, generated_tests = false,
     cpu(mul_via_bf16, dtypes(T: f16)), license = "MIT")]
pub fn mul_f16_via_bf16<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().zip(b).map(|(x, y)| *x * *y).collect()
}
fn mul_via_bf16(a: &[f16], b: &[f16]) -> Vec<f16> {
    a.iter().zip(b).map(|(x, y)| f16::from_f32(bf16::from_f32(x.to_f32() * y.to_f32()).to_f32())).collect()
}

#[test]
fn a_wrong_f16_kernel_is_rejected_where_the_builtins_f16_kernel_conforms() {
    let r = Registry::with_builtins();
    let good = r.lookup("builtin/mul").expect("mul").at(&[DType::f16]).expect("f16");
    let bad = r.register(&mul_f16_via_bf16::DECL).expect("registers").at(&[DType::f16]).expect("f16");
    let half = |v: Vec<f64>| Tensor::vector(v.into_iter().map(f16::from_f64).collect::<Vec<f16>>());
    good_and_bad_on_seeds(&good, &bad, |rng| vec![half(uniform(rng, 300, -30.0, 30.0)), half(uniform(rng, 300, -30.0, 30.0))]);
    match conformance::conform(&bad, BackendKind::Cpu) {
        Err(ConformanceFailure::Rejected(_)) => {}
        other => panic!("the corpus must reject the f16 kernel through bf16, got {other:?}"),
    }
}

/// A wrong VJP `cpu` kernel of `tanh`: `g (1 - tanh^2 x)`, which cancels to 0 where `tanh x`
/// rounds to 1 (from |x| = 9 in f32) while the rule's `sech^2 x` is still about 1e-7.
#[op(name = "test/dtypes/tanh_vjp_cancels_cpu", version = 1, signature(x: f32[n]) -> f32[n],
     category = transcendental, tolerance = ulp(16), nan = propagate, generated_tests = false,
     backward = vjp(op_runtime::builtins::tanh_vjp, cpu = tanh_vjp_cancels),
     license = "MIT")]
pub fn tanh_cancels<T: Real>(x: &[T]) -> Vec<T> {
    op_runtime::builtins::tanh(x)
}
fn tanh_vjp_cancels(x: &[f32], g: &[f32]) -> Vec<f32> {
    x.iter().zip(g).map(|(x, g)| g * (1.0 - x.tanh() * x.tanh())).collect()
}

#[test]
fn a_wrong_vjp_cpu_kernel_is_rejected_where_the_builtins_conforms() {
    let reports = op_runtime::testing::assert_vjp_conformance_rejected(&tanh_cancels::DECL);
    assert!(reports.iter().any(|r| r.backend == BackendKind::Cpu), "the cpu kernel ran and was rejected");
    let r = Registry::with_builtins();
    let good = r.lookup("builtin/tanh").expect("tanh").vjp_op().expect("a VJP op").at(&[DType::f32]).expect("f32");
    let bad = r.register(&tanh_cancels::DECL).expect("registers").vjp_op().expect("a VJP op");
    let f32s = |v: Vec<f64>| Tensor::vector(v.into_iter().map(|x| x as f32).collect::<Vec<f32>>());
    good_and_bad_on_seeds(&good, &bad, |rng| vec![f32s(uniform(rng, 300, -12.0, 12.0)), f32s(uniform(rng, 300, -4.0, 4.0))]);
}

/// `x^3`, whose backward has a `cpu` kernel and no GPU one.
#[op(name = "test/dtypes/cube", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(2), nan = propagate,
     backward = vjp(cube_vjp, cpu = cube_vjp_cpu),
     license = "MIT")]
pub fn cube<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * *v * *v).collect()
}
/// VJP of `cube`: `3 x^2 g`.
pub fn cube_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    x.iter().zip(g).map(|(x, g)| T::from_f64(3.0) * *x * *x * *g).collect()
}
fn cube_vjp_cpu(x: &[f32], g: &[f32]) -> Vec<f32> {
    x.iter().zip(g).map(|(x, g)| 3.0 * x * x * g).collect()
}

/// A backward with only a `cpu` kernel has a VJP op: registered with the op, conformed on the
/// CPU, and run by the tape's backward there (its provenance names it).
#[test]
fn a_vjp_op_with_only_a_cpu_kernel_conforms_and_runs_the_backward() {
    let r = Registry::with_builtins();
    let h = r.register(&cube::DECL).expect("registers");
    let v = h.vjp_op().expect("a VJP op from the cpu kernel alone");
    assert!(cpu_serves(&v));
    conformance::conform(&v, BackendKind::Cpu).expect("the VJP cpu kernel conforms");
    let mut t = Tape::with_registry(&r);
    let x = t.param("x", Tensor::vector(vec![1.0f32, -2.0, 0.5])).expect("a param");
    let y = t.apply1(&h, &[x], &[]).expect("cube");
    let loss = t.call1("builtin/sum", &[y], &[]).expect("sum");
    let mut run = t.run(&[]).expect("runs");
    let grads = t.backward(&mut run, loss).expect("backward");
    let g = grads.get(x).and_then(|g| g.as_slice::<f32>().map(<[f32]>::to_vec)).expect("a gradient");
    assert_eq!(g, [3.0, 12.0, 0.75]);
    let entry = run.provenance.entries.iter().find(|e| &*e.op == "test/dtypes/cube/vjp@1").expect("the VJP op ran");
    assert_eq!(entry.backend, BackendKind::Cpu);
}

/// A signal with ties, signed zeros, infinities and NaNs of both signs among ordinary values.
fn awkward(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    let specials = [0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, -f64::NAN, 1.0, 1.0, -2.5, f64::MIN_POSITIVE / 4.0];
    (0..n)
        .map(|_| match (rng.next_u64() as u32) % 8 {
            0 => specials[rng.index(specials.len())],
            _ => (rng.unit() - 0.5) * 10f64.powi(((rng.next_u64() as u32) % 9) as i32 - 4),
        })
        .collect()
}

/// The median's f64 kernel (networks for w <= 7, sorted windows above) and its f32 VJP kernel equal
/// the reference and the rule bit for bit, on one thread and on all.
#[test]
fn the_example_medians_f64_and_vjp_kernels_equal_their_reference_on_every_path() {
    use op_runtime::backend::{CpuBackend, ReferenceBackend};
    use op_runtime::Scalar;
    use std::sync::Arc;
    let bits64 = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<u64>>();
    let bits32 = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    for threads in [Some(1), None] {
        let cpu = threads.map_or_else(CpuBackend::default, CpuBackend::with_threads);
        let r = Registry::with_backends(vec![Arc::new(cpu), Arc::new(ReferenceBackend::default())]);
        let h = r.register(&median::windowed_median::DECL).expect("registers");
        let (h64, v32) = (h.at(&[DType::f64]).expect("f64"), h.vjp_op().expect("a VJP op").at(&[DType::f32]).expect("f32"));
        for (seed, n) in [(1u64, 40_000usize), (2, 37), (3, 9)] {
            let x = awkward(n, seed);
            let x32: Vec<f32> = x.iter().map(|v| *v as f32).collect();
            for w in [1u32, 3, 5, 7, 9, 31].into_iter().filter(|w| *w as usize <= n) {
                let out = h64.call(&[&Tensor::vector(x.clone())], &[Scalar::U32(w)]).expect("runs");
                assert_eq!(out.provenance.backend, BackendKind::Cpu);
                let got = out.outputs[0].as_slice::<f64>().expect("f64").to_vec();
                assert_eq!(bits64(&got), bits64(&median::windowed_median(&x, w)), "f64, n = {n}, w = {w}, {threads:?} thread(s)");
                let g: Vec<f32> = (0..n + 1 - w as usize).map(|i| ((i * 7919) % 13) as f32 - 6.0).collect();
                let ins = [Tensor::vector(x32.clone()), Tensor::vector(g.clone())];
                let out = v32.call(&[&ins[0], &ins[1]], &[Scalar::U32(w)]).expect("runs");
                assert_eq!(out.provenance.backend, BackendKind::Cpu);
                let got = out.outputs[0].as_slice::<f32>().expect("f32").to_vec();
                let want = median::windowed_median_vjp(&x32, w, &g);
                assert_eq!(bits32(&got), bits32(&want), "VJP, n = {n}, w = {w}, {threads:?} thread(s)");
            }
        }
    }
}

/// Mostly specials: NaNs of both signs with the extreme payloads (the keys `i64::MAX`, the
/// sorted window's sentinel, and `i64::MIN`), signed zeros, infinities and few distinct finite
/// values (ties), with `nan_per_8` of every 8 draws a NaN.
fn specials_heavy(n: usize, seed: u64, nan_per_8: u32) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    let nans = [f64::NAN, -f64::NAN, f64::from_bits(u64::MAX >> 1), f64::from_bits(u64::MAX), f64::from_bits(0x7ff0_0000_0000_0001)];
    let others = [0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, 1.0, -1.0, f64::MAX, -f64::MIN_POSITIVE / 8.0];
    (0..n)
        .map(|_| {
            let r = rng.next_u64() as u32;
            if r % 8 < nan_per_8 {
                nans[(r / 8) as usize % nans.len()]
            } else {
                others[(r / 8) as usize % others.len()]
            }
        })
        .collect()
}

/// The median's f64 kernel called directly under every instruction set this CPU runs (portable
/// 8 lanes, AVX2 4, AVX-512 8) equals the reference bit for bit at every odd `w` from 1 to 31, on
/// output counts around its lane (4, 8), tile (1024, 2048, 4096 outputs) and chunk (16384)
/// boundaries, `n == w`, and inputs from ordinary values with some specials to mostly NaN.
#[test]
fn the_example_medians_f64_kernel_equals_the_reference_at_every_window_and_isa() {
    use op_runtime::cpu::simd::{with_isa_override, Isa};
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<u64>>();
    let short = [1usize, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 63, 64, 65, 255, 257, 1023, 1025, 2047, 2048, 2049, 4095, 4096, 4097];
    let mut checked = 0;
    for w in (1u32..=31).step_by(2) {
        let mut inputs: Vec<(String, Vec<f64>)> = Vec::new();
        for (i, m) in short.iter().enumerate() {
            let n = m + w as usize - 1;
            let seed = u64::from(w) * 1000 + i as u64;
            inputs.push((format!("awkward, {m} outputs"), awkward(n, seed)));
            inputs.push((format!("half NaN, {m} outputs"), specials_heavy(n, seed, 4)));
            inputs.push((format!("7/8 NaN, {m} outputs"), specials_heavy(n, seed, 7)));
        }
        for m in [16_385usize, 40_000] {
            inputs.push((format!("awkward, {m} outputs"), awkward(m + w as usize - 1, u64::from(w) + 77)));
        }
        for (what, x) in &inputs {
            let want = bits(&median::windowed_median(x, w));
            for isa in Isa::available() {
                let got = with_isa_override(isa, || median::windowed_median_cpu_f64(x, w)).expect("available");
                assert_eq!(bits(&got), want, "w = {w}, {what}, {isa:?}");
                checked += 1;
            }
        }
    }
    assert!(checked >= 16 * 74, "every window length and input ran on at least one instruction set");
}
