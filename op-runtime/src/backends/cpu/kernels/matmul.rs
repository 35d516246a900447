//! The matmul kernel of the built-in `matmul`: cache-blocked (B packed into column strips per
//! panel of `k`, A packed into row micro-panels, a register tile of `MR x 2L` outputs). Owns its
//! blocking and summation order; must not allocate the output or validate shapes.
//!
//! Summation order of `out[i][j] = sum_p a[i][p] b[p][j]` (fixed: independent of the thread
//! count and of the instruction set; the x86 paths fuse multiply-adds, the portable path rounds
//! products separately): `p` is cut into panels of [`KC`] = 256 and each panel into blocks of
//! [`KB`] = 16. A block is accumulated sequentially from `+0` (`s = fma(a, b, s)`), the blocks
//! of a panel are added sequentially, and the panels of a super-panel of [`SP`] = 16 panels
//! (4096 terms) are added sequentially into the output; super-panels are combined by the
//! pairwise tree of `reduce` (a binary counter). A term goes through at most
//! `16 + 15 + 15 + ceil(log2 ceil(k / 4096))` roundings, within `4 * max(1, ceil(log2 k))`
//! half-ulps for every `k`: the `accum(2)` bound `2 * ceil(log2 k) * eps * S` holds to first
//! order on every input, the biased ones included (a sequential sum of the panels of a long
//! reduction does not: it drifts by up to `k / 256` roundings).
//!
//! Non-finite fix-up: an f32 accumulation in another order than the reference's can overflow
//! where the reference and the exact result do not (or turn `+inf` into NaN by adding an
//! overflowed `-inf`), which conformance rejects. So every output element that comes out
//! non-finite is recomputed in f64 (products of f32 are exact in f64 and no partial sum can
//! overflow), rounded once: infinities and NaNs of the inputs then propagate exactly as in the
//! engine's f64 reference. A finite result implies finite inputs and no overflow, so the fix-up
//! never touches it; the scan costs one pass over the output.
//!
//! Preconditions (the built-in's `cpu` function checks them; dispatch validated the shapes):
//! `a.len() == m * k`, `b.len() == k * n`, `out.len() == m * n`.

use super::{any_non_finite, dot_f64};
use crate::backends::cpu::par::for_each_chunk;
#[cfg(target_arch = "x86_64")]
use crate::backends::cpu::simd::x86::{F16, F8};
use crate::backends::cpu::simd::{Isa, Vf, P8};
use crate::with_isa;

/// p-panel length (fixed: part of the summation order).
pub(crate) const KC: usize = 256;
/// p-block length inside a panel (fixed: part of the summation order).
pub(crate) const KB: usize = 16;
/// Panels per super-panel (fixed: part of the summation order).
pub(crate) const SP: usize = 16;
/// Output vectors per tile row (the tile is `MR x NV * L`).
const NV: usize = 2;
/// Largest packed copy of B shared by all row chunks, in f32 (64 MB); beyond it each chunk
/// packs panel by panel.
const SHARED_PACK_MAX: usize = 16 << 20;

/// The register tile of a vector type: `MR` rows of `NV` vectors.
trait Tile: Vf {
    /// Rows of the tile.
    const MR: usize;
}
impl Tile for P8 {
    const MR: usize = 4;
}
#[cfg(target_arch = "x86_64")]
impl Tile for F8 {
    const MR: usize = 3;
}
#[cfg(target_arch = "x86_64")]
impl Tile for F16 {
    const MR: usize = 6;
}

/// What every row chunk reads: the operands, B packed whole (or empty: pack per panel), the
/// shape.
#[derive(Clone, Copy)]
struct Operands<'a> {
    a: &'a [f32],
    b: &'a [f32],
    bpack: &'a [f32],
    k: usize,
    n: usize,
}

/// Row-major `out (m x n) = a (m x k) * b (k x n)`, parallel over blocks of output rows.
pub(crate) fn matmul(a: &[f32], b: &[f32], m: usize, k: usize, n: usize, out: &mut [f32]) {
    debug_assert!(a.len() == m * k && b.len() == k * n && out.len() == m * n);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        out.fill(0.0);
        return;
    }
    let isa = Isa::current();
    // The tile of the very implementation `with_isa!` runs below.
    let (mr, nr) = with_isa!(isa, V, () -> (usize, usize), (<V as Tile>::MR, NV * <V as Vf>::L));
    let bpack = pack_b_shared(isa, b, k, n, nr);
    let ops = Operands { a, b, bpack: &bpack, k, n };
    // Row blocks of `mr` rows; chunks of at least ~64 rows and ~2^20 multiply-adds.
    let mut rows: Vec<&mut [f32]> = out.chunks_mut(mr * n).collect();
    let grain = 64usize.div_ceil(mr).max((1usize << 20).div_ceil((mr * n * k).max(1)));
    for_each_chunk(&mut rows, grain, |off, blocks| {
        let r0 = off * mr;
        let r1 = (r0 + blocks.len() * mr).min(m);
        with_isa!(isa, V, (ops: Operands<'_>, r0: usize, r1: usize, blocks: &mut [&mut [f32]]) -> (),
            rows_kernel::<V, { <V as Tile>::MR }>(ops, r0, r1, blocks))
    });
}

/// B packed once, in parallel, for all row chunks: panel after panel, `[strip][p][nr]` inside
/// a panel, columns zero-padded to whole strips. Empty when the copy would exceed
/// [`SHARED_PACK_MAX`] (narrow `n` with huge `k`): each chunk then packs panel by panel.
fn pack_b_shared(isa: Isa, b: &[f32], k: usize, n: usize, nr: usize) -> Vec<f32> {
    let strips = n.div_ceil(nr);
    if k * strips * nr > SHARED_PACK_MAX {
        return Vec::new();
    }
    let mut bpack = vec![0f32; k * strips * nr];
    let mut units: Vec<&mut [f32]> = Vec::with_capacity(k.div_ceil(KC) * strips);
    let mut rest: &mut [f32] = &mut bpack;
    let mut pc = 0;
    while pc < k {
        let kc = KC.min(k - pc);
        for _ in 0..strips {
            let (u, r) = rest.split_at_mut(kc * nr);
            units.push(u);
            rest = r;
        }
        pc += kc;
    }
    let grain = (1usize << 16).div_ceil(KC * nr);
    for_each_chunk(&mut units, grain, |off, us| {
        with_isa!(isa, V, (b: &[f32], k: usize, n: usize, off: usize, us: &mut [&mut [f32]]) -> (), {
            let strips = n.div_ceil(NV * V::L);
            for (i, u) in us.iter_mut().enumerate() {
                let (panel, st) = ((off + i) / strips, (off + i) % strips);
                let pc = panel * KC;
                pack_b::<V>(b, n, pc, KC.min(k - pc), st, u);
            }
        })
    });
    bpack
}

/// Packs `b[pc .. pc + kc][st * nr .. (st + 1) * nr]` (zero-padded columns) into `dst`
/// (`kc * nr`, layout `[p][nr]`), `nr = NV * L`.
#[inline(always)]
fn pack_b<V: Vf>(b: &[f32], n: usize, pc: usize, kc: usize, st: usize, dst: &mut [f32]) {
    let nr = NV * V::L;
    let c0 = st * nr;
    let w = nr.min(n - c0);
    // Internal invariant (keeps the unchecked loads below in bounds); the callers size both.
    assert!(dst.len() >= kc * nr && (pc + kc - 1) * n + c0 + w <= b.len());
    for p in 0..kc {
        // SAFETY: row `pc + p` of b has `w` elements from column `c0` (asserted above), and
        // `dst` has `nr` from `p * nr`.
        unsafe {
            let src = b.as_ptr().add((pc + p) * n + c0);
            let d = dst.as_mut_ptr().add(p * nr);
            if w == nr {
                V::load(src).store(d);
                V::load(src.add(V::L)).store(d.add(V::L));
            } else {
                for j in 0..nr {
                    *d.add(j) = if j < w { *src.add(j) } else { 0.0 };
                }
            }
        }
    }
}

/// Output rows `r0 .. r1`, given as blocks of `MR` rows (the last may be shorter): the panels
/// of one super-panel straight into the output, or super-panels combined by the pairwise tree
/// (see the module doc); then the non-finite fix-up.
#[inline(always)]
fn rows_kernel<V: Vf, const MR: usize>(ops: Operands<'_>, r0: usize, r1: usize, blocks: &mut [&mut [f32]]) {
    let (k, n) = (ops.k, ops.n);
    let mut ws = Workspace::new::<V, MR>(ops, r1 - r0);
    if k <= SP * KC {
        panels::<V, MR>(ops, r0, r1, 0, k, &mut ws, blocks);
    } else {
        super_panels::<V, MR>(ops, r0, r1, &mut ws, blocks);
    }
    for (ib, blk) in blocks.iter_mut().enumerate() {
        if any_non_finite(blk) {
            for (i, row) in blk.chunks_mut(n).enumerate() {
                let r = r0 + ib * MR + i;
                for (j, o) in row.iter_mut().enumerate() {
                    if !o.is_finite() {
                        *o = dot_f64(&ops.a[r * k..(r + 1) * k], ops.b[j..].iter().step_by(n));
                    }
                }
            }
        }
    }
}

/// A row chunk's packing buffers: B panels when not packed whole, A micro-panels.
struct Workspace {
    own: Vec<f32>,
    apack: Vec<f32>,
}

impl Workspace {
    fn new<V: Vf, const MR: usize>(ops: Operands<'_>, rows: usize) -> Workspace {
        let kc = KC.min(ops.k);
        let strips = ops.n.div_ceil(NV * V::L);
        let own = if ops.bpack.is_empty() { vec![0f32; kc * strips * NV * V::L] } else { Vec::new() };
        Workspace { own, apack: vec![0f32; kc * rows.div_ceil(MR) * MR] }
    }
}

/// `dst = sum_{p in p0 .. p1} a[r][p] b[p][j]` for rows `r0 .. r1` (`dst` as blocks of `MR`
/// rows of `n`): panel by panel, the first stored, the rest added (`p1 - p0 <= SP * KC`).
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the chunk's rows and p-range, both given as bounds
fn panels<V: Vf, const MR: usize>(
    ops: Operands<'_>,
    r0: usize,
    r1: usize,
    p0: usize,
    p1: usize,
    ws: &mut Workspace,
    dst: &mut [&mut [f32]],
) {
    let (a, k, n) = (ops.a, ops.k, ops.n);
    let nr = NV * V::L;
    let strips = n.div_ceil(nr);
    let nblk = (r1 - r0).div_ceil(MR);
    let mut pc = p0;
    while pc < p1 {
        let kc = KC.min(p1 - pc);
        let panel: &[f32] = if ops.bpack.is_empty() {
            for st in 0..strips {
                pack_b::<V>(ops.b, n, pc, kc, st, &mut ws.own[st * kc * nr..(st + 1) * kc * nr]);
            }
            &ws.own
        } else {
            &ops.bpack[pc * strips * nr..(pc + kc) * strips * nr]
        };
        // A micro-panels: [row block][p][MR], zero-padded rows.
        for ib in 0..nblk {
            let apanel = &mut ws.apack[ib * kc * MR..(ib + 1) * kc * MR];
            for i in 0..MR {
                let r = r0 + ib * MR + i;
                if r < r1 {
                    for (p, v) in a[r * k + pc..r * k + pc + kc].iter().enumerate() {
                        apanel[p * MR + i] = *v;
                    }
                } else {
                    (0..kc).for_each(|p| apanel[p * MR + i] = 0.0);
                }
            }
        }
        for st in 0..strips {
            let c0 = st * nr;
            let w = nr.min(n - c0);
            let bp = panel[st * kc * nr..].as_ptr();
            for (ib, blk) in dst.iter_mut().enumerate() {
                let rows_here = blk.len() / n;
                // SAFETY: the A micro-panel has `kc * MR` floats and the B strip `kc * nr`; the
                // tile writes `rows_here x w` elements of `blk` from column `c0` (row stride n).
                unsafe { micro::<V, MR>(kc, ws.apack[ib * kc * MR..].as_ptr(), bp, blk.as_mut_ptr().add(c0), n, rows_here, w, pc > p0) };
            }
        }
        pc += kc;
    }
}

/// `k > SP * KC`: each super-panel into a scratch copy of the chunk's rows, combined by the
/// pairwise tree (a binary counter, as `reduce` combines its blocks), the total copied out.
#[inline(always)]
#[allow(clippy::assign_op_pattern)] // `left + right`, written in the tree's order
fn super_panels<V: Vf, const MR: usize>(ops: Operands<'_>, r0: usize, r1: usize, ws: &mut Workspace, blocks: &mut [&mut [f32]]) {
    let len = (r1 - r0) * ops.n;
    let mut levels: Vec<Option<Vec<f32>>> = Vec::new();
    let mut free: Vec<Vec<f32>> = Vec::new();
    let mut count: u64 = 0;
    let mut p0 = 0;
    while p0 < ops.k {
        let p1 = (p0 + SP * KC).min(ops.k);
        let mut node = free.pop().unwrap_or_else(|| vec![0f32; len]);
        let mut dst: Vec<&mut [f32]> = node.chunks_mut(MR * ops.n).collect();
        panels::<V, MR>(ops, r0, r1, p0, p1, ws, &mut dst);
        let (mut c, mut lvl) = (count, 0);
        while c & 1 == 1 {
            if let Some(left) = levels[lvl].take() {
                node.iter_mut().zip(&left).for_each(|(r, l)| *r = *l + *r);
                free.push(left);
            }
            c >>= 1;
            lvl += 1;
        }
        if levels.len() <= lvl {
            levels.resize_with(lvl + 1, || None);
        }
        levels[lvl] = Some(node);
        count += 1;
        p0 = p1;
    }
    // Pending nodes, the highest (leftmost) added last: `left + (rest)`.
    let mut total: Option<Vec<f32>> = None;
    for node in levels.into_iter().flatten() {
        total = Some(match total {
            None => node,
            Some(mut right) => {
                right.iter_mut().zip(&node).for_each(|(r, l)| *r = *l + *r);
                right
            }
        });
    }
    if let Some(total) = total {
        for (blk, src) in blocks.iter_mut().zip(total.chunks(MR * ops.n)) {
            blk.copy_from_slice(src);
        }
    }
}

/// One `MR x NV*L` tile of the output at `c` (row stride `ldc`; `rows x cols` of it valid):
/// `sum_p a[p][i] b[p][j]` over one panel of `kc` steps, in blocks of [`KB`] (see the module
/// doc), stored (first panel) or added to what is there (`acc_into`).
///
/// Safety: `a` holds `kc * MR` floats, `b` holds `kc * NV * L`, and `c` has `rows <= MR` rows
/// of `cols <= NV * L` writable floats at stride `ldc`; the vector type's target feature is on.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // a BLAS-style micro-kernel: pointers, stride, extent
unsafe fn micro<V: Vf, const MR: usize>(
    kc: usize,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    ldc: usize,
    rows: usize,
    cols: usize,
    acc_into: bool,
) {
    unsafe {
        let l = V::L;
        let nr = NV * l;
        let zero = V::splat(0.0);
        let mut acc = [[zero; NV]; MR];
        let mut p = 0;
        while p < kc {
            let pe = (p + KB).min(kc);
            let mut blk = [[zero; NV]; MR];
            for q in p..pe {
                let bq = b.add(q * nr);
                let mut bv = [zero; NV];
                for (v, bv) in bv.iter_mut().enumerate() {
                    *bv = V::load(bq.add(v * l));
                }
                let aq = a.add(q * MR);
                for (i, row) in blk.iter_mut().enumerate() {
                    let av = V::splat(*aq.add(i));
                    for v in 0..NV {
                        row[v] = av.fma(bv[v], row[v]);
                    }
                }
            }
            for i in 0..MR {
                for v in 0..NV {
                    acc[i][v] = acc[i][v].add(blk[i][v]);
                }
            }
            p = pe;
        }
        if rows == MR && cols == nr {
            for (i, row) in acc.iter().enumerate() {
                for (v, a) in row.iter().enumerate() {
                    let ptr = c.add(i * ldc + v * l);
                    let r = if acc_into { V::load(ptr).add(*a) } else { *a };
                    r.store(ptr);
                }
            }
        } else {
            let mut tile = [0f32; 16 * NV * 8];
            for (i, row) in acc.iter().enumerate() {
                for (v, a) in row.iter().enumerate() {
                    a.store(tile.as_mut_ptr().add(i * nr + v * l));
                }
            }
            for i in 0..rows {
                for j in 0..cols {
                    let d = c.add(i * ldc + j);
                    let t = tile[i * nr + j];
                    *d = if acc_into { *d + t } else { t };
                }
            }
        }
    }
}
