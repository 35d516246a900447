//! Rule: WGSL buffers bind by slot, so each slot's global carries the tensor's name (or the
//! descriptor names the global with `as`): two same-typed inputs in swapped order would
//! otherwise compile and compute `b - a`.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/sub",
    version = 1,
    signature(a: f32[n], b: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
    kernel(wgsl = "../kernels/sub_swapped.wgsl", bindings(a: read, b: read, out: read_write, uniform(n)), threads = n),
)]
pub fn sub<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().zip(b).map(|(x, y)| *x - *y).collect()
}

fn main() {
    let _ = sub(&[3.0f32], &[1.0f32]);
}
