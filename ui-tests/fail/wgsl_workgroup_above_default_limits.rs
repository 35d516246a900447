//! Rule: a WGSL workgroup stays within WebGPU's default limits (256 invocations; 256, 256, 64 per
//! dimension) unless the kernel declares the limits it needs with `limits(...)`.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[m, n]) -> f32[m, n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
    kernel(wgsl = "../kernels/rows_2d_32x32.wgsl", bindings(x: read, out: read_write, uniform(m, n)), threads = (n, m)),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
