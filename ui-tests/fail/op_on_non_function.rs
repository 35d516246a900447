//! Rule: `#[op]` goes on a free function, the op's reference implementation.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
)]
pub struct Double<T: Real>(pub Vec<T>);

fn main() {
    let _ = Double(vec![1.0f32]);
}
