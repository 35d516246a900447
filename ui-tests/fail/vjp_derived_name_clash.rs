//! Rule: the VJP op names a cotangent `d_<output>` and a gradient `d_<input>`; an argument of
//! the op may not already have such a name.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[n], d_out: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = vjp(double_vjp, kernel(wgsl = "../kernels/double_vjp.wgsl", bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n)),
)]
pub fn double<T: Real>(x: &[T], d_out: &[T]) -> Vec<T> {
    x.iter().zip(d_out).map(|(a, b)| *a + *b).collect()
}

pub fn double_vjp<T: Real>(_x: &[T], _d: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    (g.to_vec(), g.to_vec())
}

fn main() {
    let _ = double(&[1.0f32], &[1.0f32]);
}
