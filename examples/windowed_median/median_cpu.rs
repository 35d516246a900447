//! The user's fast CPU kernel for the windowed median (`cpu = windowed_median_cpu` in
//! `median.rs`): written with the runtime's public toolkit only, [`par`] to split the outputs
//! over the CPU backend's threads and [`simd`] for vectors on whatever instruction set the
//! machine has. No engine change: conformance holds it bit-exact to the reference like any
//! kernel.
//!
//! One kernel for both of the median's CPU instances, generic over the key width ([`Keys`],
//! `keys.rs`): the f32 instance on the runtime's i32 key lanes, the f64 instance on i64 key
//! lanes written in user code.
//!
//! Bit-exact by construction: every float is mapped to its IEEE total-order key (an integer
//! of its width whose signed order is exactly `total_cmp`, mapped back by the same map), the
//! medians are taken on keys, so NaNs of either sign and any payload, signed zeros and
//! infinities come out exactly as the reference's `win[w / 2]`. No sort per window:
//!
//! - `w <= 7`: `L` consecutive outputs per key vector (16 f32 or 8 f64 keys on AVX-512, 8 or
//!   4 on AVX2, 8 portable); the `w` shifted key vectors are loaded from a per-tile key buffer
//!   and reduced by a pruned Batcher median-selection network (`median_net.rs`, generated: 4,
//!   12 and 22 min/max for w = 3, 5, 7).
//! - `w >= 9` ("lane-streaming sorted window"): a tile's outputs are cut into `L` runs, one per
//!   lane; the tile's input is transposed so that step `t` of every run is one vector. Each lane
//!   keeps its window sorted in `w` registers; a step deletes the outgoing key and inserts the
//!   incoming one branch-free (`d[k] = s[k] < old ? s[k] : s[k+1]`,
//!   `s'[k] = min(d[k], max(d[k-1], new))`: about 4 vector ops per slot) and emits `s[w / 2]`;
//!   the medians are transposed back. `w` is a const generic, so the window lives in registers.
//!
//! The path split at 7 was chosen by measurement.
//!
//! [`par`]: op_runtime::cpu::par
//! [`simd`]: op_runtime::cpu::simd

#[path = "median_net.rs"]
mod median_net;

#[path = "keys.rs"]
mod keys;

use keys::{KeyLanes64, Keys};
use op_runtime::cpu::hostmem;
use op_runtime::cpu::par::for_each_chunk;
use op_runtime::cpu::simd::{key, Isa, Vf};
use op_runtime::{with_isa, Real};

/// Outputs per chunk handed to a thread (at least; see [`for_each_chunk`]).
const GRAIN: usize = 16 * 1024;
/// Outputs per key-buffer tile of the network path.
const NET_TILE: usize = 4096;
/// Steps per lane in one tile of the sorted-window path (a tile covers `L * RMAX` outputs).
const RMAX: usize = 256;

/// `out[i] = median(x[i .. i + w])` in the IEEE total order, bit-identical to the reference:
/// the f32 instance's kernel.
pub fn windowed_median_cpu(x: &[f32], w: u32) -> Vec<f32> {
    median_cpu(x, w)
}

/// The f64 instance's kernel (`cpu(windowed_median_cpu_f64, dtypes(T: f64))`): the same
/// kernel on 64-bit keys.
pub fn windowed_median_cpu_f64(x: &[f64], w: u32) -> Vec<f64> {
    median_cpu(x, w)
}

/// A float type the kernel serves: its fresh output buffer and its key vectors on each
/// instruction set.
trait KeyFloat: Real {
    /// A buffer of `n` elements, every one of which the kernel writes: a kept buffer of a
    /// dropped tensor, or fresh pages advised for huge pages (a 64 MB output then costs 32
    /// page faults, not 16k).
    fn for_overwrite(n: usize) -> Vec<Self>;
    /// [`by_window`] on the key vector of `isa`: `x.len() == out.len() + w - 1`, `w` odd in
    /// `3..=31`.
    fn by_isa(isa: Isa, x: &[Self], w: usize, out: &mut [Self]);
}

impl KeyFloat for f32 {
    fn for_overwrite(n: usize) -> Vec<f32> {
        hostmem::for_overwrite(n)
    }
    fn by_isa(isa: Isa, x: &[f32], w: usize, out: &mut [f32]) {
        with_isa!(isa, V, (x: &[f32], w: usize, out: &mut [f32]) -> (), by_window::<<V as Vf>::I>(x, w, out))
    }
}

impl KeyFloat for f64 {
    fn for_overwrite(n: usize) -> Vec<f64> {
        hostmem::for_overwrite(n)
    }
    fn by_isa(isa: Isa, x: &[f64], w: usize, out: &mut [f64]) {
        with_isa!(isa, V, (x: &[f64], w: usize, out: &mut [f64]) -> (), by_window::<<V as KeyLanes64>::K>(x, w, out))
    }
}

/// The kernel of either width. Arguments the signature does not admit (never passed by
/// dispatch, which validated `w % 2 == 1, 1 <= w <= 31, w <= n`) run the reference.
fn median_cpu<T: KeyFloat>(x: &[T], w: u32) -> Vec<T> {
    let w = w as usize;
    if w.is_multiple_of(2) || w > 31 || w > x.len() {
        return super::windowed_median(x, w as u32);
    }
    let mut out = T::for_overwrite(x.len() + 1 - w);
    let isa = Isa::current();
    for_each_chunk(&mut out, GRAIN, |off, o| median_chunk(isa, &x[off..off + o.len() + w - 1], w, o));
    out
}

/// The VJP's CPU kernel (`cpu(windowed_median_vjp_cpu, ...)` inside `vjp(...)` in `median.rs`):
/// each output's cotangent routed to the element its window selected, bit-identical to the rule
/// `windowed_median_vjp`. The medians come from [`windowed_median_cpu`]; the selected element
/// of window `i` is then found without a sort: the reference's stable sort by total order puts
/// the `c` keys below the median first and the keys equal to it in index order, so it selects
/// the `(w / 2 - c)`-th equal key of the window. Those indices are found in parallel; the
/// cotangents are then added in the rule's order (window by window, from `+0`). Arguments the
/// signature does not admit run the rule.
pub fn windowed_median_vjp_cpu(x: &[f32], w: u32, g: &[f32]) -> Vec<f32> {
    let wu = w as usize;
    if wu.is_multiple_of(2) || wu > 31 || wu > x.len() || g.len() != x.len() + 1 - wu {
        return super::windowed_median_vjp(x, w, g);
    }
    let medians = windowed_median_cpu(x, w);
    let mut selected = vec![0usize; medians.len()];
    for_each_chunk(&mut selected, GRAIN, |off, sel| {
        for (i, s) in sel.iter_mut().enumerate() {
            let start = off + i;
            let window = &x[start..start + wu];
            let m = key(medians[start]);
            let below = window.iter().filter(|v| key(**v) < m).count();
            let rank = wu / 2 - below;
            let at = window.iter().enumerate().filter(|(_, v)| key(**v) == m).nth(rank).map_or(0, |(j, _)| j);
            *s = start + at;
        }
    });
    let mut grad = vec![0f32; x.len()];
    for (gi, j) in g.iter().zip(&selected) {
        grad[*j] += *gi;
    }
    grad
}

/// One chunk on one thread: `x.len() == out.len() + w - 1`, `w` odd in `1..=31`.
fn median_chunk<T: KeyFloat>(isa: Isa, x: &[T], w: usize, out: &mut [T]) {
    if out.is_empty() {
        return;
    }
    if w == 1 {
        out.copy_from_slice(x);
        return;
    }
    T::by_isa(isa, x, w, out)
}

/// Selection-network path for `w <= 7`: `L` consecutive outputs per vector. The keys of a tile
/// of [`NET_TILE`] outputs are converted once into a buffer; each output vector loads its `w`
/// shifted key vectors (unaligned) and runs the pruned median network `$med`. A macro rather
/// than a function so that the network inlines with the caller's target features.
macro_rules! net_chunk {
    ($K:ty, $w:literal, $med:path, $x:expr, $out:expr) => {{
        let (x, out): (&[<$K as Keys>::Float], &mut [<$K as Keys>::Float]) = ($x, $out);
        let l = <$K as Keys>::L;
        let mut kbuf = vec![<$K as Keys>::Key::default(); NET_TILE + $w - 1 + 16];
        let mut o = 0;
        while o < out.len() {
            let n = (out.len() - o).min(NET_TILE);
            let xs = &x[o..o + n + $w - 1];
            let xp = xs.as_ptr().cast::<<$K as Keys>::Key>();
            let kp = kbuf.as_mut_ptr();
            // SAFETY: `kbuf` holds `n + w - 1 + 16` keys, so every `L`-lane load below (at most
            // `i + w - 1 + L` with `i < n`) is inside it; `xs` has `n + w - 1` floats read in
            // whole vectors while they fit; the last output vector is stored through a buffer.
            unsafe {
                let mut i = 0;
                while i + l <= xs.len() {
                    <$K as Keys>::load(xp.add(i)).key().store(kp.add(i));
                    i += l;
                }
                for j in i..xs.len() {
                    *kp.add(j) = <$K as Keys>::key_of(xs[j]);
                }
                let op = out.as_mut_ptr().add(o).cast::<<$K as Keys>::Key>();
                let mut i = 0;
                while i < n {
                    let mut v = [<$K as Keys>::splat(Default::default()); $w];
                    for (j, v) in v.iter_mut().enumerate() {
                        *v = <$K as Keys>::load(kp.add(i + j));
                    }
                    let m = $med(&mut v).key();
                    if i + l <= n {
                        m.store(op.add(i));
                    } else {
                        let mut t = [<$K as Keys>::Key::default(); 16];
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
fn by_window<K: Keys>(x: &[K::Float], w: usize, out: &mut [K::Float]) {
    match w {
        3 => net_chunk!(K, 3, median_net::med3, x, out),
        5 => net_chunk!(K, 5, median_net::med5, x, out),
        7 => net_chunk!(K, 7, median_net::med7, x, out),
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
fn chunk<K: Keys, const W: usize>(x: &[K::Float], out: &mut [K::Float]) {
    let l = K::L;
    let mut tbuf = vec![K::Key::default(); (RMAX + W - 1 + 16) * l];
    let mut obuf = vec![K::Key::default(); (RMAX + 16) * l];
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
fn tile<K: Keys, const W: usize>(x: &[K::Float], out: &mut [K::Float], tbuf: &mut [K::Key], obuf: &mut [K::Key]) {
    let l = K::L;
    let n = out.len();
    let r = n.div_ceil(l);
    let mut start = [0usize; 16];
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
fn transpose_in<K: Keys>(x: &[K::Float], start: &[usize; 16], tlen: usize, tbuf: &mut [K::Key]) {
    let l = K::L;
    let xp = x.as_ptr().cast::<K::Key>();
    let mut t0 = 0;
    // SAFETY: lane `j` reads `x[start[j] + t]` for `t < tlen`, and `start[j] + tlen <= x.len()`;
    // `tbuf` has `tlen * L` keys.
    unsafe {
        let mut base = [xp; 16];
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
            tbuf[t * l + j] = K::key_of(x[start[j] + t]);
        }
    }
}

/// `out[start[j] + t] = unkey(obuf[t * L + j])` for `t < r`: the inverse of [`transpose_in`].
#[inline(always)]
fn transpose_out<K: Keys>(obuf: &[K::Key], start: &[usize; 16], r: usize, out: &mut [K::Float]) {
    let l = K::L;
    let outp = out.as_mut_ptr().cast::<K::Key>();
    let mut t0 = 0;
    // SAFETY: lane `j` writes `out[start[j] + t]` for `t < r`, and `start[j] + r <= out.len()`.
    unsafe {
        let mut base = [outp; 16];
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
            out[start[j] + t] = K::float_of(obuf[t * l + j]);
        }
    }
}

/// The lanes' sorted windows over `r` steps: keys from `tp` (step `t` of every lane at
/// `tp + t * L`), medians to `op` (likewise).
///
/// Safety: `tp` holds `(r + W - 1) * L` keys, `op` room for `r * L`; the key vector's target
/// feature is enabled.
#[inline(always)]
unsafe fn stream<K: Keys, const W: usize>(tp: *const K::Key, op: *mut K::Key, r: usize) {
    let l = K::L;
    // The first window sorted by insertion into a run of +MAX sentinels (a key equal to the
    // largest key is indistinguishable from a sentinel, which is fine: only the multiset
    // counts).
    let mut s = [K::splat(K::MAX); W];
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
        let mut d = [K::splat(K::Key::default()); W];
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
