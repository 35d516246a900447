//! Rule: a CUDA kernel binds by parameter order, so its parameter count equals the descriptor's
//! buffers plus uniform fields.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
    kernel(cuda = "../kernels/double.cu", bindings(x: read, out: read_write), threads = n),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
