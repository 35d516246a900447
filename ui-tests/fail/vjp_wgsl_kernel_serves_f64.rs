//! Rule: a VJP WGSL kernel without `dtypes(...)` serves every member, and WGSL has no `f64`, as
//! for a forward kernel.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature<T: f64 | f32>(x: T[n]) -> T[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = vjp(double_vjp, kernel(wgsl = "../kernels/generic_double_vjp.wgsl", bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n)),
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
