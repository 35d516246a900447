//! Rule: a VJP takes the reference's parameters then one cotangent per output and returns one
//! gradient per float input; the generated shim's type check fails on the rule's path.

use op_runtime::{op, Real};

/// Wrong: forgets the cotangent parameter.
pub fn double_vjp<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|_| T::one() + T::one()).collect()
}

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = vjp(double_vjp),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
