//! Rule: `limits(...)` declares only WebGPU limits above the defaults (a value within the default
//! declares nothing).

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
    kernel(wgsl = "../kernels/double.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = n, limits(max_compute_workgroup_size_x = 128)),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
