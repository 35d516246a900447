//! The conv1d kernel of the built-in `conv1d` (valid correlation `out[i] = sum_j x[i + j] w[j]`).
//! Owns its layouts and summation order; must not allocate the output or validate shapes.
//!
//! Summation order (fixed: independent of the thread count, of the layout and of the
//! instruction set; the x86 paths fuse multiply-adds, the portable path rounds products
//! separately): `j` is cut into panels of [`JP`] = 256 and each panel into blocks of [`JB`] =
//! 16; a block is accumulated sequentially from `+0` with FMA, the blocks of a panel are added
//! sequentially (from `+0`), and the panel sums are combined by the pairwise tree of `reduce`
//! (split at the largest power of two): at most `min(m, 16) + min(ceil(m / 16), 16) +
//! ceil(log2 ceil(m / 256))` roundings per product, within `4 * max(1, ceil(log2 m))`
//! half-ulps: the `accum(2)` bound holds to first order on every input.
//!
//! Layouts: for `m <= 512` the outputs of a tile are cut into `L` runs, one per lane, and the
//! input transposed so that every load of the inner loop is one aligned vector, with a sliding
//! register window over the taps (one load per 8 FMAs); otherwise, and for short chunks,
//! `L` consecutive outputs per vector. Both end with the non-finite fix-up of `matmul`: an
//! output that comes out inf/NaN is recomputed in f64 and rounded once.
//!
//! Preconditions (the built-in's `cpu` function checks them; dispatch validated the shapes):
//! `1 <= w.len() <= x.len()`, `out.len() == x.len() - w.len() + 1`.

use super::{any_non_finite, dot_f64};
use crate::cpu::par::for_each_chunk;
use crate::cpu::simd::{Isa, Vf};
use crate::with_isa;

/// j-block length (fixed: part of the summation order).
pub const JB: usize = 16;
/// j-panel length (fixed: part of the summation order).
pub const JP: usize = 256;

/// Valid correlation `out[i] = sum_j x[i + j] w[j]`, parallel over chunks of outputs (see
/// the module doc for the preconditions).
pub fn conv1d(x: &[f32], w: &[f32], out: &mut [f32]) {
    let m = w.len();
    debug_assert!(m >= 1 && m <= x.len() && out.len() == x.len() + 1 - m);
    let isa = Isa::current();
    let grain = 4096usize.max((1usize << 20) / m);
    for_each_chunk(out, grain, |off, o| {
        let x = &x[off..off + o.len() + m - 1];
        with_isa!(isa, V, (x: &[f32], w: &[f32], o: &mut [f32]) -> (), conv_chunk::<V>(x, w, o))
    });
}

/// Vectors of outputs per conv1d register tile (independent FMA chains).
const CONV_NV: usize = 12;
/// Largest `m` for the transposed conv1d path (its tile buffer holds `RT + m - 1` vectors).
const CONV_TR_MAX_M: usize = 512;
/// Steps per lane in one transposed conv1d tile.
const RT: usize = 192;

/// 64-byte aligned storage (full-vector loads that never split a cache line).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct A64([f32; 16]);

/// The floats of `v`.
fn as_f32_mut(v: &mut [A64]) -> &mut [f32] {
    // SAFETY: A64 is 16 f32 with no padding (size 64, align 64).
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut f32, v.len() * 16) }
}

/// One chunk: `x.len() == out.len() + w.len() - 1`.
#[inline(always)]
fn conv_chunk<V: Vf>(x: &[f32], w: &[f32], out: &mut [f32]) {
    let m = w.len();
    if m <= CONV_TR_MAX_M && out.len() >= V::L * CONV_NV {
        let mut xt_buf = vec![A64([0f32; 16]); (RT + m - 1 + 16) * V::L / 16 + 1];
        let mut ot_buf = vec![A64([0f32; 16]); (RT + 16) * V::L / 16 + 1];
        let xt = as_f32_mut(&mut xt_buf);
        let ot = as_f32_mut(&mut ot_buf);
        let mut o = 0;
        while o < out.len() {
            let n = (out.len() - o).min(V::L * RT);
            let (xs, os) = (&x[o..o + n + m - 1], &mut out[o..o + n]);
            conv_tile_transposed::<V>(xs, w, os, xt, ot);
            fixup_conv(xs, w, os);
            o += n;
        }
    } else {
        conv_direct::<V>(x, w, out);
        fixup_conv(x, w, out);
    }
}

/// Non-finite fix-up (see the module doc): `x.len() == out.len() + w.len() - 1`; a
/// vectorised scan first.
#[inline(always)]
fn fixup_conv(x: &[f32], w: &[f32], out: &mut [f32]) {
    if any_non_finite(out) {
        for (i, o) in out.iter_mut().enumerate() {
            if !o.is_finite() {
                *o = dot_f64(&x[i..i + w.len()], w.iter());
            }
        }
    }
}

/// Outputs in natural layout: `L`-wide vectors of consecutive outputs, unaligned loads.
#[inline(always)]
fn conv_direct<V: Vf>(x: &[f32], w: &[f32], out: &mut [f32]) {
    let l = V::L;
    let m = w.len();
    let n = out.len();
    let mut i = 0;
    unsafe {
        while i + CONV_NV * l <= n {
            conv_tile::<V, CONV_NV, false>(x.as_ptr().add(i), w, out.as_mut_ptr().add(i));
            i += CONV_NV * l;
        }
        while i + l <= n {
            conv_tile::<V, 1, false>(x.as_ptr().add(i), w, out.as_mut_ptr().add(i));
            i += l;
        }
        if i < n {
            // Last partial vector: a zero-padded copy of its input.
            let r = n - i;
            let mut xt = vec![0f32; l + m - 1];
            xt[..r + m - 1].copy_from_slice(&x[i..]);
            let mut ot = [0f32; 16];
            conv_tile::<V, 1, false>(xt.as_ptr(), w, ot.as_mut_ptr());
            out[i..].copy_from_slice(&ot[..r]);
        }
    }
}

/// Transposed layout (as in the median): the tile's outputs are cut into `L` runs of `r`,
/// one per lane; the input is transposed so that step `t` of every run is one aligned vector,
/// which makes every load of the inner loop a full aligned vector (the direct layout's
/// unaligned loads split cache lines). Same summation order as [`conv_direct`].
#[inline(always)]
fn conv_tile_transposed<V: Vf>(x: &[f32], w: &[f32], out: &mut [f32], xt: &mut [f32], ot: &mut [f32]) {
    let l = V::L;
    let m = w.len();
    let n = out.len();
    let r = n.div_ceil(l);
    let tlen = r + m - 1;
    let mut start = [0usize; 16];
    for (j, s) in start.iter_mut().enumerate().take(l) {
        *s = (j * r).min(n - r);
    }
    let xp = x.as_ptr();
    unsafe {
        let mut t0 = 0;
        let mut base = [xp; 16];
        for (j, p) in base.iter_mut().enumerate() {
            *p = xp.add(start[j.min(l - 1)]);
        }
        while t0 + l <= tlen {
            let mut src = base;
            for p in src.iter_mut() {
                *p = p.add(t0);
            }
            V::transpose_in(&src, xt.as_mut_ptr().add(t0 * l));
            t0 += l;
        }
        for t in t0..tlen {
            for j in 0..l {
                xt[t * l + j] = x[start[j] + t];
            }
        }
        let mut t = 0;
        while t + TR_NV <= r {
            conv_tile_tr::<V, TR_NV>(xt.as_ptr().add(t * l), w, ot.as_mut_ptr().add(t * l));
            t += TR_NV;
        }
        while t + CONV_NV <= r {
            conv_tile::<V, CONV_NV, true>(xt.as_ptr().add(t * l), w, ot.as_mut_ptr().add(t * l));
            t += CONV_NV;
        }
        while t < r {
            conv_tile::<V, 1, true>(xt.as_ptr().add(t * l), w, ot.as_mut_ptr().add(t * l));
            t += 1;
        }
        let outp = out.as_mut_ptr();
        let mut t0 = 0;
        let mut base = [outp; 16];
        for (j, p) in base.iter_mut().enumerate() {
            *p = outp.add(start[j.min(l - 1)]);
        }
        while t0 + l <= r {
            let mut dst = base;
            for p in dst.iter_mut() {
                *p = p.add(t0);
            }
            V::transpose_out(ot.as_ptr().add(t0 * l), &dst);
            t0 += l;
        }
        for t in t0..r {
            for j in 0..l {
                out[start[j] + t] = ot[t * l + j];
            }
        }
    }
}

/// The binary counter of panel sums both conv1d tiles keep: slot `lvl` holds the sum of
/// `2^lvl` panels while bit `lvl` of the count is set.
type PanelStack<V, const NV: usize> = [std::mem::MaybeUninit<[V; NV]>; 48];

/// Pushes one panel's sum, first merging it with every full level below (`stack[lvl] + acc`,
/// in that order): a pairwise tree over the panels.
///
/// # Safety
/// The slots whose bits are set in `count` are initialised (as `push_panel` leaves them).
#[inline(always)]
unsafe fn push_panel<V: Vf, const NV: usize>(stack: &mut PanelStack<V, NV>, count: &mut u64, mut acc: [V; NV]) {
    unsafe {
        let mut c = *count;
        let mut lvl = 0;
        while c & 1 == 1 {
            for v in 0..NV {
                acc[v] = stack[lvl].assume_init_ref()[v].add(acc[v]);
            }
            c >>= 1;
            lvl += 1;
        }
        stack[lvl].write(acc);
        *count += 1;
    }
}

/// The total of every panel pushed: the set levels from the lowest up, each added in front of
/// the running sum (`+0` when nothing was pushed).
///
/// # Safety
/// As for [`push_panel`].
#[inline(always)]
unsafe fn collapse<V: Vf, const NV: usize>(stack: &PanelStack<V, NV>, count: u64) -> [V; NV] {
    unsafe {
        let mut res: Option<[V; NV]> = None;
        let levels = 64 - count.leading_zeros() as usize;
        for (lvl, s) in stack.iter().enumerate().take(levels) {
            if count >> lvl & 1 == 1 {
                let s = s.assume_init_ref();
                res = Some(match res {
                    None => *s,
                    Some(r) => {
                        let mut t = r;
                        for v in 0..NV {
                            t[v] = s[v].add(r[v]);
                        }
                        t
                    }
                });
            }
        }
        res.unwrap_or([V::splat(0.0); NV])
    }
}

/// Output vectors per register tile of the transposed conv1d fast path.
const TR_NV: usize = 8;

/// Transposed layout, `NV` output vectors at `out + v * L` from the input vectors at
/// `x + u * L`: output vector `v` needs input vectors `v .. v + m`, so consecutive taps
/// share all but one input vector. Full blocks of [`JB`] = 16 taps are unrolled with a
/// sliding register window (one aligned load per tap for `NV` FMAs). Same summation order as
/// [`conv_tile`] (bit-identical results).
#[inline(always)]
#[allow(unused_assignments)]
unsafe fn conv_tile_tr<V: Vf, const NV: usize>(x: *const f32, w: &[f32], out: *mut f32) {
    unsafe {
        let l = V::L;
        let m = w.len();
        let zero = V::splat(0.0);
        let mut stack: PanelStack<V, NV> = [std::mem::MaybeUninit::uninit(); 48];
        let mut count: u64 = 0;
        let mut p0 = 0;
        while p0 < m {
            let pe = (p0 + JP).min(m);
            let mut acc = [zero; NV];
            let mut j0 = p0;
            while j0 < pe {
                let je = (j0 + JB).min(pe);
                let mut blk = [zero; NV];
                if je - j0 == 16 {
                    let mut win = [zero; NV];
                    for u in 0..NV {
                        win[u] = V::load(x.add((j0 + u) * l));
                    }
                    let wp = w.as_ptr().add(j0);
                    macro_rules! tap {
                        ($jj:expr) => {{
                            let wj = V::splat(*wp.add($jj));
                            for v in 0..NV {
                                blk[v] = win[($jj + v) % NV].fma(wj, blk[v]);
                            }
                            if $jj < 15 {
                                win[$jj % NV] = V::load(x.add((j0 + $jj + NV) * l));
                            }
                        }};
                    }
                    tap!(0);
                    tap!(1);
                    tap!(2);
                    tap!(3);
                    tap!(4);
                    tap!(5);
                    tap!(6);
                    tap!(7);
                    tap!(8);
                    tap!(9);
                    tap!(10);
                    tap!(11);
                    tap!(12);
                    tap!(13);
                    tap!(14);
                    tap!(15);
                } else {
                    for j in j0..je {
                        let wj = V::splat(*w.get_unchecked(j));
                        let xj = x.add(j * l);
                        for v in 0..NV {
                            blk[v] = V::load(xj.add(v * l)).fma(wj, blk[v]);
                        }
                    }
                }
                for v in 0..NV {
                    acc[v] = acc[v].add(blk[v]);
                }
                j0 = je;
            }
            push_panel(&mut stack, &mut count, acc);
            p0 = pe;
        }
        let r = collapse(&stack, count);
        for v in 0..NV {
            r[v].store(out.add(v * l));
        }
    }
}

/// `NV` vectors of outputs. Direct layout (`TR = false`): outputs `out[0 .. NV * L]` from
/// `x[0 .. NV * L + m - 1]`. Transposed layout (`TR = true`): vector `v` of outputs at
/// `out + v * L` from the input vectors at `x + (v + j) * L`.
#[inline(always)]
unsafe fn conv_tile<V: Vf, const NV: usize, const TR: bool>(x: *const f32, w: &[f32], out: *mut f32) {
    unsafe {
        let l = V::L;
        let sj = if TR { l } else { 1 };
        let m = w.len();
        let zero = V::splat(0.0);
        // Binary counter of panel sums (pairwise tree over panels).
        let mut stack: PanelStack<V, NV> = [std::mem::MaybeUninit::uninit(); 48];
        let mut count: u64 = 0;
        let mut p0 = 0;
        while p0 < m {
            // One panel of up to JP: blocks of JB summed sequentially from +0 (in registers).
            let pe = (p0 + JP).min(m);
            let mut acc = [zero; NV];
            let mut j0 = p0;
            while j0 < pe {
                let je = (j0 + JB).min(pe);
                let mut blk = [zero; NV];
                for j in j0..je {
                    let wj = V::splat(*w.get_unchecked(j));
                    let xj = x.add(j * sj);
                    for v in 0..NV {
                        blk[v] = V::load(xj.add(v * l)).fma(wj, blk[v]);
                    }
                }
                for v in 0..NV {
                    acc[v] = acc[v].add(blk[v]);
                }
                j0 = je;
            }
            // Panels: pairwise tree (binary counter).
            push_panel(&mut stack, &mut count, acc);
            p0 = pe;
        }
        let r = collapse(&stack, count);
        for v in 0..NV {
            r[v].store(out.add(v * l));
        }
    }
}
