//! Rule: a VJP WGSL kernel cannot serve `bf16` (WGSL has no such type), as a forward kernel cannot.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature<T: bf16 | f32>(x: T[n]) -> T[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = vjp(double_vjp, kernel(wgsl = "../kernels/generic_double_vjp.wgsl", dtypes(T: bf16), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n)),
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
