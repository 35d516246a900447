//! `accum` accepts an infinity where the f64 reference is finite only where some order of the
//! op's terms overflows a partial sum: where its positive (negative) terms sum to the overflow
//! threshold, `(T + r64) / 2` with `T` the sum of the terms' magnitudes. `T` is `|r64|`, the op
//! on `|x|`, and the measured sensitivities over the element's degree of homogeneity (see
//! `AccumScale::terms`). Before, the share was read on `S`, measured sensitivity included as
//! it is: for a sum of squares that is `2 r64`, and every result above `MAX / 1.5` could be
//! `+inf` (a kernel that overflows early, squaring `2x` and dividing by 4, was accepted there).
//! Here that kernel is rejected from `0.7 MAX` to `0.97 MAX`, where no order of positive terms
//! can overflow, and the correct f32 kernel is accepted on the same inputs over many seeds, and
//! with its `+inf` where the result itself passes `MAX`; a net of two sums whose every order
//! overflows keeps its NaN (the op on `|x|` cancels), one that overflows where no order of its
//! terms does is rejected; a product over a divisor, `x y / z`, is not taken for three terms;
//! a complex product whose terms overflow keeps its NaN.

mod common;

use common::pairwise;
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

/// `sum(x) - sum(y)`, with pairwise f32 sums.
#[op(name = "test/overflow_terms/net", version = 1, signature(x: f32[n], y: f32[n]) -> f32[],
     category = reduction, tolerance = accum(2), backward = none, cpu = net_f32, generated_tests = false)]
pub fn net<T: Real>(x: &[T], y: &[T]) -> Vec<T> {
    let sum = |v: &[T]| v.iter().map(|v| v.to_f64()).sum::<f64>();
    vec![T::from_f64(sum(x) - sum(y))]
}

/// The same op with a kernel that sums `4x` and `4y` and divides by 4: NaN from `MAX / 4` on.
#[op(name = "test/broken/overflow_terms/net_early_nan", version = 1, signature(x: f32[n], y: f32[n]) -> f32[],
     category = reduction, tolerance = accum(2), backward = none, cpu = net_early_nan_f32, generated_tests = false)]
pub fn net_early_nan<T: Real>(x: &[T], y: &[T]) -> Vec<T> {
    net(x, y)
}

fn net_f32(x: &[f32], y: &[f32]) -> Vec<f32> {
    vec![pairwise(x) - pairwise(y)]
}

fn net_early_nan_f32(x: &[f32], y: &[f32]) -> Vec<f32> {
    let four = |v: &[f32]| v.iter().map(|v| 4.0 * v).collect::<Vec<_>>();
    vec![(pairwise(&four(x)) - pairwise(&four(y))) / 4.0]
}

/// A net of two equal-length inputs, summing to `rx * MAX` and `ry * MAX`.
fn net_case(h: &OpHandle, seed: u64, (rx, ry): (f64, f64)) -> Case {
    let x = values(seed, 1.0);
    let scale = |v: &[f32], ratio: f64| {
        let s: f64 = v.iter().map(|v| *v as f64).sum();
        v.iter().map(|v| (*v as f64 * ratio * f32::MAX as f64 / s) as f32).collect::<Vec<_>>()
    };
    let (a, mut b) = (scale(&x, rx), scale(&x, ry));
    b.reverse();
    let c = Case::of(&h.op(), vec![Tensor::vector(a), Tensor::vector(b)], vec![]).expect("fits the signature");
    Case { family: "a net of two sums near overflow (hand-made)", pattern: Pattern::Extremes, seed, ..c }
}

#[test]
fn a_net_whose_every_order_overflows_keeps_its_nan_and_one_that_overflows_early_does_not() {
    // The sides sum to 1.5 and 1.4 MAX: every f32 order of either side overflows, and the
    // pairwise kernel returns `inf - inf`, NaN, where the exact net is 0.1 MAX (the op on `|x|`
    // too).
    let h = handle(&net::DECL);
    for seed in 0..25 {
        let c = net_case(&h, seed, (1.5, 1.4));
        assert!(net_f32(c.inputs[0].as_slice().unwrap(), c.inputs[1].as_slice().unwrap())[0].is_nan(), "{c}");
        if let Err(e) = conformance::check_case(&h, BackendKind::Cpu, &c) {
            panic!("a pairwise net of two overflowing sums accused on {c}:\n{e}");
        }
    }
    // The sides sum to 0.4 and 0.35 MAX: no order of the terms overflows; the kernel that
    // scales by 4 first does (NaN), and is rejected.
    let h = handle(&net_early_nan::DECL);
    for seed in 0..4 {
        let c = net_case(&h, seed, (0.4, 0.35));
        match conformance::check_case(&h, BackendKind::Cpu, &c) {
            Err(ConformanceFailure::Rejected(r)) => assert!(r.to_string().contains("NaN"), "{c}:\n{r}"),
            other => panic!("a NaN where no order of the terms overflows must be rejected on {c}, got {other:?}"),
        }
    }
}

/// `x * y / z`, elementwise, summed: a product over a divisor (degree 1 in all inputs
/// together, -1 in `z`).
#[op(name = "test/broken/overflow_terms/ratio_early_inf", version = 1, signature(x: f32[n], y: f32[n], z: f32[n]) -> f32[],
     category = reduction, tolerance = accum(2), backward = none, cpu = ratio_early_inf_f32, generated_tests = false)]
pub fn ratio_early_inf<T: Real>(x: &[T], y: &[T], z: &[T]) -> Vec<T> {
    vec![T::from_f64(x.iter().zip(y).zip(z).map(|((x, y), z)| x.to_f64() * y.to_f64() / z.to_f64()).sum())]
}

/// Wrong: `(2x) y / (2z)`, which overflows from `MAX / 2` on.
fn ratio_early_inf_f32(x: &[f32], y: &[f32], z: &[f32]) -> Vec<f32> {
    vec![pairwise(&x.iter().zip(y).zip(z).map(|((x, y), z)| (2.0 * x) * y / (2.0 * z)).collect::<Vec<_>>())]
}

/// `ar br - ai bi`, summed: the real part of a complex dot product (degree 2 in all inputs
/// together, 1 in each).
#[op(name = "test/overflow_terms/complex_real", version = 1, signature(ar: f32[n], ai: f32[n], br: f32[n], bi: f32[n]) -> f32[],
     category = reduction, tolerance = accum(2), backward = none, cpu = complex_real_f32, generated_tests = false)]
pub fn complex_real<T: Real>(ar: &[T], ai: &[T], br: &[T], bi: &[T]) -> Vec<T> {
    let f = |v: &T| v.to_f64();
    vec![T::from_f64((0..ar.len()).map(|i| f(&ar[i]) * f(&br[i]) - f(&ai[i]) * f(&bi[i])).sum())]
}

fn complex_real_f32(ar: &[f32], ai: &[f32], br: &[f32], bi: &[f32]) -> Vec<f32> {
    vec![pairwise(&(0..ar.len()).map(|i| ar[i] * br[i] - ai[i] * bi[i]).collect::<Vec<_>>())]
}

#[test]
fn an_infinity_below_max_is_rejected_for_a_product_over_a_divisor() {
    // One term, `x y / z` at 0.6 to 0.97 MAX with `y = z = 1`: no order overflows (`x y` is
    // the result), the kernel's `2x` does.
    let h = handle(&ratio_early_inf::DECL);
    for ratio in [0.6, 0.8, 0.97] {
        let x = Tensor::vector(vec![(ratio * f32::MAX as f64) as f32]);
        let c = Case::of(&h.op(), vec![x, Tensor::vector(vec![1.0f32]), Tensor::vector(vec![1.0f32])], vec![]).expect("fits");
        match conformance::check_case(&h, BackendKind::Cpu, &c) {
            Err(ConformanceFailure::Rejected(r)) => assert!(r.to_string().contains("infinity where the f64 reference is"), "{c}:\n{r}"),
            other => panic!("`+inf` for x y / z at {ratio} MAX must be rejected on {c}, got {other:?}"),
        }
    }
}

#[test]
fn a_complex_product_whose_terms_overflow_keeps_its_nan() {
    // `ar br = 9e38` and `ai bi = 8.4e38` overflow in f32 in any order (NaN from `inf - inf`);
    // the exact result, 5.9e37, is finite, and the op on `|x|` cancels as the op does.
    let h = handle(&complex_real::DECL);
    for seed in 0..8u64 {
        let jitter = 1.0 + seed as f32 * 1e-3;
        let v = |x: f32| Tensor::vector(vec![x * jitter]);
        let c = Case::of(&h.op(), vec![v(3e19), v(2.9e19), v(3e19), v(2.9e19)], vec![]).expect("fits");
        assert!(complex_real_f32(&[3e19 * jitter], &[2.9e19 * jitter], &[3e19 * jitter], &[2.9e19 * jitter])[0].is_nan());
        if let Err(e) = conformance::check_case(&h, BackendKind::Cpu, &c) {
            panic!("an f32 complex product whose terms overflow accused on {c}:\n{e}");
        }
    }
}

/// `g (x - mean) / std`: a standardisation, scale-invariant in `x` (degree 0).
#[op(name = "test/broken/overflow_terms/standardize_inf", version = 1, signature(x: f32[n], g: f32) -> f32[n],
     category = reduction, tolerance = accum(2), backward = none, cpu = standardize_inf_f32, generated_tests = false)]
pub fn standardize_inf<T: Real>(x: &[T], g: T) -> Vec<T> {
    let v: Vec<f64> = x.iter().map(|v| v.to_f64()).collect();
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let std = (v.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / v.len() as f64).sqrt();
    v.iter().map(|v| T::from_f64(g.to_f64() * (v - mean) / std)).collect()
}

/// Wrong: `+inf` for every positive element.
fn standardize_inf_f32(x: &[f32], g: f32) -> Vec<f32> {
    standardize_inf(x, g).into_iter().map(|v| if v > 0.0 { f32::INFINITY } else { v }).collect()
}

#[test]
fn an_infinity_on_an_ordinary_standardized_value_is_rejected() {
    // `x` near 1e37, spread 1e31, `g` 1e33: results near 1e33, far below MAX, while `x`'s
    // sensitivity (magnitudes that cancel in `x - mean`) is beyond MAX; it is not a sum of
    // terms (`x` enters with degree 0), and the infinities are rejected.
    let h = handle(&standardize_inf::DECL);
    let x = Tensor::vector((0..8).map(|k| 1e37f32 + k as f32 * 1e31).collect::<Vec<_>>());
    let c = Case::of(&h.op(), vec![x], vec![op_runtime::Scalar::F32(1e33)]).expect("fits");
    match conformance::check_case(&h, BackendKind::Cpu, &c) {
        Err(ConformanceFailure::Rejected(r)) => assert!(r.to_string().contains("infinity where the f64 reference is"), "{c}:\n{r}"),
        other => panic!("`+inf` on standardized values near 1e33 must be rejected on {c}, got {other:?}"),
    }
}
