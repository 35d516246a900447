use op_runtime::{op, Real};

/// Fills.
#[op(
    name = "ui/fill", version = 1,
    signature<T: f32 | f64>(n: u32) -> T[n],
    category = elementwise, tolerance = ulp(0), backward = none,
)]
pub fn fill<T: Real>(n: u32) -> Vec<T> {
    vec![T::one(); n as usize]
}

fn main() {}
