//! Rule: a `bounded(e)` limit is >= 0 for every admissible input (it bounds a size).

use op_runtime::{op, Real};

#[op(
    name = "ui/test/firsts",
    version = 1,
    signature(x: f32[n], m: u32) -> f32[k],
    output = bounded(m - n),
    category = selection,
    tolerance = exact,
    backward = none,
)]
pub fn firsts<T: Real>(x: &[T], m: u32) -> Vec<T> {
    x.iter().step_by(m.max(1) as usize).copied().collect()
}

fn main() {
    let _ = firsts(&[1.0f32], 1);
}
