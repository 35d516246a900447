//! A public op: a licence (valid SPDX) and a doc comment, which becomes its description.

use op_runtime::{op, Real};

/// Clamps every element to `[0, 1]`.
///
/// The kernel-free reference is the op's definition.
#[op(
    name = "ui/pass/clamp01", version = 3,
    signature(x: f32[n]) -> f32[n],
    category = elementwise, tolerance = ulp(0),
    backward = vjp(clamp01_vjp),
    kernel(wgsl = "../kernels/clamp01.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = n),
    license = "MIT OR Apache-2.0",
    visibility = public,
)]
pub fn clamp01<T: Real>(x: &[T]) -> Vec<T> {
    x.iter()
        .map(|v| {
            if *v < T::zero() {
                T::zero()
            } else if *v > T::one() {
                T::one()
            } else {
                *v
            }
        })
        .collect()
}

/// Passes the cotangent where the input was inside `(0, 1)`.
pub fn clamp01_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    x.iter().zip(g).map(|(v, g)| if *v > T::zero() && *v < T::one() { *g } else { T::zero() }).collect()
}

pub(crate) fn main() {
    let op = op_runtime::RegisteredOp::load(&clamp01::DECL).expect("the declaration loads");
    println!("{} {}", op.id(), op.hash_hex());
    assert!(clamp01::DECL.description.starts_with("Clamps every element"));
}
