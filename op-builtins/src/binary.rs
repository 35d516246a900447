//! Binary selection built-ins of the op library: `maximum` and `minimum`, broadcasting by
//! numpy's rules, with their VJPs (and VJP kernels) and their `cpu` functions
//! (`backends::cpu::kernels::pointwise`). Values are compared in IEEE total order (`-0 < +0`);
//! a NaN operand is the result (the first one if both are), as numpy's `maximum` does.

use crate::{op, Real};
use op_backends::cpu::kernels::pointwise::{self, filled};
use std::cmp::Ordering;

/// Whether `maximum`'s (or, with `Ordering::Less`, `minimum`'s) result at one element is `a`:
/// `a` is NaN, or `b` is not and `a` is on the `side` of `b` in total order or equal to it.
fn selects_a<T: Real>(a: T, b: T, side: Ordering) -> bool {
    a.is_nan() || (!b.is_nan() && a.total_cmp(&b) != side.reverse())
}

/// The elementwise larger of `a` and `b` in IEEE total order (NaN wins, `a`'s first).
#[op(name = "builtin/maximum", version = 1, signature<T: f16 | bf16 | f32 | f64>(a: T[n], b: T[n]) -> T[n], broadcast = numpy,
     category = selection, tolerance = exact, nan = propagate,
     backward = vjp(maximum_vjp,
        kernel(wgsl = "kernels/binary_lib_vjp.wgsl", entry = "maximum_vjp", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n)), threads = n),
        kernel(cuda = "kernels/binary_lib.cu", entry = "maximum_vjp", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n)), threads = n, block = 256)),
     subgradient = "the cotangent goes to the selected operand; at a tie (equal bits) to `a`",
     cpu(maximum_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/binary_lib.wgsl", entry = "maximum_main", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n),
     kernel(cuda = "kernels/binary_lib.cu", entry = "maximum_kernel", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n, block = 256),
     kernel(wgsl = "kernels/half_binary_lib.wgsl", entry = "maximum_half", dtypes(T: f16), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n),
     kernel(cuda = "kernels/half_lib.cu", entry = "maximum_half", dtypes(T: f16 | bf16), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn maximum<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().zip(b).map(|(a, b)| if selects_a(*a, *b, Ordering::Greater) { *a } else { *b }).collect()
}
/// VJP of `maximum`: the cotangent to the operand selected.
pub fn maximum_vjp<T: Real>(a: &[T], b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    route(a, b, g, Ordering::Greater)
}
/// `cpu` kernel of `maximum` (bit-identical).
fn maximum_cpu(a: &[f32], b: &[f32]) -> Vec<f32> {
    let n = a.len().min(b.len());
    filled(n, |o| pointwise::maximum(&a[..n], &b[..n], o))
}

/// The elementwise smaller of `a` and `b` in IEEE total order (NaN wins, `a`'s first).
#[op(name = "builtin/minimum", version = 1, signature<T: f16 | bf16 | f32 | f64>(a: T[n], b: T[n]) -> T[n], broadcast = numpy,
     category = selection, tolerance = exact, nan = propagate,
     backward = vjp(minimum_vjp,
        kernel(wgsl = "kernels/binary_lib_vjp.wgsl", entry = "minimum_vjp", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n)), threads = n),
        kernel(cuda = "kernels/binary_lib.cu", entry = "minimum_vjp", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n)), threads = n, block = 256)),
     subgradient = "the cotangent goes to the selected operand; at a tie (equal bits) to `a`",
     cpu(minimum_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/binary_lib.wgsl", entry = "minimum_main", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n),
     kernel(cuda = "kernels/binary_lib.cu", entry = "minimum_kernel", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n, block = 256),
     kernel(wgsl = "kernels/half_binary_lib.wgsl", entry = "minimum_half", dtypes(T: f16), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n),
     kernel(cuda = "kernels/half_lib.cu", entry = "minimum_half", dtypes(T: f16 | bf16), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn minimum<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().zip(b).map(|(a, b)| if selects_a(*a, *b, Ordering::Less) { *a } else { *b }).collect()
}
/// VJP of `minimum`: the cotangent to the operand selected.
pub fn minimum_vjp<T: Real>(a: &[T], b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    route(a, b, g, Ordering::Less)
}
/// `cpu` kernel of `minimum` (bit-identical).
fn minimum_cpu(a: &[f32], b: &[f32]) -> Vec<f32> {
    let n = a.len().min(b.len());
    filled(n, |o| pointwise::minimum(&a[..n], &b[..n], o))
}

/// Each cotangent to the operand the selection (on `side`) took.
fn route<T: Real>(a: &[T], b: &[T], g: &[T], side: Ordering) -> (Vec<T>, Vec<T>) {
    let mut ga = Vec::with_capacity(g.len());
    let mut gb = Vec::with_capacity(g.len());
    for ((a, b), g) in a.iter().zip(b).zip(g) {
        let on_a = selects_a(*a, *b, side);
        ga.push(if on_a { *g } else { T::zero() });
        gb.push(if on_a { T::zero() } else { *g });
    }
    (ga, gb)
}
