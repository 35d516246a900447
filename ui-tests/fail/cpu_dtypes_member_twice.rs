//! Rule: a `dtypes(...)` selection lists each member once, as a dtype variable's set does.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    version = 1,
    signature<T: f32 | f64>(x: T[n]) -> T[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
    cpu(double_cpu, dtypes(T: f32 | f32)),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

pub fn double_cpu(x: &[f32]) -> Vec<f32> {
    x.iter().map(|v| v + v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
