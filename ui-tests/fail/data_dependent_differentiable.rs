use op_runtime::{op, Real};

/// A data-dependent output with a declared VJP: gradients need static shapes.
#[op(name = "ui/fail/dd_vjp", version = 1, signature(x: f32[n]) -> f32[k], output = bounded(n),
     category = selection, tolerance = exact, backward = vjp(positives_vjp),
     subgradient = "routed to the kept elements")]
pub fn positives<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().copied().filter(|v| *v > T::zero()).collect()
}

pub fn positives_vjp<T: Real>(x: &[T], _g: &[T]) -> Vec<T> {
    vec![T::zero(); x.len()]
}

fn main() {
    let _ = positives(&[1.0f32]);
}
