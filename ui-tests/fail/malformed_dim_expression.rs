//! Grammar 1: a dim expression is built from symbols, integers, `+ - * / % min max ( )`; a
//! dangling operator is an error at the token after it.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[n]) -> f32[n + * 2],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
