// VJP of builtin/scale (out = x s): d_x[i] = d_out[i] s, the rule's one product. One invocation
// per element, linear launch (rows of nwg.x workgroups of 64).
struct Params { n: u32, s: f32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> d_out: array<f32>;
@group(0) @binding(2) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    d_x[i] = d_out[i] * p.s;
}
