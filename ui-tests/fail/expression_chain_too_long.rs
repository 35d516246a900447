//! Rule: what the macro accepts, the runtime reads back: a 62-term sum nests 61 operators deep,
//! past the limit (32) that keeps every contract within serde_json's recursion limit.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/wide",
    version = 1,
    signature(x: f32[n]) -> f32[n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n + n],
    category = selection,
    tolerance = exact,
    backward = none,
)]
pub fn wide<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().cycle().take(62 * x.len()).copied().collect()
}

fn main() {
    let _ = wide(&[1.0f32]);
}
