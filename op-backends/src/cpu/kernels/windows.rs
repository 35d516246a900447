//! The `cpu` kernel of `unfold`: the windows of a signal copied as rows. Owns the copy; must not
//! allocate the output or validate shapes (the built-in's `cpu` function and dispatch do).
//!
//! Precondition: `1 <= w`, `s >= 1`, `out.len() == ((x.len() - w) / s + 1) * w`.

use crate::cpu::par::for_each_chunk;
use std::mem::MaybeUninit;

/// Output elements per chunk (at least).
const GRAIN: usize = 64 * 1024;

/// `out[i w + j] = x[i s + j]`: each chunk copies the runs of window elements it covers.
pub fn unfold(x: &[f32], w: usize, s: usize, out: &mut [MaybeUninit<f32>]) {
    for_each_chunk(out, GRAIN, |off, o| {
        let mut k = 0;
        while k < o.len() {
            let (i, j) = ((off + k) / w, (off + k) % w);
            let take = (w - j).min(o.len() - k);
            let src = &x[i * s + j..i * s + j + take];
            for (d, v) in o[k..k + take].iter_mut().zip(src) {
                d.write(*v);
            }
            k += take;
        }
    });
}
