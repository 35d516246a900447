// VJP kernels of the unary built-ins and the reductions that broadcast, one entry point each
// (the rules' arithmetic, exactly): d_x[i] from x[i] and the cotangent d_out. One invocation per
// element, linear launch (rows of nwg.x workgroups of 64).
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> d_out: array<f32>;
@group(0) @binding(2) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

// neg: d_x = -g.
@compute @workgroup_size(64)
fn neg_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    d_x[i] = -d_out[i];
}

// relu: the cotangent passes only where x > 0 (zero at x = 0 and for NaN).
@compute @workgroup_size(64)
fn relu_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    d_x[i] = select(0.0, d_out[i], x[i] > 0.0);
}

// sum: the cotangent broadcast.
@compute @workgroup_size(64)
fn sum_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    d_x[i] = d_out[0];
}

// mean: the cotangent over n, broadcast.
@compute @workgroup_size(64)
fn mean_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    d_x[i] = d_out[0] / f32(p.n);
}

// log: d_x = g / x.
@compute @workgroup_size(64)
fn log_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    d_x[i] = d_out[i] / x[i];
}
