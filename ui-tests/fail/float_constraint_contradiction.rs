//! Rule: float constraints admit a value of each float parameter's type: `lo < hi`, `hi < 0` and
//! `lo > 1` together admit none.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/clamp",
    version = 1,
    signature(x: f32[n], lo: f32, hi: f32 where lo < hi, hi < 0, lo > 1) -> f32[n],
    category = selection,
    tolerance = exact,
    backward = none,
)]
pub fn clamp<T: Real>(x: &[T], lo: T, hi: T) -> Vec<T> {
    x.iter().map(|v| if *v < lo { lo } else if *v > hi { hi } else { *v }).collect()
}

fn main() {
    let _ = clamp(&[1.0f32], 0.0, 1.0);
}
