//! Reductions along the last axis of a 2-D input: `sum_rows`, `mean_rows` (pairwise sums in the
//! kernels, within `accum`; the references sum in f64, compensated, and round once), `max_rows`, `min_rows` and `argmax_rows` (IEEE total order, ties in
//! index order: of equal elements the later one counts as the larger, so `max_rows` selects the
//! last of equal maxima and `min_rows` the first of equal minima; `argmax_rows` is the position
//! `max_rows` selects, unlike numpy's first), with their VJPs and their `cpu` functions
//! (`backends::cpu::kernels::rows`).

use super::sum64::Sum64;
use crate::{op, Real};
use op_backends::cpu::kernels::rows as kern;
use std::cmp::Ordering;

/// The position of each row's element selected on `side` (`Greater`: the largest, the last of
/// equal ones; `Less`: the smallest, the first of equal ones) in IEEE total order.
pub(super) fn selected<T: Real>(x: &[T], c: usize, side: Ordering) -> Vec<usize> {
    x.chunks(c.max(1))
        .map(|row| {
            let mut best = 0;
            for (j, v) in row.iter().enumerate().skip(1) {
                let o = v.total_cmp(&row[best]);
                if o == side || (o == Ordering::Equal && side == Ordering::Greater) {
                    best = j;
                }
            }
            best
        })
        .collect()
}

/// The sum of each row of `x` (`r` rows of `c` elements; an empty row sums to 0).
#[op(name = "builtin/sum_rows", version = 1, signature<T: f16 | bf16 | f32 | f64>(x: T[r, c]) -> T[r],
     category = reduction, tolerance = accum(2), nan = propagate,
     backward = vjp(sum_rows_vjp,
        kernel(wgsl = "kernels/rows_reduce_vjp.wgsl", entry = "sum_rows_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(r, c)), threads = r * c),
        kernel(cuda = "kernels/rows_reduce.cu", entry = "sum_rows_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(r, c)), threads = r * c, block = 256)),
     cpu(sum_rows_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/rows_reduce.wgsl", entry = "sum_rows", dtypes(T: f32), bindings(x: read, out: read_write, uniform(r, c)), threads = r),
     kernel(cuda = "kernels/rows_reduce.cu", entry = "sum_rows", dtypes(T: f32), bindings(x: read, out: read_write, uniform(r, c)), threads = r, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn sum_rows<T: Real>(x: &[T], r: usize, c: usize) -> Vec<T> {
    // Each row in f64, compensated, rounded once: right at every dtype (an f16 running sum
    // stalls).
    (0..r).map(|i| T::from_f64(Sum64::sum_of(x[i * c..(i + 1) * c].iter().map(|v| v.to_f64())))).collect()
}
/// VJP of `sum_rows`: each row's cotangent broadcast over the row.
pub fn sum_rows_vjp<T: Real>(x: &[T], _r: usize, c: usize, g: &[T]) -> Vec<T> {
    (0..x.len()).map(|i| g[i / c.max(1)]).collect()
}
/// `cpu` kernel of `sum_rows` (each row summed in f64, rounded once).
fn sum_rows_cpu(x: &[f32], r: usize, c: usize) -> Vec<f32> {
    if x.len() != r * c {
        return sum_rows(x, r, c);
    }
    let mut out = vec![0f32; r];
    kern::sum_rows(x, c, &mut out, 1.0);
    out
}

/// The mean of each row of `x` (`r` rows of `c >= 1` elements).
#[op(name = "builtin/mean_rows", version = 1, signature<T: f16 | bf16 | f32 | f64>(x: T[r, c] where c >= 1) -> T[r],
     category = reduction, tolerance = accum(2), nan = propagate,
     backward = vjp(mean_rows_vjp,
        kernel(wgsl = "kernels/rows_reduce_vjp.wgsl", entry = "mean_rows_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(r, c)), threads = r * c),
        kernel(cuda = "kernels/rows_reduce.cu", entry = "mean_rows_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(r, c)), threads = r * c, block = 256)),
     cpu(mean_rows_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/rows_reduce.wgsl", entry = "mean_rows", dtypes(T: f32), bindings(x: read, out: read_write, uniform(r, c)), threads = r),
     kernel(cuda = "kernels/rows_reduce.cu", entry = "mean_rows", dtypes(T: f32), bindings(x: read, out: read_write, uniform(r, c)), threads = r, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn mean_rows<T: Real>(x: &[T], r: usize, c: usize) -> Vec<T> {
    // Summed and divided in f64 (the count never passes through `T`: 131_071 is infinite in
    // f16), rounded once.
    (0..r).map(|i| T::from_f64(Sum64::sum_of(x[i * c..(i + 1) * c].iter().map(|v| v.to_f64())) / c as f64)).collect()
}
/// VJP of `mean_rows`: each row's cotangent over `c` (in f64, rounded once), broadcast over the
/// row.
pub fn mean_rows_vjp<T: Real>(x: &[T], _r: usize, c: usize, g: &[T]) -> Vec<T> {
    (0..x.len()).map(|i| T::from_f64(g[i / c.max(1)].to_f64() / c as f64)).collect()
}
/// `cpu` kernel of `mean_rows` (each row summed in f64, divided, rounded once).
fn mean_rows_cpu(x: &[f32], r: usize, c: usize) -> Vec<f32> {
    if c == 0 || x.len() != r * c {
        return mean_rows(x, r, c);
    }
    let mut out = vec![0f32; r];
    kern::sum_rows(x, c, &mut out, c as f64);
    out
}

/// The largest element of each row of `x` (`r` rows of `c >= 1`) in IEEE total order.
#[op(name = "builtin/max_rows", version = 1, signature<T: f16 | bf16 | f32 | f64>(x: T[r, c] where c >= 1) -> T[r],
     category = selection, tolerance = exact, nan = ordered,
     backward = vjp(max_rows_vjp,
        kernel(wgsl = "kernels/rows_select_vjp.wgsl", entry = "max_rows_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(r, c)), threads = r),
        kernel(cuda = "kernels/rows_reduce.cu", entry = "max_rows_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(r, c)), threads = r, block = 256)),
     subgradient = "the cotangent goes to the selected element: of equal maxima the later one (it counts as the larger)",
     cpu(max_rows_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/rows_select.wgsl", entry = "max_rows", dtypes(T: f32), bindings(x: read, out: read_write, uniform(r, c)), threads = r),
     kernel(cuda = "kernels/rows_reduce.cu", entry = "max_rows", dtypes(T: f32), bindings(x: read, out: read_write, uniform(r, c)), threads = r, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn max_rows<T: Real>(x: &[T], c: usize) -> Vec<T> {
    selected(x, c, Ordering::Greater).into_iter().enumerate().map(|(i, j)| x[i * c + j]).collect()
}
/// VJP of `max_rows`: each row's cotangent to the element selected.
pub fn max_rows_vjp<T: Real>(x: &[T], c: usize, g: &[T]) -> Vec<T> {
    route(x, c, g, Ordering::Greater)
}
/// `cpu` kernel of `max_rows` (bit-identical: a scan of total-order keys).
fn max_rows_cpu(x: &[f32], c: usize) -> Vec<f32> {
    if c == 0 || !x.len().is_multiple_of(c) {
        return max_rows(x, c);
    }
    let mut out = vec![0f32; x.len() / c];
    kern::select_rows(x, c, true, &mut out);
    out
}

/// The smallest element of each row of `x` (`r` rows of `c >= 1`) in IEEE total order.
#[op(name = "builtin/min_rows", version = 1, signature<T: f16 | bf16 | f32 | f64>(x: T[r, c] where c >= 1) -> T[r],
     category = selection, tolerance = exact, nan = ordered,
     backward = vjp(min_rows_vjp,
        kernel(wgsl = "kernels/rows_select_vjp.wgsl", entry = "min_rows_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(r, c)), threads = r),
        kernel(cuda = "kernels/rows_reduce.cu", entry = "min_rows_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(r, c)), threads = r, block = 256)),
     subgradient = "the cotangent goes to the selected element: of equal minima the earlier one (it counts as the smaller)",
     cpu(min_rows_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/rows_select.wgsl", entry = "min_rows", dtypes(T: f32), bindings(x: read, out: read_write, uniform(r, c)), threads = r),
     kernel(cuda = "kernels/rows_reduce.cu", entry = "min_rows", dtypes(T: f32), bindings(x: read, out: read_write, uniform(r, c)), threads = r, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn min_rows<T: Real>(x: &[T], c: usize) -> Vec<T> {
    selected(x, c, Ordering::Less).into_iter().enumerate().map(|(i, j)| x[i * c + j]).collect()
}
/// VJP of `min_rows`: each row's cotangent to the element selected.
pub fn min_rows_vjp<T: Real>(x: &[T], c: usize, g: &[T]) -> Vec<T> {
    route(x, c, g, Ordering::Less)
}
/// `cpu` kernel of `min_rows` (bit-identical).
fn min_rows_cpu(x: &[f32], c: usize) -> Vec<f32> {
    if c == 0 || !x.len().is_multiple_of(c) {
        return min_rows(x, c);
    }
    let mut out = vec![0f32; x.len() / c];
    kern::select_rows(x, c, false, &mut out);
    out
}

/// The position in its row (`0..c`) of the element `max_rows` selects: the largest in IEEE total
/// order, the last of equal ones (`r` rows of `c >= 1`).
#[op(name = "builtin/argmax_rows", version = 1, signature<T: f16 | bf16 | f32 | f64>(x: T[r, c] where c >= 1) -> u32[r],
     category = selection, tolerance = exact, backward = none,
     cpu(argmax_rows_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/rows_argmax.wgsl", dtypes(T: f32), bindings(x: read, out: read_write, uniform(r, c)), threads = r),
     kernel(cuda = "kernels/rows_reduce.cu", entry = "argmax_rows", dtypes(T: f32), bindings(x: read, out: read_write, uniform(r, c)), threads = r, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn argmax_rows<T: Real>(x: &[T], c: usize) -> Vec<u32> {
    selected(x, c, Ordering::Greater).into_iter().map(|j| j as u32).collect()
}
/// `cpu` kernel of `argmax_rows`.
fn argmax_rows_cpu(x: &[f32], c: usize) -> Vec<u32> {
    if c == 0 || !x.len().is_multiple_of(c) {
        return argmax_rows(x, c);
    }
    let mut out = vec![0u32; x.len() / c];
    kern::argmax_rows(x, c, &mut out);
    out
}

/// Each row's cotangent to its element selected on `side`, zero elsewhere.
fn route<T: Real>(x: &[T], c: usize, g: &[T], side: Ordering) -> Vec<T> {
    let mut gx = vec![T::zero(); x.len()];
    for (i, j) in selected(x, c, side).into_iter().enumerate() {
        gx[i * c + j] = g[i];
    }
    gx
}
