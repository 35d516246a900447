//! The [`Vf`] methods the vector `exp`/`ln`/`tanh` rely on, on every instruction set against
//! a scalar model: `frexp_sqrt2`, `all_within`, `div_normal`, `or_sign_of`.

use super::simd::{Isa, Vf};
use crate::with_isa;

/// Bit patterns from a xorshift stream (a fixed seed: the same inputs on every run).
fn patterns(n: usize, seed: u64) -> Vec<u32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 16) as u32
        })
        .collect()
}

/// `g` applied lane-wise to 16-lane-aligned `a` and `b` (lengths multiples of 16) on `isa`;
/// `which` picks the method: 0 `frexp_sqrt2`'s `e`, 1 its `f`, 2 `div_normal`, 3 `or_sign_of`.
fn apply(isa: Isa, which: u8, a: &[f32], b: &[f32]) -> Vec<f32> {
    with_isa!(isa, V, (which: u8, a: &[f32], b: &[f32]) -> Vec<f32>, {
        let mut out = vec![0f32; a.len()];
        for i in (0..a.len()).step_by(V::L) {
            unsafe {
                let (x, y) = (V::load(a.as_ptr().add(i)), V::load(b.as_ptr().add(i)));
                let r = match which {
                    0 => x.frexp_sqrt2().0,
                    1 => x.frexp_sqrt2().1,
                    2 => x.div_normal(y),
                    _ => x.or_sign_of(y),
                };
                r.store(out.as_mut_ptr().add(i));
            }
        }
        out
    })
}

/// `all_within(lo, hi)` of each `L`-lane block of `x` on `isa`.
fn within(isa: Isa, x: &[f32], lo: f32, hi: f32) -> Vec<bool> {
    with_isa!(isa, V, (x: &[f32], lo: f32, hi: f32) -> Vec<bool>, {
        (0..x.len()).step_by(V::L).map(|i| unsafe { V::load(x.as_ptr().add(i)).all_within(V::splat(lo), V::splat(hi)) }).collect()
    })
}

#[test]
fn frexp_sqrt2_splits_every_positive_normal_at_the_f32_nearest_sqrt_half() {
    let mut x: Vec<f32> = patterns(4096, 7).into_iter().map(|b| f32::from_bits(b & 0x7fff_ffff)).filter(|v| v.is_normal()).collect();
    x.extend([0x3f35_04f3, 0x3f35_04f2, 0x3f35_04f4, 0x0080_0000, 0x7f7f_ffff, 0x3f80_0000, 0x3f00_0000, 0x3fb5_04f3].map(f32::from_bits));
    x.truncate(x.len() / 16 * 16);
    for isa in Isa::available() {
        let (e, f) = (apply(isa, 0, &x, &x), apply(isa, 1, &x, &x));
        for (i, v) in x.iter().enumerate() {
            let (e0, m0) = (((v.to_bits() >> 23) as i32 - 126) as f32, f32::from_bits((v.to_bits() & 0x007f_ffff) | 0x3f00_0000));
            let want = if m0 < std::f32::consts::FRAC_1_SQRT_2 { (e0 - 1.0, (m0 + m0) - 1.0) } else { (e0, m0 - 1.0) };
            assert_eq!((e[i], f[i]), want, "{isa:?}: frexp_sqrt2({v:e})");
        }
    }
}

#[test]
fn all_within_is_false_for_a_nan_or_an_outside_lane_in_any_position() {
    for isa in Isa::available() {
        let l = isa.lanes();
        assert_eq!(within(isa, &vec![1.5f32; l], 1.0, 2.0), [true], "{isa:?}");
        for bad in [f32::NAN, 0.5, 2.5, f32::INFINITY, -1.0] {
            for at in 0..l {
                let mut x = vec![1.0f32; l];
                x[at] = bad;
                assert_eq!(within(isa, &x, 1.0, 2.0), [false], "{isa:?}: {bad} at lane {at}");
            }
        }
        // The ends are inside.
        assert_eq!(within(isa, &[[1.0f32, 2.0].repeat(l / 2), vec![]].concat(), 1.0, 2.0), [true], "{isa:?}");
    }
}

#[test]
fn div_normal_is_within_one_ulp_and_keeps_nan() {
    let p = patterns(8192, 11);
    // Numerators in [2^-20, 2^21), divisors in [2^-100, 2^101), either sign: normal quotients.
    let with_exponent = |b: u32, lo: u32, span: u32| f32::from_bits((b & 0x807f_ffff) | ((b >> 23 & 0xff) % span + lo) << 23);
    let a: Vec<f32> = p[..4096].iter().map(|b| with_exponent(*b, 107, 41)).collect();
    let d: Vec<f32> = p[4096..].iter().map(|b| with_exponent(*b, 27, 201)).collect();
    for isa in Isa::available() {
        let q = apply(isa, 2, &a, &d);
        for i in 0..a.len() {
            let want = (a[i] as f64 / d[i] as f64) as f32;
            let ulps = (q[i].to_bits() as i64 - want.to_bits() as i64).abs();
            assert!(ulps <= 1, "{isa:?}: {} / {} = {} (want {want})", a[i], d[i], q[i]);
        }
        let nan = apply(isa, 2, &[f32::NAN; 16], &[3.0; 16]);
        assert!(nan.iter().all(|v| v.is_nan()), "{isa:?}: NaN / 3 = {nan:?}");
    }
}

#[test]
fn or_sign_of_copies_the_sign_bit_onto_non_negative_values() {
    let p = patterns(2048, 5);
    let a: Vec<f32> = p[..1024].iter().map(|b| f32::from_bits(b & 0x7fff_ffff)).collect();
    let s: Vec<f32> = p[1024..].iter().map(|b| f32::from_bits(*b)).collect();
    for isa in Isa::available() {
        let got = apply(isa, 3, &a, &s);
        for i in 0..a.len() {
            assert_eq!(got[i].to_bits(), a[i].to_bits() | (s[i].to_bits() & 0x8000_0000), "{isa:?}: lane {i}");
        }
    }
}
