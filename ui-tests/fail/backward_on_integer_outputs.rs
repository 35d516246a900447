//! Rule: a differentiable op needs a float output to carry a gradient: an op whose outputs are
//! all integers (here an argmax) is `backward = none`.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/argmax",
    version = 1,
    signature(x: f32[n] where n >= 1) -> u32[],
    category = selection,
    tolerance = exact,
    backward = vjp(argmax_vjp),
    subgradient = "none",
)]
pub fn argmax<T: Real>(x: &[T]) -> Vec<u32> {
    let mut best = 0;
    for (i, v) in x.iter().enumerate() {
        if *v > x[best] {
            best = i;
        }
    }
    vec![best as u32]
}

/// No gradient flows through an index.
pub fn argmax_vjp<T: Real>(x: &[T], _g: &[u32]) -> Vec<T> {
    vec![T::zero(); x.len()]
}

fn main() {
    let _ = argmax(&[1.0f32, 2.0]);
}
