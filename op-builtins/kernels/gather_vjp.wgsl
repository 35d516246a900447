// VJP of builtin/gather, as a gather (no float atomics): d_x[j] adds, in output order (the
// rule's, so the sum is bit-exact), the cotangents of the outputs whose clamped index is j.
// The additions are `add_exact`'s. Four indices per loop iteration (lavapipe ends an
// invocation's loops after 65535 iterations in total). One invocation per input element,
// linear launch.
struct Params { n: u32, m: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> idx: array<u32>;
@group(0) @binding(2) var<storage, read> d_out: array<f32>;
@group(0) @binding(3) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

// @include "lib/add_exact.wgsl"

fn add_if(acc: f32, k: u32, j: u32) -> f32 {
    if (min(idx[k], p.n - 1u) == j) { return add_exact(acc, d_out[k]); }
    return acc;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = gid.x + gid.y * nwg.x * 64u;
    if (j >= p.n) { return; }
    var acc: f32 = 0.0;
    var k = 0u;
    for (; k + 3u < p.m; k = k + 4u) {
        acc = add_if(acc, k, j);
        acc = add_if(acc, k + 1u, j);
        acc = add_if(acc, k + 2u, j);
        acc = add_if(acc, k + 3u, j);
    }
    for (; k < p.m; k = k + 1u) {
        acc = add_if(acc, k, j);
    }
    d_x[j] = acc;
}
