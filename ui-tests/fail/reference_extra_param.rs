//! Rule: parameters after the signature's are `usize` dims named after a bound symbol.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
)]
pub fn double<T: Real>(x: &[T], len: usize) -> Vec<T> {
    x[..len].iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32], 1);
}
