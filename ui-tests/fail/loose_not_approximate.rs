//! Rule (category x tolerance): `loose(rtol, atol)` is legal only for `approximate` ops.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[n]) -> f32[n],
    category = transcendental,
    tolerance = loose(1e-2, 1e-4),
    backward = none,
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
