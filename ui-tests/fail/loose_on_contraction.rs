//! Rule (category x tolerance): a `contraction` needs `accum(k)`; a matmul cannot slip past
//! conformance with `loose`.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/matmul",
    version = 1,
    signature(a: f32[m, k], b: f32[k, n]) -> f32[m, n],
    category = contraction,
    tolerance = loose(1e-3, 1e-5),
    backward = none,
)]
pub fn matmul<T: Real>(a: &[T], b: &[T], m: usize, k: usize, n: usize) -> Vec<T> {
    let mut c = vec![T::zero(); m * n];
    for i in 0..m {
        for j in 0..n {
            for p in 0..k {
                c[i * n + j] += a[i * k + p] * b[p * n + j];
            }
        }
    }
    c
}

fn main() {
    let _ = matmul(&[1.0f32], &[2.0f32], 1, 1, 1);
}
