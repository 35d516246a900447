//! Total-order key lanes for the median's CPU kernel (`median_cpu.rs`), one trait, [`Keys`],
//! over both key widths: a vector of `L` keys of one float type, each an integer whose signed
//! order is the float's `total_cmp`. For f32 the runtime's `Vi` (i32 key lanes) serves as it
//! is; for f64 this file has i64 key lanes written in user code with `std::arch`, one per
//! instruction set `with_isa!` selects: 8 lanes of a plain array (portable), 4 lanes of AVX2
//! (64-bit compares and blends: AVX2 has no 64-bit min/max) and 8 lanes of AVX-512F (native
//! 64-bit min/max), reached from `with_isa!`'s f32 vector type through [`KeyLanes64`].
//!
//! Every implementation computes the same lane-wise integer functions, so results never depend
//! on the instruction set.
//!
//! Safety: as for the runtime's vectors: the methods need their target feature (which
//! `with_isa!` guarantees for the type it names), and pointer methods `L` valid lanes (or `L`
//! rows of `L` valid lanes for the transposes).

// The safety contract of every method is the module's, stated once.
#![allow(clippy::missing_safety_doc)]

use super::median_net::MinMax;
use op_runtime::cpu::simd::{key, unkey, Vi};

/// A vector of `L` total-order keys of the float type [`Keys::Float`].
pub trait Keys: MinMax {
    /// The float type whose keys the lanes hold (`f32` or `f64`).
    type Float: Copy;
    /// The key: an integer of the float's width whose signed order is `total_cmp`.
    type Key: Copy + Default;
    /// Lanes (at most 16).
    const L: usize;
    /// The largest key (a sentinel above every window).
    const MAX: Self::Key;
    /// The key of one float.
    fn key_of(v: Self::Float) -> Self::Key;
    /// The float of one key (the inverse of [`Keys::key_of`]).
    fn float_of(k: Self::Key) -> Self::Float;
    /// Loads `L` lanes from `p`.
    unsafe fn load(p: *const Self::Key) -> Self;
    /// Stores `L` lanes at `p`.
    unsafe fn store(self, p: *mut Self::Key);
    /// Every lane `v`.
    unsafe fn splat(v: Self::Key) -> Self;
    /// Lane-wise `self < t ? a : b`.
    unsafe fn sel_lt(self, t: Self, a: Self, b: Self) -> Self;
    /// Lane-wise key of the float bits (also its inverse: the map is an involution).
    unsafe fn key(self) -> Self;
    /// Loads `L` rows of `L` elements (`src[r] .. src[r] + L`), keys them and stores the
    /// transpose: `dst[c * L + r] = key(src[r][c])` (only the first `L` pointers are read).
    unsafe fn transpose_key(src: &[*const Self::Key; 16], dst: *mut Self::Key);
    /// The inverse of `transpose_key`: `dst[r][c] = unkey(src[c * L + r])` for `r, c < L`.
    unsafe fn transpose_unkey(src: *const Self::Key, dst: &[*mut Self::Key; 16]);
}

/// f32 keys: the runtime's i32 key lanes as they are.
impl<V: Vi> Keys for V {
    type Float = f32;
    type Key = i32;
    const L: usize = <V as Vi>::L;
    const MAX: i32 = i32::MAX;
    #[inline(always)]
    fn key_of(v: f32) -> i32 {
        key(v)
    }
    #[inline(always)]
    fn float_of(k: i32) -> f32 {
        unkey(k)
    }
    #[inline(always)]
    unsafe fn load(p: *const i32) -> Self {
        unsafe { <V as Vi>::load(p) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut i32) {
        unsafe { <V as Vi>::store(self, p) }
    }
    #[inline(always)]
    unsafe fn splat(v: i32) -> Self {
        unsafe { <V as Vi>::splat(v) }
    }
    #[inline(always)]
    unsafe fn sel_lt(self, t: Self, a: Self, b: Self) -> Self {
        unsafe { <V as Vi>::sel_lt(self, t, a, b) }
    }
    #[inline(always)]
    unsafe fn key(self) -> Self {
        unsafe { <V as Vi>::key(self) }
    }
    #[inline(always)]
    unsafe fn transpose_key(src: &[*const i32; 16], dst: *mut i32) {
        unsafe { <V as Vi>::transpose_key(src, dst) }
    }
    #[inline(always)]
    unsafe fn transpose_unkey(src: *const i32, dst: &[*mut i32; 16]) {
        unsafe { <V as Vi>::transpose_unkey(src, dst) }
    }
}

/// The key map on raw f64 bits: flips the magnitude bits of negatives (an involution).
#[inline(always)]
fn key_bits(b: i64) -> i64 {
    b ^ (((b >> 63) as u64) >> 1) as i64
}

/// The f64 key vector of the instruction set whose f32 vector is `Self` (the type `with_isa!`
/// names).
pub trait KeyLanes64 {
    /// The i64 key vector of the same instruction set.
    type K: Keys<Float = f64, Key = i64>;
}

impl KeyLanes64 for op_runtime::cpu::simd::P8 {
    type K = P8k;
}

/// The members of [`Keys`] that are the same for every f64 key vector.
macro_rules! f64_keys {
    () => {
        type Float = f64;
        type Key = i64;
        const MAX: i64 = i64::MAX;
        #[inline(always)]
        fn key_of(v: f64) -> i64 {
            super::key_bits(v.to_bits() as i64)
        }
        #[inline(always)]
        fn float_of(k: i64) -> f64 {
            f64::from_bits(super::key_bits(k) as u64)
        }
    };
}

/// Portable keys: 8 lanes of a plain array.
#[derive(Clone, Copy)]
pub struct P8k(pub [i64; 8]);

impl MinMax for P8k {
    #[inline(always)]
    unsafe fn min(self, o: Self) -> Self {
        P8k(std::array::from_fn(|i| self.0[i].min(o.0[i])))
    }
    #[inline(always)]
    unsafe fn max(self, o: Self) -> Self {
        P8k(std::array::from_fn(|i| self.0[i].max(o.0[i])))
    }
}

mod portable {
    //! [`P8k`]'s [`Keys`] (a module so that `f64_keys!` names `super::key_bits` everywhere).
    use super::{Keys, P8k};

    impl Keys for P8k {
        f64_keys!();
        const L: usize = 8;
        #[inline(always)]
        unsafe fn load(p: *const i64) -> Self {
            P8k(unsafe { std::ptr::read_unaligned(p as *const [i64; 8]) })
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut i64) {
            unsafe { std::ptr::write_unaligned(p as *mut [i64; 8], self.0) }
        }
        #[inline(always)]
        unsafe fn splat(v: i64) -> Self {
            P8k([v; 8])
        }
        #[inline(always)]
        unsafe fn sel_lt(self, t: Self, a: Self, b: Self) -> Self {
            P8k(std::array::from_fn(|i| if self.0[i] < t.0[i] { a.0[i] } else { b.0[i] }))
        }
        #[inline(always)]
        unsafe fn key(self) -> Self {
            P8k(self.0.map(super::key_bits))
        }
        #[inline(always)]
        unsafe fn transpose_key(src: &[*const i64; 16], dst: *mut i64) {
            for (r, s) in src.iter().take(8).enumerate() {
                for c in 0..8 {
                    unsafe { *dst.add(c * 8 + r) = super::key_bits(*s.add(c)) };
                }
            }
        }
        #[inline(always)]
        unsafe fn transpose_unkey(src: *const i64, dst: &[*mut i64; 16]) {
            for (r, d) in dst.iter().take(8).enumerate() {
                for c in 0..8 {
                    unsafe { *d.add(c) = super::key_bits(*src.add(c * 8 + r)) };
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! AVX2 ([`K4`]) and AVX-512F ([`K8`]) key lanes.
    use super::{KeyLanes64, Keys, MinMax};
    use op_runtime::cpu::simd::x86::{F16, F8};
    use std::arch::x86_64::*;

    impl KeyLanes64 for F8 {
        type K = K4;
    }

    impl KeyLanes64 for F16 {
        type K = K8;
    }

    /// 4 i64 keys, AVX2.
    #[derive(Clone, Copy)]
    pub struct K4(pub __m256i);

    #[inline(always)]
    unsafe fn key256(b: __m256i) -> __m256i {
        unsafe { _mm256_xor_si256(b, _mm256_srli_epi64::<1>(_mm256_cmpgt_epi64(_mm256_setzero_si256(), b))) }
    }

    /// 4x4 transpose of i64 lanes.
    #[inline(always)]
    unsafe fn tr4(r: [__m256i; 4]) -> [__m256i; 4] {
        unsafe {
            let t0 = _mm256_unpacklo_epi64(r[0], r[1]);
            let t1 = _mm256_unpackhi_epi64(r[0], r[1]);
            let t2 = _mm256_unpacklo_epi64(r[2], r[3]);
            let t3 = _mm256_unpackhi_epi64(r[2], r[3]);
            [
                _mm256_permute2x128_si256::<0x20>(t0, t2),
                _mm256_permute2x128_si256::<0x20>(t1, t3),
                _mm256_permute2x128_si256::<0x31>(t0, t2),
                _mm256_permute2x128_si256::<0x31>(t1, t3),
            ]
        }
    }

    impl MinMax for K4 {
        #[inline(always)]
        unsafe fn min(self, o: Self) -> Self {
            unsafe { K4(_mm256_blendv_epi8(self.0, o.0, _mm256_cmpgt_epi64(self.0, o.0))) }
        }
        #[inline(always)]
        unsafe fn max(self, o: Self) -> Self {
            unsafe { K4(_mm256_blendv_epi8(o.0, self.0, _mm256_cmpgt_epi64(self.0, o.0))) }
        }
    }

    impl Keys for K4 {
        f64_keys!();
        const L: usize = 4;
        #[inline(always)]
        unsafe fn load(p: *const i64) -> Self {
            unsafe { K4(_mm256_loadu_si256(p as *const __m256i)) }
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut i64) {
            unsafe { _mm256_storeu_si256(p as *mut __m256i, self.0) }
        }
        #[inline(always)]
        unsafe fn splat(v: i64) -> Self {
            unsafe { K4(_mm256_set1_epi64x(v)) }
        }
        #[inline(always)]
        unsafe fn sel_lt(self, t: Self, a: Self, b: Self) -> Self {
            unsafe { K4(_mm256_blendv_epi8(b.0, a.0, _mm256_cmpgt_epi64(t.0, self.0))) }
        }
        #[inline(always)]
        unsafe fn key(self) -> Self {
            unsafe { K4(key256(self.0)) }
        }
        #[inline(always)]
        unsafe fn transpose_key(src: &[*const i64; 16], dst: *mut i64) {
            unsafe {
                let mut r = [_mm256_setzero_si256(); 4];
                for (v, p) in r.iter_mut().zip(src) {
                    *v = _mm256_loadu_si256(*p as *const __m256i);
                }
                for (c, v) in tr4(r).iter().enumerate() {
                    _mm256_storeu_si256(dst.add(c * 4) as *mut __m256i, key256(*v));
                }
            }
        }
        #[inline(always)]
        unsafe fn transpose_unkey(src: *const i64, dst: &[*mut i64; 16]) {
            unsafe {
                let mut r = [_mm256_setzero_si256(); 4];
                for (i, v) in r.iter_mut().enumerate() {
                    *v = _mm256_loadu_si256(src.add(i * 4) as *const __m256i);
                }
                for (c, v) in tr4(r).iter().enumerate() {
                    _mm256_storeu_si256(dst[c] as *mut __m256i, key256(*v));
                }
            }
        }
    }

    /// 8 i64 keys, AVX-512F.
    #[derive(Clone, Copy)]
    pub struct K8(pub __m512i);

    #[inline(always)]
    unsafe fn key512(b: __m512i) -> __m512i {
        unsafe { _mm512_xor_si512(b, _mm512_srli_epi64::<1>(_mm512_srai_epi64::<63>(b))) }
    }

    /// 8x8 transpose of i64 lanes: pairs within 128-bit blocks, then two rounds of 128-bit
    /// block shuffles.
    #[inline(always)]
    unsafe fn tr8(r: [__m512i; 8]) -> [__m512i; 8] {
        unsafe {
            // t[2k] = (r[2k][0], r[2k+1][0], r[2k][2], r[2k+1][2], ...), t[2k+1] the odd columns.
            let t = [
                _mm512_unpacklo_epi64(r[0], r[1]),
                _mm512_unpackhi_epi64(r[0], r[1]),
                _mm512_unpacklo_epi64(r[2], r[3]),
                _mm512_unpackhi_epi64(r[2], r[3]),
                _mm512_unpacklo_epi64(r[4], r[5]),
                _mm512_unpackhi_epi64(r[4], r[5]),
                _mm512_unpacklo_epi64(r[6], r[7]),
                _mm512_unpackhi_epi64(r[6], r[7]),
            ];
            // Rows 0-3: u0 columns 0/4, u1 columns 2/6, u2 columns 1/5, u3 columns 3/7 (rows 4-7
            // likewise in u4..u7).
            let u = [
                _mm512_shuffle_i64x2::<0x88>(t[0], t[2]),
                _mm512_shuffle_i64x2::<0xdd>(t[0], t[2]),
                _mm512_shuffle_i64x2::<0x88>(t[1], t[3]),
                _mm512_shuffle_i64x2::<0xdd>(t[1], t[3]),
                _mm512_shuffle_i64x2::<0x88>(t[4], t[6]),
                _mm512_shuffle_i64x2::<0xdd>(t[4], t[6]),
                _mm512_shuffle_i64x2::<0x88>(t[5], t[7]),
                _mm512_shuffle_i64x2::<0xdd>(t[5], t[7]),
            ];
            [
                _mm512_shuffle_i64x2::<0x88>(u[0], u[4]),
                _mm512_shuffle_i64x2::<0x88>(u[2], u[6]),
                _mm512_shuffle_i64x2::<0x88>(u[1], u[5]),
                _mm512_shuffle_i64x2::<0x88>(u[3], u[7]),
                _mm512_shuffle_i64x2::<0xdd>(u[0], u[4]),
                _mm512_shuffle_i64x2::<0xdd>(u[2], u[6]),
                _mm512_shuffle_i64x2::<0xdd>(u[1], u[5]),
                _mm512_shuffle_i64x2::<0xdd>(u[3], u[7]),
            ]
        }
    }

    impl MinMax for K8 {
        #[inline(always)]
        unsafe fn min(self, o: Self) -> Self {
            unsafe { K8(_mm512_min_epi64(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn max(self, o: Self) -> Self {
            unsafe { K8(_mm512_max_epi64(self.0, o.0)) }
        }
    }

    impl Keys for K8 {
        f64_keys!();
        const L: usize = 8;
        #[inline(always)]
        unsafe fn load(p: *const i64) -> Self {
            unsafe { K8(_mm512_loadu_si512(p as *const _)) }
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut i64) {
            unsafe { _mm512_storeu_si512(p as *mut _, self.0) }
        }
        #[inline(always)]
        unsafe fn splat(v: i64) -> Self {
            unsafe { K8(_mm512_set1_epi64(v)) }
        }
        #[inline(always)]
        unsafe fn sel_lt(self, t: Self, a: Self, b: Self) -> Self {
            unsafe { K8(_mm512_mask_blend_epi64(_mm512_cmplt_epi64_mask(self.0, t.0), b.0, a.0)) }
        }
        #[inline(always)]
        unsafe fn key(self) -> Self {
            unsafe { K8(key512(self.0)) }
        }
        #[inline(always)]
        unsafe fn transpose_key(src: &[*const i64; 16], dst: *mut i64) {
            unsafe {
                let mut r = [_mm512_setzero_si512(); 8];
                for (v, p) in r.iter_mut().zip(src) {
                    *v = _mm512_loadu_si512(*p as *const _);
                }
                for (c, v) in tr8(r).iter().enumerate() {
                    _mm512_storeu_si512(dst.add(c * 8) as *mut _, key512(*v));
                }
            }
        }
        #[inline(always)]
        unsafe fn transpose_unkey(src: *const i64, dst: &[*mut i64; 16]) {
            unsafe {
                let mut r = [_mm512_setzero_si512(); 8];
                for (i, v) in r.iter_mut().enumerate() {
                    *v = _mm512_loadu_si512(src.add(i * 8) as *const _);
                }
                for (c, v) in tr8(r).iter().enumerate() {
                    _mm512_storeu_si512(dst[c] as *mut _, key512(*v));
                }
            }
        }
    }
}
