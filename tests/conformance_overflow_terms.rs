//! `accum` accepts an infinity where the f64 reference is finite only where some order of the
//! op's terms overflows a partial sum: where its positive (negative) terms sum to the overflow
//! threshold, `(S + r64) / 2` with `S` the sum of the terms' magnitudes. That share is read on
//! `S` without the measured sensitivity, which is not a sum of terms: for a sum of squares it
//! is `2 * r64`, and before, every result above `MAX / 1.5` could be `+inf` (a kernel that
//! overflows early, squaring `2x` and dividing by 4, was accepted there). Here that kernel is
//! rejected from `0.7 MAX` to `0.97 MAX`, where no order of positive terms can overflow, and
//! the correct f32 kernel is accepted on the same inputs over many seeds, and with its `+inf`
//! where the result itself passes `MAX`.

use op_runtime::conformance::{self, Case, ConformanceFailure, Pattern};
use op_runtime::{op, BackendKind, OpDecl, OpHandle, Real, Registry, Tensor};

/// `sum x^2`, with a pairwise f32 kernel.
#[op(name = "test/overflow_terms/sum_sq", version = 1, signature(x: f32[n]) -> f32[],
     category = reduction, tolerance = accum(2), backward = none, cpu = sum_sq_f32, generated_tests = false)]
pub fn sum_sq<T: Real>(x: &[T]) -> Vec<T> {
    vec![T::from_f64(x.iter().map(|v| v.to_f64() * v.to_f64()).sum())]
}

/// The same op with a kernel that squares `2x` and divides by 4: `+inf` from `MAX / 4` on.
#[op(name = "test/broken/overflow_terms/sum_sq_early_inf", version = 1, signature(x: f32[n]) -> f32[],
     category = reduction, tolerance = accum(2), backward = none, cpu = sum_sq_early_inf_f32, generated_tests = false)]
pub fn sum_sq_early_inf<T: Real>(x: &[T]) -> Vec<T> {
    sum_sq(x)
}

fn pairwise(x: &[f32]) -> f32 {
    match x.len() {
        0 => 0.0,
        1 => x[0],
        len => pairwise(&x[..len / 2]) + pairwise(&x[len / 2..]),
    }
}

fn sum_sq_f32(x: &[f32]) -> Vec<f32> {
    vec![pairwise(&x.iter().map(|v| v * v).collect::<Vec<_>>())]
}

fn sum_sq_early_inf_f32(x: &[f32]) -> Vec<f32> {
    vec![pairwise(&x.iter().map(|v| (2.0 * v) * (2.0 * v)).collect::<Vec<_>>()) / 4.0]
}

/// `n` values whose squares sum to `ratio * f32::MAX` (within f32 rounding).
fn values(seed: u64, ratio: f64) -> Vec<f32> {
    let mut rng = op_contract::sample::Rng::new(seed);
    let n = 2 + rng.index(200);
    let u: Vec<f64> = (0..n).map(|_| rng.uniform(0.5, 2.0)).collect();
    let sq: f64 = u.iter().map(|v| v * v).sum();
    let k = (ratio * f32::MAX as f64 / sq).sqrt();
    u.iter().map(|v| (v * k) as f32).collect()
}

fn case(h: &OpHandle, x: Vec<f32>, seed: u64) -> Case {
    let c = Case::of(&h.op(), vec![Tensor::vector(x)], vec![]).expect("fits the signature");
    Case { family: "a sum of squares near overflow (hand-made)", pattern: Pattern::Extremes, seed, ..c }
}

fn handle(decl: &'static OpDecl) -> OpHandle {
    Registry::new().register(decl).expect("registers")
}

const BELOW_MAX: [f64; 4] = [0.7, 0.8, 0.9, 0.97];

#[test]
fn an_infinity_below_max_is_rejected_where_no_order_of_the_terms_overflows() {
    let h = handle(&sum_sq_early_inf::DECL);
    for ratio in BELOW_MAX {
        for seed in 0..4 {
            let c = case(&h, values(seed, ratio), seed);
            match conformance::check_case(&h, BackendKind::Cpu, &c) {
                Err(ConformanceFailure::Rejected(r)) => {
                    let text = r.to_string();
                    assert!(text.contains("infinity where the f64 reference is"), "{ratio} MAX, {c}:\n{text}");
                }
                other => panic!("`+inf` for a sum of squares at {ratio} MAX must be rejected on {c}, got {other:?}"),
            }
        }
    }
}

#[test]
fn the_correct_kernel_is_accepted_near_and_past_max() {
    let h = handle(&sum_sq::DECL);
    for ratio in BELOW_MAX.into_iter().chain([1.01, 1.5]) {
        for seed in 0..25 {
            let x = values(seed, ratio);
            if ratio > 1.0 {
                assert_eq!(sum_sq_f32(&x)[0], f32::INFINITY, "past MAX the f32 kernel overflows");
            }
            let c = case(&h, x, seed);
            if let Err(e) = conformance::check_case(&h, BackendKind::Cpu, &c) {
                panic!("the f32 sum of squares accused at {ratio} MAX on {c}:\n{e}");
            }
        }
    }
}
