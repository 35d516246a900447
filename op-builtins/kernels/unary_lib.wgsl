// builtin/abs, builtin/sqrt, builtin/square, builtin/sigmoid: one invocation per element, one
// entry point each, linear launch (rows of nwg.x workgroups of 64).
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

// @include "lib/exp.wgsl"
// @include "lib/sqrt.wgsl"

// |x|: the sign bit cleared, decided on the bits (NaN payloads and zeros included).
@compute @workgroup_size(64)
fn abs_main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    out[i] = bitcast<f32>(bitcast<u32>(x[i]) & 0x7fffffffu);
}

@compute @workgroup_size(64)
fn sqrt_main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    out[i] = sqrt_(x[i]);
}

@compute @workgroup_size(64)
fn square_main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    let v = x[i];
    out[i] = v * v;
}

// 1 / (1 + e^-x), with the written-out exp (WGSL's own is bounded only to 3 + 2|x| ulp).
@compute @workgroup_size(64)
fn sigmoid_main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    out[i] = 1.0 / (1.0 + exp_(-x[i]));
}
