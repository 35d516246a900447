//! The `cpu` kernels of the built-ins, called by their `cpu = path` functions
//! (`builtins::*_cpu`, which allocate the outputs). Owns the kernels' vector code, blocking
//! and summation orders; must not validate shapes (dispatch did; each module states its
//! preconditions) or choose threads (they split work through `par::for_each_chunk` only, so
//! every result is the same on any number of threads). Their tests are at the top floor
//! (`builtins/cpu_tests.rs`), where they can run the kernels through dispatch and conformance.

// Tile and lane loops index several arrays by the same position (registers of one tile).
#![allow(clippy::needless_range_loop)]

pub mod conv1d;
pub mod conv1d_f64;
pub mod dtype;
pub mod elementwise;
pub mod half;
pub mod matmul;
pub mod pointwise;
pub mod reduce;
pub mod rows;
pub mod vjp;
pub mod windows;

/// Whether any element is infinite or NaN (a vectorisable scan).
#[inline(always)]
fn any_non_finite(x: &[f32]) -> bool {
    x.iter().map(|v| v.to_bits() & 0x7fff_ffff).max().unwrap_or(0) >= 0x7f80_0000
}

/// `sum_p a[p] * b[p]` evaluated in f64 (products of f32 are exact in f64 and no partial sum
/// can overflow), rounded once: the contractions' non-finite fix-up.
#[inline(never)]
fn dot_f64<'a>(a: &[f32], b: impl Iterator<Item = &'a f32>) -> f32 {
    let mut s = 0f64;
    for (x, y) in a.iter().zip(b) {
        s += *x as f64 * *y as f64;
    }
    s as f32
}
