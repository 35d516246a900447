//! The f64 matmul kernel against its documented order and its `accum(2)` bound: bit for bit a
//! scalar model of the blocked order (blocks of 16 fused multiply-adds, panels of 256,
//! super-panels of 4096 combined pairwise; unfused on the portable path) on tile edges, several
//! cache blocks and super-panels of `k`, B packed per chunk, on every instruction set this CPU
//! has and on 1, 2 and 3 threads; within the bound anchored on the reference, by the
//! conformance engine's own `accum_bound` and by `check_case` through dispatch; the reference's
//! results wherever a partial sum may overflow. Negative controls: a kernel dropping a term, and
//! the reference's own sequential order on a long biased sum, are rejected by the same checks;
//! a blocked order without the overflow guard is rejected on a case the kernel passes. The f32
//! kernel's tests are in `builtins/cpu_tests.rs`. Here, at the top floor, because they compare
//! with the built-in's reference (`kernels` sit below `builtins`).

use crate as builtins;
use op_backends::cpu::kernels::matmul::{matmul_f64, SHARED_PACK_MAX_BYTES};
use op_backends::cpu::par::run_in;
use op_backends::cpu::simd::{with_isa_override, Isa};
use op_backends::{CpuBackend, ReferenceBackend};
use op_contract::sample::Rng;
use op_core::decl::OpDecl;
use op_core::kind::BackendKind;
use op_core::registry::{OpHandle, Registry};
use op_core::tensor::{DType, Tensor};
use op_verify::conformance::{self, accum_bound, cases, Case, Pattern};
use std::sync::{Arc, OnceLock};

/// Runs `f` as dispatch runs a kernel: forced onto `isa`, with a pool of `threads` threads.
fn on<R>(isa: Isa, threads: usize, f: impl FnOnce() -> R) -> R {
    static POOLS: OnceLock<Vec<Arc<rayon::ThreadPool>>> = OnceLock::new();
    let pools =
        POOLS.get_or_init(|| (1..=3).map(|t| Arc::new(rayon::ThreadPoolBuilder::new().num_threads(t).build().expect("a pool"))).collect());
    with_isa_override(isa, || run_in(&pools[threads - 1], f)).expect("an instruction set this CPU has")
}

/// The first index where the bits differ.
fn first_difference(got: &[f64], want: &[f64]) -> Option<usize> {
    got.iter().zip(want).position(|(g, w)| g.to_bits() != w.to_bits())
}

fn values(rng: &mut Rng, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    (0..n).map(|_| rng.uniform(lo, hi)).collect()
}

/// The kernel's output on `isa` with `threads` threads, over a stale value in every element
/// (the kernel must write each one).
fn kernel(isa: Isa, threads: usize, a: &[f64], b: &[f64], (m, k, n): (usize, usize, usize)) -> Vec<f64> {
    let mut got = vec![f64::from_bits(0x7ff4_0000_dead_beef); m * n];
    on(isa, threads, || matmul_f64(a, b, m, k, n, &mut got));
    got
}

/// The documented order for one element, scalar: blocks of 16 (`fused`: `mul_add`; else the
/// product rounded first) from `+0`, the blocks of a panel of 256 added in sequence, the
/// panels of a super-panel of 4096 added in sequence to `+0`, the super-panels combined by a
/// binary counter (`left + right`, the pending nodes from the lowest up as `node + rest`).
fn model(terms: &[(f64, f64)], fused: bool) -> f64 {
    let panel_sum = |ts: &[(f64, f64)]| -> f64 {
        ts.chunks(16)
            .map(|blk| blk.iter().fold(0f64, |s, (x, y)| if fused { x.mul_add(*y, s) } else { s + x * y }))
            .fold(0f64, |acc, blk| acc + blk)
    };
    let super_sum = |ts: &[(f64, f64)]| ts.chunks(256).fold(0f64, |run, p| run + panel_sum(p));
    let mut levels: Vec<Option<f64>> = Vec::new();
    for (count, sp) in terms.chunks(4096).enumerate() {
        let (mut node, mut c, mut lvl) = (super_sum(sp), count, 0);
        while c & 1 == 1 {
            if let Some(left) = levels[lvl].take() {
                node += left; // `left + node`: IEEE addition commutes (NaN payloads aside)
            }
            c >>= 1;
            lvl += 1;
        }
        if levels.len() <= lvl {
            levels.resize(lvl + 1, None);
        }
        levels[lvl] = Some(node);
    }
    levels.into_iter().flatten().fold(None, |rest: Option<f64>, node| Some(rest.map_or(node, |r| node + r))).unwrap_or(0.0)
}

/// [`model`] of every element of `a (m x k) * b (k x n)`.
fn model_matmul(a: &[f64], b: &[f64], (m, k, n): (usize, usize, usize), fused: bool) -> Vec<f64> {
    (0..m * n).map(|e| model(&(0..k).map(|p| (a[e / n * k + p], b[p * n + e % n])).collect::<Vec<_>>(), fused)).collect()
}

/// The `accum(2)` verdict on finite results, as the conformance engine computes it: every
/// element within `2 * ceil(log2 k) * eps * sum|a b|` of the reference (products in f64,
/// summed with compensation).
fn within_accum(got: &[f64], a: &[f64], b: &[f64], (m, k, n): (usize, usize, usize)) -> Result<(), String> {
    let want = builtins::matmul(a, b, m, k, n);
    for (e, (g, w)) in got.iter().zip(&want).enumerate() {
        let s: f64 = (0..k).map(|p| (a[e / n * k + p] * b[p * n + e % n]).abs()).sum();
        let bound = accum_bound(2, DType::f64, k, s);
        let d = (g - w).abs();
        if d.is_nan() || d > bound {
            return Err(format!("element {e}: {g:e} vs the reference's {w:e}: {d:e} > bound {bound:e}"));
        }
    }
    Ok(())
}

/// The kernel on every isa and 1 to 3 threads: the model's bits (fused on x86, unfused on the
/// portable path), hence the same on any thread count, and within the `accum` bound.
fn check(a: &[f64], b: &[f64], dims: (usize, usize, usize), what: &str) {
    let (fused, unfused) = (model_matmul(a, b, dims, true), model_matmul(a, b, dims, false));
    for isa in Isa::available() {
        let want = if isa == Isa::Portable { &unfused } else { &fused };
        for threads in [1, 2, 3] {
            let got = kernel(isa, threads, a, b, dims);
            if let Some(i) = first_difference(&got, want) {
                panic!("{what} {dims:?} {isa:?} {threads} threads: element {i}: {:e} vs the order's {:e}", got[i], want[i]);
            }
        }
        within_accum(&kernel(isa, 1, a, b, dims), a, b, dims).unwrap_or_else(|e| panic!("{what} {dims:?} {isa:?}: {e}"));
    }
}

#[test]
fn the_f64_kernel_sums_in_its_documented_order_on_every_isa_and_thread_count() {
    let mut rng = Rng::new(51);
    let shapes = [(1usize, 1usize, 1usize), (3, 5, 7), (4, 17, 8), (7, 33, 15), (8, 256, 16), (9, 257, 17), (13, 300, 33), (70, 64, 45)];
    for &(m, k, n) in &shapes {
        check(&values(&mut rng, m * k, -1.0, 1.0), &values(&mut rng, k * n, -1.0, 1.0), (m, k, n), "uniform");
        check(&vec![0.1; m * k], &vec![0.3; k * n], (m, k, n), "biased");
    }
    // Several cache blocks of k (blocks of 1024), then super-panels (4096) combined pairwise.
    for &(m, k, n) in &[(11usize, 2100usize, 19usize), (3, 4097, 17), (2, 9000, 3), (1, 21_000, 2)] {
        check(&values(&mut rng, m * k, 0.0, 1e3), &values(&mut rng, k * n, 0.0, 1e3), (m, k, n), "positive");
        check(&vec![0.1; m * k], &vec![0.3; k * n], (m, k, n), "biased");
    }
}

#[test]
fn the_f64_kernel_packs_b_per_chunk_when_b_is_too_large_to_pack_whole() {
    // One column padded to a strip of 16: k * 16 * 8 bytes over the shared limit.
    let k = SHARED_PACK_MAX_BYTES / (16 * 8) + 300;
    let mut rng = Rng::new(52);
    let (a, b) = (values(&mut rng, 2 * k, -1.0, 1.0), values(&mut rng, k, -1.0, 1.0));
    let isa = Isa::detect();
    let got = kernel(isa, 2, &a, &b, (2, k, 1));
    let want = model_matmul(&a, &b, (2, k, 1), isa != Isa::Portable);
    assert_eq!(first_difference(&got, &want), None, "k = {k}: {got:?} vs {want:?}");
    within_accum(&got, &a, &b, (2, k, 1)).unwrap_or_else(|e| panic!("k = {k}: {e}"));
}

#[test]
fn the_f64_kernel_gives_the_reference_s_results_where_a_partial_sum_may_overflow() {
    // Row 0: inf then MIN (a block of MIN overflows to -inf: inf + -inf would be NaN); row 1:
    // MAX + MAX overflows in order before -MAX comes (in blocks it would not); row 2: a NaN;
    // row 3: 1e308 alone in the first block, `1e308 - 1e308` in the second (finite in blocks,
    // inf in order); row 4: ordinary values beside them. Column 1 holds a 0 against the inf and
    // a -inf.
    let k = 40;
    let mut a = vec![f64::MIN; 5 * k];
    a[0] = f64::INFINITY;
    a[k] = f64::MAX;
    a[k + 1] = f64::MAX;
    a[k + 2] = -f64::MAX;
    a[2 * k + 5] = f64::NAN;
    a[3 * k..4 * k].fill(0.0);
    a[3 * k] = 1e308;
    a[3 * k + 16] = 1e308;
    a[3 * k + 17] = -1e308;
    for (p, v) in a[4 * k..].iter_mut().enumerate() {
        *v = p as f64 * 0.25 - 3.0;
    }
    let mut b = vec![1.0; k * 2];
    b[1] = 0.0;
    b[2 * 7 + 1] = f64::NEG_INFINITY;
    let want = builtins::matmul(&a, &b, 5, k, 2);
    assert_eq!(want[6], f64::INFINITY, "the reference overflows row 3 in order");
    for isa in Isa::available() {
        for threads in [1, 2] {
            let got = kernel(isa, threads, &a, &b, (5, k, 2));
            assert_eq!(first_difference(&got, &want), None, "{isa:?} {threads} threads: {got:?} vs {want:?}");
        }
    }
    // Through dispatch, judged by the conformance engine; and a blocked order without the
    // guard is rejected on the same case.
    let r = registry();
    let inputs = vec![Tensor::from_vec(vec![5, k], a).expect("a"), Tensor::from_vec(vec![k, 2], b).expect("b")];
    conforms(&matmul_at_f64(&r), &inputs).unwrap_or_else(|e| panic!("the kernel: {e}"));
    let decl: &'static OpDecl = &matmul_blocked_reference::DECL;
    let unguarded = r.register(decl).expect("registers");
    match conforms(&unguarded, &inputs) {
        Err(e) => println!("rejected, as it must be:\n{e}"),
        Ok(()) => panic!("a blocked order without the overflow guard passed the overflow case"),
    }
}

#[test]
fn the_f64_kernel_conforms_through_dispatch_where_the_reference_s_order_and_a_dropped_term_do_not() {
    let r = registry();
    let mut rng = Rng::new(53);
    let mat = |rows: usize, cols: usize, v: Vec<f64>| Tensor::from_vec(vec![rows, cols], v).expect("a matrix");
    let mm = matmul_at_f64(&r);
    let (m, k, n) = (6, 300, 20);
    let uniform = vec![mat(m, k, values(&mut rng, m * k, -1.0, 1.0)), mat(k, n, values(&mut rng, k * n, -1.0, 1.0))];
    // Long and biased: a sequential sum drifts by ~k/4 roundings, past 2 * ceil(log2 k) eps.
    let biased = vec![mat(2, 1000, vec![0.1; 2000]), mat(1000, 3, vec![0.3; 3000])];
    for inputs in [&uniform, &biased] {
        conforms(&mm, inputs).unwrap_or_else(|e| panic!("the kernel: {e}"));
    }
    let decls: [&'static OpDecl; 2] = [&matmul_drop_reference::DECL, &matmul_sequential_reference::DECL];
    let [dropped, sequential] = decls.map(|d| r.register(d).expect("registers"));
    for (h, inputs, what) in [(&dropped, &uniform, "a kernel dropping the last term"), (&sequential, &biased, "the sequential order")] {
        match conforms(h, inputs) {
            Err(e) => println!("{what}: rejected, as it must be:\n{e}"),
            Ok(()) => panic!("{what} passed the accum bound"),
        }
    }
    // The raw check above rejects both as well.
    let raw = |inputs: &[Tensor], f: Matmul| {
        let (a, b) = (inputs[0].as_slice::<f64>().expect("f64"), inputs[1].as_slice::<f64>().expect("f64"));
        let (m, k, n) = (inputs[0].shape()[0], inputs[0].shape()[1], inputs[1].shape()[1]);
        within_accum(&f(a, b, m, k, n), a, b, (m, k, n))
    };
    assert!(raw(&uniform, matmul_drop_last).is_err() && raw(&biased, matmul_sequential).is_err());
    assert!(raw(&uniform, matmul_kernel).is_ok() && raw(&biased, matmul_kernel).is_ok());
}

// ---- Dispatch, and the wrong kernels the checks must reject. ----

/// A matmul as the reference's signature has it.
type Matmul = fn(&[f64], &[f64], usize, usize, usize) -> Vec<f64>;

fn registry() -> Registry {
    let r = Registry::with_backends(vec![Arc::new(CpuBackend::with_threads(2)), Arc::new(ReferenceBackend::default())]);
    for d in builtins::decls() {
        r.register_builtin(d).expect("a built-in registers");
    }
    r
}

/// The built-in's f64 instance.
fn matmul_at_f64(r: &Registry) -> OpHandle {
    r.lookup("builtin/matmul").expect("built-in").at(&[DType::f64]).expect("an f64 instance")
}

/// `check_case` on a hand-made case of `h`'s op with these inputs, on the cpu backend, on every
/// instruction set.
fn conforms(h: &OpHandle, inputs: &[Tensor]) -> Result<(), String> {
    let op = h.op();
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let bound = op.plan.validate(&refs, &[], None).expect("an admissible case");
    let case = Case {
        index: 0,
        family: "hand-made (matmul kernel tests)",
        pattern: Pattern::Random,
        seed: 0,
        shape: cases::Shape { syms: bound.values.to_vec(), float_params: vec![] },
        sym_names: op.plan.syms.clone(),
        inputs: inputs.to_vec(),
        params: vec![],
        param_names: vec![],
    };
    for isa in Isa::available() {
        with_isa_override(isa, || conformance::check_case(h, BackendKind::Cpu, &case))
            .expect("isa")
            .map_err(|e| format!("{isa:?}: {e}"))?;
    }
    Ok(())
}

/// A plain sequential order, `s = s + a b` for `p` in order (what the reference summed before it
/// compensated).
fn matmul_sequential(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    (0..m * n).map(|e| (0..k).fold(0.0, |s, p| s + a[e / n * k + p] * b[p * n + e % n])).collect()
}

/// The kernel's order, without the overflow guard.
fn matmul_blocked(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    model_matmul(a, b, (m, k, n), true)
}

/// The kernel, as a function of the reference's shape.
fn matmul_kernel(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut out = vec![0f64; m * n];
    matmul_f64(a, b, m, k, n, &mut out);
    out
}

/// The kernel on all but the last term of each sum.
fn matmul_drop_last(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let a1: Vec<f64> = a.chunks(k).flat_map(|row| row[..k - 1].to_vec()).collect();
    let mut out = vec![0f64; m * n];
    matmul_f64(&a1, &b[..(k - 1) * n], m, k - 1, n, &mut out);
    out
}

#[crate::op(name = "test/matmul/sequential", version = 1, signature(a: f64[m, k], b: f64[k, n]) -> f64[m, n],
     category = contraction, tolerance = accum(2), nan = propagate, backward = none, cpu = matmul_sequential,
     generated_tests = false)]
fn matmul_sequential_reference<T: crate::Real>(a: &[T], b: &[T], m: usize, k: usize, n: usize) -> Vec<T> {
    builtins::matmul(a, b, m, k, n)
}

#[crate::op(name = "test/matmul/blocked_unguarded", version = 1, signature(a: f64[m, k], b: f64[k, n]) -> f64[m, n],
     category = contraction, tolerance = accum(2), nan = propagate, backward = none, cpu = matmul_blocked,
     generated_tests = false)]
fn matmul_blocked_reference<T: crate::Real>(a: &[T], b: &[T], m: usize, k: usize, n: usize) -> Vec<T> {
    builtins::matmul(a, b, m, k, n)
}

#[crate::op(name = "test/matmul/drop_last", version = 1, signature(a: f64[m, k], b: f64[k, n]) -> f64[m, n],
     category = contraction, tolerance = accum(2), nan = propagate, backward = none, cpu = matmul_drop_last,
     generated_tests = false)]
fn matmul_drop_reference<T: crate::Real>(a: &[T], b: &[T], m: usize, k: usize, n: usize) -> Vec<T> {
    builtins::matmul(a, b, m, k, n)
}
