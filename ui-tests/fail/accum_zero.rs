//! Grammar: `accum(k)` allows k units of accumulated rounding; `accum(0)` allows none, so it is
//! refused.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/row_sum",
    version = 1,
    signature(x: f32[m, n]) -> f32[m],
    category = reduction,
    tolerance = accum(0),
    backward = none,
)]
pub fn row_sum<T: Real>(x: &[T], m: usize, n: usize) -> Vec<T> {
    (0..m).map(|i| x[i * n..(i + 1) * n].iter().fold(T::zero(), |a, b| a + *b)).collect()
}

fn main() {
    let _ = row_sum(&[1.0f32, 2.0], 1, 2);
}
