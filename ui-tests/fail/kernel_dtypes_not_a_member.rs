use op_runtime::{op, Real};

/// Doubles.
#[op(
    name = "ui/double", version = 1,
    signature<T: f16 | f32>(x: T[n]) -> T[n],
    category = elementwise, tolerance = ulp(0), backward = none,
    kernel(wgsl = "../kernels/generic_double.wgsl", dtypes(T: f32 | f64), bindings(x: read, out: read_write, uniform(n)), threads = n),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {}
