use op_runtime::{op, Real};

/// A data-dependent output with a GPU kernel: launches need static output sizes.
#[op(name = "ui/fail/dd_kernel", version = 1, signature(x: f32[n]) -> f32[k], output = bounded(n),
     category = selection, tolerance = exact, backward = none,
     kernel(wgsl = "../kernels/double.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = n))]
pub fn positives<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().copied().filter(|v| *v > T::zero()).collect()
}

fn main() {
    let _ = positives(&[1.0f32]);
}
