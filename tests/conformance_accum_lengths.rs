//! Each output of an `accum` op is bounded by the dims it contracts. A VJP's cotangents contract
//! different dims (`matmul`'s `d_a[m, k] = g b^T` sums `n` terms, `d_b[k, n] = a^T g` sums `m`)
//! and no dim is contracted by every output, so one length for the whole case (before: the
//! smallest input, 2 for a 1x2 by 2x30 product) accused the built-in WGSL VJP kernel, which sums
//! pairwise, of exceeding the bound on `d_a` (1.04x). Here a pairwise f32 kernel of those
//! gradients, and the built-in VJP kernels, are accepted on long contractions over many seeds,
//! and a kernel whose short output (`d_b` over `m = 2` terms) is off by 8 eps is still rejected
//! beside a long `d_a`: the long output's length does not loosen the short one's bound. That
//! twin was accepted before for another reason: the carry allowance of a scan (an input shaped
//! like an output) was read on every output, so `d_b` took the moves of `a` (shaped like `d_a`)
//! weighted by `|d_a|`, and its bound reached `sqrt(eps) * S`; each output now takes only its
//! own input's moves.

mod common;

use op_runtime::conformance::{self, Case, Class, ConformanceFailure, Pattern};
use op_runtime::{op, BackendKind, DType, OpHandle, Real, Registry, Tensor};

/// The gradients of `a b` as an op of their own, with a pairwise f32 kernel.
#[op(name = "test/accum_lengths/matmul_grads", version = 1,
     signature(a: f32[m, k], b: f32[k, n], g: f32[m, n]) -> (d_a: f32[m, k], d_b: f32[k, n]),
     category = contraction, tolerance = accum(2), backward = none, cpu = grads_pairwise)]
pub fn matmul_grads<T: Real>(a: &[T], b: &[T], g: &[T], m: usize, k: usize, n: usize) -> (Vec<T>, Vec<T>) {
    op_runtime::builtins::matmul_vjp(a, b, m, k, n, g)
}

/// The same op with a kernel at pairwise summation's worst case: each element off by
/// `(ceil(log2 len) + 1) * eps / 2 * S` (Higham 4.2, and a rounding of each product).
#[op(name = "test/accum_lengths/matmul_grads_worst", version = 1,
     signature(a: f32[m, k], b: f32[k, n], g: f32[m, n]) -> (d_a: f32[m, k], d_b: f32[k, n]),
     category = contraction, tolerance = accum(2), backward = none, cpu = grads_worst)]
pub fn matmul_grads_worst<T: Real>(a: &[T], b: &[T], g: &[T], m: usize, k: usize, n: usize) -> (Vec<T>, Vec<T>) {
    op_runtime::builtins::matmul_vjp(a, b, m, k, n, g)
}

/// The same op with a kernel whose `d_b` is 8 eps too large (`d_a` correct).
#[op(name = "test/broken/accum_lengths/matmul_grads_db_off", version = 1,
     signature(a: f32[m, k], b: f32[k, n], g: f32[m, n]) -> (d_a: f32[m, k], d_b: f32[k, n]),
     category = contraction, tolerance = accum(2), backward = none, cpu = grads_db_off, generated_tests = false)]
pub fn matmul_grads_db_off<T: Real>(a: &[T], b: &[T], g: &[T], m: usize, k: usize, n: usize) -> (Vec<T>, Vec<T>) {
    op_runtime::builtins::matmul_vjp(a, b, m, k, n, g)
}

/// `d_a = g b^T` and `d_b = a^T g`, each element from its factor pairs by `sum`; where a
/// product is not finite in f32, the exact products summed in f64 and rounded once (as the
/// reference: the drawn cases here are finite, the corpus's are not all).
fn grads_by(a: &[f32], b: &[f32], g: &[f32], (m, k, n): (usize, usize, usize), sum: fn(&[(f32, f32)]) -> f32) -> (Vec<f32>, Vec<f32>) {
    let element = |pairs: Vec<(f32, f32)>| {
        if pairs.iter().all(|(x, y)| (x * y).is_finite()) {
            sum(&pairs)
        } else {
            pairs.iter().map(|(x, y)| *x as f64 * *y as f64).sum::<f64>() as f32
        }
    };
    let d_a = (0..m * k).map(|t| element((0..n).map(|j| (g[t / k * n + j], b[t % k * n + j])).collect())).collect();
    let d_b = (0..k * n).map(|t| element((0..m).map(|i| (a[i * k + t / n], g[i * n + t % n])).collect())).collect();
    (d_a, d_b)
}

/// The f32 products summed pairwise.
fn grads_pairwise(a: &[f32], b: &[f32], g: &[f32], m: usize, k: usize, n: usize) -> (Vec<f32>, Vec<f32>) {
    grads_by(a, b, g, (m, k, n), |p| common::pairwise(&p.iter().map(|(x, y)| x * y).collect::<Vec<_>>()))
}

/// The exact sum moved up by pairwise summation's worst-case error over its length.
fn grads_worst(a: &[f32], b: &[f32], g: &[f32], m: usize, k: usize, n: usize) -> (Vec<f32>, Vec<f32>) {
    grads_by(a, b, g, (m, k, n), |p| {
        let terms = p.iter().map(|(x, y)| *x as f64 * *y as f64);
        let (r, s) = terms.fold((0.0, 0.0), |(r, s), t| (r + t, s + t.abs()));
        let depth = p.len().max(2).next_power_of_two().ilog2() as f64;
        (r + (depth + 1.0) * f32::EPSILON as f64 / 2.0 * s) as f32
    })
}

/// [`grads_pairwise`] with every `d_b` element scaled by `1 + 2^-20` (8 eps).
fn grads_db_off(a: &[f32], b: &[f32], g: &[f32], m: usize, k: usize, n: usize) -> (Vec<f32>, Vec<f32>) {
    let (d_a, d_b) = grads_pairwise(a, b, g, m, k, n);
    (d_a, d_b.into_iter().map(|v| v * (1.0 + 1.0 / (1u32 << 20) as f32)).collect())
}

/// Shapes `(m, k, n)` whose outputs contract very different lengths: the reported one
/// (`1 x 2` by `2 x 30`), long `n` with short `m` and `k`, and the reverse.
const SHAPES: [(usize, usize, usize); 5] = [(1, 2, 30), (1, 2, 1000), (2, 3, 700), (3, 1, 64), (500, 2, 1)];

/// The test's own draws, reproducible from a seed.
struct Draws(op_contract::sample::Rng);

impl Draws {
    /// A value in `[0.5, 2)`, negated half the time unless `positive`.
    fn value(&mut self, positive: bool) -> f32 {
        let v = self.0.uniform(0.5, 2.0) as f32;
        if positive || self.0.chance(0.5) {
            v
        } else {
            -v
        }
    }

    fn matrix(&mut self, rows: usize, cols: usize, positive: bool) -> Tensor {
        Tensor::new(vec![rows, cols], op_runtime::Data::F32((0..rows * cols).map(|_| self.value(positive)).collect())).expect("a matrix")
    }
}

/// A case of `h` (inputs `a`, `b`, `g` of a product of shape `(m, k, n)`) drawn from `seed`.
fn case(h: &OpHandle, (m, k, n): (usize, usize, usize), seed: u64, positive: bool) -> Case {
    let mut d = Draws(op_contract::sample::Rng::new(seed));
    let inputs = vec![d.matrix(m, k, positive), d.matrix(k, n, positive), d.matrix(m, n, positive)];
    let c = Case::of(&h.op(), inputs, vec![]).expect("the product's operands fit the VJP op");
    Case {
        family: "long and short contractions (hand-made)",
        pattern: if positive { Pattern::Positive } else { Pattern::Random },
        seed,
        ..c
    }
}

/// Asserts that `h` on `kind` is accepted on `seeds` drawn cases of every shape, of mixed signs
/// and positive (where roundings do not cancel).
fn accepted_over_seeds(h: &OpHandle, kind: BackendKind, seeds: u64) {
    for shape in SHAPES {
        for seed in 0..seeds {
            for positive in [false, true] {
                let c = case(h, shape, 0x1b53_42fe_af0a_925e ^ seed, positive);
                if let Err(e) = conformance::check_case(h, kind, &c) {
                    panic!("`{}` on {kind}, shape {shape:?}, seed {seed}: a correct kernel accused:\n{e}", h.id());
                }
            }
        }
    }
    eprintln!("`{}` on {kind}: accepted on {} drawn cases", h.id(), SHAPES.len() as u64 * seeds * 2);
}

/// The built-in `matmul`'s VJP op at f32.
fn builtin_matmul_vjp() -> OpHandle {
    let v = op_runtime::registry().lookup("builtin/matmul").expect("a built-in").vjp_op().expect("matmul declares VJP kernels");
    v.at(&[DType::f32]).expect("an f32 instance")
}

#[test]
fn a_pairwise_kernel_of_both_gradients_is_accepted_on_long_contractions() {
    let h = Registry::new().register(&matmul_grads::DECL).expect("registers");
    accepted_over_seeds(&h, BackendKind::Cpu, 40);
    accepted_over_seeds(&h, BackendKind::Reference, 4);
}

#[test]
fn a_kernel_at_pairwise_summation_s_worst_case_is_accepted_on_long_contractions() {
    // `d_a` of a 1 x 2 by 2 x 1000 product off by 5.5 eps * S: one length for the case (2)
    // rejected it.
    let h = Registry::new().register(&matmul_grads_worst::DECL).expect("registers");
    accepted_over_seeds(&h, BackendKind::Cpu, 40);
}

#[test]
fn the_builtin_matmul_vjp_kernels_are_accepted_on_long_contractions() {
    let h = builtin_matmul_vjp();
    accepted_over_seeds(&h, BackendKind::Cpu, 10);
    if common::wgpu_available() {
        accepted_over_seeds(&h, BackendKind::Wgpu, 10);
    }
    if common::cuda_available() {
        accepted_over_seeds(&h, BackendKind::Cuda, 10);
    }
}

#[test]
fn a_short_output_off_by_8_eps_is_rejected_beside_a_long_one() {
    let h = Registry::new().register(&matmul_grads_db_off::DECL).expect("registers");
    // `d_b` sums m = 2 positive terms (bound 2 * 1 * eps * S), `d_a` sums n = 1000.
    for seed in 0..8 {
        match conformance::check_case(&h, BackendKind::Cpu, &case(&h, (2, 3, 1000), seed, true)) {
            Err(ConformanceFailure::Rejected(r)) => {
                let first = r.first();
                assert!(matches!(first.class, Class::AccumBound(x) if x > 1.0), "seed {seed}: {r}");
                assert!(r.to_string().contains("d_b"), "seed {seed}: the report names the output:\n{r}");
            }
            other => panic!("seed {seed}: a d_b off by 8 eps must be rejected, got {other:?}"),
        }
    }
}
