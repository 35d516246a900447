//! Rule: a WGSL binding's access mode agrees with the descriptor (`x: read` but WGSL declares
//! `read_write`).

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
    kernel(wgsl = "../kernels/access_read_write.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = n),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
