//! Rule: dims, `threads` and `bounded(..)` are integer expressions: a float parameter cannot
//! appear in one (it can in a constraint such as `alpha <= 1`).

use op_runtime::{op, Real};

#[op(
    name = "ui/test/scale",
    version = 1,
    signature(x: f32[n], alpha: f32) -> f32[n * alpha],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
)]
pub fn scale<T: Real>(x: &[T], alpha: T) -> Vec<T> {
    x.iter().map(|v| *v * alpha).collect()
}

fn main() {
    let _ = scale(&[1.0f32], 2.0);
}
