//! Window built-ins: `unfold` (the sliding windows of a signal as the rows of a matrix), with its
//! VJP and its `cpu` function (a chunked copy: `backends::cpu::kernels::windows`). Composing
//! `unfold` with a row op gives a windowed op without a kernel of its own, at the price of the
//! `rows x w` window buffer, which the tape's memory plan shows.

use crate::{op, Real};
use op_backends::cpu::kernels::windows as kern;

/// The windows of `x` as rows: window `i` is `x[i s .. i s + w]`, for every `i` whose window
/// fits (`(n - w) / s + 1` of them). `w` is the window length (`1 <= w <= n`), `s` the step
/// between window starts (`s >= 1`; `s = 1` gives every window). A copy: each output element is
/// an input element's bits.
#[op(name = "builtin/unfold", version = 1,
     signature<T: f16 | bf16 | f32 | f64>(x: T[n], w: u32, s: u32 where 1 <= w, w <= n, s >= 1) -> T[(n - w) / s + 1, w],
     category = selection, tolerance = exact, nan = ordered,
     backward = vjp(unfold_vjp,
        kernel(wgsl = "kernels/unfold_vjp.wgsl", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n, w, s)), threads = n),
        kernel(cuda = "kernels/windows.cu", entry = "unfold_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n, w, s)), threads = n, block = 256)),
     subgradient = "none needed: a copy, linear in `x`; each window element's cotangent is added to the element it copies",
     cpu(unfold_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/unfold.wgsl", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n, w, s)), threads = ((n - w) / s + 1) * w),
     kernel(cuda = "kernels/windows.cu", entry = "unfold", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n, w, s)), threads = ((n - w) / s + 1) * w, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn unfold<T: Real>(x: &[T], w: u32, s: u32) -> Vec<T> {
    let (w, s) = (w as usize, s as usize);
    let rows = (x.len() - w) / s + 1;
    let mut out = Vec::with_capacity(rows * w);
    for i in 0..rows {
        out.extend_from_slice(&x[i * s..i * s + w]);
    }
    out
}

/// VJP of `unfold`: `d_x[p]` sums, over the windows `i` that contain element `p` (ascending),
/// the cotangent of the element of window `i` that copies it.
pub fn unfold_vjp<T: Real>(x: &[T], w: u32, s: u32, g: &[T]) -> Vec<T> {
    let (w, s) = (w as usize, s as usize);
    let rows = (x.len() - w) / s + 1;
    let mut gx = vec![T::zero(); x.len()];
    for i in 0..rows {
        for j in 0..w {
            gx[i * s + j] += g[i * w + j];
        }
    }
    gx
}

/// `cpu` kernel of `unfold` (bit-identical to the reference: a copy). Arguments the signature
/// does not admit (never passed by dispatch, which validated `1 <= w <= n`, `s >= 1`) run the
/// reference.
fn unfold_cpu(x: &[f32], w: u32, s: u32) -> Vec<f32> {
    let (wu, su) = (w as usize, s as usize);
    if wu == 0 || wu > x.len() || su == 0 {
        return unfold(x, w, s);
    }
    let len = ((x.len() - wu) / su + 1) * wu;
    let mut out = Vec::with_capacity(len);
    kern::unfold(x, wu, su, &mut out.spare_capacity_mut()[..len]);
    // SAFETY: the kernel wrote every one of the `len` elements (see `kernels::windows`).
    unsafe { out.set_len(len) };
    out
}
