//! Values: `magnitude(...)` bounds `|x|` away from zero (both signs are drawn); a smallest
//! magnitude of 0 is refused on the `0`.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/softsign",
    version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = ulp(4),
    backward = none,
    magnitude(x: 0..10),
)]
pub fn softsign<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v / (T::one() + v.abs())).collect()
}

fn main() {
    let _ = softsign(&[1.0f32]);
}
