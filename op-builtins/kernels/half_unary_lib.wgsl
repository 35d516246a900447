// builtin/abs, sqrt, square and sigmoid on f16 (entries `abs_half`, `sqrt_half`, `square_half`,
// `sigmoid_half`; the engine prepends `enable f16; alias T = f16;`). abs negates where the sign
// bit is set (read from the exact f32 widening: WGSL has no 16-bit integer), so the result is
// the input with its sign bit cleared, NaN payloads kept, as neg's `-x` keeps them. sqrt,
// square and sigmoid widen to f32 (exact), compute there and round once to f16: the f32
// product of two f16 values is exact, so `square` is the correctly rounded f16 product, and a
// correctly rounded f32 root rounded to f16 is the correctly rounded f16 root (24 >= 2 * 11 + 2
// bits: double rounding is innocuous for square roots).
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<T>;
@group(0) @binding(1) var<storage, read_write> out: array<T>;
@group(0) @binding(2) var<uniform> p: Params;

// @include "lib/exp.wgsl"
// @include "lib/sqrt.wgsl"

@compute @workgroup_size(64)
fn abs_half(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // Linear launch: rows of nwg.x workgroups of 64, as many rows as the length needs.
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    let v = x[i];
    out[i] = select(v, -v, (bitcast<u32>(f32(v)) >> 31u) == 1u);
}

@compute @workgroup_size(64)
fn sqrt_half(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    out[i] = T(sqrt_(f32(x[i])));
}

@compute @workgroup_size(64)
fn square_half(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    let v = f32(x[i]);
    out[i] = T(v * v);
}

// 1 / (1 + e^-x) with the written-out exp, e^-x rounded to f16 as the reference rounds it
// (the reference computes in f16: below x = -11.09, e^-x overflows f16 and the result is 0,
// where the true sigmoid is a subnormal), the rest in f32 and rounded once.
@compute @workgroup_size(64)
fn sigmoid_half(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    let e = f32(T(exp_(-f32(x[i]))));
    out[i] = T(1.0 / (1.0 + e));
}
