//! Rule: `jvp(...)` takes rules only; GPU kernels for the backward belong to the VJP op, in
//! `vjp(rule, kernel(...))`.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = jvp(double_jvp, kernel(wgsl = "../kernels/double_vjp.wgsl", bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n)),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

pub fn double_jvp<T: Real>(_x: &[T], t: &[T]) -> Vec<T> {
    t.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
