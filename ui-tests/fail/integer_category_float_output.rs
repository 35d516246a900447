//! Rule: `category = integer` is exact integer arithmetic; an op with a float output rounds, so
//! it is `elementwise` (or `selection`).

use op_runtime::op;

#[op(
    name = "ui/test/halve",
    version = 1,
    signature(x: f32[n]) -> f32[n],
    category = integer,
    tolerance = exact,
    backward = none,
)]
pub fn halve(x: &[f32]) -> Vec<f32> {
    x.iter().map(|v| v * 0.5).collect()
}

fn main() {
    let _ = halve(&[1.0]);
}
