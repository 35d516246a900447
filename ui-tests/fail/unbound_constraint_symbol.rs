//! Rule: every symbol in a constraint is bound by an input dim or an integer parameter.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[n], k: u32 where k <= len) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
)]
pub fn double<T: Real>(x: &[T], _k: u32) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32], 1);
}
