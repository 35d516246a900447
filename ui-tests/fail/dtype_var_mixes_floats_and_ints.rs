use op_runtime::op;

/// Doubles.
#[op(
    name = "ui/double", version = 1,
    signature<T: f32 | u32>(x: T[n]) -> T[n],
    category = elementwise, tolerance = ulp(0), backward = none,
)]
pub fn double<T: Copy + std::ops::Add<Output = T>>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {}
