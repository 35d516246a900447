//! Rule: no dim, constraint, `bounded` limit or `threads` divides (or takes `%`) by a value that
//! can be zero for an admissible input (the message gives one).

use op_runtime::{op, Real};

#[op(
    name = "ui/test/blocks",
    version = 1,
    signature(x: f32[n], w: u32) -> f32[n / w],
    category = selection,
    tolerance = exact,
    backward = none,
)]
pub fn blocks<T: Real>(x: &[T], w: u32) -> Vec<T> {
    x.iter().step_by(w.max(1) as usize).copied().collect()
}

fn main() {
    let _ = blocks(&[1.0f32], 1);
}
