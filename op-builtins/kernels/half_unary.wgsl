// builtin/neg, relu, exp, log and tanh on f16 (entries `neg_half`, `relu_half`, `exp_half`,
// `log_half`, `tanh_half`; the engine prepends `enable f16; alias T = f16;`). neg negates and
// relu selects the input itself; exp, log and tanh widen to f32 (exact), run the written-out f32
// functions the f32 kernels use (within a few f32 ulp, far inside one f16 ulp) and round once
// to f16 (`T(...)`: round to nearest even, beyond f16's range to infinity on IEEE devices).
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<T>;
@group(0) @binding(1) var<storage, read_write> out: array<T>;
@group(0) @binding(2) var<uniform> p: Params;

// @include "lib/tanh.wgsl"
// @include "lib/log.wgsl"

@compute @workgroup_size(64)
fn neg_half(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // Linear launch: rows of nwg.x workgroups of 64, as many rows as the length needs.
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    out[i] = -x[i];
}

// x where x > 0 or x is NaN (tested on the bits of its exact f32 widening), else +0.
@compute @workgroup_size(64)
fn relu_half(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    let v = x[i];
    let b = bitcast<u32>(f32(v));
    let positive = (b >> 31u) == 0u && b != 0u;
    let nan = (b & 0x7fffffffu) > 0x7f800000u;
    out[i] = select(T(0.0), v, positive || nan);
}

@compute @workgroup_size(64)
fn exp_half(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    out[i] = T(exp_(f32(x[i])));
}

@compute @workgroup_size(64)
fn log_half(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    out[i] = T(log_(f32(x[i])));
}

@compute @workgroup_size(64)
fn tanh_half(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    out[i] = T(tanh_(f32(x[i])));
}
