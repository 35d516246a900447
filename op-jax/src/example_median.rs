//! The example's windowed median (`user/example/windowed_median@1`, the project's guiding op),
//! compiled into this module from `examples/windowed_median/` itself (one source of truth: the
//! same files the root crate's tests and the other adapters include), so that `op_jax` serves it
//! out of the box. `op_jax` registers it in the process registry on import (the Python half
//! calls `_register_examples` before it registers its FFI targets), with its declared backward
//! (a VJP rule with a `cpu` kernel), so `jax.grad` runs through it.
//!
//! Built without op-runtime's GPU features, its WGSL and CUDA kernels are declared but never
//! launched: on this build the median runs on its reference and its `cpu` kernels (`f32`,
//! `f64`; the backward's `f32`).

// The example's module, with its CPU kernels (`median_cpu.rs`, `median_net.rs`, `keys.rs`) and
// the kernel sources beside it, which its own `#[path]` attributes and `#[op]` resolve. Not every
// item of it is used here (the argmedian, the SIMD kernels' other entry points).
#[allow(dead_code, unused_imports)]
#[path = "../../examples/windowed_median/median.rs"]
pub mod median;

use pyo3::prelude::*;

/// The example ops `op_jax` serves out of the box.
pub fn register_all() -> PyResult<Vec<String>> {
    Ok(vec![crate::register(&median::windowed_median::DECL)?])
}

/// Registers the example's ops in the process registry (the same identity again is a no-op) and
/// returns their `name@version`. `op_jax` calls it on import.
#[pyfunction]
pub fn _register_examples() -> PyResult<Vec<String>> {
    register_all()
}
