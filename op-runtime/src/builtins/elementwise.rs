//! Elementwise built-ins (binary, unary, transcendental, relu) with their VJPs and their `cpu`
//! functions (the reference's signature at f32: allocate the output, run the vector kernel of
//! `backends::cpu::kernels::elementwise` over the CPU backend's threads).

use crate::backends::cpu::kernels::elementwise as kern;
use crate::core::hostmem;
use crate::{op, Real};
use std::mem::MaybeUninit;

/// `n` outputs of a binary `cpu` kernel: the reference zips its inputs, so the length is the
/// shorter one's (dispatch passes equal lengths).
fn binary_cpu(a: &[f32], b: &[f32], k: fn(&[f32], &[f32], &mut [MaybeUninit<f32>])) -> Vec<f32> {
    let n = a.len().min(b.len());
    let mut out = hostmem::with_capacity(n);
    k(&a[..n], &b[..n], &mut out.spare_capacity_mut()[..n]);
    // SAFETY: the kernel wrote every one of the `n` elements (see `kernels::elementwise`).
    unsafe { out.set_len(n) };
    out
}

/// The output of a unary `cpu` kernel (see [`binary_cpu`]).
fn unary_cpu(x: &[f32], k: impl Fn(&[f32], &mut [MaybeUninit<f32>])) -> Vec<f32> {
    let mut out = hostmem::with_capacity(x.len());
    k(x, &mut out.spare_capacity_mut()[..x.len()]);
    // SAFETY: the kernel wrote every element (see `kernels::elementwise`).
    unsafe { out.set_len(x.len()) };
    out
}

/// Elementwise sum `a + b`.
#[op(name = "builtin/add", version = 1, signature<T: f16 | bf16 | f32 | f64>(a: T[n], b: T[n]) -> T[n], broadcast = numpy,
     category = elementwise, tolerance = ulp(1), nan = propagate, backward = vjp(add_vjp, kernel(wgsl = "kernels/binary_vjp.wgsl", entry = "add_vjp", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n)), threads = n), kernel(cuda = "kernels/vjp.cu", entry = "add_vjp", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n)), threads = n, block = 256)), cpu(add_cpu, dtypes(T: f32)), kernel(wgsl = "kernels/add.wgsl", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n), kernel(cuda = "kernels/elementwise.cu", entry = "add", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn add<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().zip(b).map(|(x, y)| *x + *y).collect()
}
/// VJP of `add`.
pub fn add_vjp<T: Real>(_a: &[T], _b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    (g.to_vec(), g.to_vec())
}
/// `cpu` kernel of `add` (bit-identical to the reference).
fn add_cpu(a: &[f32], b: &[f32]) -> Vec<f32> {
    binary_cpu(a, b, kern::add)
}

/// Elementwise difference `a - b`.
#[op(name = "builtin/sub", version = 1, signature<T: f16 | bf16 | f32 | f64>(a: T[n], b: T[n]) -> T[n], broadcast = numpy,
     category = elementwise, tolerance = ulp(1), nan = propagate, backward = vjp(sub_vjp, kernel(wgsl = "kernels/binary_vjp.wgsl", entry = "sub_vjp", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n)), threads = n), kernel(cuda = "kernels/vjp.cu", entry = "sub_vjp", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n)), threads = n, block = 256)), cpu(sub_cpu, dtypes(T: f32)), kernel(wgsl = "kernels/sub.wgsl", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n), kernel(cuda = "kernels/elementwise.cu", entry = "sub", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn sub<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().zip(b).map(|(x, y)| *x - *y).collect()
}
/// VJP of `sub`.
pub fn sub_vjp<T: Real>(_a: &[T], _b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    (g.to_vec(), g.iter().map(|v| -*v).collect())
}
/// `cpu` kernel of `sub` (bit-identical to the reference).
fn sub_cpu(a: &[f32], b: &[f32]) -> Vec<f32> {
    binary_cpu(a, b, kern::sub)
}

/// Elementwise product `a * b`.
#[op(name = "builtin/mul", version = 1, signature<T: f16 | bf16 | f32 | f64>(a: T[n], b: T[n]) -> T[n], broadcast = numpy,
     category = elementwise, tolerance = ulp(1), nan = propagate, backward = vjp(mul_vjp, kernel(wgsl = "kernels/binary_vjp.wgsl", entry = "mul_vjp", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n)), threads = n), kernel(cuda = "kernels/vjp.cu", entry = "mul_vjp", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n)), threads = n, block = 256)), cpu(mul_cpu, dtypes(T: f32)), kernel(wgsl = "kernels/mul.wgsl", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n), kernel(cuda = "kernels/elementwise.cu", entry = "mul", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn mul<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().zip(b).map(|(x, y)| *x * *y).collect()
}
/// VJP of `mul`.
pub fn mul_vjp<T: Real>(a: &[T], b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    (g.iter().zip(b).map(|(g, b)| *g * *b).collect(), g.iter().zip(a).map(|(g, a)| *g * *a).collect())
}
/// `cpu` kernel of `mul` (bit-identical to the reference).
fn mul_cpu(a: &[f32], b: &[f32]) -> Vec<f32> {
    binary_cpu(a, b, kern::mul)
}

/// Elementwise quotient `a / b`.
#[op(name = "builtin/div", version = 1, signature<T: f16 | bf16 | f32 | f64>(a: T[n], b: T[n]) -> T[n], broadcast = numpy,
     category = elementwise, tolerance = ulp(3), nan = propagate, backward = vjp(div_vjp, kernel(wgsl = "kernels/binary_vjp.wgsl", entry = "div_vjp", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n)), threads = n), kernel(cuda = "kernels/vjp.cu", entry = "div_vjp", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n)), threads = n, block = 256)), cpu(div_cpu, dtypes(T: f32)), kernel(wgsl = "kernels/div.wgsl", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n), kernel(cuda = "kernels/elementwise.cu", entry = "div_kernel", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn div<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().zip(b).map(|(x, y)| *x / *y).collect()
}
/// VJP of `div`: `g / b` and `-g a / b^2`.
pub fn div_vjp<T: Real>(a: &[T], b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    let ga = g.iter().zip(b).map(|(g, b)| *g / *b).collect();
    let gb = g.iter().zip(a.iter().zip(b)).map(|(g, (a, b))| -(*g * *a) / (*b * *b)).collect();
    (ga, gb)
}
/// `cpu` kernel of `div` (bit-identical to the reference).
fn div_cpu(a: &[f32], b: &[f32]) -> Vec<f32> {
    binary_cpu(a, b, kern::div)
}

/// Negation `-x`.
#[op(name = "builtin/neg", version = 1, signature<T: f16 | bf16 | f32 | f64>(x: T[n]) -> T[n],
     category = elementwise, tolerance = ulp(0), nan = propagate, backward = vjp(neg_vjp, kernel(wgsl = "kernels/unary_vjp.wgsl", entry = "neg_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n), kernel(cuda = "kernels/vjp.cu", entry = "neg_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n, block = 256)), cpu(neg_cpu, dtypes(T: f32)), kernel(wgsl = "kernels/neg.wgsl", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n), kernel(cuda = "kernels/elementwise.cu", entry = "neg", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn neg<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| -*v).collect()
}
/// VJP of `neg`.
pub fn neg_vjp<T: Real>(_x: &[T], g: &[T]) -> Vec<T> {
    g.iter().map(|v| -*v).collect()
}
/// `cpu` kernel of `neg` (bit-identical to the reference).
fn neg_cpu(x: &[f32]) -> Vec<f32> {
    unary_cpu(x, kern::neg)
}

/// Scaling by a scalar parameter `s * x`.
#[op(name = "builtin/scale", version = 1, signature<T: f16 | bf16 | f32 | f64>(x: T[n], s: T) -> T[n],
     category = elementwise, tolerance = ulp(1), nan = propagate, backward = vjp(scale_vjp, kernel(wgsl = "kernels/scale_vjp.wgsl", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n, s)), threads = n), kernel(cuda = "kernels/vjp.cu", entry = "scale_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n, s)), threads = n, block = 256)), cpu(scale_cpu, dtypes(T: f32)), kernel(wgsl = "kernels/scale.wgsl", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n, s)), threads = n), kernel(cuda = "kernels/elementwise.cu", entry = "scale", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n, s)), threads = n, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn scale<T: Real>(x: &[T], s: T) -> Vec<T> {
    x.iter().map(|v| *v * s).collect()
}
/// VJP of `scale` (with respect to `x`; `s` is a parameter).
pub fn scale_vjp<T: Real>(_x: &[T], s: T, g: &[T]) -> Vec<T> {
    g.iter().map(|v| *v * s).collect()
}
/// `cpu` kernel of `scale` (bit-identical to the reference).
fn scale_cpu(x: &[f32], s: f32) -> Vec<f32> {
    unary_cpu(x, |x, o| kern::scale(x, s, o))
}

/// Natural exponential.
#[op(name = "builtin/exp", version = 1, signature<T: f16 | bf16 | f32 | f64>(x: T[n]) -> T[n],
     category = transcendental, tolerance = ulp(16), nan = propagate, backward = vjp(exp_vjp, kernel(wgsl = "kernels/exp_tanh_vjp.wgsl", entry = "exp_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n), kernel(cuda = "kernels/vjp.cu", entry = "exp_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n, block = 256)), cpu(exp_cpu, dtypes(T: f32)), kernel(wgsl = "kernels/exp_tanh.wgsl", entry = "exp_main", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n), kernel(cuda = "kernels/elementwise.cu", entry = "exp_kernel", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn exp<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| v.exp()).collect()
}
/// VJP of `exp`.
pub fn exp_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    // One product in f64, rounded once: `e^x` alone overflows or goes subnormal in `T` where
    // `e^x g` is an ordinary number.
    x.iter().zip(g).map(|(x, g)| T::from_f64(exp_times(x.to_f64(), g.to_f64()))).collect()
}
/// `e^x g` in f64. For a finite `x`, `e^x` is a positive finite number even where f64's `exp`
/// overflows (from 710 on) or underflows (below -745): a zero or infinite `g` is then the
/// product, and the product of the others is formed as `e^(x + ln |g|)`. Infinite and NaN `x`
/// follow IEEE's product.
fn exp_times(x: f64, g: f64) -> f64 {
    let e = x.exp();
    if !x.is_finite() || g.is_nan() || e.is_normal() {
        return e * g;
    }
    if g == 0.0 || g.is_infinite() {
        return g;
    }
    (x + g.abs().ln()).exp().copysign(g)
}
/// `cpu` kernel of `exp` (a vector polynomial within 1 ulp of `f32::exp`).
fn exp_cpu(x: &[f32]) -> Vec<f32> {
    unary_cpu(x, kern::exp)
}

/// Natural logarithm, defined on `x > 0` (its domain: conformance and gradcheck sample only
/// there; NaN propagates).
#[op(name = "builtin/log", version = 1, signature<T: f16 | bf16 | f32 | f64>(x: T[n]) -> T[n],
     category = transcendental, tolerance = ulp(16), nan = propagate, backward = vjp(log_vjp, kernel(wgsl = "kernels/unary_vjp.wgsl", entry = "log_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n), kernel(cuda = "kernels/vjp.cu", entry = "log_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n, block = 256)), domain(x > 0), cpu(log_cpu, dtypes(T: f32)), kernel(wgsl = "kernels/log.wgsl", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n), kernel(cuda = "kernels/elementwise.cu", entry = "log_kernel", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn log<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| v.ln()).collect()
}
/// VJP of `log`.
pub fn log_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    x.iter().zip(g).map(|(x, g)| *g / *x).collect()
}
/// `cpu` kernel of `log` (a vector polynomial within 1 ulp of `f32::ln`).
fn log_cpu(x: &[f32]) -> Vec<f32> {
    unary_cpu(x, kern::log)
}

/// Hyperbolic tangent.
#[op(name = "builtin/tanh", version = 1, signature<T: f16 | bf16 | f32 | f64>(x: T[n]) -> T[n],
     category = transcendental, tolerance = ulp(16), nan = propagate, backward = vjp(tanh_vjp, kernel(wgsl = "kernels/exp_tanh_vjp.wgsl", entry = "tanh_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n), kernel(cuda = "kernels/vjp.cu", entry = "tanh_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n, block = 256)), cpu(tanh_cpu, dtypes(T: f32)), kernel(wgsl = "kernels/exp_tanh.wgsl", entry = "tanh_main", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n), kernel(cuda = "kernels/elementwise.cu", entry = "tanh_kernel", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn tanh<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| v.tanh()).collect()
}
/// VJP of `tanh`: `g sech x sech x`, with `sech x = 2h / (1 + h h)`, `h = e^-|x|`. The
/// textbook `g (1 - tanh^2 x)` cancels where `|tanh x|` is near 1 (~500 ulps off at |x| = 4 in
/// f32, zero beyond |x| = 9); `4e / (1 + e)^2` with `e = e^-2|x|` goes subnormal long before
/// the result does (its few bits then scaled up by a large `g`). This form rounds into the
/// subnormals only where the result itself is that small, and never overflows (`sech x <= 1`).
pub fn tanh_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    let (one, two) = (T::one(), T::from_f64(2.0));
    x.iter()
        .zip(g)
        .map(|(x, g)| {
            let h = (T::zero() - x.abs()).exp();
            let q = two * h / (one + h * h);
            *g * q * q
        })
        .collect()
}
/// `cpu` kernel of `tanh` (a vector polynomial within 2 ulp of `f32::tanh`).
fn tanh_cpu(x: &[f32]) -> Vec<f32> {
    unary_cpu(x, kern::tanh)
}

/// Rectified linear unit `max(x, 0)`; NaN stays NaN.
#[op(name = "builtin/relu", version = 1, signature<T: f16 | bf16 | f32 | f64>(x: T[n]) -> T[n],
     category = selection, tolerance = exact, nan = propagate, backward = vjp(relu_vjp, kernel(wgsl = "kernels/unary_vjp.wgsl", entry = "relu_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n), kernel(cuda = "kernels/vjp.cu", entry = "relu_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n, block = 256)),
     subgradient = "zero at x = 0: the cotangent passes only where x > 0",
     cpu(relu_cpu, dtypes(T: f32)), kernel(wgsl = "kernels/relu.wgsl", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n), kernel(cuda = "kernels/elementwise.cu", entry = "relu", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn relu<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| if *v > T::zero() || v.is_nan() { *v } else { T::zero() }).collect()
}
/// VJP of `relu`.
pub fn relu_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    x.iter().zip(g).map(|(x, g)| if *x > T::zero() { *g } else { T::zero() }).collect()
}
/// `cpu` kernel of `relu` (bit-identical to the reference).
fn relu_cpu(x: &[f32]) -> Vec<f32> {
    unary_cpu(x, kern::relu)
}
