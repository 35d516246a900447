//! Elementwise built-ins (binary, unary, transcendental, relu) with their VJPs and their `cpu`
//! functions, forward and backward: each generic over the float dtypes the signature declares
//! (`f16 | bf16 | f32 | f64`), allocating its output and running the kernel of
//! `backends::cpu::kernels` for that dtype (`dtype::Elem`) over the CPU backend's threads.

use crate::{op, Real};
use op_backends::cpu::kernels::dtype::{filled, Elem};
use op_backends::cpu::kernels::elementwise::{Bin, Un};

/// `n` outputs of a binary `cpu` kernel: the reference zips its inputs, so the length is the
/// shorter one's (dispatch passes equal lengths).
fn binary_cpu<T: Elem>(a: &[T], b: &[T], op: Bin) -> Vec<T> {
    let n = a.len().min(b.len());
    filled(n, |o| T::binary(op, &a[..n], &b[..n], o))
}

/// The output of a unary `cpu` kernel.
fn unary_cpu<T: Elem>(x: &[T], op: Un) -> Vec<T> {
    filled(x.len(), |o| T::unary(op, x, o))
}

/// The output of a VJP kernel of `x` and the cotangent `g` (zipped, as the rules zip them).
fn vjp_cpu<T: Elem>(x: &[T], g: &[T], k: fn(&[T], &[T], &mut [std::mem::MaybeUninit<T>])) -> Vec<T> {
    let n = x.len().min(g.len());
    filled(n, |o| k(&x[..n], &g[..n], o))
}

/// Elementwise sum `a + b`.
#[op(
    name = "builtin/add",
    version = 1,
    signature<T: f16 | bf16 | f32 | f64>(a: T[n], b: T[n]) -> T[n],
    broadcast = numpy,
    category = elementwise,
    tolerance = ulp(1),
    nan = propagate,
    backward = vjp(
        add_vjp,
        kernel(wgsl = "kernels/binary_vjp.wgsl", entry = "add_vjp", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n)), threads = n),
        kernel(cuda = "kernels/vjp.cu", entry = "add_vjp", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n)), threads = n, block = 256),
        cpu = add_vjp_cpu,
    ),
    cpu = add_cpu,
    kernel(wgsl = "kernels/add.wgsl", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n),
    kernel(cuda = "kernels/elementwise.cu", entry = "add", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n, block = 256),
    kernel(wgsl = "kernels/half_binary.wgsl", entry = "add_half", dtypes(T: f16), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n),
    kernel(cuda = "kernels/half.cu", entry = "add_half", dtypes(T: f16 | bf16), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n, block = 256),
    license = "MIT OR Apache-2.0",
    visibility = public,
)]
pub fn add<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().zip(b).map(|(x, y)| *x + *y).collect()
}
/// VJP of `add`.
pub fn add_vjp<T: Real>(_a: &[T], _b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    (g.to_vec(), g.to_vec())
}
/// `cpu` kernel of `add` (bit-identical to the reference).
fn add_cpu<T: Elem>(a: &[T], b: &[T]) -> Vec<T> {
    binary_cpu(a, b, Bin::Add)
}
/// `cpu` kernel of `add`'s VJP: the cotangent, twice.
fn add_vjp_cpu<T: Elem>(_a: &[T], _b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    (g.to_vec(), g.to_vec())
}

/// Elementwise difference `a - b`.
#[op(
    name = "builtin/sub",
    version = 1,
    signature<T: f16 | bf16 | f32 | f64>(a: T[n], b: T[n]) -> T[n],
    broadcast = numpy,
    category = elementwise,
    tolerance = ulp(1),
    nan = propagate,
    backward = vjp(
        sub_vjp,
        kernel(wgsl = "kernels/binary_vjp.wgsl", entry = "sub_vjp", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n)), threads = n),
        kernel(cuda = "kernels/vjp.cu", entry = "sub_vjp", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n)), threads = n, block = 256),
        cpu = sub_vjp_cpu,
    ),
    cpu = sub_cpu,
    kernel(wgsl = "kernels/sub.wgsl", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n),
    kernel(cuda = "kernels/elementwise.cu", entry = "sub", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n, block = 256),
    kernel(wgsl = "kernels/half_binary.wgsl", entry = "sub_half", dtypes(T: f16), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n),
    kernel(cuda = "kernels/half.cu", entry = "sub_half", dtypes(T: f16 | bf16), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n, block = 256),
    license = "MIT OR Apache-2.0",
    visibility = public,
)]
pub fn sub<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().zip(b).map(|(x, y)| *x - *y).collect()
}
/// VJP of `sub`.
pub fn sub_vjp<T: Real>(_a: &[T], _b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    (g.to_vec(), g.iter().map(|v| -*v).collect())
}
/// `cpu` kernel of `sub` (bit-identical to the reference).
fn sub_cpu<T: Elem>(a: &[T], b: &[T]) -> Vec<T> {
    binary_cpu(a, b, Bin::Sub)
}
/// `cpu` kernel of `sub`'s VJP: the cotangent and its negation.
fn sub_vjp_cpu<T: Elem>(_a: &[T], _b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    (g.to_vec(), unary_cpu(g, Un::Neg))
}

/// Elementwise product `a * b`.
#[op(
    name = "builtin/mul",
    version = 1,
    signature<T: f16 | bf16 | f32 | f64>(a: T[n], b: T[n]) -> T[n],
    broadcast = numpy,
    category = elementwise,
    tolerance = ulp(1),
    nan = propagate,
    backward = vjp(
        mul_vjp,
        kernel(wgsl = "kernels/binary_vjp.wgsl", entry = "mul_vjp", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n)), threads = n),
        kernel(cuda = "kernels/vjp.cu", entry = "mul_vjp", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n)), threads = n, block = 256),
        cpu = mul_vjp_cpu,
    ),
    cpu = mul_cpu,
    kernel(wgsl = "kernels/mul.wgsl", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n),
    kernel(cuda = "kernels/elementwise.cu", entry = "mul", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n, block = 256),
    kernel(wgsl = "kernels/half_binary.wgsl", entry = "mul_half", dtypes(T: f16), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n),
    kernel(cuda = "kernels/half.cu", entry = "mul_half", dtypes(T: f16 | bf16), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n, block = 256),
    license = "MIT OR Apache-2.0",
    visibility = public,
)]
pub fn mul<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().zip(b).map(|(x, y)| *x * *y).collect()
}
/// VJP of `mul`.
pub fn mul_vjp<T: Real>(a: &[T], b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    (g.iter().zip(b).map(|(g, b)| *g * *b).collect(), g.iter().zip(a).map(|(g, a)| *g * *a).collect())
}
/// `cpu` kernel of `mul` (bit-identical to the reference).
fn mul_cpu<T: Elem>(a: &[T], b: &[T]) -> Vec<T> {
    binary_cpu(a, b, Bin::Mul)
}
/// `cpu` kernel of `mul`'s VJP: `g b`, `g a` (bit-identical to the rule).
fn mul_vjp_cpu<T: Elem>(a: &[T], b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    (binary_cpu(g, b, Bin::Mul), binary_cpu(g, a, Bin::Mul))
}

/// Elementwise quotient `a / b`.
#[op(
    name = "builtin/div",
    version = 1,
    signature<T: f16 | bf16 | f32 | f64>(a: T[n], b: T[n]) -> T[n],
    broadcast = numpy,
    category = elementwise,
    tolerance = ulp(3),
    nan = propagate,
    backward = vjp(
        div_vjp,
        kernel(wgsl = "kernels/binary_vjp.wgsl", entry = "div_vjp", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n)), threads = n),
        kernel(cuda = "kernels/vjp.cu", entry = "div_vjp", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n)), threads = n, block = 256),
        cpu = div_vjp_cpu,
    ),
    cpu = div_cpu,
    kernel(wgsl = "kernels/div.wgsl", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n),
    kernel(cuda = "kernels/elementwise.cu", entry = "div_kernel", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n, block = 256),
    kernel(wgsl = "kernels/half_binary.wgsl", entry = "div_half", dtypes(T: f16), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n),
    kernel(cuda = "kernels/half.cu", entry = "div_half", dtypes(T: f16 | bf16), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n, block = 256),
    license = "MIT OR Apache-2.0",
    visibility = public,
)]
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
fn div_cpu<T: Elem>(a: &[T], b: &[T]) -> Vec<T> {
    binary_cpu(a, b, Bin::Div)
}
/// `cpu` kernel of `div`'s VJP: `g / b` and `-(g a) / (b b)`, the rule's operations in its
/// order (bit-identical to it).
fn div_vjp_cpu<T: Elem>(a: &[T], b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    let n = a.len().min(b.len()).min(g.len());
    let (a, b, g) = (&a[..n], &b[..n], &g[..n]);
    (binary_cpu(g, b, Bin::Div), filled(n, |o| T::div_db(a, b, g, o)))
}

/// Negation `-x`.
#[op(
    name = "builtin/neg",
    version = 1,
    signature<T: f16 | bf16 | f32 | f64>(x: T[n]) -> T[n],
    category = elementwise,
    tolerance = ulp(0),
    nan = propagate,
    backward = vjp(
        neg_vjp,
        kernel(wgsl = "kernels/unary_vjp.wgsl", entry = "neg_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n),
        kernel(cuda = "kernels/vjp.cu", entry = "neg_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n, block = 256),
        cpu = neg_vjp_cpu,
    ),
    cpu = neg_cpu,
    kernel(wgsl = "kernels/neg.wgsl", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n),
    kernel(cuda = "kernels/elementwise.cu", entry = "neg", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n, block = 256),
    kernel(wgsl = "kernels/half_unary.wgsl", entry = "neg_half", dtypes(T: f16), bindings(x: read, out: read_write, uniform(n)), threads = n),
    kernel(cuda = "kernels/half.cu", entry = "neg_half", dtypes(T: f16 | bf16), bindings(x: read, out: read_write, uniform(n)), threads = n, block = 256),
    license = "MIT OR Apache-2.0",
    visibility = public,
)]
pub fn neg<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| -*v).collect()
}
/// VJP of `neg`.
pub fn neg_vjp<T: Real>(_x: &[T], g: &[T]) -> Vec<T> {
    g.iter().map(|v| -*v).collect()
}
/// `cpu` kernel of `neg` (bit-identical to the reference).
fn neg_cpu<T: Elem>(x: &[T]) -> Vec<T> {
    unary_cpu(x, Un::Neg)
}
/// `cpu` kernel of `neg`'s VJP: the cotangent negated.
fn neg_vjp_cpu<T: Elem>(_x: &[T], g: &[T]) -> Vec<T> {
    unary_cpu(g, Un::Neg)
}

/// Scaling by a scalar parameter `s * x`.
#[op(
    name = "builtin/scale",
    version = 1,
    signature<T: f16 | bf16 | f32 | f64>(x: T[n], s: T) -> T[n],
    category = elementwise,
    tolerance = ulp(1),
    nan = propagate,
    backward = vjp(
        scale_vjp,
        kernel(wgsl = "kernels/scale_vjp.wgsl", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n, s)), threads = n),
        kernel(cuda = "kernels/vjp.cu", entry = "scale_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n, s)), threads = n, block = 256),
        cpu = scale_vjp_cpu,
    ),
    cpu = scale_cpu,
    kernel(wgsl = "kernels/scale.wgsl", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n, s)), threads = n),
    kernel(cuda = "kernels/elementwise.cu", entry = "scale", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n, s)), threads = n, block = 256),
    license = "MIT OR Apache-2.0",
    visibility = public,
)]
pub fn scale<T: Real>(x: &[T], s: T) -> Vec<T> {
    x.iter().map(|v| *v * s).collect()
}
/// VJP of `scale` (with respect to `x`; `s` is a parameter).
pub fn scale_vjp<T: Real>(_x: &[T], s: T, g: &[T]) -> Vec<T> {
    g.iter().map(|v| *v * s).collect()
}
/// `cpu` kernel of `scale` (bit-identical to the reference).
fn scale_cpu<T: Elem>(x: &[T], s: T) -> Vec<T> {
    filled(x.len(), |o| T::scale(x, s, o))
}
/// `cpu` kernel of `scale`'s VJP: the cotangent scaled (bit-identical to the rule).
fn scale_vjp_cpu<T: Elem>(_x: &[T], s: T, g: &[T]) -> Vec<T> {
    filled(g.len(), |o| T::scale(g, s, o))
}

/// Natural exponential.
#[op(
    name = "builtin/exp",
    version = 1,
    signature<T: f16 | bf16 | f32 | f64>(x: T[n]) -> T[n],
    category = transcendental,
    tolerance = ulp(16),
    nan = propagate,
    backward = vjp(
        exp_vjp,
        kernel(wgsl = "kernels/exp_tanh_vjp.wgsl", entry = "exp_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n),
        kernel(cuda = "kernels/vjp.cu", entry = "exp_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n, block = 256),
        cpu = exp_vjp_cpu,
    ),
    cpu = exp_cpu,
    kernel(wgsl = "kernels/exp_tanh.wgsl", entry = "exp_main", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n),
    kernel(cuda = "kernels/elementwise.cu", entry = "exp_kernel", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n, block = 256),
    kernel(wgsl = "kernels/half_unary.wgsl", entry = "exp_half", dtypes(T: f16), bindings(x: read, out: read_write, uniform(n)), threads = n),
    kernel(cuda = "kernels/half.cu", entry = "exp_half", dtypes(T: f16 | bf16), bindings(x: read, out: read_write, uniform(n)), threads = n, block = 256),
    license = "MIT OR Apache-2.0",
    visibility = public,
)]
pub fn exp<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| v.exp()).collect()
}
/// VJP of `exp`: `e^x g` as one product in f64, rounded once to `T`: in `T`, `e^x` alone
/// overflows or goes subnormal where `e^x g` is an ordinary number (rounded to a subnormal
/// first, it keeps as few as one bit, which a large `g` scales into a normal result).
pub fn exp_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    x.iter().zip(g).map(|(x, g)| T::from_f64(exp_times(x.to_f64(), g.to_f64()))).collect()
}
/// `e^x g` in f64. For a finite `x`, `e^x` is a positive finite number even where f64's `exp`
/// overflows (`x > 709.78`) or underflows (`x < -708.4`, subnormal, then zero): a zero or
/// infinite `g` is then the product, and any other `g` is scaled by `h = e^(x / 4)` four times
/// (`x / 4` is exact; each partial product lies between `g` and the result, so none overflows
/// or underflows where the result does not: within a few ulps). Infinite and NaN `x` follow
/// IEEE's product.
fn exp_times(x: f64, g: f64) -> f64 {
    let e = x.exp();
    if !x.is_finite() || g.is_nan() || e.is_normal() {
        return e * g;
    }
    if g == 0.0 || g.is_infinite() {
        return g;
    }
    let h = (x * 0.25).exp();
    g * h * h * h * h
}
/// `cpu` kernel of `exp` (a vector polynomial within 1 ulp of `f32::exp` / `f64::exp`).
fn exp_cpu<T: Elem>(x: &[T]) -> Vec<T> {
    unary_cpu(x, Un::Exp)
}
/// `cpu` kernel of `exp`'s VJP: the rule's product in f64 by the vector `exp`, rounded once
/// (see `kernels::vjp::exp_vjp_f32`).
fn exp_vjp_cpu<T: Elem>(x: &[T], g: &[T]) -> Vec<T> {
    vjp_cpu(x, g, T::exp_vjp)
}

/// Natural logarithm, defined on `x > 0` (its domain: conformance and gradcheck sample only
/// there; NaN propagates).
#[op(
    name = "builtin/log",
    version = 1,
    signature<T: f16 | bf16 | f32 | f64>(x: T[n]) -> T[n],
    category = transcendental,
    tolerance = ulp(16),
    nan = propagate,
    backward = vjp(
        log_vjp,
        kernel(wgsl = "kernels/unary_vjp.wgsl", entry = "log_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n),
        kernel(cuda = "kernels/vjp.cu", entry = "log_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n, block = 256),
        cpu = log_vjp_cpu,
    ),
    domain(x > 0),
    cpu = log_cpu,
    kernel(wgsl = "kernels/log.wgsl", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n),
    kernel(cuda = "kernels/elementwise.cu", entry = "log_kernel", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n, block = 256),
    kernel(wgsl = "kernels/half_unary.wgsl", entry = "log_half", dtypes(T: f16), bindings(x: read, out: read_write, uniform(n)), threads = n),
    kernel(cuda = "kernels/half.cu", entry = "log_half", dtypes(T: f16 | bf16), bindings(x: read, out: read_write, uniform(n)), threads = n, block = 256),
    license = "MIT OR Apache-2.0",
    visibility = public,
)]
pub fn log<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| v.ln()).collect()
}
/// VJP of `log`.
pub fn log_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    x.iter().zip(g).map(|(x, g)| *g / *x).collect()
}
/// `cpu` kernel of `log` (a vector polynomial within 1 ulp of `f32::ln` / `f64::ln`).
fn log_cpu<T: Elem>(x: &[T]) -> Vec<T> {
    unary_cpu(x, Un::Log)
}
/// `cpu` kernel of `log`'s VJP: `g / x` (bit-identical to the rule).
fn log_vjp_cpu<T: Elem>(x: &[T], g: &[T]) -> Vec<T> {
    let n = x.len().min(g.len());
    binary_cpu(&g[..n], &x[..n], Bin::Div)
}

/// Hyperbolic tangent.
#[op(
    name = "builtin/tanh",
    version = 1,
    signature<T: f16 | bf16 | f32 | f64>(x: T[n]) -> T[n],
    category = transcendental,
    tolerance = ulp(16),
    nan = propagate,
    backward = vjp(
        tanh_vjp,
        kernel(wgsl = "kernels/exp_tanh_vjp.wgsl", entry = "tanh_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n),
        kernel(cuda = "kernels/vjp.cu", entry = "tanh_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n, block = 256),
        cpu = tanh_vjp_cpu,
    ),
    cpu = tanh_cpu,
    kernel(wgsl = "kernels/exp_tanh.wgsl", entry = "tanh_main", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n),
    kernel(cuda = "kernels/elementwise.cu", entry = "tanh_kernel", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n, block = 256),
    kernel(wgsl = "kernels/half_unary.wgsl", entry = "tanh_half", dtypes(T: f16), bindings(x: read, out: read_write, uniform(n)), threads = n),
    kernel(cuda = "kernels/half.cu", entry = "tanh_half", dtypes(T: f16 | bf16), bindings(x: read, out: read_write, uniform(n)), threads = n, block = 256),
    license = "MIT OR Apache-2.0",
    visibility = public,
)]
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
/// `cpu` kernel of `tanh` (vector code within 2 ulp of the correctly rounded tanh in f32, of
/// `f64::tanh` in f64).
fn tanh_cpu<T: Elem>(x: &[T]) -> Vec<T> {
    unary_cpu(x, Un::Tanh)
}
/// `cpu` kernel of `tanh`'s VJP: the rule's form, `h` by the vector `exp`.
fn tanh_vjp_cpu<T: Elem>(x: &[T], g: &[T]) -> Vec<T> {
    vjp_cpu(x, g, T::tanh_vjp)
}

/// Rectified linear unit `max(x, 0)`; NaN stays NaN.
#[op(
    name = "builtin/relu",
    version = 1,
    signature<T: f16 | bf16 | f32 | f64>(x: T[n]) -> T[n],
    category = selection,
    tolerance = exact,
    nan = propagate,
    backward = vjp(
        relu_vjp,
        kernel(wgsl = "kernels/unary_vjp.wgsl", entry = "relu_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n),
        kernel(cuda = "kernels/vjp.cu", entry = "relu_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n, block = 256),
        cpu = relu_vjp_cpu,
    ),
    subgradient = "zero at x = 0: the cotangent passes only where x > 0",
    cpu = relu_cpu,
    kernel(wgsl = "kernels/relu.wgsl", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n),
    kernel(cuda = "kernels/elementwise.cu", entry = "relu", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n, block = 256),
    kernel(wgsl = "kernels/half_unary.wgsl", entry = "relu_half", dtypes(T: f16), bindings(x: read, out: read_write, uniform(n)), threads = n),
    kernel(cuda = "kernels/half.cu", entry = "relu_half", dtypes(T: f16 | bf16), bindings(x: read, out: read_write, uniform(n)), threads = n, block = 256),
    license = "MIT OR Apache-2.0",
    visibility = public,
)]
pub fn relu<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| if *v > T::zero() || v.is_nan() { *v } else { T::zero() }).collect()
}
/// VJP of `relu`.
pub fn relu_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    x.iter().zip(g).map(|(x, g)| if *x > T::zero() { *g } else { T::zero() }).collect()
}
/// `cpu` kernel of `relu` (bit-identical to the reference).
fn relu_cpu<T: Elem>(x: &[T]) -> Vec<T> {
    unary_cpu(x, Un::Relu)
}
/// `cpu` kernel of `relu`'s VJP: `x > 0 ? g : +0` (bit-identical to the rule).
fn relu_vjp_cpu<T: Elem>(x: &[T], g: &[T]) -> Vec<T> {
    vjp_cpu(x, g, T::relu_vjp)
}
