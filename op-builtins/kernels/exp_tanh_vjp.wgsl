// VJP kernels of builtin/exp and builtin/tanh (entries `exp_vjp`, `tanh_vjp`): d_x[i] from
// x[i] and the cotangent d_out[i], the rules' arithmetic in their order. One invocation per
// element, linear launch (rows of nwg.x workgroups of 64).
// The VJP op's bindings (x, d_out, d_x, p) differ from the forward kernels' (x, out, p), so it
// is a module of its own, sharing the written-out exp_ (lib/exp.wgsl) with them.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> d_out: array<f32>;
@group(0) @binding(2) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

// @include "lib/exp.wgsl"

// @include "lib/scale.wgsl"

// e^x g as one product rounded (nearly) once: e^x = p 2^k and g = f 2^e are taken apart, so that
// neither e^x (infinite from x = 88.7 on, subnormal below -87.3, where the product can still
// be an ordinary number) nor the product overflows or underflows on the way; p f is rounded,
// then scaled by 2^(k + e) (rounding again only into the subnormals).
fn exp_times(v: f32, g: f32) -> f32 {
    let gb = bitcast<u32>(g);
    let sign = gb & 0x80000000u;
    let g_inf = (gb & 0x7fffffffu) == 0x7f800000u;
    // IEEE's products written out (a shader compiler may fold `0 * g` and `inf * g`).
    if (is_nan_(v)) { return v; }
    if (is_nan_(g)) { return g; }
    if (bitcast<u32>(v) == 0x7f800000u) { return select(bitcast<f32>(sign | 0x7f800000u), bitcast<f32>(0x7fc00000u), g == 0.0); }
    if (bitcast<u32>(v) == 0xff800000u) { return select(bitcast<f32>(sign), bitcast<f32>(0x7fc00000u), g_inf); }
    // A finite x: e^x is positive and finite, whatever its float rounding.
    if (g_inf || g == 0.0) { return g; }
    // Beyond +-200, |e^x g| is past the largest float or below the smallest for every finite g.
    if (v > 200.0) { return bitcast<f32>((gb & 0x80000000u) | 0x7f800000u); }
    if (v < -200.0) { return bitcast<f32>(gb & 0x80000000u); }
    let pk = exp_reduced(v);
    let fg = split_(g);
    return scale_(pk.x * fg.x, i32(pk.y) + i32(fg.y));
}

// exp: d_x = e^x g (one product: see `exp_times`).
@compute @workgroup_size(64)
fn exp_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    d_x[i] = exp_times(x[i], d_out[i]);
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
