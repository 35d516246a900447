//! The example's windowed median (`user/example/windowed_median@1`, the project's guiding op),
//! compiled into this module from `examples/windowed_median/` itself (one source of truth: the
//! same files the root crate's tests and the other adapters include), so that `op_jax` serves it
//! out of the box. `op_jax` registers it in the process registry on import (the Python half
//! calls `_register_examples` before it registers its FFI targets), with its declared backward
//! (a VJP rule with a `cpu` kernel), so `jax.grad` runs through it, and its differentiable VJP
//! op (`examples/autodiff/median_vjp.rs`), so second order and `jax.jvp` do too. Both files are
//! modules at the crate root (`crate::median`, `crate::median_vjp`), where the VJP op's
//! `use crate::median` finds the median.
//!
//! Built without op-runtime's GPU features, its WGSL and CUDA kernels are declared but never
//! launched: on this build the median runs on its reference and its `cpu` kernels (`f32`,
//! `f64`; the backward's `f32`).

use pyo3::prelude::*;

/// The example ops `op_jax` serves out of the box: the median, and its VJP as a differentiable
/// op linked as the median's VJP op (second order, and forward mode by the VJP of the VJP), as
/// `examples/autodiff` links it.
pub fn register_all() -> PyResult<Vec<String>> {
    let id = crate::register(&crate::median::windowed_median::DECL)?;
    let h = op_runtime::registry().lookup(&id).map_err(|e| crate::RegistrationError::new_err(e.to_string()))?;
    if h.differentiable_vjp_op().is_none() {
        op_runtime::registry()
            .register_vjp_op(&id, &crate::median_vjp::windowed_median_vjp_op::DECL)
            .map_err(|e| crate::RegistrationError::new_err(e.to_string()))?;
    }
    Ok(vec![id])
}

/// Registers the example's ops in the process registry (the same identity again is a no-op) and
/// returns their `name@version`. `op_jax` calls it on import.
#[pyfunction]
pub fn _register_examples() -> PyResult<Vec<String>> {
    register_all()
}
