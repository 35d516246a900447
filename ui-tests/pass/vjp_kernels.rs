//! A backward with its own GPU kernel: `vjp(rule, kernel(...))` binds the op's input `x`, the
//! cotangent `d_out` and the gradient `d_x`. Registering the op registers its VJP op, whose
//! reference is the rule.

use op_runtime::{op, Real, Registry, Tensor};

#[op(
    name = "ui/test/double_vjp_kernel",
    version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = vjp(double_vjp, kernel(wgsl = "../kernels/double_vjp.wgsl", bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n)),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

pub fn double_vjp<T: Real>(_x: &[T], g: &[T]) -> Vec<T> {
    g.iter().map(|v| *v + *v).collect()
}

pub(crate) fn main() {
    let registry = Registry::new();
    let h = registry.register(&double::DECL).expect("registers");
    let vjp = h.vjp_op().expect("the VJP op is registered with the op");
    assert_eq!(vjp.id(), "ui/test/double_vjp_kernel/vjp@1");
    let (x, g) = (Tensor::vector(vec![1.0f32, 2.0]), Tensor::vector(vec![0.5f32, -1.0]));
    let d = vjp.call(&[&x, &g], &[]).expect("the VJP op runs").outputs;
    assert_eq!(d[0].as_slice::<f32>(), Some(&[1.0f32, -2.0][..]));
}
