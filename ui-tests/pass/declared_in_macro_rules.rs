//! `#[op]` inside a `macro_rules!` expansion: the generated shims are hygienic.
use op_runtime::{op, Real};

macro_rules! declare_scaled {
    ($name:ident, $op_name:literal, $k:literal) => {
        /// Multiplies by a constant.
        #[op(name = $op_name, version = 1, signature(x: f32[n]) -> f32[n],
             category = elementwise, tolerance = ulp(1), backward = vjp(scaled_vjp))]
        pub fn $name<T: Real>(x: &[T]) -> Vec<T> {
            x.iter().map(|v| *v * T::from_f64($k)).collect()
        }
    };
}

/// VJP shared by the generated ops (scale 3).
pub fn scaled_vjp<T: Real>(_x: &[T], g: &[T]) -> Vec<T> {
    g.iter().map(|v| *v * T::from_f64(3.0)).collect()
}

declare_scaled!(triple, "ui/pass/triple", 3.0);

pub(crate) fn main() {
    let op = op_runtime::RegisteredOp::load(&triple::DECL).expect("loads");
    let h = op_runtime::Registry::new().register(&triple::DECL).expect("registers");
    let x = op_runtime::Tensor::vector(vec![1.0f32, 2.0]);
    let out = h.call_with(&[&x], &[], op_runtime::CallOptions::on(op_runtime::BackendKind::Reference)).expect("runs");
    assert_eq!(out.outputs[0].as_slice::<f32>().expect("f32"), &[3.0, 6.0]);
    println!("{}", op.hash_hex());
}
