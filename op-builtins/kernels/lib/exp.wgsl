// @include "nan.wgsl"

// e^x written out: WGSL only bounds exp() to 3 + 2|x| ulp (lavapipe is ~40 ulp off near
// x = -46), so the kernel does its own Cody-Waite reduction x = k ln2 + r, |r| <= ln2 / 2,
// a degree-8 Taylor polynomial for e^r, and scales by 2^k in two exact power-of-two steps
// (one rounding, only where the result is subnormal).
fn exp_(x: f32) -> f32 {
    if (is_nan_(x)) { return x; }
    if (x > 88.72284) { return bitcast<f32>(0x7f800000u); }
    if (x < -103.97209) { return 0.0; }
    let pk = exp_reduced(x);
    let ki = i32(pk.y);
    let k1 = ki / 2;
    let k2 = ki - k1;
    let s1 = bitcast<f32>(u32(k1 + 127) << 23u);
    let s2 = bitcast<f32>(u32(k2 + 127) << 23u);
    return (pk.x * s1) * s2;
}

// The reduction of e^x (finite x): (p, k) with e^x = p 2^k, p = e^r in [0.7, 1.42].
fn exp_reduced(x: f32) -> vec2<f32> {
    let k = round(x * 1.4426950408889634);
    let r = (x - k * 0.693145751953125) - k * 1.4286068203094173e-6;
    var p = 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    return vec2<f32>(p, k);
}
