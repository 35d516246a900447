//! Half precision (`f16`, `bf16`) for the built-ins' `cpu` kernels: values are widened to f32
//! (exactly), computed in f32 and rounded to the type (to nearest, ties to even), tile by tile.
//! Owns the conversions and the tiling; must not know an op's arithmetic (the f32 kernels and
//! `dtype` do).
//!
//! A single operation computed this way is what the reference computes (the `half` types do
//! each operation in f32 and round once), so the elementwise kernels are bit-identical to it
//! (transcendental ones within their f32 polynomial's error, then rounded). Where a reference
//! chains operations (a VJP rule), a kernel rounds after each of them, as the reference does,
//! with [`round`] between its f32 steps.

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};
use std::mem::MaybeUninit;

/// Elements per tile: the f32 buffers live on the stack.
pub const TILE: usize = 512;

/// A half-precision type: exact widening to f32, rounding back, and its bits.
pub trait Half: Copy + Send + Sync + 'static {
    /// The bits of `+inf` (a larger magnitude is a NaN).
    const INF: u16;
    /// Widens `src` into `dst` (exact; equal lengths).
    fn widen(src: &[Self], dst: &mut [f32]);
    /// Rounds `src` into `dst` (to nearest, ties to even; equal lengths).
    fn narrow(src: &[f32], dst: &mut [Self]);
    /// The bits.
    fn to_u16(self) -> u16;
    /// The value with bits `b`.
    fn from_u16(b: u16) -> Self;
}

impl Half for f16 {
    const INF: u16 = 0x7c00;
    fn widen(src: &[Self], dst: &mut [f32]) {
        src.convert_to_f32_slice(dst)
    }
    fn narrow(src: &[f32], dst: &mut [Self]) {
        dst.convert_from_f32_slice(src)
    }
    fn to_u16(self) -> u16 {
        self.to_bits()
    }
    fn from_u16(b: u16) -> Self {
        f16::from_bits(b)
    }
}

impl Half for bf16 {
    const INF: u16 = 0x7f80;
    fn widen(src: &[Self], dst: &mut [f32]) {
        src.convert_to_f32_slice(dst)
    }
    fn narrow(src: &[f32], dst: &mut [Self]) {
        dst.convert_from_f32_slice(src)
    }
    fn to_u16(self) -> u16 {
        self.to_bits()
    }
    fn from_u16(b: u16) -> Self {
        bf16::from_bits(b)
    }
}

/// Whether the half with bits `b` is NaN.
#[inline(always)]
pub fn is_nan<H: Half>(b: u16) -> bool {
    b & 0x7fff > H::INF
}

/// Whether the half with bits `b` is greater than zero (false for NaN and both zeros).
#[inline(always)]
pub fn positive<H: Half>(b: u16) -> bool {
    (b & 0x8000 == 0) & (b != 0) & !is_nan::<H>(b)
}

/// Rounds every f32 of `v` to the nearest value of `H` (as f32): one rounding of a reference's
/// chained operations.
#[inline]
pub fn round<H: Half>(v: &mut [f32]) {
    let mut h = [H::from_u16(0); TILE];
    for c in v.chunks_mut(TILE) {
        H::narrow(c, &mut h[..c.len()]);
        H::widen(&h[..c.len()], c);
    }
}

/// Rounds `src` to `H` into `out` (which may be uninitialised; equal lengths).
#[inline]
pub fn store<H: Half>(src: &[f32], out: &mut [MaybeUninit<H>]) {
    let mut h = [H::from_u16(0); TILE];
    for (s, o) in src.chunks(TILE).zip(out.chunks_mut(TILE)) {
        H::narrow(s, &mut h[..s.len()]);
        for (d, v) in o.iter_mut().zip(&h[..s.len()]) {
            d.write(*v);
        }
    }
}

/// The whole of `x` widened to f32 (for kernels that need their inputs at once: reductions,
/// convolutions).
pub fn widened<H: Half>(x: &[H]) -> Vec<f32> {
    let mut v = vec![0f32; x.len()];
    H::widen(x, &mut v);
    v
}

/// `f` over tiles of `k` inputs widened to f32 (`ins[j]` the j-th input, all of `out`'s
/// length); `f` fills its f32 tile, which is rounded once into `out`.
pub fn tiles<H: Half, const K: usize>(ins: [&[H]; K], out: &mut [MaybeUninit<H>], f: impl Fn([&[f32]; K], &mut [f32])) {
    let mut bufs = [[0f32; TILE]; K];
    let mut o = [0f32; TILE];
    let mut start = 0;
    while start < out.len() {
        let n = (out.len() - start).min(TILE);
        for (b, x) in bufs.iter_mut().zip(&ins) {
            H::widen(&x[start..start + n], &mut b[..n]);
        }
        let views: [&[f32]; K] = std::array::from_fn(|j| &bufs[j][..n]);
        f(views, &mut o[..n]);
        store(&o[..n], &mut out[start..start + n]);
        start += n;
    }
}

/// The f32 view of an initialised buffer's uninitialised twin: a kernel writing
/// `&mut [MaybeUninit<f32>]` into an `&mut [f32]` tile.
#[inline(always)]
pub fn uninit(v: &mut [f32]) -> &mut [MaybeUninit<f32>] {
    // SAFETY: `MaybeUninit<f32>` has the layout of `f32`, and every f32 is a valid
    // `MaybeUninit<f32>`; the kernel only writes.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut MaybeUninit<f32>, v.len()) }
}
