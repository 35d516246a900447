// VJP of builtin/permute4: the cotangent (dims d permuted) permuted back by the inverse
// permutation. One invocation per input element, linear launch.
struct Params { d0: u32, d1: u32, d2: u32, d3: u32, p0: u32, p1: u32, p2: u32, p3: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> d_out: array<f32>;
@group(0) @binding(2) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(3) var<uniform> u: Params;

// @include "lib/permute.wgsl"

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * 64u;
    if (e >= u.d0 * u.d1 * u.d2 * u.d3) { return; }
    let perm = array<u32, 4>(u.p0, u.p1, u.p2, u.p3);
    d_x[e] = d_out[permuted_source(e, permuted_dims(array<u32, 4>(u.d0, u.d1, u.d2, u.d3), perm), inverse_perm(perm))];
}
