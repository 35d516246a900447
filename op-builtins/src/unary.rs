//! Unary built-ins of the op library: `abs`, `sqrt`, `square` and `sigmoid`, with their VJPs
//! (and VJP kernels) and their `cpu` functions (the reference's arithmetic at f32 per element,
//! chunked over the CPU backend's threads: `backends::cpu::kernels::pointwise`).

use crate::{op, Real};
use op_backends::cpu::kernels::pointwise::{self, filled};

/// Absolute value `|x|`: the sign bit cleared (NaN stays NaN, `-0` becomes `+0`).
#[op(name = "builtin/abs", version = 1, signature<T: f16 | bf16 | f32 | f64>(x: T[n]) -> T[n],
     category = selection, tolerance = exact, nan = propagate,
     backward = vjp(abs_vjp,
        kernel(wgsl = "kernels/unary_lib_vjp.wgsl", entry = "abs_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n),
        kernel(cuda = "kernels/unary_lib.cu", entry = "abs_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n, block = 256)),
     subgradient = "zero at x = 0: the cotangent passes where x > 0, negated where x < 0",
     cpu(abs_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/unary_lib.wgsl", entry = "abs_main", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n),
     kernel(cuda = "kernels/unary_lib.cu", entry = "abs_kernel", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n, block = 256),
     kernel(wgsl = "kernels/half_unary_lib.wgsl", entry = "abs_half", dtypes(T: f16), bindings(x: read, out: read_write, uniform(n)), threads = n),
     kernel(cuda = "kernels/half_lib.cu", entry = "abs_half", dtypes(T: f16 | bf16), bindings(x: read, out: read_write, uniform(n)), threads = n, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn abs<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| v.abs()).collect()
}
/// VJP of `abs`: `g` where `x > 0`, `-g` where `x < 0`, zero at 0 (and at NaN).
pub fn abs_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    x.iter()
        .zip(g)
        .map(|(x, g)| {
            if *x > T::zero() {
                *g
            } else if *x < T::zero() {
                -*g
            } else {
                T::zero()
            }
        })
        .collect()
}
/// `cpu` kernel of `abs` (bit-identical: the sign bit cleared).
fn abs_cpu(x: &[f32]) -> Vec<f32> {
    filled(x.len(), |o| pointwise::abs(x, o))
}

/// Square root, defined on `x >= 0` (its domain: conformance and gradcheck sample only there;
/// NaN propagates, `sqrt(-0) = -0`).
#[op(name = "builtin/sqrt", version = 1, signature<T: f16 | bf16 | f32 | f64>(x: T[n]) -> T[n],
     category = elementwise, tolerance = ulp(4), nan = propagate, domain(x >= 0),
     backward = vjp(sqrt_vjp,
        kernel(wgsl = "kernels/unary_lib_vjp.wgsl", entry = "sqrt_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n),
        kernel(cuda = "kernels/unary_lib.cu", entry = "sqrt_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n, block = 256)),
     cpu(sqrt_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/unary_lib.wgsl", entry = "sqrt_main", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n),
     kernel(cuda = "kernels/unary_lib.cu", entry = "sqrt_kernel", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n, block = 256),
     kernel(wgsl = "kernels/half_unary_lib.wgsl", entry = "sqrt_half", dtypes(T: f16), bindings(x: read, out: read_write, uniform(n)), threads = n),
     kernel(cuda = "kernels/half_lib.cu", entry = "sqrt_half", dtypes(T: f16 | bf16), bindings(x: read, out: read_write, uniform(n)), threads = n, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn sqrt<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| v.sqrt()).collect()
}
/// VJP of `sqrt`: `g / (2 sqrt x)`.
pub fn sqrt_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    let two = T::from_f64(2.0);
    x.iter().zip(g).map(|(x, g)| *g / (two * x.sqrt())).collect()
}
/// `cpu` kernel of `sqrt` (bit-identical: IEEE square root).
fn sqrt_cpu(x: &[f32]) -> Vec<f32> {
    filled(x.len(), |o| pointwise::sqrt(x, o))
}

/// Square `x x`.
#[op(name = "builtin/square", version = 1, signature<T: f16 | bf16 | f32 | f64>(x: T[n]) -> T[n],
     category = elementwise, tolerance = ulp(1), nan = propagate,
     backward = vjp(square_vjp,
        kernel(wgsl = "kernels/unary_lib_vjp.wgsl", entry = "square_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n),
        kernel(cuda = "kernels/unary_lib.cu", entry = "square_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n, block = 256)),
     cpu(square_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/unary_lib.wgsl", entry = "square_main", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n),
     kernel(cuda = "kernels/unary_lib.cu", entry = "square_kernel", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n, block = 256),
     kernel(wgsl = "kernels/half_unary_lib.wgsl", entry = "square_half", dtypes(T: f16), bindings(x: read, out: read_write, uniform(n)), threads = n),
     kernel(cuda = "kernels/half_lib.cu", entry = "square_half", dtypes(T: f16 | bf16), bindings(x: read, out: read_write, uniform(n)), threads = n, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn square<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * *v).collect()
}
/// VJP of `square`: `(x + x) g`.
pub fn square_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    x.iter().zip(g).map(|(x, g)| (*x + *x) * *g).collect()
}
/// `cpu` kernel of `square` (bit-identical).
fn square_cpu(x: &[f32]) -> Vec<f32> {
    filled(x.len(), |o| pointwise::square(x, o))
}

/// Logistic sigmoid `1 / (1 + e^-x)`.
#[op(name = "builtin/sigmoid", version = 1, signature<T: f16 | bf16 | f32 | f64>(x: T[n]) -> T[n],
     category = transcendental, tolerance = ulp(16), nan = propagate,
     backward = vjp(sigmoid_vjp,
        kernel(wgsl = "kernels/unary_lib_vjp.wgsl", entry = "sigmoid_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n),
        kernel(cuda = "kernels/unary_lib.cu", entry = "sigmoid_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n, block = 256)),
     cpu(sigmoid_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/unary_lib.wgsl", entry = "sigmoid_main", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n),
     kernel(cuda = "kernels/unary_lib.cu", entry = "sigmoid_kernel", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n, block = 256),
     kernel(wgsl = "kernels/half_unary_lib.wgsl", entry = "sigmoid_half", dtypes(T: f16), bindings(x: read, out: read_write, uniform(n)), threads = n),
     kernel(cuda = "kernels/half_lib.cu", entry = "sigmoid_half", dtypes(T: f16 | bf16), bindings(x: read, out: read_write, uniform(n)), threads = n, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn sigmoid<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| T::one() / (T::one() + (-*v).exp())).collect()
}
/// VJP of `sigmoid`: `g h / (1 + h)^2` with `h = e^-|x|`, which is `g s (1 - s)` without the
/// cancellation of `1 - s` where `s` is near 1. Beyond `|x| = 64`, `1 + h` rounds to 1 and `h`
/// itself may be subnormal (a few bits, then scaled up by a large `g`), so it is formed as
/// `e^-(|x| - 44)` (the subtraction is exact there), multiplied by `g`, then by `e^-44`: the
/// result rounds into the subnormals only where it is itself that small.
pub fn sigmoid_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    x.iter()
        .zip(g)
        .map(|(x, g)| {
            let a = x.abs();
            if a > T::from_f64(64.0) {
                return *g * (-(a - T::from_f64(44.0))).exp() * T::from_f64(E_MINUS_44);
            }
            let h = (-a).exp();
            let d = T::one() + h;
            *g * (h / (d * d))
        })
        .collect()
}

/// `e^-44` (as f32: `0x1fb7ba0f`, the constant the kernels use).
const E_MINUS_44: f64 = 7.781132241133797e-20;
/// `cpu` kernel of `sigmoid` (the reference's formula with the vector `exp`: within 3 ulp).
fn sigmoid_cpu(x: &[f32]) -> Vec<f32> {
    filled(x.len(), |o| pointwise::sigmoid(x, o))
}
