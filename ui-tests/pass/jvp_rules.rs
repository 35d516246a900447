//! A declared forward-mode backward: one JVP rule per differentiable input, in order.

use op_runtime::{op, Real};

/// Elementwise product.
#[op(
    name = "ui/pass/mul", version = 1,
    signature(a: f32[n], b: f32[n]) -> f32[n],
    category = elementwise, tolerance = ulp(0),
    backward = jvp(mul_jvp_a, mul_jvp_b),
)]
pub fn mul<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().zip(b).map(|(x, y)| *x * *y).collect()
}

/// Tangent along `a`: `ta * b`.
pub fn mul_jvp_a<T: Real>(_a: &[T], b: &[T], ta: &[T]) -> Vec<T> {
    ta.iter().zip(b).map(|(t, y)| *t * *y).collect()
}

/// Tangent along `b`: `a * tb`.
pub fn mul_jvp_b<T: Real>(a: &[T], _b: &[T], tb: &[T]) -> Vec<T> {
    a.iter().zip(tb).map(|(x, t)| *x * *t).collect()
}

pub(crate) fn main() {
    let op = op_runtime::RegisteredOp::load(&mul::DECL).expect("the declaration loads");
    println!("{} {}", op.id(), op.hash_hex());
    assert_eq!(mul::DECL.jvp.len(), 2);
}
