//! A data-dependent output size with a declared upper bound: `output = bounded(n)`.

use op_runtime::{op, Real};

/// The strictly positive elements of `x`, in order.
#[op(
    name = "ui/pass/positives", version = 1,
    signature(x: f32[n]) -> f32[k],
    output = bounded(n),
    category = selection, tolerance = exact,
    backward = none,
)]
pub fn positives<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().copied().filter(|v| *v > T::zero()).collect()
}

pub(crate) fn main() {
    println!("{}", op_spec_hex(&positives::DECL.hash));
    assert_eq!(positives(&[1.0f32, -1.0, 2.0]), vec![1.0, 2.0]);
}

fn op_spec_hex(h: &[u8; 32]) -> String {
    h.iter().map(|b| format!("{b:02x}")).collect()
}
