// builtin/transpose: out[j r + i] = x[i c + j] (out is c x r). One invocation per output
// element, linear launch.
struct Params { r: u32, c: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = gid.x + gid.y * nwg.x * 64u;
    if (k >= p.r * p.c) { return; }
    out[k] = x[(k % p.r) * p.c + k / p.r];
}
