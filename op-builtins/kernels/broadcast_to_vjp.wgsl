// VJP of builtin/broadcast_to: d_x[i q + j] adds the m cotangents d_out[(i m + k) q + j], k
// ascending (the rule's order, bit-exact with `add_exact`), four per loop iteration (lavapipe's
// loop limit). One invocation per input element, linear launch.
struct Params { p: u32, q: u32, m: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> d_out: array<f32>;
@group(0) @binding(2) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(3) var<uniform> u: Params;

// @include "lib/add_exact.wgsl"

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * 64u;
    if (e >= u.p * u.q) { return; }
    let i = e / u.q;
    let j = e % u.q;
    let base = i * u.m * u.q + j;
    var acc: f32 = 0.0;
    var k = 0u;
    for (; k + 3u < u.m; k = k + 4u) {
        acc = add_exact(acc, d_out[base + k * u.q]);
        acc = add_exact(acc, d_out[base + (k + 1u) * u.q]);
        acc = add_exact(acc, d_out[base + (k + 2u) * u.q]);
        acc = add_exact(acc, d_out[base + (k + 3u) * u.q]);
    }
    for (; k < u.m; k = k + 1u) {
        acc = add_exact(acc, d_out[base + k * u.q]);
    }
    d_x[e] = acc;
}
