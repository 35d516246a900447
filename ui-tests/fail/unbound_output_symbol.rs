//! Rule: every symbol in an output dim is bound by an input dim or an integer parameter (static
//! shape class).

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[n]) -> f32[m],
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
