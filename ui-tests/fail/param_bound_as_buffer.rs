//! Rule: a scalar parameter is passed in `uniform(...)`, not as a buffer.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/scale",
    version = 1,
    signature(x: f32[n], alpha: f32) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
    kernel(wgsl = "../kernels/double.wgsl", bindings(x: read, out: read_write, alpha: read), threads = n),
)]
pub fn scale<T: Real>(x: &[T], alpha: T) -> Vec<T> {
    x.iter().map(|v| *v * alpha).collect()
}

fn main() {
    let _ = scale(&[1.0f32], 2.0);
}
