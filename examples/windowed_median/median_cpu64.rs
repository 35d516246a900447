//! The user's CPU kernel for the median's f64 instance (`cpu(windowed_median_cpu_f64, dtypes(T:
//! f64))` in `median.rs`), with the same toolkit as the f32 kernel ([`par`], [`with_isa!`]).
//! Bit-exact as the f32 kernel is: every f64 maps to its IEEE total-order key (an i64 whose
//! signed order is `f64::total_cmp`, [`key64`], an involution on the bits), the medians are
//! taken on keys and mapped back, so NaNs, signed zeros and infinities come out exactly as the
//! reference's `win[w / 2]`.
//!
//! - `w <= 7`: [`LANES`] consecutive outputs at once, the `w` shifted key rows reduced by the
//!   f32 kernel's generated networks (`median_net.rs`) over a lane array ([`K8`]) whose
//!   lane-wise min/max the compiler vectorises under the instruction set `with_isa!` enables
//!   (AVX-512 has 64-bit integer min/max; AVX2 compares and blends).
//! - `w >= 9`: each window's keys copied and the middle one selected (`select_nth_unstable`).
//!
//! [`par`]: op_runtime::cpu::par
//! [`with_isa!`]: op_runtime::with_isa

use super::median_net::{med3, med5, med7, MinMax};
use op_runtime::cpu::par::for_each_chunk;
use op_runtime::cpu::simd::Isa;
use op_runtime::with_isa;

/// Outputs per chunk handed to a thread (at least; see [`for_each_chunk`]).
const GRAIN: usize = 16 * 1024;
/// Outputs per key-buffer tile.
const TILE: usize = 4096;
/// Outputs reduced together by the networks.
const LANES: usize = 8;

/// The total-order key of `v`: `f64::total_cmp` is the signed order of the keys.
#[inline(always)]
pub fn key64(v: f64) -> i64 {
    let b = v.to_bits() as i64;
    b ^ (((b >> 63) as u64) >> 1) as i64
}

/// The inverse of [`key64`] (the same map).
#[inline(always)]
pub fn unkey64(k: i64) -> f64 {
    f64::from_bits((k ^ (((k >> 63) as u64) >> 1) as i64) as u64)
}

/// [`LANES`] keys, one output each.
#[derive(Clone, Copy)]
pub(crate) struct K8([i64; LANES]);

impl MinMax for K8 {
    #[inline(always)]
    unsafe fn min(self, o: Self) -> Self {
        K8(std::array::from_fn(|i| self.0[i].min(o.0[i])))
    }
    #[inline(always)]
    unsafe fn max(self, o: Self) -> Self {
        K8(std::array::from_fn(|i| self.0[i].max(o.0[i])))
    }
}

/// `out[i] = median(x[i .. i + w])` in the IEEE total order, bit-identical to the reference.
/// Arguments the signature does not admit (never passed by dispatch) run the reference.
pub fn windowed_median_cpu_f64(x: &[f64], w: u32) -> Vec<f64> {
    let w = w as usize;
    if w.is_multiple_of(2) || w > 31 || w > x.len() {
        return super::super::windowed_median(x, w as u32);
    }
    let mut out = vec![0f64; x.len() + 1 - w];
    let isa = Isa::current();
    for_each_chunk(&mut out, GRAIN, |off, o| {
        let x = &x[off..off + o.len() + w - 1];
        with_isa!(isa, V, (x: &[f64], w: usize, o: &mut [f64]) -> (), chunk(x, w, o))
    });
    out
}

/// One chunk: `x.len() == out.len() + w - 1`.
#[inline(always)]
fn chunk(x: &[f64], w: usize, out: &mut [f64]) {
    match w {
        1 => out.copy_from_slice(x),
        3 => net::<3>(x, out, |v| unsafe { med3(v) }),
        5 => net::<5>(x, out, |v| unsafe { med5(v) }),
        7 => net::<7>(x, out, |v| unsafe { med7(v) }),
        _ => {
            let mut win = [0i64; 31];
            for (i, o) in out.iter_mut().enumerate() {
                let keys = &mut win[..w];
                for (k, v) in keys.iter_mut().zip(&x[i..i + w]) {
                    *k = key64(*v);
                }
                *o = unkey64(*keys.select_nth_unstable(w / 2).1);
            }
        }
    }
}

/// The network path for `W <= 7`: keys of a tile converted once, then [`LANES`] outputs per
/// step from the `W` shifted key rows (the last step through zero-padded rows, its extra lanes
/// dropped).
#[inline(always)]
fn net<const W: usize>(x: &[f64], out: &mut [f64], med: impl Fn(&mut [K8; W]) -> K8) {
    let mut keys = vec![0i64; TILE + W - 1 + LANES];
    let mut o = 0;
    while o < out.len() {
        let n = (out.len() - o).min(TILE);
        for (k, v) in keys.iter_mut().zip(&x[o..o + n + W - 1]) {
            *k = key64(*v);
        }
        let mut i = 0;
        while i < n {
            let mut rows = [K8([0; LANES]); W];
            for (j, r) in rows.iter_mut().enumerate() {
                r.0.copy_from_slice(&keys[i + j..i + j + LANES]);
            }
            let m = med(&mut rows);
            for (d, k) in out[o + i..o + n.min(i + LANES)].iter_mut().zip(m.0) {
                *d = unkey64(k);
            }
            i += LANES;
        }
        o += n;
    }
}
