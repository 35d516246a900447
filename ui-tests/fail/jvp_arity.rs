//! Rule: `jvp` lists one rule per differentiable input; the error names the op and both counts.

use op_runtime::{op, Real};

/// Tangent of `a * b` along `a`.
pub fn mul_jvp_a<T: Real>(_a: &[T], b: &[T], ta: &[T]) -> Vec<T> {
    ta.iter().zip(b).map(|(t, y)| *t * *y).collect()
}

#[op(
    name = "ui/test/mul",
    version = 1,
    signature(a: f32[n], b: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = jvp(mul_jvp_a),
)]
pub fn mul<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().zip(b).map(|(x, y)| *x * *y).collect()
}

fn main() {
    let _ = mul(&[1.0f32], &[2.0f32]);
}
