//! Rule: a CUDA block has no more dimensions than the launch: `block = (16, 16)` needs
//! `threads = (x, y)`.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
    kernel(cuda = "../kernels/double.cu", entry = "double_kernel", bindings(x: read, out: read_write, uniform(n)), threads = n, block = (16, 16)),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
