//! Rule: a workgroup has no more dimensions than the launch: a 2-D `@workgroup_size` over a
//! 1-D launch (`threads = n`) is refused at compile time (its y invocations have no extent).

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
    kernel(wgsl = "../kernels/workgroup_2d.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = n),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
