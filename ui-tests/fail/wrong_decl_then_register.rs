//! Errors stay single: a declaration with one mistake, used as the crate would use it
//! (registered, its identity read, the function called), gives that one error and no
//! follow-on error where the crate names the op's module.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/row_sum_registered",
    version = 1,
    signature(x: f32[m, n]) -> f32[m],
    category = reduction,
    tolerance = accum(0),
    backward = none,
)]
pub fn row_sum<T: Real>(x: &[T], m: usize, n: usize) -> Vec<T> {
    (0..m).map(|i| x[i * n..(i + 1) * n].iter().fold(T::zero(), |a, b| a + *b)).collect()
}

fn main() {
    let handle = op_runtime::register(&row_sum::DECL);
    let _ = (handle.is_ok(), row_sum::DECL.identity(), row_sum(&[1.0f32, 2.0], 1, 2));
}
