//! Rule: `threads` is >= 0 for every admissible input and >= 1 whenever an output is non-empty;
//! `n / 2` launches nothing for `n = 1`, leaving the one output element unwritten.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
    kernel(wgsl = "../kernels/double.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = n / 2),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
