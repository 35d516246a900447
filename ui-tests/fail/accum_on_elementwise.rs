//! Rule (category x tolerance): `accum(k)` is for reductions and contractions; an elementwise op
//! has no accumulation.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = accum(4),
    backward = none,
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
