//! Rule: the `bounded(expr)` limit is an expression of bound symbols.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/positives",
    version = 1,
    signature(x: f32[n]) -> f32[k],
    category = selection,
    tolerance = exact,
    backward = none,
    output = bounded(cap),
)]
pub fn positives<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().copied().filter(|v| *v > T::zero()).collect()
}

fn main() {
    let _ = positives(&[1.0f32]);
}
