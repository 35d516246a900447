//! The design's windowed median: odd `w <= 31`, output `n - w + 1`, selection/exact, a VJP and a
//! WGSL kernel whose `+ 1u` guard keeps threads inside the output.

use op_runtime::{op, Real};

/// Median of every odd-sized window of `x` (`w` at most 31): out[i] = median(x[i .. i + w]).
#[op(
    name = "user/example/windowed_median", version = 1,
    signature(x: f32[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> f32[n - w + 1],
    category = selection, tolerance = exact,
    backward = vjp(windowed_median_vjp),
    subgradient = "cotangent routed to the selected element",
    kernel(wgsl = "../kernels/windowed_median.wgsl",
           bindings(x: read, out: read_write, uniform(n, w)), threads = n - w + 1),
    license = "MIT",
)]
pub fn windowed_median<T: Real>(x: &[T], w: u32) -> Vec<T> {
    let w = w as usize;
    let mut win: Vec<T> = Vec::with_capacity(w);
    (0..x.len() + 1 - w)
        .map(|i| {
            win.clear();
            win.extend_from_slice(&x[i..i + w]);
            win.sort_by(|a, b| a.total_cmp(b));
            win[w / 2]
        })
        .collect()
}

/// Index (within `x`) of the element each window selects.
pub fn argmedian<T: Real>(x: &[T], w: u32) -> Vec<usize> {
    let w = w as usize;
    (0..x.len() + 1 - w)
        .map(|i| {
            let mut idx: Vec<usize> = (i..i + w).collect();
            idx.sort_by(|a, b| x[*a].total_cmp(&x[*b]));
            idx[w / 2]
        })
        .collect()
}

/// VJP: each output's cotangent is routed to the element its window selected.
pub fn windowed_median_vjp<T: Real>(x: &[T], w: u32, g: &[T]) -> Vec<T> {
    let mut grad = vec![T::zero(); x.len()];
    for (gi, j) in g.iter().zip(argmedian(x, w)) {
        grad[j] += *gi;
    }
    grad
}

pub(crate) fn main() {
    let op = op_runtime::RegisteredOp::load(&windowed_median::DECL).expect("the declaration loads");
    assert_eq!(op.id(), "user/example/windowed_median@1");
    println!("{} {}", op.id(), op.hash_hex());
    assert_eq!(windowed_median(&[3.0f32, 1.0, 2.0, 5.0], 3), vec![2.0, 2.0]);
}
