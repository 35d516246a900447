// Deliberately broken VJP of builtin/take_along: an element copied by several outputs of its
// row gets the last one's cotangent instead of their sum.
struct Params { r: u32, c: u32, k: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> idx: array<u32>;
@group(0) @binding(2) var<storage, read> d_out: array<f32>;
@group(0) @binding(3) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * 64u;
    if (e >= p.r * p.c) { return; }
    let j = e % p.c;
    let base = (e / p.c) * p.k;
    var acc: f32 = 0.0;
    for (var t = 0u; t < p.k; t = t + 1u) {
        if (min(idx[base + t], p.c - 1u) == j) { acc = d_out[base + t]; }
    }
    d_x[e] = acc;
}
