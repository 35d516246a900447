//! Rule: a workgroup has no more dimensions than the launch: a z size needs a 3-D launch.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[m, n]) -> f32[m, n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
    kernel(wgsl = "../kernels/workgroup_3d.wgsl", bindings(x: read, out: read_write, uniform(m, n)), threads = (n, m)),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
