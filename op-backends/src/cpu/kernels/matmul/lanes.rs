//! The vector lanes the matmul kernel is written over, for f32 and f64: [`Lanes`] (load,
//! store, add, multiply-add) and [`Tile`] (the rows of a lane type's register tile, at f32 and
//! at f64). The f32 lanes are the [`Vf`] types of `simd` (what `with_isa!` binds); the f64
//! lanes of the same instruction set are [`Wide::D`]. Owns the f64 vector types and the tile
//! sizes; must not know the kernel's blocking or summation order.
//!
//! Semantics shared by every implementation: `add` is the IEEE addition, as the scalar `+` is;
//! `fma` is fused on the x86 paths and `a * b + c` rounded twice on the portable path (as
//! [`Vf::fma`]).

use crate::cpu::simd::{Vf, P8};

/// A scalar the kernel serves (`+` is the IEEE addition, as the lanes' `add`).
pub trait Elem: Copy + Send + Sync + std::ops::Add<Output = Self> + 'static {
    /// `+0`.
    const ZERO: Self;
    /// The bits of `|self|`: they order as the magnitudes do, a NaN's above infinity's.
    fn magnitude_bits(self) -> u64;
}
/// The largest [`Elem::magnitude_bits`] of `x` (0 for none): `max |x|`'s bits, NaN above
/// infinity (an integer max, which vectorises).
#[inline(always)]
pub fn max_magnitude_bits<E: Elem>(x: &[E]) -> u64 {
    x.iter().fold(0, |m, v| m.max(v.magnitude_bits()))
}

impl Elem for f32 {
    const ZERO: f32 = 0.0;
    #[inline(always)]
    fn magnitude_bits(self) -> u64 {
        u64::from(self.to_bits() & !(1 << 31))
    }
}
impl Elem for f64 {
    const ZERO: f64 = 0.0;
    #[inline(always)]
    fn magnitude_bits(self) -> u64 {
        self.to_bits() & !(1 << 63)
    }
}

/// `L` lanes of [`Lanes::E`]. Safety of every method: the lane type's target feature is on
/// (`with_isa!` guarantees it) and pointers have `L` valid elements (unaligned is fine).
#[allow(clippy::missing_safety_doc)] // the contract above, stated once
pub trait Lanes: Copy {
    /// The scalar.
    type E: Elem;
    /// Lanes.
    const L: usize;
    /// Every lane `v`.
    unsafe fn splat(v: Self::E) -> Self;
    /// Loads `L` elements.
    unsafe fn load(p: *const Self::E) -> Self;
    /// Stores `L` elements.
    unsafe fn store(self, p: *mut Self::E);
    /// `self + o`.
    unsafe fn add(self, o: Self) -> Self;
    /// `self * b + c` (fused on x86).
    unsafe fn fma(self, b: Self, c: Self) -> Self;
}

/// The register tile of a lane type: `MR` rows of `NV` vectors of accumulators (twice for the
/// summation order: the running panel sums and the block being accumulated), plus `NV` B
/// vectors and one broadcast.
pub trait Tile: Lanes {
    /// Rows of the tile.
    const MR: usize;
}

/// Vectors of the tile's row (the tile is `MR x NV * L`).
pub const NV: usize = 2;

/// The f64 lanes of the instruction set whose f32 lanes are `Self`.
pub trait Wide: Vf {
    /// The f64 lane type.
    type D: Tile<E = f64>;
}

macro_rules! f32_lanes {
    ($t:ty, $mr:expr) => {
        impl Lanes for $t {
            type E = f32;
            const L: usize = <$t as Vf>::L;
            #[inline(always)]
            unsafe fn splat(v: f32) -> Self {
                unsafe { <$t as Vf>::splat(v) }
            }
            #[inline(always)]
            unsafe fn load(p: *const f32) -> Self {
                unsafe { <$t as Vf>::load(p) }
            }
            #[inline(always)]
            unsafe fn store(self, p: *mut f32) {
                unsafe { <$t as Vf>::store(self, p) }
            }
            #[inline(always)]
            unsafe fn add(self, o: Self) -> Self {
                unsafe { <$t as Vf>::add(self, o) }
            }
            #[inline(always)]
            unsafe fn fma(self, b: Self, c: Self) -> Self {
                unsafe { <$t as Vf>::fma(self, b, c) }
            }
        }
        impl Tile for $t {
            const MR: usize = $mr;
        }
    };
}

// 16 registers (portable, AVX2): 2 * MR * NV + NV + 1 <= 16 at MR = 3; the portable arrays
// are not registers, 4 rows keep their loops long. AVX-512 has 32: MR = 6.
f32_lanes!(P8, 4);

/// Portable f64 lanes: 4 of a plain array.
#[derive(Clone, Copy)]
pub struct PD4([f64; 4]);

impl Lanes for PD4 {
    type E = f64;
    const L: usize = 4;
    #[inline(always)]
    unsafe fn splat(v: f64) -> Self {
        PD4([v; 4])
    }
    #[inline(always)]
    unsafe fn load(p: *const f64) -> Self {
        PD4(unsafe { std::ptr::read_unaligned(p as *const [f64; 4]) })
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f64) {
        unsafe { std::ptr::write_unaligned(p as *mut [f64; 4], self.0) }
    }
    #[inline(always)]
    unsafe fn add(self, o: Self) -> Self {
        PD4(std::array::from_fn(|i| self.0[i] + o.0[i]))
    }
    #[inline(always)]
    unsafe fn fma(self, b: Self, c: Self) -> Self {
        PD4(std::array::from_fn(|i| self.0[i] * b.0[i] + c.0[i]))
    }
}
// As the portable f32 lanes.
impl Tile for PD4 {
    const MR: usize = 4;
}
impl Wide for P8 {
    type D = PD4;
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Lanes, Tile, Wide};
    use crate::cpu::simd::x86::{F16, F8};
    use crate::cpu::simd::Vf;
    use std::arch::x86_64::*;

    f32_lanes!(F8, 3);
    f32_lanes!(F16, 6);

    /// 4 f64 lanes, AVX2 + FMA.
    #[derive(Clone, Copy)]
    pub struct D4(__m256d);

    impl Lanes for D4 {
        type E = f64;
        const L: usize = 4;
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
        unsafe fn fma(self, b: Self, c: Self) -> Self {
            unsafe { D4(_mm256_fmadd_pd(self.0, b.0, c.0)) }
        }
    }
    // As the f32 lanes of AVX2: 2 * 3 * 2 + 2 + 1 = 15 of the 16 registers.
    impl Tile for D4 {
        const MR: usize = 3;
    }
    impl Wide for F8 {
        type D = D4;
    }

    /// 8 f64 lanes, AVX-512F.
    #[derive(Clone, Copy)]
    pub struct D8(__m512d);

    impl Lanes for D8 {
        type E = f64;
        const L: usize = 8;
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
        unsafe fn fma(self, b: Self, c: Self) -> Self {
            unsafe { D8(_mm512_fmadd_pd(self.0, b.0, c.0)) }
        }
    }
    // As the f32 lanes of AVX-512: 2 * 6 * 2 + 2 + 1 = 27 of the 32 registers.
    impl Tile for D8 {
        const MR: usize = 6;
    }
    impl Wide for F16 {
        type D = D8;
    }
}
