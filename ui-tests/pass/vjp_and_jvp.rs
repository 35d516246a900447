//! Both backward forms at once: `vjp(..) + jvp(..)`.

use op_runtime::{op, Real};

/// Elementwise square.
#[op(
    name = "ui/pass/square", version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise, tolerance = ulp(0),
    backward = vjp(square_vjp) + jvp(square_jvp),
)]
pub fn square<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * *v).collect()
}

/// `dx = 2 x g`.
pub fn square_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    x.iter().zip(g).map(|(v, g)| (*v + *v) * *g).collect()
}

/// `dy = 2 x t`.
pub fn square_jvp<T: Real>(x: &[T], t: &[T]) -> Vec<T> {
    x.iter().zip(t).map(|(v, t)| (*v + *v) * *t).collect()
}

pub(crate) fn main() {
    let op = op_runtime::RegisteredOp::load(&square::DECL).expect("the declaration loads");
    println!("{} {}", op.id(), op.hash_hex());
    assert!(square::DECL.vjp.is_some());
    assert_eq!(square::DECL.jvp.len(), 1);
}
