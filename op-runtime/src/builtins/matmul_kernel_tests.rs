//! The f64 kernel is the reference's own order: bit for bit `builtins::matmul::<f64>` on tile
//! edges (fewer rows than a vector, fewer columns than a strip), several cache blocks of `k`,
//! B packed per chunk (too large to pack whole), special values, on every instruction set this
//! CPU has and on 1, 2 and 3 threads; and a negative control (a fused multiply-add in the same
//! order differs from it, so the comparison can fail). The f32 kernel's tests are in
//! `builtins/cpu_tests.rs`. Here, at the top floor, because they compare with the built-in's
//! reference (`kernels` sit below `builtins`).

use crate::backends::cpu::kernels::matmul::{matmul_f64, SHARED_PACK_MAX_BYTES};
use crate::backends::cpu::par::run_in;
use crate::backends::cpu::simd::{with_isa_override, Isa};
use crate::builtins;
use op_contract::sample::Rng;
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

/// The kernel against the reference on `a (m x k) * b (k x n)`, every isa, 1 to 3 threads.
fn check(a: &[f64], b: &[f64], m: usize, k: usize, n: usize, what: &str) {
    let want = builtins::matmul(a, b, m, k, n);
    for isa in Isa::available() {
        for threads in [1, 2, 3] {
            // A stale value in every element: the kernel must write each one.
            let mut got = vec![f64::from_bits(0x7ff4_0000_dead_beef); m * n];
            on(isa, threads, || matmul_f64(a, b, m, k, n, &mut got));
            if let Some(i) = first_difference(&got, &want) {
                panic!("{what} {m}x{k}x{n} {isa:?} {threads} threads: element {i}: {:e} vs the reference's {:e}", got[i], want[i]);
            }
        }
    }
}

#[test]
fn the_f64_kernel_is_bit_identical_to_the_reference_on_every_isa_and_thread_count() {
    let mut rng = Rng::new(51);
    let shapes = [
        (1usize, 1usize, 1usize),
        (3, 5, 7),
        (4, 17, 8),
        (7, 33, 15),
        (8, 256, 16),
        (9, 257, 17),
        (13, 300, 33),
        (70, 64, 45),
        (5, 1100, 20),
    ];
    for &(m, k, n) in &shapes {
        check(&values(&mut rng, m * k, -1.0, 1.0), &values(&mut rng, k * n, -1.0, 1.0), m, k, n, "uniform");
        // Biased: every partial sum rounds the same way (where a pairwise order would differ).
        check(&vec![0.1; m * k], &vec![0.3; k * n], m, k, n, "biased");
    }
    // Several cache blocks of k (blocks of 1024) with every thread count.
    let (m, k, n) = (11, 2100, 19);
    check(&values(&mut rng, m * k, 0.0, 1e3), &values(&mut rng, k * n, 0.0, 1e3), m, k, n, "long");
}

#[test]
fn the_f64_kernel_propagates_non_finite_values_as_the_reference() {
    // inf + MIN + MIN stays inf in order, MAX + MAX overflows, -inf * 0 is NaN, NaN propagates.
    let k = 40;
    let mut a = vec![f64::MIN; 3 * k];
    a[0] = f64::INFINITY;
    a[k] = f64::MAX;
    a[k + 1] = f64::MAX;
    a[2 * k + 5] = f64::NAN;
    let mut b = vec![1.0; k * 2];
    b[1] = 0.0;
    b[2 * 7 + 1] = f64::NEG_INFINITY;
    check(&a, &b, 3, k, 2, "specials");
}

#[test]
fn the_f64_kernel_packs_b_per_chunk_when_b_is_too_large_to_pack_whole() {
    // One column padded to a strip of 16: k * 16 * 8 bytes over the shared limit.
    let k = SHARED_PACK_MAX_BYTES / (16 * 8) + 300;
    let mut rng = Rng::new(52);
    let (a, b) = (values(&mut rng, 2 * k, -1.0, 1.0), values(&mut rng, k, -1.0, 1.0));
    let want = builtins::matmul(&a, &b, 2, k, 1);
    let mut got = vec![0f64; 2];
    on(Isa::detect(), 2, || matmul_f64(&a, &b, 2, k, 1, &mut got));
    assert_eq!(first_difference(&got, &want), None, "k = {k}: {got:?} vs {want:?}");
}

#[test]
fn a_fused_kernel_in_the_same_order_is_told_apart() {
    // Negative control: the comparison above can fail. A sequential sum with fused
    // multiply-adds differs from the reference's in some element of a random product.
    let mut rng = Rng::new(53);
    let (m, k, n) = (8, 300, 16);
    let (a, b) = (values(&mut rng, m * k, -1.0, 1.0), values(&mut rng, k * n, -1.0, 1.0));
    let fused: Vec<f64> = (0..m * n).map(|e| (0..k).fold(0.0, |s, p| a[e / n * k + p].mul_add(b[p * n + e % n], s))).collect();
    assert!(first_difference(&fused, &builtins::matmul(&a, &b, m, k, n)).is_some(), "the fused sum must differ somewhere");
    let mut got = vec![0f64; m * n];
    on(Isa::detect(), 1, || matmul_f64(&a, &b, m, k, n, &mut got));
    assert!(first_difference(&got, &fused).is_some(), "the kernel is not the fused sum");
}
