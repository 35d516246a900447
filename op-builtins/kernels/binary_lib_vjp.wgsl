// VJP kernels of builtin/maximum and builtin/minimum: the cotangent to the operand the forward
// selected (the same bit decisions), +0 to the other. One invocation per element, linear launch.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read> d_out: array<f32>;
@group(0) @binding(3) var<storage, read_write> d_a: array<f32>;
@group(0) @binding(4) var<storage, read_write> d_b: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

// @include "lib/takes_first.wgsl"

fn route(i: u32, larger: bool) {
    let on_a = takes_first(a[i], b[i], larger);
    let g = d_out[i];
    d_a[i] = select(0.0, g, on_a);
    d_b[i] = select(g, 0.0, on_a);
}

@compute @workgroup_size(64)
fn maximum_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    route(i, true);
}

@compute @workgroup_size(64)
fn minimum_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    route(i, false);
}
