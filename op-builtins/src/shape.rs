//! Shape built-ins of the op library: `reshape` (a vector as rows), `flatten` (rows as a
//! vector), `transpose` (2-D), `slice` (start, stop, step along a vector), `concat` (two
//! vectors), `gather` (elements by index) and `broadcast_to` (a new axis), with their VJPs (and
//! VJP kernels) and their `cpu` functions (an indexed copy over the CPU backend's threads:
//! `backends::cpu::kernels::pointwise::fill_with`). Every one moves bits (`selection`,
//! `exact`, NaN moved like any value); the VJPs of `gather` and `broadcast_to` add the
//! cotangents of the elements that copy one input element, in ascending order.
//!
//! Ranks are fixed by each signature (the shape grammar has no rank variables): `reshape` and
//! `flatten` convert between a vector and a matrix, `transpose` swaps a matrix's axes.

use crate::{op, Real};
use op_backends::cpu::kernels::pointwise::fill_with;

/// `x` (of `n` elements) as `n / c` rows of `c` elements, row-major (a copy).
#[op(name = "builtin/reshape", version = 1,
     signature<T: f16 | bf16 | f32 | f64>(x: T[n], c: u32 where c >= 1, n % c == 0) -> T[n / c, c],
     category = selection, tolerance = exact, nan = ordered,
     backward = vjp(reshape_vjp,
        kernel(wgsl = "kernels/copy_vjp.wgsl", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n),
        kernel(cuda = "kernels/shape.cu", entry = "reshape_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n, block = 256)),
     subgradient = "none needed: a copy; each cotangent goes back to the element copied",
     cpu(reshape_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/shape.wgsl", entry = "copy_main", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n),
     kernel(cuda = "kernels/shape.cu", entry = "copy_kernel", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = n, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn reshape<T: Real>(x: &[T], c: u32) -> Vec<T> {
    let _ = c;
    x.to_vec()
}
/// VJP of `reshape`: the cotangent read back as a vector.
pub fn reshape_vjp<T: Real>(_x: &[T], _c: u32, g: &[T]) -> Vec<T> {
    g.to_vec()
}
/// `cpu` kernel of `reshape` (a copy).
fn reshape_cpu(x: &[f32], _c: u32) -> Vec<f32> {
    fill_with(x.len(), |i| x[i])
}

/// The rows of `x` (`r` rows of `c`) as one vector, row-major (a copy).
#[op(name = "builtin/flatten", version = 1,
     signature<T: f16 | bf16 | f32 | f64>(x: T[r, c]) -> T[r * c],
     category = selection, tolerance = exact, nan = ordered,
     backward = vjp(flatten_vjp,
        kernel(wgsl = "kernels/shape_vjp.wgsl", entry = "flatten_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(r, c)), threads = r * c),
        kernel(cuda = "kernels/shape.cu", entry = "flatten_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(r, c)), threads = r * c, block = 256)),
     subgradient = "none needed: a copy; each cotangent goes back to the element copied",
     cpu(flatten_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/flatten.wgsl", dtypes(T: f32), bindings(x: read, out: read_write, uniform(r, c)), threads = r * c),
     kernel(cuda = "kernels/shape.cu", entry = "flatten_kernel", dtypes(T: f32), bindings(x: read, out: read_write, uniform(r, c)), threads = r * c, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn flatten<T: Real>(x: &[T]) -> Vec<T> {
    x.to_vec()
}
/// VJP of `flatten`: the cotangent read back as rows.
pub fn flatten_vjp<T: Real>(_x: &[T], g: &[T]) -> Vec<T> {
    g.to_vec()
}
/// `cpu` kernel of `flatten` (a copy).
fn flatten_cpu(x: &[f32]) -> Vec<f32> {
    fill_with(x.len(), |i| x[i])
}

/// The transpose of `x` (`r` rows of `c`): `out[j, i] = x[i, j]`.
#[op(name = "builtin/transpose", version = 1,
     signature<T: f16 | bf16 | f32 | f64>(x: T[r, c]) -> T[c, r],
     category = selection, tolerance = exact, nan = ordered,
     backward = vjp(transpose_vjp,
        kernel(wgsl = "kernels/shape_vjp.wgsl", entry = "transpose_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(r, c)), threads = r * c),
        kernel(cuda = "kernels/shape.cu", entry = "transpose_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(r, c)), threads = r * c, block = 256)),
     subgradient = "none needed: a permutation; each cotangent goes back to the element moved",
     cpu(transpose_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/transpose2d.wgsl", dtypes(T: f32), bindings(x: read, out: read_write, uniform(r, c)), threads = r * c),
     kernel(cuda = "kernels/shape.cu", entry = "transpose_kernel", dtypes(T: f32), bindings(x: read, out: read_write, uniform(r, c)), threads = r * c, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn transpose<T: Real>(x: &[T], r: usize, c: usize) -> Vec<T> {
    (0..r * c).map(|k| x[(k % r) * c + k / r]).collect()
}
/// VJP of `transpose`: the cotangent transposed back.
pub fn transpose_vjp<T: Real>(_x: &[T], r: usize, c: usize, g: &[T]) -> Vec<T> {
    transpose(g, c, r)
}
/// `cpu` kernel of `transpose` (an indexed copy).
fn transpose_cpu(x: &[f32], r: usize, c: usize) -> Vec<f32> {
    if x.len() != r * c {
        return transpose(x, r, c);
    }
    fill_with(r * c, |k| x[(k % r) * c + k / r])
}

/// Every `step`-th element of `x[start .. stop]` (`start <= stop <= n`, `step >= 1`), as
/// Python's `x[start:stop:step]`.
#[op(name = "builtin/slice", version = 1,
     signature<T: f16 | bf16 | f32 | f64>(x: T[n], start: u32, stop: u32, step: u32 where start <= stop, stop <= n, step >= 1) -> T[(stop - start + step - 1) / step],
     category = selection, tolerance = exact, nan = ordered,
     backward = vjp(slice_vjp,
        kernel(wgsl = "kernels/slice_vjp.wgsl", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n, start, stop, step)), threads = n),
        kernel(cuda = "kernels/shape.cu", entry = "slice_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n, start, stop, step)), threads = n, block = 256)),
     subgradient = "none needed: a copy; each cotangent goes back to the element copied, zero to the others",
     cpu(slice_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/slice.wgsl", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n, start, stop, step)), threads = (stop - start + step - 1) / step),
     kernel(cuda = "kernels/shape.cu", entry = "slice_kernel", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n, start, stop, step)), threads = (stop - start + step - 1) / step, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn slice<T: Real>(x: &[T], start: u32, stop: u32, step: u32) -> Vec<T> {
    x[start as usize..stop as usize].iter().step_by(step as usize).copied().collect()
}
/// VJP of `slice`: each cotangent to the element it copies, zero elsewhere.
pub fn slice_vjp<T: Real>(x: &[T], start: u32, stop: u32, step: u32, g: &[T]) -> Vec<T> {
    let mut gx = vec![T::zero(); x.len()];
    for (k, q) in (start as usize..stop as usize).step_by(step as usize).enumerate() {
        gx[q] = g[k];
    }
    gx
}
/// `cpu` kernel of `slice` (an indexed copy).
fn slice_cpu(x: &[f32], start: u32, stop: u32, step: u32) -> Vec<f32> {
    let (start, stop, step) = (start as usize, stop as usize, step as usize);
    if start > stop || stop > x.len() || step == 0 {
        return slice(x, start as u32, stop as u32, step as u32);
    }
    fill_with((stop - start).div_ceil(step), |k| x[start + k * step])
}

/// `a` followed by `b`.
#[op(name = "builtin/concat", version = 1,
     signature<T: f16 | bf16 | f32 | f64>(a: T[n], b: T[m]) -> T[n + m],
     category = selection, tolerance = exact, nan = ordered,
     backward = vjp(concat_vjp,
        kernel(wgsl = "kernels/concat_vjp.wgsl", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n, m)), threads = n + m),
        kernel(cuda = "kernels/shape.cu", entry = "concat_vjp", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n, m)), threads = n + m, block = 256)),
     subgradient = "none needed: a copy; the cotangent split back at `n`",
     cpu(concat_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/concat.wgsl", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n, m)), threads = n + m),
     kernel(cuda = "kernels/shape.cu", entry = "concat_kernel", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n, m)), threads = n + m, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn concat<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().chain(b).copied().collect()
}
/// VJP of `concat`: the cotangent split back.
pub fn concat_vjp<T: Real>(a: &[T], _b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    (g[..a.len()].to_vec(), g[a.len()..].to_vec())
}
/// `cpu` kernel of `concat` (an indexed copy).
fn concat_cpu(a: &[f32], b: &[f32]) -> Vec<f32> {
    let n = a.len();
    fill_with(n + b.len(), |i| if i < n { a[i] } else { b[i - n] })
}

/// The elements of `x` (`n >= 1`) at the positions `idx` (`m` of them), an index past the end
/// clamped to the last element (JAX's default for gathers).
#[op(name = "builtin/gather", version = 1,
     signature<T: f16 | bf16 | f32 | f64>(x: T[n], idx: u32[m] where n >= 1) -> T[m],
     category = selection, tolerance = exact, nan = ordered,
     backward = vjp(gather_vjp,
        kernel(wgsl = "kernels/gather_vjp.wgsl", dtypes(T: f32), bindings(x: read, idx: read, d_out: read, d_x: read_write, uniform(n, m)), threads = n),
        kernel(cuda = "kernels/shape.cu", entry = "gather_vjp", dtypes(T: f32), bindings(x: read, idx: read, d_out: read, d_x: read_write, uniform(n, m)), threads = n, block = 256)),
     subgradient = "none needed: a copy; each element's gradient adds the cotangents of the outputs that copy it, in output order",
     cpu(gather_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/gather.wgsl", dtypes(T: f32), bindings(x: read, idx: read, out: read_write, uniform(n, m)), threads = m),
     kernel(cuda = "kernels/shape.cu", entry = "gather_kernel", dtypes(T: f32), bindings(x: read, idx: read, out: read_write, uniform(n, m)), threads = m, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn gather<T: Real>(x: &[T], idx: &[u32]) -> Vec<T> {
    idx.iter().map(|i| x[(*i as usize).min(x.len() - 1)]).collect()
}
/// VJP of `gather`: each cotangent added (in output order) to the element its output copies.
pub fn gather_vjp<T: Real>(x: &[T], idx: &[u32], g: &[T]) -> Vec<T> {
    let mut gx = vec![T::zero(); x.len()];
    for (i, gi) in idx.iter().zip(g) {
        gx[(*i as usize).min(x.len() - 1)] += *gi;
    }
    gx
}
/// `cpu` kernel of `gather` (an indexed copy).
fn gather_cpu(x: &[f32], idx: &[u32]) -> Vec<f32> {
    if x.is_empty() {
        return gather(x, idx);
    }
    let last = x.len() - 1;
    fill_with(idx.len(), |k| x[(idx[k] as usize).min(last)])
}

/// `x` (`p` rows of `q`) repeated `m` times along a new middle axis: `out[i, k, j] = x[i, j]`.
/// numpy's broadcasting of any shapes is a sequence of these (one per expanded axis group).
#[op(name = "builtin/broadcast_to", version = 1,
     signature<T: f16 | bf16 | f32 | f64>(x: T[p, q], m: u32) -> T[p, m, q],
     category = selection, tolerance = exact, nan = ordered,
     backward = vjp(broadcast_to_vjp,
        kernel(wgsl = "kernels/broadcast_to_vjp.wgsl", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(p, q, m)), threads = p * q),
        kernel(cuda = "kernels/shape.cu", entry = "broadcast_to_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(p, q, m)), threads = p * q, block = 256)),
     subgradient = "none needed: a copy; each element's gradient adds the `m` cotangents of its copies, in order",
     cpu(broadcast_to_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/broadcast_to.wgsl", dtypes(T: f32), bindings(x: read, out: read_write, uniform(p, q, m)), threads = p * m * q),
     kernel(cuda = "kernels/shape.cu", entry = "broadcast_to_kernel", dtypes(T: f32), bindings(x: read, out: read_write, uniform(p, q, m)), threads = p * m * q, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn broadcast_to<T: Real>(x: &[T], m: u32, p: usize, q: usize) -> Vec<T> {
    let m = m as usize;
    (0..p * m * q).map(|k| x[(k / (m * q)) * q + k % q]).collect()
}
/// VJP of `broadcast_to`: each element's `m` cotangents added in order.
pub fn broadcast_to_vjp<T: Real>(x: &[T], m: u32, _p: usize, q: usize, g: &[T]) -> Vec<T> {
    let m = m as usize;
    let mut gx = vec![T::zero(); x.len()];
    for (e, gx) in gx.iter_mut().enumerate() {
        let (i, j) = (e / q.max(1), e % q.max(1));
        for k in 0..m {
            *gx += g[(i * m + k) * q + j];
        }
    }
    gx
}
/// `cpu` kernel of `broadcast_to` (an indexed copy).
fn broadcast_to_cpu(x: &[f32], m: u32, p: usize, q: usize) -> Vec<f32> {
    let m = m as usize;
    if x.len() != p * q {
        return broadcast_to(x, m as u32, p, q);
    }
    fill_with(p * m * q, |k| x[(k / (m * q)) * q + k % q])
}
