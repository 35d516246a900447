use op_runtime::{op, Real};

/// Doubles.
#[op(
    name = "ui/double", version = 1,
    signature<T:>(x: T[n]) -> T[n],
    category = elementwise, tolerance = ulp(0), backward = none,
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {}
