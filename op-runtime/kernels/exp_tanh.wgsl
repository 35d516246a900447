// builtin/exp and builtin/tanh (entries `exp_main`, `tanh_main`): elementwise over n; tanh is
// built on the same written-out exp, so both ops share this file.
// tanh is written out rather than WGSL's tanh(), whose software implementations may compute
// (e^2x - 1) / (e^2x + 1): inaccurate near 0 and NaN for large |x|. Odd Taylor series through
// x^17 for |x| < 0.5 (truncation < 1e-8 relative), 1 - 2 / (e^2|x| + 1) up to |x| = 9, and
// +-1 beyond (tanh(9) rounds to 1 in f32). The sign is restored last, so tanh(-0) = -0.
// NaN is tested on the bits, never with `x != x`: WGSL lets implementations assume no NaN,
// and lavapipe folded `a != a` to false, so tanh(NaN) came back as 1.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

// e^x written out: WGSL only bounds exp() to 3 + 2|x| ulp (lavapipe is ~40 ulp off near
// x = -46), so the kernel does its own Cody-Waite reduction x = k ln2 + r, |r| <= ln2 / 2,
// a degree-8 Taylor polynomial for e^r, and scales by 2^k in two exact power-of-two steps
// (one rounding, only where the result is subnormal).
// Whether `v` is a NaN, decided on the bits (a float compare may be folded away).
fn is_nan_(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

fn exp_(x: f32) -> f32 {
    if (is_nan_(x)) { return x; }
    if (x > 88.72284) { return bitcast<f32>(0x7f800000u); }
    if (x < -103.97209) { return 0.0; }
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
    let ki = i32(k);
    let k1 = ki / 2;
    let k2 = ki - k1;
    let s1 = bitcast<f32>(u32(k1 + 127) << 23u);
    let s2 = bitcast<f32>(u32(k2 + 127) << 23u);
    return (p * s1) * s2;
}

fn tanh_(v: f32) -> f32 {
    if (is_nan_(v)) { return v; }
    let a = abs(v);
    var r: f32;
    if (a < 0.5) {
        let z = a * a;
        // tanh x = x (1 - z/3 + 2z^2/15 - 17z^3/315 + 62z^4/2835 - 1382z^5/155925
        //             + 21844z^6/6081075 - 929569z^7/638512875 + 6404582z^8/10854718875)
        var s = 6404582.0 / 10854718875.0;
        s = s * z - 929569.0 / 638512875.0;
        s = s * z + 21844.0 / 6081075.0;
        s = s * z - 1382.0 / 155925.0;
        s = s * z + 62.0 / 2835.0;
        s = s * z - 17.0 / 315.0;
        s = s * z + 2.0 / 15.0;
        s = s * z - 1.0 / 3.0;
        r = a + a * (s * z);
    } else if (a < 9.0) {
        r = 1.0 - 2.0 / (exp_(2.0 * a) + 1.0);
    } else {
        r = 1.0;
    }
    return select(r, -r, bitcast<u32>(v) >= 0x80000000u);
}

@compute @workgroup_size(64)
fn exp_main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // Linear launch: rows of nwg.x workgroups of 64, as many rows as the length needs.
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    out[i] = exp_(x[i]);
}

@compute @workgroup_size(64)
fn tanh_main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // Linear launch: rows of nwg.x workgroups of 64, as many rows as the length needs.
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    out[i] = tanh_(x[i]);
}
