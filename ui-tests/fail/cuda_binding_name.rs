//! Rule: CUDA parameters bind by position, so a named parameter carries the name of the tensor
//! bound to it (or the descriptor says `as`): swapped inputs would compute `b - a`.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/sub",
    version = 1,
    signature(a: f32[n], b: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
    kernel(cuda = "../kernels/sub_swapped.cu", bindings(a: read, b: read, out: read_write, uniform(n)), threads = n),
)]
pub fn sub<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().zip(b).map(|(x, y)| *x - *y).collect()
}

fn main() {
    let _ = sub(&[3.0f32], &[1.0f32]);
}
