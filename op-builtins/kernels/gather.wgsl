// builtin/gather: out[k] = x[min(idx[k], n - 1)]. One invocation per output element, linear
// launch.
struct Params { n: u32, m: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> idx: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = gid.x + gid.y * nwg.x * 64u;
    if (k >= p.m) { return; }
    out[k] = x[min(idx[k], p.n - 1u)];
}
