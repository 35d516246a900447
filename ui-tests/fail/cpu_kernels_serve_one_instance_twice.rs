//! Rule: several `cpu(...)` kernels serve disjoint instances: one `cpu` kernel per instance.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature<T: f32 | f64>(x: T[n]) -> T[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
    cpu(double_f32, dtypes(T: f32)),
    cpu(double_any, dtypes(T: f64 | f32)),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

pub fn double_f32(x: &[f32]) -> Vec<f32> {
    x.iter().map(|v| v + v).collect()
}

pub fn double_any<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
