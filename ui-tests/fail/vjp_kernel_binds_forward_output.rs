//! Rule: a VJP kernel binds the VJP op's tensors; the op's own output `out` is not one of them (its cotangent is `d_out`).

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = vjp(double_vjp, kernel(wgsl = "../kernels/double_vjp.wgsl", bindings(x: read, out: read, d_x: read_write, uniform(n)), threads = n)),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

pub fn double_vjp<T: Real>(_x: &[T], g: &[T]) -> Vec<T> {
    g.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
