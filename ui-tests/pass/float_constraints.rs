//! Constraints over float parameters: a clamp says `lo <= hi`, a dropout `0 <= p <= 1`, an
//! epsilon `eps > 0`; the checker finds each satisfiable and the contract carries them.

use op_runtime::{op, Real};

/// Clamps every element to `[lo, hi]`.
#[op(
    name = "ui/pass/clamp", version = 1,
    signature(x: f32[n], lo: f32, hi: f32 where lo <= hi) -> f32[n],
    category = selection, tolerance = exact,
    backward = none,
)]
pub fn clamp<T: Real>(x: &[T], lo: T, hi: T) -> Vec<T> {
    x.iter()
        .map(|v| {
            if *v < lo {
                lo
            } else if *v > hi {
                hi
            } else {
                *v
            }
        })
        .collect()
}

/// Scales by `1 / (1 - p)` (the kept elements of an inverted dropout), `eps` guarding the division.
#[op(
    name = "ui/pass/dropout_scale", version = 1,
    signature(x: f32[n], p: f32 where 0 <= p <= 1, eps: f32 where eps > 0) -> f32[n],
    category = elementwise, tolerance = ulp(2),
    backward = none,
)]
pub fn dropout_scale<T: Real>(x: &[T], p: T, eps: T) -> Vec<T> {
    let denom = if T::one() - p > eps { T::one() - p } else { eps };
    x.iter().map(|v| *v / denom).collect()
}

pub(crate) fn main() {
    let op = op_runtime::RegisteredOp::load(&clamp::DECL).expect("the declaration loads");
    println!("{} {}", op.id(), op.hash_hex());
    assert_eq!(op.contract().signature.float_constraints.len(), 1);
    assert!(clamp::DECL.contract_json.contains("float_constraints"));
    let op = op_runtime::RegisteredOp::load(&dropout_scale::DECL).expect("the declaration loads");
    assert_eq!(op.contract().signature.float_constraints.len(), 2);
    assert_eq!(clamp(&[-1.0f32, 0.5, 2.0], 0.0, 1.0), vec![0.0, 0.5, 1.0]);
}
