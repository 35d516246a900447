//! The vector abstraction `cpu` kernels are written in, public for kernel authors: f32 lanes
//! ([`Vf`]), i32 total-order key lanes ([`Vi`]), and the run-time choice of instruction set
//! ([`Isa`], [`with_isa!`](crate::with_isa)). Owns the three implementations (portable,
//! AVX2+FMA, AVX-512F) and their shared semantics; must not know any op, allocate, or start
//! threads (splitting work is [`super::par`]'s).
//!
//! A kernel is written once, generic over [`Vf`] (and `Vf::I` for keys), and instantiated by
//! [`with_isa!`](crate::with_isa) inside one `#[target_feature]` function per instruction set,
//! so the intrinsics inline into the caller's vector code. The instruction set is detected
//! once per process (no `-C target-cpu` needed); [`with_isa_override`] forces another one on
//! the calling thread (tests, benchmarks), and dispatch on the CPU backend honours it because
//! a kernel starts on the calling thread.
//!
//! ```
//! use op_runtime::cpu::simd::{map2, Isa, Vf};
//! use op_runtime::with_isa;
//!
//! /// `out[i] = a[i] * b[i] + 1` on every lane the CPU has.
//! fn mul_add_one(a: &[f32], b: &[f32], out: &mut [f32]) {
//!     with_isa!(Isa::current(), V, (a: &[f32], b: &[f32], out: &mut [f32]) -> (),
//!         map2::<V>(a, b, out, |x: V, y: V| unsafe { x.fma(y, V::splat(1.0)) }))
//! }
//!
//! let mut out = [0.0f32; 3];
//! mul_add_one(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], &mut out);
//! assert_eq!(out, [5.0, 11.0, 19.0]);
//! ```
//!
//! Semantics every implementation shares bit for bit: `add/sub/mul/div` are the IEEE
//! operations; `min(a, b) = a < b ? a : b` and `max(a, b) = a > b ? a : b` (the x86
//! `minps/maxps` rule: the second operand when either is NaN); the key lanes of [`Vi`] compare
//! as signed integers. Only [`Vf::fma`] differs: fused on the x86 paths, `a * b + c` rounded
//! twice on the portable path.
//!
//! Safety: the vector methods are `unsafe` because the x86 implementations need their target
//! feature, which [`with_isa!`](crate::with_isa) guarantees (it runs an instruction set only
//! where [`Isa::supported`] says so), and because the pointer methods read or write `L` lanes
//! that the caller must own.

// The safety contract of every vector method is the one above (the target feature and `L`
// valid lanes); it is stated once rather than on each of the ~40 methods.
#![allow(clippy::missing_safety_doc)]
// The portable transposes index rows and columns by position, like the x86 shuffles they mirror.
#![allow(clippy::needless_range_loop)]

use super::prefetch::prefetch_ahead;
use std::mem::MaybeUninit;

/// Which implementation runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Isa {
    /// Portable Rust on arrays (whatever the baseline target autovectorises to).
    Portable,
    /// AVX2 + FMA (8 f32 lanes).
    Avx2,
    /// AVX-512F (16 f32 lanes).
    Avx512,
}

impl Isa {
    /// The best implementation this CPU supports.
    pub fn detect() -> Isa {
        if Isa::Avx512.supported() {
            Isa::Avx512
        } else if Isa::Avx2.supported() {
            Isa::Avx2
        } else {
            Isa::Portable
        }
    }

    /// Every implementation this CPU can run, portable first (tests run them all).
    pub fn available() -> Vec<Isa> {
        [Isa::Portable, Isa::Avx2, Isa::Avx512].into_iter().filter(|i| i.supported()).collect()
    }

    /// The implementation kernels use on this thread: the override installed by
    /// [`with_isa_override`] if any, else [`Isa::detect`].
    pub fn current() -> Isa {
        OVERRIDE.with(|o| o.get()).unwrap_or_else(Isa::detect)
    }

    /// f32 lanes of this implementation (`Vf::L`).
    pub fn lanes(self) -> usize {
        match self {
            Isa::Avx512 => 16,
            _ => 8,
        }
    }

    /// Whether this CPU supports `self` (cheap: std caches the detection).
    #[inline]
    pub fn supported(self) -> bool {
        match self {
            Isa::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma"),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }
}

thread_local! {
    static OVERRIDE: std::cell::Cell<Option<Isa>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with every kernel started on this thread forced onto `isa` (tests and benchmarks
/// of the non-default paths; a kernel reads [`Isa::current`] once, on the thread that calls it,
/// and passes it to its parallel chunks). `None`, without running `f`, where the CPU lacks
/// `isa`.
pub fn with_isa_override<R>(isa: Isa, f: impl FnOnce() -> R) -> Option<R> {
    if !isa.supported() {
        return None;
    }
    struct Restore(Option<Isa>);
    impl Drop for Restore {
        fn drop(&mut self) {
            OVERRIDE.with(|o| o.set(self.0));
        }
    }
    let _restore = Restore(OVERRIDE.with(|o| o.replace(Some(isa))));
    Some(f())
}

/// The IEEE 754 total-order key of `v`: `a.total_cmp(&b) == key(a).cmp(&key(b))`. An
/// involution on bit patterns (`unkey(key(v))` has the bits of `v`), so a selection kernel can
/// order, pick and return keys and map them back without losing a NaN payload or a zero's sign.
#[inline(always)]
pub fn key(v: f32) -> i32 {
    let b = v.to_bits() as i32;
    b ^ (((b >> 31) as u32) >> 1) as i32
}

/// The inverse of [`key`].
#[inline(always)]
pub fn unkey(k: i32) -> f32 {
    f32::from_bits((k ^ (((k >> 31) as u32) >> 1) as i32) as u32)
}

/// Runs `$body` with the type alias `$V` bound to the [`Vf`] vector type of `$isa` (an
/// [`Isa`] value), expanded inside a function compiled with that instruction set's target
/// features, so the intrinsics inline everywhere below (closures written in `$body` and
/// `#[inline(always)]` functions it calls inherit them). `$body` may use only the variables
/// listed in `($($arg: $ty),*)`, and its value has type `$ret`. An instruction set the CPU
/// lacks runs the portable implementation, never the unsupported instructions.
///
/// Rule for callers: vector code must not run in a closure defined outside `$body` (it would
/// lack the target features, and every intrinsic would become a call). See the module
/// example in [`simd`](crate::cpu::simd).
///
/// A second form takes the enclosing function's type parameters that `$body` uses (inner
/// functions cannot name them otherwise): `with_isa!(isa, V, <E: Bound>, (x: &[E]) -> (), ...)`.
#[macro_export]
macro_rules! with_isa {
    ($isa:expr, $V:ident, <$($g:ident : $b:path),+>, ($($arg:ident : $ty:ty),*) -> $ret:ty, $body:expr) => {{
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f")]
        #[allow(unused_unsafe, clippy::too_many_arguments)]
        unsafe fn __avx512<$($g: $b),+>($($arg: $ty),*) -> $ret {
            #[allow(dead_code)]
            type $V = $crate::cpu::simd::x86::F16;
            $body
        }
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        #[allow(unused_unsafe, clippy::too_many_arguments)]
        unsafe fn __avx2<$($g: $b),+>($($arg: $ty),*) -> $ret {
            #[allow(dead_code)]
            type $V = $crate::cpu::simd::x86::F8;
            $body
        }
        #[allow(unused_unsafe, clippy::too_many_arguments)]
        fn __portable<$($g: $b),+>($($arg: $ty),*) -> $ret {
            #[allow(dead_code)]
            type $V = $crate::cpu::simd::P8;
            $body
        }
        match $isa {
            // SAFETY: the CPU supports the target feature the function is compiled with.
            #[cfg(target_arch = "x86_64")]
            $crate::cpu::simd::Isa::Avx512 if $crate::cpu::simd::Isa::Avx512.supported() => unsafe { __avx512::<$($g),+>($($arg),*) },
            #[cfg(target_arch = "x86_64")]
            $crate::cpu::simd::Isa::Avx2 if $crate::cpu::simd::Isa::Avx2.supported() => unsafe { __avx2::<$($g),+>($($arg),*) },
            _ => __portable::<$($g),+>($($arg),*),
        }
    }};
    ($isa:expr, $V:ident, ($($arg:ident : $ty:ty),*) -> $ret:ty, $body:expr) => {{
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f")]
        #[allow(unused_unsafe, clippy::too_many_arguments)]
        unsafe fn __avx512($($arg: $ty),*) -> $ret {
            #[allow(dead_code)]
            type $V = $crate::cpu::simd::x86::F16;
            $body
        }
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        #[allow(unused_unsafe, clippy::too_many_arguments)]
        unsafe fn __avx2($($arg: $ty),*) -> $ret {
            #[allow(dead_code)]
            type $V = $crate::cpu::simd::x86::F8;
            $body
        }
        #[allow(unused_unsafe, clippy::too_many_arguments)]
        fn __portable($($arg: $ty),*) -> $ret {
            #[allow(dead_code)]
            type $V = $crate::cpu::simd::P8;
            $body
        }
        match $isa {
            // SAFETY: the CPU supports the target feature the function is compiled with.
            #[cfg(target_arch = "x86_64")]
            $crate::cpu::simd::Isa::Avx512 if $crate::cpu::simd::Isa::Avx512.supported() => unsafe { __avx512($($arg),*) },
            #[cfg(target_arch = "x86_64")]
            $crate::cpu::simd::Isa::Avx2 if $crate::cpu::simd::Isa::Avx2.supported() => unsafe { __avx2($($arg),*) },
            _ => __portable($($arg),*),
        }
    }};
}

#[doc(inline)]
pub use crate::with_isa;

/// A vector of `L` f32 lanes. See the module doc for the shared semantics and for why the
/// methods are `unsafe`; pointer methods need `L` valid lanes at the pointer (unaligned is fine).
pub trait Vf: Copy {
    /// Lanes.
    const L: usize;
    /// Lane mask (the result of a comparison).
    type M: Copy;
    /// The i32 key vector of the same instruction set and width.
    type I: Vi;
    /// The f64 vector of the same instruction set (see [`simd64`](super::simd64)).
    type D: super::simd64::Vd;
    /// 16 f64 lanes (2 vectors on AVX-512, 4 on AVX2, an array otherwise): the unit of exact
    /// f64 accumulation of f32 terms, the same tree on every instruction set.
    type Row: Copy;
    /// Every lane `v`.
    unsafe fn splat(v: f32) -> Self;
    /// Every lane the f32 with bits `b`.
    #[inline(always)]
    unsafe fn splat_bits(b: u32) -> Self {
        unsafe { Self::splat(f32::from_bits(b)) }
    }
    /// Loads `L` lanes from `p`.
    unsafe fn load(p: *const f32) -> Self;
    /// Stores `L` lanes at `p`.
    unsafe fn store(self, p: *mut f32);
    /// `self + o` (IEEE).
    unsafe fn add(self, o: Self) -> Self;
    /// `self - o` (IEEE).
    unsafe fn sub(self, o: Self) -> Self;
    /// `self * o` (IEEE).
    unsafe fn mul(self, o: Self) -> Self;
    /// `self / o` (IEEE, correctly rounded).
    unsafe fn div(self, o: Self) -> Self;
    /// `sqrt(self)` (IEEE, correctly rounded).
    unsafe fn sqrt(self) -> Self;
    /// `self * b + c` (fused on x86, two roundings on the portable path).
    unsafe fn fma(self, b: Self, c: Self) -> Self;
    /// `1 / self` for normal `self` whose reciprocal is normal (`|self|` in `[2^-126, 2^126]`),
    /// within 1 ulp, not always correctly rounded: where the instruction set has a reciprocal
    /// estimate it is refined by one fused Newton step (a fraction of a division's cost);
    /// elsewhere it divides. Zeros, infinities and NaN are outside its contract: use `div`.
    #[inline(always)]
    unsafe fn recip_normal(self) -> Self {
        unsafe { Self::splat(1.0).div(self) }
    }
    /// `self / d` for `|d|` in `[2^-126, 2^126]`, finite `self` and a normal quotient (NaN in,
    /// NaN out), within 1 ulp, not always correctly rounded: where the instruction set has a reciprocal
    /// estimate, the quotient by the estimate refined by one fused Newton step on its
    /// residual; elsewhere a division.
    #[inline(always)]
    unsafe fn div_normal(self, d: Self) -> Self {
        unsafe { self.div(d) }
    }
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
    /// `self` with the sign bit of `x` or-ed in (`copysign` for a non-negative `self`).
    #[inline(always)]
    unsafe fn or_sign_of(self, x: Self) -> Self {
        unsafe { self.or(x.and(Self::splat_bits(0x8000_0000))) }
    }
    /// `2^n` for integral `n` in `[-126, 127]`.
    unsafe fn pow2(n: Self) -> Self;
    /// `self * 2^n` for integral `n` in `[-150, 130]` and `|self|` in `[0.5, 2]`, rounded once
    /// (to a subnormal or to infinity where due). Default: two exact power-of-two factors.
    #[inline(always)]
    unsafe fn scale2(self, n: Self) -> Self {
        unsafe {
            let magic = Self::splat(12_582_912.0);
            let n1 = n.mul(Self::splat(0.5)).add(magic).sub(magic);
            let n2 = n.sub(n1);
            self.mul(Self::pow2(n1)).mul(Self::pow2(n2))
        }
    }
    /// For positive normal `x`: `(e, m)` with `x = m * 2^e`, `m` in `[0.5, 1)`, `e` an
    /// integral float (the bits: `e = biased - 126`, `m = mantissa | 0x3f000000`).
    unsafe fn frexp(self) -> (Self, Self);
    /// For positive normal `x`: `(e, f)` with `x = 2^e (1 + f)`, `1 + f` in
    /// `[sqrt(1/2), sqrt(2))` (split at the f32 nearest `sqrt(1/2)`), `e` an integral float and
    /// `f` exact: [`frexp`](Vf::frexp) with the mantissas below `sqrt(1/2)` doubled.
    #[inline(always)]
    unsafe fn frexp_sqrt2(self) -> (Self, Self) {
        unsafe {
            let (e, m) = self.frexp();
            let small = m.lt(Self::splat(std::f32::consts::FRAC_1_SQRT_2));
            let e = Self::select(small, e.sub(Self::splat(1.0)), e);
            (e, Self::select(small, m.add(m), m).sub(Self::splat(1.0)))
        }
    }
    /// Whether every lane lies in `[lo, hi]` (false where a lane is NaN).
    unsafe fn all_within(self, lo: Self, hi: Self) -> bool;
    /// `L x L` transpose: `dst[c * L + r] = src[r][c]` (`src[r]` points at `L` floats; only
    /// the first `L` pointers are read).
    unsafe fn transpose_in(src: &[*const f32; 16], dst: *mut f32);
    /// `L x L` transpose: `dst[r][c] = src[c * L + r]` (only the first `L` pointers are used).
    unsafe fn transpose_out(src: *const f32, dst: &[*mut f32; 16]);
    /// Loads 16 f32 at `p` and widens them (exactly) to f64.
    unsafe fn row_load(p: *const f32) -> Self::Row;
    /// Loads 16 f64 at `p`.
    unsafe fn row_load_f64(p: *const f64) -> Self::Row;
    /// `a + b` in f64, lane by lane.
    unsafe fn row_add(a: Self::Row, b: Self::Row) -> Self::Row;
    /// `a - b` in f64, lane by lane.
    unsafe fn row_sub(a: Self::Row, b: Self::Row) -> Self::Row;
    /// `a * b` in f64, lane by lane.
    unsafe fn row_mul(a: Self::Row, b: Self::Row) -> Self::Row;
    /// Stores the 16 f64 lanes at `p`.
    unsafe fn row_store(r: Self::Row, p: *mut f64);
}

/// A vector of `L` i32 lanes, meant for total-order keys ([`key`]): selection kernels order
/// keys with `min`/`max`, which is exactly `f32::total_cmp` on the floats they stand for. See
/// the module doc for why the methods are `unsafe`; pointer methods need `L` valid lanes.
pub trait Vi: Copy {
    /// Lanes.
    const L: usize;
    /// Loads `L` lanes from `p`.
    unsafe fn load(p: *const i32) -> Self;
    /// Stores `L` lanes at `p`.
    unsafe fn store(self, p: *mut i32);
    /// Every lane `v`.
    unsafe fn splat(v: i32) -> Self;
    /// Signed minimum.
    unsafe fn min(self, o: Self) -> Self;
    /// Signed maximum.
    unsafe fn max(self, o: Self) -> Self;
    /// Lane-wise `self < t ? a : b`.
    unsafe fn sel_lt(self, t: Self, a: Self, b: Self) -> Self;
    /// Lane-wise [`key`] of the f32 bits (also its inverse, [`unkey`]).
    unsafe fn key(self) -> Self;
    /// Loads `L` rows of `L` elements (`src[r] .. src[r] + L`), applies [`key`] and stores
    /// the transpose: `dst[c * L + r] = key(src[r][c])` (only the first `L` pointers are read).
    unsafe fn transpose_key(src: &[*const i32; 16], dst: *mut i32);
    /// The inverse of `transpose_key`: `dst[r][c] = unkey(src[c * L + r])` for `r, c < L`.
    unsafe fn transpose_unkey(src: *const i32, dst: &[*mut i32; 16]);
}

/// Portable f32 implementation: 8 lanes of a plain array.
#[derive(Clone, Copy)]
pub struct P8(pub [f32; 8]);

macro_rules! p8_map {
    ($a:expr, |$x:ident| $e:expr) => {
        P8(std::array::from_fn(|i| {
            let $x = $a.0[i];
            $e
        }))
    };
    ($a:expr, $b:expr, |$x:ident, $y:ident| $e:expr) => {
        P8(std::array::from_fn(|i| {
            let ($x, $y) = ($a.0[i], $b.0[i]);
            $e
        }))
    };
}

impl Vf for P8 {
    const L: usize = 8;
    type M = [bool; 8];
    type I = P8i;
    type D = super::simd64::P8d;
    type Row = [f64; 16];
    #[inline(always)]
    unsafe fn row_load(p: *const f32) -> [f64; 16] {
        let v = unsafe { std::ptr::read_unaligned(p as *const [f32; 16]) };
        std::array::from_fn(|i| v[i] as f64)
    }
    #[inline(always)]
    unsafe fn row_load_f64(p: *const f64) -> [f64; 16] {
        unsafe { std::ptr::read_unaligned(p as *const [f64; 16]) }
    }
    #[inline(always)]
    unsafe fn row_add(a: [f64; 16], b: [f64; 16]) -> [f64; 16] {
        std::array::from_fn(|i| a[i] + b[i])
    }
    #[inline(always)]
    unsafe fn row_sub(a: [f64; 16], b: [f64; 16]) -> [f64; 16] {
        std::array::from_fn(|i| a[i] - b[i])
    }
    #[inline(always)]
    unsafe fn row_mul(a: [f64; 16], b: [f64; 16]) -> [f64; 16] {
        std::array::from_fn(|i| a[i] * b[i])
    }
    #[inline(always)]
    unsafe fn row_store(r: [f64; 16], p: *mut f64) {
        unsafe { std::ptr::write_unaligned(p as *mut [f64; 16], r) }
    }
    #[inline(always)]
    unsafe fn splat(v: f32) -> Self {
        P8([v; 8])
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        P8(unsafe { std::ptr::read_unaligned(p as *const [f32; 8]) })
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        unsafe { std::ptr::write_unaligned(p as *mut [f32; 8], self.0) }
    }
    #[inline(always)]
    unsafe fn add(self, o: Self) -> Self {
        p8_map!(self, o, |a, b| a + b)
    }
    #[inline(always)]
    unsafe fn sub(self, o: Self) -> Self {
        p8_map!(self, o, |a, b| a - b)
    }
    #[inline(always)]
    unsafe fn mul(self, o: Self) -> Self {
        p8_map!(self, o, |a, b| a * b)
    }
    #[inline(always)]
    unsafe fn div(self, o: Self) -> Self {
        p8_map!(self, o, |a, b| a / b)
    }
    #[inline(always)]
    unsafe fn sqrt(self) -> Self {
        p8_map!(self, |a| a.sqrt())
    }
    #[inline(always)]
    unsafe fn fma(self, b: Self, c: Self) -> Self {
        P8(std::array::from_fn(|i| self.0[i] * b.0[i] + c.0[i]))
    }
    #[inline(always)]
    unsafe fn min(self, o: Self) -> Self {
        p8_map!(self, o, |a, b| if a < b { a } else { b })
    }
    #[inline(always)]
    unsafe fn max(self, o: Self) -> Self {
        p8_map!(self, o, |a, b| if a > b { a } else { b })
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
        P8(std::array::from_fn(|i| if m[i] { a.0[i] } else { b.0[i] }))
    }
    #[inline(always)]
    unsafe fn and(self, o: Self) -> Self {
        p8_map!(self, o, |a, b| f32::from_bits(a.to_bits() & b.to_bits()))
    }
    #[inline(always)]
    unsafe fn or(self, o: Self) -> Self {
        p8_map!(self, o, |a, b| f32::from_bits(a.to_bits() | b.to_bits()))
    }
    #[inline(always)]
    unsafe fn xor(self, o: Self) -> Self {
        p8_map!(self, o, |a, b| f32::from_bits(a.to_bits() ^ b.to_bits()))
    }
    #[inline(always)]
    unsafe fn pow2(n: Self) -> Self {
        // (n + 1.5 * 2^23) has the integer n in its low mantissa bits (no saturating cast, so
        // this vectorises on any SIMD target).
        p8_map!(n, |a| f32::from_bits(((a + 12_582_912.0).to_bits().wrapping_sub(0x4b40_0000).wrapping_add(127)) << 23))
    }
    #[inline(always)]
    unsafe fn transpose_in(src: &[*const f32; 16], dst: *mut f32) {
        for r in 0..8 {
            for c in 0..8 {
                unsafe { *dst.add(c * 8 + r) = *src[r].add(c) };
            }
        }
    }
    #[inline(always)]
    unsafe fn transpose_out(src: *const f32, dst: &[*mut f32; 16]) {
        for r in 0..8 {
            for c in 0..8 {
                unsafe { *dst[r].add(c) = *src.add(c * 8 + r) };
            }
        }
    }
    #[inline(always)]
    unsafe fn frexp(self) -> (Self, Self) {
        let e = p8_map!(self, |a| ((a.to_bits() >> 23) as i32 - 126) as f32);
        let m = p8_map!(self, |a| f32::from_bits((a.to_bits() & 0x007f_ffff) | 0x3f00_0000));
        (e, m)
    }
    #[inline(always)]
    unsafe fn all_within(self, lo: Self, hi: Self) -> bool {
        (0..8).all(|i| self.0[i] >= lo.0[i] && self.0[i] <= hi.0[i])
    }
}

/// Portable i32 implementation: 8 lanes of a plain array (autovectorised where the target
/// allows).
#[derive(Clone, Copy)]
pub struct P8i(pub [i32; 8]);

impl Vi for P8i {
    const L: usize = 8;
    #[inline(always)]
    unsafe fn load(p: *const i32) -> Self {
        P8i(unsafe { std::ptr::read_unaligned(p as *const [i32; 8]) })
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut i32) {
        unsafe { std::ptr::write_unaligned(p as *mut [i32; 8], self.0) }
    }
    #[inline(always)]
    unsafe fn splat(v: i32) -> Self {
        P8i([v; 8])
    }
    #[inline(always)]
    unsafe fn min(self, o: Self) -> Self {
        P8i(std::array::from_fn(|i| self.0[i].min(o.0[i])))
    }
    #[inline(always)]
    unsafe fn max(self, o: Self) -> Self {
        P8i(std::array::from_fn(|i| self.0[i].max(o.0[i])))
    }
    #[inline(always)]
    unsafe fn sel_lt(self, t: Self, a: Self, b: Self) -> Self {
        P8i(std::array::from_fn(|i| if self.0[i] < t.0[i] { a.0[i] } else { b.0[i] }))
    }
    #[inline(always)]
    unsafe fn key(self) -> Self {
        P8i(std::array::from_fn(|i| {
            let b = self.0[i];
            b ^ (((b >> 31) as u32) >> 1) as i32
        }))
    }
    #[inline(always)]
    unsafe fn transpose_key(src: &[*const i32; 16], dst: *mut i32) {
        for r in 0..8 {
            for c in 0..8 {
                unsafe {
                    let b = *src[r].add(c);
                    *dst.add(c * 8 + r) = b ^ (((b >> 31) as u32) >> 1) as i32;
                }
            }
        }
    }
    #[inline(always)]
    unsafe fn transpose_unkey(src: *const i32, dst: &[*mut i32; 16]) {
        for r in 0..8 {
            for c in 0..8 {
                unsafe {
                    let b = *src.add(c * 8 + r);
                    *dst[r].add(c) = b ^ (((b >> 31) as u32) >> 1) as i32;
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub mod x86 {
    //! The x86 implementations: AVX2+FMA ([`F8`], [`I8`]) and AVX-512F ([`F16`], [`I16`]).
    use super::{Vf, Vi};
    use std::arch::x86_64::*;

    /// 8 f32 lanes, AVX2 + FMA.
    #[derive(Clone, Copy)]
    pub struct F8(pub __m256);

    impl Vf for F8 {
        const L: usize = 8;
        type M = __m256;
        type I = I8;
        type D = super::super::simd64::x86::D4;
        type Row = [__m256d; 4];
        #[inline(always)]
        unsafe fn row_load(p: *const f32) -> [__m256d; 4] {
            unsafe {
                let lo = _mm256_loadu_ps(p);
                let hi = _mm256_loadu_ps(p.add(8));
                [
                    _mm256_cvtps_pd(_mm256_castps256_ps128(lo)),
                    _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(lo)),
                    _mm256_cvtps_pd(_mm256_castps256_ps128(hi)),
                    _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(hi)),
                ]
            }
        }
        #[inline(always)]
        unsafe fn row_load_f64(p: *const f64) -> [__m256d; 4] {
            unsafe { [_mm256_loadu_pd(p), _mm256_loadu_pd(p.add(4)), _mm256_loadu_pd(p.add(8)), _mm256_loadu_pd(p.add(12))] }
        }
        #[inline(always)]
        unsafe fn row_add(a: [__m256d; 4], b: [__m256d; 4]) -> [__m256d; 4] {
            unsafe { [_mm256_add_pd(a[0], b[0]), _mm256_add_pd(a[1], b[1]), _mm256_add_pd(a[2], b[2]), _mm256_add_pd(a[3], b[3])] }
        }
        #[inline(always)]
        unsafe fn row_sub(a: [__m256d; 4], b: [__m256d; 4]) -> [__m256d; 4] {
            unsafe { [_mm256_sub_pd(a[0], b[0]), _mm256_sub_pd(a[1], b[1]), _mm256_sub_pd(a[2], b[2]), _mm256_sub_pd(a[3], b[3])] }
        }
        #[inline(always)]
        unsafe fn row_mul(a: [__m256d; 4], b: [__m256d; 4]) -> [__m256d; 4] {
            unsafe { [_mm256_mul_pd(a[0], b[0]), _mm256_mul_pd(a[1], b[1]), _mm256_mul_pd(a[2], b[2]), _mm256_mul_pd(a[3], b[3])] }
        }
        #[inline(always)]
        unsafe fn row_store(r: [__m256d; 4], p: *mut f64) {
            unsafe {
                for (i, v) in r.iter().enumerate() {
                    _mm256_storeu_pd(p.add(4 * i), *v);
                }
            }
        }
        #[inline(always)]
        unsafe fn splat(v: f32) -> Self {
            unsafe { F8(_mm256_set1_ps(v)) }
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            unsafe { F8(_mm256_loadu_ps(p)) }
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut f32) {
            unsafe { _mm256_storeu_ps(p, self.0) }
        }
        #[inline(always)]
        unsafe fn add(self, o: Self) -> Self {
            unsafe { F8(_mm256_add_ps(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn sub(self, o: Self) -> Self {
            unsafe { F8(_mm256_sub_ps(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn mul(self, o: Self) -> Self {
            unsafe { F8(_mm256_mul_ps(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn div(self, o: Self) -> Self {
            unsafe { F8(_mm256_div_ps(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn sqrt(self) -> Self {
            unsafe { F8(_mm256_sqrt_ps(self.0)) }
        }
        #[inline(always)]
        unsafe fn fma(self, b: Self, c: Self) -> Self {
            unsafe { F8(_mm256_fmadd_ps(self.0, b.0, c.0)) }
        }
        #[inline(always)]
        unsafe fn min(self, o: Self) -> Self {
            unsafe { F8(_mm256_min_ps(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn max(self, o: Self) -> Self {
            unsafe { F8(_mm256_max_ps(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn lt(self, o: Self) -> __m256 {
            unsafe { _mm256_cmp_ps::<_CMP_LT_OQ>(self.0, o.0) }
        }
        #[inline(always)]
        unsafe fn gt(self, o: Self) -> __m256 {
            unsafe { _mm256_cmp_ps::<_CMP_GT_OQ>(self.0, o.0) }
        }
        #[inline(always)]
        unsafe fn eq(self, o: Self) -> __m256 {
            unsafe { _mm256_cmp_ps::<_CMP_EQ_OQ>(self.0, o.0) }
        }
        #[inline(always)]
        unsafe fn is_nan(self) -> __m256 {
            unsafe { _mm256_cmp_ps::<_CMP_UNORD_Q>(self.0, self.0) }
        }
        #[inline(always)]
        unsafe fn select(m: __m256, a: Self, b: Self) -> Self {
            unsafe { F8(_mm256_blendv_ps(b.0, a.0, m)) }
        }
        #[inline(always)]
        unsafe fn and(self, o: Self) -> Self {
            unsafe { F8(_mm256_and_ps(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn or(self, o: Self) -> Self {
            unsafe { F8(_mm256_or_ps(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn xor(self, o: Self) -> Self {
            unsafe { F8(_mm256_xor_ps(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn pow2(n: Self) -> Self {
            unsafe {
                let i = _mm256_add_epi32(_mm256_cvtps_epi32(n.0), _mm256_set1_epi32(127));
                F8(_mm256_castsi256_ps(_mm256_slli_epi32::<23>(i)))
            }
        }
        #[inline(always)]
        unsafe fn transpose_in(src: &[*const f32; 16], dst: *mut f32) {
            unsafe {
                let mut r = [_mm256_setzero_si256(); 8];
                for i in 0..8 {
                    r[i] = _mm256_loadu_si256(src[i] as *const __m256i);
                }
                let t = tr8(r);
                for (c, v) in t.iter().enumerate() {
                    _mm256_storeu_si256(dst.add(c * 8) as *mut __m256i, *v);
                }
            }
        }
        #[inline(always)]
        unsafe fn transpose_out(src: *const f32, dst: &[*mut f32; 16]) {
            unsafe {
                let mut r = [_mm256_setzero_si256(); 8];
                for i in 0..8 {
                    r[i] = _mm256_loadu_si256(src.add(i * 8) as *const __m256i);
                }
                let t = tr8(r);
                for (c, v) in t.iter().enumerate() {
                    _mm256_storeu_si256(dst[c] as *mut __m256i, *v);
                }
            }
        }
        #[inline(always)]
        unsafe fn frexp(self) -> (Self, Self) {
            unsafe {
                let b = _mm256_castps_si256(self.0);
                let e = _mm256_sub_epi32(_mm256_srli_epi32::<23>(b), _mm256_set1_epi32(126));
                let m = _mm256_or_si256(_mm256_and_si256(b, _mm256_set1_epi32(0x007f_ffff)), _mm256_set1_epi32(0x3f00_0000));
                (F8(_mm256_cvtepi32_ps(e)), F8(_mm256_castsi256_ps(m)))
            }
        }
        #[inline(always)]
        unsafe fn frexp_sqrt2(self) -> (Self, Self) {
            unsafe {
                // x - sqrt(1/2) in the bits: its exponent field is e (borrowing where the
                // mantissa is below sqrt(1/2)'s), its mantissa field 1 + f - sqrt(1/2).
                let half = _mm256_set1_epi32(0x3f35_04f3);
                let ix = _mm256_sub_epi32(_mm256_castps_si256(self.0), half);
                let e = _mm256_cvtepi32_ps(_mm256_srai_epi32::<23>(ix));
                let m = _mm256_add_epi32(_mm256_and_si256(ix, _mm256_set1_epi32(0x007f_ffff)), half);
                (F8(e), F8(_mm256_sub_ps(_mm256_castsi256_ps(m), _mm256_set1_ps(1.0))))
            }
        }
        #[inline(always)]
        unsafe fn all_within(self, lo: Self, hi: Self) -> bool {
            unsafe {
                let m = _mm256_and_ps(_mm256_cmp_ps::<_CMP_GE_OQ>(self.0, lo.0), _mm256_cmp_ps::<_CMP_LE_OQ>(self.0, hi.0));
                _mm256_movemask_ps(m) == 0xff
            }
        }
    }

    /// 16 f32 lanes, AVX-512F.
    #[derive(Clone, Copy)]
    pub struct F16(pub __m512);

    impl Vf for F16 {
        const L: usize = 16;
        type M = __mmask16;
        type I = I16;
        type D = super::super::simd64::x86::D8;
        type Row = [__m512d; 2];
        #[inline(always)]
        unsafe fn row_load(p: *const f32) -> [__m512d; 2] {
            unsafe { [_mm512_cvtps_pd(_mm256_loadu_ps(p)), _mm512_cvtps_pd(_mm256_loadu_ps(p.add(8)))] }
        }
        #[inline(always)]
        unsafe fn row_load_f64(p: *const f64) -> [__m512d; 2] {
            unsafe { [_mm512_loadu_pd(p), _mm512_loadu_pd(p.add(8))] }
        }
        #[inline(always)]
        unsafe fn row_add(a: [__m512d; 2], b: [__m512d; 2]) -> [__m512d; 2] {
            unsafe { [_mm512_add_pd(a[0], b[0]), _mm512_add_pd(a[1], b[1])] }
        }
        #[inline(always)]
        unsafe fn row_sub(a: [__m512d; 2], b: [__m512d; 2]) -> [__m512d; 2] {
            unsafe { [_mm512_sub_pd(a[0], b[0]), _mm512_sub_pd(a[1], b[1])] }
        }
        #[inline(always)]
        unsafe fn row_mul(a: [__m512d; 2], b: [__m512d; 2]) -> [__m512d; 2] {
            unsafe { [_mm512_mul_pd(a[0], b[0]), _mm512_mul_pd(a[1], b[1])] }
        }
        #[inline(always)]
        unsafe fn row_store(r: [__m512d; 2], p: *mut f64) {
            unsafe {
                _mm512_storeu_pd(p, r[0]);
                _mm512_storeu_pd(p.add(8), r[1]);
            }
        }
        #[inline(always)]
        unsafe fn splat(v: f32) -> Self {
            unsafe { F16(_mm512_set1_ps(v)) }
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            unsafe { F16(_mm512_loadu_ps(p)) }
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut f32) {
            unsafe { _mm512_storeu_ps(p, self.0) }
        }
        #[inline(always)]
        unsafe fn add(self, o: Self) -> Self {
            unsafe { F16(_mm512_add_ps(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn sub(self, o: Self) -> Self {
            unsafe { F16(_mm512_sub_ps(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn mul(self, o: Self) -> Self {
            unsafe { F16(_mm512_mul_ps(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn div(self, o: Self) -> Self {
            unsafe { F16(_mm512_div_ps(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn sqrt(self) -> Self {
            unsafe { F16(_mm512_sqrt_ps(self.0)) }
        }
        #[inline(always)]
        unsafe fn recip_normal(self) -> Self {
            unsafe {
                // The estimate is within 2^-14; one Newton step `r + r (1 - x r)`, the residual
                // fused, leaves about 2^-28 before the final rounding.
                let r = _mm512_rcp14_ps(self.0);
                let e = _mm512_fnmadd_ps(self.0, r, _mm512_set1_ps(1.0));
                F16(_mm512_fmadd_ps(r, e, r))
            }
        }
        #[inline(always)]
        unsafe fn div_normal(self, d: Self) -> Self {
            unsafe {
                // q0 = a r within about 2^-14; q0 + r (a - q0 d), the residual fused, within
                // about 2^-28 before the final rounding.
                let r = _mm512_rcp14_ps(d.0);
                let q = _mm512_mul_ps(self.0, r);
                let e = _mm512_fnmadd_ps(q, d.0, self.0);
                F16(_mm512_fmadd_ps(r, e, q))
            }
        }
        #[inline(always)]
        unsafe fn fma(self, b: Self, c: Self) -> Self {
            unsafe { F16(_mm512_fmadd_ps(self.0, b.0, c.0)) }
        }
        #[inline(always)]
        unsafe fn min(self, o: Self) -> Self {
            unsafe { F16(_mm512_min_ps(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn max(self, o: Self) -> Self {
            unsafe { F16(_mm512_max_ps(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn lt(self, o: Self) -> __mmask16 {
            unsafe { _mm512_cmp_ps_mask::<_CMP_LT_OQ>(self.0, o.0) }
        }
        #[inline(always)]
        unsafe fn gt(self, o: Self) -> __mmask16 {
            unsafe { _mm512_cmp_ps_mask::<_CMP_GT_OQ>(self.0, o.0) }
        }
        #[inline(always)]
        unsafe fn eq(self, o: Self) -> __mmask16 {
            unsafe { _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(self.0, o.0) }
        }
        #[inline(always)]
        unsafe fn is_nan(self) -> __mmask16 {
            unsafe { _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(self.0, self.0) }
        }
        #[inline(always)]
        unsafe fn select(m: __mmask16, a: Self, b: Self) -> Self {
            unsafe { F16(_mm512_mask_blend_ps(m, b.0, a.0)) }
        }
        #[inline(always)]
        unsafe fn and(self, o: Self) -> Self {
            unsafe { F16(_mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(self.0), _mm512_castps_si512(o.0)))) }
        }
        #[inline(always)]
        unsafe fn or(self, o: Self) -> Self {
            unsafe { F16(_mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(self.0), _mm512_castps_si512(o.0)))) }
        }
        #[inline(always)]
        unsafe fn xor(self, o: Self) -> Self {
            unsafe { F16(_mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(self.0), _mm512_castps_si512(o.0)))) }
        }
        #[inline(always)]
        unsafe fn or_sign_of(self, x: Self) -> Self {
            unsafe {
                // One ternary-logic instruction: a | (b & c), truth table 0xf8.
                let (a, b) = (_mm512_castps_si512(self.0), _mm512_castps_si512(x.0));
                F16(_mm512_castsi512_ps(_mm512_ternarylogic_epi32::<0xf8>(a, b, _mm512_set1_epi32(i32::MIN))))
            }
        }
        #[inline(always)]
        unsafe fn pow2(n: Self) -> Self {
            // One instruction: 1 * 2^n, exact for integral n in [-126, 127].
            unsafe { F16(_mm512_scalef_ps(_mm512_set1_ps(1.0), n.0)) }
        }
        #[inline(always)]
        unsafe fn scale2(self, n: Self) -> Self {
            unsafe { F16(_mm512_scalef_ps(self.0, n.0)) }
        }
        #[inline(always)]
        unsafe fn transpose_in(src: &[*const f32; 16], dst: *mut f32) {
            unsafe {
                let mut r = [_mm512_setzero_si512(); 16];
                for i in 0..16 {
                    r[i] = _mm512_loadu_si512(src[i] as *const _);
                }
                let t = tr16(r);
                for (c, v) in t.iter().enumerate() {
                    _mm512_storeu_si512(dst.add(c * 16) as *mut _, *v);
                }
            }
        }
        #[inline(always)]
        unsafe fn transpose_out(src: *const f32, dst: &[*mut f32; 16]) {
            unsafe {
                let mut r = [_mm512_setzero_si512(); 16];
                for i in 0..16 {
                    r[i] = _mm512_loadu_si512(src.add(i * 16) as *const _);
                }
                let t = tr16(r);
                for (c, v) in t.iter().enumerate() {
                    _mm512_storeu_si512(dst[c] as *mut _, *v);
                }
            }
        }
        #[inline(always)]
        unsafe fn frexp(self) -> (Self, Self) {
            unsafe {
                let b = _mm512_castps_si512(self.0);
                let e = _mm512_sub_epi32(_mm512_srli_epi32::<23>(b), _mm512_set1_epi32(126));
                let m = _mm512_or_si512(_mm512_and_si512(b, _mm512_set1_epi32(0x007f_ffff)), _mm512_set1_epi32(0x3f00_0000));
                (F16(_mm512_cvtepi32_ps(e)), F16(_mm512_castsi512_ps(m)))
            }
        }
        #[inline(always)]
        unsafe fn frexp_sqrt2(self) -> (Self, Self) {
            unsafe {
                // As on AVX2: x - sqrt(1/2) in the bits.
                let half = _mm512_set1_epi32(0x3f35_04f3);
                let ix = _mm512_sub_epi32(_mm512_castps_si512(self.0), half);
                let e = _mm512_cvtepi32_ps(_mm512_srai_epi32::<23>(ix));
                let m = _mm512_add_epi32(_mm512_and_si512(ix, _mm512_set1_epi32(0x007f_ffff)), half);
                (F16(e), F16(_mm512_sub_ps(_mm512_castsi512_ps(m), _mm512_set1_ps(1.0))))
            }
        }
        #[inline(always)]
        unsafe fn all_within(self, lo: Self, hi: Self) -> bool {
            unsafe {
                let ge = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(self.0, lo.0);
                _mm512_mask_cmp_ps_mask::<_CMP_LE_OQ>(ge, self.0, hi.0) == 0xffff
            }
        }
    }

    #[derive(Clone, Copy)]
    /// 8 i32 lanes, AVX2.
    pub struct I8(pub __m256i);

    #[inline(always)]
    unsafe fn key256(b: __m256i) -> __m256i {
        unsafe { _mm256_xor_si256(b, _mm256_srli_epi32(_mm256_srai_epi32(b, 31), 1)) }
    }

    /// 8x8 transpose of i32 lanes (unpack and 128-bit permutes).
    #[inline(always)]
    unsafe fn tr8(r: [__m256i; 8]) -> [__m256i; 8] {
        unsafe {
            let t0 = _mm256_unpacklo_epi32(r[0], r[1]);
            let t1 = _mm256_unpackhi_epi32(r[0], r[1]);
            let t2 = _mm256_unpacklo_epi32(r[2], r[3]);
            let t3 = _mm256_unpackhi_epi32(r[2], r[3]);
            let t4 = _mm256_unpacklo_epi32(r[4], r[5]);
            let t5 = _mm256_unpackhi_epi32(r[4], r[5]);
            let t6 = _mm256_unpacklo_epi32(r[6], r[7]);
            let t7 = _mm256_unpackhi_epi32(r[6], r[7]);
            let u0 = _mm256_unpacklo_epi64(t0, t2);
            let u1 = _mm256_unpackhi_epi64(t0, t2);
            let u2 = _mm256_unpacklo_epi64(t1, t3);
            let u3 = _mm256_unpackhi_epi64(t1, t3);
            let u4 = _mm256_unpacklo_epi64(t4, t6);
            let u5 = _mm256_unpackhi_epi64(t4, t6);
            let u6 = _mm256_unpacklo_epi64(t5, t7);
            let u7 = _mm256_unpackhi_epi64(t5, t7);
            [
                _mm256_permute2x128_si256(u0, u4, 0x20),
                _mm256_permute2x128_si256(u1, u5, 0x20),
                _mm256_permute2x128_si256(u2, u6, 0x20),
                _mm256_permute2x128_si256(u3, u7, 0x20),
                _mm256_permute2x128_si256(u0, u4, 0x31),
                _mm256_permute2x128_si256(u1, u5, 0x31),
                _mm256_permute2x128_si256(u2, u6, 0x31),
                _mm256_permute2x128_si256(u3, u7, 0x31),
            ]
        }
    }

    impl Vi for I8 {
        const L: usize = 8;
        #[inline(always)]
        unsafe fn load(p: *const i32) -> Self {
            unsafe { I8(_mm256_loadu_si256(p as *const __m256i)) }
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut i32) {
            unsafe { _mm256_storeu_si256(p as *mut __m256i, self.0) }
        }
        #[inline(always)]
        unsafe fn splat(v: i32) -> Self {
            unsafe { I8(_mm256_set1_epi32(v)) }
        }
        #[inline(always)]
        unsafe fn min(self, o: Self) -> Self {
            unsafe { I8(_mm256_min_epi32(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn max(self, o: Self) -> Self {
            unsafe { I8(_mm256_max_epi32(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn sel_lt(self, t: Self, a: Self, b: Self) -> Self {
            unsafe {
                let m = _mm256_cmpgt_epi32(t.0, self.0);
                I8(_mm256_blendv_epi8(b.0, a.0, m))
            }
        }
        #[inline(always)]
        unsafe fn key(self) -> Self {
            unsafe { I8(key256(self.0)) }
        }
        #[inline(always)]
        unsafe fn transpose_key(src: &[*const i32; 16], dst: *mut i32) {
            unsafe {
                let mut r = [_mm256_setzero_si256(); 8];
                for i in 0..8 {
                    r[i] = _mm256_loadu_si256(src[i] as *const __m256i);
                }
                let t = tr8(r);
                for (c, v) in t.iter().enumerate() {
                    _mm256_storeu_si256(dst.add(c * 8) as *mut __m256i, key256(*v));
                }
            }
        }
        #[inline(always)]
        unsafe fn transpose_unkey(src: *const i32, dst: &[*mut i32; 16]) {
            unsafe {
                let mut r = [_mm256_setzero_si256(); 8];
                for i in 0..8 {
                    r[i] = _mm256_loadu_si256(src.add(i * 8) as *const __m256i);
                }
                let t = tr8(r);
                for (c, v) in t.iter().enumerate() {
                    _mm256_storeu_si256(dst[c] as *mut __m256i, key256(*v));
                }
            }
        }
    }

    #[derive(Clone, Copy)]
    /// 16 i32 lanes, AVX-512F.
    pub struct I16(pub __m512i);

    #[inline(always)]
    unsafe fn key512(b: __m512i) -> __m512i {
        unsafe { _mm512_xor_si512(b, _mm512_srli_epi32(_mm512_srai_epi32(b, 31), 1)) }
    }

    const fn idx(s: usize, hi: bool) -> [i32; 16] {
        let mut v = [0i32; 16];
        let mut j = 0;
        while j < 16 {
            v[j] = if j & s != 0 {
                if hi {
                    (16 + j) as i32
                } else {
                    (16 + j - s) as i32
                }
            } else if hi {
                (j + s) as i32
            } else {
                j as i32
            };
            j += 1;
        }
        v
    }
    const IDX: [[i32; 16]; 8] =
        [idx(8, false), idx(8, true), idx(4, false), idx(4, true), idx(2, false), idx(2, true), idx(1, false), idx(1, true)];

    /// One butterfly round of the 16x16 transpose: rows `i` and `i + s` (bit `s` of `i`
    /// clear) exchange their `s`-blocks.
    #[inline(always)]
    unsafe fn round<const S: usize, const R: usize>(r: &mut [__m512i; 16]) {
        unsafe {
            let ilo = _mm512_loadu_si512(IDX[2 * R].as_ptr() as *const _);
            let ihi = _mm512_loadu_si512(IDX[2 * R + 1].as_ptr() as *const _);
            for i in 0..16 {
                if i & S == 0 {
                    let a = r[i];
                    let b = r[i + S];
                    r[i] = _mm512_permutex2var_epi32(a, ilo, b);
                    r[i + S] = _mm512_permutex2var_epi32(a, ihi, b);
                }
            }
        }
    }

    /// 16x16 transpose in 4 butterfly rounds of two-source permutes (64 permutes).
    #[inline(always)]
    unsafe fn tr16(mut r: [__m512i; 16]) -> [__m512i; 16] {
        unsafe {
            round::<8, 0>(&mut r);
            round::<4, 1>(&mut r);
            round::<2, 2>(&mut r);
            round::<1, 3>(&mut r);
            r
        }
    }

    impl Vi for I16 {
        const L: usize = 16;
        #[inline(always)]
        unsafe fn load(p: *const i32) -> Self {
            unsafe { I16(_mm512_loadu_si512(p as *const _)) }
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut i32) {
            unsafe { _mm512_storeu_si512(p as *mut _, self.0) }
        }
        #[inline(always)]
        unsafe fn splat(v: i32) -> Self {
            unsafe { I16(_mm512_set1_epi32(v)) }
        }
        #[inline(always)]
        unsafe fn min(self, o: Self) -> Self {
            unsafe { I16(_mm512_min_epi32(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn max(self, o: Self) -> Self {
            unsafe { I16(_mm512_max_epi32(self.0, o.0)) }
        }
        #[inline(always)]
        unsafe fn sel_lt(self, t: Self, a: Self, b: Self) -> Self {
            unsafe {
                let m = _mm512_cmplt_epi32_mask(self.0, t.0);
                I16(_mm512_mask_blend_epi32(m, b.0, a.0))
            }
        }
        #[inline(always)]
        unsafe fn key(self) -> Self {
            unsafe { I16(key512(self.0)) }
        }
        #[inline(always)]
        unsafe fn transpose_key(src: &[*const i32; 16], dst: *mut i32) {
            unsafe {
                let mut r = [_mm512_setzero_si512(); 16];
                for i in 0..16 {
                    r[i] = _mm512_loadu_si512(src[i] as *const _);
                }
                let t = tr16(r);
                for (c, v) in t.iter().enumerate() {
                    _mm512_storeu_si512(dst.add(c * 16) as *mut _, key512(*v));
                }
            }
        }
        #[inline(always)]
        unsafe fn transpose_unkey(src: *const i32, dst: &[*mut i32; 16]) {
            unsafe {
                let mut r = [_mm512_setzero_si512(); 16];
                for i in 0..16 {
                    r[i] = _mm512_loadu_si512(src.add(i * 16) as *const _);
                }
                let t = tr16(r);
                for (c, v) in t.iter().enumerate() {
                    _mm512_storeu_si512(dst[c] as *mut _, key512(*v));
                }
            }
        }
    }
}

/// Applies `f` to `L`-lane blocks of `x`, writing `out`, over the first
/// `min(x.len(), out.len())` elements (the two have the same length in every kernel). The tail
/// is copied into a zero-padded block, so every element goes through the same vector code.
#[inline(always)]
pub fn map1<V: Vf>(x: &[f32], out: &mut [f32], f: impl Fn(V) -> V) {
    let n = x.len().min(out.len());
    // SAFETY: `out` has `n` writable floats.
    unsafe { map1_raw(x, out.as_mut_ptr(), n, f) }
}

/// [`map1`] into uninitialised memory (e.g. a new `Vec`'s spare capacity, which then needs no
/// zeroing pass): every one of the first `min(x.len(), out.len())` elements is written.
#[inline(always)]
pub fn map1_uninit<V: Vf>(x: &[f32], out: &mut [MaybeUninit<f32>], f: impl Fn(V) -> V) {
    let n = x.len().min(out.len());
    // SAFETY: `out` has `n` writable floats (`MaybeUninit<f32>` has the layout of `f32`).
    unsafe { map1_raw(x, out.as_mut_ptr() as *mut f32, n, f) }
}

/// Binary counterpart of [`map1`]: `out[i] = f(a[i], b[i])` over the first
/// `min(a.len(), b.len(), out.len())` elements.
#[inline(always)]
pub fn map2<V: Vf>(a: &[f32], b: &[f32], out: &mut [f32], f: impl Fn(V, V) -> V) {
    let n = a.len().min(b.len()).min(out.len());
    // SAFETY: `out` has `n` writable floats.
    unsafe { map2_raw(a, b, out.as_mut_ptr(), n, f) }
}

/// [`map2`] into uninitialised memory (see [`map1_uninit`]).
#[inline(always)]
pub fn map2_uninit<V: Vf>(a: &[f32], b: &[f32], out: &mut [MaybeUninit<f32>], f: impl Fn(V, V) -> V) {
    let n = a.len().min(b.len()).min(out.len());
    // SAFETY: as in `map1_uninit`.
    unsafe { map2_raw(a, b, out.as_mut_ptr() as *mut f32, n, f) }
}

/// `op[i] = f(x[i])` for `i < n`, in `L`-lane blocks, the tail through a zero-padded block.
/// Safety: `n <= x.len()` and `op` has `n` writable floats.
#[inline(always)]
unsafe fn map1_raw<V: Vf>(x: &[f32], op: *mut f32, n: usize, f: impl Fn(V) -> V) {
    let l = V::L;
    let main = n - n % l;
    let xp = x.as_ptr();
    let mut i = 0;
    unsafe {
        while i < main {
            prefetch_ahead(xp, i);
            f(V::load(xp.add(i))).store(op.add(i));
            i += l;
        }
        if main < n {
            let mut bx = [0f32; 16];
            bx[..n - main].copy_from_slice(&x[main..n]);
            let mut bo = [0f32; 16];
            f(V::load(bx.as_ptr())).store(bo.as_mut_ptr());
            std::ptr::copy_nonoverlapping(bo.as_ptr(), op.add(main), n - main);
        }
    }
}

/// `op[i] = f(a[i], b[i])` for `i < n` (see [`map1_raw`]). Safety: `n <= a.len(), b.len()`
/// and `op` has `n` writable floats.
#[inline(always)]
unsafe fn map2_raw<V: Vf>(a: &[f32], b: &[f32], op: *mut f32, n: usize, f: impl Fn(V, V) -> V) {
    let l = V::L;
    let main = n - n % l;
    let (ap, bp) = (a.as_ptr(), b.as_ptr());
    let mut i = 0;
    unsafe {
        while i < main {
            prefetch_ahead(ap, i);
            prefetch_ahead(bp, i);
            f(V::load(ap.add(i)), V::load(bp.add(i))).store(op.add(i));
            i += l;
        }
        if main < n {
            let mut ba = [0f32; 16];
            let mut bb = [0f32; 16];
            ba[..n - main].copy_from_slice(&a[main..n]);
            bb[..n - main].copy_from_slice(&b[main..n]);
            let mut bo = [0f32; 16];
            f(V::load(ba.as_ptr()), V::load(bb.as_ptr())).store(bo.as_mut_ptr());
            std::ptr::copy_nonoverlapping(bo.as_ptr(), op.add(main), n - main);
        }
    }
}
