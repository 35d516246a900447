// VJP of builtin/concat: the cotangent split back at n. One invocation per element of the
// output, linear launch.
struct Params { n: u32, m: u32 }

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read> d_out: array<f32>;
@group(0) @binding(3) var<storage, read_write> d_a: array<f32>;
@group(0) @binding(4) var<storage, read_write> d_b: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n + p.m) { return; }
    if (i < p.n) { d_a[i] = d_out[i]; } else { d_b[i - p.n] = d_out[i]; }
}
