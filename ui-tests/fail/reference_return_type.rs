//! Rule: the reference returns one `Vec` per declared output.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[n]) -> (a: f32[n], b: f32[n]),
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
