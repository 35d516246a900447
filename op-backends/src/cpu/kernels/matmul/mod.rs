//! The matmul kernel of the built-in `matmul`, f32 and f64: cache-blocked (B packed into
//! column strips per panel of `k`, into a buffer kept for the next call; a row chunk's A rows
//! packed per panel, `MR` rows interleaved; a register tile of `MR x 2L` outputs). Owns its
//! blocking and summation orders; must not allocate the output or validate shapes.
//!
//! Order of the work (not of any sum): per row chunk and panel, A's rows are packed, then for
//! each B strip every row block of the chunk runs its tile over that strip, so the strip (one
//! panel deep: 32 KiB on AVX-512) stays in L1 across the chunk's row blocks while each block's
//! packed A streams from L2; meanwhile each call hints its share of the next strip into L2
//! and its own output tile into L1. (B strips per row block, several panels at a time, read B
//! from L2 on every step and A's rows `k` apart: 0.70x OpenBLAS at f64 1024^3 on an Intel
//! Xeon, against 0.93-1.04x now, at the noise floor; see docs/PERFORMANCE.md.)
//!
//! f32 summation order of `out[i][j] = sum_p a[i][p] b[p][j]` (fixed: independent of the
//! thread count, of the instruction set and of where the element falls in a tile; the x86
//! paths fuse multiply-adds, the portable path rounds products separately): `p` is cut into
//! panels of [`KC`] = 256 and each panel into blocks of [`KB`] = 16. A block is accumulated
//! sequentially from `+0` (`s = fma(a, b, s)`), the blocks of a panel are added sequentially,
//! and the panels of a super-panel of [`SP`] = 16 panels (4096 terms) are added sequentially
//! into the output; super-panels are combined by the pairwise tree of `reduce` (a binary
//! counter). A term goes through at most `16 + 15 + 15 + ceil(log2 ceil(k / 4096))` roundings,
//! within `4 * max(1, ceil(log2 k))` half-ulps for every `k`: the `accum(2)` bound
//! `2 * ceil(log2 k) * eps * S`, anchored on the reference evaluated in f64, holds to first order
//! on every input, the biased ones included (a sequential sum of the panels of a long reduction
//! does not: it drifts by up to `k / 256` roundings).
//!
//! f32 non-finite fix-up: an f32 accumulation in another order than the reference's can
//! overflow where the reference and the exact result do not (or turn `+inf` into NaN by adding
//! an overflowed `-inf`), which conformance rejects. So every output element that comes out
//! non-finite is recomputed in f64 (products of f32 are exact in f64 and no partial sum can
//! overflow), rounded once: infinities and NaNs of the inputs then propagate exactly as in the
//! engine's f64 reference. A finite result implies finite inputs and no overflow, so the fix-up
//! never touches it; the scan costs one pass over the output.
//!
//! f64 order: the f32 order above, on the same tile code over the f64 lanes (`MR` rows by
//! `2L` columns), fused on every x86 path: the same `accum(2)` bound holds, anchored on the
//! reference (products in f64, summed in order with compensation, rounded once: within an f64
//! rounding of the exact sum). The reference's own sequential order would not: on long biased
//! sums its error grows with `k`, not `log2 k` (see `builtins/matmul_kernel_tests.rs`).
//!
//! f64 overflow guard (`overflow`): where the inputs' magnitudes allow a partial sum to overflow
//! in some order (or hold an infinity or NaN), the element is recomputed in the reference's own
//! arithmetic: the f64 reference is the anchor, and its overflows (`MAX + MAX - MAX` in order)
//! are not the blocked order's. Elsewhere no order overflows and nothing is recomputed; the test
//! costs one pass over A and B.
//!
//! Preconditions (the built-in's `cpu` functions check them; dispatch validated the shapes):
//! `a.len() == m * k`, `b.len() == k * n`, `out.len() == m * n`.

mod lanes;
mod overflow;

use super::{any_non_finite, dot_f64};
use crate::cpu::par::for_each_chunk;
use crate::cpu::prefetch::{prefetch_line, prefetch_line_l2};
use crate::cpu::simd::Isa;
use crate::with_isa;
use lanes::{max_magnitude_bits, Elem, Lanes, Tile, Wide, NV};
use op_core::hostmem;

/// p-panel length (fixed: part of the summation order).
pub const KC: usize = 256;
/// p-block length inside a panel (fixed: part of the summation order).
pub const KB: usize = 16;
/// Panels per super-panel (fixed: part of the summation order).
pub const SP: usize = 16;
/// Panels per cache block of the work (see [`panels`]): not part of the summation order.
const PB: usize = 4;
/// Largest packed copy of B shared by all row chunks, in bytes (64 MB); beyond it each chunk
/// packs panel by panel.
pub const SHARED_PACK_MAX_BYTES: usize = 64 << 20;

/// Row-major `out (m x n) = a (m x k) * b (k x n)` in f32, parallel over blocks of output rows.
pub fn matmul(a: &[f32], b: &[f32], m: usize, k: usize, n: usize, out: &mut [f32]) {
    run(a, b, m, k, n, out);
}

/// Row-major `out (m x n) = a (m x k) * b (k x n)` in f64, in the blocked order with the
/// overflow guard (see the module doc), parallel over blocks of output rows.
pub fn matmul_f64(a: &[f64], b: &[f64], m: usize, k: usize, n: usize, out: &mut [f64]) {
    run(a, b, m, k, n, out);
}

/// What every row chunk reads: the operands, B packed whole (or empty: pack per panel), B's
/// column scales (f64: see `overflow`; f32: empty), the shape.
struct Operands<'a, E> {
    a: &'a [E],
    b: &'a [E],
    bpack: &'a [E],
    scales: &'a [E],
    k: usize,
    n: usize,
}

impl<E> Clone for Operands<'_, E> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E> Copy for Operands<'_, E> {}

/// A dtype's vector code on each instruction set (one `with_isa!` per entry point).
trait Kernel: Elem + bytemuck::Pod {
    /// The tile `(MR, NV * L)` of the implementation `isa` runs.
    fn tile(isa: Isa) -> (usize, usize);
    /// Whether [`Kernel::fix_non_finite`] needs B's column scales (see `overflow`).
    const SCALED: bool;
    /// B's column scales when B is not packed whole (else they come from the packed units).
    fn scales(isa: Isa, b: &[Self], n: usize) -> Vec<Self>;
    /// The column scales from the packed units' magnitudes (see [`pack_b_shared`]).
    fn scales_of(mags: Vec<u64>) -> Vec<Self>;
    /// Packs the B strips `off ..` (see [`pack_b_shared`]) into `units`.
    fn pack(isa: Isa, b: &[Self], k: usize, n: usize, off: usize, units: &mut [Unit<'_, Self>]);
    /// Output rows `r0 .. r1` as blocks of `MR` rows (see [`rows_kernel`]).
    fn rows(isa: Isa, ops: Operands<'_, Self>, r0: usize, r1: usize, blocks: &mut [&mut [Self]]);
    /// Repairs the elements of `blocks` (rows from `r0`, `mr` per block) the blocked order
    /// cannot be trusted with (see the module doc); `amax` holds the magnitude bits of each
    /// row's largest element of A for a [`Kernel::SCALED`] dtype (see [`pack_a`]).
    fn fix_non_finite(ops: Operands<'_, Self>, r0: usize, mr: usize, blocks: &mut [&mut [Self]], amax: &[u64]);
}

impl Kernel for f32 {
    fn tile(isa: Isa) -> (usize, usize) {
        with_isa!(isa, V, () -> (usize, usize), (<V as Tile>::MR, NV * <V as Lanes>::L))
    }
    const SCALED: bool = false;
    fn scales(_: Isa, _: &[f32], _: usize) -> Vec<f32> {
        Vec::new()
    }
    fn scales_of(_: Vec<u64>) -> Vec<f32> {
        Vec::new()
    }
    fn pack(isa: Isa, b: &[f32], k: usize, n: usize, off: usize, units: &mut [Unit<'_, f32>]) {
        with_isa!(isa, V, (b: &[f32], k: usize, n: usize, off: usize, units: &mut [Unit<'_, f32>]) -> (),
            pack_units::<V>(b, k, n, off, units))
    }
    fn rows(isa: Isa, ops: Operands<'_, f32>, r0: usize, r1: usize, blocks: &mut [&mut [f32]]) {
        with_isa!(isa, V, (ops: Operands<'_, f32>, r0: usize, r1: usize, blocks: &mut [&mut [f32]]) -> (),
            rows_kernel::<V, { <V as Tile>::MR }>(ops, r0, r1, blocks))
    }
    fn fix_non_finite(ops: Operands<'_, f32>, r0: usize, mr: usize, blocks: &mut [&mut [f32]], _: &[u64]) {
        let (k, n) = (ops.k, ops.n);
        for (ib, blk) in blocks.iter_mut().enumerate() {
            if any_non_finite(blk) {
                for (i, row) in blk.chunks_mut(n).enumerate() {
                    let r = r0 + ib * mr + i;
                    for (j, o) in row.iter_mut().enumerate() {
                        if !o.is_finite() {
                            *o = dot_f64(&ops.a[r * k..(r + 1) * k], ops.b[j..].iter().step_by(n));
                        }
                    }
                }
            }
        }
    }
}

impl Kernel for f64 {
    fn tile(isa: Isa) -> (usize, usize) {
        with_isa!(isa, V, () -> (usize, usize), (<<V as Wide>::D as Tile>::MR, NV * <<V as Wide>::D as Lanes>::L))
    }
    const SCALED: bool = true;
    fn scales(isa: Isa, b: &[f64], n: usize) -> Vec<f64> {
        with_isa!(isa, V, (b: &[f64], n: usize) -> Vec<f64>, overflow::column_scales(b, n))
    }
    fn scales_of(mags: Vec<u64>) -> Vec<f64> {
        mags.into_iter().map(f64::from_bits).collect()
    }
    fn pack(isa: Isa, b: &[f64], k: usize, n: usize, off: usize, units: &mut [Unit<'_, f64>]) {
        with_isa!(isa, V, (b: &[f64], k: usize, n: usize, off: usize, units: &mut [Unit<'_, f64>]) -> (),
            pack_units::<<V as Wide>::D>(b, k, n, off, units))
    }
    fn rows(isa: Isa, ops: Operands<'_, f64>, r0: usize, r1: usize, blocks: &mut [&mut [f64]]) {
        with_isa!(isa, V, (ops: Operands<'_, f64>, r0: usize, r1: usize, blocks: &mut [&mut [f64]]) -> (),
            rows_kernel::<<V as Wide>::D, { <<V as Wide>::D as Tile>::MR }>(ops, r0, r1, blocks))
    }
    /// The overflow guard (see the module doc): elements at risk in the reference's arithmetic.
    /// Inlined into [`Kernel::rows`], so its scans run on the call's instruction set.
    #[inline(always)]
    fn fix_non_finite(ops: Operands<'_, f64>, r0: usize, mr: usize, blocks: &mut [&mut [f64]], amax: &[u64]) {
        overflow::repair(ops, r0, mr, blocks, amax);
    }
}

/// The blocked kernel: B packed, row chunks in parallel, each chunk's rows by
/// [`Kernel::rows`].
fn run<E: Kernel>(a: &[E], b: &[E], m: usize, k: usize, n: usize, out: &mut [E]) {
    debug_assert!(a.len() == m * k && b.len() == k * n && out.len() == m * n);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        out.fill(E::ZERO);
        return;
    }
    let isa = Isa::current();
    // The tile of the very implementation `with_isa!` runs below.
    let (mr, nr) = E::tile(isa);
    let (bpack, mags) = pack_b_shared(isa, b, k, n, nr);
    let scales = match (E::SCALED, bpack.is_empty()) {
        (false, _) => Vec::new(),
        (true, true) => E::scales(isa, b, n),
        (true, false) => E::scales_of(mags),
    };
    let ops = Operands { a, b, bpack: &bpack, scales: &scales, k, n };
    // Row blocks of `mr` rows; chunks of at least ~64 rows and ~2^20 multiply-adds.
    let mut rows: Vec<&mut [E]> = out.chunks_mut(mr * n).collect();
    let grain = 64usize.div_ceil(mr).max((1usize << 20).div_ceil((mr * n * k).max(1)));
    for_each_chunk(&mut rows, grain, |off, blocks| {
        let r0 = off * mr;
        let r1 = (r0 + blocks.len() * mr).min(m);
        E::rows(isa, ops, r0, r1, blocks);
    });
    // The next call of a similar size packs into the same pages (no page faults).
    hostmem::keep(bpack);
}

/// One strip of one panel of the shared B copy, and (for a [`Kernel::SCALED`] dtype) the
/// magnitude bits of its columns' largest elements (see `overflow`: NaN above infinity).
struct Unit<'a, E> {
    dst: &'a mut [E],
    mags: [u64; MAX_NR],
}

/// The widest strip of any lane type (`NV * L`).
const MAX_NR: usize = 32;

/// B packed once, in parallel, for all row chunks: panel after panel, `[strip][p][nr]` inside
/// a panel, columns zero-padded to whole strips; and, for a [`Kernel::SCALED`] dtype, each
/// column's largest magnitude bits, taken from the strips just packed (still in L1) instead
/// of a second pass over B. Empty when the copy would exceed [`SHARED_PACK_MAX_BYTES`]
/// (narrow `n` with huge `k`): each chunk then packs panel by panel.
fn pack_b_shared<E: Kernel>(isa: Isa, b: &[E], k: usize, n: usize, nr: usize) -> (Vec<E>, Vec<u64>) {
    let strips = n.div_ceil(nr);
    let len = k * strips * nr;
    if len * std::mem::size_of::<E>() > SHARED_PACK_MAX_BYTES || nr > MAX_NR {
        return (Vec::new(), Vec::new());
    }
    // Every element is written below (padding included).
    let mut bpack = hostmem::for_overwrite::<E>(len);
    let mut units: Vec<Unit<'_, E>> = Vec::with_capacity(k.div_ceil(KC) * strips);
    let mut rest: &mut [E] = &mut bpack;
    let mut pc = 0;
    while pc < k {
        let kc = KC.min(k - pc);
        for _ in 0..strips {
            let (u, r) = rest.split_at_mut(kc * nr);
            units.push(Unit { dst: u, mags: [0; MAX_NR] });
            rest = r;
        }
        pc += kc;
    }
    let grain = (1usize << 16).div_ceil(KC * nr);
    for_each_chunk(&mut units, grain, |off, us| E::pack(isa, b, k, n, off, us));
    let mut mags = vec![0u64; if E::SCALED { n } else { 0 }];
    for (i, u) in units.iter().enumerate() {
        let c0 = (i % strips) * nr;
        for (m, &v) in mags.iter_mut().skip(c0).zip(&u.mags[..nr]) {
            *m = (*m).max(v);
        }
    }
    drop(units);
    (bpack, mags)
}

/// Packs the strips `off .. off + units.len()` of the shared B copy (strip `s` is strip
/// `s % strips` of panel `s / strips`), with their columns' magnitudes for a
/// [`Kernel::SCALED`] dtype.
#[inline(always)]
fn pack_units<W: Lanes>(b: &[W::E], k: usize, n: usize, off: usize, units: &mut [Unit<'_, W::E>])
where
    W::E: Kernel,
{
    let nr = NV * W::L;
    let strips = n.div_ceil(nr);
    for (i, u) in units.iter_mut().enumerate() {
        let (panel, st) = ((off + i) / strips, (off + i) % strips);
        let pc = panel * KC;
        let kc = KC.min(k - pc);
        pack_b::<W>(b, n, pc, kc, st, u.dst);
        if W::E::SCALED {
            for row in u.dst[..kc * nr].chunks_exact(nr) {
                for (m, v) in u.mags.iter_mut().zip(row) {
                    *m = (*m).max(v.magnitude_bits());
                }
            }
        }
    }
}

/// Packs `b[pc .. pc + kc][st * nr .. (st + 1) * nr]` (zero-padded columns) into `dst`
/// (`kc * nr`, layout `[p][nr]`), `nr = NV * L`.
#[inline(always)]
fn pack_b<W: Lanes>(b: &[W::E], n: usize, pc: usize, kc: usize, st: usize, dst: &mut [W::E]) {
    let nr = NV * W::L;
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
                for v in 0..NV {
                    W::load(src.add(v * W::L)).store(d.add(v * W::L));
                }
            } else {
                for j in 0..nr {
                    *d.add(j) = if j < w { *src.add(j) } else { W::E::ZERO };
                }
            }
        }
    }
}

/// Packs A's rows of the blocks `dst` (rows from `r0`, `MR` per block, below `r1`), columns
/// `pc .. pc + kc`, into `out` as `[block][q][MR]`: the tile's broadcasts of one step are
/// adjacent, and a block's `kc * MR` elements are contiguous (no rows `k` apart aliasing in L1
/// with the B strip the row blocks share). Rows past a block's end repeat its last row (their
/// sums are dropped). For a [`Kernel::SCALED`] dtype it also raises `out.amax` (a row's
/// largest magnitude bits, over the panels packed so far) from the rows just read, so the
/// overflow guard does not read A again.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the chunk's rows and the panel, given as bounds
fn pack_a<E: Kernel, const MR: usize>(
    a: &[E],
    k: usize,
    r0: usize,
    r1: usize,
    n: usize,
    dst: &[&mut [E]],
    pc: usize,
    kc: usize,
    out: &mut APack<E>,
) {
    for (ib, blk) in dst.iter().enumerate() {
        let rows_here = blk.len() / n;
        let rows: [&[E]; MR] = std::array::from_fn(|i| {
            let r = (r0 + ib * MR + i.min(rows_here - 1)).min(r1 - 1);
            &a[r * k + pc..r * k + pc + kc]
        });
        if E::SCALED {
            for (m, row) in out.amax[ib * MR..].iter_mut().zip(&rows[..rows_here]) {
                *m = (*m).max(max_magnitude_bits(row));
            }
        }
        for (q, step) in out.a[ib * MR * kc..(ib + 1) * MR * kc].chunks_exact_mut(MR).enumerate() {
            for (v, row) in step.iter_mut().zip(&rows) {
                *v = row[q];
            }
        }
    }
}

/// A row chunk's own packed copies: of B when B is not packed whole (one cache block of
/// panels; else empty), and of A's rows for one panel, with the rows' largest magnitudes
/// (see [`pack_a`]).
struct Scratch<E> {
    b: Vec<E>,
    a: APack<E>,
}

/// A row chunk's A rows for one panel, packed (see [`pack_a`]), and the rows' largest
/// magnitude bits so far.
struct APack<E> {
    a: Vec<E>,
    amax: Vec<u64>,
}

impl<E: Kernel> Scratch<E> {
    fn new<W: Lanes<E = E>>(ops: Operands<'_, E>, blocks: usize, mr: usize) -> Self {
        let strips = ops.n.div_ceil(NV * W::L);
        let b = if ops.bpack.is_empty() { vec![E::ZERO; (PB * KC).min(ops.k) * strips * NV * W::L] } else { Vec::new() };
        let amax = vec![0; if E::SCALED { blocks * mr } else { 0 }];
        Scratch { b, a: APack { a: vec![E::ZERO; blocks * mr * KC.min(ops.k)], amax } }
    }
}

/// Output rows `r0 .. r1`, given as blocks of `MR` rows (the last may be shorter): the panels
/// of one super-panel straight into the output, or super-panels combined by the pairwise tree
/// (see the module doc); then the dtype's non-finite fix-up.
#[inline(always)]
fn rows_kernel<W: Tile, const MR: usize>(ops: Operands<'_, W::E>, r0: usize, r1: usize, blocks: &mut [&mut [W::E]])
where
    W::E: Kernel,
{
    let mut own = Scratch::new::<W>(ops, blocks.len(), MR);
    if ops.k <= SP * KC {
        panels::<W, MR>(ops, r0, r1, 0, ops.k, &mut own, blocks);
    } else {
        super_panels::<W, MR>(ops, r0, r1, &mut own, blocks);
    }
    W::E::fix_non_finite(ops, r0, MR, blocks, &own.a.amax);
}

/// The B panels `kb .. kb1` as `[panel][strip][p][nr]`: a slice of the shared copy, or packed
/// here into `own` when B is not packed whole.
#[inline(always)]
fn b_panels<'a, W: Lanes>(ops: Operands<'a, W::E>, kb: usize, kb1: usize, own: &'a mut [W::E]) -> &'a [W::E] {
    let nr = NV * W::L;
    let strips = ops.n.div_ceil(nr);
    if !ops.bpack.is_empty() {
        return &ops.bpack[kb * strips * nr..kb1 * strips * nr];
    }
    let (mut pc, mut at) = (kb, 0);
    while pc < kb1 {
        let kc = KC.min(kb1 - pc);
        for st in 0..strips {
            pack_b::<W>(ops.b, ops.n, pc, kc, st, &mut own[at..at + kc * nr]);
            at += kc * nr;
        }
        pc += kc;
    }
    &own[..at]
}

/// `dst = sum_{p in p0 .. p1} a[r][p] b[p][j]` for rows `r0 .. r1` (`dst` as blocks of `MR`
/// rows of `n`), in the f32 order: panel by panel, each panel summed by [`micro`], the first
/// stored, the rest added (`p1 - p0 <= SP * KC`).
/// Cache blocking (the order of the work, not of any sum; see the module doc): B in cache
/// blocks of [`PB`] panels (packed here when not packed whole); per panel, A's rows packed,
/// then per B strip every row block.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the chunk's rows and p-range, both given as bounds
fn panels<W: Tile, const MR: usize>(
    ops: Operands<'_, W::E>,
    r0: usize,
    r1: usize,
    p0: usize,
    p1: usize,
    own: &mut Scratch<W::E>,
    dst: &mut [&mut [W::E]],
) where
    W::E: Kernel,
{
    let (a, k, n) = (ops.a, ops.k, ops.n);
    let nr = NV * W::L;
    let strips = n.div_ceil(nr);
    // Internal invariant: A's rows `r0 .. r1` hold the columns `p0 .. p1` (what `pack_a`
    // copies).
    assert!(r1 <= a.len() / k && p1 <= k);
    let mut kb = p0;
    while kb < p1 {
        let kb1 = (kb + PB * KC).min(p1);
        let bpanels = b_panels::<W>(ops, kb, kb1, &mut own.b);
        assert!(bpanels.len() == (kb1 - kb) * strips * nr);
        let mut pc = kb;
        while pc < kb1 {
            let kc = KC.min(kb1 - pc);
            pack_a::<W::E, MR>(a, k, r0, r1, n, dst, pc, kc, &mut own.a);
            let apack = &own.a.a[..dst.len() * MR * kc];
            let panel = &bpanels[(pc - kb) * strips * nr..];
            // The B strip the row blocks share next: the panel's next strip, or the next
            // panel's first (none after the cache block's last panel).
            let next_strip = |st: usize| match (st + 1 < strips, pc + kc < kb1) {
                (true, _) => &panel[(st + 1) * kc * nr..(st + 2) * kc * nr],
                (false, true) => &panel[strips * kc * nr..][..KC.min(kb1 - pc - kc) * nr],
                (false, false) => &panel[..0],
            };
            for st in 0..strips {
                let c0 = st * nr;
                let w = nr.min(n - c0);
                let bp = panel[st * kc * nr..].as_ptr();
                let ahead = Ahead::spread(next_strip(st), dst.len());
                for (ib, blk) in dst.iter_mut().enumerate() {
                    let rows_here = blk.len() / n;
                    let ap = apack[ib * MR * kc..].as_ptr();
                    let tile = OutTile { c: blk.as_mut_ptr().wrapping_add(c0), ldc: n, rows: rows_here, cols: w };
                    // SAFETY: the packed A block has `kc * MR` elements (sliced above), the B
                    // strip `kc * nr` (inside the panel, asserted above); the tile writes
                    // `rows_here x w` elements of `blk` from column `c0` (row stride n).
                    unsafe { micro::<W, MR>(kc, ap, bp, tile, pc > p0, ahead.part(ib)) };
                }
            }
            pc += kc;
        }
        kb = kb1;
    }
}

/// `k > SP * KC`: each super-panel into a scratch copy of the chunk's rows, combined by the
/// pairwise tree (a binary counter, as `reduce` combines its blocks), the total copied out.
#[inline(always)]
#[allow(clippy::assign_op_pattern)] // `left + right`, written in the tree's order
fn super_panels<W: Tile, const MR: usize>(
    ops: Operands<'_, W::E>,
    r0: usize,
    r1: usize,
    own: &mut Scratch<W::E>,
    blocks: &mut [&mut [W::E]],
) where
    W::E: Kernel,
{
    let len = (r1 - r0) * ops.n;
    let mut levels: Vec<Option<Vec<W::E>>> = Vec::new();
    let mut free: Vec<Vec<W::E>> = Vec::new();
    let mut count: u64 = 0;
    let mut p0 = 0;
    while p0 < ops.k {
        let p1 = (p0 + SP * KC).min(ops.k);
        let mut node = free.pop().unwrap_or_else(|| vec![W::E::ZERO; len]);
        let mut dst: Vec<&mut [W::E]> = node.chunks_mut(MR * ops.n).collect();
        panels::<W, MR>(ops, r0, r1, p0, p1, own, &mut dst);
        let (mut c, mut lvl) = (count, 0);
        while c & 1 == 1 {
            if let Some(left) = levels[lvl].take() {
                add_into::<W>(&left, &mut node);
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
    let mut total: Option<Vec<W::E>> = None;
    for node in levels.into_iter().flatten() {
        total = Some(match total {
            None => node,
            Some(mut right) => {
                add_into::<W>(&node, &mut right);
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

/// `right[i] = left[i] + right[i]` (the tree's order), vectorised.
#[inline(always)]
fn add_into<W: Lanes>(left: &[W::E], right: &mut [W::E]) {
    let n = left.len().min(right.len());
    let main = n - n % W::L;
    let (lp, rp) = (left.as_ptr(), right.as_mut_ptr());
    let mut i = 0;
    // SAFETY: `i + L <= main <= n`, within both slices.
    unsafe {
        while i < main {
            W::load(lp.add(i)).add(W::load(rp.add(i))).store(rp.add(i));
            i += W::L;
        }
        while i < n {
            *rp.add(i) = *lp.add(i) + *rp.add(i);
            i += 1;
        }
    }
}

/// Where a micro-kernel call writes: `rows x cols` valid elements of a tile at `c`, row
/// stride `ldc`.
#[derive(Clone, Copy)]
struct OutTile<E> {
    c: *mut E,
    ldc: usize,
    rows: usize,
    cols: usize,
}

/// Cache lines of the B strip the row blocks share next, split among the row blocks of the
/// current strip: each micro-kernel call hints its share into L2, spread over its panel, so
/// the next strip's first call does not wait on L3 (a cache hint only: any address is safe).
#[derive(Clone, Copy)]
struct Ahead<E> {
    p: *const E,
    lines: usize,
    per: usize,
}

impl<E> Ahead<E> {
    /// `next` split among `calls` calls.
    fn spread(next: &[E], calls: usize) -> Self {
        let lines = std::mem::size_of_val(next).div_ceil(64);
        Ahead { p: next.as_ptr(), lines, per: lines.div_ceil(calls.max(1)) }
    }
    /// Call `i`'s share.
    fn part(self, i: usize) -> Self {
        let from = (i * self.per).min(self.lines);
        Ahead { p: self.p.wrapping_byte_add(from * 64), lines: self.per.min(self.lines - from), per: 0 }
    }
}

/// One multiply-add step `q` of a block: `blk[i][v] += a[q][i] * b[q][v]`.
///
/// Safety: `aq` has `MR` elements, `bq` `NV * L`; the lane type's target feature is on.
#[inline(always)]
unsafe fn step<W: Lanes, const MR: usize>(aq: *const W::E, bq: *const W::E, blk: &mut [[W; NV]; MR]) {
    unsafe {
        let bv: [W; NV] = std::array::from_fn(|v| W::load(bq.add(v * W::L)));
        for (i, row) in blk.iter_mut().enumerate() {
            let av = W::splat(*aq.add(i));
            for v in 0..NV {
                row[v] = av.fma(bv[v], row[v]);
            }
        }
    }
}

/// One `MR x NV*L` tile of the output (`t`): `sum_p a[i][p] b[p][j]` over one panel of `kc`
/// steps, in blocks of [`KB`] (see the module doc), stored (first panel) or added to what is
/// there (`acc_into`). Hints `ahead`'s lines into L2 along the way.
///
/// Safety: `a` holds `kc * MR` elements (A packed as `[q][MR]`), `b` holds `kc * NV * L`, and
/// `t.c` has `t.rows <= MR` rows of `t.cols <= NV * L` writable elements at stride `t.ldc`; the
/// lane type's target feature is on.
#[inline(always)]
unsafe fn micro<W: Lanes, const MR: usize>(
    kc: usize,
    a: *const W::E,
    b: *const W::E,
    t: OutTile<W::E>,
    acc_into: bool,
    ahead: Ahead<W::E>,
) {
    unsafe {
        let OutTile { c, ldc, rows, cols } = t;
        let l = W::L;
        let nr = NV * l;
        // The output tile is read (or written) after the panel: its lines are fetched now,
        // behind the panel's multiply-adds (the first, the next and the last of each row).
        for i in 0..rows {
            let row = c.add(i * ldc);
            prefetch_line(row);
            prefetch_line(row.wrapping_byte_add(64));
            prefetch_line(row.add(cols - 1));
        }
        let zero = W::splat(W::E::ZERO);
        let mut acc = [[zero; NV]; MR];
        // One hinted line per loop turn of a whole block (64 in a panel of 256).
        let (mut hint, hint_end) = (ahead.p, ahead.p.wrapping_byte_add(ahead.lines * 64));
        let mut p = 0;
        while p < kc {
            let pe = (p + KB).min(kc);
            let (mut aq, mut bq) = (a.add(p * MR), b.add(p * nr));
            let mut blk = [[zero; NV]; MR];
            if pe - p == KB {
                // A whole block, four steps per loop turn (fewer loop-counter instructions).
                for _ in 0..KB / 4 {
                    if hint < hint_end {
                        prefetch_line_l2(hint);
                        hint = hint.wrapping_byte_add(64);
                    }
                    for u in 0..4 {
                        step::<W, MR>(aq.add(u * MR), bq.add(u * nr), &mut blk);
                    }
                    (aq, bq) = (aq.add(4 * MR), bq.add(4 * nr));
                }
            } else {
                for _ in p..pe {
                    step::<W, MR>(aq, bq, &mut blk);
                    (aq, bq) = (aq.add(MR), bq.add(nr));
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
                    let r = if acc_into { W::load(ptr).add(*a) } else { *a };
                    r.store(ptr);
                }
            }
        } else {
            let mut tile = [W::E::ZERO; 16 * NV * 8];
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

#[cfg(test)]
mod tests {
    use super::{matmul_f64, overflow, pack_b_shared, Isa, Kernel};
    use crate::cpu::simd::with_isa_override;

    /// The column scales taken from the packed strips are those of a pass over B, on every
    /// instruction set: NaN above infinity, signs and signed zeros dropped, subnormals kept,
    /// over several panels and a partial last strip.
    #[test]
    fn the_scales_taken_while_packing_are_those_of_a_pass_over_b() {
        let (k, n) = (600, 37);
        let mut b: Vec<f64> = (0..k * n).map(|i| ((i * 7919) % 1000) as f64 * -1e-3 + 0.4).collect();
        b[3 * n + 5] = f64::NAN;
        b[590 * n + 5] = f64::INFINITY;
        b[300 * n + 6] = f64::NEG_INFINITY;
        b[599 * n + 36] = -1e300;
        for v in b.iter_mut().skip(20).step_by(n) {
            *v = -0.0;
        }
        for v in b.iter_mut().skip(21).step_by(n) {
            *v = -1e-310;
        }
        let want = overflow::column_scales(&b, n);
        for isa in Isa::available() {
            let (_, nr) = f64::tile(isa);
            let (pack, mags) = pack_b_shared(isa, &b, k, n, nr);
            assert!(!pack.is_empty(), "{isa:?}: packed whole");
            let got = f64::scales_of(mags);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "{isa:?}");
            assert!(got[5].is_nan() && got[6] == f64::INFINITY && got[20] == 0.0 && got[21] == 1e-310 && got[36] == 1e300);
        }
    }

    /// The guard's row maxima are taken over every panel and super-panel of A: a row whose
    /// only large values lie in the second super-panel, in two blocks (`MAX` closing one,
    /// `MAX - MAX` the next: `MAX` in blocks, `inf` in the reference's order), is recomputed
    /// and gives the reference's `inf`, on every instruction set.
    #[test]
    fn the_guard_sees_a_row_s_large_values_in_any_panel() {
        let k = 5000;
        let mut a = vec![0.5; 2 * k];
        a[..k].fill(0.0);
        (a[4511], a[4512], a[4513]) = (f64::MAX, f64::MAX, -f64::MAX);
        let b = vec![1.0; k];
        for isa in Isa::available() {
            let mut out = [0.0; 2];
            with_isa_override(isa, || matmul_f64(&a, &b, 2, k, 1, &mut out));
            assert_eq!(out, [f64::INFINITY, 2500.0], "{isa:?}");
        }
    }
}
