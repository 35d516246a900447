//! A differentiable f16 op written `<T: Real>`, as the docs advise: the expansion instantiates
//! the reference at `f16` (conformance) and `f64` (gradcheck); `Real` is implemented for
//! `half::f16` and `half::bf16`.

use op_runtime::{op, Real};

/// Elementwise square.
#[op(
    name = "ui/pass/square_f16", version = 1,
    signature(x: f16[n]) -> f16[n],
    category = elementwise, tolerance = ulp(1),
    backward = vjp(square_vjp),
)]
pub fn square<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * *v).collect()
}

/// `dx = 2 x g`.
pub fn square_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    x.iter().zip(g).map(|(v, g)| (*v + *v) * *g).collect()
}

pub(crate) fn main() {
    let op = op_runtime::RegisteredOp::load(&square::DECL).expect("the declaration loads");
    println!("{} {}", op.id(), op.hash_hex());
    assert!(square::DECL.reference_f64.is_some());
    assert!(square::DECL.vjp_f64.is_some());
}
