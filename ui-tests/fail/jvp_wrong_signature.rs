//! Rule: a JVP rule takes the reference's parameters then the input's tangent and returns the
//! output tangent; the generated shim's type check fails on the rule's path.

use op_runtime::{op, Real};

/// Wrong: returns one scalar instead of the output tangent.
pub fn double_jvp<T: Real>(_x: &[T], t: &[T]) -> T {
    t[0] + t[0]
}

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = jvp(double_jvp),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
