use op_runtime::{op, Real};

/// Scales.
#[op(
    name = "ui/scale", version = 1,
    signature<T: f32 | f64>(x: T[n], s: f32[n]) -> T[n],
    category = elementwise, tolerance = ulp(1), backward = none,
)]
pub fn scale<T: Real>(x: &[T], s: &[f32]) -> Vec<T> {
    x.iter().zip(s).map(|(a, b)| *a * T::from_f64(*b as f64)).collect()
}

fn main() {}
