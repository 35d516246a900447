//! Grammar 3: a backward has at most one `vjp(path)`.

use op_runtime::{op, Real};

/// `dx = 2 g`.
pub fn double_vjp<T: Real>(_x: &[T], g: &[T]) -> Vec<T> {
    g.iter().map(|v| *v + *v).collect()
}

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = vjp(double_vjp) + vjp(double_vjp),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
