//! Rule: a CUDA block holds at most 1024 threads in all, whatever its shape.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[m, n]) -> f32[m, n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
    kernel(cuda = "../kernels/rows_2d.cu", entry = "rows_2d", bindings(x: read, out: read_write, uniform(m, n)), threads = (n, m), block = (64, 32)),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
