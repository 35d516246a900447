//! Test fixtures for `op_jax.conformance` and `op_jax.gradcheck`, registered only when a test
//! asks (`_register_verdict_fixtures`): user ops whose kernel or backward is wrong on purpose,
//! beside a correct one, so the tests can show a rejection's shape next to a receipt. Each is
//! `y = 2x` (or `x^3`) over `f32[n]`; the broken `cpu` kernels misbehave only for `n > 5`, so
//! the smallest cases pass and the rejection names a case that shows the defect.

use op_runtime::{op, Real};

/// `2x`, with a correct `cpu` kernel.
#[op(name = "user/op_jax_fixture/double", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(0), backward = none, cpu = double_cpu, generated_tests = false)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}
/// The correct kernel.
pub fn double_cpu(x: &[f32]) -> Vec<f32> {
    x.iter().map(|v| v + v).collect()
}

/// `2x`, whose `cpu` kernel reads one element ahead for `n > 5` (`out[i] = 2 x[i + 1]`, the last
/// element right): wrong on purpose, an output shifted by one.
#[op(name = "user/op_jax_fixture/double_shifted", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(0), backward = none, cpu = double_shifted_cpu, generated_tests = false)]
pub fn double_shifted<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}
/// Wrong on purpose (see [`double_shifted`]).
pub fn double_shifted_cpu(x: &[f32]) -> Vec<f32> {
    let n = x.len();
    if n <= 5 {
        return double_cpu(x);
    }
    (0..n).map(|i| 2.0 * x[(i + 1).min(n - 1)]).collect()
}

/// `2x`, whose `cpu` kernel aborts the process for `n > 5`: conformance runs a user op's `cpu`
/// kernel in a forked child process, so the abort is a verdict (`crashed`), not the end of the
/// Python process that asked for it.
#[op(name = "user/op_jax_fixture/double_aborts", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(0), backward = none, cpu = double_aborts_cpu, generated_tests = false)]
pub fn double_aborts<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}
/// Hostile on purpose (see [`double_aborts`]).
pub fn double_aborts_cpu(x: &[f32]) -> Vec<f32> {
    if x.len() > 5 {
        std::process::abort();
    }
    double_cpu(x)
}

/// `x^3` with a wrong VJP (`2 x^2 g` instead of `3 x^2 g`): gradcheck must reject it.
#[op(name = "user/op_jax_fixture/cube_bad_vjp", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(2), backward = vjp(cube_vjp_wrong), generated_tests = false)]
pub fn cube_bad_vjp<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * *v * *v).collect()
}
/// Wrong on purpose: the factor is 2.
pub fn cube_vjp_wrong<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    x.iter().zip(g).map(|(x, g)| T::from_f64(2.0) * *x * *x * *g).collect()
}

/// Every fixture above, in the order `_register_verdict_fixtures` registers them.
pub fn all() -> [&'static op_runtime::OpDecl; 4] {
    [&double::DECL, &double_shifted::DECL, &double_aborts::DECL, &cube_bad_vjp::DECL]
}
