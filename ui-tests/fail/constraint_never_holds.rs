//! Rule: a constraint must be able to hold over the full range of its symbols' types: for a
//! `u32`, `w % 2` is always 0 or 1, so `w % 2 == 2` admits no input.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/windowed",
    version = 1,
    signature(x: f32[n], w: u32 where w % 2 == 2) -> f32[n],
    category = selection,
    tolerance = exact,
    backward = none,
)]
pub fn windowed<T: Real>(x: &[T], w: u32) -> Vec<T> {
    x.iter().step_by(w.max(1) as usize).copied().collect()
}

fn main() {
    let _ = windowed(&[1.0f32], 1);
}
