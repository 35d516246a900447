//! `take_along`: numpy's `take_along_axis` along the last axis of a 2-D input (each row read at
//! its own index list), with its VJP (a scatter-add into the input's shape, and its VJP kernels)
//! and its `cpu` function (an indexed copy over the CPU backend's threads:
//! `backends::cpu::kernels::pointwise::fill_with`). Out-of-range indices follow `gather`: an
//! index past a row's end reads the row's last element (JAX's clamping), never out of bounds
//! and never an error, so every `u32` index table is admissible and conformance draws any.

use crate::{op, Real};
use op_backends::cpu::kernels::pointwise::fill_with;

/// The position `idx` (an index into a row of `c >= 1` elements) reads: clamped to the last.
fn clamped(idx: u32, c: usize) -> usize {
    (idx as usize).min(c - 1)
}

/// Row `i` of `x` (`r` rows of `c >= 1`) read at the `k` positions `idx[i, ..]`:
/// `out[i, j] = x[i, min(idx[i, j], c - 1)]`, numpy's `take_along_axis(x, idx, axis=-1)` with an
/// index past the row's end clamped to its last element (as `gather`).
#[op(name = "builtin/take_along", version = 1,
     signature<T: f16 | bf16 | f32 | f64>(x: T[r, c], idx: u32[r, k] where c >= 1) -> T[r, k],
     category = selection, tolerance = exact, nan = ordered,
     backward = vjp(take_along_vjp,
        kernel(wgsl = "kernels/take_along_vjp.wgsl", dtypes(T: f32), bindings(x: read, idx: read, d_out: read, d_x: read_write, uniform(r, c, k)), threads = r * c),
        kernel(cuda = "kernels/take_along.cu", entry = "take_along_vjp", dtypes(T: f32), bindings(x: read, idx: read, d_out: read, d_x: read_write, uniform(r, c, k)), threads = r * c, block = 256)),
     subgradient = "none needed: a copy; each element's gradient adds the cotangents of the outputs of its row that copy it, in output order",
     cpu(take_along_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/take_along.wgsl", dtypes(T: f32), bindings(x: read, idx: read, out: read_write, uniform(r, c, k)), threads = r * k),
     kernel(cuda = "kernels/take_along.cu", entry = "take_along_kernel", dtypes(T: f32), bindings(x: read, idx: read, out: read_write, uniform(r, c, k)), threads = r * k, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn take_along<T: Real>(x: &[T], idx: &[u32], c: usize, k: usize) -> Vec<T> {
    idx.iter().enumerate().map(|(t, i)| x[(t / k) * c + clamped(*i, c)]).collect()
}
/// VJP of `take_along`: each cotangent added (in output order) to the element of its row that
/// its output copies.
pub fn take_along_vjp<T: Real>(x: &[T], idx: &[u32], c: usize, k: usize, g: &[T]) -> Vec<T> {
    let mut gx = vec![T::zero(); x.len()];
    for (t, (i, gi)) in idx.iter().zip(g).enumerate() {
        gx[(t / k) * c + clamped(*i, c)] += *gi;
    }
    gx
}
/// `cpu` kernel of `take_along` (an indexed copy).
fn take_along_cpu(x: &[f32], idx: &[u32], c: usize, k: usize) -> Vec<f32> {
    if c == 0 || k == 0 || x.len() < (idx.len() / k) * c {
        return take_along(x, idx, c, k);
    }
    fill_with(idx.len(), |t| x[(t / k) * c + clamped(idx[t], c)])
}
