//! Vector f32 `exp`, `ln` and `tanh` for `cpu` kernels (Cephes-style range reduction and
//! minimax polynomials), generic over [`Vf`]. Owns the polynomials and their special-value
//! handling; must not read or write memory (callers map them over slices, e.g. with
//! [`map1`](super::simd::map1)). Maximum error over all 2^32 inputs, on every instruction set:
//! exp 1 ulp and ln 1 ulp from `f32::exp/ln`, tanh 2 ulp from the correctly rounded value
//! (`f64::tanh` rounded; the platform's `f32::tanh` is itself up to 2 ulp off). The sampled
//! sweep runs in the unit tests, the exhaustive one is an ignored test (`exhaustive_transcendentals`
//! in op-builtins' `cpu_tests.rs`). Special values are exact.
//!
//! Safety: each function is `unsafe` only because it calls [`Vf`] methods, so it must run where
//! the vector type's target feature is enabled (inside [`with_isa!`](crate::with_isa)).

// Safety contract: stated once above.
#![allow(clippy::missing_safety_doc)]
// The polynomial coefficients are written with the digits they were fitted with.
#![allow(clippy::excessive_precision)]

use super::simd::Vf;
use super::simd64::Vd;

const LOG2E: f32 = std::f32::consts::LOG2_E;
/// 1.5 * 2^23: adding and subtracting it rounds |v| < 2^22 to the nearest integer (ties to
/// even).
const MAGIC: f32 = 12_582_912.0;
/// ln 2 split: `C1` has 9 significant bits, so `n * C1` is exact for |n| < 2^15.
const C1: f32 = 0.693_359_375;
const C2: f32 = -2.121_944_4e-4;

/// `e^x`. NaN -> NaN (propagated through the arithmetic: the clamps keep a NaN operand);
/// x > ln(MAX) -> +inf; +inf -> +inf; -inf and x < -104 -> +0; subnormal results are
/// produced (one rounding, by the final scaling).
#[inline(always)]
pub unsafe fn exp<V: Vf>(x: V) -> V {
    unsafe {
        // `c.max(x)` / `c.min(x)` return `x` when it is NaN.
        let xc = V::splat(89.0).min(V::splat(-104.0).max(x));
        let (p, n) = exp_parts(xc);
        // n in [-150, 129]: rounded once to a subnormal / to inf where due.
        p.scale2(n)
    }
}

/// `e^x = p 2^n` for clamped `x`: `n = round(x / ln 2)`, `p = e^r` with `r = x - n ln 2` in
/// about `[-0.35, 0.35]` (two-step reduction, exact first step on every path), `p` in
/// `[0.7, 1.42]`.
#[inline(always)]
unsafe fn exp_parts<V: Vf>(xc: V) -> (V, V) {
    unsafe {
        let n = xc.fma(V::splat(LOG2E), V::splat(MAGIC)).sub(V::splat(MAGIC));
        let r = xc.sub(n.mul(V::splat(C1)));
        let r = r.sub(n.mul(V::splat(C2)));
        (expm1_poly(r).add(V::splat(1.0)), n)
    }
}

/// `e^r - 1 = r + r^2 P(r)` for `r` in about `[-0.35, 0.35]` (the minimax `P` of [`exp`]).
#[inline(always)]
unsafe fn expm1_poly<V: Vf>(r: V) -> V {
    unsafe {
        let z = r.mul(r);
        let p = V::splat(1.987_569_1e-4);
        let p = p.fma(r, V::splat(1.398_199_9e-3));
        let p = p.fma(r, V::splat(8.333_452e-3));
        let p = p.fma(r, V::splat(4.166_579_6e-2));
        let p = p.fma(r, V::splat(1.666_666_5e-1));
        let p = p.fma(r, V::splat(5.000_000_1e-1));
        p.fma(z, r)
    }
}

/// `ln(x)`. NaN -> NaN; x < 0 (incl. -inf) -> NaN; +-0 -> -inf; +inf -> +inf; subnormal x
/// are rescaled exactly. A vector whose lanes are all positive, normal and finite (the common
/// case) skips the rescaling and the special values: the same result, bit for bit.
#[inline(always)]
pub unsafe fn ln<V: Vf>(x: V) -> V {
    unsafe {
        if x.all_within(V::splat(f32::MIN_POSITIVE), V::splat(f32::MAX)) {
            let (e, f) = x.frexp_sqrt2();
            return ln_parts(e, f);
        }
        let tiny = x.lt(V::splat(f32::MIN_POSITIVE));
        // Subnormals (and non-positive values, fixed below) scaled by 2^23, exponent - 23.
        let xs = V::select(tiny, x.mul(V::splat(8_388_608.0)), x);
        let (e, m) = xs.frexp();
        let e = V::select(tiny, e.sub(V::splat(23.0)), e);
        // m in [0.5, 1): fold to [sqrt(1/2), sqrt(2)) and f = m - 1 (exact).
        let small = m.lt(V::splat(std::f32::consts::FRAC_1_SQRT_2));
        let e = V::select(small, e.sub(V::splat(1.0)), e);
        let f = V::select(small, m.add(m), m).sub(V::splat(1.0));
        let r = ln_parts(e, f);
        // Specials.
        let r = V::select(x.eq(V::splat(f32::INFINITY)), x, r);
        let r = V::select(x.eq(V::splat(0.0)), V::splat(f32::NEG_INFINITY), r);
        let r = V::select(x.lt(V::splat(0.0)), V::splat(f32::NAN), r);
        V::select(x.is_nan(), x.add(x), r)
    }
}

/// `ln(2^e (1 + f)) = e ln 2 + ln(1 + f)` for `1 + f` in `[sqrt(1/2), sqrt(2))`:
/// `f - f^2/2 + f^3 P(f)` (Cephes' minimax `P`), `ln 2` split in two.
#[inline(always)]
unsafe fn ln_parts<V: Vf>(e: V, f: V) -> V {
    unsafe {
        let z = f.mul(f);
        let p = V::splat(7.037_683_6e-2);
        let p = p.fma(f, V::splat(-1.151_461e-1));
        let p = p.fma(f, V::splat(1.167_699_9e-1));
        let p = p.fma(f, V::splat(-1.242_014_1e-1));
        let p = p.fma(f, V::splat(1.424_932_3e-1));
        let p = p.fma(f, V::splat(-1.666_805_8e-1));
        let p = p.fma(f, V::splat(2.000_071_4e-1));
        let p = p.fma(f, V::splat(-2.499_999_4e-1));
        let p = p.fma(f, V::splat(3.333_333_1e-1));
        let y = p.mul(f).mul(z);
        let y = e.fma(V::splat(C2), y);
        let y = z.fma(V::splat(-0.5), y);
        let r = f.add(y);
        e.fma(V::splat(C1), r)
    }
}

/// `tanh(x) = sign(x) m / (m + 2)` with `m = e^{2|x|} - 1` (one formula for every `x`, no
/// branch): `2|x| = n ln 2 + r` (one fused step), `m = 2^n (e^r - 1) + (2^n - 1)`, which
/// is `e^r - 1` itself (no cancellation) for small `x`, and exact for tiny and subnormal `x`
/// (`m = 2|x|`, `m + 2 = 2`, the quotient `|x|`). `|x|` is clamped at 9.5 (tanh is exactly
/// +-1 in f32 beyond ~9.011; +-inf -> +-1); the sign bit is or-ed back, so tanh(-0) = -0.
/// NaN -> NaN.
#[inline(always)]
pub unsafe fn tanh<V: Vf>(x: V) -> V {
    unsafe {
        let ax = x.and(V::splat_bits(0x7fff_ffff));
        // `c.min(v)` returns `v` when it is NaN.
        let h = V::splat(9.5).min(ax);
        let y = h.add(h);
        // n in [0, 27]; one reduction step: `ln 2`'s rounding (1.9e-9) costs n 1.9e-9 in r,
        // and the quotient damps an error of m by 2 / (m + 2) < 2 e^{-y}.
        let n = y.fma(V::splat(LOG2E), V::splat(MAGIC)).sub(V::splat(MAGIC));
        let r = n.fma(V::splat(-std::f32::consts::LN_2), y);
        let t = V::pow2(n);
        // `2^n - 1` is exact for n <= 24; beyond, its rounding is far below m's last bit.
        let m = t.fma(expm1_poly(r), t.sub(V::splat(1.0)));
        m.div_normal(m.add(V::splat(2.0))).or_sign_of(x)
    }
}

/// ln 2 split for f64 (fdlibm): `LN2_HI` has 32 trailing zero bits, so `k * LN2_HI` is exact
/// for `|k| < 2^20`.
const LN2_HI: f64 = 6.931_471_803_691_238_164_90e-1;
const LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;
/// 1.5 * 2^52: adding and subtracting it rounds |v| < 2^51 to the nearest integer.
const MAGIC64: f64 = 6_755_399_441_055_744.0;

/// `e^x` in f64: `x = k ln 2 + r`, `|r| <= ln 2 / 2`, `e^r = 1 + r + r^2 q(r)` with `q` a
/// degree-9 near-minimax polynomial (relative error 1.6e-17 before rounding), scaled by `2^k`
/// with one rounding. NaN -> NaN; `x > 709.79` (and +inf) -> +inf; `x < -745.14` (and -inf) ->
/// +0; subnormal results are produced. Within 1 ulp of `f64::exp`.
#[inline(always)]
pub unsafe fn exp_f64<D: Vd>(x: D) -> D {
    unsafe {
        // `c.max(x)` / `c.min(x)` return `x` when it is NaN.
        let xc = D::splat(710.0).min(D::splat(-746.0).max(x));
        let k = xc.fma(D::splat(std::f64::consts::LOG2_E), D::splat(MAGIC64)).sub(D::splat(MAGIC64));
        // `k * LN2_HI` is exact and so is the fused difference; then the low part.
        let r = k.fma(D::splat(-LN2_HI), xc);
        let r = k.fma(D::splat(-LN2_LO), r);
        let q = D::splat(2.510_037_583_256_123_4e-8);
        let q = q.fma(r, D::splat(2.762_007_587_998_336_7e-7));
        let q = q.fma(r, D::splat(2.755_726_848_031_002_4e-6));
        let q = q.fma(r, D::splat(2.480_152_132_236_869_2e-5));
        let q = q.fma(r, D::splat(1.984_126_986_304_054_5e-4));
        let q = q.fma(r, D::splat(1.388_888_891_719_671_9e-3));
        let q = q.fma(r, D::splat(8.333_333_333_330_065e-3));
        let q = q.fma(r, D::splat(4.166_666_666_662_416_4e-2));
        let q = q.fma(r, D::splat(1.666_666_666_666_666_9e-1));
        let q = q.fma(r, D::splat(5.000_000_000_000_001e-1));
        let p = r.mul(r).fma(q, r).add(D::splat(1.0));
        p.scale2(k)
    }
}

/// `ln x` in f64 (fdlibm's `log`: `x = m 2^e`, `m` in `[sqrt(1/2), sqrt(2))`, `f = m - 1`,
/// `s = f / (2 + f)` and a degree-14 polynomial in `s`). NaN -> NaN; `x < 0` (incl. -inf) ->
/// NaN; +-0 -> -inf; +inf -> +inf; subnormal `x` rescaled exactly. Within 1 ulp of `f64::ln`.
#[inline(always)]
pub unsafe fn ln_f64<D: Vd>(x: D) -> D {
    unsafe {
        let tiny = x.lt(D::splat(f64::MIN_POSITIVE));
        let xs = D::select(tiny, x.mul(D::splat(18_014_398_509_481_984.0)), x); // 2^54
        let (e, m) = xs.frexp();
        let e = D::select(tiny, e.sub(D::splat(54.0)), e);
        let small = m.lt(D::splat(std::f64::consts::FRAC_1_SQRT_2));
        let e = D::select(small, e.sub(D::splat(1.0)), e);
        let f = D::select(small, m.add(m), m).sub(D::splat(1.0));
        let s = f.div(D::splat(2.0).add(f));
        let z = s.mul(s);
        let w = z.mul(z);
        let t1 = D::splat(1.531_383_769_920_937_332e-1).fma(w, D::splat(2.222_219_843_214_978_396e-1));
        let t1 = t1.fma(w, D::splat(3.999_999_999_940_941_908e-1)).mul(w);
        let t2 = D::splat(1.479_819_860_511_658_591e-1).fma(w, D::splat(1.818_357_216_161_805_012e-1));
        let t2 = t2.fma(w, D::splat(2.857_142_874_366_239_149e-1));
        let t2 = t2.fma(w, D::splat(6.666_666_666_666_735_130e-1)).mul(z);
        let rr = t2.add(t1);
        let hfsq = D::splat(0.5).mul(f).mul(f);
        let y = s.mul(hfsq.add(rr)).add(e.mul(D::splat(LN2_LO)));
        let r = e.mul(D::splat(LN2_HI)).sub(hfsq.sub(y).sub(f));
        let r = D::select(x.eq(D::splat(f64::INFINITY)), x, r);
        let r = D::select(x.eq(D::splat(0.0)), D::splat(f64::NEG_INFINITY), r);
        let r = D::select(x.lt(D::splat(0.0)), D::splat(f64::NAN), r);
        D::select(x.is_nan(), x.add(x), r)
    }
}

/// `tanh x` in f64. `|x| <= 0.625`: Cephes' rational `x + x z P(z) / Q(z)`, `z = x^2`
/// (relative error 5e-18 before rounding), the sign of `x` or-ed back (so `tanh(-0) = -0`);
/// otherwise `sign(x) (1 - 2 / (e^{2|x|} + 1))` with `|x|` clamped at 20 (+-inf -> +-1).
/// NaN -> NaN. Within 2 ulp of `f64::tanh`.
#[inline(always)]
pub unsafe fn tanh_f64<D: Vd>(x: D) -> D {
    unsafe {
        let sign = D::splat_bits(0x8000_0000_0000_0000);
        let ax = x.and(D::splat_bits(0x7fff_ffff_ffff_ffff));
        let z = x.mul(x);
        let p = D::splat(-9.643_991_794_250_522_386_28e-1).fma(z, D::splat(-9.928_772_310_019_185_865_64e1));
        let p = p.fma(z, D::splat(-1.614_687_684_417_084_479_52e3));
        let q = z.add(D::splat(1.128_116_784_916_329_314_02e2));
        let q = q.fma(z, D::splat(2.235_488_390_601_004_485_83e3));
        let q = q.fma(z, D::splat(4.844_063_053_251_254_860_48e3));
        let small = x.mul(z).fma(p.div(q), x).or(x.and(sign));
        let axc = ax.min(D::splat(20.0));
        let e = exp_f64(axc.add(axc));
        let t = D::splat(1.0).sub(D::splat(2.0).div(e.add(D::splat(1.0))));
        let large = t.or(x.and(sign));
        D::select(ax.gt(D::splat(0.625)), large, small)
    }
}

#[cfg(test)]
mod tests {
    use crate::cpu::kernels::elementwise as ew;
    use crate::cpu::simd::{with_isa_override, Isa};
    use std::mem::MaybeUninit;

    /// tanh keeps the sign of zero, and of every tiny input, on every instruction set and in
    /// every lane (vector body and tail), like `f32::tanh`.
    #[test]
    fn tanh_keeps_the_sign_of_zero_and_of_tiny_inputs_on_every_instruction_set() {
        let specials = [-0.0f32, 0.0, -1e-45, 1e-45, -1e-38, -1e-20, -0.1, -0.6, -0.7, -9.5, f32::NEG_INFINITY];
        for n in [1usize, 3, 4, 7, 8, 9, 16, 17, 33] {
            let x: Vec<f32> = (0..n).map(|i| specials[i % specials.len()]).collect();
            for isa in Isa::available() {
                let mut out = vec![MaybeUninit::new(f32::NAN); n];
                with_isa_override(isa, || ew::tanh(&x, &mut out)).expect("an instruction set this CPU has");
                for (i, (o, v)) in out.iter().zip(&x).enumerate() {
                    // SAFETY: the kernel wrote every element; they were initialised before anyway.
                    let got = unsafe { o.assume_init() };
                    assert_eq!(got.is_sign_negative(), v.tanh().is_sign_negative(), "{isa:?} n={n} [{i}]: tanh({v:e}) = {got:e}");
                    if *v == 0.0 {
                        assert_eq!(got.to_bits(), v.to_bits(), "{isa:?} n={n} [{i}]: tanh({v:e}) = {got:e}");
                    }
                }
            }
        }
    }
}
