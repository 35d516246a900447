//! Masks and selection by mask: the comparisons `greater`, `less` and `equal` (a `u32` mask of
//! 0 and 1: `bool` and `u8` have no WGSL storage type), their `bool`-mask twins `greater_bool`,
//! `less_bool` and `equal_bool` (host backends only), and `where`, whose mask is `u32`, `bool`
//! or `u8` (GPU kernels for `u32` only), each broadcasting by numpy's rules, with their `cpu`
//! functions (here, and `where`'s on a `u32` mask in `backends::cpu::kernels::pointwise`) and
//! `where`'s VJP, which gives the mask no gradient.
//! Comparisons follow IEEE 754 (a NaN compares false with everything, `-0 == +0`); kernels decide
//! them on the bits, where a float compare could treat subnormals as zero or be folded away.
//! A comparison's output dtype is in its name (`less` gives `u32`, `less_bool` gives `bool`): a
//! dtype variable typing only an output could not be chosen by a call.

use crate::{op, Element, Real};
use op_backends::cpu::kernels::pointwise::{filled, map3};
use op_backends::cpu::par::for_each_chunk;
use std::cmp::Ordering;

/// The IEEE comparison of `a` and `b`: `None` when either is NaN (unordered).
fn ieee_cmp<T: Real>(a: T, b: T) -> Option<Ordering> {
    a.partial_cmp(&b)
}

/// `out[i] = f(a[i], b[i])` as a `u32` mask, over the CPU backend's threads.
fn mask_cpu(a: &[f32], b: &[f32], f: impl Fn(Option<Ordering>) -> bool + Sync + Send) -> Vec<u32> {
    let n = a.len().min(b.len());
    let mut out = vec![0u32; n];
    for_each_chunk(&mut out, 32 * 1024, |off, o| {
        for (k, d) in o.iter_mut().enumerate() {
            *d = f(a[off + k].partial_cmp(&b[off + k])) as u32;
        }
    });
    out
}

/// `1` where `a > b`, else `0` (IEEE: `0` where either is NaN).
#[op(name = "builtin/greater", version = 1, signature<T: f16 | bf16 | f32 | f64>(a: T[n], b: T[n]) -> u32[n], broadcast = numpy,
     category = selection, tolerance = exact, backward = none,
     cpu(greater_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/compare.wgsl", entry = "greater_main", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n),
     kernel(cuda = "kernels/select_lib.cu", entry = "greater_kernel", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn greater<T: Real>(a: &[T], b: &[T]) -> Vec<u32> {
    a.iter().zip(b).map(|(a, b)| (ieee_cmp(*a, *b) == Some(Ordering::Greater)) as u32).collect()
}
/// `cpu` kernel of `greater`.
fn greater_cpu(a: &[f32], b: &[f32]) -> Vec<u32> {
    mask_cpu(a, b, |c| c == Some(Ordering::Greater))
}

/// `1` where `a < b`, else `0` (IEEE: `0` where either is NaN).
#[op(name = "builtin/less", version = 1, signature<T: f16 | bf16 | f32 | f64>(a: T[n], b: T[n]) -> u32[n], broadcast = numpy,
     category = selection, tolerance = exact, backward = none,
     cpu(less_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/compare.wgsl", entry = "less_main", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n),
     kernel(cuda = "kernels/select_lib.cu", entry = "less_kernel", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn less<T: Real>(a: &[T], b: &[T]) -> Vec<u32> {
    a.iter().zip(b).map(|(a, b)| (ieee_cmp(*a, *b) == Some(Ordering::Less)) as u32).collect()
}
/// `cpu` kernel of `less`.
fn less_cpu(a: &[f32], b: &[f32]) -> Vec<u32> {
    mask_cpu(a, b, |c| c == Some(Ordering::Less))
}

/// `1` where `a == b`, else `0` (IEEE: `-0 == +0`, a NaN equals nothing).
#[op(name = "builtin/equal", version = 1, signature<T: f16 | bf16 | f32 | f64>(a: T[n], b: T[n]) -> u32[n], broadcast = numpy,
     category = selection, tolerance = exact, backward = none,
     cpu(equal_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/compare.wgsl", entry = "equal_main", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n),
     kernel(cuda = "kernels/select_lib.cu", entry = "equal_kernel", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = n, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn equal<T: Real>(a: &[T], b: &[T]) -> Vec<u32> {
    a.iter().zip(b).map(|(a, b)| (ieee_cmp(*a, *b) == Some(Ordering::Equal)) as u32).collect()
}
/// `cpu` kernel of `equal`.
fn equal_cpu(a: &[f32], b: &[f32]) -> Vec<u32> {
    mask_cpu(a, b, |c| c == Some(Ordering::Equal))
}

/// `out[i] = f(a[i], b[i])` as a `bool` mask, over the CPU backend's threads.
fn bool_mask_cpu(a: &[f32], b: &[f32], f: impl Fn(Option<Ordering>) -> bool + Sync + Send) -> Vec<bool> {
    let n = a.len().min(b.len());
    let mut out = vec![false; n];
    for_each_chunk(&mut out, 32 * 1024, |off, o| {
        for (k, d) in o.iter_mut().enumerate() {
            *d = f(a[off + k].partial_cmp(&b[off + k]));
        }
    });
    out
}

/// `true` where `a > b`, else `false` (IEEE: `false` where either is NaN): `greater` as a `bool`
/// mask, for `where` on the host backends.
#[op(name = "builtin/greater_bool", version = 1, signature<T: f16 | bf16 | f32 | f64>(a: T[n], b: T[n]) -> bool[n], broadcast = numpy,
     category = selection, tolerance = exact, backward = none,
     cpu(greater_bool_cpu, dtypes(T: f32)),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn greater_bool<T: Real>(a: &[T], b: &[T]) -> Vec<bool> {
    a.iter().zip(b).map(|(a, b)| ieee_cmp(*a, *b) == Some(Ordering::Greater)).collect()
}
/// `cpu` kernel of `greater_bool`.
fn greater_bool_cpu(a: &[f32], b: &[f32]) -> Vec<bool> {
    bool_mask_cpu(a, b, |c| c == Some(Ordering::Greater))
}

/// `true` where `a < b`, else `false` (IEEE: `false` where either is NaN): `less` as a `bool`
/// mask, for `where` on the host backends.
#[op(name = "builtin/less_bool", version = 1, signature<T: f16 | bf16 | f32 | f64>(a: T[n], b: T[n]) -> bool[n], broadcast = numpy,
     category = selection, tolerance = exact, backward = none,
     cpu(less_bool_cpu, dtypes(T: f32)),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn less_bool<T: Real>(a: &[T], b: &[T]) -> Vec<bool> {
    a.iter().zip(b).map(|(a, b)| ieee_cmp(*a, *b) == Some(Ordering::Less)).collect()
}
/// `cpu` kernel of `less_bool`.
fn less_bool_cpu(a: &[f32], b: &[f32]) -> Vec<bool> {
    bool_mask_cpu(a, b, |c| c == Some(Ordering::Less))
}

/// `true` where `a == b`, else `false` (IEEE: `-0 == +0`, a NaN equals nothing): `equal` as a
/// `bool` mask, for `where` on the host backends.
#[op(name = "builtin/equal_bool", version = 1, signature<T: f16 | bf16 | f32 | f64>(a: T[n], b: T[n]) -> bool[n], broadcast = numpy,
     category = selection, tolerance = exact, backward = none,
     cpu(equal_bool_cpu, dtypes(T: f32)),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn equal_bool<T: Real>(a: &[T], b: &[T]) -> Vec<bool> {
    a.iter().zip(b).map(|(a, b)| ieee_cmp(*a, *b) == Some(Ordering::Equal)).collect()
}
/// `cpu` kernel of `equal_bool`.
fn equal_bool_cpu(a: &[f32], b: &[f32]) -> Vec<bool> {
    bool_mask_cpu(a, b, |c| c == Some(Ordering::Equal))
}

/// Whether mask element `c` selects `a`: it is non-zero (`true`; any non-zero `u8` or `u32`, so
/// a `u8` mask of 0 and 255 selects like one of 0 and 1).
fn selects<M: Element>(c: M) -> bool {
    c.bits() != 0
}

/// `a` where the mask `cond` is non-zero, else `b` (a copy of the bits of the one chosen). The
/// mask is `u32` (what `greater`, `less` and `equal` give), `bool` (what `*_bool` give) or `u8`
/// (any non-zero byte selects `a`, as any non-zero `u32` does). GPU kernels serve `u32` masks
/// only (WGSL storage has no `bool` and no `u8`): a `bool` or `u8` mask runs on the host backends.
/// The first instance, `T = f32, M = u32`, is the primary one (what a handle not pinned to an
/// instance stands for: no instance has every variable `f32`), and the first six are those of
/// the VJP op `where_vjp`, in its order.
#[op(name = "builtin/where", version = 1,
     signature<T: f32 | f64 | f16 | bf16, M: u32 | bool | u8>(cond: M[n], a: T[n], b: T[n]) -> T[n], broadcast = numpy,
     category = selection, tolerance = exact, nan = ordered,
     backward = vjp(where_vjp,
        kernel(wgsl = "kernels/where_vjp.wgsl", entry = "where_vjp", dtypes(T: f32, M: u32), bindings(cond: read, a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n)), threads = n),
        kernel(cuda = "kernels/select_lib.cu", entry = "where_vjp", dtypes(T: f32, M: u32), bindings(cond: read, a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n)), threads = n, block = 256)),
     subgradient = "no kink in `a` or `b`: the cotangent goes to `a` where `cond` is non-zero, else to `b`; none to the mask",
     cpu(where_cpu, dtypes(T: f32, M: u32)),
     cpu(where_mask_cpu, dtypes(T: f32, M: bool | u8)),
     kernel(wgsl = "kernels/where.wgsl", entry = "where_main", dtypes(T: f32, M: u32), bindings(cond: read, a: read, b: read, out: read_write, uniform(n)), threads = n),
     kernel(cuda = "kernels/select_lib.cu", entry = "where_kernel", dtypes(T: f32, M: u32), bindings(cond: read, a: read, b: read, out: read_write, uniform(n)), threads = n, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn where_<T: Real, M: Element>(cond: &[M], a: &[T], b: &[T]) -> Vec<T> {
    cond.iter().zip(a.iter().zip(b)).map(|(c, (a, b))| if selects(*c) { *a } else { *b }).collect()
}
/// VJP of `where`: the cotangent to the operand chosen, zero to the other (the mask, not a
/// float, has no gradient).
pub fn where_vjp<T: Real, M: Element>(cond: &[M], _a: &[T], _b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    let ga = cond.iter().zip(g).map(|(c, g)| if selects(*c) { *g } else { T::zero() }).collect();
    let gb = cond.iter().zip(g).map(|(c, g)| if selects(*c) { T::zero() } else { *g }).collect();
    (ga, gb)
}
/// `cpu` kernel of `where` on a `u32` mask (bit-identical: a copy).
fn where_cpu(cond: &[u32], a: &[f32], b: &[f32]) -> Vec<f32> {
    let n = cond.len().min(a.len()).min(b.len());
    filled(n, |o| map3(&cond[..n], &a[..n], &b[..n], o, |c, x, y| if c != 0 { x } else { y }))
}
/// `cpu` kernel of `where` on a `bool` or `u8` mask (bit-identical: a copy), over the CPU
/// backend's threads.
fn where_mask_cpu<M: Element>(cond: &[M], a: &[f32], b: &[f32]) -> Vec<f32> {
    let n = cond.len().min(a.len()).min(b.len());
    let mut out = vec![0f32; n];
    for_each_chunk(&mut out, 32 * 1024, |off, o| {
        for (k, d) in o.iter_mut().enumerate() {
            *d = if selects(cond[off + k]) { a[off + k] } else { b[off + k] };
        }
    });
    out
}
