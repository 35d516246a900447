//! Rule: a launch has at least one thread whenever an output is non-empty; an extent that can be
//! 0 is reported on that extent.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[m, n]) -> f32[m, n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
    kernel(wgsl = "../kernels/rows_2d.wgsl", bindings(x: read, out: read_write, uniform(m, n)), threads = (n, 0)),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
