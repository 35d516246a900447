//! Every error of one declaration is reported in one compile: a bad name, an illegal tolerance,
//! an unbound output symbol, a missing subgradient and a workspace op without a licence, while
//! the function is still emitted (main calls it).

use op_runtime::{op, Real};

/// Routes each cotangent to the selected element.
pub fn windowed_median_vjp<T: Real>(x: &[T], _w: u32, g: &[T]) -> Vec<T> {
    let mut grad = vec![T::zero(); x.len()];
    for (i, gi) in g.iter().enumerate() {
        grad[i] += *gi;
    }
    grad
}

#[op(
    name = "ui/test/Median",
    version = 1,
    signature(x: f32[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> f32[m - w + 1],
    category = selection,
    tolerance = ulp(1),
    backward = vjp(windowed_median_vjp),
    visibility = workspace,
)]
pub fn windowed_median<T: Real>(x: &[T], w: u32) -> Vec<T> {
    let w = w as usize;
    (0..x.len() + 1 - w)
        .map(|i| {
            let mut win = x[i..i + w].to_vec();
            win.sort_by(|a, b| a.partial_cmp(b).unwrap());
            win[w / 2]
        })
        .collect()
}

fn main() {
    let _ = windowed_median(&[1.0f32, 3.0, 2.0], 3);
}
