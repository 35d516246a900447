//! The user's CPU kernel for the median's f64 instance (`cpu(windowed_median_cpu_f64, dtypes(T:
//! f64))` in `median.rs`): the f32 kernel's structure (`median_cpu.rs`) on 64-bit keys, with the
//! same toolkit ([`par`], [`with_isa!`]) and i64 key lanes of its own (`keys64.rs`: 8 lanes on
//! AVX-512F, 4 on AVX2, 8 portable).
//!
//! Bit-exact as the f32 kernel is: every f64 maps to its IEEE total-order key (an i64 whose
//! signed order is `f64::total_cmp`, [`key64`], an involution on the bits), the medians are
//! taken on keys and mapped back, so NaNs, signed zeros and infinities come out exactly as the
//! reference's `win[w / 2]`.
//!
//! - `w <= 7`: `L` consecutive outputs per key vector; the `w` shifted key vectors are loaded
//!   from a per-tile key buffer and reduced by the f32 kernel's generated networks
//!   (`median_net.rs`).
//! - `w >= 9`: the lane-streaming sorted window: a tile's outputs are cut into `L` runs, one per
//!   lane, the input transposed so that step `t` of every run is one vector; each lane keeps its
//!   window sorted in `w` registers, deletes the outgoing key and inserts the incoming one
//!   branch-free and emits the middle slot; the medians are transposed back.
//!
//! [`par`]: op_runtime::cpu::par
//! [`with_isa!`]: op_runtime::with_isa

#[path = "keys64.rs"]
mod keys64;

use super::median_net::{med3, med5, med7};
use keys64::{key64, unkey64, KeyLanes, K64};
use op_runtime::cpu::hostmem;
use op_runtime::cpu::par::for_each_chunk;
use op_runtime::cpu::simd::Isa;
use op_runtime::with_isa;

/// Outputs per chunk handed to a thread (at least; see [`for_each_chunk`]).
const GRAIN: usize = 16 * 1024;
/// Outputs per key-buffer tile of the network path.
const NET_TILE: usize = 4096;
/// Steps per lane in one tile of the sorted-window path (a tile covers `L * RMAX` outputs).
const RMAX: usize = 256;

/// `out[i] = median(x[i .. i + w])` in the IEEE total order, bit-identical to the reference.
/// Arguments the signature does not admit (never passed by dispatch) run the reference.
pub fn windowed_median_cpu_f64(x: &[f64], w: u32) -> Vec<f64> {
    let w = w as usize;
    if w.is_multiple_of(2) || w > 31 || w > x.len() {
        return super::super::windowed_median(x, w as u32);
    }
    // Every element is written (see the f32 kernel).
    let mut out = hostmem::for_overwrite(x.len() + 1 - w);
    let isa = Isa::current();
    for_each_chunk(&mut out, GRAIN, |off, o| median_chunk(isa, &x[off..off + o.len() + w - 1], w, o));
    out
}

/// One chunk on one thread: `x.len() == out.len() + w - 1`, `w` odd in `1..=31`.
fn median_chunk(isa: Isa, x: &[f64], w: usize, out: &mut [f64]) {
    if out.is_empty() {
        return;
    }
    if w == 1 {
        out.copy_from_slice(x);
        return;
    }
    with_isa!(isa, V, (x: &[f64], w: usize, out: &mut [f64]) -> (), by_window::<<V as KeyLanes>::K>(x, w, out))
}

/// Selection-network path for `w <= 7`: `L` consecutive outputs per key vector. The keys of a
/// tile of [`NET_TILE`] outputs are converted once into a buffer; each output vector loads its
/// `w` shifted key vectors (unaligned) and runs the pruned median network `$med`. A macro (as
/// in the f32 kernel) so that the network inlines with the caller's target features.
macro_rules! net_chunk {
    ($K:ty, $w:literal, $med:path, $x:expr, $out:expr) => {{
        let (x, out): (&[f64], &mut [f64]) = ($x, $out);
        let l = <$K as K64>::L;
        let mut kbuf = vec![0i64; NET_TILE + $w - 1 + 8];
        let mut o = 0;
        while o < out.len() {
            let n = (out.len() - o).min(NET_TILE);
            let xs = &x[o..o + n + $w - 1];
            let xp = xs.as_ptr() as *const i64;
            let kp = kbuf.as_mut_ptr();
            // SAFETY: `kbuf` holds `n + w - 1 + 8` keys, so every `L`-lane load below (at most
            // `i + w - 1 + L` with `i < n`) is inside it; `xs` has `n + w - 1` values read in
            // whole vectors while they fit; the last output vector is stored through a buffer.
            unsafe {
                let mut i = 0;
                while i + l <= xs.len() {
                    <$K as K64>::load(xp.add(i)).key().store(kp.add(i));
                    i += l;
                }
                for j in i..xs.len() {
                    *kp.add(j) = key64(xs[j]);
                }
                let op = out.as_mut_ptr().add(o) as *mut i64;
                let mut i = 0;
                while i < n {
                    let mut v = [<$K as K64>::splat(0); $w];
                    for (j, v) in v.iter_mut().enumerate() {
                        *v = <$K as K64>::load(kp.add(i + j));
                    }
                    let m = $med(&mut v).key();
                    if i + l <= n {
                        m.store(op.add(i));
                    } else {
                        let mut t = [0i64; 8];
                        m.store(t.as_mut_ptr());
                        std::ptr::copy_nonoverlapping(t.as_ptr(), op.add(i), n - i);
                    }
                    i += l;
                }
            }
            o += n;
        }
    }};
}

/// `w` as a constant: the network for `w <= 7`, the sorted window of `w` registers above.
#[inline(always)]
fn by_window<K: K64>(x: &[f64], w: usize, out: &mut [f64]) {
    match w {
        3 => net_chunk!(K, 3, med3, x, out),
        5 => net_chunk!(K, 5, med5, x, out),
        7 => net_chunk!(K, 7, med7, x, out),
        9 => chunk::<K, 9>(x, out),
        11 => chunk::<K, 11>(x, out),
        13 => chunk::<K, 13>(x, out),
        15 => chunk::<K, 15>(x, out),
        17 => chunk::<K, 17>(x, out),
        19 => chunk::<K, 19>(x, out),
        21 => chunk::<K, 21>(x, out),
        23 => chunk::<K, 23>(x, out),
        25 => chunk::<K, 25>(x, out),
        27 => chunk::<K, 27>(x, out),
        29 => chunk::<K, 29>(x, out),
        31 => chunk::<K, 31>(x, out),
        // Even or out of range: excluded by the caller.
        _ => {}
    }
}

/// Sorted-window path, one chunk: tiles of at most `L * RMAX` outputs.
#[inline(always)]
fn chunk<K: K64, const W: usize>(x: &[f64], out: &mut [f64]) {
    let l = K::L;
    let mut tbuf = vec![0i64; (RMAX + W - 1 + 8) * l];
    let mut obuf = vec![0i64; (RMAX + 8) * l];
    let mut o = 0;
    while o < out.len() {
        let n = (out.len() - o).min(l * RMAX);
        tile::<K, W>(&x[o..o + n + W - 1], &mut out[o..o + n], &mut tbuf, &mut obuf);
        o += n;
    }
}

/// One tile: `x.len() == out.len() + W - 1`, `1 <= out.len() <= L * RMAX`. Lane `j` computes
/// the outputs `start[j] .. start[j] + r` (the last lanes may overlap their neighbours when
/// the tile is not a multiple of `L`; they then compute identical values).
#[inline(always)]
fn tile<K: K64, const W: usize>(x: &[f64], out: &mut [f64], tbuf: &mut [i64], obuf: &mut [i64]) {
    let l = K::L;
    let n = out.len();
    let r = n.div_ceil(l);
    let mut start = [0usize; 8];
    for (j, s) in start.iter_mut().enumerate().take(l) {
        *s = (j * r).min(n - r);
    }
    transpose_in::<K>(x, &start, r + W - 1, tbuf);
    // SAFETY: `tbuf` holds `(r + W - 1) * L` keys and `obuf` `r * L` (sized by `chunk`).
    unsafe { stream::<K, W>(tbuf.as_ptr(), obuf.as_mut_ptr(), r) };
    transpose_out::<K>(obuf, &start, r, out);
}

/// `tbuf[t * L + j] = key(x[start[j] + t])` for `t < tlen`: `L x L` register transposes while
/// whole blocks fit, then element by element.
#[inline(always)]
fn transpose_in<K: K64>(x: &[f64], start: &[usize; 8], tlen: usize, tbuf: &mut [i64]) {
    let l = K::L;
    let xp = x.as_ptr() as *const i64;
    let mut t0 = 0;
    // SAFETY: lane `j` reads `x[start[j] + t]` for `t < tlen`, and `start[j] + tlen <= x.len()`;
    // `tbuf` has `tlen * L` keys.
    unsafe {
        let mut base = [xp; 8];
        for (j, p) in base.iter_mut().enumerate() {
            *p = xp.add(start[j.min(l - 1)]);
        }
        while t0 + l <= tlen {
            let mut src = base;
            for p in src.iter_mut() {
                *p = p.add(t0);
            }
            K::transpose_key(&src, tbuf.as_mut_ptr().add(t0 * l));
            t0 += l;
        }
    }
    for t in t0..tlen {
        for j in 0..l {
            tbuf[t * l + j] = key64(x[start[j] + t]);
        }
    }
}

/// `out[start[j] + t] = unkey(obuf[t * L + j])` for `t < r`: the inverse of [`transpose_in`].
#[inline(always)]
fn transpose_out<K: K64>(obuf: &[i64], start: &[usize; 8], r: usize, out: &mut [f64]) {
    let l = K::L;
    let outp = out.as_mut_ptr() as *mut i64;
    let mut t0 = 0;
    // SAFETY: lane `j` writes `out[start[j] + t]` for `t < r`, and `start[j] + r <= out.len()`.
    unsafe {
        let mut base = [outp; 8];
        for (j, p) in base.iter_mut().enumerate() {
            *p = outp.add(start[j.min(l - 1)]);
        }
        while t0 + l <= r {
            let mut dst = base;
            for p in dst.iter_mut() {
                *p = p.add(t0);
            }
            K::transpose_unkey(obuf.as_ptr().add(t0 * l), &dst);
            t0 += l;
        }
    }
    for t in t0..r {
        for j in 0..l {
            out[start[j] + t] = unkey64(obuf[t * l + j]);
        }
    }
}

/// The lanes' sorted windows over `r` steps: keys from `tp` (step `t` of every lane at
/// `tp + t * L`), medians to `op` (likewise).
///
/// Safety: `tp` holds `(r + W - 1) * L` keys, `op` room for `r * L`; the key vector's target
/// feature is enabled.
#[inline(always)]
unsafe fn stream<K: K64, const W: usize>(tp: *const i64, op: *mut i64, r: usize) {
    let l = K::L;
    unsafe {
        // The first window sorted by insertion into a run of +MAX sentinels (a key equal to
        // i64::MAX is indistinguishable from a sentinel, which is fine: only the multiset
        // counts).
        let mut s = [K::splat(i64::MAX); W];
        for j in 0..W {
            let nv = K::load(tp.add(j * l));
            let mut k = j;
            while k >= 1 {
                s[k] = s[k].min(s[k - 1].max(nv));
                k -= 1;
            }
            s[0] = s[0].min(nv);
        }
        s[W / 2].store(op);
        for t in 1..r {
            let old = K::load(tp.add((t - 1) * l));
            let nv = K::load(tp.add((t + W - 1) * l));
            // Delete `old` (shift the slots above it down), then insert `nv`.
            let mut d = [K::splat(0); W];
            for k in 0..W - 1 {
                d[k] = s[k].sel_lt(old, s[k], s[k + 1]);
            }
            s[0] = d[0].min(nv);
            for k in 1..W - 1 {
                s[k] = d[k].min(d[k - 1].max(nv));
            }
            s[W - 1] = d[W - 2].max(nv);
            s[W / 2].store(op.add(t * l));
        }
    }
}
