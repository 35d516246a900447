// VJP kernels of builtin/exp and builtin/tanh (entries `exp_vjp`, `tanh_vjp`): d_x[i] from
// x[i] and the cotangent d_out[i], the rules' arithmetic in their order. One invocation per
// element, linear launch (rows of nwg.x workgroups of 64).
// The VJP op's bindings (x, d_out, d_x, p) differ from the forward kernels' (x, out, p), and a
// module binds each slot once, so the written-out exp_ is a copy of exp_tanh.wgsl's (WGSL has
// no include); see that file for why it is written out.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> d_out: array<f32>;
@group(0) @binding(2) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

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

// exp: d_x = e^x g.
@compute @workgroup_size(64)
fn exp_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    d_x[i] = exp_(x[i]) * d_out[i];
}

// tanh: d_x = (g sech x) sech x, sech x = 2h / (1 + h h) with h = e^-|x|, as the rule computes
// it (1 - tanh^2 x would cancel where |tanh x| is near 1; see the rule's doc).
@compute @workgroup_size(64)
fn tanh_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    let h = exp_(-abs(x[i]));
    let q = 2.0 * h / (1.0 + h * h);
    d_x[i] = (d_out[i] * q) * q;
}
