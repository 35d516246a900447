// VJPs of builtin/flatten (the cotangent copied back) and builtin/transpose (the cotangent, c x
// r, transposed back: d_x[i c + j] = d_out[j r + i]). One invocation per element, linear launch.
struct Params { r: u32, c: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> d_out: array<f32>;
@group(0) @binding(2) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(64)
fn flatten_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.r * p.c) { return; }
    d_x[i] = d_out[i];
}

@compute @workgroup_size(64)
fn transpose_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * 64u;
    if (e >= p.r * p.c) { return; }
    d_x[e] = d_out[(e % p.c) * p.r + e / p.c];
}
