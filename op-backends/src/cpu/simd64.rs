//! f64 lanes for `cpu` kernels ([`Vd`]), the 64-bit companion of [`Vf`](super::simd::Vf): each
//! f32 vector type names the f64 vector of its instruction set (`<V as Vf>::D`), so a body
//! written inside [`with_isa!`](crate::with_isa) reaches both widths. Owns the three
//! implementations (portable, AVX2+FMA, AVX-512F) and their shared semantics, and the slice maps
//! over them; must not know any op, allocate, or start threads.
//!
//! Semantics every implementation shares bit for bit (as for `Vf`): `add/sub/mul/div` are the
//! IEEE operations; `min(a, b) = a < b ? a : b` and `max(a, b) = a > b ? a : b` (the second
//! operand when either is NaN); [`Vd::fma`] is fused on every path (the portable one calls
//! `f64::mul_add`), so a result never depends on the instruction set.
//!
//! Safety: as for `Vf` (see [`simd`](super::simd)): the methods need their target feature,
//! which `with_isa!` guarantees, and pointer methods `L` valid lanes.

// The safety contract of every method is the module's, stated once.
#![allow(clippy::missing_safety_doc)]

use super::prefetch::prefetch_ahead;
use std::mem::MaybeUninit;

/// A vector of `L` f64 lanes. See the module doc for the shared semantics.
pub trait Vd: Copy {
    /// Lanes.
    const L: usize;
    /// Lane mask (the result of a comparison).
    type M: Copy;
    /// Every lane `v`.
    unsafe fn splat(v: f64) -> Self;
    /// Every lane the f64 with bits `b`.
    #[inline(always)]
    unsafe fn splat_bits(b: u64) -> Self {
        unsafe { Self::splat(f64::from_bits(b)) }
    }
    /// Loads `L` lanes from `p`.
    unsafe fn load(p: *const f64) -> Self;
    /// Stores `L` lanes at `p`.
    unsafe fn store(self, p: *mut f64);
    /// `self + o` (IEEE).
    unsafe fn add(self, o: Self) -> Self;
    /// `self - o` (IEEE).
    unsafe fn sub(self, o: Self) -> Self;
    /// `self * o` (IEEE).
    unsafe fn mul(self, o: Self) -> Self;
    /// `self / o` (IEEE, correctly rounded).
    unsafe fn div(self, o: Self) -> Self;
    /// `self * b + c`, fused (one rounding) on every path.
    unsafe fn fma(self, b: Self, c: Self) -> Self;
    /// `self < o ? self : o`.
    unsafe fn min(self, o: Self) -> Self;
    /// `self > o ? self : o`.
    unsafe fn max(self, o: Self) -> Self;
    /// Lanes where `self < o` (false where either is NaN).
    unsafe fn lt(self, o: Self) -> Self::M;
    /// Lanes where `self > o` (false where either is NaN).
    unsafe fn gt(self, o: Self) -> Self::M;
    /// Lanes where `self == o` (false where either is NaN; `-0 == +0`).
    unsafe fn eq(self, o: Self) -> Self::M;
    /// Lanes where `self` is NaN.
    unsafe fn is_nan(self) -> Self::M;
    /// `m ? a : b`, lane by lane.
    unsafe fn select(m: Self::M, a: Self, b: Self) -> Self;
    /// Bitwise and.
    unsafe fn and(self, o: Self) -> Self;
    /// Bitwise or.
    unsafe fn or(self, o: Self) -> Self;
    /// Bitwise xor.
    unsafe fn xor(self, o: Self) -> Self;
    /// `self * 2^n` for integral `n` in `[-2200, 2200]` and `|self|` in `[0.5, 2]`, rounded
    /// once (to a subnormal or to infinity where due).
    unsafe fn scale2(self, n: Self) -> Self;
    /// For positive normal `x`: `(e, m)` with `x = m * 2^e`, `m` in `[0.5, 1)`, `e` an
    /// integral float.
    unsafe fn frexp(self) -> (Self, Self);
}

/// `2^n` for integral `n` in `[-1022, 1023]`, from the bits (the magic sum `n + 1.5 * 2^52`
/// holds `n` in its low mantissa bits).
#[inline(always)]
fn pow2_bits(n: f64) -> f64 {
    f64::from_bits(((n + 6_755_399_441_055_744.0).to_bits().wrapping_sub(0x4338_0000_0000_0000).wrapping_add(1023)) << 52)
}

/// Portable f64 implementation: 8 lanes of a plain array.
#[derive(Clone, Copy)]
pub struct P8d(pub [f64; 8]);

macro_rules! pd_map {
    ($a:expr, |$x:ident| $e:expr) => {
        P8d(std::array::from_fn(|i| {
            let $x = $a.0[i];
            $e
        }))
    };
    ($a:expr, $b:expr, |$x:ident, $y:ident| $e:expr) => {
        P8d(std::array::from_fn(|i| {
            let ($x, $y) = ($a.0[i], $b.0[i]);
            $e
        }))
    };
}

impl Vd for P8d {
    const L: usize = 8;
    type M = [bool; 8];
    #[inline(always)]
    unsafe fn splat(v: f64) -> Self {
        P8d([v; 8])
    }
    #[inline(always)]
    unsafe fn load(p: *const f64) -> Self {
        P8d(unsafe { std::ptr::read_unaligned(p as *const [f64; 8]) })
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f64) {
        unsafe { std::ptr::write_unaligned(p as *mut [f64; 8], self.0) }
    }
    #[inline(always)]
    unsafe fn add(self, o: Self) -> Self {
        pd_map!(self, o, |a, b| a + b)
    }
    #[inline(always)]
    unsafe fn sub(self, o: Self) -> Self {
        pd_map!(self, o, |a, b| a - b)
    }
    #[inline(always)]
    unsafe fn mul(self, o: Self) -> Self {
        pd_map!(self, o, |a, b| a * b)
    }
    #[inline(always)]
    unsafe fn div(self, o: Self) -> Self {
        pd_map!(self, o, |a, b| a / b)
    }
    #[inline(always)]
    unsafe fn fma(self, b: Self, c: Self) -> Self {
        P8d(std::array::from_fn(|i| self.0[i].mul_add(b.0[i], c.0[i])))
    }
    #[inline(always)]
    unsafe fn min(self, o: Self) -> Self {
        pd_map!(self, o, |a, b| if a < b { a } else { b })
    }
    #[inline(always)]
    unsafe fn max(self, o: Self) -> Self {
        pd_map!(self, o, |a, b| if a > b { a } else { b })
    }
    #[inline(always)]
    unsafe fn lt(self, o: Self) -> [bool; 8] {
        std::array::from_fn(|i| self.0[i] < o.0[i])
    }
    #[inline(always)]
    unsafe fn gt(self, o: Self) -> [bool; 8] {
        std::array::from_fn(|i| self.0[i] > o.0[i])
    }
    #[inline(always)]
    unsafe fn eq(self, o: Self) -> [bool; 8] {
        std::array::from_fn(|i| self.0[i] == o.0[i])
    }
    #[inline(always)]
    unsafe fn is_nan(self) -> [bool; 8] {
        std::array::from_fn(|i| self.0[i].is_nan())
    }
    #[inline(always)]
    unsafe fn select(m: [bool; 8], a: Self, b: Self) -> Self {
        P8d(std::array::from_fn(|i| if m[i] { a.0[i] } else { b.0[i] }))
    }
    #[inline(always)]
    unsafe fn and(self, o: Self) -> Self {
        pd_map!(self, o, |a, b| f64::from_bits(a.to_bits() & b.to_bits()))
    }
    #[inline(always)]
    unsafe fn or(self, o: Self) -> Self {
        pd_map!(self, o, |a, b| f64::from_bits(a.to_bits() | b.to_bits()))
    }
    #[inline(always)]
    unsafe fn xor(self, o: Self) -> Self {
        pd_map!(self, o, |a, b| f64::from_bits(a.to_bits() ^ b.to_bits()))
    }
    #[inline(always)]
    unsafe fn scale2(self, n: Self) -> Self {
        // Two exact power-of-two factors, each within the normal exponents: one rounding.
        pd_map!(self, n, |a, n| {
            let n1 = (n * 0.5).round_ties_even();
            a * pow2_bits(n1) * pow2_bits(n - n1)
        })
    }
    #[inline(always)]
    unsafe fn frexp(self) -> (Self, Self) {
        let e = pd_map!(self, |a| ((a.to_bits() >> 52) as i64 - 1022) as f64);
        let m = pd_map!(self, |a| f64::from_bits((a.to_bits() & 0x000f_ffff_ffff_ffff) | 0x3fe0_0000_0000_0000));
        (e, m)
    }
}

#[cfg(target_arch = "x86_64")]
pub mod x86 {
    //! The x86 implementations: AVX2+FMA ([`D4`]) and AVX-512F ([`D8`]).
    use super::Vd;
    use std::arch::x86_64::*;

    /// 4 f64 lanes, AVX2 + FMA.
    #[derive(Clone, Copy)]
    pub struct D4(pub __m256d);

    /// `2^n` for integral `n` in `[-1022, 1023]` (see [`super::pow2_bits`]).
    #[inline(always)]
    unsafe fn pow2_256(n: __m256d) -> __m256d {
        unsafe {
            let magic = _mm256_set1_pd(6_755_399_441_055_744.0);
            let i = _mm256_sub_epi64(_mm256_castpd_si256(_mm256_add_pd(n, magic)), _mm256_castpd_si256(magic));
            _mm256_castsi256_pd(_mm256_slli_epi64::<52>(_mm256_add_epi64(i, _mm256_set1_epi64x(1023))))
        }
    }

    impl Vd for D4 {
        const L: usize = 4;
        type M = __m256d;
        #[inline(always)]
        unsafe fn splat(v: f64) -> Self {
            unsafe { D4(_mm256_set1_pd(v)) }
        }
        #[inline(always)]
        unsafe fn load(p: *const f64) -> Self {
            unsafe { D4(_mm256_loadu_pd(p)) }
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut f64) {
            unsafe { _mm256_storeu_pd(p, self.0) }
        }
        #[inline(always)]
        unsafe fn add(self, o: Self) -> Self {
            unsafe { D4(_mm256_add_pd(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn sub(self, o: Self) -> Self {
            unsafe { D4(_mm256_sub_pd(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn mul(self, o: Self) -> Self {
            unsafe { D4(_mm256_mul_pd(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn div(self, o: Self) -> Self {
            unsafe { D4(_mm256_div_pd(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn fma(self, b: Self, c: Self) -> Self {
            unsafe { D4(_mm256_fmadd_pd(self.0, b.0, c.0)) }
        }
        #[inline(always)]
        unsafe fn min(self, o: Self) -> Self {
            unsafe { D4(_mm256_min_pd(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn max(self, o: Self) -> Self {
            unsafe { D4(_mm256_max_pd(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn lt(self, o: Self) -> __m256d {
            unsafe { _mm256_cmp_pd::<_CMP_LT_OQ>(self.0, o.0) }
        }
        #[inline(always)]
        unsafe fn gt(self, o: Self) -> __m256d {
            unsafe { _mm256_cmp_pd::<_CMP_GT_OQ>(self.0, o.0) }
        }
        #[inline(always)]
        unsafe fn eq(self, o: Self) -> __m256d {
            unsafe { _mm256_cmp_pd::<_CMP_EQ_OQ>(self.0, o.0) }
        }
        #[inline(always)]
        unsafe fn is_nan(self) -> __m256d {
            unsafe { _mm256_cmp_pd::<_CMP_UNORD_Q>(self.0, self.0) }
        }
        #[inline(always)]
        unsafe fn select(m: __m256d, a: Self, b: Self) -> Self {
            unsafe { D4(_mm256_blendv_pd(b.0, a.0, m)) }
        }
        #[inline(always)]
        unsafe fn and(self, o: Self) -> Self {
            unsafe { D4(_mm256_and_pd(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn or(self, o: Self) -> Self {
            unsafe { D4(_mm256_or_pd(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn xor(self, o: Self) -> Self {
            unsafe { D4(_mm256_xor_pd(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn scale2(self, n: Self) -> Self {
            unsafe {
                let magic = _mm256_set1_pd(6_755_399_441_055_744.0);
                let n1 = _mm256_sub_pd(_mm256_add_pd(_mm256_mul_pd(n.0, _mm256_set1_pd(0.5)), magic), magic);
                let n2 = _mm256_sub_pd(n.0, n1);
                D4(_mm256_mul_pd(_mm256_mul_pd(self.0, pow2_256(n1)), pow2_256(n2)))
            }
        }
        #[inline(always)]
        unsafe fn frexp(self) -> (Self, Self) {
            unsafe {
                let b = _mm256_castpd_si256(self.0);
                // The biased exponent (11 bits) as a float: its bits placed in a magic double.
                let magic = _mm256_set1_pd(4_503_599_627_370_496.0); // 2^52
                let eb = _mm256_or_si256(_mm256_srli_epi64::<52>(b), _mm256_castpd_si256(magic));
                let e = _mm256_sub_pd(_mm256_castsi256_pd(eb), _mm256_set1_pd(4_503_599_627_370_496.0 + 1022.0));
                let m = _mm256_or_si256(
                    _mm256_and_si256(b, _mm256_set1_epi64x(0x000f_ffff_ffff_ffff)),
                    _mm256_set1_epi64x(0x3fe0_0000_0000_0000),
                );
                (D4(e), D4(_mm256_castsi256_pd(m)))
            }
        }
    }

    /// 8 f64 lanes, AVX-512F.
    #[derive(Clone, Copy)]
    pub struct D8(pub __m512d);

    impl Vd for D8 {
        const L: usize = 8;
        type M = __mmask8;
        #[inline(always)]
        unsafe fn splat(v: f64) -> Self {
            unsafe { D8(_mm512_set1_pd(v)) }
        }
        #[inline(always)]
        unsafe fn load(p: *const f64) -> Self {
            unsafe { D8(_mm512_loadu_pd(p)) }
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut f64) {
            unsafe { _mm512_storeu_pd(p, self.0) }
        }
        #[inline(always)]
        unsafe fn add(self, o: Self) -> Self {
            unsafe { D8(_mm512_add_pd(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn sub(self, o: Self) -> Self {
            unsafe { D8(_mm512_sub_pd(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn mul(self, o: Self) -> Self {
            unsafe { D8(_mm512_mul_pd(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn div(self, o: Self) -> Self {
            unsafe { D8(_mm512_div_pd(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn fma(self, b: Self, c: Self) -> Self {
            unsafe { D8(_mm512_fmadd_pd(self.0, b.0, c.0)) }
        }
        #[inline(always)]
        unsafe fn min(self, o: Self) -> Self {
            unsafe { D8(_mm512_min_pd(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn max(self, o: Self) -> Self {
            unsafe { D8(_mm512_max_pd(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn lt(self, o: Self) -> __mmask8 {
            unsafe { _mm512_cmp_pd_mask::<_CMP_LT_OQ>(self.0, o.0) }
        }
        #[inline(always)]
        unsafe fn gt(self, o: Self) -> __mmask8 {
            unsafe { _mm512_cmp_pd_mask::<_CMP_GT_OQ>(self.0, o.0) }
        }
        #[inline(always)]
        unsafe fn eq(self, o: Self) -> __mmask8 {
            unsafe { _mm512_cmp_pd_mask::<_CMP_EQ_OQ>(self.0, o.0) }
        }
        #[inline(always)]
        unsafe fn is_nan(self) -> __mmask8 {
            unsafe { _mm512_cmp_pd_mask::<_CMP_UNORD_Q>(self.0, self.0) }
        }
        #[inline(always)]
        unsafe fn select(m: __mmask8, a: Self, b: Self) -> Self {
            unsafe { D8(_mm512_mask_blend_pd(m, b.0, a.0)) }
        }
        #[inline(always)]
        unsafe fn and(self, o: Self) -> Self {
            unsafe { D8(_mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(self.0), _mm512_castpd_si512(o.0)))) }
        }
        #[inline(always)]
        unsafe fn or(self, o: Self) -> Self {
            unsafe { D8(_mm512_castsi512_pd(_mm512_or_si512(_mm512_castpd_si512(self.0), _mm512_castpd_si512(o.0)))) }
        }
        #[inline(always)]
        unsafe fn xor(self, o: Self) -> Self {
            unsafe { D8(_mm512_castsi512_pd(_mm512_xor_si512(_mm512_castpd_si512(self.0), _mm512_castpd_si512(o.0)))) }
        }
        #[inline(always)]
        unsafe fn scale2(self, n: Self) -> Self {
            unsafe { D8(_mm512_scalef_pd(self.0, n.0)) }
        }
        #[inline(always)]
        unsafe fn frexp(self) -> (Self, Self) {
            unsafe {
                let b = _mm512_castpd_si512(self.0);
                let e = _mm512_sub_epi64(_mm512_srli_epi64::<52>(b), _mm512_set1_epi64(1022));
                let m = _mm512_or_si512(
                    _mm512_and_si512(b, _mm512_set1_epi64(0x000f_ffff_ffff_ffff)),
                    _mm512_set1_epi64(0x3fe0_0000_0000_0000),
                );
                (D8(i64_to_f64_512(e)), D8(_mm512_castsi512_pd(m)))
            }
        }
    }

    /// i64 lanes (small integers) to f64 with AVX-512F only (`vcvtqq2pd` is AVX-512DQ): the
    /// value placed in the mantissa of `2^52` and the `2^52` subtracted (exact for
    /// `|v| < 2^51`).
    #[inline(always)]
    unsafe fn i64_to_f64_512(v: __m512i) -> __m512d {
        unsafe {
            let magic = _mm512_set1_pd(6_755_399_441_055_744.0); // 1.5 * 2^52
            let s = _mm512_add_epi64(v, _mm512_castpd_si512(magic));
            _mm512_sub_pd(_mm512_castsi512_pd(s), magic)
        }
    }
}

/// Applies `f` to `L`-lane blocks of `x`, writing every one of the first
/// `min(x.len(), out.len())` elements of `out` (which may be uninitialised); the tail goes
/// through a zero-padded block, so every element takes the same vector code.
#[inline(always)]
pub fn map1d_uninit<D: Vd>(x: &[f64], out: &mut [MaybeUninit<f64>], f: impl Fn(D) -> D) {
    let n = x.len().min(out.len());
    let op = out.as_mut_ptr() as *mut f64;
    let (l, xp) = (D::L, x.as_ptr());
    let main = n - n % l;
    let mut i = 0;
    // SAFETY: `x` and `out` have at least `n` elements; the tail block is local.
    unsafe {
        while i < main {
            prefetch_ahead(xp, i);
            f(D::load(xp.add(i))).store(op.add(i));
            i += l;
        }
        if main < n {
            let mut bx = [0f64; 16];
            bx[..n - main].copy_from_slice(&x[main..n]);
            let mut bo = [0f64; 16];
            f(D::load(bx.as_ptr())).store(bo.as_mut_ptr());
            std::ptr::copy_nonoverlapping(bo.as_ptr(), op.add(main), n - main);
        }
    }
}

/// Binary counterpart of [`map1d_uninit`]: `out[i] = f(a[i], b[i])` over the first
/// `min(a.len(), b.len(), out.len())` elements.
#[inline(always)]
pub fn map2d_uninit<D: Vd>(a: &[f64], b: &[f64], out: &mut [MaybeUninit<f64>], f: impl Fn(D, D) -> D) {
    let n = a.len().min(b.len()).min(out.len());
    let op = out.as_mut_ptr() as *mut f64;
    let (l, ap, bp) = (D::L, a.as_ptr(), b.as_ptr());
    let main = n - n % l;
    let mut i = 0;
    // SAFETY: as in `map1d_uninit`.
    unsafe {
        while i < main {
            prefetch_ahead(ap, i);
            prefetch_ahead(bp, i);
            f(D::load(ap.add(i)), D::load(bp.add(i))).store(op.add(i));
            i += l;
        }
        if main < n {
            let (mut ba, mut bb) = ([0f64; 16], [0f64; 16]);
            ba[..n - main].copy_from_slice(&a[main..n]);
            bb[..n - main].copy_from_slice(&b[main..n]);
            let mut bo = [0f64; 16];
            f(D::load(ba.as_ptr()), D::load(bb.as_ptr())).store(bo.as_mut_ptr());
            std::ptr::copy_nonoverlapping(bo.as_ptr(), op.add(main), n - main);
        }
    }
}
