//! Rule: a WGSL entry that reads past `global_invocation_id.x` declares
//! `@builtin(num_workgroups)`: launches of any size run in rows `num_workgroups.x` wide.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
    kernel(wgsl = "../kernels/rows_without_width.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = n),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {}
