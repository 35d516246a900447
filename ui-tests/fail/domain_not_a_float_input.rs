//! Values: `domain(...)` bounds the values of float tensor inputs; `w` is an integer parameter
//! (bound it with a `where` constraint instead).

use op_runtime::{op, Real};

#[op(
    name = "ui/test/scaled_log",
    version = 1,
    signature(x: f32[n], w: u32) -> f32[n],
    category = transcendental,
    tolerance = ulp(16),
    backward = none,
    domain(x > 0, w >= 1),
)]
pub fn scaled_log<T: Real>(x: &[T], w: u32) -> Vec<T> {
    x.iter().map(|v| v.ln() * T::from_f64(w as f64)).collect()
}

fn main() {
    let _ = scaled_log(&[1.0f32], 2);
}
