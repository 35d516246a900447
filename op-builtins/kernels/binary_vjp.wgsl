// VJP kernels of the binary elementwise built-ins, one entry point each (the rules' arithmetic):
// d_a[i], d_b[i] from a[i], b[i] and the cotangent d_out[i]. One invocation per element, linear
// launch (rows of nwg.x workgroups of 64).
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read> d_out: array<f32>;
@group(0) @binding(3) var<storage, read_write> d_a: array<f32>;
@group(0) @binding(4) var<storage, read_write> d_b: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

// add: both get the cotangent.
@compute @workgroup_size(64)
fn add_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    d_a[i] = d_out[i];
    d_b[i] = d_out[i];
}

// sub: the cotangent and its negation.
@compute @workgroup_size(64)
fn sub_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    d_a[i] = d_out[i];
    d_b[i] = -d_out[i];
}

// mul: g b and g a.
@compute @workgroup_size(64)
fn mul_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    d_a[i] = d_out[i] * b[i];
    d_b[i] = d_out[i] * a[i];
}

// div: g / b and -(g a) / (b b), the rule's operations in its order.
@compute @workgroup_size(64)
fn div_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    d_a[i] = d_out[i] / b[i];
    d_b[i] = -(d_out[i] * a[i]) / (b[i] * b[i]);
}
