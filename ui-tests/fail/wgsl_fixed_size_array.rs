//! Rule: a tensor binds to a runtime-sized WGSL array of its element type; `array<f32, 4>` would
//! silently drop every element past the fourth.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
    kernel(wgsl = "../kernels/fixed_array.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = n),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
