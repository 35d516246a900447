// VJP of builtin/take_along, as a gather (no float atomics): d_x[i c + j] adds, in output order
// (the rule's, so the sum is bit-exact), the cotangents of row i's outputs whose clamped index
// is j. The additions are `add_exact`'s. Four indices per loop iteration (lavapipe ends an
// invocation's loops after 65535 iterations in total). One invocation per input element,
// linear launch.
struct Params { r: u32, c: u32, k: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> idx: array<u32>;
@group(0) @binding(2) var<storage, read> d_out: array<f32>;
@group(0) @binding(3) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

// @include "lib/add_exact.wgsl"

fn add_if(acc: f32, t: u32, j: u32) -> f32 {
    if (min(idx[t], p.c - 1u) == j) { return add_exact(acc, d_out[t]); }
    return acc;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * 64u;
    if (e >= p.r * p.c) { return; }
    let j = e % p.c;
    let base = (e / p.c) * p.k;
    var acc: f32 = 0.0;
    var t = 0u;
    for (; t + 3u < p.k; t = t + 4u) {
        acc = add_if(acc, base + t, j);
        acc = add_if(acc, base + t + 1u, j);
        acc = add_if(acc, base + t + 2u, j);
        acc = add_if(acc, base + t + 3u, j);
    }
    for (; t < p.k; t = t + 1u) {
        acc = add_if(acc, base + t, j);
    }
    d_x[e] = acc;
}
