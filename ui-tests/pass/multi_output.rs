//! Several outputs: the reference returns a tuple of `Vec`s and the VJP takes one cotangent per
//! output.

use op_runtime::{op, Real};

/// Splits `x` into its positive and negative parts.
#[op(
    name = "ui/pass/split_sign", version = 1,
    signature(x: f32[n]) -> (pos: f32[n], neg: f32[n]),
    category = elementwise, tolerance = ulp(0),
    backward = vjp(split_sign_vjp),
)]
pub fn split_sign<T: Real>(x: &[T]) -> (Vec<T>, Vec<T>) {
    let pos = x.iter().map(|v| if *v > T::zero() { *v } else { T::zero() }).collect();
    let neg = x.iter().map(|v| if *v < T::zero() { *v } else { T::zero() }).collect();
    (pos, neg)
}

/// Each element's cotangent comes from the part it landed in.
pub fn split_sign_vjp<T: Real>(x: &[T], gpos: &[T], gneg: &[T]) -> Vec<T> {
    x.iter()
        .zip(gpos.iter().zip(gneg))
        .map(|(v, (gp, gn))| {
            if *v > T::zero() {
                *gp
            } else if *v < T::zero() {
                *gn
            } else {
                T::zero()
            }
        })
        .collect()
}

pub(crate) fn main() {
    let op = op_runtime::RegisteredOp::load(&split_sign::DECL).expect("the declaration loads");
    println!("{} {}", op.id(), op.hash_hex());
    assert_eq!(op.contract().signature.outputs.len(), 2);
    assert_eq!(split_sign(&[1.0f32, -2.0]), (vec![1.0, 0.0], vec![0.0, -2.0]));
}
