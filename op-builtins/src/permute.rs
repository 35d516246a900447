//! Axis permutations beyond 2-D: `permute3` and `permute4` (numpy's `transpose(x, axes)`,
//! torch's `permute`) for rank-3 and rank-4 inputs, with their VJPs (the inverse permutation,
//! and its kernels) and their `cpu` functions (an indexed copy over the CPU backend's threads:
//! `backends::cpu::kernels::pointwise::fill_with`). `builtin/transpose` stays the 2-D one (the
//! only permutation of two axes that moves anything). Every one moves bits (`selection`,
//! `exact`, NaN moved like any value).
//!
//! Encoding: the shape grammar has no rank variables, so each rank is its own op, and the
//! permutation is one `u32` parameter per axis, `p0, p1, ..` (output axis `k` is input axis
//! `pk`: `out.shape[k] = x.shape[pk]`, as numpy's `axes`), constrained to a permutation (each
//! below the rank, pairwise distinct). The grammar has no indexing either, so output dim `k`,
//! `d[pk]`, is written as a sum of steps that only `pk` switches on: for rank 4,
//! `d0 + (d1 - d0) * min(pk, 1) + (d2 - d1) * (pk / 2) + (d3 - d2) * (pk / 3)`
//! (`min(pk, 1)`, `pk / 2`, `pk / 3` are `pk >= 1`, `pk >= 2`, `pk >= 3` for `pk <= 3`).

use crate::{op, Real};
use op_backends::cpu::kernels::pointwise::fill_with;

/// Row-major input index that output element `t` of `x` (dims `d`, padded to rank 4 with
/// trailing ones) permuted by `perm` (output axis `k` is input axis `perm[k]`) copies.
fn source(mut t: usize, d: [usize; 4], perm: [usize; 4]) -> usize {
    let stride = [d[1] * d[2] * d[3], d[2] * d[3], d[3], 1];
    let mut at = 0;
    for k in (0..4).rev() {
        let n = d[perm[k]].max(1);
        at += (t % n) * stride[perm[k]];
        t /= n;
    }
    at
}

/// `x` (dims `d`) with its axes permuted by `perm`: `out.shape[k] = d[perm[k]]`.
fn permuted<T: Copy>(x: &[T], d: [usize; 4], perm: [usize; 4]) -> Vec<T> {
    (0..x.len()).map(|t| x[source(t, d, perm)]).collect()
}

/// The inverse of `perm`: `inv[perm[k]] = k`.
fn inverse(perm: [usize; 4]) -> [usize; 4] {
    let mut inv = [0; 4];
    for (k, p) in perm.into_iter().enumerate() {
        inv[p] = k;
    }
    inv
}

/// `d` permuted by `perm`: the dims of the permuted tensor.
fn permuted_dims(d: [usize; 4], perm: [usize; 4]) -> [usize; 4] {
    perm.map(|p| d[p])
}

/// The cotangent `g` of `x` (dims `d`) permuted by `perm`, permuted back (by the inverse).
fn unpermuted<T: Copy>(g: &[T], d: [usize; 4], perm: [usize; 4]) -> Vec<T> {
    permuted(g, permuted_dims(d, perm), inverse(perm))
}

/// A rank-3 permutation's parameters as a rank-4 one (a trailing axis of one element stays last).
fn perm3(p0: u32, p1: u32, p2: u32) -> [usize; 4] {
    [p0 as usize, p1 as usize, p2 as usize, 3]
}

/// A rank-4 permutation's parameters.
fn perm4(p0: u32, p1: u32, p2: u32, p3: u32) -> [usize; 4] {
    [p0 as usize, p1 as usize, p2 as usize, p3 as usize]
}

/// Whether `perm` is a permutation of `0..4` and `x` (a length) holds `d`'s elements:
/// what the `cpu` kernels need before they index (dispatch has checked both).
fn admitted(x: usize, d: [usize; 4], perm: [usize; 4]) -> bool {
    let mut seen = [false; 4];
    perm.iter().all(|p| *p < 4 && !std::mem::replace(&mut seen[*p], true)) && x == d.iter().product::<usize>()
}

/// The axes of `x` (dims `d0, d1, d2`) permuted: output axis `k` is input axis `pk`
/// (`out.shape[k] = x.shape[pk]`), numpy's `transpose(x, (p0, p1, p2))`: `p0`, `p1`, `p2` are a
/// permutation of `0, 1, 2`; output dim `k` is `d[pk]`, written as steps (see the module doc).
#[op(name = "builtin/permute3", version = 1,
     signature<T: f16 | bf16 | f32 | f64>(x: T[d0, d1, d2], p0: u32, p1: u32, p2: u32
        where p0 < 3, p1 < 3, p2 < 3, p0 != p1, p0 != p2, p1 != p2)
        -> T[d0 + (d1 - d0) * min(p0, 1) + (d2 - d1) * (p0 / 2), d0 + (d1 - d0) * min(p1, 1) + (d2 - d1) * (p1 / 2), d0 + (d1 - d0) * min(p2, 1) + (d2 - d1) * (p2 / 2)],
     category = selection, tolerance = exact, nan = ordered,
     backward = vjp(permute3_vjp,
        kernel(wgsl = "kernels/permute3_vjp.wgsl", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(d0, d1, d2, p0, p1, p2)), threads = d0 * d1 * d2),
        kernel(cuda = "kernels/permute.cu", entry = "permute3_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(d0, d1, d2, p0, p1, p2)), threads = d0 * d1 * d2, block = 256)),
     subgradient = "none needed: a permutation; each cotangent goes back to the element moved (the inverse permutation)",
     cpu(permute3_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/permute3.wgsl", dtypes(T: f32), bindings(x: read, out: read_write, uniform(d0, d1, d2, p0, p1, p2)), threads = d0 * d1 * d2),
     kernel(cuda = "kernels/permute.cu", entry = "permute3_kernel", dtypes(T: f32), bindings(x: read, out: read_write, uniform(d0, d1, d2, p0, p1, p2)), threads = d0 * d1 * d2, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn permute3<T: Real>(x: &[T], p0: u32, p1: u32, p2: u32, d0: usize, d1: usize, d2: usize) -> Vec<T> {
    permuted(x, [d0, d1, d2, 1], perm3(p0, p1, p2))
}
/// VJP of `permute3`: the cotangent permuted back by the inverse permutation.
#[allow(clippy::too_many_arguments)]
pub fn permute3_vjp<T: Real>(_x: &[T], p0: u32, p1: u32, p2: u32, d0: usize, d1: usize, d2: usize, g: &[T]) -> Vec<T> {
    unpermuted(g, [d0, d1, d2, 1], perm3(p0, p1, p2))
}
/// `cpu` kernel of `permute3` (an indexed copy).
fn permute3_cpu(x: &[f32], p0: u32, p1: u32, p2: u32, d0: usize, d1: usize, d2: usize) -> Vec<f32> {
    let (d, perm) = ([d0, d1, d2, 1], perm3(p0, p1, p2));
    if !admitted(x.len(), d, perm) {
        return permute3(x, p0, p1, p2, d0, d1, d2);
    }
    fill_with(x.len(), |t| x[source(t, d, perm)])
}

/// The axes of `x` (dims `d0, d1, d2, d3`) permuted: output axis `k` is input axis `pk`
/// (`out.shape[k] = x.shape[pk]`), numpy's `transpose(x, (p0, p1, p2, p3))`: `p0`, `p1`, `p2`,
/// `p3` are a permutation of `0, 1, 2, 3`; output dim `k` is `d[pk]`, written as steps (see the
/// module doc).
#[op(name = "builtin/permute4", version = 1,
     signature<T: f16 | bf16 | f32 | f64>(x: T[d0, d1, d2, d3], p0: u32, p1: u32, p2: u32, p3: u32
        where p0 < 4, p1 < 4, p2 < 4, p3 < 4, p0 != p1, p0 != p2, p0 != p3, p1 != p2, p1 != p3, p2 != p3)
        -> T[d0 + (d1 - d0) * min(p0, 1) + (d2 - d1) * (p0 / 2) + (d3 - d2) * (p0 / 3), d0 + (d1 - d0) * min(p1, 1) + (d2 - d1) * (p1 / 2) + (d3 - d2) * (p1 / 3),
             d0 + (d1 - d0) * min(p2, 1) + (d2 - d1) * (p2 / 2) + (d3 - d2) * (p2 / 3), d0 + (d1 - d0) * min(p3, 1) + (d2 - d1) * (p3 / 2) + (d3 - d2) * (p3 / 3)],
     category = selection, tolerance = exact, nan = ordered,
     backward = vjp(permute4_vjp,
        kernel(wgsl = "kernels/permute4_vjp.wgsl", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(d0, d1, d2, d3, p0, p1, p2, p3)), threads = d0 * d1 * d2 * d3),
        kernel(cuda = "kernels/permute.cu", entry = "permute4_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(d0, d1, d2, d3, p0, p1, p2, p3)), threads = d0 * d1 * d2 * d3, block = 256)),
     subgradient = "none needed: a permutation; each cotangent goes back to the element moved (the inverse permutation)",
     cpu(permute4_cpu, dtypes(T: f32)),
     kernel(wgsl = "kernels/permute4.wgsl", dtypes(T: f32), bindings(x: read, out: read_write, uniform(d0, d1, d2, d3, p0, p1, p2, p3)), threads = d0 * d1 * d2 * d3),
     kernel(cuda = "kernels/permute.cu", entry = "permute4_kernel", dtypes(T: f32), bindings(x: read, out: read_write, uniform(d0, d1, d2, d3, p0, p1, p2, p3)), threads = d0 * d1 * d2 * d3, block = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
#[allow(clippy::too_many_arguments)]
pub fn permute4<T: Real>(x: &[T], p0: u32, p1: u32, p2: u32, p3: u32, d0: usize, d1: usize, d2: usize, d3: usize) -> Vec<T> {
    permuted(x, [d0, d1, d2, d3], perm4(p0, p1, p2, p3))
}
/// VJP of `permute4`: the cotangent permuted back by the inverse permutation.
#[allow(clippy::too_many_arguments)]
pub fn permute4_vjp<T: Real>(_x: &[T], p0: u32, p1: u32, p2: u32, p3: u32, d0: usize, d1: usize, d2: usize, d3: usize, g: &[T]) -> Vec<T> {
    unpermuted(g, [d0, d1, d2, d3], perm4(p0, p1, p2, p3))
}
/// `cpu` kernel of `permute4` (an indexed copy).
#[allow(clippy::too_many_arguments)]
fn permute4_cpu(x: &[f32], p0: u32, p1: u32, p2: u32, p3: u32, d0: usize, d1: usize, d2: usize, d3: usize) -> Vec<f32> {
    let (d, perm) = ([d0, d1, d2, d3], perm4(p0, p1, p2, p3));
    if !admitted(x.len(), d, perm) {
        return permute4(x, p0, p1, p2, p3, d0, d1, d2, d3);
    }
    fill_with(x.len(), |t| x[source(t, d, perm)])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// numpy's `transpose` by hand, on one rank-4 input: out[i0, i1, i2, i3] = x[j] with
    /// j[perm[k]] = i_k.
    #[test]
    fn permute4_moves_each_element_where_numpy_does() {
        let d = [2, 3, 1, 4];
        let x: Vec<f64> = (0..24).map(f64::from).collect();
        let perm = [2, 0, 3, 1];
        let out = permute4(&x, 2, 0, 3, 1, d[0], d[1], d[2], d[3]);
        let od = permuted_dims(d, perm);
        assert_eq!(od, [1, 2, 4, 3]);
        let mut t = 0;
        for i0 in 0..od[0] {
            for i1 in 0..od[1] {
                for i2 in 0..od[2] {
                    for i3 in 0..od[3] {
                        let mut j = [0; 4];
                        for (k, i) in [i0, i1, i2, i3].into_iter().enumerate() {
                            j[perm[k]] = i;
                        }
                        assert_eq!(out[t], x[((j[0] * d[1] + j[1]) * d[2] + j[2]) * d[3] + j[3]], "at {t}");
                        t += 1;
                    }
                }
            }
        }
        assert_eq!(permute4_vjp(&x, 2, 0, 3, 1, d[0], d[1], d[2], d[3], &out), x, "the VJP undoes the permutation");
    }

    #[test]
    fn permute3_with_the_last_two_axes_swapped_is_a_batch_of_transposes() {
        let x: Vec<f64> = (0..12).map(f64::from).collect();
        let out = permute3(&x, 0, 2, 1, 2, 2, 3);
        let mut want = super::super::transpose(&x[..6], 2, 3);
        want.extend(super::super::transpose(&x[6..], 2, 3));
        assert_eq!(out, want);
    }
}
