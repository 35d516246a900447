use op_runtime::{op, Real};

/// A data-dependent symbol inside an expression: its size could not be read off the data.
#[op(name = "ui/fail/dd_expr", version = 1, signature(x: f32[n]) -> f32[2 * k], output = dynamic,
     category = selection, tolerance = exact, backward = none)]
pub fn doubled_positives<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().copied().filter(|v| *v > T::zero()).flat_map(|v| [v, v]).collect()
}

fn main() {
    let _ = doubled_positives(&[1.0f32]);
}
