//! Rule: a uniform field is a CUDA scalar of the type the launcher passes: a dim is a 32-bit
//! `unsigned int`, not `int`.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
    kernel(cuda = "../kernels/double_signed_dim.cu", bindings(x: read, out: read_write, uniform(n)), threads = n),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
