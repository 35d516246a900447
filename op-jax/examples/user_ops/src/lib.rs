//! A user's own ops in JAX: the few lines a crate writes to build its ops into a Python module
//! that op_jax runs on (`import my_ops, op_jax`, then `op_jax.op("user/my_ops/cube")`).

use op_runtime::{op, Real};
use pyo3::prelude::*;

/// `x^3`, with its VJP rule `3 x^2 g`.
#[op(name = "user/my_ops/cube", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(2), backward = vjp(cube_vjp), generated_tests = false)]
pub fn cube<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|&v| v * v * v).collect()
}

/// The VJP of `cube`.
pub fn cube_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    x.iter().zip(g).map(|(&v, &g)| T::from_f64(3.0) * v * v * g).collect()
}

#[pymodule]
fn my_ops(m: &Bound<'_, PyModule>) -> PyResult<()> {
    op_jax::register(&cube::DECL)?;
    op_jax::init_module(m)
}
