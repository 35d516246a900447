// VJPs of builtin/sum_rows and builtin/mean_rows: each row's cotangent broadcast over the row
// (divided by c for the mean, the rule's one division). One invocation per element, linear
// launch (rows of nwg.x workgroups of 64).
struct Params { r: u32, c: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> d_out: array<f32>;
@group(0) @binding(2) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(64)
fn sum_rows_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.r * p.c) { return; }
    d_x[i] = d_out[i / p.c];
}

@compute @workgroup_size(64)
fn mean_rows_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.r * p.c) { return; }
    d_x[i] = d_out[i / p.c] / f32(p.c);
}
