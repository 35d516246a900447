// Deliberately broken VJP of builtin/gather: an element copied by several outputs gets the last
// one's cotangent instead of their sum.
struct Params { n: u32, m: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> idx: array<u32>;
@group(0) @binding(2) var<storage, read> d_out: array<f32>;
@group(0) @binding(3) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = gid.x + gid.y * nwg.x * 64u;
    if (j >= p.n) { return; }
    var acc: f32 = 0.0;
    for (var k = 0u; k < p.m; k = k + 1u) {
        if (min(idx[k], p.n - 1u) == j) { acc = d_out[k]; }
    }
    d_x[j] = acc;
}
