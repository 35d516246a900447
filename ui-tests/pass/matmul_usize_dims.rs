//! A contraction whose reference takes the dim symbols it needs as trailing `usize` parameters.

use op_runtime::{op, Real};

/// Matrix product of an `m x k` and a `k x n` matrix, row-major.
#[op(
    name = "ui/pass/matmul", version = 1,
    signature(a: f32[m, k], b: f32[k, n]) -> f32[m, n],
    category = contraction, tolerance = accum(4),
    backward = vjp(matmul_vjp),
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

/// `da = g b^T`, `db = a^T g`.
pub fn matmul_vjp<T: Real>(a: &[T], b: &[T], m: usize, k: usize, n: usize, g: &[T]) -> (Vec<T>, Vec<T>) {
    let mut da = vec![T::zero(); m * k];
    let mut db = vec![T::zero(); k * n];
    for i in 0..m {
        for j in 0..n {
            for p in 0..k {
                da[i * k + p] += g[i * n + j] * b[p * n + j];
                db[p * n + j] += a[i * k + p] * g[i * n + j];
            }
        }
    }
    (da, db)
}

pub(crate) fn main() {
    let op = op_runtime::RegisteredOp::load(&matmul::DECL).expect("the declaration loads");
    println!("{} {}", op.id(), op.hash_hex());
    assert_eq!(matmul(&[1.0f32, 2.0], &[3.0f32, 4.0], 1, 2, 1), vec![11.0]);
}
