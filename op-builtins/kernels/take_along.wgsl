// builtin/take_along: out[i k + j] = x[i c + min(idx[i k + j], c - 1)] (numpy's
// take_along_axis along the last axis; an index past a row's end reads its last element, as
// gather). One invocation per output element, linear launch.
struct Params { r: u32, c: u32, k: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> idx: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = gid.x + gid.y * nwg.x * 64u;
    if (t >= p.r * p.k) { return; }
    out[t] = x[(t / p.k) * p.c + min(idx[t], p.c - 1u)];
}
