//! Rule: the constraints together admit some input over the full range of their symbols (dims
//! up to 2^63 - 1): `n < m` with `m < n` admits none, however wide the range.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/pairs",
    version = 1,
    signature(x: f32[n, m] where n < m, m < n) -> f32[n],
    category = selection,
    tolerance = exact,
    backward = none,
)]
pub fn pairs<T: Real>(x: &[T]) -> Vec<T> {
    x.to_vec()
}

fn main() {
    let _ = pairs(&[1.0f32]);
}
