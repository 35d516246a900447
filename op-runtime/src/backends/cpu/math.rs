//! Vector f32 `exp`, `ln` and `tanh` for `cpu` kernels (Cephes-style range reduction and
//! minimax polynomials), generic over [`Vf`]. Owns the polynomials and their special-value
//! handling; must not read or write memory (callers map them over slices, e.g. with
//! [`map1`](super::simd::map1)). Maximum error against `f32::exp/ln/tanh` over all 2^32 inputs,
//! on every instruction set: exp 1 ulp, ln 1 ulp, tanh 2 ulp (the sampled sweep runs in the
//! unit tests; the exhaustive one is an ignored test, see `kernels/tests.rs`). Special values
//! are exact.
//!
//! Safety: each function is `unsafe` only because it calls [`Vf`] methods, so it must run where
//! the vector type's target feature is enabled (inside [`with_isa!`](crate::with_isa)).

// Safety contract: stated once above.
#![allow(clippy::missing_safety_doc)]
// The polynomial coefficients are written with the digits they were fitted with.
#![allow(clippy::excessive_precision)]

use super::simd::Vf;

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
        // n = round(x / ln 2), r = x - n ln 2 in about [-0.35, 0.35] (two-step, exact first
        // step on every path).
        let n = xc.fma(V::splat(LOG2E), V::splat(MAGIC)).sub(V::splat(MAGIC));
        let r = xc.sub(n.mul(V::splat(C1)));
        let r = r.sub(n.mul(V::splat(C2)));
        // e^r = 1 + r + r^2 P(r)
        let z = r.mul(r);
        let p = V::splat(1.987_569_1e-4);
        let p = p.fma(r, V::splat(1.398_199_9e-3));
        let p = p.fma(r, V::splat(8.333_452e-3));
        let p = p.fma(r, V::splat(4.166_579_6e-2));
        let p = p.fma(r, V::splat(1.666_666_5e-1));
        let p = p.fma(r, V::splat(5.000_000_1e-1));
        let p = p.fma(z, r).add(V::splat(1.0));
        // n in [-150, 129]: rounded once to a subnormal / to inf where due.
        p.scale2(n)
    }
}

/// `ln(x)`. NaN -> NaN; x < 0 (incl. -inf) -> NaN; +-0 -> -inf; +inf -> +inf; subnormal x
/// are rescaled exactly.
#[inline(always)]
pub unsafe fn ln<V: Vf>(x: V) -> V {
    unsafe {
        let tiny = x.lt(V::splat(f32::MIN_POSITIVE));
        // Subnormals (and non-positive values, fixed below) scaled by 2^23, exponent - 23.
        let xs = V::select(tiny, x.mul(V::splat(8_388_608.0)), x);
        let (e, m) = xs.frexp();
        let e = V::select(tiny, e.sub(V::splat(23.0)), e);
        // m in [0.5, 1): fold to [sqrt(1/2), sqrt(2)) and f = m - 1 (exact).
        let small = m.lt(V::splat(std::f32::consts::FRAC_1_SQRT_2));
        let e = V::select(small, e.sub(V::splat(1.0)), e);
        let f = V::select(small, m.add(m), m).sub(V::splat(1.0));
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
        let r = e.fma(V::splat(C1), r);
        // Specials.
        let r = V::select(x.eq(V::splat(f32::INFINITY)), x, r);
        let r = V::select(x.eq(V::splat(0.0)), V::splat(f32::NEG_INFINITY), r);
        let r = V::select(x.lt(V::splat(0.0)), V::splat(f32::NAN), r);
        V::select(x.is_nan(), x.add(x), r)
    }
}

/// `tanh(x)`. |x| < 0.625: odd polynomial (exact for tiny and subnormal x), its sign bit
/// or-ed back from `x` (`p z x + x` is +0 at x = -0, since -0 + +0 rounds to +0; tanh(-0) is
/// -0); otherwise `sign(x) (1 - 2 / (e^{2|x|} + 1))` (+-inf -> +-1). NaN -> NaN.
#[inline(always)]
pub unsafe fn tanh<V: Vf>(x: V) -> V {
    unsafe {
        let sign = V::splat_bits(0x8000_0000);
        let ax = x.and(V::splat_bits(0x7fff_ffff));
        // Small branch.
        let z = x.mul(x);
        let p = V::splat(-5.704_988_7e-3);
        let p = p.fma(z, V::splat(2.063_908_9e-2));
        let p = p.fma(z, V::splat(-5.373_971_6e-2));
        let p = p.fma(z, V::splat(1.333_144_2e-1));
        let p = p.fma(z, V::splat(-3.333_328_2e-1));
        let small = p.mul(z).fma(x, x).or(x.and(sign));
        // Large branch (|x| clamped: tanh is exactly +-1 in f32 beyond ~9.01).
        let axc = ax.min(V::splat(16.0));
        let e = exp(axc.add(axc));
        let t = V::splat(1.0).sub(V::splat(2.0).div(e.add(V::splat(1.0))));
        let large = t.or(x.and(sign));
        V::select(ax.gt(V::splat(0.625)), large, small)
    }
}

#[cfg(test)]
mod tests {
    use crate::backends::cpu::kernels::elementwise as ew;
    use crate::backends::cpu::simd::{with_isa_override, Isa};
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
