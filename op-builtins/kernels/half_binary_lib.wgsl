// builtin/maximum and builtin/minimum on f16 (entries `maximum_half`, `minimum_half`; the engine
// prepends `enable f16; alias T = f16;`): the operand larger (smaller) in IEEE total order, NaN
// winning (a's first), decided on the keys of the exact f32 widenings (widening keeps the order,
// the sign of zero and NaN-ness), and the chosen operand itself stored, so its bits are exact.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> a: array<T>;
@group(0) @binding(1) var<storage, read> b: array<T>;
@group(0) @binding(2) var<storage, read_write> out: array<T>;
@group(0) @binding(3) var<uniform> p: Params;

// @include "lib/takes_first.wgsl"

@compute @workgroup_size(64)
fn maximum_half(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // Linear launch: rows of nwg.x workgroups of 64, as many rows as the length needs.
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    out[i] = select(b[i], a[i], takes_first(f32(a[i]), f32(b[i]), true));
}

@compute @workgroup_size(64)
fn minimum_half(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    out[i] = select(b[i], a[i], takes_first(f32(a[i]), f32(b[i]), false));
}
