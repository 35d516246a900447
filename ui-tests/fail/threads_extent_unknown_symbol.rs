//! Rule: every extent of `threads` uses only dims and integer parameters; the error is on the
//! unknown symbol, here in the y extent.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[m, n]) -> f32[m, n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
    kernel(wgsl = "../kernels/rows_2d.wgsl", bindings(x: read, out: read_write, uniform(m, n)), threads = (n, q)),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
