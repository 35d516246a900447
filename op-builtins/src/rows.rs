//! Row built-ins that order values: `sort_rows` and `median_rows` along the last axis of a
//! 2-D input, with their VJPs and their `cpu` functions (total-order keys sorted or selected per
//! row, rows spread over the CPU backend's threads: `backends::cpu::kernels::rows`).
//!
//! Ordering convention (every selection op's): IEEE 754 total order (`-NaN < -inf < ... < -0 <
//! +0 < ... < +inf < +NaN`), equal elements in index order. The GPU kernels rank each element
//! within its row by (total-order key, index) in O(c) work per element, so rows are limited to
//! `c <= 1024` elements (longer rows would need a multi-pass sort).

use crate::{op, Real};
use op_backends::cpu::kernels::rows as kern;

/// The positions of one row in (total order, index) order: a stable sort of the indices.
pub(super) fn order<T: Real>(row: &[T]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..row.len()).collect();
    idx.sort_by(|a, b| row[*a].total_cmp(&row[*b]));
    idx
}

/// Each row of `x` (`r` rows of `c` elements, `c <= 1024`) sorted ascending in IEEE total order.
#[op(name = "builtin/sort_rows", version = 1,
     signature<T: f16 | bf16 | f32 | f64>(x: T[r, c] where c <= 1024) -> T[r, c],
     category = selection, tolerance = exact, nan = ordered,
     backward = vjp(sort_rows_vjp,
        kernel(wgsl = "kernels/rows_order_vjp.wgsl", entry = "sort_rows_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(r, c)), threads = r * c),
        kernel(cuda = "kernels/rows_order.cu", entry = "sort_rows_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(r, c)), threads = r * c, block = 256)),
     subgradient = "the cotangent of each sorted position goes to the element sorted there; of equal elements the earlier one sorts first",
     cpu(sort_rows_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/rows_order.wgsl", entry = "sort_rows", dtypes(T: f32), bindings(x: read, out: read_write, uniform(r, c)), threads = r * c),
     kernel(cuda = "kernels/rows_order.cu", entry = "sort_rows", dtypes(T: f32), bindings(x: read, out: read_write, uniform(r, c)), threads = r * c, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn sort_rows<T: Real>(x: &[T], c: usize) -> Vec<T> {
    let mut out = x.to_vec();
    for row in out.chunks_mut(c.max(1)) {
        row.sort_by(|a, b| a.total_cmp(b));
    }
    out
}

/// VJP of `sort_rows`: the cotangent of sorted position `k` goes to the element sorted there.
pub fn sort_rows_vjp<T: Real>(x: &[T], c: usize, g: &[T]) -> Vec<T> {
    let mut gx = vec![T::zero(); x.len()];
    for (start, row) in (0..x.len()).step_by(c.max(1)).zip(x.chunks(c.max(1))) {
        for (k, i) in order(row).into_iter().enumerate() {
            gx[start + i] = g[start + k];
        }
    }
    gx
}

/// `cpu` kernel of `sort_rows` (bit-identical: equal keys are equal bits).
fn sort_rows_cpu(x: &[f32], c: usize) -> Vec<f32> {
    if c == 0 || !x.len().is_multiple_of(c) {
        return sort_rows(x, c);
    }
    let mut out = vec![0f32; x.len()];
    kern::sort_rows(x, c, &mut out);
    out
}

/// The median of each row of `x` (`r` rows of `c >= 1` elements, `c <= 1024`): the element of
/// rank `(c - 1) / 2` in IEEE total order, so the lower median for an even `c`.
#[op(name = "builtin/median_rows", version = 1,
     signature<T: f16 | bf16 | f32 | f64>(x: T[r, c] where 1 <= c, c <= 1024) -> T[r],
     category = selection, tolerance = exact, nan = ordered,
     backward = vjp(median_rows_vjp,
        kernel(wgsl = "kernels/rows_order_vjp.wgsl", entry = "median_rows_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(r, c)), threads = r * c),
        kernel(cuda = "kernels/rows_order.cu", entry = "median_rows_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(r, c)), threads = r * c, block = 256)),
     subgradient = "the cotangent goes to the selected element (of equal elements the earlier one ranks lower); zero elsewhere",
     cpu(median_rows_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/rows_order.wgsl", entry = "median_rows", dtypes(T: f32), bindings(x: read, out: read_write, uniform(r, c)), threads = r * c),
     kernel(cuda = "kernels/rows_order.cu", entry = "median_rows", dtypes(T: f32), bindings(x: read, out: read_write, uniform(r, c)), threads = r * c, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn median_rows<T: Real>(x: &[T], c: usize) -> Vec<T> {
    x.chunks(c.max(1))
        .map(|row| {
            let mut v = row.to_vec();
            v.sort_by(|a, b| a.total_cmp(b));
            v[(c - 1) / 2]
        })
        .collect()
}

/// VJP of `median_rows`: each row's cotangent goes to the element its median selected.
pub fn median_rows_vjp<T: Real>(x: &[T], c: usize, g: &[T]) -> Vec<T> {
    let mut gx = vec![T::zero(); x.len()];
    for ((start, row), gi) in (0..x.len()).step_by(c.max(1)).zip(x.chunks(c.max(1))).zip(g) {
        gx[start + order(row)[(c - 1) / 2]] = *gi;
    }
    gx
}

/// `cpu` kernel of `median_rows` (bit-identical: a selection on total-order keys).
fn median_rows_cpu(x: &[f32], c: usize) -> Vec<f32> {
    if c == 0 || !x.len().is_multiple_of(c) {
        return median_rows(x, c);
    }
    let mut out = vec![0f32; x.len() / c];
    kern::median_rows(x, c, &mut out);
    out
}
