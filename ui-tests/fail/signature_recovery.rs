//! One syntax error inside `signature(...)` (the dtype of `w`) hides no other error: each
//! argument, constraint and output parses on its own, so the never-holding constraint and the
//! reference's wrong parameter type are reported in the same compile.

use op_runtime::op;

#[op(
    name = "ui/test/recover",
    version = 1,
    signature(x: f32[n], w: u3, y: f32[n] where n < n) -> f32[n],
    category = selection,
    tolerance = exact,
    backward = none,
)]
pub fn recover(x: &[f64], _w: u32, _y: &[f32]) -> Vec<f32> {
    x.iter().map(|v| *v as f32).collect()
}

fn main() {
    let _ = recover(&[1.0], 1, &[1.0]);
}
