//! Gradcheck never accuses a correct rule of the rounding its forward makes: a moving sum
//! computed as differences of prefix sums (the fast, textbook way) rounds each output at the
//! scale of the prefix sums, which at the default magnitudes (1e-3..1e3, both signs) far
//! exceeds the window's sum; the outputs alone cannot show that. Its correct VJP passes across
//! many seeds; a VJP off by 1e-4 at one element is rejected on every one of them (the wrong
//! fixture declares `generated_tests = false`: the test below asserts its rejection).

use op_runtime::gradcheck::{gradcheck_with, GradcheckError, GradcheckOptions};
use op_runtime::{op, Real};

/// Sums of `w` consecutive elements, as differences of the running sum.
fn prefix_moving_sum<T: Real>(x: &[T], w: u32) -> Vec<T> {
    let mut prefix = vec![T::zero()];
    for v in x {
        let last = prefix[prefix.len() - 1];
        prefix.push(last + *v);
    }
    let w = w as usize;
    (0..x.len() + 1 - w).map(|i| prefix[i + w] - prefix[i]).collect()
}
/// Each element's cotangent: the sum of the cotangents of the windows holding it.
fn window_vjp<T: Real>(x: &[T], w: u32, g: &[T]) -> Vec<T> {
    let mut d = vec![T::zero(); x.len()];
    for (i, gi) in g.iter().enumerate() {
        for dj in &mut d[i..i + w as usize] {
            *dj += *gi;
        }
    }
    d
}

/// Moving sum by prefix differences, with its correct VJP.
#[op(name = "test/cancel/moving_sum", version = 1,
     signature(x: f64[n], w: u32 where 1 <= w, w <= n) -> f64[n - w + 1],
     category = reduction, tolerance = accum(2), backward = vjp(moving_sum_vjp))]
pub fn moving_sum<T: Real>(x: &[T], w: u32) -> Vec<T> {
    prefix_moving_sum(x, w)
}
/// The VJP: [`window_vjp`].
pub fn moving_sum_vjp<T: Real>(x: &[T], w: u32, g: &[T]) -> Vec<T> {
    window_vjp(x, w, g)
}

/// The same moving sum whose VJP is off by a relative 1e-4 at its first element.
#[op(name = "test/bad/moving_sum_first", version = 1,
     signature(x: f64[n], w: u32 where 1 <= w, w <= n) -> f64[n - w + 1],
     category = reduction, tolerance = accum(2), backward = vjp(moving_sum_first_vjp), generated_tests = false)]
pub fn moving_sum_first<T: Real>(x: &[T], w: u32) -> Vec<T> {
    prefix_moving_sum(x, w)
}
/// Wrong: the first element's cotangent scaled by `1 + 1e-4`.
pub fn moving_sum_first_vjp<T: Real>(x: &[T], w: u32, g: &[T]) -> Vec<T> {
    let mut d = window_vjp(x, w, g);
    d[0] = d[0] * T::from_f64(1.0 + 1e-4);
    d
}

#[test]
fn a_cancelling_forward_never_accuses_its_correct_rule_and_still_rejects_a_wrong_one() {
    for salt in 0..48u64 {
        let o = GradcheckOptions { salt, ..GradcheckOptions::default() };
        let r = gradcheck_with(op_runtime::registry(), &moving_sum::DECL, &o).unwrap_or_else(|e| panic!("salt {salt}: {e}"));
        assert!(r.to_string().contains("negative control : corrupted vjp REJECTED"), "{r}");
        match gradcheck_with(op_runtime::registry(), &moving_sum_first::DECL, &o) {
            Err(GradcheckError::Mismatch { .. }) => {}
            other => panic!("salt {salt}: the wrong VJP must be rejected, got {other:?}"),
        }
    }
}
