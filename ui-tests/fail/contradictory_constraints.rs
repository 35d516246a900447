//! Rule: the constraints together must admit some input; `k >= 8` and `k < 4` contradict.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/shift",
    version = 1,
    signature(x: f32[n], k: u32 where k >= 8, k < 4, k <= n) -> f32[n - k],
    category = selection,
    tolerance = exact,
    backward = none,
)]
pub fn shift<T: Real>(x: &[T], k: u32) -> Vec<T> {
    x.iter().skip(k as usize).copied().collect()
}

fn main() {
    let _ = shift(&[1.0f32, 2.0], 1);
}
