//! Rule: a 2-D launch of a CUDA kernel that never reads a `.y` component (`blockIdx.y`,
//! `threadIdx.y`) is refused: every row of the launch would repeat the same elements.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[m, n]) -> f32[m, n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
    kernel(cuda = "../kernels/double.cu", entry = "double_kernel", bindings(x: read, out: read_write, uniform(n)), threads = (n, m), block = (16, 16)),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
